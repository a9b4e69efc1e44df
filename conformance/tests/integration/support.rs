//! What several of this binary's modules set up the same way: a runtime per test, a run's
//! verdicts as (test name, what happened) pairs to compare two ways of running the same suite,
//! `tidemark` run as a person runs it from the repository root, and a JUnit file read back.

use std::time::Duration;

use tidemark_conformance::process::{AdapterCommand, ProcessFactory, ProcessOptions};
use tidemark_conformance::report::{CaseReport, Verdict};
use tidemark_conformance::spec::repo_root;

/// A future run to its end on a current-thread runtime of its own.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Each case's test name and, for a failure, its line and the actual outcome (what the
/// implementation gave back, which must not depend on the path taken to it).
pub fn verdicts(cases: &[CaseReport]) -> Vec<(String, String)> {
    cases
        .iter()
        .map(|c| {
            let v = match &c.verdict {
                Verdict::Passed => "passed".to_string(),
                Verdict::Failed(f) => format!("failed at line {}: {}", f.line, f.actual),
                Verdict::Skipped { reason } => format!("skipped: {reason}"),
            };
            (c.test_name.clone(), v)
        })
        .collect()
}

/// How a `tidemark` command ended: its exit code and what it printed.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `tidemark ARGS` from the repository root, where the fixtures' relative paths resolve.
pub fn tidemark_in_repo(args: &[&str]) -> Ran {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("tidemark runs");
    Ran {
        code: out.status.code().expect("an exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `python3 fixtures/adapters/FIXTURE` through the init exchange, each reply awaited for
/// `reply_timeout`.
pub async fn fixture_adapter(fixture: &str, reply_timeout: Duration) -> ProcessFactory {
    let command = AdapterCommand::parse(
        &format!("python3 fixtures/adapters/{fixture}"),
        &repo_root(),
    )
    .expect("a command");
    ProcessFactory::probe(
        command,
        ProcessOptions {
            reply_timeout,
            ..ProcessOptions::default()
        },
    )
    .await
    .expect("the fixture completes init")
}

/// A JUnit file the harness wrote, which must be well-formed XML (or quick-xml's reader says
/// where not): its text and the `name` of every `<testcase>` in it.
pub fn read_junit(path: &std::path::Path) -> (String, std::collections::BTreeSet<String>) {
    use quick_xml::events::Event;
    let xml = std::fs::read_to_string(path).expect("the JUnit file is written");
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut names = std::collections::BTreeSet::new();
    loop {
        match reader.read_event() {
            Ok(Event::Eof) => break,
            Ok(Event::Start(e) | Event::Empty(e)) if e.name().as_ref() == b"testcase" => {
                let name = e
                    .try_get_attribute("name")
                    .unwrap()
                    .expect("a testcase has a name");
                names.insert(String::from_utf8(name.value.into_owned()).unwrap());
            }
            Ok(_) => {}
            Err(e) => panic!(
                "the JUnit file is not well-formed XML at {}: {e}",
                reader.buffer_position()
            ),
        }
    }
    (xml, names)
}

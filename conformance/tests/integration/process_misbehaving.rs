//! Adapters that break the protocol: each failure names the scenario, the step and what
//! happened, the wait is bounded, the next scenario still runs, and no process is left behind.

use super::support::{block_on, fixture_adapter, tidemark_in_repo};
use std::path::Path;
use std::time::{Duration, Instant};
use tidemark_conformance::play::Failure;
use tidemark_conformance::process::{AdapterCommand, ProcessFactory, ProcessOptions};
use tidemark_conformance::profiles::scratchpad as suite;
use tidemark_conformance::profiles::scratchpad::gate::{self, Selection};
use tidemark_conformance::report::{RunReport, Verdict};
use tidemark_conformance::spec::repo_root;
use tidemark_conformance::{default_scenarios_dir, default_spec_path};

/// Two scenarios whose first step is a write, so a misbehaving adapter fails at a step a person
/// can find.
const TWO_SCENARIOS: [&str; 2] = [
    "scratchpad::own_path_wins",
    "scratchpad::a_thread_is_one_workspace_for_everyone_in_it",
];
/// The bound for the adapter that never answers; the others get the default, so a loaded machine
/// cannot turn their misbehaviour into a timeout.
const SHORT_REPLY_TIMEOUT: Duration = Duration::from_millis(400);

/// Runs the two scenarios against a fixture adapter.
fn run_two(fixture: &str) -> RunReport {
    run_two_within(fixture, ProcessOptions::default().reply_timeout)
}

fn run_two_within(fixture: &str, reply_timeout: Duration) -> RunReport {
    let all = suite::load(&default_scenarios_dir(), &default_spec_path()).expect("the suite loads");
    let selection = Selection {
        profiles: vec![],
        only: TWO_SCENARIOS.iter().map(|s| s.to_string()).collect(),
    };
    let selected = selection.apply(&all).expect("the scenarios exist");
    block_on(async {
        let factory = fixture_adapter(fixture, reply_timeout).await;
        gate::check(
            &selected,
            &factory,
            format!("tidemark run --impl 'python3 fixtures/adapters/{fixture}'"),
        )
        .await
    })
}

fn failures(report: &RunReport) -> Vec<&Failure> {
    report
        .cases
        .iter()
        .map(|c| match &c.verdict {
            Verdict::Failed(f) => f,
            other => panic!("{} should fail, got {other:?}", c.test_name),
        })
        .collect()
}

/// Every process whose command line mentions `needle`: none may outlive a run.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

fn assert_each_failure_names_the_first_write(report: &RunReport, phrase: &str) {
    assert_eq!(
        report.cases.len(),
        2,
        "both scenarios ran: a failure does not stop the run"
    );
    for f in failures(report) {
        assert!(f.line > 0, "the failure names the step's line: {f:?}");
        assert!(
            f.step.contains(" write "),
            "the failure quotes the step: {f:?}"
        );
        assert!(
            f.actual.contains(phrase),
            "the failure says {phrase:?}: {}",
            f.actual
        );
    }
}

#[test]
fn an_adapter_that_prints_garbage_fails_the_step_with_the_line_quoted() {
    let report = run_two("prints-garbage.py");
    assert_each_failure_names_the_first_write(&report, "is not a tidemark/1 message");
    assert_each_failure_names_the_first_write(&report, "`handling write...`");
}

#[test]
fn an_adapter_that_answers_the_wrong_request_fails_the_step_naming_both_ids() {
    let report = run_two("answers-wrong-id.py");
    assert_each_failure_names_the_first_write(
        &report,
        "answered request 5 but the harness awaited the answer to request 4 (write)",
    );
}

#[test]
fn an_adapter_that_never_answers_fails_within_the_timeout_and_is_killed() {
    let started = Instant::now();
    // A marker argument the script ignores, so that only this test's processes are looked for
    // (another test runs the same script at the same time).
    let marker = format!("leak-check-{}", std::process::id());
    let report = run_two_within(&format!("never-answers.py {marker}"), SHORT_REPLY_TIMEOUT);
    let elapsed = started.elapsed();
    assert_each_failure_names_the_first_write(
        &report,
        "no answer to request 4 (write) within 400 ms",
    );
    assert_each_failure_names_the_first_write(
        &report,
        "never-answers: thinking about write forever",
    );
    // Two scenarios, one bounded wait each, plus start-up and kill: far below a hang.
    assert!(
        elapsed < Duration::from_secs(10),
        "the run took {elapsed:?}"
    );
    assert_eq!(
        processes_mentioning(&marker),
        Vec::<String>::new(),
        "the adapter was killed and reaped"
    );
}

#[test]
fn an_adapter_that_exits_early_fails_the_step_with_its_exit_code_and_stderr() {
    let report = run_two("exits-early.py");
    assert_each_failure_names_the_first_write(
        &report,
        "closed its stdout before answering request 4 (write)",
    );
    assert_each_failure_names_the_first_write(&report, "exit code 3");
    assert_each_failure_names_the_first_write(&report, "fatal: cannot open the scratch root");
}

#[test]
fn an_adapter_that_claims_a_profile_it_does_not_implement_fails_every_scenario_at_start() {
    let report = run_two("claims-unimplemented-profile.py");
    assert_eq!(report.counts().failed, 2);
    for f in failures(&report) {
        assert_eq!(f.step, "(start)");
        assert!(
            f.actual
                .contains("reported an error for request 1 (start): start is not implemented"),
            "{}",
            f.actual
        );
    }
}

#[test]
fn scenarios_of_a_profile_the_adapter_does_not_claim_are_skipped_and_an_empty_run_does_not_pass() {
    let report = run_two("claims-no-known-profile.py");
    let counts = report.counts();
    assert_eq!((counts.passed, counts.failed, counts.skipped), (0, 0, 2));
    for c in &report.cases {
        assert_eq!(
            c.verdict,
            Verdict::Skipped {
                reason: "the implementation does not claim the scratchpad profile".into()
            }
        );
    }
    assert!(!report.passed(), "a run that checked nothing is not a pass");
}

#[test]
fn a_program_that_cannot_be_started_is_named_in_the_error() {
    let command = AdapterCommand::parse("./no-such-adapter --flag", Path::new("/")).unwrap();
    let err = block_on(ProcessFactory::probe(command, ProcessOptions::default())).unwrap_err();
    assert!(
        err.0
            .contains("cannot start the implementation `./no-such-adapter --flag`"),
        "{err}"
    );
}

#[test]
fn a_program_that_fails_the_init_exchange_exits_2_and_its_junit_file_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(["run", "--impl", "echo hello", "--junit"])
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("did not complete the init exchange") && stderr.contains("`hello`"),
        "{stderr}"
    );
    let xml = std::fs::read_to_string(&junit).expect("a JUnit file even though nothing ran");
    assert!(
        xml.contains(r#"<testcase classname="tidemark.setup" name="init exchange">"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<error message="the implementation did not complete the init exchange"#),
        "{xml}"
    );
}

#[test]
fn an_adapter_started_for_a_profile_its_init_ok_does_not_claim_fails_at_start() {
    let report = run_two("forgets-its-profile.py");
    for f in failures(&report) {
        assert_eq!(f.step, "(start)");
        assert!(
            f.actual
                .contains("started for the scratchpad profile but its init_ok claims only []"),
            "{}",
            f.actual
        );
    }
}

#[test]
fn a_program_declaring_a_variant_spec_does_not_have_fails_the_init_exchange_naming_it() {
    let command = AdapterCommand::parse(
        "python3 fixtures/adapters/declares-an-unknown-variant.py",
        &repo_root(),
    )
    .unwrap();
    let err = block_on(ProcessFactory::probe(command, ProcessOptions::default())).unwrap_err();
    assert!(
        err.0.contains("init_ok's variants")
            && err.0.contains("unknown variant \"read_through_file\"")
            && err.0.contains("read_through_a_file"),
        "{err}"
    );
}

#[test]
fn a_program_whose_variants_change_after_the_probe_fails_every_scenario_at_start() {
    let report = run_two("changes-its-variants.py");
    assert_eq!(report.counts().failed, 2);
    for f in failures(&report) {
        assert_eq!(f.step, "(start)");
        assert!(
            f.actual.contains("every variant at its default")
                && f.actual.contains("(eviction_ties=any) when started"),
            "{}",
            f.actual
        );
    }
}

/// What a person reads for each kind of misbehaviour, as the CLI prints it.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn each_misbehaviour_reads_clearly_in_the_table() {
    let mut tables = String::new();
    for (fixture, timeout_ms) in [
        ("prints-garbage.py", "10000"),
        ("answers-wrong-id.py", "10000"),
        ("never-answers.py", "400"),
        ("exits-early.py", "10000"),
        ("claims-unimplemented-profile.py", "10000"),
        ("forgets-its-profile.py", "10000"),
        ("claims-no-known-profile.py", "10000"),
    ] {
        let command = format!("python3 fixtures/adapters/{fixture}");
        let ran = tidemark_in_repo(&[
            "run",
            "--impl",
            &command,
            "--timeout-ms",
            timeout_ms,
            "--only",
            TWO_SCENARIOS[0],
        ]);
        tables.push_str(&format!(
            "$ tidemark run --impl '{command}' --timeout-ms {timeout_ms} --only {}   # exit {}\n{}\n",
            TWO_SCENARIOS[0], ran.code, ran.stdout
        ));
    }
    insta::assert_snapshot!("misbehaving_adapters_table", tables);
}

#[test]
fn a_program_that_logs_megabytes_to_stderr_is_never_blocked_by_a_full_pipe() {
    // 4 MB of log before the real program starts: far more than a pipe holds, so it would block
    // for ever unless the harness drains stderr while it waits.
    let example = repo_root().join("examples/python-scratchpad/scratchpad.py");
    let command = format!(
        "sh -c 'head -c 4000000 /dev/zero | tr \"\\0\" x >&2; echo >&2; exec python3 {}'",
        example.display()
    );
    let all = suite::load(&default_scenarios_dir(), &default_spec_path()).unwrap();
    let selection = Selection {
        profiles: vec![],
        only: vec![TWO_SCENARIOS[0].to_string()],
    };
    let selected = selection.apply(&all).unwrap();
    let report = block_on(async {
        let command = AdapterCommand::parse(&command, &repo_root()).unwrap();
        let factory = ProcessFactory::probe(command, ProcessOptions::default())
            .await
            .expect("init completes");
        gate::check(&selected, &factory, "tidemark run --impl chatty".into()).await
    });
    assert!(report.passed(), "{:?}", report.cases);
}

//! The harness under bad input: disk steps never reach through a planted symlink, huge input and
//! huge answers are cut in every report, stderr without a newline is shown, the replay hint
//! reproduces a run from another folder, and `tidemark replay` tells its three outcomes apart by
//! exit status.

use super::support::{block_on, fixture_adapter};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use tidemark_conformance::process::ProcessOptions;
use tidemark_conformance::profiles::scratchpad as suite;
use tidemark_conformance::profiles::scratchpad::gate::{self, Selection};
use tidemark_conformance::profiles::scratchpad::runner::run_scenario;
use tidemark_conformance::profiles::scratchpad::script::parse_str;
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::report::{self, CaseReport, RunReport, Verdict};
use tidemark_conformance::spec::{repo_root, RuleIndex};
use tidemark_conformance::{default_scenarios_dir, default_spec_path};

const HEAD: &str = "scenario: an example\nprofile: scratchpad\nrules: SP-1.1\n";

/// Runs a scenario text against the reference in process and reports it.
fn run_text(text: &str) -> RunReport {
    let rules = RuleIndex::parse("**SP-1.1** x\n");
    let scenario = parse_str(Path::new("scenarios/scratchpad/example.tdm"), text, &rules)
        .expect("the scenario parses");
    let result = block_on(run_scenario(&scenario, &ReferenceScratchpad::default()));
    RunReport {
        implementation: "reference".into(),
        replay_prefix: "tidemark run".into(),
        profile_commands: Default::default(),
        cases: vec![CaseReport::from_result(&result, "scratchpad")],
        expectations: None,
    }
}

fn failure(report: &RunReport) -> &tidemark_conformance::play::Failure {
    match &report.cases[0].verdict {
        Verdict::Failed(f) => f,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn the_harness_does_not_write_or_look_through_a_symlink_it_planted() {
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().display().to_string();
    std::fs::write(elsewhere.path().join("there.txt"), "x").unwrap();
    for (step, expected) in [
        (
            "disk write out/planted.txt \"escaped\"",
            "made of real directories",
        ),
        ("disk mkdir out/planted", "made of real directories"),
        (
            "disk symlink out/planted -> /etc",
            "made of real directories",
        ),
        (
            "disk write out \"through the link itself\"",
            "does not write through a symlink",
        ),
        ("disk exists out/there.txt", "never follows a symlink"),
    ] {
        let report = run_text(&format!("{HEAD}disk symlink out -> {target}\n{step}\n"));
        let f = failure(&report);
        assert_eq!(f.line, 5, "{f:?}");
        assert!(
            f.expected.contains(expected) || f.actual.contains(expected),
            "{step}: {f:?}"
        );
    }
    // The link itself is there, and nothing was made through it.
    let report = run_text(&format!(
        "{HEAD}disk symlink out -> {target}\ndisk exists out\n"
    ));
    assert!(report.passed(), "{}", report::render_table(&report));
    let mut left: Vec<_> = std::fs::read_dir(elsewhere.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, vec!["there.txt"]);
}

/// Every rendering of a report stays small, and says how much it cut.
fn assert_bounded(report: &RunReport, what: &str) {
    for (format, text) in [
        ("table", report::render_table(report)),
        ("json", report::render_json(report)),
        ("junit", report::render_junit(report)),
    ] {
        // A few fields of at most 16 KiB and eight trace lines of at most 4 KiB.
        assert!(
            text.len() < 128 << 10,
            "{what}: the {format} report is {} bytes",
            text.len()
        );
        assert!(
            text.contains("more bytes)"),
            "{what}: the {format} report does not say what it cut"
        );
    }
}

#[test]
fn a_ten_megabyte_scenario_line_is_cut_in_its_failure_report() {
    let huge = "y".repeat(10 << 20);
    let report = run_text(&format!(
        "{HEAD}alice@#g/T1 read missing.md => \"{huge}\"\n"
    ));
    let f = failure(&report);
    assert_eq!(f.line, 4);
    assert_bounded(&report, "a 10 MB step");
}

fn run_one_against(fixture: &str, reply_timeout: Duration) -> RunReport {
    let all = suite::load(&default_scenarios_dir(), &default_spec_path()).expect("the suite loads");
    let selection = Selection {
        profiles: vec![],
        only: vec!["scratchpad::own_path_wins".into()],
    };
    let selected = selection.apply(&all).expect("the scenario exists");
    block_on(async {
        let factory = fixture_adapter(fixture, reply_timeout).await;
        gate::check(
            &selected,
            &factory,
            format!("tidemark run --impl '{fixture}'"),
        )
        .await
    })
}

#[test]
fn an_implementations_huge_error_message_is_cut_in_every_report() {
    // 20 MB keeps the test quick; the same check was made by hand at 1 GB.
    let report = run_one_against("huge-error.py", ProcessOptions::default().reply_timeout);
    let f = failure(&report);
    assert!(
        f.actual
            .contains(&format!("… ({} more bytes)", (20 << 20) - 4096)),
        "{}",
        &f.actual[..200.min(f.actual.len())]
    );
    assert!(f.actual.len() < 16 << 10, "{} bytes", f.actual.len());
    assert_bounded(&report, "a 20 MB error message");
    // The report's own cut keeps the quote's count: it does not cut the message a second time.
    let json = report::render_json(&report);
    assert!(json.contains(&format!("… ({} more bytes)", (20 << 20) - 4096)));
}

#[test]
fn stderr_written_without_a_newline_is_shown() {
    let report = run_one_against("stderr-without-newline.py", Duration::from_millis(400));
    let f = failure(&report);
    assert!(
        f.actual
            .contains("last 1 line(s) of its stderr:\n  | stderr-without-newline: stuck on write"),
        "{}",
        f.actual
    );
}

fn tidemark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tidemark"))
}

#[test]
fn the_replay_hint_reruns_a_run_from_another_folder_with_its_options() {
    let suite_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(suite_dir.path().join("scratchpad")).unwrap();
    std::fs::write(
        suite_dir.path().join("scratchpad/fails.tdm"),
        format!("{HEAD}alice@#g/T1 read missing.md => ok\n"),
    )
    .unwrap();
    std::fs::write(
        suite_dir.path().join("SPEC.md"),
        "**SP-1.1** the one rule\n",
    )
    .unwrap();
    let out = tidemark()
        .current_dir(suite_dir.path())
        .args(["run", "--scenarios", ".", "--spec", "SPEC.md"])
        .args(["--profile", "scratchpad"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay = table
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay:   "))
        .unwrap_or_else(|| panic!("no replay line in {table}"))
        .to_string();
    let dir = std::fs::canonicalize(suite_dir.path()).unwrap();
    assert_eq!(
        replay,
        format!(
            "tidemark run --scenarios {} --spec {} --only scratchpad::fails",
            dir.display(),
            dir.join("SPEC.md").display()
        )
    );
    // The hint, run from another folder, fails the same way.
    let elsewhere = tempfile::tempdir().unwrap();
    let words = shlex::split(&replay).unwrap();
    let again = tidemark()
        .current_dir(elsewhere.path())
        .args(&words[1..])
        .output()
        .unwrap();
    let table_again = String::from_utf8_lossy(&again.stdout).to_string();
    assert_eq!(again.status.code(), Some(1), "{table_again}");
    // Only the file's location differs: the first run shows it relative to its folder.
    let without_location = |t: &str| {
        t.lines()
            .filter(|l| !l.contains("fails.tdm:4"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(without_location(&table_again), without_location(&table));
    assert!(table_again.contains(&format!(
        "{}:4: alice",
        dir.join("scratchpad/fails.tdm").display()
    )));
}

#[test]
fn replay_exit_codes_tell_reproduced_different_and_fixed_apart() {
    let saved =
        repo_root().join("fixtures/explore/scratchpad/scratchpad-dotdot-normalised-seed-0.json");
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let variant = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut f = fixture.clone();
        edit(&mut f);
        let p = tmp.path().join(name);
        std::fs::write(&p, serde_json::to_string_pretty(&f).unwrap()).unwrap();
        p
    };
    let different = variant("different.json", &|f| {
        f["trace_hash"] = serde_json::json!("0".repeat(64))
    });
    let fixed = variant("fixed.json", &|f| f["mutant"] = serde_json::Value::Null);
    for (path, code, says) in [
        (
            saved.as_path(),
            1,
            "the saved failure reproduces identically (exit 1)",
        ),
        (
            different.as_path(),
            3,
            "it still fails, but differently from the saved run (exit 3)",
        ),
        (
            fixed.as_path(),
            0,
            "the saved failure no longer happens (exit 0)",
        ),
    ] {
        let out = tidemark().arg("replay").arg(path).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}: {stdout}",
            path.display()
        );
        assert!(stdout.contains(says), "{stdout}");
    }
    let missing = tidemark()
        .args(["replay", "no-such-fixture.json"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

/// Issue 19: what the harness makes on disk carries the scenario's clock (SP-3.5), never the
/// machine's, months after the simulated epoch: an implementation reading a planted link's time,
/// or an empty session directory's (SP-5.3), would keep the session alive for the whole run.
mod simulated_time_on_disk {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tidemark_conformance::driver::DriverError;
    use tidemark_conformance::profiles::scratchpad::contract::{
        Driver, DriverFactory, Environment,
    };
    use tidemark_conformance::profiles::scratchpad::contract::{Outcome, Request};
    use tidemark_conformance::profiles::scratchpad::script::Profile;
    use tidemark_reference::clock::Timestamp;

    /// The modification time of every path under a root (links not followed), relative to the
    /// epoch in milliseconds, as the reference saw it at the first tick.
    type Times = Arc<Mutex<Vec<(String, i64)>>>;

    /// The reference, and at its first tick a look at every time under its root.
    struct Looking {
        times: Times,
    }

    struct LookingDriver {
        inner: Box<dyn Driver>,
        root: std::path::PathBuf,
        times: Times,
    }

    impl DriverFactory for Looking {
        fn name(&self) -> String {
            "reference, looking at times".into()
        }
        fn supports(&self, profile: Profile) -> bool {
            ReferenceScratchpad::default().supports(profile)
        }
        fn create(
            &self,
            profile: Profile,
            env: &Environment,
        ) -> Result<Box<dyn Driver>, DriverError> {
            Ok(Box::new(LookingDriver {
                inner: ReferenceScratchpad::default().create(profile, env)?,
                root: env.root.clone(),
                times: self.times.clone(),
            }))
        }
    }

    #[async_trait::async_trait]
    impl Driver for LookingDriver {
        async fn call(
            &mut self,
            now: Timestamp,
            request: &Request,
        ) -> Result<Outcome, DriverError> {
            {
                let mut times = self.times.lock().unwrap();
                if matches!(request, Request::Tick) && times.is_empty() {
                    let mut stack = vec![self.root.clone()];
                    while let Some(d) = stack.pop() {
                        for e in std::fs::read_dir(&d).unwrap().flatten() {
                            let meta = std::fs::symlink_metadata(e.path()).unwrap();
                            let ms = meta
                                .modified()
                                .unwrap()
                                .duration_since(tidemark_sim::clock::EPOCH.to_system_time())
                                .map(|d| d.as_millis() as i64)
                                .unwrap_or(-1);
                            let shown = e
                                .path()
                                .strip_prefix(&self.root)
                                .unwrap()
                                .display()
                                .to_string();
                            times.push((shown, ms));
                            if meta.is_dir() {
                                stack.push(e.path());
                            }
                        }
                    }
                    times.sort();
                }
            }
            self.inner.call(now, request).await
        }
        async fn stop(&mut self) -> Result<(), DriverError> {
            self.inner.stop().await
        }
    }

    #[test]
    fn planted_links_and_every_directory_a_disk_step_makes_carry_the_scenarios_clock() {
        let rules = RuleIndex::parse("**SP-1.1** x\n");
        let text = format!(
            "{HEAD}advance 1h\ndisk mkdir <alice@#g/T1>/@alice/a/b\n\
             disk write <alice@#g/T2>/@bob/c/d/f.txt \"x\"\n\
             disk symlink <alice@#g/T1>/@alice/e/link -> $OUTSIDE\nadvance 1ms\n"
        );
        let scenario = parse_str(Path::new("example.tdm"), &text, &rules).unwrap();
        let times = Times::default();
        let result = block_on(run_scenario(
            &scenario,
            &Looking {
                times: times.clone(),
            },
        ));
        assert!(result.passed(), "{:?}", result.failure);
        let times = times.lock().unwrap().clone();
        // Two sessions, each a requester, `a`, `a/b`, `c`, `c/d`, the file, `e` and the link:
        // every one at one hour.
        assert_eq!(times.len(), 11, "{times:?}");
        let hour = 3_600_000;
        let wrong: Vec<_> = times.iter().filter(|(_, ms)| *ms != hour).collect();
        assert!(
            wrong.is_empty(),
            "not at the scenario's clock (+1h): {wrong:?}"
        );
    }

    #[test]
    fn a_link_planted_by_exploration_carries_the_simulated_time_and_so_does_each_directory_made() {
        use tidemark_conformance::profiles::scratchpad::explore::run::plant_link_on_disk;
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let now = tidemark_sim::clock::EPOCH.plus_ms(86_400_000);
        let root = tidemark_sim::confine::Dir::open(tmp.path()).unwrap();
        plant_link_on_disk(
            &root,
            outside.path(),
            ("t-0123456789abcdef", "fedcba9876543210"),
            &["dir".to_string(), "link".to_string()],
            now,
        )
        .unwrap();
        for rel in [
            "t-0123456789abcdef",
            "t-0123456789abcdef/fedcba9876543210",
            "t-0123456789abcdef/fedcba9876543210/dir",
            "t-0123456789abcdef/fedcba9876543210/dir/link",
        ] {
            let meta = std::fs::symlink_metadata(tmp.path().join(rel)).unwrap();
            assert_eq!(meta.modified().unwrap(), now.to_system_time(), "{rel}");
        }
        assert!(std::fs::symlink_metadata(
            tmp.path()
                .join("t-0123456789abcdef/fedcba9876543210/dir/link")
        )
        .unwrap()
        .file_type()
        .is_symlink());
    }
}

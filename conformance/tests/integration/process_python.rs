//! The implementation in another language: the Python example passes the scratchpad suite
//! through `tidemark run --impl`, and its deliberately broken copy fails with reports a person
//! can act on. The human table and the JUnit XML of the failing run are snapshots.

use super::support::read_junit;
use std::path::Path;
use std::process::Command;
use tidemark_conformance::spec::repo_root;

const TIDEMARK: &str = env!("CARGO_BIN_EXE_tidemark");
const EXAMPLE: &str = "python3 examples/python-scratchpad/scratchpad.py";
const BROKEN: &str = "python3 fixtures/adapters/broken-scratchpad.py";

struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

/// `tidemark run <args>` from the repository root, as a CI job runs it.
fn tidemark_run(args: &[&str]) -> Run {
    let out = Command::new(TIDEMARK)
        .arg("run")
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("tidemark runs");
    Run {
        status: out.status.code().expect("tidemark exits, not killed"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

fn scratch_file(name: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name).to_str().unwrap().to_string();
    (dir, path)
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_python_example_passes_the_scratchpad_suite_through_the_protocol() {
    let (_dir, junit) = scratch_file("junit.xml");
    let run = tidemark_run(&["--impl", EXAMPLE, "--junit", &junit]);
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.ends_with(" passed, 0 failed\n"),
        "{}",
        run.stdout
    );
    let xml = read_junit(Path::new(&junit)).0;
    assert!(
        xml.contains(r#"failures="0""#) && !xml.contains("<failure"),
        "{xml}"
    );
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_broken_python_copy_fails_the_whole_suite_run() {
    let run = tidemark_run(&["--impl", BROKEN]);
    assert_eq!(
        run.status, 1,
        "a failing run exits 1; stderr: {}",
        run.stderr
    );
    assert!(
        run.stdout
            .lines()
            .last()
            .is_some_and(|l| l.ends_with(" failed") && !l.ends_with(" 0 failed")),
        "{}",
        run.stdout
    );
}

/// Three scenarios each of its bugs fails, and one it passes: the snapshots do not change when
/// the suite grows.
const SNAPSHOT_SCENARIOS: [&str; 4] = [
    "scratchpad::directory_times_do_not_keep_a_dead_session_alive",
    "scratchpad::own_path_wins",
    "scratchpad::the_ceiling_is_summed_across_a_requesters_sessions",
    "scratchpad::the_session_cap_evicts_oldest_first",
];

#[test]
fn the_broken_python_copy_is_reported_with_scenario_step_expected_actual_and_replay() {
    let (_dir, junit) = scratch_file("junit.xml");
    let mut args = vec!["--impl", BROKEN, "--junit", &junit];
    for name in SNAPSHOT_SCENARIOS {
        args.extend(["--only", name]);
    }
    let run = tidemark_run(&args);
    assert_eq!(
        run.status, 1,
        "a failing run exits 1; stderr: {}",
        run.stderr
    );
    assert!(
        run.stdout.ends_with("1 passed, 3 failed\n"),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!("broken_python_table", run.stdout);
    insta::assert_snapshot!("broken_python_junit", read_junit(Path::new(&junit)).0);
}

#[test]
fn the_json_report_of_a_failing_run_carries_expected_actual_and_replay_for_each_failure() {
    let run = tidemark_run(&[
        "--impl",
        BROKEN,
        "--format",
        "json",
        "--only",
        "scratchpad::the_session_cap_evicts_oldest_first",
    ]);
    assert_eq!(run.status, 1);
    let doc: serde_json::Value =
        serde_json::from_str(&run.stdout).expect("stdout is one JSON document");
    assert_eq!(
        doc["counts"],
        serde_json::json!({"passed": 0, "failed": 1, "skipped": 0})
    );
    let case = &doc["scenarios"][0];
    assert_eq!(case["status"], "failed");
    assert_eq!(case["rules"], serde_json::json!(["SP-4.2", "SP-4.3"]));
    assert_eq!(
        case["failure"]["expected"],
        "written, evicted [151d8375a7636540/m.txt]"
    );
    assert_eq!(
        case["failure"]["actual"],
        "written 151d8375a7636540/new.txt, evicted [151d8375a7636540/z.txt]"
    );
    assert_eq!(
        case["failure"]["replay"],
        "tidemark run --impl 'python3 fixtures/adapters/broken-scratchpad.py' --only scratchpad::the_session_cap_evicts_oldest_first"
    );
}

#[test]
fn the_replay_command_of_a_failure_runs_exactly_that_scenario() {
    let run = tidemark_run(&[
        "--impl",
        BROKEN,
        "--only",
        "scratchpad::directory_times_do_not_keep_a_dead_session_alive",
    ]);
    assert_eq!(run.status, 1);
    assert!(
        run.stdout.ends_with("0 passed, 1 failed\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .starts_with("FAIL  scratchpad::directory_times_do_not_keep_a_dead_session_alive"),
        "{}",
        run.stdout
    );
}

#[test]
fn an_unknown_only_name_is_an_error_not_an_empty_pass() {
    let run = tidemark_run(&["--only", "scratchpad::no_such_scenario"]);
    assert_eq!(run.status, 2);
    assert!(
        run.stderr
            .contains("no scenario is named \"scratchpad::no_such_scenario\""),
        "{}",
        run.stderr
    );
}

#[test]
fn a_program_that_resolves_an_empty_root_to_its_working_directory_is_caught_and_writes_nothing_outside_it(
) {
    // The source's own bug (SP-1.3), introduced into a copy of the example: "" becomes ".".
    let example =
        std::fs::read_to_string(repo_root().join("examples/python-scratchpad/scratchpad.py"))
            .unwrap();
    let bugged = example.replacen(
        "        self.root = root\n",
        "        self.root = root or \".\"\n",
        1,
    );
    assert_ne!(
        bugged, example,
        "the example still assigns its root where this test expects"
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("empty-root-is-cwd.py");
    std::fs::write(&script, bugged).unwrap();

    let command = format!("python3 {}", script.display());
    let run = tidemark_run(&[
        "--impl",
        &command,
        "--only",
        "scratchpad::an_unmounted_scratchpad_writes_nothing",
    ]);
    assert_eq!(run.status, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("expected: refused unmounted\n      actual:   written "),
        "{}",
        run.stdout
    );
    // It wrote into the scenario's working directory (its current directory), never into the
    // directory tidemark was run from.
    let strays: Vec<_> = std::fs::read_dir(repo_root())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("t-"))
        .collect();
    assert!(
        strays.is_empty(),
        "the program wrote beside the repository: {strays:?}"
    );
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_report_is_the_same_whatever_the_number_of_scenarios_in_flight() {
    let mut args = vec!["--impl", BROKEN];
    for name in SNAPSHOT_SCENARIOS {
        args.extend(["--only", name]);
    }
    let one_at_a_time = tidemark_run(&args);
    args.extend(["--jobs", "3"]);
    let three_at_once = tidemark_run(&args);
    assert_eq!(one_at_a_time.status, three_at_once.status);
    assert_eq!(one_at_a_time.stdout, three_at_once.stdout);
}

//! Adopting the suite gradually: `tidemark run --write-expectations` records today's failures,
//! `--expect` passes while the results match them and fails on anything new, and an entry that
//! no longer matches says what to change. Against the deliberately broken Python copy, on four
//! scenarios (three fail, one passes), so the snapshots stay put when the suite grows.

use std::path::Path;
use std::process::Command;

use tidemark_conformance::spec::repo_root;

const TIDEMARK: &str = env!("CARGO_BIN_EXE_tidemark");
const BROKEN: &str = "python3 fixtures/adapters/broken-scratchpad.py";

const SCENARIOS: [&str; 4] = [
    "scratchpad::directory_times_do_not_keep_a_dead_session_alive",
    "scratchpad::own_path_wins",
    "scratchpad::the_ceiling_is_summed_across_a_requesters_sessions",
    "scratchpad::the_session_cap_evicts_oldest_first",
];

struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

/// `tidemark run --impl BROKEN --only <the four> <args>` from the repository root.
fn run(args: &[&str]) -> Run {
    let mut cmd = Command::new(TIDEMARK);
    cmd.args(["run", "--impl", BROKEN]);
    for s in SCENARIOS {
        cmd.args(["--only", s]);
    }
    let out = cmd
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("tidemark runs");
    Run {
        status: out.status.code().expect("tidemark exits"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The file's text with the temporary directory's path replaced, for snapshots.
fn portable(text: &str, dir: &Path) -> String {
    text.replace(&dir.display().to_string(), "$TMP")
}

#[test]
fn written_expectations_gate_the_broken_copy_on_nothing_new() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("expectations.toml");
    let file_arg = file.to_str().unwrap();

    // Today's failures, written: the run itself still fails (nothing was expected yet).
    let first = run(&["--write-expectations", file_arg]);
    assert_eq!(first.status, 1, "{}", first.stdout);
    assert!(
        first.stderr.contains("wrote 3 entries to"),
        "{}",
        first.stderr
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(written.matches("[[failure]]").count(), 3, "{written}");
    assert_eq!(
        written.matches("reason = \"UNTRIAGED:").count(),
        3,
        "{written}"
    );

    // Gated on them: the same run passes, each failure shown as known with its reason.
    let gated = run(&["--expect", file_arg]);
    assert_eq!(gated.status, 0, "{}", gated.stdout);
    assert!(
        gated
            .stdout
            .ends_with("1 passed, 0 failed, 3 known, 0 out of date\n"),
        "{}",
        gated.stdout
    );
    insta::assert_snapshot!(
        "gated_on_known_failures",
        portable(&gated.stdout, dir.path())
    );

    // The JSON and JUnit reports carry them as known failures with their reason.
    let junit = dir.path().join("junit.xml");
    let json = run(&[
        "--expect",
        file_arg,
        "--format",
        "json",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(json.status, 0);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["counts"]["known"], 3);
    assert_eq!(doc["counts"]["failed"], 0);
    let statuses: Vec<&str> = doc["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["known_failure", "passed", "known_failure", "known_failure"]
    );
    assert!(doc["scenarios"][0]["expectation"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("UNTRIAGED"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(
        xml.matches("<skipped message=\"known failure (").count(),
        3,
        "{xml}"
    );
    assert!(
        xml.contains(
            "<testsuites name=\"tidemark\" tests=\"4\" failures=\"0\" errors=\"0\" skipped=\"3\">"
        ),
        "{xml}"
    );
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn an_entry_that_no_longer_matches_fails_the_run_and_says_what_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("expectations.toml");
    let file_arg = file.to_str().unwrap();
    let first = run(&["--write-expectations", file_arg]);
    assert_eq!(first.status, 1);
    let written = std::fs::read_to_string(&file).unwrap();

    // A team triages one entry, the suite's step moved for another (its line), one failure is
    // not listed (a new failure), a passing scenario is listed (it was fixed), and so is a
    // scenario this run does not select (another CI job's). An entry naming a scenario the
    // suite no longer has is out of date too, in a run that selects its profile without
    // `--only` (`expectations::judge`'s tests).
    let mut entries: Vec<String> = written.split("\n[[failure]]\n").map(String::from).collect();
    let header = entries.remove(0);
    assert_eq!(entries.len(), 3);
    entries[0] = entries[0].replacen(
        "reason = \"UNTRIAGED: recorded by --write-expectations; replace this with why the failure is accepted, or fix it\"",
        "reason = \"we count directories on purpose\"",
        1,
    );
    entries[1] = entries[1].replace(".tdm:", ".tdm:1");
    entries.remove(2);
    entries.push(
        "scenario = \"scratchpad::own_path_wins\"\nat = \"x\"\nstep = \"y\"\nexpected = \"z\"\nactual = \"w\"\nreason = \"was broken\"\n"
            .into(),
    );
    entries.push(
        "scenario = \"scoped::not_in_this_run\"\nat = \"x\"\nstep = \"y\"\nexpected = \"z\"\nactual = \"w\"\nreason = \"another job\"\n"
            .into(),
    );
    let edited = format!("{header}\n[[failure]]\n{}", entries.join("\n[[failure]]\n"));
    std::fs::write(&file, edited).unwrap();

    let junit = dir.path().join("junit.xml");
    let stale = run(&["--expect", file_arg, "--junit", junit.to_str().unwrap()]);
    assert_eq!(stale.status, 1, "{}", stale.stdout);
    assert!(
        stale
            .stdout
            .ends_with("1 passed, 2 failed, 1 known, 2 out of date\n"),
        "{}",
        stale.stdout
    );
    insta::assert_snapshot!(
        "out_of_date_entries_table",
        portable(&stale.stdout, dir.path())
    );
    let xml = portable(&std::fs::read_to_string(&junit).unwrap(), dir.path());
    assert!(
        xml.contains("<testsuite name=\"tidemark.expectations\" tests=\"2\" failures=\"2\""),
        "{xml}"
    );
    assert!(xml.contains("type=\"out of date\""), "{xml}");

    // Writing again keeps the triaged reason and the entry of the other job.
    let rewrite = run(&["--expect", file_arg, "--write-expectations", file_arg]);
    assert_eq!(rewrite.status, 1);
    let rewritten = std::fs::read_to_string(&file).unwrap();
    assert!(
        rewritten.contains("we count directories on purpose"),
        "{rewritten}"
    );
    assert!(rewritten.contains("scoped::not_in_this_run"), "{rewritten}");
    assert!(
        !rewritten.contains("scratchpad::own_path_wins"),
        "{rewritten}"
    );
    assert_eq!(run(&["--expect", file_arg]).status, 0);
}

#[test]
fn a_malformed_expectations_file_stops_the_run_before_it_starts_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("expectations.toml");
    std::fs::write(
        &file,
        "format = \"tidemark-expectations/1\"\n\n[[failure]]\nscenario = \"scratchpad::own_path_wins\"\nat = \"a\"\nstep = \"b\"\nexpected = \"c\"\nactual = \"d\"\nreason = \"\"\n",
    )
    .unwrap();
    let r = run(&["--expect", file.to_str().unwrap()]);
    assert_eq!(r.status, 2, "{}", r.stdout);
    assert!(r.stdout.is_empty(), "nothing ran: {}", r.stdout);
    assert_eq!(
        portable(&r.stderr, dir.path()),
        "tidemark: $TMP/expectations.toml:9: the reason is empty: say why this is accepted (every entry needs one)\n"
    );
}

#[test]
fn exploration_refuses_a_signature_it_never_prints_and_a_hunt_with_expectations() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("expectations.toml");
    std::fs::write(
        &file,
        "format = \"tidemark-expectations/1\"\n\n[[difference]]\nprofile = \"scratchpad\"\nsignature = \"SP-3.6 disk: a directory the model never hat\"\nreason = \"a typo\"\n",
    )
    .unwrap();
    let explore = |extra: &[&str]| {
        let out = Command::new(TIDEMARK)
            .args(["explore", "--seeds", "1", "--no-save", "--expect"])
            .arg(&file)
            .args(extra)
            .current_dir(repo_root())
            .output()
            .expect("tidemark runs");
        (
            out.status.code().expect("tidemark exits"),
            portable(&String::from_utf8(out.stderr).unwrap(), dir.path()),
        )
    };
    assert_eq!(
        explore(&[]),
        (
            2,
            "tidemark: $TMP/expectations.toml:3: \"SP-3.6 disk: a directory the model never hat\" is not a difference the scratchpad's exploration reports; copy the signature `tidemark explore` prints\n".to_string()
        )
    );
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("hat\"", "had\""),
    )
    .unwrap();
    let (status, stderr) = explore(&["--hunt"]);
    assert_eq!(status, 2, "{stderr}");
    assert!(
        stderr.contains("a hunt looks for mutants, not differences"),
        "{stderr}"
    );
}

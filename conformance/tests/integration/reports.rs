//! The HTML report, coverage and `tidemark merge` through the command line: a scenario whose
//! name and content are markup is text on the page; an exploration's shards merge into the
//! verdict of the unsharded run; a truncated shard is refused by name; runs of different profiles
//! merge into one run report, and a run of another implementation is refused.

use std::path::Path;
use std::process::{Command, Output};

const TIDEMARK: &str = env!("CARGO_BIN_EXE_tidemark");

fn tidemark(args: &[&str], dir: &Path) -> Output {
    Command::new(TIDEMARK)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("tidemark runs")
}

#[test]
fn a_scenario_named_and_written_in_markup_is_escaped_text_on_the_html_page() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios/scratchpad");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(
        scenarios.join("markup-everywhere.tdm"),
        "scenario: <script>alert(1)</script>\nprofile: scratchpad\nrules: SP-2.1, SP-6.1\nkills: empty-path-names-the-root\n\nalice@#general/T1 write \"x<script>alert(2)<b>.txt\" \"<script>alert(3)</script>\"   => refused empty_path\n",
    )
    .unwrap();
    let html = dir.path().join("report.html");
    let out = tidemark(
        &[
            "run",
            "--scenarios",
            "scenarios",
            "--html",
            "report.html",
            "--coverage",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The scenario fails (the reference writes the file), so its step, name and the
    // implementation's answer are all on the page.
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let page = std::fs::read_to_string(&html).unwrap();
    for n in 1..=3 {
        assert!(
            page.contains(&format!("alert({n})")),
            "alert({n}) is on the page"
        );
    }
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    assert!(
        page.contains("x&lt;script&gt;alert(2)&lt;b&gt;.txt"),
        "{page}"
    );
    assert!(
        !page.to_ascii_lowercase().contains("<script"),
        "no script element on the page: {page}"
    );
    assert!(!page.contains("<b>.txt"), "{page}");
    // The coverage table is printed and on the page.
    assert!(stdout.contains("SPEC coverage"), "{stdout}");
    assert!(page.contains("id=\"coverage\""));
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn an_explorations_shards_merge_into_the_verdict_of_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let explore = |extra: &[&str]| {
        let mut args = vec![
            "explore",
            "--seeds",
            "24",
            "--mutant",
            "evict-newest-first",
            "--no-save",
        ];
        args.extend_from_slice(extra);
        let out = tidemark(&args, dir.path());
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    explore(&["--json", "whole.json"]);
    for k in 0..3 {
        explore(&[
            "--shard",
            &format!("{k}/3"),
            "--json",
            &format!("shard-{k}.json"),
        ]);
    }
    // In another order than the shards' numbers: a merge does not care.
    let out = tidemark(
        &[
            "merge",
            "shard-2.json",
            "shard-0.json",
            "shard-1.json",
            "--json",
            "merged.json",
            "--junit",
            "merged.xml",
            "--html",
            "merged.html",
        ],
        dir.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(f)).unwrap()).unwrap()
    };
    let (whole, merged) = (read("whole.json"), read("merged.json"));
    for field in ["passed", "failed", "differences", "rules_reached"] {
        assert_eq!(whole[field], merged[field], "{field}");
    }
    assert!(!whole["differences"].as_array().unwrap().is_empty());
    assert_eq!(merged["shard"], "all of 3");
    let junit = std::fs::read_to_string(dir.path().join("merged.xml")).unwrap();
    let distinct = whole["differences"].as_array().unwrap().len();
    assert!(
        junit.contains(&format!("failures=\"{distinct}\"")),
        "{junit}"
    );
    let page = std::fs::read_to_string(dir.path().join("merged.html")).unwrap();
    for d in whole["differences"].as_array().unwrap() {
        let sig = d["signature"].as_str().unwrap();
        assert!(page.contains(sig), "{sig} is on the merged page");
    }
}

#[test]
fn merging_a_truncated_shard_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = tidemark(
        &[
            "explore",
            "--seeds",
            "4",
            "--no-save",
            "--shard",
            "0/2",
            "--json",
            "shard-0.json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let whole = std::fs::read_to_string(dir.path().join("shard-0.json")).unwrap();
    std::fs::write(dir.path().join("shard-1.json"), &whole[..whole.len() / 3]).unwrap();
    let out = tidemark(&["merge", "shard-0.json", "shard-1.json"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("shard-1.json: not a whole JSON report (truncated or corrupt?)"),
        "{stderr}"
    );
    // And a whole shard of its own is not the whole run.
    let out = tidemark(&["merge", "shard-0.json"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("shard 1/2 of the run missing"), "{stderr}");
}

/// `tidemark run --format json` of `args`, run from the repository, written to `to`.
fn run_json(args: &[&str], to: &Path, expect: i32) {
    let root = tidemark_conformance::spec::repo_root();
    let out = tidemark(&[&["run", "--format", "json"], args].concat(), &root);
    assert_eq!(
        out.status.code(),
        Some(expect),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(to, &out.stdout).unwrap();
}

#[test]
fn runs_of_different_profiles_merge_into_one_report_and_another_implementations_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let at = |f: &str| dir.path().join(f);
    run_json(
        &[
            "--profile",
            "rows",
            "--only",
            "rows::a_backwards_clock_jump_only_delays_a_removal",
            "--tier",
            "memory",
        ],
        &at("rows.json"),
        0,
    );
    run_json(
        &["--only", "scratchpad::the_session_cap_evicts_oldest_first"],
        &at("scratchpad.json"),
        0,
    );
    let out = tidemark(
        &[
            "merge",
            "rows.json",
            "scratchpad.json",
            "--json",
            "merged.json",
            "--junit",
            "merged.xml",
            "--html",
            "merged.html",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("2 passed, 0 failed"), "{stdout}");
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(at("merged.json")).unwrap()).unwrap();
    let names: Vec<&str> = merged["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["test_name"].as_str().unwrap())
        .collect();
    // The suite's order of profiles, whatever order the files were given in.
    assert_eq!(
        names,
        [
            "scratchpad::the_session_cap_evicts_oldest_first",
            "rows::a_backwards_clock_jump_only_delays_a_removal"
        ]
    );
    assert_eq!(
        merged["profile_commands"]["rows"],
        "tidemark run --tier memory"
    );
    let junit = std::fs::read_to_string(at("merged.xml")).unwrap();
    assert!(
        junit.contains("name=\"tidemark.scratchpad\"") && junit.contains("name=\"tidemark.rows\""),
        "{junit}"
    );
    assert!(std::fs::read_to_string(at("merged.html"))
        .unwrap()
        .contains("tidemark merge (run reports): passed"));

    // The same scenario against another program: not a run of this implementation.
    run_json(
        &[
            "--impl",
            "python3 fixtures/adapters/broken-scratchpad.py",
            "--only",
            "scratchpad::the_session_cap_evicts_oldest_first",
        ],
        &at("broken.json"),
        1,
    );
    let out = tidemark(&["merge", "rows.json", "broken.json"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("broken.json is a run of another harness or implementation than rows.json: its implementation is"),
        "{stderr}"
    );
    // A run report among exploration shards is named, not misread.
    let out = tidemark(
        &["merge", "rows.json", "scratchpad.json", "rows.json"],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("both ran the rows profile"), "{stderr}");
}

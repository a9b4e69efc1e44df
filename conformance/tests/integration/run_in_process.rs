//! `tidemark run` in process reports scoped scenarios exactly as `--impl` does: by test name in
//! `--only`, in `--format json`, and in the JUnit file. Needs PostgreSQL like every real-tier
//! test (DATABASE_URL or an ephemeral cluster).

use std::process::Command;

fn tidemark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tidemark"))
}

#[test]
fn an_in_process_run_selects_a_scoped_scenario_by_name_and_reports_it_as_json_and_junit() {
    let junit = tempfile::NamedTempFile::new().unwrap();
    let out = tidemark()
        .args([
            "run",
            "--only",
            "scoped::traversal_is_refused_in_every_spelling",
            "--only",
            "scratchpad::own_path_wins",
            "--format",
            "json",
            "--junit",
        ])
        .arg(junit.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["counts"]["passed"], 2, "{json}");
    let profiles: Vec<&str> = json["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["profile"].as_str().unwrap())
        .collect();
    assert_eq!(profiles, ["scratchpad", "scoped"]);
    let xml = std::fs::read_to_string(junit.path()).unwrap();
    assert_eq!(xml.matches("<testcase").count(), 2, "{xml}");
    assert!(
        xml.contains("scoped::traversal_is_refused_in_every_spelling"),
        "{xml}"
    );
}

#[test]
fn an_in_process_run_refuses_a_scoped_name_that_matches_no_scenario() {
    let out = tidemark()
        .args(["run", "--only", "scoped::no_such_scenario"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no_such_scenario"), "{stderr}");
}

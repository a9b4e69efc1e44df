//! Issue 20's hostile inputs, group 4 (`loader_*`): every profile finds, refuses and
//! reports files by one set of rules. Split from `hostile_inputs.rs` (whose doc lists every
//! group, and which holds the helpers these tests share) so each file is one group of the
//! issue's list; every test is the same test, moved whole.

use std::path::Path;

use super::hostile_inputs::{load_run, run, shown, spec, suite};
use super::sandbox::Sandbox;

// ---- 4. Loaders that disagree ------------------------------------------------------------------

const ROWS_FAILING: &str = "scenario: a rows scenario kept in another folder still runs\n\
profile: rows\nrules: SR-1.1\n\nworkspace w1\nsession c1 in w1\ncount events in c1 => 1\n";

#[test]
fn loader_a_rows_scenario_outside_the_rows_folder_is_run() {
    let scenarios = suite(&[("misc/elsewhere.tdm", ROWS_FAILING)]);
    let out = load_run(scenarios.path(), "rows");
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("rows::elsewhere"), "{text}");
}

#[test]
fn loader_a_malformed_scoped_scenario_outside_the_scoped_folder_is_a_load_error() {
    let scenarios = suite(&[(
        "misc/scoped-elsewhere.tdm",
        "scenario: s\nprofile: scoped\nrules: SC-1.1\nfrobnicate\n",
    )]);
    let out = load_run(scenarios.path(), "scoped");
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(
        shown(&out).contains("scoped-elsewhere.tdm:4:"),
        "{}",
        shown(&out)
    );
}

#[test]
fn loader_a_missing_scenario_directory_is_the_same_error_for_every_profile() {
    for profile in ["scratchpad", "scoped", "rows"] {
        let out = load_run(Path::new("/nonexistent/hostile-suite"), profile);
        let text = shown(&out);
        assert_eq!(out.status.code(), Some(2), "{profile}: {text}");
        assert!(
            text.contains("/nonexistent/hostile-suite") && text.contains("no such directory"),
            "{profile}: {text}"
        );
    }
}

#[test]
fn loader_a_scenario_directory_that_is_a_file_is_the_same_error_for_every_profile() {
    let file = tempfile::NamedTempFile::new().unwrap();
    for profile in ["scratchpad", "scoped", "rows"] {
        let out = load_run(file.path(), profile);
        let text = shown(&out);
        assert_eq!(out.status.code(), Some(2), "{profile}: {text}");
        assert!(text.contains("not a directory"), "{profile}: {text}");
    }
}

/// A scoped file with `step`, loaded with a rows file that fails to load, so nothing needs a
/// database: the run stops at the load, and says whether the scoped file loaded.
fn scoped_step_loads(step: &str) -> String {
    let scenarios = suite(&[
        (
            "scoped/step.tdm",
            &format!(
                "scenario: s\nprofile: scoped\nrules: SC-5.1\n\ncreate workspace w1\n{step}\n"
            ),
        ),
        (
            "rows/broken.tdm",
            "scenario: r\nprofile: rows\nrules: SR-1.1\nfrobnicate\n",
        ),
    ]);
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "run",
            "--scenarios",
            &scenarios.path().display().to_string(),
            "--spec",
            &spec(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(shown(&out).contains("broken.tdm:4:"), "{}", shown(&out));
    shown(&out)
}

#[test]
fn loader_an_unknown_scoped_refusal_reason_is_a_load_error() {
    let text = scoped_step_loads("w1/a1/s1 read session/x.md => refused no_such_reason");
    assert!(
        text.contains("step.tdm:6:") && text.contains("no_such_reason"),
        "{text}"
    );
}

#[test]
fn loader_an_unknown_scoped_wait_kind_is_a_load_error() {
    let text = scoped_step_loads("w1/a1/s1 wait snoozing x1");
    assert!(
        text.contains("step.tdm:6:") && text.contains("snoozing"),
        "{text}"
    );
}

#[test]
fn loader_an_unknown_scoped_crash_point_is_a_load_error() {
    let text = scoped_step_loads("crash at nowhere");
    assert!(
        text.contains("step.tdm:6:") && text.contains("nowhere"),
        "{text}"
    );
}

#[test]
fn loader_the_scoped_grammar_takes_the_durations_the_language_lists() {
    let text = scoped_step_loads("advance 250ms");
    assert!(!text.contains("step.tdm"), "{text}");
}

#[test]
fn loader_the_rows_grammar_takes_the_durations_the_language_lists() {
    let scenarios = suite(&[(
        "rows/ms.tdm",
        "scenario: a quarter second passes\nprofile: rows\nrules: SR-1.1\n\nworkspace w1\nadvance 250ms\nadvance 1d2h3m4s5ms\n",
    )]);
    let out = load_run(scenarios.path(), "rows");
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
}

#[test]
fn loader_every_malformed_file_of_a_run_is_reported_together() {
    let scenarios = suite(&[
        (
            "scratchpad/first.tdm",
            "scenario: a\nprofile: scratchpad\nrules: SP-1.1\nfrobnicate\n",
        ),
        (
            "scratchpad/second.tdm",
            "scenario: b\nprofile: scratchpad\nrules: SP-1.1\n\nadvance soon\n",
        ),
        (
            "scoped/third.tdm",
            "scenario: c\nprofile: scoped\nrules: SC-1.1\nfrobnicate\n",
        ),
        (
            "rows/fourth.tdm",
            "scenario: d\nprofile: rows\nrules: SR-1.1\nfrobnicate\n",
        ),
    ]);
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "run",
            "--scenarios",
            &scenarios.path().display().to_string(),
            "--spec",
            &spec(),
        ],
    );
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    for located in [
        "first.tdm:4:",
        "second.tdm:5:",
        "third.tdm:4:",
        "fourth.tdm:4:",
    ] {
        assert_eq!(
            text.matches(located).count(),
            1,
            "{located} once in: {text}"
        );
    }
}

#[test]
fn loader_a_file_in_the_older_grammar_is_named_with_what_to_do() {
    let scenarios = suite(&[(
        "scoped/old.tdms",
        "scenario: an old one\nrules: SC-5.1\n\nsweep => swept 0 sessions, 0 deletions\n",
    )]);
    let out = load_run(scenarios.path(), "scoped");
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("old.tdms") && text.contains("rename it"),
        "{text}"
    );
}

#[test]
fn loader_a_symlinked_profile_folder_inside_the_tree_loads_each_scenario_once() {
    let scenarios = suite(&[("library/rows/one.tdm", ROWS_FAILING)]);
    std::os::unix::fs::symlink("library/rows", scenarios.path().join("rows")).unwrap();
    let out = load_run(scenarios.path(), "rows");
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(text.matches("FAIL  rows::one").count(), 1, "{text}");
}

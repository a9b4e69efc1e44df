//! Issue 20's hostile inputs, group 5 (`number_*`): numbers from scenario files, saved
//! failures, protocol answers and the command line are range-checked, never wrapped. Split from `hostile_inputs.rs` (whose doc lists every
//! group, and which holds the helpers these tests share) so each file is one group of the
//! issue's list; every test is the same test, moved whole.

use tidemark_conformance::spec::repo_root;

use super::hostile_inputs::{load_run, run, shown, suite};
use super::sandbox::Sandbox;

// ---- 5. Numbers that wrap ----------------------------------------------------------------------

#[test]
fn number_a_reaped_total_past_u64_is_not_a_small_one() {
    use tidemark_conformance::profiles::rows::runner::{matches, Outcome};
    use tidemark_conformance::profiles::rows::script::Expect;
    let report = tidemark_reference::rows::ReapReport {
        streamed_events: u64::MAX,
        tool_invocations: 1,
        ..Default::default()
    };
    let outcome = Outcome::Reaped(report);
    let zero = Expect::Reaped {
        total: Some(0),
        sweeps: vec![],
    };
    assert!(!matches(&zero, &outcome));
    assert!(outcome.text().contains("more than"), "{}", outcome.text());
}

fn rows_load_error(step: &str) -> String {
    let scenarios = suite(&[(
        "rows/n.tdm",
        &format!(
            "scenario: n\nprofile: rows\nrules: SR-1.1\n\nworkspace w1\nsession c1 in w1\n{step}\n"
        ),
    )]);
    let out = load_run(scenarios.path(), "rows");
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(shown(&out).contains("n.tdm:7:"), "{}", shown(&out));
    shown(&out)
}

#[test]
fn number_a_count_past_the_largest_row_count_is_a_load_error() {
    rows_load_error("count events in c1 => 18446744073709551615");
}

#[test]
fn number_a_negative_keep_is_a_load_error() {
    rows_load_error("keep refresh_tokens t1 for -5d");
}

#[test]
fn number_seeds_past_the_last_seed_are_refused_not_skipped() {
    let sandbox = Sandbox::new();
    for args in [
        &[
            "explore",
            "--first-seed",
            "18446744073709551615",
            "--seeds",
            "10",
            "--no-save",
        ][..],
        &["explore", "--seeds", "0", "--no-save"][..],
        &[
            "world",
            "--first-seed",
            "18446744073709551615",
            "--seeds",
            "10",
        ][..],
        &[
            "explore",
            "--hunt",
            "--first-seed",
            "18446744073709551000",
            "--seeds",
            "10",
        ][..],
    ] {
        let out = run(&sandbox, args);
        let text = shown(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains("seed"), "{args:?}: {text}");
    }
}

#[test]
fn number_a_reply_bound_past_a_day_is_refused() {
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "run",
            "--impl",
            "python3 examples/python-scratchpad/scratchpad.py",
            "--timeout-ms",
            "18446744073709551615",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(shown(&out).contains("timeout"), "{}", shown(&out));
}

/// A copy of a saved failure with `edit` applied, replayed; the replay must be refused (exit 2)
/// naming `expected`, and leave nothing.
fn replay_refused(fixture: &str, edit: impl Fn(&mut serde_json::Value), expected: &str) {
    let sandbox = Sandbox::new();
    let mut f: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("fixtures/explore").join(fixture)).unwrap(),
    )
    .unwrap();
    edit(&mut f);
    let copy = sandbox.path().join("hostile.json");
    std::fs::write(&copy, serde_json::to_string_pretty(&f).unwrap()).unwrap();
    let out = run(&sandbox, &["replay", &copy.display().to_string()]);
    std::fs::remove_file(&copy).unwrap();
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains(expected), "{text}");
    sandbox.assert_clean("a refused replay");
}

const SCRATCHPAD_SAVED: &str = "scratchpad/scratchpad-dotdot-normalised-seed-0.json";
const ROWS_SAVED: &str = "rows/rows-newest-by-timestamp-seed-16.json";

fn with_scratchpad_advance(ms: i64) -> impl Fn(&mut serde_json::Value) {
    move |f| {
        f["ops"]
            .as_array_mut()
            .unwrap()
            .insert(0, serde_json::json!({"op": "advance", "ms": ms}))
    }
}

#[test]
fn number_a_saved_advance_of_i64_min_is_refused_not_an_abort() {
    replay_refused(
        SCRATCHPAD_SAVED,
        with_scratchpad_advance(i64::MIN),
        "advance",
    );
}

#[test]
fn number_a_saved_advance_before_1970_is_refused() {
    replay_refused(
        SCRATCHPAD_SAVED,
        with_scratchpad_advance(-1_767_225_600_001),
        "advance",
    );
}

#[test]
fn number_a_saved_advance_past_the_span_is_refused() {
    replay_refused(
        SCRATCHPAD_SAVED,
        with_scratchpad_advance(i64::MAX),
        "advance",
    );
}

#[test]
fn number_a_saved_rows_advance_of_i64_min_is_refused() {
    replay_refused(
        ROWS_SAVED,
        |f| {
            f["tier"] = serde_json::json!("memory");
            f["ops"][3] = serde_json::json!({"step": {"advance": i64::MIN}});
        },
        "advance",
    );
}

#[test]
fn number_a_saved_rows_keep_below_zero_is_refused() {
    replay_refused(
        ROWS_SAVED,
        |f| {
            f["tier"] = serde_json::json!("memory");
            f["ops"][3] = serde_json::json!(
                {"step": {"keep": {"store": "refresh_tokens", "id": "t1", "for_ms": -5}}}
            );
        },
        "keep",
    );
}

//! The model's state at a divergence, one profile at a time: a saved failure of each profile
//! replayed, and the lines its page shows beside expected and actual, as snapshots. The
//! scratchpad's passing run keeps none: the state is worked out only when a step diverges.

use crate::explore::cli::ReplayDivergence;
use crate::spec::repo_root;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

fn shown(d: Option<ReplayDivergence>) -> String {
    let d = d.expect("the saved failure diverges again");
    assert!(
        !d.model_state.is_empty(),
        "a divergence keeps the model's state"
    );
    assert!(d.model_state.len() <= super::MODEL_STATE_LINES + 1);
    d.model_state.join("\n")
}

#[test]
fn a_scratchpad_divergence_shows_the_callers_session_files_and_quota() {
    use crate::profiles::scratchpad::explore::fixture;
    let path =
        repo_root().join("fixtures/explore/scratchpad/scratchpad-ceiling-evicts-seed-13.json");
    let f = fixture::Fixture::load(&path).unwrap();
    let r = block_on(fixture::replay(&f)).unwrap();
    insta::assert_snapshot!(shown(r.shown));
}

#[test]
fn a_passing_scratchpad_run_works_out_no_model_state() {
    use crate::profiles::scratchpad::explore::{fixture, run::run_ops};
    use crate::profiles::scratchpad::ReferenceScratchpad;
    let path =
        repo_root().join("fixtures/explore/scratchpad/scratchpad-ceiling-evicts-seed-13.json");
    let f = fixture::Fixture::load(&path).unwrap();
    let reference = ReferenceScratchpad {
        mutant: None,
        variants: crate::variants::Declared::read(&f.setting.variants).unwrap(),
    };
    let run = block_on(run_ops(&f.ops, f.setting.unmounted, &reference));
    assert!(
        run.divergence.is_none(),
        "the reference passes the saved operations"
    );
    assert!(run.model_state.is_empty(), "{:?}", run.model_state);
}

#[test]
fn a_scoped_divergence_shows_the_sessions_activity_files_and_its_agents() {
    use crate::profiles::scoped::explore::fixture;
    use crate::profiles::scoped::model::Tier;
    let path = repo_root().join("fixtures/explore/scoped/scoped-age-only-expiry-seed-0.json");
    let f = fixture::ScopedFixture::load(&path).unwrap();
    let r = block_on(fixture::replay(Tier::Memory, &f)).unwrap();
    insta::assert_snapshot!(shown(r.shown));
}

#[test]
fn a_rows_divergence_shows_the_rows_the_model_holds() {
    use crate::profiles::rows::explore::fixture;
    use crate::profiles::rows::explore::run::Tier;
    let path = repo_root().join("fixtures/explore/rows/rows-settled-items-swept-seed-13.json");
    let f = fixture::load(&path).unwrap();
    let r = block_on(fixture::replay(Tier::Memory, &f)).unwrap();
    insta::assert_snapshot!(shown(r.shown));
}

#[test]
fn a_long_state_keeps_its_first_lines_and_counts_the_rest() {
    let lines = super::bounded_lines((0..20).map(|i| format!("row {i}")));
    assert_eq!(lines.len(), super::MODEL_STATE_LINES + 1);
    assert_eq!(lines[0], "row 0");
    assert_eq!(lines.last().unwrap(), "and 8 more");
    assert_eq!(super::bounded_lines(vec!["one".to_string()]), ["one"]);
    let long = super::bounded_lines(vec!["x".repeat(5_000)]);
    assert!(
        long[0].len() < super::MODEL_STATE_LINE_BYTES + 40,
        "{}",
        long[0].len()
    );
    assert!(long[0].contains("more bytes)"), "{}", long[0]);
}

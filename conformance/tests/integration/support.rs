//! What several of this binary's modules set up the same way: a runtime per test, and a run's
//! verdicts as (test name, what happened) pairs to compare two ways of running the same suite.

use tidemark_conformance::report::{CaseReport, Verdict};

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

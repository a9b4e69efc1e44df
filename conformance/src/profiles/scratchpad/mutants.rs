//! The suite proves its power: each mutant of the reference implementation is run against its
//! profile's scenarios and must be killed (fail at least one). A surviving mutant is a failure of
//! the suite, not of the implementation.

use crate::profiles::scratchpad::runner::run_scenario;
use crate::profiles::scratchpad::script::{Profile, Scenario};
use crate::profiles::scratchpad::ReferenceScratchpad;
use tidemark_reference::scratchpad::ScratchpadMutant;

#[derive(Clone, Debug)]
pub struct MutantResult {
    pub profile: Profile,
    pub id: &'static str,
    pub description: &'static str,
    /// Test names of the scenarios that killed it, in suite order.
    pub killed_by: Vec<String>,
}

impl MutantResult {
    pub fn killed(&self) -> bool {
        !self.killed_by.is_empty()
    }
}

/// Runs the scratchpad mutants. `stop_at_first` stops each mutant at its first killing scenario.
pub async fn run_scratchpad_mutants(
    scenarios: &[&Scenario],
    only: Option<&str>,
    stop_at_first: bool,
) -> Vec<MutantResult> {
    let mut out = Vec::new();
    for m in ScratchpadMutant::ALL {
        if only.is_some_and(|o| o != m.id()) {
            continue;
        }
        let factory = ReferenceScratchpad {
            mutant: Some(m),
            ..Default::default()
        };
        let mut killed_by = Vec::new();
        for s in scenarios
            .iter()
            .filter(|s| s.profile == Profile::Scratchpad)
        {
            let passed = run_scenario(s, &factory).await.passed();
            // The reference never waits on anything: let a SIGINT's cancellation in.
            tokio::task::yield_now().await;
            if !passed {
                killed_by.push(s.test_name());
                if stop_at_first {
                    break;
                }
            }
        }
        out.push(MutantResult {
            profile: Profile::Scratchpad,
            id: m.id(),
            description: m.description(),
            killed_by,
        });
    }
    out
}

/// The catalogue's table: a row per mutant, then the count line.
pub fn table(results: &[MutantResult]) -> String {
    use std::fmt::Write;
    let mut s = rows(results);
    let killed = results.iter().filter(|r| r.killed()).count();
    let _ = writeln!(s, "{} passed, {} failed", killed, results.len() - killed);
    s
}

/// A row per mutant: killed, by which scenario, or survived.
pub fn rows(results: &[MutantResult]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let width = results.iter().map(|r| r.id.len()).max().unwrap_or(0);
    for r in results {
        if r.killed() {
            let more = if r.killed_by.len() > 1 {
                format!(" (+{} more)", r.killed_by.len() - 1)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "KILLED    {:<11} {:<width$}  by {}{more}",
                r.profile.name(),
                r.id,
                r.killed_by[0]
            );
        } else {
            let _ = writeln!(
                s,
                "SURVIVED  {:<11} {:<width$}  {}: no scenario fails",
                r.profile.name(),
                r.id,
                r.description
            );
        }
    }
    s
}

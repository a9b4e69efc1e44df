//! The rows mutant run: every mutant of the reference (`reference-impl/src/rows/mutants.rs`)
//! against the scenarios naming it in `kills:`, each of which must fail under it. A surviving
//! mutant is a failure of the suite, not of the implementation.

use std::num::NonZeroUsize;

use futures::StreamExt;
use tidemark_reference::rows::RowsMutant;

use super::runner::{self, Tier};
use super::script::Script;
use tidemark_sim::trace::Trace;

/// One mutant and the scenarios naming it in `kills:` that fail under it: the first, or
/// (`all_killers`) every one. Empty: it survives.
#[derive(Clone, Debug)]
pub struct RowsMutantResult {
    pub mutant: RowsMutant,
    pub killed_by: Vec<String>,
}

/// Every rows mutant (or only `only`) against the scenarios naming it, on `tier`, up to `jobs`
/// mutants at once.
pub async fn run(
    tier: Tier<'_>,
    scripts: &[Script],
    only: Option<&str>,
    all_killers: bool,
    jobs: NonZeroUsize,
) -> Vec<RowsMutantResult> {
    futures::stream::iter(
        RowsMutant::ALL
            .into_iter()
            .filter(|m| only.is_none_or(|o| o == m.id())),
    )
    .map(|m| async move {
        let mut killed_by = Vec::new();
        for s in runner::killers(scripts, m) {
            if runner::run_on(tier, s, Some(m), &mut Trace::new(), &mut Vec::new())
                .await
                .is_err()
            {
                killed_by.push(s.test_name());
                if !all_killers {
                    break;
                }
            }
        }
        RowsMutantResult {
            mutant: m,
            killed_by,
        }
    })
    .buffered(jobs.get())
    .collect()
    .await
}

/// Mutant table lines in the shape of the other profiles'.
pub fn table(results: &[RowsMutantResult]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let width = results
        .iter()
        .map(|r| r.mutant.id().len())
        .max()
        .unwrap_or(0);
    for r in results {
        let id = r.mutant.id();
        match r.killed_by.as_slice() {
            [] => {
                let _ = writeln!(
                    s,
                    "SURVIVED  {:<11} {id:<width$}  {}: no scenario fails",
                    "rows",
                    r.mutant.description()
                );
            }
            by => {
                let _ = writeln!(
                    s,
                    "KILLED    {:<11} {id:<width$}  by {}",
                    "rows",
                    by.join(", ")
                );
            }
        }
    }
    s
}

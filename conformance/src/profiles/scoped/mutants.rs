//! The scoped mutant run: every mutant of the reference (`reference-impl/src/scoped/mutants.rs`)
//! against the scenarios naming it in `kills:`, on the real tier; the first that fails under it
//! kills it. A surviving mutant is a failure of the suite, not of the implementation.

use std::path::Path;

use tidemark_reference::scoped::ScopedMutant;

/// One scoped mutant and the scenario that killed it.
#[derive(Clone, Debug)]
pub struct ScopedMutantResult {
    pub id: &'static str,
    pub description: &'static str,
    pub killed_by: Option<String>,
}

/// Runs every scoped mutant (or only `only`) against the scenarios that name it in `kills:`.
pub async fn run(dir: &Path, only: Option<&str>) -> Result<Vec<ScopedMutantResult>, String> {
    let scripts = super::script::load_dir(dir).map_err(|e| e.to_string())?;
    let (pg, _, _) = super::postgres().await?;
    let mut out = Vec::new();
    for m in ScopedMutant::ALL {
        if only.is_some_and(|o| o != m.id()) {
            continue;
        }
        let mut killed_by = None;
        for s in scripts
            .iter()
            .filter(|s| s.kills.iter().any(|k| k == m.id()))
        {
            if super::runner::run(pg.clone(), s, Some(m)).await.is_err() {
                killed_by = Some(s.test_name());
                break;
            }
        }
        out.push(ScopedMutantResult {
            id: m.id(),
            description: m.description(),
            killed_by,
        });
    }
    Ok(out)
}

/// Mutant table lines in the shape of the scratchpad's.
pub fn mutant_table(results: &[ScopedMutantResult]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let width = results.iter().map(|r| r.id.len()).max().unwrap_or(0);
    for r in results {
        match &r.killed_by {
            Some(k) => {
                let _ = writeln!(s, "KILLED    {:<11} {:<width$}  by {k}", "scoped", r.id);
            }
            None => {
                let _ = writeln!(
                    s,
                    "SURVIVED  {:<11} {:<width$}  {}: no scenario fails",
                    "scoped", r.id, r.description
                );
            }
        }
    }
    s
}

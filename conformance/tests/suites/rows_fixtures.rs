//! Every saved rows exploration failure (fixtures/explore/rows) replayed as its own test
//! (`rows_fixture::<file>`): a failure found against a mutant must recur with the same trace
//! hash, and the reference must pass the same operations; one found against the reference must
//! no longer happen. Needs PostgreSQL like every real-tier test (DATABASE_URL or an ephemeral
//! cluster); one is started for the whole file.

use libtest_mimic::Trial;
use tidemark_conformance::profiles::rows::explore::fixture::{self as rows_fixture, default_dir};
use tidemark_conformance::profiles::rows::explore::run::{Databases, Tier};

use super::shared::{saved_failure_verdict, Replayed, Shared};

pub fn trials(shared: &Shared) -> Result<Vec<Trial>, String> {
    let fixtures = rows_fixture::load_all(&default_dir())
        .map_err(|e| format!("a saved rows fixture does not load: {e}"))?;
    let get_pg = shared.postgres();
    let handle = shared.rt.clone();
    let mut trials = vec![Trial::test(
        "rows_fixture::at_least_one_failure_is_saved",
        {
            let n = fixtures.len();
            move || {
                if n == 0 {
                    return Err(format!(
                        "no saved rows failures under {}",
                        default_dir().display()
                    )
                    .into());
                }
                Ok(())
            }
        },
    )];
    trials.extend(fixtures.into_iter().map(|(path, f)| {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().replace('-', "_"))
            .unwrap_or_default();
        let get_pg = get_pg.clone();
        let handle = handle.clone();
        Trial::test(format!("rows_fixture::{name}"), move || {
            // On the tier it was found on: its trace holds the state as that tier reads it.
            let r = if f.setting.tier == "memory" {
                handle.block_on(rows_fixture::replay(Tier::Memory, &f))?
            } else {
                let pg = get_pg()?;
                handle.block_on(async {
                    let dbs = Databases::new(&pg);
                    let r = rows_fixture::replay(Tier::Postgres(&dbs), &f).await;
                    dbs.close().await?;
                    r
                })?
            };
            saved_failure_verdict(Replayed {
                path: &path,
                against_mutant: f.mutant.is_some(),
                reproduced: r.reproduced,
                reference_passes: r.reference_passes,
                trace_hash: &r.trace_hash,
                saved_hash: &f.trace_hash,
                divergence: r.divergence.map(|d| d.to_string()),
            })
        })
    }));
    Ok(trials)
}

//! Every saved scoped exploration failure (fixtures/explore/scoped) replayed as its own test
//! (`scoped_fixture::<file>`): a failure found against a mutant must recur with the same trace
//! hash, and the reference must pass the same operations. Needs PostgreSQL like every real-tier
//! test (DATABASE_URL or an ephemeral cluster); one is started for the whole file.

use libtest_mimic::Trial;
use tidemark_conformance::profiles::scoped::explore::fixture::{
    self as scoped_fixture, default_dir,
};
use tidemark_conformance::profiles::scoped::model::Tier;

use super::shared::{saved_failure_verdict, Replayed, Shared};

pub fn trials(shared: &Shared) -> Result<Vec<Trial>, String> {
    let fixtures = scoped_fixture::load_all(&default_dir())
        .map_err(|e| format!("a saved scoped fixture does not load: {e}"))?;
    let get_pg = shared.postgres();
    let handle = shared.rt.clone();
    let trials = fixtures
        .into_iter()
        .map(|(path, f)| {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().replace('-', "_"))
                .unwrap_or_default();
            let get_pg = get_pg.clone();
            let handle = handle.clone();
            Trial::test(format!("scoped_fixture::{name}"), move || {
                let pg = get_pg()?;
                // Every fixture replays on both tiers: the in-memory metadata store must
                // reproduce what PostgreSQL does, and the other way round.
                let mut r = None;
                for tier in [Tier::Postgres(&pg), Tier::Memory] {
                    let got = handle
                        .block_on(scoped_fixture::replay(tier, &f))
                        .map_err(|e| format!("{} tier: {e}", tier.name()))?;
                    if let Some(first) = &r {
                        if *first != got {
                            return Err(format!(
                                "{}: the tiers disagree: postgres {first:?}, memory {got:?}",
                                path.display()
                            )
                            .into());
                        }
                    }
                    r = Some(got);
                }
                let r = r.expect("two tiers ran");
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
        })
        .collect();
    Ok(trials)
}

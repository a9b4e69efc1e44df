//! Every saved rows exploration failure (fixtures/explore/rows) replayed as its own test
//! (`rows_fixture::<file>`): a failure found against a mutant must recur with the same trace
//! hash, and the reference must pass the same operations; one found against the reference must
//! no longer happen. Needs PostgreSQL like every real-tier test (DATABASE_URL or an ephemeral
//! cluster); one is started for the whole file.

use libtest_mimic::{Arguments, Failed, Trial};
use std::sync::Arc;
use tidemark_conformance::profiles::rows::explore_run::{Databases, Tier};
use tidemark_conformance::profiles::rows::fixture::{self as rows_fixture, default_dir};
use tidemark_sim::real_tier::PgProvider;

fn main() {
    let args = Arguments::from_args();
    let fixtures = match rows_fixture::load_all(&default_dir()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("a saved rows fixture does not load: {e}");
            std::process::exit(101);
        }
    };
    // The runtime that started the cluster lives as long as the tests.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let pg: Result<Arc<PgProvider>, String> = rt
        .block_on(PgProvider::from_environment())
        .map(Arc::new)
        .map_err(|e| e.to_string());
    let handle = rt.handle().clone();
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
        let pg = pg.clone();
        let handle = handle.clone();
        Trial::test(format!("rows_fixture::{name}"), move || {
            // On the tier it was found on: its trace holds the state as that tier reads it.
            let r = if f.setting.tier == "memory" {
                handle.block_on(rows_fixture::replay(Tier::Memory, &f))?
            } else {
                let pg = pg.map_err(Failed::from)?;
                handle.block_on(async {
                    let dbs = Databases::new(&pg);
                    let r = rows_fixture::replay(Tier::Postgres(&dbs), &f).await;
                    dbs.close().await?;
                    r
                })?
            };
            let shown = path.display();
            if f.mutant.is_none() {
                return match r.divergence {
                    Some(d) => Err(format!("{shown}: the reference still fails: {d}").into()),
                    None => Ok(()),
                };
            }
            if !r.reproduced {
                return Err(format!(
                    "{shown}: the saved failure no longer reproduces identically (trace {:?} vs saved {}; divergence {:?})",
                    r.trace_hash, f.trace_hash, r.divergence
                )
                .into());
            }
            if !r.reference_passes {
                return Err(format!("{shown}: the reference fails these operations too").into());
            }
            Ok(())
        })
    }));
    let conclusion = libtest_mimic::run(&args, trials);
    drop(pg);
    drop(rt);
    conclusion.exit();
}

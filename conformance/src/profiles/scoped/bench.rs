//! The scoped profile's `tidemark bench` figures. Timings come from the wall clock here on
//! purpose: they are measurements, never inputs to a decision.

use std::time::Instant;

/// The scoped profile's figures, measured side by side in one run: exploration seeds per second
/// on the memory tier and on the PostgreSQL tier over the same seeds, their ratio, and the wall
/// time of the scoped suite (as `tidemark run --profile scoped` runs it, PostgreSQL's start
/// included).
pub fn scoped(seeds: u64, jobs: std::num::NonZeroUsize) -> Result<String, String> {
    use crate::explore::engine::explore_seeds;
    use crate::profiles::scoped::explore::ScopedExplorer;
    use crate::profiles::scoped::model::Tier;
    use std::fmt::Write;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))?;
    rt.block_on(async {
        let mut s = String::new();
        let scripts = crate::profiles::scoped::script::load_dir(
            &crate::profiles::scoped::scenarios_dir(),
        )
        .map_err(|e| e.to_string())?;
        let started = Instant::now();
        let cases = crate::profiles::scoped::check_in_process(
            &scripts,
            jobs,
            None,
            &crate::variants::Declared::defaults(),
        )
        .await?;
        let suite = started.elapsed();
        let failed = cases
            .iter()
            .filter(|c| !matches!(c.verdict, crate::report::Verdict::Passed))
            .count();
        if failed > 0 {
            return Err(format!("{failed} scoped scenario(s) failed; run tidemark run --profile scoped"));
        }
        let (pg, source, ready) = crate::profiles::scoped::postgres().await?;
        let mut per_second = Vec::new();
        for tier in [Tier::Memory, Tier::Postgres(&pg)] {
            let explorer = ScopedExplorer {
                tier,
                variants: crate::variants::Declared::defaults(),
            };
            let run = explore_seeds(&explorer, 0..seeds, None, 0, jobs.get(), &|| {}).await;
            if !run.failures.is_empty() {
                return Err(format!(
                    "{} scoped seed(s) failed on the {} tier; run tidemark explore --profile scoped",
                    run.failures.len(),
                    tier.name()
                ));
            }
            per_second.push(seeds as f64 / run.elapsed.as_secs_f64().max(1e-9));
        }
        let _ = writeln!(
            s,
            "scoped suite: {} scenarios in {:.2} s (--jobs {jobs}, PostgreSQL's start included)",
            cases.len(),
            suite.as_secs_f64()
        );
        let _ = writeln!(
            s,
            "scoped explore, seeds 0..{seeds}, --jobs {jobs}: memory tier {:.1} seeds/s, PostgreSQL tier {:.1} seeds/s ({source}, ready in {:.2} s): {:.0}% of the memory tier",
            per_second[0],
            per_second[1],
            ready.as_secs_f64(),
            100.0 * per_second[1] / per_second[0]
        );
        Ok(s)
    })
}

//! `tidemark explore --profile scoped`: seeded random operation sequences against the scoped
//! reference on the real tier (in-memory S3 over HTTP, a real PostgreSQL), checked step by step
//! by the model of SPEC part SC in `tidemark_sim::real_tier::model`. One PostgreSQL for the whole
//! run; each seed gets its own database and its own S3 server.
//!
//! No shrinking and no fixtures yet: a failure prints its seed, its operations, where it
//! diverged, and the command that replays it.

use std::fmt::Write;
use std::time::{Duration, Instant};

use super::Shard;
use tidemark_reference::scoped::ScopedMutant;
use tidemark_sim::real_tier::model::{run_sequence, SequenceError, DEFAULT_STEPS};
use tidemark_sim::real_tier::PgProvider;

/// What `tidemark explore --profile scoped` was asked for.
#[derive(Clone, Debug)]
pub struct ScopedExploreArgs {
    pub seeds: u64,
    pub first_seed: u64,
    pub shard: Shard,
    pub mutant: Option<String>,
    pub hunt: bool,
}

/// The mutant an id names, or an error listing every scoped id.
pub fn mutant_arg(id: Option<&str>) -> Result<Option<ScopedMutant>, String> {
    match id {
        None => Ok(None),
        Some(id) => ScopedMutant::from_id(id).map(Some).ok_or_else(|| {
            format!(
                "unknown scoped mutant {id:?}; expected one of {}",
                ScopedMutant::ALL.map(|m| m.id()).join(", ")
            )
        }),
    }
}

/// The exact command that replays one seed.
pub fn replay_command(seed: u64, mutant: Option<ScopedMutant>) -> String {
    let mut s = format!("tidemark explore --profile scoped --first-seed {seed} --seeds 1");
    if let Some(m) = mutant {
        s.push_str(&format!(" --mutant {}", m.id()));
    }
    s
}

/// One explored seed that failed.
#[derive(Clone, Debug)]
pub struct ScopedFailure {
    pub seed: u64,
    pub error: SequenceError,
}

/// A finished exploration.
#[derive(Clone, Debug)]
pub struct ScopedExplore {
    pub passed: usize,
    pub failures: Vec<ScopedFailure>,
    pub swept_files: usize,
    pub elapsed: Duration,
}

/// Runs every seed (its own database on `pg`) against the reference or `mutant`.
pub async fn explore_seeds(
    pg: &PgProvider,
    seeds: impl Iterator<Item = u64>,
    mutant: Option<ScopedMutant>,
) -> ScopedExplore {
    let start = Instant::now();
    let mut out = ScopedExplore {
        passed: 0,
        failures: Vec::new(),
        swept_files: 0,
        elapsed: Duration::ZERO,
    };
    for seed in seeds {
        match run_sequence(pg, seed, DEFAULT_STEPS, mutant, None).await {
            Ok(r) => {
                out.passed += 1;
                out.swept_files += r.swept_files;
            }
            Err(error) => out.failures.push(ScopedFailure { seed, error }),
        }
    }
    out.elapsed = start.elapsed();
    out
}

/// One mutant hunted by random search: the first seed that diverged, if any.
#[derive(Clone, Debug)]
pub struct HuntLine {
    pub mutant: ScopedMutant,
    /// The seed that found it and how many seeds were run to get there.
    pub found: Option<(u64, u64)>,
    /// A seed that could not be set up (not a verdict) ends the line as a failure.
    pub setup_error: Option<String>,
    pub tried: u64,
}

/// For each mutant (or only `only`), runs seeds from `first_seed` until one diverges, at most
/// `limit` seeds.
pub async fn hunt(
    pg: &PgProvider,
    first_seed: u64,
    limit: u64,
    shard: Shard,
    only: Option<ScopedMutant>,
) -> Vec<HuntLine> {
    let mut lines = Vec::new();
    for m in ScopedMutant::ALL {
        if only.is_some_and(|o| o != m) {
            continue;
        }
        let mut line = HuntLine {
            mutant: m,
            found: None,
            setup_error: None,
            tried: 0,
        };
        for seed in shard.seeds(first_seed, limit) {
            line.tried += 1;
            match run_sequence(pg, seed, DEFAULT_STEPS, Some(m), None).await {
                Ok(_) => {}
                Err(SequenceError::Diverged(_)) => {
                    line.found = Some((seed, line.tried));
                    break;
                }
                Err(SequenceError::Setup(e)) => {
                    line.setup_error = Some(format!("seed {seed}: {e}"));
                    break;
                }
            }
        }
        lines.push(line);
    }
    lines
}

/// A failure the way a person needs it: seed, operations, expected beside actual, replay.
pub fn describe(f: &ScopedFailure, mutant: Option<ScopedMutant>) -> String {
    let mut s = String::new();
    let against = mutant
        .map(|m| format!("mutant {}", m.id()))
        .unwrap_or_else(|| "reference".into());
    let _ = writeln!(s, "FAIL  seed {} against the {against}", f.seed);
    match &f.error {
        SequenceError::Diverged(d) => {
            let _ = writeln!(s, "  operations ({}):", d.ops.len());
            for (i, op) in d.ops.iter().enumerate() {
                let _ = writeln!(s, "    {i:>3}  {op}");
            }
            let _ = writeln!(
                s,
                "  diverged at operation {} (step {} of the seed), the last one:",
                d.ops.len().saturating_sub(1),
                d.step
            );
            let _ = writeln!(s, "    expected {}", d.expected);
            let _ = writeln!(s, "    actual   {}", d.actual);
        }
        SequenceError::Setup(e) => {
            let _ = writeln!(s, "  could not set up: {e}");
        }
    }
    let _ = writeln!(s, "  replay: {}", replay_command(f.seed, mutant));
    s
}

/// The hunt's report lines and its `N passed, M failed`.
pub fn hunt_report(lines: &[HuntLine], limit: u64) -> String {
    let mut s = String::new();
    let width = lines.iter().map(|l| l.mutant.id().len()).max().unwrap_or(0);
    for l in lines {
        let id = l.mutant.id();
        match (&l.found, &l.setup_error) {
            (Some((seed, n)), _) => {
                let _ = writeln!(
                    s,
                    "FOUND      {id:<width$}  after {n} seed(s) (seed {seed}); replay: {}",
                    replay_command(*seed, Some(l.mutant))
                );
            }
            (None, Some(e)) => {
                let _ = writeln!(s, "ERROR      {id:<width$}  {e}");
            }
            (None, None) => {
                let _ = writeln!(
                    s,
                    "NOT FOUND  {id:<width$}  in {} seed(s) of random search (limit {limit})",
                    l.tried
                );
            }
        }
    }
    let found = lines.iter().filter(|l| l.found.is_some()).count();
    let _ = writeln!(s, "{found} passed, {} failed", lines.len() - found);
    s
}

/// The command: explore (or hunt), print, and say whether everything passed.
pub fn command(args: &ScopedExploreArgs) -> Result<bool, String> {
    let mutant = mutant_arg(args.mutant.as_deref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))?;
    rt.block_on(async {
        let (pg, source, ready) = crate::profiles::scoped::postgres().await?;
        println!("scoped explore: PostgreSQL from {source} (ready in {ready:.2?})");
        if args.hunt {
            let start = Instant::now();
            let lines = hunt(&pg, args.first_seed, args.seeds, args.shard, mutant).await;
            let seeds: u64 = lines.iter().map(|l| l.tried).sum();
            let elapsed = start.elapsed();
            let report = hunt_report(&lines, args.seeds);
            let (body, summary) = report
                .trim_end()
                .rsplit_once('\n')
                .unwrap_or(("", report.trim_end()));
            if !body.is_empty() {
                println!("{body}");
            }
            println!(
                "{seeds} seeds in {elapsed:.2?} ({:.1} seeds/s)",
                seeds as f64 / elapsed.as_secs_f64().max(1e-9)
            );
            println!("{summary}");
            return Ok(lines.iter().all(|l| l.found.is_some()));
        }
        let run = explore_seeds(&pg, args.shard.seeds(args.first_seed, args.seeds), mutant).await;
        for f in &run.failures {
            print!("{}", describe(f, mutant));
        }
        let n = run.passed + run.failures.len();
        println!(
            "{n} seeds in {:.2?} ({:.1} seeds/s), {} steps each; the model's sweeps removed {} files",
            run.elapsed,
            n as f64 / run.elapsed.as_secs_f64().max(1e-9),
            DEFAULT_STEPS,
            run.swept_files
        );
        println!("{} passed, {} failed", run.passed, run.failures.len());
        Ok(run.failures.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs PostgreSQL like every real-tier test (DATABASE_URL or an ephemeral cluster).
    #[test]
    fn the_reference_passes_a_few_seeds_and_random_search_finds_age_only_expiry() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (pg, _, _) = crate::profiles::scoped::postgres().await.unwrap();
            let run = explore_seeds(&pg, 0..3, None).await;
            assert!(
                run.failures.is_empty(),
                "{}",
                run.failures
                    .iter()
                    .map(|f| describe(f, None))
                    .collect::<String>()
            );
            assert_eq!(run.passed, 3);
            let lines = hunt(&pg, 0, 24, Shard::ALL, Some(ScopedMutant::AgeOnlyExpiry)).await;
            assert_eq!(lines.len(), 1);
            assert!(lines[0].found.is_some(), "{}", hunt_report(&lines, 24));
        });
    }
}

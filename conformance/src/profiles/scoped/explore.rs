//! `tidemark explore --profile scoped`: seeded random operation sequences against the scoped
//! reference on the real tier (in-memory S3 over HTTP, a real PostgreSQL), checked step by step
//! by the model of SPEC part SC in `crate::profiles::scoped::model`. One PostgreSQL for the whole
//! run; each seed gets its own database and its own S3 server.
//!
//! A failing seed is shrunk by deleting chunks of its operations (the proptest value tree of
//! `shrink.rs`, over the seed's fixed operations), printed with its trace, and saved under
//! `fixtures/explore/scoped/`, where `cargo test` replays it for ever.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::fixture::{self, divergence_hash, ScopedFixture};
use crate::explore::shrink::OpsTree;
use crate::explore::Shard;
use crate::profiles::scoped::model::Tier;
use crate::profiles::scoped::model::{
    generate, run_ops, run_sequence, Divergence, ModelOp, SequenceError, DEFAULT_STEPS,
};
use proptest::strategy::ValueTree;
use tidemark_reference::scoped::ScopedMutant;

/// What `tidemark explore --profile scoped` was asked for.
#[derive(Clone, Debug)]
pub struct ScopedExploreArgs {
    pub seeds: u64,
    pub first_seed: u64,
    pub shard: Shard,
    pub mutant: Option<String>,
    pub hunt: bool,
    /// Run each seed twice and compare trace hashes.
    pub check_determinism: bool,
    /// Where failures are saved; `None`: not saved.
    pub save_dir: Option<PathBuf>,
    /// Candidate runs the shrinker may spend on one failure.
    pub max_shrink_iters: u32,
    /// `postgres` (the real tier) or `memory` (the in-memory metadata store).
    pub tier: String,
    /// Run each seed on both tiers and compare trace hashes.
    pub differential: bool,
    /// Seeds in flight at once.
    pub jobs: std::num::NonZeroUsize,
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

/// The exact command that replays one seed on the tier it ran on (`postgres` is the default
/// and is left out).
pub fn replay_command(seed: u64, mutant: Option<ScopedMutant>, tier: &str) -> String {
    let mut s = format!("tidemark explore --profile scoped --first-seed {seed} --seeds 1");
    if let Some(m) = mutant {
        s.push_str(&format!(" --mutant {}", m.id()));
    }
    if tier != "postgres" {
        s.push_str(&format!(" --tier {tier}"));
    }
    s
}

/// One explored seed that failed.
#[derive(Clone, Debug)]
pub struct ScopedFailure {
    pub seed: u64,
    pub error: SequenceError,
    /// The operations that fail: shrunk when the failure was a divergence.
    pub ops: Vec<ModelOp>,
    pub original_len: usize,
}

/// Shrinks a failing sequence: deletes chunks of operations (halves, quarters, … single
/// steps) while it still diverges, at most `max_iters` candidate runs. Each candidate runs on a
/// fresh database with the same seed, so the S3 fault generator is the same.
pub async fn shrink(
    tier: Tier<'_>,
    seed: u64,
    ops: Vec<ModelOp>,
    divergence: Divergence,
    mutant: Option<ScopedMutant>,
    max_iters: u32,
) -> (Vec<ModelOp>, Divergence) {
    let mut tree = OpsTree::of_values(ops.clone());
    let mut best = (ops, divergence);
    let mut more = tree.simplify();
    let mut iters = 0;
    while more && iters < max_iters {
        iters += 1;
        let candidate = tree.current();
        more = match run_ops(tier, seed, &candidate, mutant, None).await {
            Err(SequenceError::Diverged(d)) => {
                best = (candidate, d);
                tree.simplify()
            }
            // A pass, or a harness hiccup (never a verdict): keep the step.
            _ => tree.complicate(),
        };
    }
    best
}

/// A finished exploration.
#[derive(Clone, Debug)]
pub struct ScopedExplore {
    pub passed: usize,
    pub failures: Vec<ScopedFailure>,
    pub swept_files: usize,
    /// Simulated time the passing seeds covered.
    pub simulated_ms: i64,
    pub elapsed: Duration,
}

/// Runs every seed (its own metadata on `tier`) against the reference or `mutant`, up to `jobs`
/// at once; a divergence is shrunk with at most `max_shrink_iters` candidate runs. Seeds share
/// nothing (each has its own database, S3 server and clock), so running them side by side
/// changes no trace, and the results come back in seed order. On PostgreSQL a seed spends most
/// of its time waiting for the server, which another seed's work fills.
pub async fn explore_seeds(
    tier: Tier<'_>,
    seeds: impl Iterator<Item = u64>,
    mutant: Option<ScopedMutant>,
    max_shrink_iters: u32,
    jobs: usize,
    on_seed: &dyn Fn(),
) -> ScopedExplore {
    use futures::StreamExt;
    let start = Instant::now();
    let mut out = ScopedExplore {
        passed: 0,
        failures: Vec::new(),
        swept_files: 0,
        simulated_ms: 0,
        elapsed: Duration::ZERO,
    };
    let mut runs = futures::stream::iter(seeds)
        .map(|seed| async move {
            let ops = generate(seed, DEFAULT_STEPS);
            let result = run_ops(tier, seed, &ops, mutant, None).await;
            on_seed();
            (seed, ops, result)
        })
        .buffered(jobs.max(1));
    let mut failed = Vec::new();
    while let Some((seed, ops, result)) = runs.next().await {
        match result {
            Ok(r) => {
                out.passed += 1;
                out.swept_files += r.swept_files;
                out.simulated_ms += r.simulated_ms;
            }
            Err(error) => failed.push((seed, ops, error)),
        }
    }
    // Shrinking runs after, one failure at a time, so a failing seed never holds up the rest.
    for (seed, ops, error) in failed {
        let original_len = ops.len();
        match error {
            SequenceError::Diverged(d) => {
                let (ops, d) = shrink(tier, seed, ops, d, mutant, max_shrink_iters).await;
                out.failures.push(ScopedFailure {
                    seed,
                    error: SequenceError::Diverged(d),
                    ops,
                    original_len,
                });
            }
            error => out.failures.push(ScopedFailure {
                seed,
                error,
                original_len,
                ops,
            }),
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
    /// Why the generator cannot reach this mutant ([`OUT_OF_REACH`]): not searched.
    pub out_of_reach: Option<&'static str>,
}

/// Scoped mutants the exploration generator never reaches, and why; the scenarios kill each
/// of them (`tidemark mutants --profile scoped`). Reaching them needs the store's error classes
/// and lifecycle configurations among the generated operations: a new generator version.
pub const OUT_OF_REACH: &[(&str, &str)] = &[
    (
        "missing-bucket-unavailable",
        "the generator's store faults are errors, partial batches and a store down, never a missing bucket",
    ),
    (
        "store-denied-as-permission",
        "the generator's store faults never answer AccessDenied",
    ),
    (
        "throttle-not-retried",
        "the generator's store down lasts until heal, longer than any retry",
    ),
    (
        "lifecycle-merged",
        "the generator never puts a lifecycle configuration on the bucket",
    ),
    (
        "kept-classes-expire",
        "the generator never puts a lifecycle configuration on the bucket",
    ),
];

/// For each mutant (or only `only`), runs seeds from `first_seed` until one diverges, at most
/// `limit` seeds.
pub async fn hunt(
    tier: Tier<'_>,
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
        if let Some((_, why)) = OUT_OF_REACH.iter().find(|(id, _)| *id == m.id()) {
            lines.push(HuntLine {
                mutant: m,
                found: None,
                setup_error: None,
                tried: 0,
                out_of_reach: Some(why),
            });
            continue;
        }
        let mut line = HuntLine {
            mutant: m,
            found: None,
            setup_error: None,
            tried: 0,
            out_of_reach: None,
        };
        for seed in shard.seeds(first_seed, limit) {
            line.tried += 1;
            match run_sequence(tier, seed, DEFAULT_STEPS, Some(m), None).await {
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

/// A failure the way a person needs it: seed, shrunk operations, the trace tail, expected
/// beside actual, and the commands that replay it.
pub fn describe(
    f: &ScopedFailure,
    mutant: Option<ScopedMutant>,
    saved: Option<&Path>,
    tier: &str,
) -> String {
    let mut s = String::new();
    let against = mutant
        .map(|m| format!("mutant {}", m.id()))
        .unwrap_or_else(|| "reference".into());
    let _ = writeln!(s, "FAIL  seed {} against the {against}", f.seed);
    match &f.error {
        SequenceError::Diverged(d) => {
            let _ = writeln!(
                s,
                "  operations ({} of the seed's {}, shrunk):",
                f.ops.len(),
                f.original_len
            );
            for (i, op) in f.ops.iter().enumerate() {
                let _ = writeln!(s, "    {i:>3}  {op}");
            }
            let tail = d.ops.len().saturating_sub(12);
            let _ = writeln!(s, "  trace tail:");
            for line in &d.ops[tail..] {
                let _ = writeln!(s, "    {line}");
            }
            let _ = writeln!(s, "  diverged at operation {}, the last one:", d.step);
            let _ = writeln!(s, "    expected {}", d.expected);
            let _ = writeln!(s, "    actual   {}", d.actual);
        }
        SequenceError::Setup(e) => {
            let _ = writeln!(s, "  could not set up: {e}");
        }
    }
    match saved {
        Some(p) => {
            let _ = writeln!(s, "  saved:  {}", p.display());
            let _ = writeln!(s, "  replay: tidemark replay {}", p.display());
        }
        None => {
            let _ = writeln!(s, "  replay: {}", replay_command(f.seed, mutant, tier));
        }
    }
    s
}

/// The hunt's report lines and its `N passed, M failed`.
pub fn hunt_report(lines: &[HuntLine], limit: u64, tier: &str) -> String {
    let mut s = String::new();
    let width = lines.iter().map(|l| l.mutant.id().len()).max().unwrap_or(0);
    for l in lines {
        let id = l.mutant.id();
        if let Some(why) = l.out_of_reach {
            let _ = writeln!(s, "SKIPPED    {id:<width$}  {why}");
            continue;
        }
        match (&l.found, &l.setup_error) {
            (Some((seed, n)), _) => {
                let _ = writeln!(
                    s,
                    "FOUND      {id:<width$}  after {n} seed(s) (seed {seed}); replay: {}",
                    replay_command(*seed, Some(l.mutant), tier)
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
    let skipped = lines.iter().filter(|l| l.out_of_reach.is_some()).count();
    let failed = lines.len() - found - skipped;
    if skipped == 0 {
        let _ = writeln!(s, "{found} passed, {failed} failed");
    } else {
        let _ = writeln!(s, "{found} passed, {failed} failed, {skipped} skipped");
    }
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
        let pg = if args.tier == "memory" && !args.differential {
            println!("scoped explore: metadata in memory (the simulation tier), S3 in memory over HTTP");
            None
        } else {
            let (pg, source, ready) = crate::profiles::scoped::postgres().await?;
            println!("scoped explore: PostgreSQL from {source} (ready in {ready:.2?})");
            Some(pg)
        };
        let tier = match &pg {
            Some(pg) if args.tier != "memory" => Tier::Postgres(pg),
            _ => Tier::Memory,
        };
        if args.differential {
            let pg = pg.as_deref().expect("the differential check has PostgreSQL");
            return compare_runs([Tier::Memory, Tier::Postgres(pg)], args, mutant).await;
        }
        if args.hunt {
            let start = Instant::now();
            let lines = hunt(tier, args.first_seed, args.seeds, args.shard, mutant).await;
            let seeds: u64 = lines.iter().map(|l| l.tried).sum();
            let elapsed = start.elapsed();
            let report = hunt_report(&lines, args.seeds, tier.name());
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
            return Ok(lines
                .iter()
                .all(|l| l.found.is_some() || l.out_of_reach.is_some()));
        }
        if args.check_determinism {
            return compare_runs([tier, tier], args, mutant).await;
        }
        let seeds = args.shard.seeds(args.first_seed, args.seeds);
        let n = args.shard.seeds(args.first_seed, args.seeds).count() as u64;
        let bar = crate::explore::cli::progress(n, "scoped");
        let run = explore_seeds(
            tier,
            seeds,
            mutant,
            args.max_shrink_iters,
            args.jobs.get(),
            &|| bar.inc(1),
        )
        .await;
        bar.finish_and_clear();
        for f in &run.failures {
            let saved = match (&f.error, &args.save_dir) {
                (SequenceError::Diverged(d), Some(dir)) => {
                    let fixture = ScopedFixture::new(f.seed, mutant, tier, f.ops.clone(), d);
                    Some(
                        fixture
                            .save(dir)
                            .map_err(|e| format!("saving a fixture in {}: {e}", dir.display()))?,
                    )
                }
                _ => None,
            };
            print!("{}", describe(f, mutant, saved.as_deref(), tier.name()));
        }
        let n = run.passed + run.failures.len();
        let secs = run.elapsed.as_secs_f64().max(1e-9);
        println!(
            "{n} seeds in {:.2?} ({:.1} seeds/s), {} steps each; the model's sweeps removed {} files",
            run.elapsed,
            n as f64 / secs,
            DEFAULT_STEPS,
            run.swept_files
        );
        println!(
            "simulated {:.0} days ({:.0} simulated seconds per wall second)",
            run.simulated_ms as f64 / 86_400_000.0,
            run.simulated_ms as f64 / 1000.0 / secs
        );
        println!("{} passed, {} failed", run.passed, run.failures.len());
        Ok(run.failures.is_empty())
    })
}

/// Two runs of each seed, on `tiers[0]` and `tiers[1]`, compared by trace hash (of the whole run,
/// or of its divergence). The same tier twice is the determinism check; the in-memory store
/// beside PostgreSQL is the differential check, the reason the in-memory store is trusted.
async fn compare_runs(
    tiers: [Tier<'_>; 2],
    args: &ScopedExploreArgs,
    mutant: Option<ScopedMutant>,
) -> Result<bool, String> {
    use futures::StreamExt;
    let start = Instant::now();
    let (mut same, mut n) = (0u64, 0u64);
    // Seeds side by side (see `explore_seeds`); each seed's two runs one after the other.
    let runs: Vec<(u64, Result<Vec<String>, String>)> =
        futures::stream::iter(args.shard.seeds(args.first_seed, args.seeds))
            .map(|seed| async move {
                let mut hashes = Vec::new();
                for tier in tiers {
                    hashes.push(
                        match run_sequence(tier, seed, DEFAULT_STEPS, mutant, None).await {
                            Ok(r) => r.trace_hash(),
                            Err(SequenceError::Diverged(d)) => divergence_hash(&d),
                            Err(SequenceError::Setup(e)) => {
                                return (seed, Err(format!("seed {seed}: {e}")))
                            }
                        },
                    );
                }
                (seed, Ok(hashes))
            })
            .buffered(args.jobs.get())
            .collect()
            .await;
    for (seed, hashes) in runs {
        let hashes = hashes?;
        n += 1;
        if hashes[0] == hashes[1] {
            same += 1;
        } else {
            println!(
                "DIFFERENT  seed {seed}: {} on {}, {} on {}; replay: {}",
                hashes[0],
                tiers[0].name(),
                hashes[1],
                tiers[1].name(),
                replay_command(seed, mutant, tiers[1].name())
            );
        }
    }
    let what = if tiers[0].name() == tiers[1].name() {
        "run twice"
    } else {
        "run on both tiers"
    };
    println!(
        "{n} seeds {what} in {:.2?}: {same} of {n} give byte-identical traces",
        start.elapsed()
    );
    println!("{same} passed, {} failed", n - same);
    Ok(same == n)
}

/// `tidemark replay` of a scoped fixture: prints what happened and whether it recurred.
pub fn replay_fixture(path: &Path) -> Result<crate::explore::cli::ReplayOutcome, String> {
    let f = ScopedFixture::load(path)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))?;
    let r = rt.block_on(async {
        if f.setting.tier == "memory" {
            fixture::replay(Tier::Memory, &f).await
        } else {
            let (pg, _, _) = crate::profiles::scoped::postgres().await?;
            fixture::replay(Tier::Postgres(&pg), &f).await
        }
    })?;
    println!("fixture:   {}", path.display());
    println!(
        "against:   {}",
        f.mutant
            .as_deref()
            .map(|m| format!("scoped mutant {m}"))
            .unwrap_or_else(|| "the scoped reference".into())
    );
    println!("operations (seed {}):", f.seed);
    for op in &f.ops {
        println!("  {op}");
    }
    match &r.divergence {
        Some(d) => println!("diverged:  {d}"),
        None => println!("diverged:  no (the run passes)"),
    }
    println!(
        "trace:     {} ({})",
        r.trace_hash.as_deref().unwrap_or("-"),
        if r.reproduced {
            "identical to the saved run"
        } else {
            "DIFFERS from the saved run"
        }
    );
    if f.mutant.is_some() {
        println!(
            "reference: {}",
            if r.reference_passes {
                "passes the same operations"
            } else {
                "FAILS the same operations"
            }
        );
    }
    let outcome = crate::explore::cli::ReplayOutcome::of(r.divergence.is_some(), r.reproduced);
    println!("{}", outcome.verdict_line());
    Ok(outcome)
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
            let run = explore_seeds(Tier::Postgres(&pg), 0..3, None, 0, 2, &|| {}).await;
            assert!(
                run.failures.is_empty(),
                "{}",
                run.failures
                    .iter()
                    .map(|f| describe(f, None, None, "postgres"))
                    .collect::<String>()
            );
            assert_eq!(run.passed, 3);
            let lines = hunt(
                Tier::Postgres(&pg),
                0,
                24,
                Shard::ALL,
                Some(ScopedMutant::AgeOnlyExpiry),
            )
            .await;
            assert_eq!(lines.len(), 1);
            assert!(
                lines[0].found.is_some(),
                "{}",
                hunt_report(&lines, 24, "postgres")
            );
        });
    }
}

//! `tidemark explore --profile rows`: seeded operation sequences ([`super::explore_ops`]) against
//! the rows reference on PostgreSQL, checked at every step by the executable model of SPEC part
//! SR ([`super::explore_run`]). One PostgreSQL for the run; each seed in flight has a database of
//! its own, reused from seed to seed.
//!
//! A failing seed is shrunk by deleting chunks of its operations (the engine's proptest value
//! tree, `explore/shrink.rs`), printed with its trace tail, and saved under
//! `fixtures/explore/rows/` ([`super::fixture`]), where `cargo test --test rows_fixtures`
//! replays it for ever. `--hunt` runs every mutant until a seed fails under it;
//! `--check-determinism` runs every seed twice and compares trace hashes.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use proptest::strategy::ValueTree;
use tidemark_reference::rows::RowsMutant;

use super::explore_ops::{generate, ExploreOp, DEFAULT_STEPS};
use super::explore_run::{run_ops, run_ops_at, Databases, Divergence, RunError, RunOk, Tier};
use super::explore_state::Detail;
use super::fixture::{self, mutant_arg, new_fixture};
use crate::explore::shrink::OpsTree;
use crate::explore::Shard;

/// What `tidemark explore --profile rows` was asked for.
#[derive(Clone, Debug)]
pub struct RowsExploreArgs {
    pub seeds: u64,
    pub first_seed: u64,
    pub shard: Shard,
    pub mutant: Option<String>,
    pub hunt: bool,
    pub check_determinism: bool,
    /// Where failures are saved; `None`: not saved.
    pub save_dir: Option<PathBuf>,
    pub max_shrink_iters: u32,
    /// `postgres` (the reference on PostgreSQL) or `memory` (its in-memory backend).
    pub tier: String,
    /// Run each seed on both tiers (the state read as counts on both) and compare trace hashes.
    pub differential: bool,
    pub jobs: std::num::NonZeroUsize,
}

/// The command that runs one seed again on the tier it ran on (`postgres`, the default, is
/// left out).
pub fn replay_command(seed: u64, mutant: Option<RowsMutant>, tier: &str) -> String {
    let mut s = format!("tidemark explore --profile rows --first-seed {seed} --seeds 1");
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
pub struct RowsFailure {
    pub seed: u64,
    pub batch: i64,
    pub error: RunError,
    /// The operations that fail: shrunk when the failure was a divergence.
    pub ops: Vec<ExploreOp>,
    pub original_len: usize,
}

/// Runs one seed's generated sequence.
pub async fn run_seed(
    tier: Tier<'_>,
    seed: u64,
    mutant: Option<RowsMutant>,
) -> (i64, Vec<ExploreOp>, Result<RunOk, RunError>) {
    run_seed_at(tier, tier.detail(), seed, mutant).await
}

/// [`run_seed`] with the state read at `detail`.
pub async fn run_seed_at(
    tier: Tier<'_>,
    detail: Detail,
    seed: u64,
    mutant: Option<RowsMutant>,
) -> (i64, Vec<ExploreOp>, Result<RunOk, RunError>) {
    let (batch, ops) = generate(seed, DEFAULT_STEPS);
    let r = run_ops_at(tier, detail, batch, &ops, mutant).await;
    (batch, ops, r)
}

/// Shrinks a failing sequence by deleting chunks of operations while it still diverges, at most
/// `max_iters` candidate runs, each on a fresh store.
pub async fn shrink(
    tier: Tier<'_>,
    batch: i64,
    ops: Vec<ExploreOp>,
    divergence: Divergence,
    mutant: Option<RowsMutant>,
    max_iters: u32,
) -> (Vec<ExploreOp>, Divergence) {
    let mut tree = OpsTree::of_values(ops.clone());
    let mut best = (ops, divergence);
    let mut more = tree.simplify();
    let mut iters = 0;
    while more && iters < max_iters {
        iters += 1;
        let candidate = tree.current();
        more = match run_ops(tier, batch, &candidate, mutant).await {
            Err(RunError::Diverged(d)) => {
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
#[derive(Clone, Debug, Default)]
pub struct RowsExplore {
    pub passed: usize,
    pub failures: Vec<RowsFailure>,
    pub ticks: u64,
    pub crashes: u64,
    pub removed: u64,
    pub simulated_ms: i64,
    pub elapsed: Duration,
}

/// Runs every seed against the reference or `mutant`, up to `jobs` at once (seeds share nothing
/// but the PostgreSQL server, so side by side changes no trace; results come back in seed
/// order); each divergence is then shrunk, one at a time.
pub async fn explore_seeds(
    tier: Tier<'_>,
    seeds: impl Iterator<Item = u64>,
    mutant: Option<RowsMutant>,
    max_shrink_iters: u32,
    jobs: usize,
    on_seed: &dyn Fn(),
) -> RowsExplore {
    let start = Instant::now();
    let mut out = RowsExplore::default();
    let mut runs = futures::stream::iter(seeds)
        .map(|seed| async move {
            let r = run_seed(tier, seed, mutant).await;
            on_seed();
            (seed, r)
        })
        .buffered(jobs.max(1));
    let mut failed = Vec::new();
    while let Some((seed, (batch, ops, result))) = runs.next().await {
        match result {
            Ok(r) => {
                out.passed += 1;
                out.ticks += r.ticks;
                out.crashes += r.crashes;
                out.removed += r.removed;
                out.simulated_ms += r.simulated_ms;
            }
            Err(error) => failed.push((seed, batch, ops, error)),
        }
    }
    drop(runs);
    for (seed, batch, ops, error) in failed {
        let original_len = ops.len();
        let (ops, error) = match error {
            RunError::Diverged(d) => {
                let (ops, d) = shrink(tier, batch, ops, d, mutant, max_shrink_iters).await;
                (ops, RunError::Diverged(d))
            }
            e => (ops, e),
        };
        out.failures.push(RowsFailure {
            seed,
            batch,
            error,
            ops,
            original_len,
        });
    }
    out.elapsed = start.elapsed();
    out
}

/// One mutant hunted by random search.
#[derive(Clone, Debug)]
pub struct HuntLine {
    pub mutant: RowsMutant,
    /// The seed that found it and how many seeds were run to get there.
    pub found: Option<(u64, u64)>,
    /// A seed that could not be set up (not a verdict) ends the line as a failure.
    pub setup_error: Option<String>,
    pub tried: u64,
}

/// For each mutant (or only `only`), runs seeds from `first_seed` until one diverges, at most
/// `limit` seeds; up to `jobs` mutants at once.
pub async fn hunt(
    tier: Tier<'_>,
    first_seed: u64,
    limit: u64,
    shard: Shard,
    only: Option<RowsMutant>,
    jobs: usize,
) -> Vec<HuntLine> {
    futures::stream::iter(
        RowsMutant::ALL
            .into_iter()
            .filter(|m| only.is_none_or(|o| o == *m)),
    )
    .map(|m| async move {
        let mut line = HuntLine {
            mutant: m,
            found: None,
            setup_error: None,
            tried: 0,
        };
        for seed in shard.seeds(first_seed, limit) {
            line.tried += 1;
            match run_seed(tier, seed, Some(m)).await.2 {
                Ok(_) => {}
                Err(RunError::Diverged(_)) => {
                    line.found = Some((seed, line.tried));
                    break;
                }
                Err(RunError::Setup(e)) => {
                    line.setup_error = Some(format!("seed {seed}: {e}"));
                    break;
                }
            }
        }
        line
    })
    .buffered(jobs.max(1))
    .collect()
    .await
}

/// The hunt's report lines and its `N passed, M failed`.
pub fn hunt_report(lines: &[HuntLine], limit: u64, tier: &str) -> String {
    let mut s = String::new();
    let width = lines.iter().map(|l| l.mutant.id().len()).max().unwrap_or(0);
    for l in lines {
        let id = l.mutant.id();
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
    let _ = writeln!(s, "{found} passed, {} failed", lines.len() - found);
    s
}

/// A failure the way a person needs it: seed, shrunk operations, the trace tail, expected
/// beside actual, and the command that replays it.
pub fn describe(
    f: &RowsFailure,
    mutant: Option<RowsMutant>,
    saved: Option<&Path>,
    tier: &str,
) -> String {
    let mut s = String::new();
    let against = mutant
        .map(|m| format!("mutant {}", m.id()))
        .unwrap_or_else(|| "reference".into());
    let _ = writeln!(
        s,
        "FAIL  seed {} against the rows {against} (reaps in batches of {})",
        f.seed, f.batch
    );
    match &f.error {
        RunError::Diverged(d) => {
            let _ = writeln!(
                s,
                "  operations ({} of the seed's {}, shrunk):",
                f.ops.len(),
                f.original_len
            );
            for (i, op) in f.ops.iter().enumerate() {
                let _ = writeln!(s, "    {i:>3}  {op}");
            }
            let _ = writeln!(s, "  trace tail:");
            for line in d.trace.tail(12) {
                let _ = writeln!(s, "    {line}");
            }
            let _ = writeln!(s, "  diverged at operation {} ({}):", d.step, d.op);
            let _ = writeln!(s, "    expected {}", d.expected);
            let _ = writeln!(s, "    actual   {}", d.actual);
        }
        RunError::Setup(e) => {
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

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))
}

/// The command: explore (or hunt, or check determinism, or compare the tiers), print, and say
/// whether all passed.
pub fn command(args: &RowsExploreArgs) -> Result<bool, String> {
    let mutant = mutant_arg(args.mutant.as_deref())?;
    if !super::runner::TIERS.contains(&args.tier.as_str()) {
        return Err(format!(
            "unknown rows tier {:?}; expected {}",
            args.tier,
            super::runner::TIERS.join(" or ")
        ));
    }
    let rt = runtime()?;
    rt.block_on(async {
        if args.tier == "memory" && !args.differential {
            println!("rows explore: the reference's in-memory backend, no PostgreSQL");
            return explore_on(Tier::Memory, args, mutant).await;
        }
        let ready = Instant::now();
        let pg = super::postgres().await?;
        println!("rows explore: PostgreSQL ready in {:.2?}", ready.elapsed());
        let dbs = Databases::new(&pg);
        let result = if args.differential {
            compare_runs(
                [
                    (Tier::Memory, Detail::Counts),
                    (Tier::Postgres(&dbs), Detail::Counts),
                ],
                args,
                mutant,
            )
            .await
        } else {
            explore_on(Tier::Postgres(&dbs), args, mutant).await
        };
        let closed = dbs.close().await;
        let ok = result?;
        closed?;
        Ok(ok)
    })
}

async fn explore_on(
    tier: Tier<'_>,
    args: &RowsExploreArgs,
    mutant: Option<RowsMutant>,
) -> Result<bool, String> {
    if args.hunt {
        let start = Instant::now();
        let lines = hunt(
            tier,
            args.first_seed,
            args.seeds,
            args.shard,
            mutant,
            args.jobs.get(),
        )
        .await;
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
        return Ok(lines.iter().all(|l| l.found.is_some()));
    }
    if args.check_determinism {
        let at = (tier, tier.detail());
        return compare_runs([at, at], args, mutant).await;
    }
    let n = args.shard.seeds(args.first_seed, args.seeds).count() as u64;
    let bar = crate::explore::cli::progress(n, "rows");
    let run = explore_seeds(
        tier,
        args.shard.seeds(args.first_seed, args.seeds),
        mutant,
        args.max_shrink_iters,
        args.jobs.get(),
        &|| bar.inc(1),
    )
    .await;
    bar.finish_and_clear();
    for f in &run.failures {
        let saved = match (&f.error, &args.save_dir) {
            (RunError::Diverged(d), Some(dir)) => {
                let fixture = new_fixture(f.seed, mutant, tier.name(), f.batch, f.ops.clone(), d);
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
        "{n} seeds in {:.2?} ({:.1} seeds/s), {DEFAULT_STEPS} operations each; {} ticks ({} crashed and restarted) removed {} rows",
        run.elapsed,
        n as f64 / secs,
        run.ticks,
        run.crashes,
        run.removed
    );
    println!(
        "simulated {:.0} days ({:.0} simulated seconds per wall second)",
        run.simulated_ms as f64 / 86_400_000.0,
        run.simulated_ms as f64 / 1000.0 / secs
    );
    println!("{} passed, {} failed", run.passed, run.failures.len());
    Ok(run.failures.is_empty())
}

/// The hash a run is known by: its trace, or its divergence's.
fn run_hash(r: &Result<RunOk, RunError>) -> Result<String, String> {
    match r {
        Ok(ok) => Ok(ok.trace.hash()),
        Err(RunError::Diverged(d)) => Ok(d.hash()),
        Err(RunError::Setup(e)) => Err(e.clone()),
    }
}

/// Two runs of every seed, each on a tier with its state read at a detail, compared by trace
/// hash. The same tier twice is the determinism check; the in-memory backend beside PostgreSQL
/// (both read as counts, the detail they share) is the differential check.
async fn compare_runs(
    runs: [(Tier<'_>, Detail); 2],
    args: &RowsExploreArgs,
    mutant: Option<RowsMutant>,
) -> Result<bool, String> {
    let start = Instant::now();
    let results: Vec<(u64, Result<[String; 2], String>)> =
        futures::stream::iter(args.shard.seeds(args.first_seed, args.seeds))
            .map(|seed| async move {
                let [(t0, d0), (t1, d1)] = runs;
                let a = run_hash(&run_seed_at(t0, d0, seed, mutant).await.2);
                let b = run_hash(&run_seed_at(t1, d1, seed, mutant).await.2);
                let r = match (a, b) {
                    (Ok(a), Ok(b)) => Ok([a, b]),
                    (Err(e), _) | (_, Err(e)) => Err(format!("seed {seed}: {e}")),
                };
                (seed, r)
            })
            .buffered(args.jobs.get())
            .collect()
            .await;
    let (mut same, mut n) = (0u64, 0u64);
    let names = [runs[0].0.name(), runs[1].0.name()];
    for (seed, hashes) in results {
        let [a, b] = hashes?;
        n += 1;
        if a == b {
            same += 1;
        } else {
            println!(
                "DIFFERENT  seed {seed}: {a} on {}, {b} on {}; replay: {}",
                names[0],
                names[1],
                replay_command(seed, mutant, names[1])
            );
        }
    }
    let what = if names[0] == names[1] {
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

/// `tidemark replay` of a rows fixture: prints what happened and whether it recurred.
pub fn replay_fixture(path: &Path) -> Result<crate::explore::cli::ReplayOutcome, String> {
    let f = fixture::load(path)?;
    let rt = runtime()?;
    let r = rt.block_on(async {
        if f.setting.tier == "memory" {
            return fixture::replay(Tier::Memory, &f).await;
        }
        let pg = super::postgres().await?;
        let dbs = Databases::new(&pg);
        let r = fixture::replay(Tier::Postgres(&dbs), &f).await;
        dbs.close().await?;
        r
    })?;
    println!("fixture:   {}", path.display());
    println!(
        "against:   {}",
        f.mutant
            .as_deref()
            .map(|m| format!("rows mutant {m}"))
            .unwrap_or_else(|| "the rows reference".into())
    );
    println!(
        "operations (seed {}, on {}, reaps in batches of {}):",
        f.seed, f.setting.tier, f.setting.batch
    );
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

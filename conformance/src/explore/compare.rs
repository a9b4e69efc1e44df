//! The determinism and differential checks: two runs of every seed compared by trace hash (the
//! same explorer twice, or two settings of one profile). Apart from `engine.rs` because it is
//! its own command, built on the engine's one run of a seed.

use std::time::Instant;

use futures::StreamExt;

use super::cli::progress;
use super::engine::{run_seed, throughput, Explorer, Outcome, Seeds};

/// The hash a run is known by: its trace, or its divergence's.
fn outcome_hash<E: Explorer + ?Sized>(
    e: &E,
    o: &Outcome<E::Passed, E::Divergence>,
) -> Result<String, String> {
    match o {
        Outcome::Passed(p) => Ok(e.pass_hash(p)),
        Outcome::Diverged(d) => Ok(e.divergence_hash(d)),
        Outcome::Setup(why) => Err(why.clone()),
    }
}

/// Two runs of every seed, on `a` then `b`, compared by trace hash. The same explorer twice is
/// the determinism check; two settings of one profile (the scoped tiers) the differential
/// check. A set-up error ends the command: it is no verdict on either run.
pub async fn compare<E: Explorer + ?Sized>(
    a: &E,
    b: &E,
    seeds: &Seeds,
    mutant: Option<E::Mutant>,
) -> Result<bool, String> {
    let start = Instant::now();
    let twice = a.setting() == b.setting();
    let bar = progress(
        seeds.count(),
        if twice { "determinism" } else { "differential" },
    );
    let bar = &bar;
    let results: Vec<(u64, Result<[String; 2], String>)> = futures::stream::iter(seeds.iter())
        .map(|seed| async move {
            let x = outcome_hash(a, &run_seed(a, seed, mutant).await.1);
            let y = outcome_hash(b, &run_seed(b, seed, mutant).await.1);
            bar.inc(1);
            let r = match (x, y) {
                (Ok(x), Ok(y)) => Ok([x, y]),
                (Err(why), _) | (_, Err(why)) => Err(format!("seed {seed}: {why}")),
            };
            (seed, r)
        })
        .buffered(a.jobs(seeds.jobs).min(b.jobs(seeds.jobs)).max(1))
        .collect()
        .await;
    bar.finish_and_clear();
    let (mut same, mut n) = (0u64, 0u64);
    for (seed, hashes) in results {
        let [x, y] = hashes?;
        n += 1;
        if x == y {
            same += 1;
        } else {
            println!(
                "DIFFERENT  seed {seed}: {x} on {}, {y} on {}; replay: {}",
                a.setting(),
                b.setting(),
                b.replay_command(seed, mutant)
            );
        }
    }
    println!("{}", throughput(n, 2 * n, start.elapsed(), None));
    let how = if twice {
        format!("each run twice on {}", a.setting())
    } else {
        format!("on {} and on {}", a.setting(), b.setting())
    };
    println!("{same} of {n} give byte-identical traces ({how})");
    println!("{same} passed, {} failed", n - same);
    Ok(same == n)
}

//! The seed loop every profile's turmoil world shares: each seed played (twice with
//! `--check-determinism`, the traces compared line by line), a failure printed with its trace's
//! tail and the command that replays it, then the throughput and the counts.

use tidemark_sim::trace::Trace;

/// One seed of a world, whatever the profile.
pub struct WorldRun {
    pub trace: Trace,
    /// The first safety or liveness violation, if any.
    pub failure: Option<String>,
    pub simulated_ms: i64,
    /// Turmoil steps taken.
    pub steps: u64,
}

/// How a profile's world is named and replayed in the loop's output.
pub struct WorldSeeds<'a> {
    /// `world` or `scoped world`.
    pub label: &'a str,
    /// The command that replays one seed, before `--first-seed`: `tidemark world --profile scoped`.
    pub replay: &'a str,
    /// The mutant under test, for the replay command.
    pub mutant: Option<&'a str>,
    pub check_determinism: bool,
}

/// Plays `first_seed..first_seed + seeds` through `run`; true if every seed passed.
pub fn play(
    seeds: u64,
    first_seed: u64,
    how: &WorldSeeds<'_>,
    run: impl Fn(u64) -> WorldRun,
) -> bool {
    let started = std::time::Instant::now();
    let label = how.label;
    let mut failed = 0u64;
    let mut identical = 0u64;
    let mut simulated_ms = 0i64;
    let mut steps = 0u64;
    for seed in first_seed..first_seed + seeds {
        let r = run(seed);
        simulated_ms += r.simulated_ms;
        steps += r.steps;
        if how.check_determinism {
            let again = run(seed);
            if again.trace.lines() == r.trace.lines() {
                identical += 1;
            } else {
                failed += 1;
                println!(
                    "NONDETERMINISTIC  {label} seed {seed}: {} vs {}",
                    r.trace.hash(),
                    again.trace.hash()
                );
                continue;
            }
        }
        if let Some(f) = &r.failure {
            failed += 1;
            let m = how
                .mutant
                .map(|m| format!(" --mutant {m}"))
                .unwrap_or_default();
            println!("FAIL  {label} seed {seed}: {f}");
            for l in r.trace.tail(8) {
                println!("    {l}");
            }
            println!("  replay: {} --first-seed {seed} --seeds 1{m}", how.replay);
        }
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let runs = if how.check_determinism { 2.0 } else { 1.0 };
    println!(
        "{seeds} {label} seeds in {secs:.2}s ({:.1} seeds/s): {steps} turmoil steps, {:.0} simulated seconds per wall second",
        seeds as f64 * runs / secs,
        simulated_ms as f64 / 1000.0 / secs
    );
    if how.check_determinism {
        println!("{identical}/{seeds} {label} seeds replay byte-identically");
    }
    println!("{} passed, {} failed", seeds - failed, failed);
    failed == 0
}

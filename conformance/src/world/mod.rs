//! What every profile's turmoil world shares: `tidemark world`'s arguments read once
//! ([`WorldProfile::command`]), the seed loop (each seed played, twice with
//! `--check-determinism` and the traces compared line by line, a failure printed with its
//! trace's tail and the command that replays it, then the throughput and the counts), and the
//! hunt (per mutant, seeds until the first failure; mutants out of the world's reach skipped
//! with their reason); the world clock ([`clock`]) and the JSON-lines wire between guests and
//! hosts ([`net`]). A profile's folder keeps only its hosts, guests, faults and oracle.

pub mod clock;
pub mod net;

use crate::variants::Declared;
use std::ops::ControlFlow;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tidemark_sim::clock::EPOCH;

use tidemark_sim::trace::Trace;

/// Locks what a world's hosts, guests and controller share, poisoned or not: a panic in one
/// host (a mutant's bug) must not hide the log and the model from the verdict.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A turmoil world as every profile's begins: at the epoch, turmoil's randomness from
/// `rng_seed` (a stream of the world's seed), ten minutes of network time at the most, each
/// message taking 1 ms to `max_latency`.
pub fn builder(rng_seed: u64, max_latency: Duration) -> turmoil::Builder {
    let mut b = turmoil::Builder::new();
    b.epoch(EPOCH.to_system_time())
        .rng_seed(rng_seed)
        .simulation_duration(Duration::from_secs(600))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(max_latency);
    b
}

/// Steps a world once, counting the step: `Break(None)` once every client is done,
/// `Break(Some(why))` when turmoil fails the world (a host's error, its duration run out).
pub fn step(sim: &mut turmoil::Sim<'_>, steps: &mut u64) -> ControlFlow<Option<String>> {
    *steps += 1;
    match sim.step() {
        Ok(true) => ControlFlow::Break(None),
        Ok(false) => ControlFlow::Continue(()),
        Err(e) => ControlFlow::Break(Some(format!("the world failed: {e}"))),
    }
}

/// One seed of a world, whatever the profile.
pub struct WorldRun {
    pub trace: Trace,
    /// The first safety or liveness violation, if any.
    pub failure: Option<String>,
    pub simulated_ms: i64,
    /// Turmoil steps taken.
    pub steps: u64,
    /// The oracle's model at the first violation, where the oracle holds one
    /// (`crate::html::bounded_lines`); empty otherwise, and when the seed passed.
    pub model_state: Vec<String>,
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
    /// `--html FILE`: the seeds' page, each failure's whole trace as a timeline.
    pub html: Option<&'a std::path::Path>,
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
    let mut failures: Vec<crate::html::FailureView> = Vec::new();
    let m = how
        .mutant
        .map(|m| format!(" --mutant {m}"))
        .unwrap_or_default();
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
            println!("FAIL  {label} seed {seed}: {f}");
            for l in r.trace.tail(8) {
                println!("    {l}");
            }
            let replay = format!("{} --first-seed {seed} --seeds 1{m}", how.replay);
            println!("  replay: {replay}");
            if how.html.is_some() {
                let mut view = failure_view(label, seed, f, &r.trace, replay);
                view.model_state = r.model_state.clone();
                failures.push(view);
            }
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
    if let Some(path) = how.html {
        let page = crate::html::Page {
            title: format!("tidemark {label}"),
            command: format!(
                "{} --first-seed {first_seed} --seeds {seeds}{m}",
                how.replay
            ),
            implementation: how
                .mutant
                .map(|m| format!("the mutant {m}"))
                .unwrap_or_else(|| "the reference".into()),
            harness_version: env!("CARGO_PKG_VERSION").into(),
            seeds: Some(format!(
                "{first_seed}..{} ({seeds} seeds)",
                first_seed.saturating_add(seeds)
            )),
            profiles: vec![crate::html::ProfileSummary {
                name: label.to_string(),
                passed: (seeds - failed) as usize,
                failed: failed as usize,
                ..Default::default()
            }],
            failures,
            notes: Vec::new(),
            coverage: None,
        };
        let spec = crate::default_spec_path();
        if let Err(e) = crate::html::write(path, &page, &crate::html::rule_texts(&spec)) {
            eprintln!("tidemark: {e}");
            return false;
        }
    }
    failed == 0
}

/// A world's failure as the page shows it: the oracle's message (a world's oracle words its
/// verdict as one sentence, so it stands as the actual outcome), the SPEC rules the message
/// cites, the whole trace.
fn failure_view(
    label: &str,
    seed: u64,
    failure: &str,
    trace: &Trace,
    replay: String,
) -> crate::html::FailureView {
    let rules: Vec<String> = failure
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| tidemark_sim::spec_rules::is_rule_id(w))
        .fold(Vec::new(), |mut v, w| {
            if !v.iter().any(|x: &String| x == w) {
                v.push(w.to_string());
            }
            v
        });
    crate::html::FailureView {
        title: format!("{label} seed {seed}"),
        profile: label.to_string(),
        what: failure.lines().next().unwrap_or("").to_string(),
        at: format!("seed {seed}, after {} trace events", trace.lines().len()),
        expected: "no safety or liveness violation (the world's oracle)".into(),
        actual: failure.to_string(),
        rules,
        replay,
        trace: trace.lines().to_vec(),
        // The first violation the oracle logged; a world plays on past it to its end.
        diverged_line: trace.lines().iter().position(|l| l.contains("VIOLATION")),
        ..Default::default()
    }
}

/// A profile's world as the engine drives it: how it is named, its mutants, which of them it
/// cannot reach, and the one function that plays a seed.
pub struct WorldProfile<M: 'static> {
    /// `world`, `scoped world`, `rows world`: the loop's and the hunt's lines.
    pub label: &'static str,
    /// The command that replays one seed, before `--first-seed`: `tidemark world --profile scoped`.
    pub replay: &'static str,
    /// The profile's name in errors: `unknown scoped mutant "x"`.
    pub profile: &'static str,
    pub mutants: &'static [M],
    pub id: fn(M) -> &'static str,
    pub from_id: fn(&str) -> Option<M>,
    /// Mutants the world's workload cannot reach by construction, each with the reason; the
    /// hunt reports them as skipped rather than searching in vain.
    pub out_of_reach: &'static [(&'static str, &'static str)],
    /// Plays one seed against the reference (or a mutant of it) taking the variants given, the
    /// world's oracle following them.
    pub run: fn(u64, Option<M>, &Declared) -> WorldRun,
}

impl<M: Copy + 'static> WorldProfile<M> {
    /// `tidemark world --profile <p>`: the seeds played, or with `--hunt` every mutant hunted.
    pub fn command(&self, request: &crate::profiles::WorldRequest) -> Result<bool, String> {
        let name = self.profile;
        if request.hunt {
            if request.mutant.is_some() {
                return Err(format!(
                    "--hunt tries every {name} mutant; it takes no --mutant"
                ));
            }
            if request.html.is_some() {
                return Err("--html reports the seeds played; --hunt prints its own lines".into());
            }
            return Ok(self.hunt(request.seeds, request.first_seed, &request.variants));
        }
        let mutant = match request.mutant.as_deref() {
            None => None,
            Some(id) => Some((self.from_id)(id).ok_or(format!("unknown {name} mutant {id:?}"))?),
        };
        let run = self.run;
        let replay: String = std::iter::once(self.replay.to_string())
            .chain(
                request
                    .variants
                    .non_defaults()
                    .iter()
                    .map(|v| format!("--variant {v}")),
            )
            .collect::<Vec<_>>()
            .join(" ");
        Ok(play(
            request.seeds,
            request.first_seed,
            &WorldSeeds {
                label: self.label,
                replay: &replay,
                mutant: mutant.map(self.id),
                check_determinism: request.check_determinism,
                html: request.html.as_deref(),
            },
            |seed| run(seed, mutant, &request.variants),
        ))
    }

    /// `--hunt`: for each mutant in reach, seeds from `first_seed` until one fails (at most
    /// `seeds`). Prints SKIPPED / FOUND / NOT FOUND per mutant, the runs' throughput and
    /// `N passed, M failed, K skipped` (found, not found, out of reach). Returns whether every
    /// mutant in reach was found.
    pub fn hunt(&self, seeds: u64, first_seed: u64, variants: &Declared) -> bool {
        let started = std::time::Instant::now();
        let (mut found, mut skipped, mut runs) = (0, 0, 0u64);
        for &m in self.mutants {
            let id = (self.id)(m);
            if let Some((_, why)) = self.out_of_reach.iter().find(|(o, _)| *o == id) {
                skipped += 1;
                println!("SKIPPED    {id:<30} {why}");
                continue;
            }
            let mut hit = None;
            for s in first_seed..first_seed + seeds {
                runs += 1;
                if let Some(f) = (self.run)(s, Some(m), variants).failure {
                    hit = Some((s, f));
                    break;
                }
            }
            match hit {
                Some((s, f)) => {
                    found += 1;
                    println!(
                        "FOUND      {id:<30} at seed {s} ({} seeds): {}",
                        s - first_seed + 1,
                        f.chars().take(160).collect::<String>()
                    );
                }
                None => println!("NOT FOUND  {id:<30} in {seeds} seeds"),
            }
        }
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        println!(
            "{runs} {} runs in {secs:.2}s ({:.1} seeds/s)",
            self.label,
            runs as f64 / secs
        );
        let missed = self.mutants.len() - found - skipped;
        println!("{found} passed, {missed} failed, {skipped} skipped");
        missed == 0
    }
}

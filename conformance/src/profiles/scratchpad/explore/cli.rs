//! `tidemark explore|replay --profile scratchpad`: printing, saving, measuring.

use super::fixture::{self, Fixture};
use super::{explore_seed, generate, run_seed, Found};
use crate::explore::cli::{progress, ReplayOutcome};
use crate::explore::Shard;
use crate::profiles::scratchpad::ReferenceScratchpad;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tidemark_reference::scratchpad::ScratchpadMutant;

#[derive(Clone, Debug)]
pub struct ExploreArgs {
    pub seeds: u64,
    pub first_seed: u64,
    pub shard: Shard,
    pub mutant: Option<String>,
    pub check_determinism: bool,
    pub hunt: bool,
    pub hunt_trials: u64,
    pub save_dir: Option<PathBuf>,
    pub max_shrink_iters: u32,
    /// Explore a program speaking the protocol instead of the reference.
    pub implementation: Option<String>,
}

fn mutant_arg(id: &Option<String>) -> Result<Option<ScratchpadMutant>, String> {
    match id {
        None => Ok(None),
        Some(id) => ScratchpadMutant::from_id(id).map(Some).ok_or_else(|| {
            format!(
                "unknown mutant {id:?}; expected one of {}",
                ScratchpadMutant::ALL.map(|m| m.id()).join(", ")
            )
        }),
    }
}

/// Prints a found failure the way a person needs it: seed, shrunk operations, trace tail, and
/// the exact command that replays it.
pub fn describe(found: &Found, mutant: Option<ScratchpadMutant>, saved: Option<&Path>) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let against = mutant
        .map(|m| format!("mutant {}", m.id()))
        .unwrap_or_else(|| "reference".into());
    let _ = writeln!(
        s,
        "FAIL  seed {} against the {against}{}",
        found.seed,
        if found.unmounted {
            " (unmounted root)"
        } else {
            ""
        }
    );
    if let Some(d) = &found.run.divergence {
        let _ = writeln!(s, "  diverged at: {}", d.op);
        let _ = writeln!(s, "  expected:    {}", d.expected);
        let _ = writeln!(s, "  actual:      {}", d.actual);
    }
    let _ = writeln!(
        s,
        "  shrunk from {} to {} operations:",
        found.original_len,
        found.ops.len()
    );
    for op in &found.ops {
        let _ = writeln!(s, "    {op}");
    }
    let _ = writeln!(s, "  trace tail:");
    for l in found.run.trace.tail(10) {
        let _ = writeln!(s, "    {l}");
    }
    match saved {
        Some(p) => {
            let _ = writeln!(s, "  replay: tidemark replay {}", p.display());
        }
        None => {
            let m = mutant
                .map(|m| format!(" --mutant {}", m.id()))
                .unwrap_or_default();
            let _ = writeln!(s, "  replay: tidemark replay --seed {}{m}", found.seed);
        }
    }
    s
}

pub fn explore(args: &ExploreArgs) -> Result<bool, String> {
    let mutant = mutant_arg(&args.mutant)?;
    if args.hunt {
        return hunt(args);
    }
    let reference = ReferenceScratchpad { mutant };
    let program;
    let factory: &dyn crate::profiles::scratchpad::driver::DriverFactory = match &args
        .implementation
    {
        None => &reference,
        Some(_) if mutant.is_some() => {
            return Err("--mutant switches the reference; it cannot apply to --impl".into())
        }
        Some(cmd) => {
            use crate::process::{launch_dir, AdapterCommand, ProcessFactory, ProcessOptions};
            let command = AdapterCommand::parse(cmd, &launch_dir()).map_err(|e| e.to_string())?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            program = rt
                .block_on(ProcessFactory::probe(command, ProcessOptions::default()))
                .map_err(|e| e.to_string())?;
            &program
        }
    };
    let seeds: Vec<u64> = args.shard.seeds(args.first_seed, args.seeds).collect();
    let bar = progress(
        seeds.len() as u64,
        if args.check_determinism {
            "determinism"
        } else {
            "explore"
        },
    );
    let started = Instant::now();
    let mut failures = 0u64;
    let mut identical = 0u64;
    let mut simulated_ms: i64 = 0;
    for &seed in &seeds {
        if args.check_determinism {
            let a = run_seed(seed, factory);
            let b = run_seed(seed, factory);
            simulated_ms += a.simulated_ms;
            if a.trace.hash() == b.trace.hash() && a.trace.lines() == b.trace.lines() {
                identical += 1;
            } else {
                failures += 1;
                bar.suspend(|| {
                    println!(
                        "NONDETERMINISTIC  seed {seed}: {} vs {}",
                        a.trace.hash(),
                        b.trace.hash()
                    )
                });
            }
        } else if let Some(found) = explore_seed(seed, factory, args.max_shrink_iters) {
            failures += 1;
            // Fixtures replay against the reference; a program's failures are printed, not saved.
            let saved = match (&args.save_dir, &args.implementation) {
                (Some(dir), None) => Some(save(&found, mutant, dir)?),
                _ => None,
            };
            let mut text = describe(&found, mutant, saved.as_deref());
            if let Some(cmd) = &args.implementation {
                text = text
                    .replacen("against the reference", &format!("against {cmd}"), 1)
                    .replace(
                        &format!("tidemark replay --seed {seed}"),
                        &format!(
                            "tidemark explore --impl {} --first-seed {seed} --seeds 1 --max-shrink-iters {}",
                            shlex::try_quote(cmd).map_err(|e| e.to_string())?,
                            args.max_shrink_iters
                        ),
                    );
            }
            bar.suspend(|| print!("{text}"));
        } else {
            // Passing seeds are not rerun for their simulated span; count the generated advances.
            simulated_ms += generate(seed)
                .1
                .iter()
                .map(|o| {
                    if let super::ops::SimOp::Advance { ms } = o {
                        *ms
                    } else {
                        0
                    }
                })
                .sum::<i64>();
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let runs = if args.check_determinism {
        2 * seeds.len()
    } else {
        seeds.len()
    } as f64;
    println!(
        "{} seeds in {:.2}s: {:.1} seed runs/s, {:.0} simulated seconds per wall second",
        seeds.len(),
        secs,
        runs / secs,
        simulated_ms as f64 / 1000.0 / secs
    );
    if args.check_determinism {
        println!("{identical}/{} seeds replay byte-identically", seeds.len());
    }
    println!(
        "{} passed, {} failed",
        seeds.len() as u64 - failures,
        failures
    );
    Ok(failures == 0)
}

fn save(found: &Found, mutant: Option<ScratchpadMutant>, dir: &Path) -> Result<PathBuf, String> {
    let f = Fixture {
        version: crate::explore::saved::FORMAT_VERSION,
        profile: super::fixture::PROFILE.into(),
        seed: found.seed,
        generator: super::ops::GENERATOR_VERSION,
        mutant: mutant.map(|m| m.id().to_string()),
        setting: super::fixture::ScratchpadSetting {
            unmounted: found.unmounted,
        },
        ops: found.ops.clone(),
        divergence: found
            .run
            .divergence
            .as_ref()
            .map(|d| format!("{}: expected {}, got {}", d.op, d.expected, d.actual))
            .unwrap_or_default(),
        trace_hash: found.run.trace.hash(),
    };
    f.save(dir)
        .map_err(|e| format!("saving the fixture under {}: {e}", dir.display()))
}

/// Mutant hunting: for each mutant, several independent searches from different seed offsets;
/// each counts the seeds until the first failure. Reports the median.
fn hunt(args: &ExploreArgs) -> Result<bool, String> {
    let mutants: Vec<ScratchpadMutant> = match mutant_arg(&args.mutant)? {
        Some(m) => vec![m],
        None => ScratchpadMutant::ALL.to_vec(),
    };
    let mut all_found = true;
    let mut found_count = 0;
    println!(
        "{:<28} {:>6}  seeds to find, per search (limit {})",
        "mutant", "median", args.seeds
    );
    for m in &mutants {
        let factory = ReferenceScratchpad { mutant: Some(*m) };
        let mut counts = Vec::new();
        for trial in 0..args.hunt_trials {
            let start = args.first_seed + trial * 1_000_000;
            let n = (0..args.seeds)
                .find(|i| run_seed(start + i, &factory).divergence.is_some())
                .map(|i| i + 1);
            counts.push(n);
        }
        let mut finite: Vec<u64> = counts.iter().flatten().copied().collect();
        finite.sort();
        let median = if finite.len() * 2 > counts.len() {
            Some(finite[(counts.len() - 1) / 2])
        } else {
            None
        };
        let shown: Vec<String> = counts
            .iter()
            .map(|c| c.map(|n| n.to_string()).unwrap_or_else(|| "-".into()))
            .collect();
        match median {
            Some(md) => {
                found_count += 1;
                println!("{:<28} {:>6}  {}", m.id(), md, shown.join(" "));
            }
            None => {
                all_found = false;
                println!("{:<28} {:>6}  {}  NOT FOUND", m.id(), "-", shown.join(" "));
            }
        }
    }
    println!(
        "{} passed, {} failed",
        found_count,
        mutants.len() - found_count
    );
    Ok(all_found)
}

pub fn replay(
    fixture_path: Option<&Path>,
    seed: Option<u64>,
    mutant: &Option<String>,
) -> Result<ReplayOutcome, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    if let Some(path) = fixture_path {
        let f = Fixture::load(path)?;
        let r = rt.block_on(fixture::replay(&f))?;
        println!("fixture:   {}", path.display());
        println!(
            "against:   {}",
            f.mutant
                .as_deref()
                .map(|m| format!("mutant {m}"))
                .unwrap_or_else(|| "reference".into())
        );
        println!("operations:");
        for op in &f.ops {
            println!("  {op}");
        }
        match &r.divergence {
            Some(d) => println!("diverged:  {d}"),
            None => println!("diverged:  no (the run passes)"),
        }
        let same = r.trace_hash == f.trace_hash;
        println!(
            "trace:     {} ({})",
            r.trace_hash,
            if same {
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
        let outcome = ReplayOutcome::of(r.divergence.is_some(), same);
        println!("{}", outcome.verdict_line());
        return Ok(outcome);
    }
    let seed = seed.ok_or("replay needs a fixture path or --seed")?;
    let m = mutant_arg(mutant)?;
    let factory = ReferenceScratchpad { mutant: m };
    let run = run_seed(seed, &factory);
    for l in run.trace.lines() {
        println!("{l}");
    }
    println!("trace hash: {}", run.trace.hash());
    match &run.divergence {
        Some(d) => {
            println!(
                "diverged at {}: expected {}, got {}",
                d.op, d.expected, d.actual
            );
            Ok(ReplayOutcome::Reproduced)
        }
        None => {
            println!("no divergence");
            Ok(ReplayOutcome::NoLongerFails)
        }
    }
}

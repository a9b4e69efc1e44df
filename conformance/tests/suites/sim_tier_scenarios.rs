//! The simulation tier's stores earn their trust here. Every scoped scenario
//! (`scenarios/scoped/*.tdm`) runs on the in-memory S3 and the in-memory metadata store
//! (`sim::<file stem>`, no PostgreSQL needed), and again on the real tier (the disk S3
//! store and PostgreSQL) with every step's outcome compared (`differential::sim::<file stem>`): the
//! scenario's own expectations pass on both and the recorded outcome lists are equal. Each
//! scoped mutant (`mutant::sim::<id>`) must be killed on the simulation tier by the same
//! scenario that kills it on the real tier. Each SPEC.md variant's other choice is played twice
//! on the simulation tier (`variant::scoped::<name>_<choice>::…`): the reference taking and
//! declaring it passes every scenario, and taking it while declaring the default fails one, so
//! the guarded steps tell the two choices apart.

use std::sync::Arc;

use libtest_mimic::{Failed, Trial};

use super::shared::{failure_line, scoped_scripts, Shared};
use tidemark_conformance::profiles::scoped::runner;
use tidemark_conformance::profiles::scoped::runner::{Backend, Recorded};
use tidemark_conformance::profiles::scoped::script::Script;
use tidemark_conformance::profiles::scoped::variants;
use tidemark_conformance::profiles::scoped::ScopedOutcome;
use tidemark_conformance::variants::Declared;
use tidemark_reference::scoped::ScopedMutant;
use tidemark_sim::real_tier::PgProvider;

fn described(s: &Script, what: String) -> Failed {
    Failed::from(format!("{}: {}\n{what}", s.file.display(), s.name))
}

/// An outcome as the tiers must agree on it. A refusal's message is free text (only its reason
/// is contract), and a transport failure's carries the transport's own detail (an HTTP date,
/// a driver's wording), so those two keep their reason only; every other refusal keeps its
/// message too.
fn comparable(o: &(usize, ScopedOutcome)) -> (usize, ScopedOutcome) {
    match &o.1 {
        ScopedOutcome::Refused { reason, .. }
            if reason == "storage_unavailable" || reason == "database_unavailable" =>
        {
            (
                o.0,
                ScopedOutcome::Refused {
                    reason: reason.clone(),
                    message: String::new(),
                },
            )
        }
        _ => o.clone(),
    }
}

/// The first step at which two recorded runs differ, or `None` if they are the same.
fn first_difference(sim: &Recorded, real: &Recorded) -> Option<String> {
    let n = sim.outcomes.len().max(real.outcomes.len());
    for i in 0..n {
        let a = sim.outcomes.get(i).map(comparable);
        let b = real.outcomes.get(i).map(comparable);
        if a != b {
            return Some(format!(
                "step {} (line {}):\n  sim:  {a:?}\n  real: {b:?}",
                i + 1,
                a.as_ref().or(b.as_ref()).map(|(l, _)| *l).unwrap_or(0)
            ));
        }
    }
    None
}

/// The scenarios the reference fails on the simulation tier while taking `takes` and declaring
/// `declares` (a scenario about another choice than the declared one is skipped, not failed),
/// as `file:line: step (expected, got)`.
fn failures(
    rt: &tokio::runtime::Runtime,
    scripts: &[Script],
    takes: &Declared,
    declares: &Declared,
) -> Vec<String> {
    scripts
        .iter()
        .filter(|s| s.skip_reason(declares).is_none())
        .filter_map(|s| {
            rt.block_on(runner::run_recorded_declaring(
                None,
                s,
                None,
                takes,
                declares,
                Backend::Sim,
            ))
            .result
            .err()
            .map(|f| failure_line(&s.file, &f, ""))
        })
        .collect()
}

/// `variant::scoped::<name>_<choice>::…` for each non-default choice the reference can take.
fn variant_trials(rt: &Arc<tokio::runtime::Runtime>, scripts: &[Script]) -> Vec<Trial> {
    let (rt, all) = (rt.clone(), scripts.to_vec());
    super::shared::variant_trials(
        "scoped",
        variants::each_alternative(),
        move |takes, declares| Ok(failures(&rt, &all, takes, declares)),
    )
}
/// Scoped mutants only the real tier can kill, and why: the simulation tier's store differs
/// from S3 there by design.
const REAL_TIER_ONLY: &[(&str, &str)] = &[(
    "no-written-at-stamp",
    "the in-memory store stamps LastModified from the simulated clock, so an object without the written-at stamp is aged by the same clock and the age-only rule cannot tell",
)];

pub fn trials(shared: &Shared) -> Result<Vec<Trial>, String> {
    let scripts = scoped_scripts()?;
    let rt = shared.rt.clone();
    let get_pg = shared.postgres();

    let mut trials = variant_trials(&rt, &scripts);
    for s in scripts.clone() {
        let rt = rt.clone();
        let name = s.test_name().replacen("scoped::", "sim::", 1);
        trials.push(Trial::test(name, move || {
            rt.block_on(runner::run_recorded(None, &s, None, Backend::Sim))
                .result
                .map_err(|f| described(&s, f.to_string()))
        }));
    }
    for s in scripts.clone() {
        let rt = rt.clone();
        let get_pg = get_pg.clone();
        let name = s.test_name().replacen("scoped::", "differential::sim::", 1);
        trials.push(Trial::test(name, move || {
            let pg = get_pg()?;
            let sim = rt.block_on(runner::run_recorded(None, &s, None, Backend::Sim));
            let real = rt.block_on(runner::run_recorded(Some(pg), &s, None, Backend::Disk));
            if let Err(f) = &real.result {
                return Err(described(&s, format!("fails on the real tier: {f}")));
            }
            if let Err(f) = &sim.result {
                return Err(described(&s, format!("fails on the simulation tier: {f}")));
            }
            match first_difference(&sim, &real) {
                None => Ok(()),
                Some(d) => Err(described(&s, format!("the tiers differ at {d}"))),
            }
        }));
    }
    for m in ScopedMutant::ALL {
        let killers: Vec<Script> = scripts
            .iter()
            .filter(|s| s.kills.iter().any(|k| k == m.id()))
            .cloned()
            .collect();
        let rt = rt.clone();
        let get_pg = get_pg.clone();
        trials.push(Trial::test(
            format!("mutant::sim::{}", m.id().replace('-', "_")),
            move || {
                let first_killer = |backend: Backend, pg: Option<Arc<PgProvider>>| {
                    killers
                        .iter()
                        .find(|s| {
                            rt.block_on(runner::run_recorded(pg.clone(), s, Some(m), backend))
                                .result
                                .is_err()
                        })
                        .map(Script::test_name)
                };
                if REAL_TIER_ONLY.iter().any(|(id, _)| *id == m.id()) {
                    let real = first_killer(Backend::Disk, Some(get_pg()?));
                    return match real {
                        Some(_) => Ok(()),
                        None => Err(Failed::from(format!(
                            "mutant {} survives the real tier, the only one that can kill it",
                            m.id()
                        ))),
                    };
                }
                let sim = first_killer(Backend::Sim, None);
                let Some(sim) = sim else {
                    return Err(Failed::from(format!(
                        "mutant {} ({}) survives the simulation tier",
                        m.id(),
                        m.description()
                    )));
                };
                let real = first_killer(Backend::Disk, Some(get_pg()?));
                if real.as_deref() != Some(sim.as_str()) {
                    return Err(Failed::from(format!(
                        "mutant {}: killed first by {sim} on the simulation tier, by {real:?} on the real tier",
                        m.id()
                    )));
                }
                Ok(())
            },
        ));
    }
    Ok(trials)
}

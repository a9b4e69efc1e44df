//! `tidemark explore|replay --profile scratchpad`: the options and replay;
//! the loop, the hunt and the determinism check are the engine's (`crate::explore::engine`).

use super::fixture::{self, Fixture};
use super::{run_seed, ScratchpadExplorer};
use crate::explore::cli::ReplayOutcome;
use crate::profiles::scratchpad::ReferenceScratchpad;
use crate::profiles::ExploreRequest;
use std::path::Path;
use tidemark_reference::scratchpad::ScratchpadMutant;

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

/// `tidemark explore --profile scratchpad`, against the reference or a program (`--impl`).
pub fn explore(request: &ExploreRequest) -> Result<bool, String> {
    let mutant = mutant_arg(&request.mutant)?;
    if request.implementation.is_some() && (mutant.is_some() || request.hunt) {
        return Err(
            "--mutant and --hunt switch the reference's mutants; they cannot apply to --impl"
                .into(),
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let reference = ReferenceScratchpad {
        mutant: None,
        variants: request.variants.clone(),
    };
    let program;
    let factory: &dyn crate::profiles::scratchpad::contract::DriverFactory = match &request
        .implementation
    {
        None => &reference,
        Some(cmd) => {
            use crate::process::{launch_dir, AdapterCommand, ProcessFactory, ProcessOptions};
            let command = AdapterCommand::parse(cmd, &launch_dir()).map_err(|e| e.to_string())?;
            program = rt
                .block_on(ProcessFactory::probe(
                    command,
                    ProcessOptions {
                        claims_check: crate::profiles::check_claims,
                        ..ProcessOptions::default()
                    },
                ))
                .map_err(|e| e.to_string())?;
            &program
        }
    };
    let known = request.known(super::fixture::PROFILE);
    for k in &known.entries {
        if !super::signature::is_known(&k.signature) {
            return Err(format!(
                "{}:{}: {:?} is not a difference the scratchpad's exploration reports; copy the signature `tidemark explore` prints",
                known.file, k.line, k.signature
            ));
        }
    }
    let explorer = ScratchpadExplorer {
        factory,
        implementation: request.implementation.as_deref(),
        max_shrink_iters: request.max_shrink_iters,
        known,
    };
    rt.block_on(request.run_on(&explorer, mutant, fixture::default_dir))
}

pub fn replay(
    fixture_path: Option<&Path>,
    seed: Option<u64>,
    mutant: &Option<String>,
    html: Option<&Path>,
) -> Result<ReplayOutcome, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    if let Some(path) = fixture_path {
        let f = Fixture::load(path)?;
        let r = rt.block_on(fixture::replay(&f))?;
        return Ok(crate::explore::cli::print_replay(
            &crate::explore::cli::ReplayReport {
                fixture: path,
                against: f
                    .mutant
                    .as_deref()
                    .map(|m| format!("mutant {m}"))
                    .unwrap_or_else(|| "reference".into()),
                operations_heading: "operations:".into(),
                ops: f.ops.iter().map(|op| op.to_string()).collect(),
                divergence: r.divergence.as_ref().map(|d| d.to_string()),
                trace_hash: Some(r.trace_hash.clone()),
                identical: r.trace_hash == f.trace_hash,
                reference_passes: f.mutant.as_ref().map(|_| r.reference_passes),
                shown: r.shown.clone(),
                html,
            },
        ));
    }
    let seed = seed.ok_or("replay needs a fixture path or --seed")?;
    if html.is_some() {
        return Err("--html reports a saved failure's replay; for a seed, tidemark explore --first-seed N --seeds 1 --html FILE".into());
    }
    let m = mutant_arg(mutant)?;
    let factory = ReferenceScratchpad {
        mutant: m,
        ..Default::default()
    };
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

//! The scratchpad profile (SPEC part SP): a filesystem scratchpad's sessions and their retention.
//! Everything the profile owns lives in this folder, in the parts every profile has
//! (ARCHITECTURE.md, "The profiles"): `script/` its vocabulary, `contract.rs` the requests and
//! outcomes and the [`contract::Driver`] reaching an implementation, `reference.rs` the
//! reference in process, `process.rs` a program over the protocol, `runner.rs` one scenario
//! played, `model.rs` the executable model, `explore/` exploration and its saved failures,
//! `mutants.rs`, `world.rs`, `gate.rs`, `bench.rs` and `variants.rs`; `names.rs` learns what an
//! implementation calls its directories (SP-1.2).
//!
//! This module is the command line's entry point to them, and the suite: every scenario loaded,
//! selected and run against a driver factory.

pub mod bench;
pub mod contract;
pub mod explore;
pub mod gate;
pub mod model;
pub mod mutants;
pub mod names;
pub mod process;
pub mod reference;
pub mod runner;
pub mod script;
pub mod variants;
pub mod world;

pub use reference::ReferenceScratchpad;

use std::path::Path;

use async_trait::async_trait;

use crate::profiles::scratchpad::contract::DriverFactory;
use crate::profiles::scratchpad::runner::{run_scenario, ScenarioResult};
use crate::profiles::scratchpad::script::{load_dir, Profile, Scenario};
use crate::scenario::LoadErrors;

/// Loads every scenario under `scenarios_dir`, checking rule citations against `spec_path`.
pub fn load(scenarios_dir: &Path, spec_path: &Path) -> Result<Vec<Scenario>, LoadErrors> {
    let rules = crate::profiles::spec_rules(spec_path)?;
    load_dir(scenarios_dir, &rules)
}

/// The scenarios of the given profiles (all when `profiles` is empty).
pub fn select<'a>(scenarios: &'a [Scenario], profiles: &[Profile]) -> Vec<&'a Scenario> {
    scenarios
        .iter()
        .filter(|s| profiles.is_empty() || profiles.contains(&s.profile))
        .collect()
}

/// Runs each scenario in order; scenarios of a profile the factory does not support are skipped
/// by the caller's selection, not here.
pub async fn run_all(scenarios: &[&Scenario], factory: &dyn DriverFactory) -> Vec<ScenarioResult> {
    let mut out = Vec::with_capacity(scenarios.len());
    for s in scenarios {
        out.push(run_scenario(s, factory).await);
    }
    out
}

/// The scratchpad profile (SPEC part SP) behind the profile interface.
pub struct ScratchpadProfile;

#[async_trait(?Send)]
impl super::Profile for ScratchpadProfile {
    fn name(&self) -> &'static str {
        "scratchpad"
    }

    fn vocabulary(&self) -> &'static crate::scenario::header::HeaderVocabulary {
        &crate::profiles::scratchpad::script::parse::VOCABULARY
    }

    fn load_errors(
        &self,
        scenarios: &std::path::Path,
        spec: &std::path::Path,
    ) -> Vec<crate::scenario::ScenarioFileError> {
        crate::profiles::scratchpad::load(scenarios, spec)
            .err()
            .map(|e| e.0)
            .unwrap_or_default()
    }

    async fn run(
        &self,
        request: &super::RunRequest<'_>,
        program: Option<&crate::process::ProcessFactory>,
    ) -> Result<Vec<crate::report::CaseReport>, String> {
        let all = crate::profiles::scratchpad::load(request.scenarios, request.spec)
            .map_err(|e| e.to_string())?;
        let selection = crate::profiles::scratchpad::gate::Selection {
            profiles: vec![Profile::Scratchpad],
            only: request.only.to_vec(),
        };
        let selected = selection.apply(&all)?;
        let replay = request.replay_prefix.to_string();
        let report = match program {
            Some(factory) => {
                crate::profiles::scratchpad::gate::check_concurrently(
                    &selected,
                    factory,
                    replay,
                    request.jobs,
                )
                .await
            }
            None => {
                crate::profiles::scratchpad::gate::check_concurrently(
                    &selected,
                    &ReferenceScratchpad {
                        mutant: None,
                        variants: request.variants.clone(),
                    },
                    replay,
                    request.jobs,
                )
                .await
            }
        };
        Ok(report.cases)
    }

    async fn mutants(
        &self,
        request: &super::MutantsRequest<'_>,
    ) -> Result<super::MutantRows, String> {
        let all = crate::profiles::scratchpad::load(request.scenarios, request.spec)
            .map_err(|e| e.to_string())?;
        let selected = crate::profiles::scratchpad::select(&all, &[Profile::Scratchpad]);
        let results = crate::profiles::scratchpad::mutants::run_scratchpad_mutants(
            &selected,
            request.only,
            !request.all_killers,
        )
        .await;
        Ok(super::MutantRows {
            rows: crate::profiles::scratchpad::mutants::rows(&results),
            killed: results.iter().filter(|r| r.killed()).count(),
            survived: results.iter().filter(|r| !r.killed()).count(),
        })
    }

    fn explore(&self, request: &super::ExploreRequest) -> Result<bool, String> {
        if request.tier.is_some() {
            return Err(super::unsupported(self.name(), "--tier"));
        }
        if request.differential {
            return Err(super::unsupported(self.name(), "--differential"));
        }
        crate::profiles::scratchpad::explore::cli::explore(request)
    }

    fn owns_fixture(&self, path: &std::path::Path) -> bool {
        crate::profiles::scratchpad::explore::fixture::Fixture::load(path).is_ok()
    }

    fn replay(
        &self,
        fixture: Option<&std::path::Path>,
        seed: Option<u64>,
        mutant: Option<&str>,
        html: Option<&std::path::Path>,
    ) -> Result<crate::explore::cli::ReplayOutcome, String> {
        crate::profiles::scratchpad::explore::cli::replay(
            fixture,
            seed,
            &mutant.map(str::to_string),
            html,
        )
    }

    fn world(&self, request: &super::WorldRequest) -> Result<bool, String> {
        world::WORLD.command(request)
    }

    fn bench(&self, request: &super::BenchRequest) -> Result<String, String> {
        Ok(bench::run(request.seeds))
    }
}

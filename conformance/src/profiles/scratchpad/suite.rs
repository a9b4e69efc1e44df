//! Loading a suite (scenarios + SPEC.md rule ids) and running it against a driver factory.

use crate::profiles::scratchpad::driver::DriverFactory;
use crate::profiles::scratchpad::runner::{run_scenario, ScenarioResult};
use crate::profiles::scratchpad::scenario::{load_dir, Profile, Scenario};
use crate::scenario::LoadErrors;
use std::path::Path;

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

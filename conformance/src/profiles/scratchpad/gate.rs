//! Gating an implementation: run every scenario its profiles select, skip (never fail) the
//! scenarios of profiles it does not claim, and report.
//!
//! Two entry points over the same selection:
//!
//! - [`check`], which `tidemark run` calls for the reference or an `--impl` program and which
//!   returns a [`RunReport`];
//! - [`run_as_tests`], the one call a Rust implementation makes from its own
//!   `tests/conformance.rs` (with `harness = false`), as Go's `fstest.TestFS` is one call: each
//!   scenario becomes its own test, so `cargo test eviction` filters and CI lists each by name.
//!
//! ```no_run
//! // tests/conformance.rs of a Rust implementation
//! # struct MyScratchpadFactory;
//! # impl tidemark_conformance::profiles::scratchpad::contract::DriverFactory for MyScratchpadFactory {
//! #     fn name(&self) -> String { unimplemented!() }
//! #     fn supports(&self, _: tidemark_conformance::profiles::scratchpad::script::Profile) -> bool { unimplemented!() }
//! #     fn create(&self, _: tidemark_conformance::profiles::scratchpad::script::Profile, _: &tidemark_conformance::profiles::scratchpad::contract::Environment)
//! #         -> Result<Box<dyn tidemark_conformance::profiles::scratchpad::contract::Driver>, tidemark_conformance::driver::DriverError> { unimplemented!() }
//! # }
//! fn main() {
//!     tidemark_conformance::profiles::scratchpad::gate::run_as_tests(MyScratchpadFactory);
//! }
//! ```

use super::runner::ScenarioResult;
use crate::profiles::scratchpad::contract::DriverFactory;
use crate::profiles::scratchpad::runner::run_scenario;
use crate::profiles::scratchpad::script::{Profile, Scenario};
use crate::report::{display_path, CaseReport, RunReport, Verdict};
use crate::scenario::LoadErrors;
use crate::{default_scenarios_dir, default_spec_path};
use futures::StreamExt;
use libtest_mimic::{Arguments, Failed, Trial};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;

/// Which scenarios a run covers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only these profiles; empty means every profile.
    pub profiles: Vec<Profile>,
    /// Only the scenarios with these exact test names (`scratchpad::own_path_wins`); empty means
    /// all. A name that matches no scenario is an error, so a mistyped replay command cannot
    /// pass by running nothing.
    pub only: Vec<String>,
}

impl Selection {
    pub fn apply<'a>(&self, scenarios: &'a [Scenario]) -> Result<Vec<&'a Scenario>, String> {
        for name in &self.only {
            if !scenarios.iter().any(|s| &s.test_name() == name) {
                return Err(format!(
                    "no scenario is named {name:?}; test names look like scratchpad::own_path_wins"
                ));
            }
        }
        Ok(super::select(scenarios, &self.profiles)
            .into_iter()
            .filter(|s| self.only.is_empty() || self.only.contains(&s.test_name()))
            .collect())
    }
}

/// Why a scenario does not run against `factory`, if it does not.
pub fn skip_reason(factory: &dyn DriverFactory, scenario: &Scenario) -> Option<String> {
    if !factory.supports(scenario.profile) {
        return Some(format!(
            "the implementation does not claim the {} profile",
            scenario.profile.name()
        ));
    }
    let claimed = factory.capabilities();
    scenario
        .needs
        .iter()
        .find(|need| !claimed.contains(need))
        .map(|need| {
            format!(
                "line {} needs the capability {need}, which the implementation does not claim",
                scenario.needs_line
            )
        })
        .or_else(|| scenario.guards.skip_reason(&factory.variants()))
}

/// Runs the selected scenarios in suite order against `factory`, one after another; a scenario
/// that fails (however badly the implementation behaved) does not stop the next.
pub async fn check(
    scenarios: &[&Scenario],
    factory: &dyn DriverFactory,
    replay_prefix: String,
) -> RunReport {
    check_concurrently(scenarios, factory, replay_prefix, NonZeroUsize::MIN).await
}

/// As [`check`], with up to `jobs` scenarios in flight at once. Scenarios share nothing (each
/// has its own directories and, through the protocol, its own process), so only the waits
/// overlap: a program that is slow to start costs its start-up once per `jobs` scenarios. The
/// report keeps suite order, so it does not depend on `jobs`.
pub async fn check_concurrently(
    scenarios: &[&Scenario],
    factory: &dyn DriverFactory,
    replay_prefix: String,
    jobs: NonZeroUsize,
) -> RunReport {
    let cases = futures::stream::iter(scenarios)
        .map(|scenario| async move {
            match skip_reason(factory, scenario) {
                Some(reason) => CaseReport::skipped(scenario, reason),
                None => {
                    let result = run_scenario(scenario, factory).await;
                    // The reference in process never waits on anything, so without this the
                    // whole suite would be one poll and a SIGINT could not stop it until the end.
                    tokio::task::yield_now().await;
                    CaseReport::from_result(&result, scenario.profile.name())
                }
            }
        })
        .buffered(jobs.get())
        .collect()
        .await;
    RunReport {
        implementation: factory.name(),
        replay_prefix,
        profile_commands: Default::default(),
        cases,
        expectations: None,
    }
}

/// The suite as libtest-mimic trials for `factory`: one test per scenario, named by its test
/// name; a scenario of a profile the factory does not support is an ignored test.
#[derive(Clone)]
pub struct Gate {
    factory: Arc<dyn DriverFactory>,
    scenarios_dir: PathBuf,
    spec_path: PathBuf,
}

impl Gate {
    /// The suite shipped with this crate, against `factory`.
    pub fn new(factory: impl DriverFactory + 'static) -> Gate {
        Gate {
            factory: Arc::new(factory),
            scenarios_dir: default_scenarios_dir(),
            spec_path: default_spec_path(),
        }
    }

    /// Runs the scenarios under `dir` instead (e.g. a team's own scenarios in the same format).
    pub fn scenarios_dir(mut self, dir: impl Into<PathBuf>) -> Gate {
        self.scenarios_dir = dir.into();
        self
    }

    /// Checks rule citations against this SPEC.md instead.
    pub fn spec(mut self, path: impl Into<PathBuf>) -> Gate {
        self.spec_path = path.into();
        self
    }

    pub fn trials(&self) -> Result<Vec<Trial>, LoadErrors> {
        let scenarios = super::load(&self.scenarios_dir, &self.spec_path)?;
        Ok(scenarios.into_iter().map(|s| self.trial(s)).collect())
    }

    fn trial(&self, scenario: Scenario) -> Trial {
        let name = scenario.test_name();
        let ignored = skip_reason(&*self.factory, &scenario).is_some();
        let factory = self.factory.clone();
        Trial::test(name, move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Failed::from(format!("cannot build a tokio runtime: {e}")))?;
            let result = runtime.block_on(run_scenario(&scenario, &*factory));
            match result.failure {
                None => Ok(()),
                Some(f) => Err(Failed::from(format!(
                    "{}:{}: {}\n  expected: {}\n  actual:   {}\n  replay:   cargo test -- --exact {}\n  trace tail:\n    {}",
                    scenario.file.display(),
                    f.line,
                    f.step,
                    f.expected,
                    f.actual.replace('\n', "\n            "),
                    result.test_name,
                    result.trace.tail(8).join("\n    ")
                ))),
            }
        })
        .with_ignored_flag(ignored)
    }

    /// Parses the test binary's arguments, runs the trials and exits with libtest's status.
    pub fn run_as_tests(self) -> ! {
        let args = Arguments::from_args();
        match self.trials() {
            Ok(trials) => libtest_mimic::run(&args, trials).exit(),
            Err(e) => {
                eprintln!("the conformance suite does not load: {e}");
                std::process::exit(101)
            }
        }
    }
}

/// The one call: every scenario of the shipped suite, against `factory`, as its own test.
pub fn run_as_tests(factory: impl DriverFactory + 'static) -> ! {
    Gate::new(factory).run_as_tests()
}

/// A scratchpad scenario's case in the engine's reports.
impl CaseReport {
    pub fn from_result(result: &ScenarioResult, profile: &str) -> CaseReport {
        CaseReport {
            test_name: result.test_name.clone(),
            name: result.name.clone(),
            profile: profile.to_string(),
            file: display_path(&result.file),
            rules: result.rules.clone(),
            verdict: match &result.failure {
                None => Verdict::Passed,
                Some(f) => Verdict::Failed(f.clone()),
            },
            trace_tail: if result.passed() {
                vec![]
            } else {
                result.trace.tail(crate::report::TRACE_KEPT_LINES).to_vec()
            },
        }
    }

    pub fn skipped(scenario: &Scenario, reason: String) -> CaseReport {
        CaseReport {
            test_name: scenario.test_name(),
            name: scenario.name.clone(),
            profile: scenario.profile.name().to_string(),
            file: display_path(&scenario.file),
            rules: scenario.rules.clone(),
            verdict: Verdict::Skipped { reason },
            trace_tail: vec![],
        }
    }
}

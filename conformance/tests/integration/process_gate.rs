//! The one-call Rust gate: each scenario becomes its own libtest test, a broken implementation
//! fails the tests of the scenarios that catch it, and scenarios of a profile the implementation
//! does not claim are ignored, not failed.

use libtest_mimic::{Arguments, Conclusion};
use tidemark_conformance::driver::DriverError;
use tidemark_conformance::profiles::scratchpad::contract::{Driver, DriverFactory, Environment};
use tidemark_conformance::profiles::scratchpad::gate::Gate;
use tidemark_conformance::profiles::scratchpad::script::Profile;
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_reference::scratchpad::ScratchpadMutant;

/// One inner libtest run of the gate. Its output goes to a log file, not stdout: an inner
/// `test result: FAILED` in `cargo test`'s output could not be told from a real failure.
struct InnerRun {
    conclusion: Conclusion,
    trials: usize,
    log: String,
}

fn run(gate: Gate, filter: Option<&str>) -> InnerRun {
    let trials = gate.trials().expect("the suite loads");
    let count = trials.len();
    let log_dir = tempfile::tempdir().expect("a temporary directory");
    let log_path = log_dir.path().join("inner-libtest.log");
    let args = Arguments {
        test_threads: Some(2),
        quiet: true,
        filter: filter.map(str::to_string),
        logfile: Some(log_path.to_string_lossy().into_owned()),
        ..Arguments::default()
    };
    let conclusion = libtest_mimic::run(&args, trials);
    let log = std::fs::read_to_string(&log_path).expect("the inner run wrote its log");
    InnerRun {
        conclusion,
        trials: count,
        log,
    }
}

#[test]
fn the_reference_passes_every_scenario_as_its_own_test() {
    let inner = run(Gate::new(ReferenceScratchpad::default()), None);
    let c = &inner.conclusion;
    assert_eq!(
        (c.num_passed as usize, c.num_failed, c.num_ignored),
        (inner.trials, 0, 0),
        "{}",
        inner.log
    );
    assert!(inner.log.contains("test result: ok"), "{}", inner.log);
}

#[test]
fn a_broken_implementation_fails_the_tests_of_the_scenarios_that_catch_it() {
    let mutant = ReferenceScratchpad {
        mutant: Some(ScratchpadMutant::ALL[0]),
        ..Default::default()
    };
    let inner = run(Gate::new(mutant), None);
    assert!(
        inner.conclusion.num_failed > 0,
        "mutant {} is caught:\n{}",
        ScratchpadMutant::ALL[0].id(),
        inner.log
    );
    // What a CI log would show for the implementation's own `cargo test`: a failing libtest run
    // that names each scenario that caught it.
    assert!(inner.log.contains("test result: FAILED"), "{}", inner.log);
    let failed_lines = inner
        .log
        .lines()
        .filter(|l| l.starts_with("---- scratchpad::") && l.ends_with(" ----"))
        .count();
    assert_eq!(
        failed_lines as u64, inner.conclusion.num_failed,
        "{}",
        inner.log
    );
}

#[test]
fn a_test_filter_selects_scenarios_by_name_as_cargo_test_does() {
    let inner = run(Gate::new(ReferenceScratchpad::default()), Some("eviction"));
    assert!(
        inner.conclusion.num_passed >= 2,
        "the eviction scenarios ran"
    );
    assert!(inner.conclusion.num_filtered_out > 0, "the others did not");
}

/// An implementation of no profile this suite has.
struct ClaimsNothing;

impl DriverFactory for ClaimsNothing {
    fn name(&self) -> String {
        "claims nothing".into()
    }
    fn supports(&self, _: Profile) -> bool {
        false
    }
    fn create(&self, _: Profile, _: &Environment) -> Result<Box<dyn Driver>, DriverError> {
        unreachable!("an ignored scenario never creates a driver")
    }
}

#[test]
fn scenarios_of_a_profile_the_implementation_does_not_claim_are_ignored_tests() {
    let inner = run(Gate::new(ClaimsNothing), None);
    let c = &inner.conclusion;
    assert_eq!(
        (c.num_passed, c.num_failed, c.num_ignored as usize),
        (0, 0, inner.trials)
    );
}

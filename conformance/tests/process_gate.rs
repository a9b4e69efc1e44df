//! The one-call Rust gate: each scenario becomes its own libtest test, a broken implementation
//! fails the tests of the scenarios that catch it, and scenarios of a profile the implementation
//! does not claim are ignored, not failed.

use libtest_mimic::{Arguments, Conclusion};
use tidemark_conformance::driver::{Driver, DriverError, DriverFactory, Environment};
use tidemark_conformance::gate::Gate;
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::scenario::Profile;
use tidemark_reference::scratchpad::ScratchpadMutant;

fn run(gate: Gate, filter: Option<&str>) -> (Conclusion, usize) {
    let trials = gate.trials().expect("the suite loads");
    let count = trials.len();
    let args = Arguments {
        test_threads: Some(2),
        quiet: true,
        filter: filter.map(str::to_string),
        ..Arguments::default()
    };
    (libtest_mimic::run(&args, trials), count)
}

#[test]
fn the_reference_passes_every_scenario_as_its_own_test() {
    let (conclusion, count) = run(Gate::new(ReferenceScratchpad::default()), None);
    assert_eq!(
        (
            conclusion.num_passed as usize,
            conclusion.num_failed,
            conclusion.num_ignored
        ),
        (count, 0, 0)
    );
}

#[test]
fn a_broken_implementation_fails_the_tests_of_the_scenarios_that_catch_it() {
    let mutant = ReferenceScratchpad {
        mutant: Some(ScratchpadMutant::ALL[0]),
    };
    // Straight to stdout, as libtest-mimic prints, so the note sits beside the line it explains.
    let note = format!(
        "(expected next: an inner `test result: FAILED` for mutant {})\n",
        ScratchpadMutant::ALL[0].id()
    );
    std::io::Write::write_all(&mut std::io::stdout(), note.as_bytes()).unwrap();
    let (conclusion, _) = run(Gate::new(mutant), None);
    assert!(
        conclusion.num_failed > 0,
        "mutant {} is caught",
        ScratchpadMutant::ALL[0].id()
    );
}

#[test]
fn a_test_filter_selects_scenarios_by_name_as_cargo_test_does() {
    let (conclusion, _) = run(Gate::new(ReferenceScratchpad::default()), Some("eviction"));
    assert!(conclusion.num_passed >= 2, "the eviction scenarios ran");
    assert!(conclusion.num_filtered_out > 0, "the others did not");
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
    let (conclusion, count) = run(Gate::new(ClaimsNothing), None);
    assert_eq!(
        (
            conclusion.num_passed,
            conclusion.num_failed,
            conclusion.num_ignored as usize
        ),
        (0, 0, count)
    );
}

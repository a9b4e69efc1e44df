//! The turmoil world: the scratchpad as a networked host with its sweeper on a timer, three
//! concurrent clients, and the world's faults, checked by the oracle from the server's log.

use tidemark_conformance::profiles::scratchpad::world::run_world;
use tidemark_reference::scratchpad::ScratchpadMutant;

#[test]
fn the_reference_survives_ten_faulty_worlds() {
    for seed in 0..10 {
        let r = run_world(seed, None);
        assert!(
            r.failure.is_none(),
            "world seed {seed}: {:?}\n{}",
            r.failure,
            r.trace.tail(10).join("\n")
        );
        assert!(
            r.simulated_ms > 7 * 86_400_000,
            "a world spans more than a week of simulated time"
        );
    }
}

#[test]
fn a_world_seed_replays_to_a_byte_identical_trace() {
    for seed in [3, 17] {
        assert_eq!(
            run_world(seed, None).trace.lines(),
            run_world(seed, None).trace.lines(),
            "world seed {seed}"
        );
    }
}

#[test]
fn the_world_finds_a_sweeper_that_skips_its_startup_sweep() {
    let found = (0..20).any(|seed| {
        run_world(seed, Some(ScratchpadMutant::NoStartupSweep))
            .failure
            .is_some()
    });
    assert!(
        found,
        "no world seed in 20 caught the no-startup-sweep mutant"
    );
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn every_mutant_out_of_the_worlds_reach_is_a_real_one_killed_by_a_scenario() {
    use tidemark_reference::scratchpad::ScratchpadMutant;
    let suite = tidemark_conformance::profiles::scratchpad::load(
        &tidemark_conformance::default_scenarios_dir(),
        &tidemark_conformance::default_spec_path(),
    )
    .expect("the suite loads");
    let selected: Vec<_> = suite.iter().collect();
    for (id, why) in tidemark_conformance::profiles::scratchpad::world::OUT_OF_REACH {
        assert!(!why.is_empty());
        let mutant = ScratchpadMutant::ALL
            .into_iter()
            .find(|m| m.id() == *id)
            .unwrap_or_else(|| panic!("{id} is not a scratchpad mutant"));
        let factory = tidemark_conformance::profiles::scratchpad::ReferenceScratchpad {
            mutant: Some(mutant),
            ..Default::default()
        };
        let report = tokio::runtime::Runtime::new().unwrap().block_on(
            tidemark_conformance::profiles::scratchpad::gate::check(
                &selected,
                &factory,
                String::new(),
            ),
        );
        assert!(!report.passed(), "a scenario kills {id}");
    }
}

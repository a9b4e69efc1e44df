//! The turmoil world: the scratchpad as a networked host with its sweeper on a timer, three
//! concurrent clients, and the world's faults, checked by the oracle from the server's log.

use tidemark_conformance::world::run_world;
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

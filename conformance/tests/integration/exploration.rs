//! Exploration properties that must hold on every build: seeds replay byte-identically, the
//! reference survives a bounded random search, and random search finds a mutant unaided.

use tidemark_conformance::explore::Shard;
use tidemark_conformance::profiles::scratchpad::explore::{explore_seed, run_seed};
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_reference::scratchpad::ScratchpadMutant;

#[test]
fn every_seed_replays_to_a_byte_identical_trace() {
    let reference = ReferenceScratchpad::default();
    for seed in 0..20 {
        let a = run_seed(seed, &reference);
        let b = run_seed(seed, &reference);
        assert_eq!(
            a.trace.lines(),
            b.trace.lines(),
            "seed {seed} is not deterministic"
        );
        assert_eq!(a.trace.hash(), b.trace.hash());
    }
}

#[test]
fn the_reference_survives_a_bounded_random_search() {
    let reference = ReferenceScratchpad::default();
    for seed in Shard::ALL.seeds(1_000, 60) {
        if let Some(found) = explore_seed(seed, &reference, 2_000) {
            panic!("{}", found.describe(None));
        }
    }
}

#[test]
fn random_search_finds_the_directory_mtime_mutant_and_shrinks_it() {
    let mutant = ReferenceScratchpad {
        mutant: Some(ScratchpadMutant::DirMtimeCounted),
        ..Default::default()
    };
    let found = (0..50)
        .find_map(|seed| explore_seed(seed, &mutant, 2_000))
        .expect("found within 50 seeds");
    assert!(
        found.ops.len() <= 8,
        "shrunk to {} operations: {:?}",
        found.ops.len(),
        found.ops
    );
    assert!(
        found.run.divergence.is_some(),
        "the shrunk sequence still fails"
    );
}

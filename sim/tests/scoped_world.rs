//! The scoped turmoil world: the reference over the in-memory metadata store and the in-memory
//! S3 behind turmoil's network, concurrent clients, faults from the seed, then heal and a
//! liveness check; and the same seed replays byte-identically.

use tidemark_sim::scoped_world::run_scoped_world;

#[test]
fn after_faults_heal_and_one_sweep_nothing_expired_remains_and_every_obligation_is_recorded() {
    for seed in 0..4 {
        let r = run_scoped_world(seed, None);
        assert!(
            r.failure.is_none(),
            "seed {seed}: {}\n{}",
            r.failure.unwrap_or_default(),
            r.trace.tail(12).join("\n")
        );
        assert!(
            r.trace.lines().iter().any(|l| l.contains("=> Written")),
            "seed {seed}: no write landed, so the world proved nothing"
        );
    }
}

#[test]
fn a_scoped_world_seed_replays_to_the_same_trace_hash() {
    let a = run_scoped_world(11, None);
    let b = run_scoped_world(11, None);
    assert_eq!(a.trace.hash(), b.trace.hash());
    assert!(
        a.trace.lines().len() > 50,
        "{} lines",
        a.trace.lines().len()
    );
}

#[test]
fn the_liveness_check_catches_deletions_recorded_by_application_code_and_batches_marked_done_despite_errors(
) {
    use tidemark_reference::scoped::ScopedMutant;
    for m in [
        ScopedMutant::AppRecordedDeletions,
        ScopedMutant::PartialBatchMarkedDone,
        ScopedMutant::DeletionBeforeRecord,
    ] {
        assert!(
            (0..10).any(|seed| run_scoped_world(seed, Some(m)).failure.is_some()),
            "{} survives ten world seeds",
            m.id()
        );
    }
}

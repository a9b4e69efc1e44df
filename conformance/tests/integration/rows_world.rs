//! The rows turmoil world: the reference on its in-memory backend as a server, writers streaming
//! and ending replies, a reaper ticking in small batches on a simulated clock, faults from the
//! seed (clock jumps both ways, partitions and lost messages, the reaper crashed mid-sweep and
//! down for a week),
//! the model as the safety oracle after every tick and liveness after the heal.

use tidemark_conformance::profiles::rows::world::run_rows_world;
use tidemark_reference::rows::RowsMutant;

#[test]
fn the_reference_keeps_what_sr_keeps_after_every_tick_and_after_the_heal_nothing_expired_remains() {
    let (mut crashed_ticks, mut unanswered) = (0, 0);
    for seed in 0..5 {
        let r = run_rows_world(seed, None);
        assert!(
            r.failure.is_none(),
            "seed {seed}: {}\n{}",
            r.failure.unwrap_or_default(),
            r.trace.tail(12).join("\n")
        );
        let lines = r.trace.lines();
        // The oracle had something to hold the reference to: replies streamed into and
        // ended, ticks that removed rows, and a liveness verdict after the heal.
        for (what, needle) in [
            ("a reply started", "=> made"),
            ("an event streamed", r#""op":"stream""#),
            ("a reply finished or sealed", r#""op":"finish_reply""#),
            ("the heal", " heal"),
            ("the liveness verdict", "liveness at"),
        ] {
            assert!(
                lines.iter().any(|l| l.contains(needle)),
                "seed {seed}: no line shows {what}"
            );
        }
        assert!(
            lines
                .iter()
                .any(|l| l.contains(" removed ") && !l.contains(" removed 0:")),
            "seed {seed}: no tick removed anything"
        );
        crashed_ticks += lines
            .iter()
            .filter(|l| l.contains("failed: database_unavailable"))
            .count();
        unanswered += lines.iter().filter(|l| l.contains("had no answer")).count();
    }
    assert!(crashed_ticks > 0, "the reaper's crash fault never fired");
    assert!(unanswered > 0, "no answer was ever lost");
}

#[test]
fn a_rows_world_seed_replays_to_the_same_trace_hash() {
    let a = run_rows_world(7, None);
    let b = run_rows_world(7, None);
    assert_eq!(a.trace.hash(), b.trace.hash());
    assert!(
        a.trace.lines().len() > 100,
        "{} lines",
        a.trace.lines().len()
    );
    assert_ne!(a.trace.hash(), run_rows_world(8, None).trace.hash());
}

#[test]
fn the_safety_oracle_catches_a_swept_held_request_and_a_reply_deleted_with_its_events_within_three_seeds(
) {
    for m in [
        RowsMutant::HeldRequestSwept,
        RowsMutant::DeletedReplyTakesEvents,
    ] {
        let caught = (0..3).find_map(|seed| {
            run_rows_world(seed, Some(m))
                .failure
                .filter(|f| f.starts_with("safety: "))
        });
        assert!(caught.is_some(), "{} passes three world seeds", m.id());
    }
}

#[test]
fn the_liveness_check_catches_a_tick_that_skips_a_sweep_within_six_seeds() {
    let caught = (0..6).find_map(|seed| {
        run_rows_world(seed, Some(RowsMutant::TickSkipsBreakerSightings))
            .failure
            .filter(|f| f.starts_with("liveness: "))
    });
    assert!(
        caught.is_some(),
        "tick-skips-breaker-sightings passes six world seeds"
    );
}

#[test]
fn a_reaper_killed_between_two_batches_of_a_sweep_leaves_nothing_sr_keeps_removed_and_its_next_tick_finishes_the_job(
) {
    let (seed, r) = (0..40)
        .map(|seed| (seed, run_rows_world(seed, None)))
        .find(|(_, r)| r.trace.lines().iter().any(|l| l.contains("dies mid-sweep")))
        .expect("no seed of forty kills the reaper mid-sweep");
    assert!(
        r.failure.is_none(),
        "seed {seed}: {}\n{}",
        r.failure.unwrap_or_default(),
        r.trace.tail(12).join("\n")
    );
    // The killed tick never reported: one more tick started than ended.
    let lines = r.trace.lines();
    let started = lines.iter().filter(|l| l.contains(" reaps at ")).count();
    let ended = lines
        .iter()
        .filter(|l| l.contains(" removed ") || l.contains(" failed: "))
        .count();
    assert!(
        started > ended,
        "seed {seed}: {started} ticks started, {ended} ended"
    );
}

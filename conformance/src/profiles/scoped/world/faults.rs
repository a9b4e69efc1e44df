//! The scoped world's fault schedule, from the seed: what the controller does to the world
//! between steps, and when (turmoil milliseconds).

use std::time::Duration;

use rand::Rng;
use tidemark_reference::clock::{DAY_MS, HOUR_MS};
use tidemark_sim::real_tier::FaultPlan;
use tidemark_sim::seed::MasterSeed;

use super::TTL_DAYS;

#[derive(Clone, Debug)]
pub(super) enum Fault {
    Jump(i64),
    S3(FaultPlan),
    S3Heal,
    Partition,
    Repair,
    Crash,
    Restart,
    /// The people cut off from `app`, and back.
    PartitionPeople,
    RepairPeople,
}

/// The fault schedule of a seed, in turmoil milliseconds.
pub(super) fn faults(master: MasterSeed) -> Vec<(u64, Fault)> {
    let mut rng = master.stream("scoped-world-faults");
    let mut out = Vec::new();
    let plan = |error_rate: f64, delete_key_failure_rate: f64, down: bool| FaultPlan {
        down,
        error_rate,
        delete_key_failure_rate,
        latency: Duration::ZERO,
        ..FaultPlan::default()
    };
    for _ in 0..rng.gen_range(6..14) {
        let at = rng.gen_range(200..5_000);
        let days = rng.gen_range(1..4) * DAY_MS + rng.gen_range(0..24) * HOUR_MS;
        out.push((at, Fault::Jump(days)));
    }
    if rng.gen_bool(0.3) {
        out.push((rng.gen_range(200..5_000), Fault::Jump(-2 * HOUR_MS)));
    }
    for _ in 0..rng.gen_range(1..4) {
        let at = rng.gen_range(200..4_500);
        let f = match rng.gen_range(0..3) {
            0 => plan(0.2, 0.0, false),
            1 => plan(0.0, 0.3, false),
            _ => plan(0.0, 0.0, true),
        };
        out.push((at, Fault::S3(f)));
        out.push((at + rng.gen_range(100..1_000), Fault::S3Heal));
    }
    for _ in 0..rng.gen_range(0..3) {
        let at = rng.gen_range(200..4_500);
        out.push((at, Fault::Partition));
        out.push((at + rng.gen_range(100..1_500), Fault::Repair));
    }
    for _ in 0..rng.gen_range(0..3) {
        let at = rng.gen_range(200..4_500);
        out.push((at, Fault::Crash));
        out.push((at + rng.gen_range(50..800), Fault::Restart));
    }
    // Longer than the TTL in one step: every session without a wait or a turn meanwhile
    // expires at once.
    if rng.gen_bool(0.5) {
        let days = i64::from(TTL_DAYS) + rng.gen_range(1..4);
        out.push((rng.gen_range(500..4_500), Fault::Jump(days * DAY_MS)));
    }
    // A slow store: sweeps take long enough for turns to arrive in the middle of them.
    if rng.gen_bool(0.4) {
        let at = rng.gen_range(200..4_000);
        let mut slow = plan(0.0, 0.0, false);
        slow.latency = Duration::from_millis(rng.gen_range(20..80));
        out.push((at, Fault::S3(slow)));
        out.push((at + rng.gen_range(500..1_500), Fault::S3Heal));
    }
    // The people's links, from their own stream (the schedule above stays a seed's own).
    let mut rng = master.stream("scoped-world-people-faults");
    for _ in 0..rng.gen_range(0..3) {
        let at = rng.gen_range(200..4_500);
        out.push((at, Fault::PartitionPeople));
        out.push((at + rng.gen_range(100..1_500), Fault::RepairPeople));
    }
    // A week passes while the store, slow, fails some deletions: the sweep after it claims
    // every idle session, takes long enough for turns and uploads to arrive in the middle, and
    // leaves some sessions part-deleted (marked unfinished, SC-5.5); the people's next
    // requests must not be served what it left (SF-4.1).
    if rng.gen_bool(0.7) {
        let at = rng.gen_range(500..4_000);
        let days = i64::from(TTL_DAYS) + rng.gen_range(1..3);
        let mut failing = plan(0.0, 0.6, false);
        failing.latency = Duration::from_millis(rng.gen_range(10..50));
        out.push((at, Fault::S3(failing)));
        out.push((at, Fault::Jump(days * DAY_MS)));
        // Past the sweeper's next poll, so the sweep meets the failures.
        out.push((at + rng.gen_range(600..1_500), Fault::S3Heal));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

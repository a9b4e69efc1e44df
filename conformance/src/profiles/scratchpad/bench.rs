//! The scratchpad's `tidemark bench` figures: a write's cost beside a full session, an evicting
//! write's, and the exploration's throughput. Timings come from the wall clock here on purpose:
//! they are measurements, never inputs to a decision.

use super::explore::run_seed;
use super::ReferenceScratchpad;
use crate::explore::Shard;
use std::sync::Arc;
use std::time::Instant;
use tidemark_reference::clock::ManualClock;
use tidemark_reference::scratchpad::{CallContext, Scratchpad, ScratchpadConfig};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::owner::scratch_base;

/// A scratchpad on a fresh temporary root (returned, so it lives as long as the pad) whose
/// session `alice@#g/T1` already holds `files` 100-byte files. `spaced` gives each setup file
/// its own millisecond, so eviction order is by time rather than by name.
fn prefilled(
    cfg: impl FnOnce(&mut ScratchpadConfig),
    files: usize,
    spaced: bool,
) -> (tempfile::TempDir, Scratchpad, ManualClock, CallContext) {
    let tmp = tempfile::tempdir_in(scratch_base()).expect("a temporary directory");
    let mut config = ScratchpadConfig::with_root(tmp.path());
    cfg(&mut config);
    let clock = ManualClock::starting_at(EPOCH);
    let mut pad = Scratchpad::open(config, Arc::new(clock.clone())).expect("opens");
    let ctx = CallContext {
        requester: "alice".into(),
        channel: "g".into(),
        thread: Some("T1".into()),
    };
    let data = vec![b'x'; 100];
    for i in 0..files {
        if spaced {
            clock.advance_ms(1);
        }
        pad.write(&ctx, format!("d{}/f{i}.txt", i % 100).as_bytes(), &data)
            .expect("a setup write");
    }
    (tmp, pad, clock, ctx)
}

/// Mean microseconds of one 100-byte write into a session already holding `files` files, with
/// the cap out of reach (so the quota check alone is measured), over `writes` writes.
pub fn scratchpad_write_us(files: usize, writes: usize) -> f64 {
    let (_tmp, mut pad, clock, ctx) = prefilled(
        |c| {
            c.session_cap_bytes = 1 << 30;
            c.max_file_bytes = 1 << 20;
            c.requester_ceiling_bytes = 1 << 31;
        },
        files,
        false,
    );
    let data = vec![b'x'; 100];
    let started = Instant::now();
    for i in 0..writes {
        clock.advance_ms(1);
        pad.write(&ctx, format!("bench/w{}.txt", i % 50).as_bytes(), &data)
            .expect("a measured write");
    }
    started.elapsed().as_secs_f64() * 1e6 / writes as f64
}

/// Mean microseconds of a write that must evict, in a full session of `files` files. The
/// eviction order is the scratchpad's index, so this reads only the file it evicts.
pub fn scratchpad_evicting_write_us(files: usize, writes: usize) -> f64 {
    let (_tmp, mut pad, clock, ctx) = prefilled(
        |c| {
            c.session_cap_bytes = files as u64 * 100;
            c.max_file_bytes = 100;
            c.requester_ceiling_bytes = 1 << 31;
        },
        files,
        true,
    );
    let data = vec![b'x'; 100];
    let started = Instant::now();
    for i in 0..writes {
        clock.advance_ms(1);
        let w = pad
            .write(&ctx, format!("new/e{i}.txt").as_bytes(), &data)
            .expect("a measured write");
        assert_eq!(
            w.evicted.len(),
            1,
            "each measured write evicts exactly one file"
        );
    }
    started.elapsed().as_secs_f64() * 1e6 / writes as f64
}

/// Seeds per second and simulated seconds per wall second for the standard exploration
/// workload, on this thread alone.
pub fn explore_throughput(seeds: u64) -> (f64, f64) {
    let reference = ReferenceScratchpad::default();
    let started = Instant::now();
    let mut simulated_ms = 0i64;
    for seed in Shard::ALL.seeds(0, seeds) {
        let r = run_seed(seed, &reference);
        assert!(
            r.divergence.is_none(),
            "seed {seed} diverged; run tidemark explore"
        );
        simulated_ms += r.simulated_ms;
    }
    let secs = started.elapsed().as_secs_f64();
    (seeds as f64 / secs, simulated_ms as f64 / 1000.0 / secs)
}

pub fn run(seeds: u64) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "scratch base: {}", scratch_base().display());
    let mut plain_us = Vec::new();
    for files in [10, 10_000] {
        let us = scratchpad_write_us(files, 2_000);
        plain_us.push(us);
        let _ = writeln!(s, "scratchpad write, session of {files:>6} files: {us:>8.1} us/write (quota check from running counts)");
    }
    for (files, plain) in [10, 10_000].into_iter().zip(plain_us) {
        let us = scratchpad_evicting_write_us(files, 500);
        let _ = writeln!(s, "scratchpad evicting write, {files:>6} files:    {us:>8.1} us/write ({:.2}x a write that evicts nothing; eviction index)", us / plain);
    }
    let (sps, speedup) = explore_throughput(seeds);
    let _ = writeln!(
        s,
        "explore, standard workload (3 clients, 200 ops, ~30 simulated days): {sps:.0} seeds/s, {speedup:.0} simulated s per wall s ({seeds} seeds, one thread)"
    );
    s
}

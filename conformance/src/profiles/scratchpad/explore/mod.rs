//! The scratchpad's exploration: random operation sequences from seeds (`ops.rs`), run beside
//! the oracle (`run.rs`, with the implementation's names learnt in `names.rs`), shrunk by
//! proptest when they fail, saved under `fixtures/explore/scratchpad/` (`fixture.rs`) so
//! `cargo test` replays them for ever; `cli.rs` is `tidemark explore|replay --profile
//! scratchpad`. The seed's generator and shards are the engine's (`crate::explore`).

pub mod cli;
pub mod fixture;
pub mod names;
pub mod ops;
pub mod run;

use super::driver::DriverFactory;
use crate::explore::rng_for;
use ops::{workload, SimOp};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use run::{run_ops, RunResult};

/// The workload a seed generates under the current generator, before any shrinking.
pub fn generate(seed: u64) -> (bool, Vec<SimOp>) {
    generate_version(ops::GENERATOR_VERSION, seed)
}

/// The workload a seed generates under generator `version` (see [`ops`]).
pub fn generate_version(version: u32, seed: u64) -> (bool, Vec<SimOp>) {
    let mut runner = TestRunner::new_with_rng(Config::default(), rng_for(seed));
    ops::workload_version(version)
        .new_tree(&mut runner)
        .expect("the workload strategy always generates")
        .current()
}

/// A failing seed, shrunk.
#[derive(Clone, Debug)]
pub struct Found {
    pub seed: u64,
    pub unmounted: bool,
    /// The shrunk operations, `Nop`s removed.
    pub ops: Vec<SimOp>,
    /// The run of the shrunk operations.
    pub run: RunResult,
    pub original_len: usize,
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Runs one seed without shrinking.
pub fn run_seed(seed: u64, factory: &dyn DriverFactory) -> RunResult {
    let (unmounted, ops) = generate(seed);
    block_on(run_ops(&ops, unmounted, factory))
}

/// Runs one seed; on failure shrinks it with proptest and returns the minimal failing sequence.
pub fn explore_seed(
    seed: u64,
    factory: &dyn DriverFactory,
    max_shrink_iters: u32,
) -> Option<Found> {
    let config = Config {
        cases: 1,
        failure_persistence: None,
        max_shrink_iters,
        // Shrinking is bounded by iterations, not by the wall clock, so it is deterministic.
        max_shrink_time: 0,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, rng_for(seed));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let outcome = runner.run(&workload(), |(unmounted, ops)| {
        let r = rt.block_on(run_ops(&ops, unmounted, factory));
        match r.divergence {
            None => Ok(()),
            Some(d) => Err(TestCaseError::fail(format!(
                "{}: expected {}, got {}",
                d.op, d.expected, d.actual
            ))),
        }
    });
    match outcome {
        Ok(()) => None,
        Err(TestError::Fail(_, (unmounted, ops))) => {
            let original_len = ops.len();
            let ops: Vec<SimOp> = ops.into_iter().filter(|o| *o != SimOp::Nop).collect();
            let run = rt.block_on(run_ops(&ops, unmounted, factory));
            Some(Found {
                seed,
                unmounted,
                ops,
                run,
                original_len,
            })
        }
        Err(TestError::Abort(why)) => panic!("proptest aborted seed {seed}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn a_seed_always_generates_the_same_workload() {
        assert_eq!(generate(42), generate(42));
        assert_ne!(generate(42).1, generate(43).1);
    }

    /// Version 1 still generates exactly what it generated before version 2 existed (the hash
    /// was taken from the generator as it stood then), so an old seed number keeps its meaning.
    #[test]
    fn generator_version_1_is_unchanged() {
        let mut h = Sha256::new();
        for seed in 0..20u64 {
            h.update(format!("{:?}", generate_version(1, seed)).as_bytes());
        }
        assert_eq!(
            hex::encode(h.finalize()),
            "b9b8dd335d2ad1780cddd68aa4c90153bd672c8327d00c51c4947946ee4f7796"
        );
    }
}

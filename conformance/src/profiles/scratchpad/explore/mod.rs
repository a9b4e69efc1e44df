//! Exploration: random operation sequences from seeds, run beside the oracle, shrunk by proptest
//! when they fail, saved under `fixtures/` so `cargo test` replays them for ever.
//!
//! One seed is one proptest case whose generator is seeded from that seed alone, so
//! `tidemark explore --seeds N` and `tidemark replay` agree on what a seed means, and
//! `--shard K/M` partitions seeds without coordination.

pub mod cli;
pub mod fixture;
pub mod names;
pub mod ops;
pub mod run;
pub mod saved;
pub mod shrink;

use crate::driver::DriverFactory;
use ops::{workload, SimOp};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use run::{run_ops, RunResult};
use sha2::{Digest, Sha256};

/// A seed's generator: proptest's ChaCha RNG keyed by `sha256("tidemark-explore" || seed)`.
pub fn rng_for(seed: u64) -> TestRng {
    let mut h = Sha256::new();
    h.update(b"tidemark-explore");
    h.update(seed.to_le_bytes());
    let key: [u8; 32] = h.finalize().into();
    TestRng::from_seed(RngAlgorithm::ChaCha, &key)
}

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

/// `K/M`: this shard's seeds are those with `seed % M == K`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (k, m) = s
            .split_once('/')
            .ok_or_else(|| format!("expected a shard K/M, found {s:?}"))?;
        let index: u64 = k
            .parse()
            .map_err(|_| format!("expected a number before '/', found {k:?}"))?;
        let count: u64 = m
            .parse()
            .map_err(|_| format!("expected a number after '/', found {m:?}"))?;
        if count == 0 || index >= count {
            return Err(format!("shard {s} is out of range: need 0 <= K < M"));
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// The first `n` seeds from `first` that belong to this shard.
    pub fn seeds(self, first: u64, n: u64) -> impl Iterator<Item = u64> {
        (first..first + n).filter(move |s| s % self.count == self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn shards_partition_the_seeds() {
        let all: Vec<u64> = Shard::ALL.seeds(0, 30).collect();
        let mut parts: Vec<u64> = (0..3)
            .flat_map(|k| Shard { index: k, count: 3 }.seeds(0, 30))
            .collect();
        parts.sort();
        assert_eq!(all, parts);
        assert!("3/3".parse::<Shard>().is_err());
    }
}

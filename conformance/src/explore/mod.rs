//! Exploration's engine, written once for every profile: a seed's generator, shards of seeds,
//! the loop (`engine.rs`: seeds, shrinking a failing one, grouping failures), the determinism and
//! differential checks (`compare.rs`), the hunt (`hunt.rs`), the summary lines and the findings
//! as data (`findings_text.rs`), the value trees shrinking walks (`shrink.rs`), the
//! saved-failure format (`saved.rs`), a failure's text and
//! replay command (`text.rs`) and what the `explore` and `replay` commands print for any
//! profile (`cli.rs`). A profile supplies its operations,
//! its model and how one sequence runs, as an `engine::Explorer`.
//!
//! One seed is one proptest case whose generator is seeded from that seed alone, so
//! `tidemark explore --seeds N` and `tidemark replay` agree on what a seed means, and
//! `--shard K/M` partitions seeds without coordination.

pub mod cli;
pub mod compare;
pub mod engine;
pub mod findings_text;
pub mod hunt;
pub mod report;
pub mod saved;
pub mod shrink;
pub mod signature;
pub mod text;

use proptest::test_runner::{RngAlgorithm, TestRng};
use std::path::PathBuf;

/// What an exploration writes besides its text: `--html FILE` (the page), `--json FILE` (the
/// report `tidemark merge` folds) and `--coverage` (the SPEC coverage table, printed and on
/// the page).
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    pub html: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub coverage: bool,
}

impl Outputs {
    pub fn any(&self) -> bool {
        self.html.is_some() || self.json.is_some() || self.coverage
    }
}
use sha2::{Digest, Sha256};

/// A seed's generator: proptest's ChaCha RNG keyed by `sha256("tidemark-explore" || seed)`.
pub fn rng_for(seed: u64) -> TestRng {
    let mut h = Sha256::new();
    h.update(b"tidemark-explore");
    h.update(seed.to_le_bytes());
    let key: [u8; 32] = h.finalize().into();
    TestRng::from_seed(RngAlgorithm::ChaCha, &key)
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

/// Checks a command line's seeds: at least one, and every seed asked for (a hunt's `trials`
/// searches each start a million seeds further, `hunt::hunt`) below 2^64, so no range wraps
/// to nothing and reports success having run no seed.
pub fn check_seeds(first_seed: u64, seeds: u64, trials: u64) -> Result<(), String> {
    if seeds == 0 {
        return Err("--seeds 0 asks for no seed: a run that checks nothing does not pass".into());
    }
    let last_start = trials
        .max(1)
        .checked_sub(1)
        .and_then(|t| t.checked_mul(1_000_000))
        .and_then(|o| first_seed.checked_add(o));
    match last_start.and_then(|s| s.checked_add(seeds - 1)) {
        Some(_) => Ok(()),
        None => Err(format!(
            "--first-seed {first_seed} with --seeds {seeds}{} runs past the last seed, {}",
            if trials > 1 {
                format!(" and {trials} hunt trials (each a million seeds further)")
            } else {
                String::new()
            },
            u64::MAX
        )),
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
    fn shards_partition_the_seeds() {
        let all: Vec<u64> = Shard::ALL.seeds(0, 30).collect();
        let mut parts: Vec<u64> = (0..3)
            .flat_map(|k| Shard { index: k, count: 3 }.seeds(0, 30))
            .collect();
        parts.sort();
        assert_eq!(all, parts);
        assert!("3/3".parse::<Shard>().is_err());
    }

    #[test]
    fn seeds_past_the_last_one_or_none_at_all_are_refused() {
        assert!(check_seeds(0, 100, 1).is_ok());
        assert!(check_seeds(u64::MAX, 1, 1).is_ok());
        assert!(check_seeds(u64::MAX, 10, 1).is_err());
        assert!(check_seeds(0, 0, 1).is_err());
        // Three trials: the last starts two million seeds on, and runs ten.
        assert!(check_seeds(u64::MAX - 2_000_009, 10, 3).is_ok());
        assert!(check_seeds(u64::MAX - 2_000_008, 10, 3).is_err());
    }
}

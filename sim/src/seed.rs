//! One master seed feeds every random choice in a run. Each consumer asks for its own stream by
//! name, so adding a new consumer never shifts the numbers another one sees.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MasterSeed(pub u64);

impl MasterSeed {
    /// A deterministic generator for the named stream: `sha256(seed || name)` seeds ChaCha8.
    pub fn stream(self, name: &str) -> ChaCha8Rng {
        let mut h = Sha256::new();
        h.update(self.0.to_le_bytes());
        h.update(name.as_bytes());
        ChaCha8Rng::from_seed(h.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn the_same_seed_and_name_give_the_same_numbers() {
        assert_eq!(
            MasterSeed(7).stream("faults").next_u64(),
            MasterSeed(7).stream("faults").next_u64()
        );
    }

    #[test]
    fn streams_of_different_names_are_independent() {
        assert_ne!(
            MasterSeed(7).stream("faults").next_u64(),
            MasterSeed(7).stream("clients").next_u64()
        );
    }
}

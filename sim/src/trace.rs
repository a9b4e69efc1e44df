//! A trace of every operation and outcome, one line each, with a stable hash: the same seed must
//! give a byte-identical trace, and comparing two hashes is how that is checked.

use sha2::{Digest, Sha256};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    lines: Vec<String>,
}

impl Trace {
    pub fn new() -> Self {
        Trace::default()
    }

    /// Records one event at simulated time `at_ms`. The line format is stable: changing it
    /// changes every saved hash, so it is covered by a snapshot test.
    pub fn record(&mut self, at_ms: i64, event: impl AsRef<str>) {
        self.lines.push(format!("{at_ms:>14} {}", event.as_ref()));
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The last `n` lines, for failure reports.
    pub fn tail(&self, n: usize) -> &[String] {
        &self.lines[self.lines.len().saturating_sub(n)..]
    }

    /// Hex SHA-256 over the lines joined by newlines.
    pub fn hash(&self) -> String {
        let mut h = Sha256::new();
        for l in &self.lines {
            h.update(l.as_bytes());
            h.update(b"\n");
        }
        hex::encode(h.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_traces_hash_equal_and_any_change_moves_the_hash() {
        let mut a = Trace::new();
        a.record(0, "write notes.md -> ok");
        let mut b = a.clone();
        assert_eq!(a.hash(), b.hash());
        b.record(1, "read notes.md -> ok");
        assert_ne!(a.hash(), b.hash());
    }
}

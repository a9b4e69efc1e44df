//! What a sequence run gives back: a pass with its trace, or a divergence with the trace up to
//! it, and the hash two runs of one sequence must agree on.

use std::fmt;

use sha2::{Digest, Sha256};

/// Where a sequence left the model: the step, the trace up to and including it, and what the
/// model expected beside what the store did.
#[derive(Clone, Debug)]
pub struct Divergence {
    pub seed: u64,
    pub step: usize,
    /// The trace, readable, in order: each operation and what it observed; the last operation
    /// is the one that diverged.
    pub ops: Vec<String>,
    pub expected: String,
    pub actual: String,
    /// The model's state at the divergence (`Model::state_lines`, bounded).
    pub model_state: Vec<String>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {}, step {}:", self.seed, self.step)?;
        writeln!(f, "  expected {}", self.expected)?;
        writeln!(f, "  actual   {}", self.actual)?;
        write!(f, "steps so far:\n  {}", self.ops.join("\n  "))
    }
}

/// Why a sequence did not pass.
#[derive(Clone, Debug)]
pub enum SequenceError {
    /// The store and the model disagree.
    Diverged(Divergence),
    /// The harness could not set up (S3 server, database, bucket): not a verdict.
    Setup(String),
}

impl fmt::Display for SequenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequenceError::Diverged(d) => d.fmt(f),
            SequenceError::Setup(e) => write!(f, "setup failed: {e}"),
        }
    }
}

/// A sequence that agreed with the model throughout.
#[derive(Clone, Debug, Default)]
pub struct SequenceRun {
    pub steps: usize,
    /// Files the model's sweeps removed (the sequence reached expiry this often).
    pub swept_files: usize,
    /// Simulated time from the pinned epoch to the end of the sequence.
    pub simulated_ms: i64,
    /// Each operation and what it observed, in order.
    pub trace: Vec<String>,
}

impl SequenceRun {
    /// sha256 of the trace, hex: two runs of one sequence must agree on it.
    pub fn trace_hash(&self) -> String {
        trace_hash(&self.trace)
    }
}

pub fn trace_hash(lines: &[String]) -> String {
    let mut h = Sha256::new();
    for l in lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

//! Every number the scratchpad uses, as a knob with the source document's default.

use super::alternatives::Alternative;
use super::mutants::ScratchpadMutant;
use crate::clock::{DAY_MS, HOUR_MS, MINUTE_MS};
use std::collections::BTreeSet;
use std::path::PathBuf;

pub const MIB: u64 = 1024 * 1024;

#[derive(Clone, Debug)]
pub struct ScratchpadConfig {
    /// The mounted scratch directory. Empty means unmounted: every operation is refused (SP-1.3).
    pub root: PathBuf,
    /// The process's working directory. Never written to; held only so the
    /// `empty-root-is-working-dir` mutant can reproduce the source's bug somewhere observable.
    pub working_dir: PathBuf,
    /// Per-session cap; overflow evicts oldest-first inside that session (SP-4.2).
    /// `SIRENS_ECHO_SESSION_BYTES` in the source, default 1 MiB.
    pub session_cap_bytes: u64,
    /// Per-requester ceiling summed over all of the requester's sessions; overflow refuses (SP-4.1).
    pub requester_ceiling_bytes: u64,
    /// Largest single file accepted (SP-2.8). Default: the session cap, since a larger file could
    /// never fit however much were evicted.
    pub max_file_bytes: u64,
    /// Threads are collected after this long quiet (SP-5.2). Default 7 days.
    pub thread_quiet_ms: i64,
    /// Channel pairings are collected after this long idle (SP-5.2). Default 1 hour.
    pub pairing_idle_ms: i64,
    /// The sweeper's timer (SP-5.5). Default 5 minutes (the source names none; decided in SPEC).
    pub sweep_interval_ms: i64,
    /// Most path components a guest path may have (SP-2.6).
    pub max_depth: usize,
    /// Longest guest path in bytes (SP-2.6).
    pub max_path_bytes: usize,
    pub mutant: Option<ScratchpadMutant>,
    /// The variants this scratchpad takes the other way (SPEC.md's table); empty: the defaults.
    pub alternatives: BTreeSet<Alternative>,
}

impl ScratchpadConfig {
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        ScratchpadConfig {
            root: root.into(),
            working_dir: PathBuf::from("."),
            session_cap_bytes: MIB,
            requester_ceiling_bytes: 4 * MIB,
            max_file_bytes: MIB,
            thread_quiet_ms: 7 * DAY_MS,
            pairing_idle_ms: HOUR_MS,
            sweep_interval_ms: 5 * MINUTE_MS,
            max_depth: 16,
            max_path_bytes: 1024,
            mutant: None,
            alternatives: BTreeSet::new(),
        }
    }

    pub(crate) fn is(&self, m: ScratchpadMutant) -> bool {
        self.mutant == Some(m)
    }

    /// Whether this scratchpad takes `a` rather than the variant's default.
    pub fn takes(&self, a: Alternative) -> bool {
        self.alternatives.contains(&a)
    }
}

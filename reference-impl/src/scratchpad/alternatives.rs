//! The choices SPEC.md leaves to an implementation of the scratchpad (its variants), where this
//! scratchpad can take the other one. The defaults are what it ships with; each alternative is
//! another correct scratchpad, so the conformance suite can show it judges every variant's
//! behaviour, not only the default's (`tidemark run --variant ...`).
//!
//! Unlike a mutant, an alternative is not a bug: an implementation that declares it is judged by
//! it. A mutant whose behaviour matches an alternative (`sweep-on-fixed-period`) is a bug only
//! because the implementation declared the default.

/// The non-default choice of one variant (SPEC.md's table names them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Alternative {
    /// `thread_identity=global`: a thread id names one session whatever the channel (SP-1.1).
    ThreadsGlobal,
    /// `non_canonical_paths=tidy`: empty and `.` components are dropped rather than refused
    /// (SP-2.5).
    PathsTidied,
    /// `path_limits=none`: no depth or length limit of its own (SP-2.6).
    NoPathLimits,
    /// `large_reads=refused`: a file over `max_file_bytes` is refused `too_large` when read too
    /// (SP-2.8).
    LargeReadsRefused,
    /// `read_through_a_file=not_a_directory`: a read, listing or removal whose path crosses a
    /// regular file is refused `not_a_directory` (SP-3.2).
    ReadThroughFileNotADirectory,
    /// `caller_directories=on_every_operation`: every file operation creates the caller's
    /// session and requester directories first, reads included (SP-3.6).
    DirectoriesOnEveryOperation,
    /// `eviction_ties=any`: equal times are evicted in the order the files were written
    /// (SP-4.2).
    EvictionTiesByWriteOrder,
    /// `sweep_schedule=fixed_period`: sweeps fall on a fixed period from startup, missed ones
    /// dropped (SP-5.5).
    SweepOnFixedPeriod,
}

impl Alternative {
    pub const ALL: &'static [Alternative] = &[
        Alternative::ThreadsGlobal,
        Alternative::PathsTidied,
        Alternative::NoPathLimits,
        Alternative::LargeReadsRefused,
        Alternative::ReadThroughFileNotADirectory,
        Alternative::DirectoriesOnEveryOperation,
        Alternative::EvictionTiesByWriteOrder,
        Alternative::SweepOnFixedPeriod,
    ];
}

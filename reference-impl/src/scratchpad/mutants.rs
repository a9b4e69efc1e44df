//! Deliberately broken variants of the scratchpad, each reproducing a real bug.
//!
//! They exist so the conformance suite can prove its power: every mutant must be killed by a
//! named scenario (`tidemark mutants`). A mutant is switched on at runtime through
//! [`super::ScratchpadConfig::mutant`]; production wiring leaves it `None`.

/// One broken variant. The first four are the bugs the source document names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScratchpadMutant {
    /// Session age counts directory timestamps, so removing a file keeps a dead session alive.
    DirMtimeCounted,
    /// An empty (unmounted) root resolves to the working directory, as `EvalSymlinks("")` did.
    EmptyRootIsWorkingDir,
    /// Listing the session root shows only the caller's own files.
    RootListsOwnOnly,
    /// The ceiling is measured over the session, not summed across the requester's sessions.
    QuotaPerSession,
    /// The session cap evicts the newest file first.
    EvictNewestFirst,
    /// The session cap evicts in path order, ignoring age.
    EvictByName,
    /// Eviction takes the requester's oldest file from any session, not only the overflowing one.
    EvictAcrossSessions,
    /// The per-requester ceiling evicts instead of refusing.
    CeilingEvicts,
    /// The sweeper waits a full interval after startup instead of sweeping at once.
    NoStartupSweep,
    /// One retention timer for both kinds: channel pairings wait a thread's week.
    OneTimerForBothKinds,
    /// Session and requester identifiers are written into paths unhashed.
    RawIdentifiersInPaths,
    /// Overwriting a file counts both the old and the new bytes.
    OverwriteDoubleCounted,
    /// `..` is normalised away instead of refused.
    DotDotNormalised,
    /// A channel pairing is keyed by channel alone, so members of a channel share it.
    PairingSharedByChannel,
    /// The write result does not name the files the cap evicted.
    EvictionNotNamed,
    /// Symlinks under the root are followed, so a link can lead reads out of the root.
    SymlinksFollowed,
    /// The sweeper removes any directory under the root, including ones it did not write.
    ForeignDirectorySwept,
    /// A bare path is looked up across the session before the caller's own subtree.
    SessionPathBeforeOwn,
    /// An empty session never expires: with no file there is no age, and it is skipped.
    EmptySessionKeptForever,
    /// The file being overwritten is an eviction candidate: reported evicted, written again
    /// anyway, and the session ends over its cap (a real implementation's bug, issue 10).
    OverwriteEvictsItself,
    /// A write refused for what is on disk (a directory at the path, a file on its parent path)
    /// is refused only after the cap has evicted (a real implementation's bug, issue 10).
    LateRefusalEvicts,
    /// Listing a path that is a file lists nothing (a walk of a file finds nothing below it).
    ListOfAFileIsEmpty,
    /// An overwrite skips the file-size limit: sizes are checked only when a file is created.
    OverwriteSkipsSizeLimit,
    /// An overwrite skips the ceiling: it is checked only when a file is created.
    OverwriteSkipsCeiling,
    /// An overwrite skips the session cap: nothing is evicted and the session ends over its cap.
    OverwriteSkipsCap,
    /// The sweeper ticks on a fixed period from startup instead of an interval after the
    /// previous sweep.
    SweepOnFixedPeriod,
    /// Equal times in eviction are broken by write order instead of by listing path.
    EqualTimesByWriteOrder,
    /// The timer a session's kind picks is remembered in memory, not read from its directory's prefix: after a restart every session is taken for a thread.
    KindRememberedInMemory,
    /// An empty path names the caller's own directory instead of being refused.
    EmptyPathNamesTheRoot,
    /// A leading `/` is stripped instead of refused.
    AbsolutePathMadeRelative,
    /// A path is cut at its first NUL byte, as a C string would be.
    NulTruncatesThePath,
    /// Bytes that are not UTF-8 are replaced with U+FFFD instead of refused.
    NonUtf8Replaced,
    /// A path exactly at the depth or length limit is refused (the limits are exclusive).
    LimitsExclusive,
    /// A write resolves like a read: a path that is another member's listing path overwrites that member's file.
    WriteResolvesLikeARead,
    /// A removal resolves like a read: another member's listing path removes that member's file.
    RemoveResolvesLikeARead,
    /// Creating a directory does not move the time of the directory it is created in.
    EntryCreationKeepsDirTime,
    /// A read or a listing creates the caller's directory (and the session's) first.
    ReadingMakesTheDirectory,
    /// Content is stored as UTF-8 text, invalid bytes replaced.
    ContentAsText,
    /// The running byte counts and eviction order start empty at every start instead of being measured from the disk.
    CountsForgottenAtRestart,
    /// The depth limit is the default 16, whatever the `max_depth` knob says.
    MaxDepthKnobIgnored,
    /// A write makes its parent directories before the ceiling check, so a refused write leaves them.
    RefusedWriteLeavesItsDirectories,
    /// Every write, an overwrite too, stamps every directory from the file up to the session's.
    WriteRestampsItsDirectories,
    /// Times are stamped in whole seconds, so a timer fires up to a second early.
    TimesRoundedToSeconds,
    /// An empty session's time is its newest directory's, a member directory's included, not its own.
    EmptySessionTimeFromMembers,
    /// Any directory whose name starts `t-` or `c-` is taken for a session, whatever follows.
    SessionShapeByPrefix,
    /// A root that does not exist is created at the first write, hiding a missing mount.
    MissingRootCreated,
}

impl ScratchpadMutant {
    pub const ALL: [ScratchpadMutant; 46] = [
        Self::DirMtimeCounted,
        Self::EmptyRootIsWorkingDir,
        Self::RootListsOwnOnly,
        Self::QuotaPerSession,
        Self::EvictNewestFirst,
        Self::EvictByName,
        Self::EvictAcrossSessions,
        Self::CeilingEvicts,
        Self::NoStartupSweep,
        Self::OneTimerForBothKinds,
        Self::RawIdentifiersInPaths,
        Self::OverwriteDoubleCounted,
        Self::DotDotNormalised,
        Self::PairingSharedByChannel,
        Self::EvictionNotNamed,
        Self::SymlinksFollowed,
        Self::ForeignDirectorySwept,
        Self::SessionPathBeforeOwn,
        Self::EmptySessionKeptForever,
        Self::OverwriteEvictsItself,
        Self::LateRefusalEvicts,
        Self::ListOfAFileIsEmpty,
        Self::OverwriteSkipsSizeLimit,
        Self::OverwriteSkipsCeiling,
        Self::OverwriteSkipsCap,
        Self::SweepOnFixedPeriod,
        Self::EqualTimesByWriteOrder,
        Self::KindRememberedInMemory,
        Self::EmptyPathNamesTheRoot,
        Self::AbsolutePathMadeRelative,
        Self::NulTruncatesThePath,
        Self::NonUtf8Replaced,
        Self::LimitsExclusive,
        Self::WriteResolvesLikeARead,
        Self::RemoveResolvesLikeARead,
        Self::EntryCreationKeepsDirTime,
        Self::ReadingMakesTheDirectory,
        Self::ContentAsText,
        Self::CountsForgottenAtRestart,
        Self::MaxDepthKnobIgnored,
        Self::RefusedWriteLeavesItsDirectories,
        Self::WriteRestampsItsDirectories,
        Self::TimesRoundedToSeconds,
        Self::EmptySessionTimeFromMembers,
        Self::SessionShapeByPrefix,
        Self::MissingRootCreated,
    ];

    /// A stable kebab-case name, used on the command line and in reports.
    pub fn id(self) -> &'static str {
        match self {
            Self::DirMtimeCounted => "dir-mtime-counted",
            Self::EmptyRootIsWorkingDir => "empty-root-is-working-dir",
            Self::RootListsOwnOnly => "root-lists-own-only",
            Self::QuotaPerSession => "quota-per-session",
            Self::EvictNewestFirst => "evict-newest-first",
            Self::EvictByName => "evict-by-name",
            Self::EvictAcrossSessions => "evict-across-sessions",
            Self::CeilingEvicts => "ceiling-evicts",
            Self::NoStartupSweep => "no-startup-sweep",
            Self::OneTimerForBothKinds => "one-timer-for-both-kinds",
            Self::RawIdentifiersInPaths => "raw-identifiers-in-paths",
            Self::OverwriteDoubleCounted => "overwrite-double-counted",
            Self::DotDotNormalised => "dotdot-normalised",
            Self::PairingSharedByChannel => "pairing-shared-by-channel",
            Self::EvictionNotNamed => "eviction-not-named",
            Self::SymlinksFollowed => "symlinks-followed",
            Self::ForeignDirectorySwept => "foreign-directory-swept",
            Self::SessionPathBeforeOwn => "session-path-before-own",
            Self::EmptySessionKeptForever => "empty-session-kept-forever",
            Self::OverwriteEvictsItself => "overwrite-evicts-itself",
            Self::LateRefusalEvicts => "late-refusal-evicts",
            Self::ListOfAFileIsEmpty => "list-of-a-file-is-empty",
            Self::OverwriteSkipsSizeLimit => "overwrite-skips-size-limit",
            Self::OverwriteSkipsCeiling => "overwrite-skips-ceiling",
            Self::OverwriteSkipsCap => "overwrite-skips-cap",
            Self::SweepOnFixedPeriod => "sweep-on-fixed-period",
            Self::EqualTimesByWriteOrder => "equal-times-by-write-order",
            Self::KindRememberedInMemory => "kind-remembered-in-memory",
            Self::EmptyPathNamesTheRoot => "empty-path-names-the-root",
            Self::AbsolutePathMadeRelative => "absolute-path-made-relative",
            Self::NulTruncatesThePath => "nul-truncates-the-path",
            Self::NonUtf8Replaced => "non-utf8-replaced",
            Self::LimitsExclusive => "limits-exclusive",
            Self::WriteResolvesLikeARead => "write-resolves-like-a-read",
            Self::RemoveResolvesLikeARead => "remove-resolves-like-a-read",
            Self::EntryCreationKeepsDirTime => "entry-creation-keeps-dir-time",
            Self::ReadingMakesTheDirectory => "reading-makes-the-directory",
            Self::ContentAsText => "content-as-text",
            Self::CountsForgottenAtRestart => "counts-forgotten-at-restart",
            Self::MaxDepthKnobIgnored => "max-depth-knob-ignored",
            Self::RefusedWriteLeavesItsDirectories => "refused-write-leaves-its-directories",
            Self::WriteRestampsItsDirectories => "write-restamps-its-directories",
            Self::TimesRoundedToSeconds => "times-rounded-to-seconds",
            Self::EmptySessionTimeFromMembers => "empty-session-time-from-members",
            Self::SessionShapeByPrefix => "session-shape-by-prefix",
            Self::MissingRootCreated => "missing-root-created",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Self::DirMtimeCounted => {
                "session age counts directory timestamps (named in the source)"
            }
            Self::EmptyRootIsWorkingDir => {
                "an empty root resolves to the working directory (named in the source)"
            }
            Self::RootListsOwnOnly => {
                "listing the root shows only your own files (named in the source)"
            }
            Self::QuotaPerSession => {
                "the ceiling is measured per session, not per requester (named in the source)"
            }
            Self::EvictNewestFirst => "the session cap evicts newest-first",
            Self::EvictByName => "the session cap evicts in path order",
            Self::EvictAcrossSessions => "eviction reaches the requester's other sessions",
            Self::CeilingEvicts => "the per-requester ceiling evicts instead of refusing",
            Self::NoStartupSweep => "no sweep at startup",
            Self::OneTimerForBothKinds => "channel pairings use the thread timer",
            Self::RawIdentifiersInPaths => "identifiers reach paths unhashed",
            Self::OverwriteDoubleCounted => "an overwrite counts old and new bytes",
            Self::DotDotNormalised => "`..` is normalised instead of refused",
            Self::PairingSharedByChannel => {
                "a channel pairing is shared by everyone in the channel"
            }
            Self::EvictionNotNamed => "the write result omits evicted files",
            Self::SymlinksFollowed => "symlinks under the root are followed",
            Self::ForeignDirectorySwept => "the sweeper removes directories it did not write",
            Self::SessionPathBeforeOwn => "a bare path prefers another member's file over your own",
            Self::EmptySessionKeptForever => "an empty session is never collected",
            Self::OverwriteEvictsItself => {
                "the file being overwritten is evicted, and the session ends over its cap"
            }
            Self::LateRefusalEvicts => "a write refused for what is on disk evicts first",
            Self::ListOfAFileIsEmpty => "listing a file's path lists nothing",
            Self::OverwriteSkipsSizeLimit => "an overwrite skips the file-size limit",
            Self::OverwriteSkipsCeiling => "an overwrite skips the ceiling",
            Self::OverwriteSkipsCap => "an overwrite skips the session cap",
            Self::SweepOnFixedPeriod => "the sweeper ticks on a fixed period from startup",
            Self::EqualTimesByWriteOrder => "equal times in eviction go by write order",
            Self::KindRememberedInMemory => "a session's kind is remembered in memory, so after a restart every session is swept on the thread timer",
            Self::EmptyPathNamesTheRoot => "an empty path names the caller's own directory instead of being refused",
            Self::AbsolutePathMadeRelative => "a leading `/` is stripped, so `/etc/notes.md` is written as `etc/notes.md`",
            Self::NulTruncatesThePath => "a path is cut at its first NUL byte, as a C string is, so `notes\\0.md` writes `notes`",
            Self::NonUtf8Replaced => "bytes that are not UTF-8 are replaced with U+FFFD instead of refused",
            Self::LimitsExclusive => "a path exactly at the depth or length limit is refused",
            Self::WriteResolvesLikeARead => "a write of another member's listing path overwrites that member's file",
            Self::RemoveResolvesLikeARead => "a removal of another member's listing path removes that member's file",
            Self::EntryCreationKeepsDirTime => "creating a directory does not move the time of the directory it is created in",
            Self::ReadingMakesTheDirectory => "a read or a listing creates the caller's directory in the session, so reading brings back an expired session",
            Self::ContentAsText => "content is stored as text: bytes that are not UTF-8 come back replaced",
            Self::CountsForgottenAtRestart => "the running byte counts start empty at every start instead of being measured from the disk",
            Self::MaxDepthKnobIgnored => "the depth limit is the default 16 whatever the max_depth knob says",
            Self::RefusedWriteLeavesItsDirectories => "a write makes its parent directories before the ceiling refuses it, so a refused write changes the disk",
            Self::WriteRestampsItsDirectories => "every write, an overwrite too, moves the time of every directory from the file up to the session's",
            Self::TimesRoundedToSeconds => "times are stamped in whole seconds, so a timer fires up to a second early",
            Self::EmptySessionTimeFromMembers => "an empty session's time is its newest directory's, a member's included, not its own",
            Self::SessionShapeByPrefix => "any directory starting `t-` or `c-` is taken for a session, so an operator's `t-not-a-session` is swept",
            Self::MissingRootCreated => "a root that does not exist is created",
        }
    }

    /// The rules of SPEC part SP this mutant breaks: each is cited by a scenario that kills it
    /// (`conformance/tests/suites/scenarios.rs` checks both).
    pub fn rules(self) -> &'static [&'static str] {
        match self {
            Self::DirMtimeCounted => &["SP-5.1"],
            Self::EmptyRootIsWorkingDir => &["SP-1.3"],
            Self::RootListsOwnOnly => &["SP-3.3"],
            Self::QuotaPerSession => &["SP-4.1"],
            Self::EvictNewestFirst => &["SP-4.2"],
            Self::EvictByName => &["SP-4.2"],
            Self::EvictAcrossSessions => &["SP-4.2"],
            Self::CeilingEvicts => &["SP-4.1"],
            Self::NoStartupSweep => &["SP-5.5"],
            Self::OneTimerForBothKinds => &["SP-5.2"],
            Self::RawIdentifiersInPaths => &["SP-1.2"],
            Self::OverwriteDoubleCounted => &["SP-4.4"],
            Self::DotDotNormalised => &["SP-2.5"],
            Self::PairingSharedByChannel => &["SP-1.1"],
            Self::EvictionNotNamed => &["SP-4.3"],
            Self::SymlinksFollowed => &["SP-2.7"],
            Self::ForeignDirectorySwept => &["SP-5.4"],
            Self::SessionPathBeforeOwn => &["SP-3.2"],
            Self::EmptySessionKeptForever => &["SP-5.3"],
            Self::OverwriteEvictsItself => &["SP-4.2"],
            Self::LateRefusalEvicts => &["SP-6.2"],
            Self::ListOfAFileIsEmpty => &["SP-3.3"],
            Self::OverwriteSkipsSizeLimit => &["SP-2.8"],
            Self::OverwriteSkipsCeiling => &["SP-4.1"],
            Self::OverwriteSkipsCap => &["SP-4.2"],
            Self::SweepOnFixedPeriod => &["SP-5.5"],
            Self::EqualTimesByWriteOrder => &["SP-4.2"],
            Self::KindRememberedInMemory => &["SP-1.4"],
            Self::EmptyPathNamesTheRoot => &["SP-2.1"],
            Self::AbsolutePathMadeRelative => &["SP-2.2"],
            Self::NulTruncatesThePath => &["SP-2.3"],
            Self::NonUtf8Replaced => &["SP-2.4"],
            Self::LimitsExclusive => &["SP-2.6"],
            Self::WriteResolvesLikeARead => &["SP-3.1"],
            Self::RemoveResolvesLikeARead => &["SP-3.4"],
            Self::EntryCreationKeepsDirTime => &["SP-3.5"],
            Self::ReadingMakesTheDirectory => &["SP-3.6"],
            Self::ContentAsText => &["SP-3.7"],
            Self::CountsForgottenAtRestart => &["SP-4.5"],
            Self::MaxDepthKnobIgnored => &["SP-5.6"],
            Self::RefusedWriteLeavesItsDirectories => &["SP-6.1"],
            Self::WriteRestampsItsDirectories => &["SP-7.1"],
            Self::TimesRoundedToSeconds => &["SP-7.2"],
            Self::EmptySessionTimeFromMembers => &["SP-7.3"],
            Self::SessionShapeByPrefix => &["SP-5.4"],
            Self::MissingRootCreated => &["SP-1.3"],
        }
    }

    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.id() == id)
    }
}

//! Deliberately broken variants of the scoped profile. Each reproduces a real bug (the source
//! document names several) and must be killed by a named scenario. Off unless a config sets one;
//! the switch is at run time so one build carries every mutant.

/// One broken variant of the scoped reference implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScopedMutant {
    AgeOnlyExpiry,
    ClampingResolution,
    WorkspaceWritableByDefault,
    AppRecordedDeletions,
    TextOutlivesFile,
    DeletionBeforeRecord,
    SkillsSwept,
    ListingOwnScopeOnly,
    WaitsIgnored,
    ScopeGuessed,
    NoneStillReadable,
    PartialBatchMarkedDone,
    EncodedTraversalAccepted,
    SweepUnlocked,
    BackslashAccepted,
    LookalikeDotsAccepted,
    TextKeyUncounted,
    MissingBucketUnavailable,
    StoreDeniedAsPermission,
    ThrottleNotRetried,
    LifecycleMerged,
    KeptClassesExpire,
    ListingByScope,
}

impl ScopedMutant {
    pub const ALL: [ScopedMutant; 23] = [
        ScopedMutant::AgeOnlyExpiry,
        ScopedMutant::ClampingResolution,
        ScopedMutant::WorkspaceWritableByDefault,
        ScopedMutant::AppRecordedDeletions,
        ScopedMutant::TextOutlivesFile,
        ScopedMutant::DeletionBeforeRecord,
        ScopedMutant::SkillsSwept,
        ScopedMutant::ListingOwnScopeOnly,
        ScopedMutant::WaitsIgnored,
        ScopedMutant::ScopeGuessed,
        ScopedMutant::NoneStillReadable,
        ScopedMutant::PartialBatchMarkedDone,
        ScopedMutant::EncodedTraversalAccepted,
        ScopedMutant::SweepUnlocked,
        ScopedMutant::BackslashAccepted,
        ScopedMutant::LookalikeDotsAccepted,
        ScopedMutant::TextKeyUncounted,
        ScopedMutant::MissingBucketUnavailable,
        ScopedMutant::StoreDeniedAsPermission,
        ScopedMutant::ThrottleNotRetried,
        ScopedMutant::LifecycleMerged,
        ScopedMutant::KeptClassesExpire,
        ScopedMutant::ListingByScope,
    ];

    /// Stable kebab-case id, used on the command line and in scenario files.
    pub fn id(self) -> &'static str {
        match self {
            ScopedMutant::AgeOnlyExpiry => "age-only-expiry",
            ScopedMutant::ClampingResolution => "clamping-resolution",
            ScopedMutant::WorkspaceWritableByDefault => "workspace-writable-by-default",
            ScopedMutant::AppRecordedDeletions => "app-recorded-deletions",
            ScopedMutant::TextOutlivesFile => "text-outlives-file",
            ScopedMutant::DeletionBeforeRecord => "deletion-before-record",
            ScopedMutant::SkillsSwept => "skills-swept",
            ScopedMutant::ListingOwnScopeOnly => "listing-own-scope-only",
            ScopedMutant::WaitsIgnored => "waits-ignored",
            ScopedMutant::ScopeGuessed => "scope-guessed",
            ScopedMutant::NoneStillReadable => "none-still-readable",
            ScopedMutant::PartialBatchMarkedDone => "partial-batch-marked-done",
            ScopedMutant::EncodedTraversalAccepted => "encoded-traversal-accepted",
            ScopedMutant::SweepUnlocked => "sweep-unlocked",
            ScopedMutant::BackslashAccepted => "backslash-accepted",
            ScopedMutant::LookalikeDotsAccepted => "lookalike-dots-accepted",
            ScopedMutant::TextKeyUncounted => "text-key-uncounted",
            ScopedMutant::MissingBucketUnavailable => "missing-bucket-unavailable",
            ScopedMutant::StoreDeniedAsPermission => "store-denied-as-permission",
            ScopedMutant::ThrottleNotRetried => "throttle-not-retried",
            ScopedMutant::LifecycleMerged => "lifecycle-merged",
            ScopedMutant::KeptClassesExpire => "kept-classes-expire",
            ScopedMutant::ListingByScope => "listing-by-scope",
        }
    }

    /// One line saying what is broken.
    pub fn description(self) -> &'static str {
        match self {
            ScopedMutant::AgeOnlyExpiry => {
                "session files expire by object age (a lifecycle rule), not session activity: uploads vanish mid-conversation"
            }
            ScopedMutant::ClampingResolution => {
                "`..` is clamped at the scope root instead of refused, so the wrong file is read and success reported"
            }
            ScopedMutant::WorkspaceWritableByDefault => {
                "workspace scope defaults to read/write, so a talked-into agent overwrites shared reference material"
            }
            ScopedMutant::AppRecordedDeletions => {
                "deletions are recorded by application code, not the trigger: a cascade (workspace -> agents -> sessions) is missed"
            }
            ScopedMutant::TextOutlivesFile => {
                "deleting or sweeping a file leaves its extracted text readable"
            }
            ScopedMutant::DeletionBeforeRecord => {
                "the sweep marks an obligation done before deleting its objects; a crash loses the record of a performed deletion"
            }
            ScopedMutant::SkillsSwept => {
                "the session sweep also expires skill versions by age, though versions are immutable and never swept"
            }
            ScopedMutant::ListingOwnScopeOnly => {
                "listing with no prefix shows only the session scope instead of all three"
            }
            ScopedMutant::WaitsIgnored => {
                "the sweep ignores queued, parked and waiting work, sweeping a session that is about to wake"
            }
            ScopedMutant::ScopeGuessed => {
                "a path with no scope is silently put in session scope instead of answered with a correction"
            }
            ScopedMutant::NoneStillReadable => {
                "a scope set to none is still readable (none treated as read-only)"
            }
            ScopedMutant::PartialBatchMarkedDone => {
                "a DeleteObjects answer with per-key errors is treated as success, so undeleted files are marked swept"
            }
            ScopedMutant::EncodedTraversalAccepted => {
                "percent-encoded traversal (%2e%2e) passes the check and is decoded and clamped afterwards"
            }
            ScopedMutant::SweepUnlocked => {
                "the sweep reads its candidates without locking them, so a write racing the sweep is deleted"
            }
            ScopedMutant::BackslashAccepted => {
                "a backslash is refused only beside `..`, so `dir\\notes.md` is stored as a name another layer reads as a path"
            }
            ScopedMutant::LookalikeDotsAccepted => {
                "only ASCII dots make a dot segment, so a segment of fullwidth or leader dots (which NFKC turns into `..`) passes"
            }
            ScopedMutant::TextKeyUncounted => {
                "the key limit counts the file's key but not its text key, so a file near the limit is stored whose text cannot be"
            }
            ScopedMutant::MissingBucketUnavailable => {
                "a missing bucket (NoSuchBucket) is storage_unavailable like any store error, hiding the deployment mistake an operator fixes once"
            }
            ScopedMutant::StoreDeniedAsPermission => {
                "the store's AccessDenied (403) is answered permission_denied, telling the model to ask for access to a scope it already has"
            }
            ScopedMutant::ThrottleNotRetried => {
                "a throttle (503 SlowDown) is reported at once instead of retried, so a store asking for a moment fails the turn"
            }
            ScopedMutant::LifecycleMerged => {
                "applying the lifecycle configuration adds its rules to those on the bucket instead of replacing them, so a raised backstop never takes effect (the shortest expiry wins)"
            }
            ScopedMutant::KeptClassesExpire => {
                "the agents/ and workspaces/ lifecycle rules carry the session backstop's expiration too, so files kept until deletion vanish after a year"
            }
            ScopedMutant::ListingByScope => {
                "a listing with no prefix is each scope's listing one after another, not one listing in path order"
            }
        }
    }

    /// The rules of SPEC part SC this mutant breaks: each is cited by a scenario that kills it
    /// (`conformance/tests/suites/real_tier_scenarios.rs` checks both).
    pub fn rules(self) -> &'static [&'static str] {
        match self {
            ScopedMutant::AgeOnlyExpiry => &["SC-5.3"],
            ScopedMutant::ClampingResolution => &["SC-2.1", "SC-2.2"],
            ScopedMutant::WorkspaceWritableByDefault => &["SC-3.2"],
            ScopedMutant::AppRecordedDeletions => &["SC-6.1"],
            ScopedMutant::TextOutlivesFile => &["SC-1.4", "SC-4.2"],
            ScopedMutant::DeletionBeforeRecord => &["SC-6.3"],
            ScopedMutant::SkillsSwept => &["SC-6.2"],
            ScopedMutant::ListingOwnScopeOnly => &["SC-3.4"],
            ScopedMutant::WaitsIgnored => &["SC-5.2"],
            ScopedMutant::ScopeGuessed => &["SC-2.4"],
            ScopedMutant::NoneStillReadable => &["SC-3.1", "SC-3.4"],
            ScopedMutant::PartialBatchMarkedDone => &["SC-5.5", "SC-6.4"],
            ScopedMutant::EncodedTraversalAccepted => &["SC-2.2"],
            ScopedMutant::SweepUnlocked => &["SC-5.6"],
            ScopedMutant::BackslashAccepted => &["SC-2.2"],
            ScopedMutant::LookalikeDotsAccepted => &["SC-2.2"],
            ScopedMutant::TextKeyUncounted => &["SC-2.3"],
            ScopedMutant::MissingBucketUnavailable => &["SC-8.1", "SC-8.3"],
            ScopedMutant::StoreDeniedAsPermission => &["SC-8.3"],
            ScopedMutant::ThrottleNotRetried => &["SC-8.4"],
            ScopedMutant::LifecycleMerged => &["SC-7.5"],
            ScopedMutant::KeptClassesExpire => &["SC-7.1"],
            ScopedMutant::ListingByScope => &["SC-4.4"],
        }
    }

    pub fn from_id(id: &str) -> Option<ScopedMutant> {
        ScopedMutant::ALL.iter().copied().find(|m| m.id() == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mutant_has_a_unique_kebab_case_id_that_round_trips() {
        let mut seen = std::collections::BTreeSet::new();
        for m in ScopedMutant::ALL {
            assert!(seen.insert(m.id()));
            assert!(m.id().chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            assert_eq!(ScopedMutant::from_id(m.id()), Some(m));
            assert!(!m.description().is_empty());
        }
    }
}

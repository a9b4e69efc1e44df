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
    SessionsUnderTheirAgent,
    DottedIdsAccepted,
    TrailingSlashTrimmed,
    SkillsWritable,
    ListingStringPrefix,
    DeleteNeedsOnlyRead,
    PermissionBeforeShape,
    FileBeforeText,
    RefusalIsActivity,
    RepeatedCreateIsActivity,
    FailedWriteKeepsTheMark,
    BackstopCheckedAgainstDefaultTtl,
    NoWrittenAtStamp,
    FailedWriteReportedWritten,
    WorkspaceDeletionSparesSkills,
    UploadEchoesRawPath,
    PeopleListingRefuses,
    ForeignSessionServed,
    PersonWrongScopeAuthority,
    UrlDecodedTwice,
    UploadNotActivity,
    PersonDeleteNeedsOnlyRead,
    EncodedSlashSplits,
    UploadUnbounded,
    SessionBeforeCredentials,
    DownloadServedInline,
    PathRefusalIsServerError,
    LookalikeScopeAccepted,
    PersonCappedByAgentSettings,
    CountByCreation,
    CountSweepsWaiting,
    PromotionWithoutText,
    PromotionMoves,
    PromotionPastPermissions,
    CountPerWorkspace,
    OverflowOutsideSession,
    PlusAsSpace,
    PersonSkipsUnfinishedSweep,
    CloseIsActivity,
    CloseWaitsForTtl,
    CloseSweepsWaiting,
    RepeatedCloseMovesTime,
    ActivityKeepsClose,
    PolicyDeletesPerSession,
    PolicyMarksBeforeDeleting,
    PolicySweepUnclaimed,
    SweeperDropsBackstop,
    ErasureOverdueClosed,
    ErasureLateStampedOnTime,
    ErasureProofBeforeDeletion,
    ErasureWithoutWriteAhead,
    ErasureProofCountsTheBackstop,
    RecreatedUnderPendingErasure,
    ErasureKeepsTheRows,
    ErasurePastDeadlineAccepted,
    CountRanksEmptiedSessions,
    UnfinishedCountSweepLeft,
    OverflowOverwrites,
    WorkspaceRetentionMerged,
    WorkspaceTtlOnlyShortens,
    WorkspaceTtlAtBackstop,
    WorkspaceRuleAtDefault,
    WorkspaceRulesOverBudget,
    WorkspaceRulesById,
    OverflowAtTheLimit,
}

impl ScopedMutant {
    pub const ALL: [ScopedMutant; 88] = [
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
        ScopedMutant::SessionsUnderTheirAgent,
        ScopedMutant::DottedIdsAccepted,
        ScopedMutant::TrailingSlashTrimmed,
        ScopedMutant::SkillsWritable,
        ScopedMutant::ListingStringPrefix,
        ScopedMutant::DeleteNeedsOnlyRead,
        ScopedMutant::PermissionBeforeShape,
        ScopedMutant::FileBeforeText,
        ScopedMutant::RefusalIsActivity,
        ScopedMutant::RepeatedCreateIsActivity,
        ScopedMutant::FailedWriteKeepsTheMark,
        ScopedMutant::BackstopCheckedAgainstDefaultTtl,
        ScopedMutant::NoWrittenAtStamp,
        ScopedMutant::FailedWriteReportedWritten,
        ScopedMutant::WorkspaceDeletionSparesSkills,
        ScopedMutant::UploadEchoesRawPath,
        ScopedMutant::PeopleListingRefuses,
        ScopedMutant::ForeignSessionServed,
        ScopedMutant::PersonWrongScopeAuthority,
        ScopedMutant::UrlDecodedTwice,
        ScopedMutant::UploadNotActivity,
        ScopedMutant::PersonDeleteNeedsOnlyRead,
        ScopedMutant::EncodedSlashSplits,
        ScopedMutant::UploadUnbounded,
        ScopedMutant::SessionBeforeCredentials,
        ScopedMutant::DownloadServedInline,
        ScopedMutant::PathRefusalIsServerError,
        ScopedMutant::LookalikeScopeAccepted,
        ScopedMutant::PersonCappedByAgentSettings,
        ScopedMutant::CountByCreation,
        ScopedMutant::CountSweepsWaiting,
        ScopedMutant::PromotionWithoutText,
        ScopedMutant::PromotionMoves,
        ScopedMutant::PromotionPastPermissions,
        ScopedMutant::CountPerWorkspace,
        ScopedMutant::OverflowOutsideSession,
        ScopedMutant::PlusAsSpace,
        ScopedMutant::PersonSkipsUnfinishedSweep,
        ScopedMutant::CloseIsActivity,
        ScopedMutant::CloseWaitsForTtl,
        ScopedMutant::CloseSweepsWaiting,
        ScopedMutant::RepeatedCloseMovesTime,
        ScopedMutant::ActivityKeepsClose,
        ScopedMutant::PolicyDeletesPerSession,
        ScopedMutant::PolicyMarksBeforeDeleting,
        ScopedMutant::PolicySweepUnclaimed,
        ScopedMutant::SweeperDropsBackstop,
        ScopedMutant::ErasureOverdueClosed,
        ScopedMutant::ErasureLateStampedOnTime,
        ScopedMutant::ErasureProofBeforeDeletion,
        ScopedMutant::ErasureWithoutWriteAhead,
        ScopedMutant::ErasureProofCountsTheBackstop,
        ScopedMutant::RecreatedUnderPendingErasure,
        ScopedMutant::ErasureKeepsTheRows,
        ScopedMutant::ErasurePastDeadlineAccepted,
        ScopedMutant::CountRanksEmptiedSessions,
        ScopedMutant::UnfinishedCountSweepLeft,
        ScopedMutant::OverflowOverwrites,
        ScopedMutant::WorkspaceRetentionMerged,
        ScopedMutant::WorkspaceTtlOnlyShortens,
        ScopedMutant::WorkspaceTtlAtBackstop,
        ScopedMutant::WorkspaceRuleAtDefault,
        ScopedMutant::WorkspaceRulesOverBudget,
        ScopedMutant::WorkspaceRulesById,
        ScopedMutant::OverflowAtTheLimit,
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
            ScopedMutant::SessionsUnderTheirAgent => "sessions-under-their-agent",
            ScopedMutant::DottedIdsAccepted => "dotted-ids-accepted",
            ScopedMutant::TrailingSlashTrimmed => "trailing-slash-trimmed",
            ScopedMutant::SkillsWritable => "skills-writable",
            ScopedMutant::ListingStringPrefix => "listing-string-prefix",
            ScopedMutant::DeleteNeedsOnlyRead => "delete-needs-only-read",
            ScopedMutant::PermissionBeforeShape => "permission-before-shape",
            ScopedMutant::FileBeforeText => "file-before-text",
            ScopedMutant::RefusalIsActivity => "refusal-is-activity",
            ScopedMutant::RepeatedCreateIsActivity => "repeated-create-is-activity",
            ScopedMutant::FailedWriteKeepsTheMark => "failed-write-keeps-the-mark",
            ScopedMutant::BackstopCheckedAgainstDefaultTtl => {
                "backstop-checked-against-default-ttl"
            }
            ScopedMutant::NoWrittenAtStamp => "no-written-at-stamp",
            ScopedMutant::FailedWriteReportedWritten => "failed-write-reported-written",
            ScopedMutant::WorkspaceDeletionSparesSkills => "workspace-deletion-spares-skills",
            ScopedMutant::UploadEchoesRawPath => "upload-echoes-raw-path",
            ScopedMutant::PeopleListingRefuses => "people-listing-refuses",
            ScopedMutant::ForeignSessionServed => "foreign-session-served",
            ScopedMutant::PersonWrongScopeAuthority => "person-wrong-scope-authority",
            ScopedMutant::UrlDecodedTwice => "url-decoded-twice",
            ScopedMutant::UploadNotActivity => "upload-not-activity",
            ScopedMutant::PersonDeleteNeedsOnlyRead => "person-delete-needs-only-read",
            ScopedMutant::EncodedSlashSplits => "encoded-slash-splits",
            ScopedMutant::UploadUnbounded => "upload-unbounded",
            ScopedMutant::SessionBeforeCredentials => "session-before-credentials",
            ScopedMutant::DownloadServedInline => "download-served-inline",
            ScopedMutant::PathRefusalIsServerError => "path-refusal-is-server-error",
            ScopedMutant::LookalikeScopeAccepted => "lookalike-scope-accepted",
            ScopedMutant::PersonCappedByAgentSettings => "person-capped-by-agent-settings",
            ScopedMutant::CountByCreation => "count-by-creation",
            ScopedMutant::CountSweepsWaiting => "count-sweeps-waiting",
            ScopedMutant::PromotionWithoutText => "promotion-without-text",
            ScopedMutant::PromotionMoves => "promotion-moves",
            ScopedMutant::PromotionPastPermissions => "promotion-past-permissions",
            ScopedMutant::CountPerWorkspace => "count-per-workspace",
            ScopedMutant::OverflowOutsideSession => "overflow-outside-session",
            ScopedMutant::PlusAsSpace => "plus-as-space",
            ScopedMutant::PersonSkipsUnfinishedSweep => "person-skips-unfinished-sweep",
            ScopedMutant::CloseIsActivity => "close-is-activity",
            ScopedMutant::CloseWaitsForTtl => "close-waits-for-ttl",
            ScopedMutant::CloseSweepsWaiting => "close-sweeps-waiting",
            ScopedMutant::RepeatedCloseMovesTime => "repeated-close-moves-time",
            ScopedMutant::ActivityKeepsClose => "activity-keeps-close",
            ScopedMutant::PolicyDeletesPerSession => "policy-deletes-per-session",
            ScopedMutant::PolicyMarksBeforeDeleting => "policy-marks-before-deleting",
            ScopedMutant::PolicySweepUnclaimed => "policy-sweep-unclaimed",
            ScopedMutant::SweeperDropsBackstop => "sweeper-drops-backstop",
            ScopedMutant::ErasureOverdueClosed => "erasure-overdue-closed",
            ScopedMutant::ErasureLateStampedOnTime => "erasure-late-stamped-on-time",
            ScopedMutant::ErasureProofBeforeDeletion => "erasure-proof-before-deletion",
            ScopedMutant::ErasureWithoutWriteAhead => "erasure-without-write-ahead",
            ScopedMutant::ErasureProofCountsTheBackstop => "erasure-proof-counts-the-backstop",
            ScopedMutant::RecreatedUnderPendingErasure => "recreated-under-pending-erasure",
            ScopedMutant::ErasureKeepsTheRows => "erasure-keeps-the-rows",
            ScopedMutant::ErasurePastDeadlineAccepted => "erasure-past-deadline-accepted",
            ScopedMutant::CountRanksEmptiedSessions => "count-ranks-emptied-sessions",
            ScopedMutant::UnfinishedCountSweepLeft => "unfinished-count-sweep-left",
            ScopedMutant::OverflowOverwrites => "overflow-overwrites",
            ScopedMutant::WorkspaceRetentionMerged => "workspace-retention-merged",
            ScopedMutant::WorkspaceTtlOnlyShortens => "workspace-ttl-only-shortens",
            ScopedMutant::WorkspaceTtlAtBackstop => "workspace-ttl-at-backstop",
            ScopedMutant::WorkspaceRuleAtDefault => "workspace-rule-at-default",
            ScopedMutant::WorkspaceRulesOverBudget => "workspace-rules-over-budget",
            ScopedMutant::WorkspaceRulesById => "workspace-rules-by-id",
            ScopedMutant::OverflowAtTheLimit => "overflow-at-the-limit",
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
            ScopedMutant::SessionsUnderTheirAgent => {
                "session files are kept under their agent's prefix (agents/<ws>/<agent>/sessions/<session>/), so no class prefix holds only sessions and no lifecycle rule can tell them apart"
            }
            ScopedMutant::DottedIdsAccepted => {
                "identifiers may contain dots, so a session named `..` or `s.1` reaches a key"
            }
            ScopedMutant::TrailingSlashTrimmed => {
                "a path ending in `/` is written as the name without it instead of refused as a directory"
            }
            ScopedMutant::SkillsWritable => {
                "skill paths are written like any scope's, so a turn overwrites a published, immutable version"
            }
            ScopedMutant::ListingStringPrefix => {
                "a listing passes its prefix to S3 as a string, so `session/reports` also lists `session/reports-old.csv`"
            }
            ScopedMutant::DeleteNeedsOnlyRead => {
                "a deletion is checked against read access, so a read-only scope's files can be deleted"
            }
            ScopedMutant::PermissionBeforeShape => {
                "permission is checked on a path's first segment before its shape, so `workspace/../session/x` is answered permission_denied"
            }
            ScopedMutant::FileBeforeText => {
                "a write stores the file before its extracted text, so a crash between them leaves a file without its text listed"
            }
            ScopedMutant::RefusalIsActivity => {
                "a refused operation still counts as the session's activity, so a guest probing missing files keeps an idle session alive"
            }
            ScopedMutant::RepeatedCreateIsActivity => {
                "creating a session that exists counts as activity, so a host repeating its create keeps an idle session alive"
            }
            ScopedMutant::FailedWriteKeepsTheMark => {
                "a write that fails after storing its text leaves the session marked swept, so its orphaned text is never swept"
            }
            ScopedMutant::BackstopCheckedAgainstDefaultTtl => {
                "the session backstop is checked against the default 30-day TTL, not the deployment's, so a valid configuration is refused"
            }
            ScopedMutant::NoWrittenAtStamp => {
                "objects carry no written-at stamp, so an age-only rule ages them by the store's clock, not the deployment's"
            }
            ScopedMutant::FailedWriteReportedWritten => {
                "a write whose file PUT failed after its text was stored is answered written"
            }
            ScopedMutant::WorkspaceDeletionSparesSkills => {
                "a deleted workspace's skill versions are left in place (immutable read as immortal), though the obligation is recorded met"
            }
            ScopedMutant::UploadEchoesRawPath => {
                "an upload through the people's API answers the path as the URL spelled it (`session/my%20notes.md`), while the file is stored, and listed to the agent, under its decoded name"
            }
            ScopedMutant::PeopleListingRefuses => {
                "a person's listing is refused permission_denied when one scope is unreadable to them, instead of leaving that scope out"
            }
            ScopedMutant::ForeignSessionServed => {
                "the people's API looks a session up by its id alone, so a person of another workspace reads and writes its files"
            }
            ScopedMutant::PersonWrongScopeAuthority => {
                "a person's workspace-scope request is checked against their agent-files authority, the wrong scope's"
            }
            ScopedMutant::UrlDecodedTwice => {
                "the people's API percent-decodes the path twice (the router, then the handler), so `50%2541.md` is stored as `50A.md`"
            }
            ScopedMutant::UploadNotActivity => {
                "a person's upload is not recorded as session activity, so an upload to a long-idle session is swept before the agent reads it"
            }
            ScopedMutant::PersonDeleteNeedsOnlyRead => {
                "a person's removal through the API is allowed with read access to the scope"
            }
            ScopedMutant::EncodedSlashSplits => {
                "the people's API takes a decoded `%2F` as a separator, so `a%2Fb.md` is stored as `a/b.md`, a file in a folder nobody named"
            }
            ScopedMutant::UploadUnbounded => {
                "the people's API stores an upload of any size, past max_upload_bytes"
            }
            ScopedMutant::SessionBeforeCredentials => {
                "the people's API looks the session up before the credentials, so an anonymous request learns which sessions exist (unknown_entity rather than unauthenticated)"
            }
            ScopedMutant::DownloadServedInline => {
                "a download is served without Content-Disposition: attachment and nosniff, so an uploaded HTML file runs as the application's page"
            }
            ScopedMutant::PathRefusalIsServerError => {
                "a path the API refuses for its shape is answered 500, which a client retries, instead of 400"
            }
            ScopedMutant::LookalikeScopeAccepted => {
                "the people's API reads the scope segment case-insensitively, so `Session/x.md` is written as session scope's `x.md`"
            }
            ScopedMutant::PersonCappedByAgentSettings => {
                "a person's access is capped by the agent's settings cascade, so nobody can upload reference material to workspace scope, read-only to agents by default"
            }
            ScopedMutant::CountByCreation => {
                "a count policy keeps the sessions created last, not the ones active last: the conversation a person is in loses its files because it started first"
            }
            ScopedMutant::CountSweepsWaiting => {
                "a count policy sweeps a session past the count although work waits in it: the conversation resumes without its files"
            }
            ScopedMutant::PromotionWithoutText => {
                "a promoted file is copied without its extracted text: the promoted file reads as having none"
            }
            ScopedMutant::PromotionMoves => {
                "promotion moves the file: the session file the conversation is reading is gone"
            }
            ScopedMutant::PromotionPastPermissions => {
                "promotion writes the destination without checking its scope's access: a read-only workspace file is overwritten"
            }
            ScopedMutant::CountPerWorkspace => {
                "an agent's count policy ranks every session of its workspace: another agent's conversation is swept by it"
            }
            ScopedMutant::OverflowOutsideSession => {
                "a tool result too large to show is written under agent scope: it outlives its conversation"
            }
            ScopedMutant::PlusAsSpace => {
                "the people's API reads a `+` in a path as a space (the rule of HTML forms), so `a+b.md` is stored as `a b.md`, a name the person never typed"
            }
            ScopedMutant::PersonSkipsUnfinishedSweep => {
                "a person's request to a session whose sweep was interrupted is served from what the sweep left: a download returns a file the sweep found expired"
            }
            ScopedMutant::CloseIsActivity => {
                "closing a session counts as its activity, so an idle session closed shortly before its TTL keeps its files a TTL past the close"
            }
            ScopedMutant::CloseWaitsForTtl => {
                "a closed session is swept at the later of its close grace and its idle TTL, not the earlier: a closed conversation's files stay until its TTL, and a session idle past its TTL waits for its grace"
            }
            ScopedMutant::CloseSweepsWaiting => {
                "a closed session is swept at the end of its grace although work waits in it: the conversation resumes without its files"
            }
            ScopedMutant::RepeatedCloseMovesTime => {
                "closing a closed session moves its close time to the latest close, so a host repeating its close keeps the files past their week"
            }
            ScopedMutant::ActivityKeepsClose => {
                "activity in a closed session leaves the close in place, so a conversation resumed after its close loses its files a week after the old close"
            }
            ScopedMutant::PolicyDeletesPerSession => {
                "the policy sweep sends one DeleteObjects per session instead of batching its sessions' keys by 1,000 across sessions"
            }
            ScopedMutant::PolicyMarksBeforeDeleting => {
                "the policy sweep marks its sessions swept and commits before deleting their files, so a failed deletion is recorded as done with the files still in the bucket"
            }
            ScopedMutant::PolicySweepUnclaimed => {
                "the policy sweep reads the closed sessions it sweeps without claiming their rows, so two sweeps at once both delete and both record the same session"
            }
            ScopedMutant::SweeperDropsBackstop => {
                "with a retention policy at work, the policy sweep removes the bucket's lifecycle rules as if the sweeper made them redundant: the backstop is gone the day the sweeper stops"
            }
            ScopedMutant::ErasureOverdueClosed => {
                "an erasure whose keys keep failing is closed once its deadline has passed: the obligation reads done with the customer's files still in the bucket"
            }
            ScopedMutant::ErasureLateStampedOnTime => {
                "an erasure met after its deadline is stamped met at the deadline: the breach reads as met in time"
            }
            ScopedMutant::ErasureProofBeforeDeletion => {
                "an erasure's keys are recorded deleted when they are written down, before DeleteObjects: a key that failed to delete is in the proof"
            }
            ScopedMutant::ErasureWithoutWriteAhead => {
                "an erasure's keys are not written down before they are deleted: after a crash between deleting and recording, the next sweep finds an empty bucket and meets the obligation with a proof naming nothing"
            }
            ScopedMutant::ErasureProofCountsTheBackstop => {
                "an erasure's keys are written down when it is requested and each is recorded deleted once it is gone, whoever removed it: the proof counts the files the lifecycle backstop took"
            }
            ScopedMutant::RecreatedUnderPendingErasure => {
                "a workspace or agent under a pending erasure can be created again: its new files are deleted by the old erasure"
            }
            ScopedMutant::ErasureKeepsTheRows => {
                "an erasure deletes the subject's files but not its rows: a turn in the erased agent still writes"
            }
            ScopedMutant::ErasurePastDeadlineAccepted => {
                "an erasure whose deadline is already past is accepted: an obligation born overdue, the customer's data erased on no one's schedule"
            }
            ScopedMutant::CountRanksEmptiedSessions => {
                "a count ranks the sessions a sweep already emptied among an agent's last N: an emptied session takes the place of a conversation the policy keeps, and that conversation loses its files"
            }
            ScopedMutant::UnfinishedCountSweepLeft => {
                "a session a count swept only in part is finished only by the idle sweep, past its TTL: once it is among the last N again (a newer session deleted, the count removed) the files the count found expired stay"
            }
            ScopedMutant::OverflowOverwrites => {
                "a tool result is written at the path its content's hash names, whatever holds it: the same result overflowing again overwrites the guest's edit of that file"
            }
            ScopedMutant::WorkspaceRetentionMerged => {
                "a workspace's retention PUT is merged into the old one: a PUT leaving the TTL unset keeps the TTL the host took away"
            }
            ScopedMutant::WorkspaceTtlOnlyShortens => {
                "a workspace's TTL longer than the deployment's is clamped to it: the workspace's conversations lose their files before the retention it set"
            }
            ScopedMutant::WorkspaceTtlAtBackstop => {
                "a workspace's TTL equal to the bucket's session backstop is accepted: the backstop deletes files the workspace keeps"
            }
            ScopedMutant::WorkspaceRuleAtDefault => {
                "every workspace with a retention gets a lifecycle rule, one at or above the deployment's TTL too: the 1,000-rule budget is spent on rules that change nothing"
            }
            ScopedMutant::WorkspaceRulesOverBudget => {
                "a lifecycle rule for every shorter workspace, past the bucket's budget: the configuration is refused and the bucket keeps no new rule at all"
            }
            ScopedMutant::WorkspaceRulesById => {
                "the budget's workspace rules go to the first workspaces by id, not the shortest TTLs: a workspace with the longest gap to the backstop is left without its rule"
            }
            ScopedMutant::OverflowAtTheLimit => {
                "a tool result exactly at tool_output_limit_bytes is written to a file instead of shown (the limit compared with < where at or under is shown): the model is sent to read a file for output it could have seen"
            }
        }
    }

    /// The rules of SPEC parts SC and SF this mutant breaks: each is cited by a scenario that kills it
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
            ScopedMutant::EncodedTraversalAccepted => &["SC-2.2", "SF-3.3"],
            ScopedMutant::SweepUnlocked => &["SC-5.6"],
            ScopedMutant::BackslashAccepted => &["SC-2.2", "SF-3.3"],
            ScopedMutant::LookalikeDotsAccepted => &["SC-2.2"],
            ScopedMutant::TextKeyUncounted => &["SC-2.3"],
            ScopedMutant::MissingBucketUnavailable => &["SC-8.1", "SC-8.3"],
            ScopedMutant::StoreDeniedAsPermission => &["SC-8.3"],
            ScopedMutant::ThrottleNotRetried => &["SC-8.4"],
            ScopedMutant::LifecycleMerged => &["SC-7.5"],
            ScopedMutant::KeptClassesExpire => &["SC-7.1"],
            ScopedMutant::ListingByScope => &["SC-4.4"],
            ScopedMutant::SessionsUnderTheirAgent => &["SC-1.1"],
            ScopedMutant::DottedIdsAccepted => &["SC-1.3"],
            ScopedMutant::TrailingSlashTrimmed => &["SC-2.5"],
            ScopedMutant::SkillsWritable => &["SC-2.6"],
            ScopedMutant::ListingStringPrefix => &["SC-2.7"],
            ScopedMutant::DeleteNeedsOnlyRead => &["SC-3.3"],
            ScopedMutant::PermissionBeforeShape => &["SC-3.5", "SF-2.5"],
            ScopedMutant::FileBeforeText => &["SC-4.1"],
            ScopedMutant::RefusalIsActivity => &["SC-4.3"],
            ScopedMutant::RepeatedCreateIsActivity => &["SC-5.1"],
            ScopedMutant::FailedWriteKeepsTheMark => &["SC-5.4"],
            ScopedMutant::BackstopCheckedAgainstDefaultTtl => &["SC-7.2"],
            ScopedMutant::NoWrittenAtStamp => &["SC-7.4"],
            ScopedMutant::FailedWriteReportedWritten => &["SC-8.2"],
            ScopedMutant::WorkspaceDeletionSparesSkills => &["SC-6.2"],
            ScopedMutant::UploadEchoesRawPath => &["SF-1.3"],
            ScopedMutant::PeopleListingRefuses => &["SF-2.6"],
            ScopedMutant::ForeignSessionServed => &["SF-2.2"],
            ScopedMutant::PersonWrongScopeAuthority => &["SF-2.3", "SF-2.7"],
            ScopedMutant::UrlDecodedTwice => &["SF-3.1"],
            ScopedMutant::UploadNotActivity => &["SF-4.2"],
            ScopedMutant::PersonDeleteNeedsOnlyRead => &["SF-4.4"],
            ScopedMutant::EncodedSlashSplits => &["SF-3.2"],
            ScopedMutant::UploadUnbounded => &["SF-4.3"],
            ScopedMutant::SessionBeforeCredentials => &["SF-2.1"],
            ScopedMutant::DownloadServedInline => &["SF-1.4"],
            ScopedMutant::PathRefusalIsServerError => &["SF-1.5"],
            ScopedMutant::LookalikeScopeAccepted => &["SF-1.1"],
            ScopedMutant::PersonCappedByAgentSettings => &["SF-2.4"],
            ScopedMutant::CountByCreation => &["SL-2.2"],
            ScopedMutant::CountSweepsWaiting => &["SL-2.3"],
            ScopedMutant::PromotionWithoutText => &["SL-6.3"],
            ScopedMutant::PromotionMoves => &["SL-6.1"],
            ScopedMutant::PromotionPastPermissions => &["SL-6.2"],
            ScopedMutant::CountPerWorkspace => &["SL-2.1"],
            ScopedMutant::OverflowOutsideSession => &["SL-7.2"],
            ScopedMutant::PlusAsSpace => &["SF-3.1"],
            ScopedMutant::PersonSkipsUnfinishedSweep => &["SF-4.1"],
            ScopedMutant::CloseIsActivity => &["SL-3.1"],
            ScopedMutant::CloseWaitsForTtl => &["SL-3.1"],
            ScopedMutant::CloseSweepsWaiting => &["SL-3.1"],
            ScopedMutant::RepeatedCloseMovesTime => &["SL-3.2"],
            ScopedMutant::ActivityKeepsClose => &["SL-3.2"],
            ScopedMutant::PolicyDeletesPerSession => &["SL-1.2"],
            ScopedMutant::PolicyMarksBeforeDeleting => &["SL-1.2"],
            ScopedMutant::PolicySweepUnclaimed => &["SL-1.3"],
            ScopedMutant::SweeperDropsBackstop => &["SL-1.1"],
            ScopedMutant::ErasureOverdueClosed => &["SL-4.2", "SL-4.4"],
            ScopedMutant::ErasureLateStampedOnTime => &["SL-4.4"],
            ScopedMutant::ErasureProofBeforeDeletion => &["SL-4.3"],
            ScopedMutant::ErasureWithoutWriteAhead => &["SL-4.3"],
            ScopedMutant::ErasureProofCountsTheBackstop => &["SL-4.5"],
            ScopedMutant::RecreatedUnderPendingErasure => &["SL-4.6"],
            ScopedMutant::ErasureKeepsTheRows => &["SL-4.1", "SL-4.6"],
            ScopedMutant::ErasurePastDeadlineAccepted => &["SL-1.4"],
            ScopedMutant::CountRanksEmptiedSessions => &["SL-2.1"],
            ScopedMutant::UnfinishedCountSweepLeft => &["SL-2.4"],
            ScopedMutant::OverflowOverwrites => &["SL-7.1"],
            ScopedMutant::WorkspaceRetentionMerged => &["SL-5.1"],
            ScopedMutant::WorkspaceTtlOnlyShortens => &["SL-5.1"],
            ScopedMutant::WorkspaceTtlAtBackstop => &["SL-5.2"],
            ScopedMutant::WorkspaceRuleAtDefault => &["SL-5.3"],
            ScopedMutant::WorkspaceRulesOverBudget => &["SL-5.4"],
            ScopedMutant::WorkspaceRulesById => &["SL-5.4"],
            ScopedMutant::OverflowAtTheLimit => &["SL-7.1"],
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

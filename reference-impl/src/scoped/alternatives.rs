//! The choices SPEC.md part SC leaves to an implementation (its variants), where this store can
//! take the other one. The defaults are what it ships with; each alternative is another correct
//! store, so the conformance suite can show it judges every variant's behaviour, not only the
//! default's (`tidemark run --profile scoped --variant ...`).
//!
//! Unlike a mutant, an alternative is not a bug: an implementation that declares it is judged by
//! it. A mutant whose behaviour matches an alternative (`listing-by-scope`,
//! `throttle-not-retried`) is a bug only because the implementation declared the default.

/// The non-default choice of one variant (SPEC.md's table names them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Alternative {
    /// `empty_and_dot_segments=tidied`: empty and `.` segments of a guest path are dropped
    /// rather than refused (SC-2.3).
    SegmentsTidied,
    /// `unknown_skill_writes=read_only`: a write or delete through a slug the turn's table
    /// lacks is `read_only`, not `unknown_skill` (SC-2.6).
    SkillWritesReadOnly,
    /// `empty_skill_versions=published`: a skill version with no files is published (SC-2.6).
    EmptySkillVersionsPublished,
    /// `bare_skill_listings=every_skill`: `list skill` lists the files of every skill in the
    /// turn's table (SC-2.7).
    BareSkillListsEverySkill,
    /// `file_prefix_listings=the_file`: a listing whose prefix names a file lists that file
    /// (SC-2.7).
    FilePrefixListsTheFile,
    /// `path_check_order=session_first`: the turn's session row is looked up before the path's
    /// shape, so a malformed path in a session that is gone is `unknown_entity` (SC-3.5).
    SessionBeforeShape,
    /// `listing_order=any`: a listing's scopes one after another (session, agent, workspace),
    /// each in the store's order (SC-4.4).
    ListingsByScope,
    /// `throttles=reported`: a 503 from the store fails the operation at once (SC-8.4).
    ThrottlesReported,
    /// `server_errors=retried`: a 5xx from the store is retried as a throttle is (SC-8.4).
    ServerErrorsRetried,
}

impl Alternative {
    pub const ALL: &'static [Alternative] = &[
        Alternative::SegmentsTidied,
        Alternative::SkillWritesReadOnly,
        Alternative::EmptySkillVersionsPublished,
        Alternative::BareSkillListsEverySkill,
        Alternative::FilePrefixListsTheFile,
        Alternative::SessionBeforeShape,
        Alternative::ListingsByScope,
        Alternative::ThrottlesReported,
        Alternative::ServerErrorsRetried,
    ];
}

//! Typed errors of the scoped profile. Every refusal names what was refused and, where the
//! guest can fix it on its own, how.

use super::permissions::{Access, Scope};

/// A guest path or identifier that cannot be resolved. Resolution never clamps: it refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("empty path {path:?}: name a file such as session/notes.md")]
    Empty { path: String },
    #[error("path {path:?} has no scope; did you mean one of {corrections:?}?")]
    MissingScope {
        path: String,
        /// The same path under session, agent and workspace, in that order.
        corrections: Vec<String>,
    },
    #[error("unknown scope {scope:?} in {path:?}; did you mean one of {corrections:?}?")]
    UnknownScope {
        scope: String,
        path: String,
        corrections: Vec<String>,
    },
    #[error(
        "path {path:?} climbs out of its scope ({spelling}); traversal is refused, never clamped"
    )]
    Traversal {
        path: String,
        spelling: &'static str,
    },
    #[error("path {path:?} is absolute; paths start with a scope such as session/")]
    Absolute { path: String },
    #[error("path {path:?} has an empty segment (//)")]
    EmptySegment { path: String },
    #[error("path {path:?} names a directory (ends in /); name a file")]
    DirectoryPath { path: String },
    #[error("path {path:?} contains control character U+{codepoint:04X}")]
    ControlCharacter { path: String, codepoint: u32 },
    #[error(
        "path {path:?} has whitespace at the start or end of a segment; name the file without it"
    )]
    SurroundingWhitespace { path: String },
    #[error("path {path:?} resolves to a {bytes}-byte key; the limit is {max} bytes")]
    KeyTooLong {
        path: String,
        bytes: usize,
        max: usize,
    },
    #[error("path {path:?} names a reserved directory")]
    Reserved { path: String },
    #[error("no skill {slug:?} in this turn's skill table ({path:?})")]
    UnknownSkill { slug: String, path: String },
    #[error("identifier {id:?} must be 1-64 characters of A-Z a-z 0-9 - _")]
    InvalidId { id: String },
}

/// Everything a scoped-store operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ScopedError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("{scope} scope is {granted:?} for this agent; {needed:?} is needed")]
    PermissionDenied {
        scope: Scope,
        granted: Access,
        needed: Access,
    },
    #[error("no such file {path:?}")]
    NotFound { path: String },
    #[error("skill files are read-only ({path:?})")]
    ReadOnly { path: String },
    #[error("bucket {bucket:?} does not exist")]
    NoSuchBucket { bucket: String },
    #[error("object store failed during {operation}: {message}")]
    Storage {
        operation: &'static str,
        message: String,
    },
    #[error("database failed during {operation}: {source}")]
    Database {
        operation: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error("no such {kind} {id:?}")]
    UnknownEntity { kind: &'static str, id: String },
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A retention policy that would change nothing true (SPEC SL-1.4).
    #[error("invalid policy: {0}")]
    InvalidPolicy(String),
    /// The subject of a pending erasure obligation created again (SPEC SL-4.6).
    #[error("an erasure of {0} is pending")]
    ErasurePending(String),
    /// A crash injected at a named point (harness only): the process "dies" there, and a new
    /// store built from what was persisted must pick up the work.
    #[error("crashed at injected point {0:?}")]
    Crashed(CrashPoint),
}

impl ScopedError {
    pub(crate) fn db(operation: &'static str) -> impl FnOnce(sqlx::Error) -> ScopedError {
        move |source| ScopedError::Database { operation, source }
    }

    /// A stable snake_case reason code (SPEC SC-8), for scenario expectations.
    pub fn kind(&self) -> &'static str {
        match self {
            ScopedError::Path(p) => match p {
                PathError::Empty { .. } => "empty_path",
                PathError::MissingScope { .. } => "missing_scope",
                PathError::UnknownScope { .. } => "unknown_scope",
                PathError::Traversal { .. } => "traversal",
                PathError::Absolute { .. } => "absolute_path",
                PathError::EmptySegment { .. } => "empty_segment",
                PathError::DirectoryPath { .. } => "directory_path",
                PathError::ControlCharacter { .. } => "control_character",
                PathError::SurroundingWhitespace { .. } => "surrounding_whitespace",
                PathError::KeyTooLong { .. } => "key_too_long",
                PathError::Reserved { .. } => "reserved_path",
                PathError::UnknownSkill { .. } => "unknown_skill",
                PathError::InvalidId { .. } => "invalid_id",
            },
            ScopedError::PermissionDenied { .. } => "permission_denied",
            ScopedError::NotFound { .. } => "not_found",
            ScopedError::ReadOnly { .. } => "read_only",
            ScopedError::NoSuchBucket { .. } => "no_such_bucket",
            ScopedError::Storage { .. } => "storage_unavailable",
            ScopedError::Database { .. } => "database_unavailable",
            ScopedError::UnknownEntity { .. } => "unknown_entity",
            ScopedError::Config(_) => "config",
            ScopedError::InvalidPolicy(_) => "invalid_policy",
            ScopedError::ErasurePending(_) => "erasure_pending",
            ScopedError::Crashed(_) => "crashed",
        }
    }
}

/// A point at which the harness can make the process "die". The operation returns
/// [`ScopedError::Crashed`] there, abandoning (rolling back) whatever was not yet committed; a
/// new store over the same bucket and database must finish the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CrashPoint {
    /// In a file write: the extracted text is stored, the file not yet.
    AfterTextWritten,
    /// In the session sweep: the objects are deleted, the sessions not yet marked swept.
    AfterSessionObjectsDeleted,
    /// In the deletion sweep: a prefix is emptied, the obligation not yet marked or recorded.
    AfterObligationObjectsDeleted,
}

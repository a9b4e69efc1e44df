//! Everything a rows operation can fail with, each refusal with its stable reason code (SPEC
//! SR-9.1), and the database errors the rules recognise by their SQLSTATE.

/// Everything a rows operation can fail with. Unknown things are typed, never a bare
/// database error, so a caller can tell its own mistake from an outage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowsError {
    #[error("unknown workspace {0:?}")]
    UnknownWorkspace(String),
    #[error("unknown session {0:?}")]
    UnknownSession(String),
    #[error("unknown reply {0}")]
    UnknownReply(i64),
    #[error("unknown snapshot {0}")]
    UnknownSnapshot(i64),
    #[error("unknown action item {0}")]
    UnknownItem(i64),
    /// Only a store taking `unknown_model_drops=refused` answers it (SR-5.1's variant).
    #[error("unknown model {0:?}")]
    UnknownModel(String),
    #[error("unknown event kind {0:?}: {1}")]
    UnknownKind(String, &'static str),
    #[error("reply {id} is {state}; {wanted}")]
    ReplyState {
        id: i64,
        state: &'static str,
        wanted: &'static str,
    },
    #[error("{id:?} already exists")]
    AlreadyExists { id: String },
    #[error("database error during {op}: {message}")]
    Database { op: &'static str, message: String },
}

impl RowsError {
    /// The stable reason code (SPEC SR-9.1).
    pub fn code(&self) -> &'static str {
        match self {
            RowsError::UnknownWorkspace(_) => "unknown_workspace",
            RowsError::UnknownSession(_) => "unknown_session",
            RowsError::UnknownReply(_) => "unknown_reply",
            RowsError::UnknownSnapshot(_) => "unknown_snapshot",
            RowsError::UnknownItem(_) => "unknown_item",
            RowsError::UnknownModel(_) => "unknown_model",
            RowsError::UnknownKind(..) => "unknown_kind",
            RowsError::ReplyState { .. } => "reply_state",
            RowsError::AlreadyExists { .. } => "already_exists",
            RowsError::Database { .. } => "database_unavailable",
        }
    }

    pub(crate) fn db(op: &'static str) -> impl Fn(sqlx::Error) -> RowsError {
        move |e| RowsError::Database {
            op,
            message: e.to_string(),
        }
    }
}

/// The SQLSTATE of a database error, if it is one.
pub(crate) fn sqlstate(e: &sqlx::Error) -> Option<String> {
    e.as_database_error()
        .and_then(|d| d.code())
        .map(|c| c.into_owned())
}
pub(crate) const FOREIGN_KEY_VIOLATION: &str = "23503";
pub(crate) const UNIQUE_VIOLATION: &str = "23505";

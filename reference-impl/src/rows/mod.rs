//! The rows profile (SPEC.md part SR): what each table of an agent service keeps, and the
//! reaper that removes the rest, on PostgreSQL.
//!
//! Each rule lives beside its sweep, and the reaper's tick only calls the sweeps:
//! - [`replies`]: replies, their streamed events, the transcript read, `forget_streamed` (SR-2).
//! - [`expiring`]: tool invocations, trigger firings and the four stores kept until they
//!   expire, each with its own sweep (SR-3, SR-4).
//! - [`catalog`]: catalog snapshots and the models naming them, `forget_old_snapshots` (SR-5).
//! - this file: workspaces, sessions, and the rows kept on purpose (SR-6), which no sweep touches.
//! - [`reaper`]: the tick (SR-7).
//! - [`schema`]: the tables, cascades and the indexes each sweep reads (SR-8).
//!
//! Time is handed in: every operation that records or decides on time takes `now`.

pub mod catalog;
pub mod expiring;
pub mod mutants;
pub mod reaper;
pub mod replies;
pub mod schema;

use sqlx::PgPool;

use crate::clock::Timestamp;

pub use expiring::ExpiringStore;
pub use mutants::RowsMutant;
pub use reaper::{ReapConfig, ReapReport};
pub use replies::{ReplyState, TranscriptReply};

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

/// How a deployment of the rows reference behaves: the correct design unless a mutant is set
/// (conformance's mutant runs switch one on at run time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowsConfig {
    pub mutant: Option<RowsMutant>,
}

/// The rows of one deployment, in the PostgreSQL database it was handed.
#[derive(Clone)]
pub struct RowsStore {
    pool: PgPool,
    config: RowsConfig,
}

impl RowsStore {
    /// Opens the store over `pool`, bringing the schema up first.
    pub async fn open(pool: PgPool) -> Result<RowsStore, RowsError> {
        RowsStore::open_with(pool, RowsConfig::default()).await
    }

    /// [`open`](Self::open) with a configuration (a mutant, for conformance's mutant runs).
    pub async fn open_with(pool: PgPool, config: RowsConfig) -> Result<RowsStore, RowsError> {
        schema::migrate(&pool).await?;
        if config.mutant == Some(RowsMutant::CascadeMissesPrompts) {
            // The mutant's schema forgot the prompts' foreign key, and with it the cascade.
            sqlx::query(
                "ALTER TABLE tidemark_rows.session_prompts
                 DROP CONSTRAINT IF EXISTS session_prompts_session_id_fkey",
            )
            .execute(&pool)
            .await
            .map_err(RowsError::db("migrate"))?;
        }
        Ok(RowsStore { pool, config })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub fn config(&self) -> RowsConfig {
        self.config
    }

    /// Whether mutant `m` is switched on.
    pub(crate) fn mutant(&self, m: RowsMutant) -> bool {
        self.config.mutant == Some(m)
    }

    pub async fn create_workspace(&self, id: &str) -> Result<(), RowsError> {
        sqlx::query("INSERT INTO tidemark_rows.workspaces (id) VALUES ($1)")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| match sqlstate(&e).as_deref() {
                Some(UNIQUE_VIOLATION) => RowsError::AlreadyExists { id: id.into() },
                _ => RowsError::db("create workspace")(e),
            })?;
        Ok(())
    }

    /// A session is a conversation in `workspace`.
    pub async fn create_session(&self, workspace: &str, id: &str) -> Result<(), RowsError> {
        sqlx::query("INSERT INTO tidemark_rows.sessions (id, workspace_id) VALUES ($1, $2)")
            .bind(id)
            .bind(workspace)
            .execute(&self.pool)
            .await
            .map_err(|e| match sqlstate(&e).as_deref() {
                Some(UNIQUE_VIOLATION) => RowsError::AlreadyExists { id: id.into() },
                Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownWorkspace(workspace.into()),
                _ => RowsError::db("create session")(e),
            })?;
        Ok(())
    }

    /// Deletes a session and, by cascade, everything kept with it: its events (streamed or not),
    /// replies, prompts, held requests and tool invocations (SR-2.6, SR-6).
    pub async fn delete_session(&self, id: &str) -> Result<(), RowsError> {
        let done = sqlx::query("DELETE FROM tidemark_rows.sessions WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(RowsError::db("delete session"))?;
        if done.rows_affected() == 0 {
            return Err(RowsError::UnknownSession(id.into()));
        }
        Ok(())
    }

    /// Deletes a workspace, its sessions (and all they keep) and its action items, settled or not.
    pub async fn delete_workspace(&self, id: &str) -> Result<(), RowsError> {
        let done = sqlx::query("DELETE FROM tidemark_rows.workspaces WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(RowsError::db("delete workspace"))?;
        if done.rows_affected() == 0 {
            return Err(RowsError::UnknownWorkspace(id.into()));
        }
        Ok(())
    }

    pub async fn add_session_prompt(&self, session: &str, body: &str) -> Result<i64, RowsError> {
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.session_prompts (session_id, body) VALUES ($1, $2)
             RETURNING id",
        )
        .bind(session)
        .bind(body)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| match sqlstate(&e).as_deref() {
            Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownSession(session.into()),
            _ => RowsError::db("add session prompt")(e),
        })
    }

    /// Opens an action item in `workspace`; it is kept, settled or not, until the workspace goes.
    pub async fn open_item(&self, workspace: &str) -> Result<i64, RowsError> {
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.action_items (workspace_id) VALUES ($1) RETURNING id",
        )
        .bind(workspace)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| match sqlstate(&e).as_deref() {
            Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownWorkspace(workspace.into()),
            _ => RowsError::db("open item")(e),
        })
    }

    /// Settles an item. Settling again keeps the first settlement's time: the record an audit
    /// reads is when it was settled, not when it was last touched.
    pub async fn settle_item(&self, item: i64, now: Timestamp) -> Result<(), RowsError> {
        let done = sqlx::query(
            "UPDATE tidemark_rows.action_items
                SET settled_at_ms = coalesce(settled_at_ms, $2) WHERE id = $1",
        )
        .bind(item)
        .bind(now.as_millis())
        .execute(&self.pool)
        .await
        .map_err(RowsError::db("settle item"))?;
        if done.rows_affected() == 0 {
            return Err(RowsError::UnknownItem(item));
        }
        Ok(())
    }

    /// Holds a request in a session's conversation, optionally for an action item.
    pub async fn hold_request(
        &self,
        session: &str,
        item: Option<i64>,
        now: Timestamp,
    ) -> Result<i64, RowsError> {
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.held_requests (session_id, item_id, held_at_ms)
             VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(session)
        .bind(item)
        .bind(now.as_millis())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| match (sqlstate(&e).as_deref(), item) {
            (Some(FOREIGN_KEY_VIOLATION), Some(i))
                if e.as_database_error().and_then(|d| d.constraint())
                    == Some("held_requests_item_id_fkey") =>
            {
                RowsError::UnknownItem(i)
            }
            (Some(FOREIGN_KEY_VIOLATION), _) => RowsError::UnknownSession(session.into()),
            _ => RowsError::db("hold request")(e),
        })
    }

    /// How many rows `table` (a name in the `tidemark_rows` schema) holds; for tests and the
    /// harness's observation. The name is checked against the schema's tables, never spliced
    /// from input unchecked.
    pub async fn count(&self, table: &str) -> Result<i64, RowsError> {
        if !TABLES.contains(&table) {
            return Err(RowsError::UnknownKind(
                table.into(),
                "not a table of the rows schema",
            ));
        }
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM tidemark_rows.{table}"
        )))
        .fetch_one(&self.pool)
        .await
        .map_err(RowsError::db("count"))
    }
}

/// Every table of the schema, in the order SPEC SR lists them.
pub const TABLES: &[&str] = &[
    "workspaces",
    "sessions",
    "session_prompts",
    "replies",
    "events",
    "tool_invocations",
    "trigger_firings",
    "catalog_snapshots",
    "models",
    "live_sessions",
    "refresh_tokens",
    "webhook_deliveries",
    "breaker_sightings",
    "action_items",
    "held_requests",
];

//! Where the scoped store keeps session activity and deletion obligations: a trait of
//! domain-level operations, so the same [`super::ScopedStore`] runs over PostgreSQL (the real
//! tier) and over an in-memory store with PostgreSQL's semantics (the simulation tier, where
//! sqlx cannot run).
//!
//! - [`postgres`]: the schema of [`super::schema`], the SQL the store always ran, unchanged in
//!   meaning.
//! - [`memory`]: ordered maps, the deletion trigger and its cascade, row locks that make a
//!   second `FOR UPDATE` wait and `SKIP LOCKED` skip, writes buffered until commit. Tokio
//!   primitives only, so it runs inside a turmoil world.
//!
//! The two earn their interchangeability by a differential check (the scoped scenarios give the
//! same outcomes on both, and random operation sequences give the same tables).
//!
//! Isolation is PostgreSQL's READ COMMITTED as the store uses it: each operation sees what was
//! committed when it ran plus its own transaction's writes; a write waits for a row another
//! transaction holds; a non-transactional operation is one statement, committed at once.

pub mod erasure;
pub mod memory;
pub mod postgres;

use async_trait::async_trait;

use super::error::ScopedError;
use super::permissions::ScopeSettings;

pub use erasure::{Creation, ErasureMetadata, ErasureObligation, ErasureProof, ErasureTx};
pub use memory::MemoryMetadata;
pub use postgres::PostgresMetadata;

/// A row of `storage_deletions`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeletionObligation {
    pub id: i64,
    pub prefix: String,
    pub entity_kind: String,
    pub entity_id: String,
    pub requested_at_ms: Option<i64>,
    pub done_at_ms: Option<i64>,
}

/// A row of `storage_deletion_records`: the proof an obligation was met.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeletionRecord {
    pub deletion_id: i64,
    pub prefix: String,
    pub objects_deleted: i64,
    pub completed_at_ms: i64,
}

/// The kinds of thing that keep an idle session from being swept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WaitKind {
    Queued,
    Parked,
    Waiting,
}

impl WaitKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WaitKind::Queued => "queued",
            WaitKind::Parked => "parked",
            WaitKind::Waiting => "waiting",
        }
    }
}

/// A session's primary key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey {
    pub workspace: String,
    pub agent: String,
    pub session: String,
}

impl SessionKey {
    pub fn new(workspace: &str, agent: &str, session: &str) -> SessionKey {
        SessionKey {
            workspace: workspace.into(),
            agent: agent.into(),
            session: session.into(),
        }
    }

    /// `sessions/<ws>/<agent>/<session>/`, as the deletion trigger writes it.
    pub fn prefix(&self) -> String {
        format!(
            "sessions/{}/{}/{}/",
            self.workspace, self.agent, self.session
        )
    }
}

/// The two settings layers stored for a session's turn: its workspace's and its agent's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionLayers {
    pub workspace: ScopeSettings,
    pub agent: ScopeSettings,
    /// A sweep deleted some of the session's files and failed on others
    /// (`sweep_unfinished_at_ms` is set): the operation must delete the rest before it counts
    /// as activity (SC-5.5).
    pub sweep_unfinished: bool,
}

/// A row whose deletion the triggers record (with everything its cascade removes).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entity {
    Session(SessionKey),
    Agent { workspace: String, agent: String },
    Workspace(String),
}

/// One of an agent's sessions as a count policy ranks it (SPEC SL-2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionStanding {
    pub key: SessionKey,
    pub last_activity_ms: i64,
    /// When the session was created (only the count-by-creation mutant ranks by it).
    pub created_at_ms: i64,
    /// Its files are swept already (`files_swept_at_ms` is set).
    pub swept: bool,
    /// A sweep is removing its files and failed on some (`sweep_unfinished_at_ms` is set):
    /// expired all the same (SC-5.5), so it holds no place among the N (SPEC SL-2.1).
    pub sweep_unfinished: bool,
    /// Work is queued, parked or waiting in it (SC-5.2).
    pub waiting: bool,
}

/// The metadata store. Operations outside a transaction are single statements, committed at
/// once (each waits, as a PostgreSQL statement would, for a row an open transaction holds).
/// Erasure obligations (SPEC SL-4) are [`ErasureMetadata`]'s.
#[async_trait]
pub trait Metadata: ErasureMetadata + Send + Sync {
    /// Brings the store up to its schema. Idempotent.
    async fn migrate(&self) -> Result<(), ScopedError>;

    /// Opens a transaction. Commit or roll it back; dropping it discards its writes and
    /// releases its locks too (PostgreSQL: when its connection is next used).
    async fn begin(&self) -> Result<Box<dyn MetaTx>, ScopedError>;

    /// Inserts the workspace or replaces its settings.
    async fn upsert_workspace(&self, ws: &str, settings: ScopeSettings) -> Result<(), ScopedError>;

    /// Inserts the agent or replaces its settings; `false` when the workspace does not exist.
    async fn upsert_agent(
        &self,
        ws: &str,
        agent: &str,
        settings: ScopeSettings,
    ) -> Result<bool, ScopedError>;

    /// Inserts a session whose activity starts at `now_ms`; `false` when nothing was inserted
    /// (the agent does not exist, or the session already does).
    async fn insert_session(&self, key: &SessionKey, now_ms: i64) -> Result<bool, ScopedError>;

    async fn session_exists(&self, key: &SessionKey) -> Result<bool, ScopedError>;

    /// Every session whose own id is `session`, in key order, whatever its workspace and
    /// agent: the people's files API names a session by its id alone (SPEC SF-1.1) and keeps
    /// to the caller's workspace itself (SF-2.2).
    async fn sessions_named(&self, session: &str) -> Result<Vec<SessionKey>, ScopedError>;

    /// `files_swept_at_ms = NULL` if set: the next sweep examines the session again (if it is
    /// idle). For objects a failed operation may have left behind in a swept session.
    async fn unmark_swept(&self, key: &SessionKey) -> Result<(), ScopedError>;

    async fn workspace_exists(&self, ws: &str) -> Result<bool, ScopedError>;

    /// Inserts a wait; `false` when nothing was inserted (no such session, or already there).
    async fn insert_wait(
        &self,
        key: &SessionKey,
        kind: WaitKind,
        wait_id: &str,
    ) -> Result<bool, ScopedError>;

    async fn delete_wait(
        &self,
        key: &SessionKey,
        kind: WaitKind,
        wait_id: &str,
    ) -> Result<(), ScopedError>;

    /// Ids of pending obligations, in id order (read without claiming them).
    async fn pending_obligation_ids(&self) -> Result<Vec<i64>, ScopedError>;

    /// Marks a pending obligation done at once and returns its prefix; `None` if it was not
    /// pending. (Only the deletion-before-record mutant does this outside a transaction.)
    async fn mark_done_if_pending(
        &self,
        id: i64,
        now_ms: i64,
    ) -> Result<Option<String>, ScopedError>;

    /// Every `storage_deletions` row, in id order.
    async fn obligations(&self) -> Result<Vec<DeletionObligation>, ScopedError>;

    /// Every `storage_deletion_records` row, in id order.
    async fn records(&self) -> Result<Vec<DeletionRecord>, ScopedError>;

    /// Sets (`Some`) or removes (`None`) an agent's count policy (SPEC SL-2); `false` when the
    /// agent does not exist.
    async fn set_session_count(
        &self,
        ws: &str,
        agent: &str,
        keep_last: Option<i64>,
    ) -> Result<bool, ScopedError>;

    /// Every count policy `(workspace, agent, keep_last)`, in key order.
    async fn session_counts(&self) -> Result<Vec<(String, String, i64)>, ScopedError>;

    /// Sets (`Some(days)`) or removes (`None`) a workspace's own idle TTL (SPEC SL-5.1): the
    /// retention is replaced whole. `false` when the workspace does not exist. The workspace's
    /// deletion removes it (a cascade).
    async fn set_workspace_retention(
        &self,
        ws: &str,
        ttl_days: Option<i64>,
    ) -> Result<bool, ScopedError>;

    /// Every workspace's own idle TTL `(workspace, days)`, in workspace order.
    async fn workspace_retentions(&self) -> Result<Vec<(String, i64)>, ScopedError>;

    /// The session backstop, in days, of the last lifecycle configuration put on the bucket
    /// (SPEC SL-5.2 measures a workspace's TTL against it); `None` before the first.
    async fn applied_session_backstop(&self) -> Result<Option<i64>, ScopedError>;

    /// Remembers the session backstop of the configuration just put on the bucket.
    async fn record_applied_session_backstop(&self, days: i64) -> Result<(), ScopedError>;

    /// Harness probe: how many statements are waiting for a row lock right now. A race test
    /// uses it to see that a write is blocked behind a sweep rather than merely slow.
    async fn lock_waiters(&self) -> Result<u64, ScopedError>;

    /// The PostgreSQL pool underneath, if there is one.
    fn pool(&self) -> Option<&sqlx::PgPool> {
        None
    }
}

/// One open transaction. Erasure obligations (SPEC SL-4) are [`ErasureTx`]'s.
#[async_trait]
pub trait MetaTx: ErasureTx + Send {
    /// `SELECT … FOR UPDATE` of the session row (waiting for another holder), with its
    /// workspace's and agent's settings; `None` when there is no such session.
    async fn lock_session(
        &mut self,
        key: &SessionKey,
    ) -> Result<Option<SessionLayers>, ScopedError>;

    /// Records activity: `last_activity_ms = max(last_activity_ms, now_ms)`, and clears
    /// `files_swept_at_ms`, `sweep_unfinished_at_ms` and `closed_at_ms` (activity reopens a
    /// closed session, SPEC SL-3.2).
    async fn touch(&mut self, key: &SessionKey, now_ms: i64) -> Result<(), ScopedError>;

    /// Sessions not yet swept, idle at `now_ms` for at least their workspace's TTL (its own,
    /// SPEC SL-5.1, else `default_ttl_ms`: `last_activity_ms <= now_ms - ttl`) and (unless
    /// `ignoring_waits`) with no wait, oldest first, at most `limit`. With `claim` they are
    /// locked for this transaction and rows another transaction holds are skipped
    /// (`FOR UPDATE SKIP LOCKED`); without it they are merely read, outside the transaction
    /// (the sweep-unlocked mutant).
    async fn claim_idle_sessions(
        &mut self,
        now_ms: i64,
        default_ttl_ms: i64,
        limit: i64,
        ignoring_waits: bool,
        claim: bool,
    ) -> Result<Vec<SessionKey>, ScopedError>;

    /// The agent's sessions (every agent's of the workspace when `agent` is `None`: the
    /// count-per-workspace mutant) as a count policy ranks them (SPEC SL-2), in key order,
    /// read as committed (and as this transaction wrote them) without locking any: a write to
    /// a session the count keeps never waits for the sweep that ranks it.
    async fn agent_standings(
        &mut self,
        ws: &str,
        agent: Option<&str>,
    ) -> Result<Vec<SessionStanding>, ScopedError>;

    /// Locks those of `keys` that still exist for this transaction, skipping rows another
    /// transaction holds (`FOR UPDATE SKIP LOCKED`: a session being written is passed by), and
    /// answers the ones it took, in key order. The count sweep claims only the sessions past
    /// the count this way, then ranks again under its claims.
    async fn claim_sessions(&mut self, keys: &[SessionKey])
        -> Result<Vec<SessionKey>, ScopedError>;

    /// When the host closed the session (`closed_at_ms`, SPEC SL-3), read in this transaction
    /// (which holds the row, or sees it as committed); `None` for an open session or none.
    async fn closed_at(&mut self, key: &SessionKey) -> Result<Option<i64>, ScopedError>;

    /// `closed_at_ms = closed_at_ms` (waits for the row if another transaction holds it).
    async fn set_closed_at(
        &mut self,
        key: &SessionKey,
        closed_at_ms: Option<i64>,
    ) -> Result<(), ScopedError>;

    /// Closed sessions not yet swept, closed at or before `cutoff_ms`, with no wait (unless
    /// `ignoring_waits`), earliest close first, at most `limit`, as an agent's sessions are
    /// ranked ([`SessionStanding`]). With `claim` they are locked for this transaction and rows
    /// another transaction holds are skipped (`FOR UPDATE SKIP LOCKED`); without it they are
    /// merely read, outside the transaction (the policy-sweep-unclaimed mutant).
    async fn claim_closed_sessions(
        &mut self,
        cutoff_ms: i64,
        limit: i64,
        ignoring_waits: bool,
        claim: bool,
    ) -> Result<Vec<SessionStanding>, ScopedError>;

    /// Sessions a sweep left unfinished (`sweep_unfinished_at_ms` is set), in key order, at
    /// most `limit`, locked for this transaction; rows another transaction holds are skipped
    /// (`FOR UPDATE SKIP LOCKED`). Whatever swept them (the idle TTL or a count), the next
    /// sweep finishes them (SPEC SL-2.4, SL-1.2).
    async fn claim_unfinished_sessions(
        &mut self,
        limit: i64,
    ) -> Result<Vec<SessionKey>, ScopedError>;

    /// `sweep_unfinished_at_ms = now_ms`: a sweep deleted part of the session's files.
    async fn mark_sweep_unfinished(
        &mut self,
        key: &SessionKey,
        now_ms: i64,
    ) -> Result<(), ScopedError>;

    /// `files_swept_at_ms = now_ms` (waits for the row if another transaction holds it).
    async fn mark_swept(&mut self, key: &SessionKey, now_ms: i64) -> Result<(), ScopedError>;

    /// Pending obligations `(id, prefix)` in id order, at most `limit`, locked for this
    /// transaction; rows another transaction holds are skipped.
    async fn claim_obligations(&mut self, limit: i64) -> Result<Vec<(i64, String)>, ScopedError>;

    /// Inserts the proof an obligation was met.
    async fn record_obligation(
        &mut self,
        deletion_id: i64,
        prefix: &str,
        objects_deleted: i64,
        now_ms: i64,
    ) -> Result<(), ScopedError>;

    /// `done_at_ms = now_ms`.
    async fn mark_done(&mut self, id: i64, now_ms: i64) -> Result<(), ScopedError>;

    /// Inserts an obligation from application code (the app-recorded-deletions mutant only;
    /// otherwise the triggers write every obligation).
    async fn record_deletion(
        &mut self,
        prefix: &str,
        entity_kind: &str,
        entity_id: &str,
        now_ms: i64,
    ) -> Result<(), ScopedError>;

    /// Deletes the entity; the cascade removes its children (workspace -> agents -> sessions ->
    /// waits) and, unless `triggers` is off, the triggers record one obligation per removed
    /// session, agent and workspace (a workspace's skills too), stamped `now_ms`. Returns the
    /// rows the statement itself deleted (0 or 1).
    async fn delete_entity(
        &mut self,
        entity: &Entity,
        now_ms: i64,
        triggers: bool,
    ) -> Result<u64, ScopedError>;

    async fn commit(self: Box<Self>) -> Result<(), ScopedError>;

    async fn rollback(self: Box<Self>) -> Result<(), ScopedError>;
}

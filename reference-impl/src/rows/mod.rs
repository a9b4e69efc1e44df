//! The rows profile (SPEC.md part SR): what each table of an agent service keeps, and the
//! reaper that removes the rest, on PostgreSQL or in memory with the same semantics.
//!
//! Each rule lives beside its sweep, and the reaper's tick only calls the sweeps:
//! - [`replies`]: replies, their streamed events, the transcript read, `forget_streamed` (SR-2).
//! - [`expiring`]: tool invocations, trigger firings and the four stores kept until they
//!   expire, each with its own sweep (SR-3, SR-4).
//! - [`catalog`]: catalog snapshots and the models naming them, `forget_old_snapshots` (SR-5).
//! - this file: workspaces, sessions, and the rows kept on purpose (SR-6), which no sweep touches.
//! - [`retention`]: the reaper's tick (SR-7), which calls the sweeps; [`batch`]: the bounded
//!   batches every sweep deletes in, and how (`ReapConfig`).
//! - [`schema`]: the tables, cascades and the indexes each sweep reads (SR-8), and the values
//!   its columns name (the expiring stores, a reply's states).
//! - [`memory`]: the same tables in memory, for [`RowsStore::in_memory`]. Every operation (and
//!   every sweep) has its PostgreSQL statement and its in-memory half side by side in its
//!   rule's file, so a rule reads once and changes in one place.
//!
//! - [`mutants`] and [`alternatives`]: the mutants and the variants' other choices.
//!
//! Time is handed in: every operation that records or decides on time takes `now`.

pub mod alternatives;
pub mod batch;
pub mod catalog;
pub mod config;
pub mod error;
pub mod expiring;
pub(crate) mod memory;
pub mod mutants;
pub mod replies;
pub mod retention;
pub mod schema;

use std::sync::{Arc, Mutex, MutexGuard};

use sqlx::PgPool;

use crate::clock::Timestamp;
use memory::Tables;

pub use alternatives::Alternative;
pub use batch::ReapConfig;
pub use config::RowsConfig;
pub use error::RowsError;
pub(crate) use error::{sqlstate, FOREIGN_KEY_VIOLATION, UNIQUE_VIOLATION};
pub use mutants::RowsMutant;
pub use replies::TranscriptReply;
pub use retention::ReapReport;
pub use schema::{ExpiringStore, ReplyState};

/// Where a store's rows live.
#[derive(Clone)]
pub(crate) enum Backend {
    /// The PostgreSQL database it was handed (the real tier).
    Pg(PgPool),
    /// Ordered maps behind one lock (the simulation tier; see [`memory`]).
    Memory(Arc<Mutex<Tables>>),
}

/// The rows of one deployment, in the PostgreSQL database it was handed or in memory.
#[derive(Clone)]
pub struct RowsStore {
    backend: Backend,
    config: RowsConfig,
    /// The latest `now` a tick was given: read only by [`RowsMutant::ReaperClockNeverGoesBack`],
    /// which sweeps at it rather than at an earlier `now` (the reaper process's memory).
    reaper_clock: Arc<std::sync::atomic::AtomicI64>,
}

impl RowsStore {
    /// Opens the store over `pool`, bringing the schema up first.
    pub async fn open(pool: PgPool) -> Result<RowsStore, RowsError> {
        RowsStore::open_with(pool, RowsConfig::default()).await
    }

    /// [`open`](Self::open) with a configuration (a mutant, for conformance's mutant runs).
    pub async fn open_with(pool: PgPool, config: RowsConfig) -> Result<RowsStore, RowsError> {
        schema::migrate(&pool).await?;
        // The mutants whose schema forgot a foreign key, and with it the cascade (their code
        // checks the parent exists on insert instead, as the key did, so only the cascade is lost).
        let forgotten = match config.mutant {
            Some(RowsMutant::CascadeMissesPrompts) => {
                Some("ALTER TABLE tidemark_rows.session_prompts DROP CONSTRAINT IF EXISTS session_prompts_session_id_fkey")
            }
            Some(RowsMutant::InvocationsOutliveTheirSession) => {
                Some("ALTER TABLE tidemark_rows.tool_invocations DROP CONSTRAINT IF EXISTS tool_invocations_session_id_fkey")
            }
            Some(RowsMutant::ItemsOutliveTheirWorkspace) => {
                Some("ALTER TABLE tidemark_rows.action_items DROP CONSTRAINT IF EXISTS action_items_workspace_id_fkey")
            }
            _ => None,
        };
        if let Some(sql) = forgotten {
            sqlx::query(sql)
                .execute(&pool)
                .await
                .map_err(RowsError::db("migrate"))?;
        }
        Ok(RowsStore {
            backend: Backend::Pg(pool),
            config,
            reaper_clock: Arc::default(),
        })
    }

    /// An empty store in memory with the database's semantics: the same ids, refusals,
    /// cascades and sweeps, for runs with no PostgreSQL (a turmoil world). Clones share it.
    pub fn in_memory(config: RowsConfig) -> RowsStore {
        RowsStore {
            backend: Backend::Memory(Arc::default()),
            config,
            reaper_clock: Arc::default(),
        }
    }

    /// The database pool, on the PostgreSQL backend.
    ///
    /// # Panics
    /// On the in-memory backend, which has none: a caller reading the database directly is a
    /// PostgreSQL-only test (use [`count`](Self::count) and the reads for both).
    pub fn pool(&self) -> &PgPool {
        self.pg_pool()
            .expect("RowsStore::pool on the in-memory backend, which has no database")
    }

    /// The database pool, or `None` in memory.
    pub fn pg_pool(&self) -> Option<&PgPool> {
        match &self.backend {
            Backend::Pg(pool) => Some(pool),
            Backend::Memory(_) => None,
        }
    }

    /// `postgres` or `memory`.
    pub fn tier(&self) -> &'static str {
        match &self.backend {
            Backend::Pg(_) => "postgres",
            Backend::Memory(_) => "memory",
        }
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    pub fn config(&self) -> RowsConfig {
        self.config
    }

    /// Whether mutant `m` is switched on.
    pub(crate) fn mutant(&self, m: RowsMutant) -> bool {
        self.config.mutant == Some(m)
    }

    /// Whether deleting a session deletes its prompts (the mutant's schema lost the foreign
    /// key, and with it both the cascade and the check on insert).
    pub(crate) fn prompts_have_their_key(&self) -> bool {
        !self.mutant(RowsMutant::CascadeMissesPrompts)
    }

    /// Which of the schema's cascades this deployment has (a mutant's schema lost one).
    pub(crate) fn cascade(&self) -> memory::Cascades {
        memory::Cascades {
            prompts: self.prompts_have_their_key(),
            invocations: !self.mutant(RowsMutant::InvocationsOutliveTheirSession),
            items: !self.mutant(RowsMutant::ItemsOutliveTheirWorkspace),
        }
    }

    /// The latest `now` a tick was given, for [`RowsMutant::ReaperClockNeverGoesBack`].
    pub(crate) fn reaper_clock(&self) -> &std::sync::atomic::AtomicI64 {
        &self.reaper_clock
    }

    /// Whether `session` exists: the check a mutant whose schema lost a foreign key to it makes
    /// on insert in place of the key.
    async fn session_exists(&self, pool: &PgPool, session: &str) -> Result<bool, RowsError> {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM tidemark_rows.sessions WHERE id = $1)")
            .bind(session)
            .fetch_one(pool)
            .await
            .map_err(RowsError::db("check session"))
    }

    pub async fn create_workspace(&self, id: &str) -> Result<(), RowsError> {
        let pool = match &self.backend {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                return match lock(m).workspaces.insert(id.into()) {
                    false if !self.mutant(RowsMutant::CreateIsIdempotent) => {
                        Err(RowsError::AlreadyExists { id: id.into() })
                    }
                    _ => Ok(()),
                }
            }
        };
        let sql = if self.mutant(RowsMutant::CreateIsIdempotent) {
            "INSERT INTO tidemark_rows.workspaces (id) VALUES ($1) ON CONFLICT (id) DO NOTHING"
        } else {
            "INSERT INTO tidemark_rows.workspaces (id) VALUES ($1)"
        };
        sqlx::query(sql).bind(id).execute(pool).await.map_err(|e| {
            match sqlstate(&e).as_deref() {
                Some(UNIQUE_VIOLATION) => RowsError::AlreadyExists { id: id.into() },
                _ => RowsError::db("create workspace")(e),
            }
        })?;
        Ok(())
    }

    /// A session is a conversation in `workspace`.
    pub async fn create_session(&self, workspace: &str, id: &str) -> Result<(), RowsError> {
        let pool = match &self.backend {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                // The primary key is checked as the row goes in, the foreign key after.
                if t.sessions.contains_key(id) {
                    if self.mutant(RowsMutant::CreateIsIdempotent) {
                        return Ok(());
                    }
                    return Err(RowsError::AlreadyExists { id: id.into() });
                }
                if !t.workspaces.contains(workspace) {
                    return Err(RowsError::UnknownWorkspace(workspace.into()));
                }
                let session = memory::Session {
                    workspace: workspace.into(),
                };
                t.sessions.insert(id.into(), session);
                return Ok(());
            }
        };
        let sql = if self.mutant(RowsMutant::CreateIsIdempotent) {
            "INSERT INTO tidemark_rows.sessions (id, workspace_id) VALUES ($1, $2)
             ON CONFLICT (id) DO NOTHING"
        } else {
            "INSERT INTO tidemark_rows.sessions (id, workspace_id) VALUES ($1, $2)"
        };
        sqlx::query(sql)
            .bind(id)
            .bind(workspace)
            .execute(pool)
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
        let cascade = self.cascade();
        let deleted = match &self.backend {
            Backend::Memory(m) => {
                let mut t = lock(m);
                if self.mutant(RowsMutant::SessionDeletionTakesItems) && t.sessions.contains_key(id)
                {
                    let items: Vec<i64> = t
                        .held
                        .values()
                        .filter(|h| h.session == id)
                        .filter_map(|h| h.item)
                        .collect();
                    for i in items {
                        t.delete_item(i);
                    }
                }
                t.delete_session(id, &cascade)
            }
            Backend::Pg(pool) => {
                let mut tx = pool
                    .begin()
                    .await
                    .map_err(RowsError::db("delete session"))?;
                if self.mutant(RowsMutant::SessionDeletionTakesItems) {
                    sqlx::query(
                        "DELETE FROM tidemark_rows.action_items WHERE id IN
                           (SELECT item_id FROM tidemark_rows.held_requests WHERE session_id = $1)",
                    )
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(RowsError::db("delete session"))?;
                }
                let gone = sqlx::query("DELETE FROM tidemark_rows.sessions WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(RowsError::db("delete session"))?
                    .rows_affected()
                    > 0;
                tx.commit().await.map_err(RowsError::db("delete session"))?;
                gone
            }
        };
        if !deleted {
            return Err(RowsError::UnknownSession(id.into()));
        }
        Ok(())
    }

    /// Deletes a workspace, its sessions (and all they keep) and its action items, settled or not.
    pub async fn delete_workspace(&self, id: &str) -> Result<(), RowsError> {
        let deleted = match &self.backend {
            Backend::Memory(m) => lock(m).delete_workspace(id, &self.cascade()),
            Backend::Pg(pool) => {
                sqlx::query("DELETE FROM tidemark_rows.workspaces WHERE id = $1")
                    .bind(id)
                    .execute(pool)
                    .await
                    .map_err(RowsError::db("delete workspace"))?
                    .rows_affected()
                    > 0
            }
        };
        if !deleted {
            return Err(RowsError::UnknownWorkspace(id.into()));
        }
        Ok(())
    }

    pub async fn add_session_prompt(&self, session: &str, body: &str) -> Result<i64, RowsError> {
        let pool = match &self.backend {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let id = memory::next(&mut t.seq.prompts);
                if self.prompts_have_their_key() && !t.sessions.contains_key(session) {
                    return Err(RowsError::UnknownSession(session.into()));
                }
                let prompt = memory::Prompt {
                    session: session.into(),
                    body: body.into(),
                };
                t.prompts.insert(id, prompt);
                return Ok(id);
            }
        };
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.session_prompts (session_id, body) VALUES ($1, $2)
             RETURNING id",
        )
        .bind(session)
        .bind(body)
        .fetch_one(pool)
        .await
        .map_err(|e| match sqlstate(&e).as_deref() {
            Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownSession(session.into()),
            _ => RowsError::db("add session prompt")(e),
        })
    }

    /// Opens an action item in `workspace`; it is kept, settled or not, until the workspace goes.
    pub async fn open_item(&self, workspace: &str) -> Result<i64, RowsError> {
        let pool = match &self.backend {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let id = memory::next(&mut t.seq.items);
                if !t.workspaces.contains(workspace) {
                    return Err(RowsError::UnknownWorkspace(workspace.into()));
                }
                let item = memory::Item {
                    workspace: workspace.into(),
                    settled_at_ms: None,
                };
                t.items.insert(id, item);
                return Ok(id);
            }
        };
        if self.mutant(RowsMutant::ItemsOutliveTheirWorkspace) {
            // The key is gone; the mutant checks the workspace as the key did.
            let exists: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM tidemark_rows.workspaces WHERE id = $1)",
            )
            .bind(workspace)
            .fetch_one(pool)
            .await
            .map_err(RowsError::db("open item"))?;
            if !exists {
                // As the key would, after the sequence spent an id.
                sqlx::query("SELECT nextval('tidemark_rows.action_items_id_seq')")
                    .execute(pool)
                    .await
                    .map_err(RowsError::db("open item"))?;
                return Err(RowsError::UnknownWorkspace(workspace.into()));
            }
        }
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.action_items (workspace_id) VALUES ($1) RETURNING id",
        )
        .bind(workspace)
        .fetch_one(pool)
        .await
        .map_err(|e| match sqlstate(&e).as_deref() {
            Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownWorkspace(workspace.into()),
            _ => RowsError::db("open item")(e),
        })
    }

    /// Settles an item. Settling again keeps the first settlement's time: the record an audit
    /// reads is when it was settled, not when it was last touched.
    pub async fn settle_item(&self, item: i64, now: Timestamp) -> Result<(), RowsError> {
        let settled = match &self.backend {
            Backend::Memory(m) => {
                let mut t = lock(m);
                let found = match t.items.get_mut(&item) {
                    Some(i) => {
                        i.settled_at_ms.get_or_insert(now.as_millis());
                        true
                    }
                    None => false,
                };
                if self.mutant(RowsMutant::SettlingReleasesHeldRequests) {
                    t.held.retain(|_, h| h.item != Some(item));
                }
                found
            }
            Backend::Pg(pool) => {
                let mut tx = pool.begin().await.map_err(RowsError::db("settle item"))?;
                let found = sqlx::query(
                    "UPDATE tidemark_rows.action_items
                        SET settled_at_ms = coalesce(settled_at_ms, $2) WHERE id = $1",
                )
                .bind(item)
                .bind(now.as_millis())
                .execute(&mut *tx)
                .await
                .map_err(RowsError::db("settle item"))?
                .rows_affected()
                    > 0;
                if self.mutant(RowsMutant::SettlingReleasesHeldRequests) {
                    sqlx::query("DELETE FROM tidemark_rows.held_requests WHERE item_id = $1")
                        .bind(item)
                        .execute(&mut *tx)
                        .await
                        .map_err(RowsError::db("settle item"))?;
                }
                tx.commit().await.map_err(RowsError::db("settle item"))?;
                found
            }
        };
        if !settled && !self.mutant(RowsMutant::SettlingAnUnknownItemSucceeds) {
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
        let pool = match &self.backend {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let id = memory::next(&mut t.seq.held);
                // PostgreSQL checks the foreign keys in the order the table declares them.
                if !t.sessions.contains_key(session) {
                    return Err(RowsError::UnknownSession(session.into()));
                }
                if let Some(i) = item.filter(|i| !t.items.contains_key(i)) {
                    return Err(RowsError::UnknownItem(i));
                }
                let held = memory::Held {
                    session: session.into(),
                    item,
                    held_at_ms: now.as_millis(),
                };
                t.held.insert(id, held);
                return Ok(id);
            }
        };
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.held_requests (session_id, item_id, held_at_ms)
             VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(session)
        .bind(item)
        .bind(now.as_millis())
        .fetch_one(pool)
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
        let pool = match &self.backend {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => return Ok(lock(m).count(table)),
        };
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM tidemark_rows.{table}"
        )))
        .fetch_one(pool)
        .await
        .map_err(RowsError::db("count"))
    }
}

/// The in-memory tables, for one statement. A panic while the lock was held cannot leave a
/// half-applied statement visible to a caller that goes on (every statement checks before it
/// writes), so a poisoned lock is taken over rather than propagated.
pub(crate) fn lock(m: &Mutex<Tables>) -> MutexGuard<'_, Tables> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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

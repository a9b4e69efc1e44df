//! The metadata store in memory, with the semantics of the PostgreSQL schema the store relies
//! on, for the simulation tier (sqlx cannot run over turmoil's network):
//!
//! - Tables are `BTreeMap`s; every scan is in key order and every answer is sorted as the SQL
//!   sorts it.
//! - The deletion "trigger": deleting a session, agent or workspace records one
//!   `storage_deletions` row per removed row, the cascade included (workspace -> agents ->
//!   sessions -> waits), with the prefixes `schema.rs`'s trigger functions write (a workspace's
//!   skills too). With triggers off (the app-recorded-deletions mutant) nothing is recorded.
//! - Ids come from counters that, like a `bigserial`, advance at insert and are never given
//!   back (a rolled-back insert burns its id).
//! - Row locks: a transaction's write or `FOR UPDATE` takes the row; another transaction (or a
//!   single statement) needing it waits until the holder commits or rolls back, then sees the
//!   row as committed; `SKIP LOCKED` passes it by. A cascade takes every row it removes at
//!   once, so two deleters never hold part of each other's rows.
//! - Writes are buffered in the transaction (which reads its own writes) and applied only on
//!   commit; rollback and drop discard them and release the locks.
//!
//! Waiting uses `tokio::sync::Notify` only; the state's mutex is never held across an await.
//! No threads, no clock: it runs inside a turmoil world as well as on a Tokio runtime.
//!
//! Here: the tables, their locks and the [`Metadata`] operations, each committed at once; a
//! transaction's ([`MetaTx`]) are `memory/tx.rs`'s, erasure's `memory/erasure.rs`'s. They mirror
//! `postgres.rs` and its folder one for one, so each pair is reviewed side by side
//! (`sim/tests/integration/metadata_differential.rs` holds them equal).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tokio::sync::Notify;

use super::{DeletionObligation, DeletionRecord, MetaTx, Metadata, SessionKey, WaitKind};

mod erasure;
mod tx;

use crate::scoped::error::ScopedError;
use crate::scoped::permissions::ScopeSettings;
use tx::{MemTx, View};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SessionRow {
    last_activity_ms: i64,
    files_swept_at_ms: Option<i64>,
    sweep_unfinished_at_ms: Option<i64>,
    created_at_ms: i64,
    /// When the host closed the session (SPEC SL-3); cleared by activity.
    closed_at_ms: Option<i64>,
}

/// `(session, kind, wait_id)`: the primary key of `session_waits`.
type WaitRow = (SessionKey, &'static str, String);

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Tables {
    workspaces: BTreeMap<String, ScopeSettings>,
    agents: BTreeMap<(String, String), ScopeSettings>,
    sessions: BTreeMap<SessionKey, SessionRow>,
    waits: BTreeSet<WaitRow>,
    deletions: BTreeMap<i64, DeletionObligation>,
    records: BTreeMap<i64, DeletionRecord>,
    /// `agent_session_counts`: (workspace, agent) -> keep_last (SPEC SL-2).
    session_counts: BTreeMap<(String, String), i64>,
    /// Erasure obligations and their proofs (SPEC SL-4).
    erasure: erasure::ErasureTables,
    /// `workspace_retention`: workspace -> its own idle TTL in days (SPEC SL-5.1).
    workspace_retention: BTreeMap<String, i64>,
    /// `lifecycle_applied`: the session backstop last put on the bucket (SPEC SL-5.2).
    applied_session_backstop: Option<i64>,
}

/// A lockable row.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum RowKey {
    Workspace(String),
    Agent(String, String),
    Session(SessionKey),
    Wait(WaitRow),
    Deletion(i64),
    /// An erasure obligation (SPEC SL-4), and a key of its proof.
    Erasure(i64),
    ErasureProof(i64, String),
    /// A subject's lock (`<ws>` or `<ws>/<agent>`), held by an erasure's request (SL-4.6).
    Subject(String),
}

/// A transaction's writes, row by row (`None`: deleted), over the committed tables.
#[derive(Debug, Default)]
struct Overlay {
    workspaces: BTreeMap<String, Option<ScopeSettings>>,
    agents: BTreeMap<(String, String), Option<ScopeSettings>>,
    sessions: BTreeMap<SessionKey, Option<SessionRow>>,
    waits: BTreeMap<WaitRow, bool>,
    deletions: BTreeMap<i64, Option<DeletionObligation>>,
    records: BTreeMap<i64, DeletionRecord>,
    /// Count policies removed by a cascade (an agent's deletion).
    session_counts_removed: BTreeSet<(String, String)>,
    erasure: erasure::ErasureOverlay,
}

impl Overlay {
    fn apply(self, t: &mut Tables) {
        fn put<K: Ord, V>(m: &mut BTreeMap<K, V>, k: K, v: Option<V>) {
            match v {
                Some(v) => {
                    m.insert(k, v);
                }
                None => {
                    m.remove(&k);
                }
            }
        }
        for (k, v) in self.workspaces {
            if v.is_none() {
                // The retention goes with its workspace (ON DELETE CASCADE).
                t.workspace_retention.remove(&k);
            }
            put(&mut t.workspaces, k, v);
        }
        for (k, v) in self.agents {
            put(&mut t.agents, k, v);
        }
        for (k, v) in self.sessions {
            put(&mut t.sessions, k, v);
        }
        for (k, present) in self.waits {
            if present {
                t.waits.insert(k);
            } else {
                t.waits.remove(&k);
            }
        }
        for (k, v) in self.deletions {
            put(&mut t.deletions, k, v);
        }
        t.records.extend(self.records);
        for k in self.session_counts_removed {
            t.session_counts.remove(&k);
        }
        self.erasure.apply(&mut t.erasure);
    }
}

#[derive(Debug, Default)]
struct State {
    tables: Tables,
    /// Row -> the transaction holding it.
    locks: BTreeMap<RowKey, u64>,
    next_tx: u64,
    next_deletion_id: i64,
    next_record_id: i64,
    next_erasure_id: i64,
}

impl State {
    fn held_by_other(&self, row: &RowKey, me: Option<u64>) -> bool {
        self.locks.get(row).is_some_and(|h| Some(*h) != me)
    }

    fn release(&mut self, tx: u64) {
        self.locks.retain(|_, h| *h != tx);
    }

    fn deletion_id(&mut self) -> i64 {
        self.next_deletion_id += 1;
        self.next_deletion_id
    }

    fn record_id(&mut self) -> i64 {
        self.next_record_id += 1;
        self.next_record_id
    }
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Notified whenever a transaction ends (its locks are released).
    released: Notify,
    /// Statements currently waiting for a row.
    waiting: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `attempt` under the state's mutex until it does not answer `None` (blocked on a
    /// row another transaction holds), waiting for a transaction to end between attempts.
    async fn until_free<T>(&self, mut attempt: impl FnMut(&mut State) -> Option<T>) -> T {
        loop {
            let notified = self.released.notified();
            tokio::pin!(notified);
            // Registered before looking, so a release between the look and the wait is seen.
            notified.as_mut().enable();
            if let Some(v) = attempt(&mut self.lock()) {
                return v;
            }
            let _waiting = Waiting::new(&self.waiting);
            notified.await;
        }
    }
}

/// Counts a waiting statement for [`Metadata::lock_waiters`], also when its future is dropped.
struct Waiting<'a>(&'a AtomicU64);

impl<'a> Waiting<'a> {
    fn new(c: &'a AtomicU64) -> Waiting<'a> {
        c.fetch_add(1, Ordering::SeqCst);
        Waiting(c)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The in-memory metadata store. Clones share one store (a restarted process sees what the
/// old one committed).
#[derive(Clone, Debug, Default)]
pub struct MemoryMetadata {
    shared: Arc<Shared>,
}

impl MemoryMetadata {
    pub fn new() -> MemoryMetadata {
        MemoryMetadata::default()
    }

    /// Rows currently locked by open transactions (for tests and the world's liveness check).
    pub fn locked_rows(&self) -> usize {
        self.shared.lock().locks.len()
    }

    /// Whether a committed wait holds the session.
    pub fn has_wait(&self, key: &SessionKey) -> bool {
        self.shared.lock().tables.waits.iter().any(|w| &w.0 == key)
    }

    /// Whether the agent's row is committed.
    pub fn agent_row_exists(&self, ws: &str, agent: &str) -> bool {
        self.shared
            .lock()
            .tables
            .agents
            .contains_key(&(ws.to_string(), agent.to_string()))
    }

    /// Whether the workspace's row is committed.
    pub fn workspace_row_exists(&self, ws: &str) -> bool {
        self.shared.lock().tables.workspaces.contains_key(ws)
    }

    /// The sessions and their `(last_activity_ms, files_swept_at_ms)`, committed, in key order.
    pub fn sessions(&self) -> Vec<(SessionKey, i64, Option<i64>)> {
        self.shared
            .lock()
            .tables
            .sessions
            .iter()
            .map(|(k, r)| (k.clone(), r.last_activity_ms, r.files_swept_at_ms))
            .collect()
    }
}

fn wait_row(key: &SessionKey, kind: WaitKind, wait_id: &str) -> WaitRow {
    (key.clone(), kind.as_str(), wait_id.to_string())
}

#[async_trait]
impl Metadata for MemoryMetadata {
    async fn migrate(&self) -> Result<(), ScopedError> {
        Ok(())
    }

    async fn begin(&self) -> Result<Box<dyn MetaTx>, ScopedError> {
        let id = {
            let mut st = self.shared.lock();
            st.next_tx += 1;
            st.next_tx
        };
        Ok(Box::new(MemTx {
            shared: self.shared.clone(),
            id,
            overlay: Overlay::default(),
            open: true,
        }))
    }

    async fn upsert_workspace(&self, ws: &str, settings: ScopeSettings) -> Result<(), ScopedError> {
        let row = RowKey::Workspace(ws.to_string());
        self.shared
            .until_free(|st| {
                if st.held_by_other(&row, None) {
                    return None;
                }
                st.tables.workspaces.insert(ws.to_string(), settings);
                Some(())
            })
            .await;
        Ok(())
    }

    async fn upsert_agent(
        &self,
        ws: &str,
        agent: &str,
        settings: ScopeSettings,
    ) -> Result<bool, ScopedError> {
        // The foreign-key check shares the workspace row: it waits for a deleter holding it.
        let parent = RowKey::Workspace(ws.to_string());
        let row = RowKey::Agent(ws.to_string(), agent.to_string());
        Ok(self
            .shared
            .until_free(|st| {
                if st.held_by_other(&parent, None) || st.held_by_other(&row, None) {
                    return None;
                }
                if !st.tables.workspaces.contains_key(ws) {
                    return Some(false);
                }
                st.tables
                    .agents
                    .insert((ws.to_string(), agent.to_string()), settings);
                Some(true)
            })
            .await)
    }

    async fn insert_session(&self, key: &SessionKey, now_ms: i64) -> Result<bool, ScopedError> {
        let parent = RowKey::Agent(key.workspace.clone(), key.agent.clone());
        let row = RowKey::Session(key.clone());
        Ok(self
            .shared
            .until_free(|st| {
                if st.held_by_other(&parent, None) || st.held_by_other(&row, None) {
                    return None;
                }
                let agent = (key.workspace.clone(), key.agent.clone());
                if !st.tables.agents.contains_key(&agent) || st.tables.sessions.contains_key(key) {
                    return Some(false);
                }
                st.tables.sessions.insert(
                    key.clone(),
                    SessionRow {
                        last_activity_ms: now_ms,
                        files_swept_at_ms: None,
                        sweep_unfinished_at_ms: None,
                        created_at_ms: now_ms,
                        closed_at_ms: None,
                    },
                );
                Some(true)
            })
            .await)
    }

    async fn session_exists(&self, key: &SessionKey) -> Result<bool, ScopedError> {
        Ok(self.shared.lock().tables.sessions.contains_key(key))
    }

    async fn sessions_named(&self, session: &str) -> Result<Vec<SessionKey>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .sessions
            .keys()
            .filter(|k| k.session == session)
            .cloned()
            .collect())
    }

    async fn unmark_swept(&self, key: &SessionKey) -> Result<(), ScopedError> {
        let row = RowKey::Session(key.clone());
        self.shared
            .until_free(|st| {
                if st.held_by_other(&row, None) {
                    return None;
                }
                if let Some(r) = st.tables.sessions.get_mut(key) {
                    r.files_swept_at_ms = None;
                }
                Some(())
            })
            .await;
        Ok(())
    }

    async fn workspace_exists(&self, ws: &str) -> Result<bool, ScopedError> {
        Ok(self.shared.lock().tables.workspaces.contains_key(ws))
    }

    async fn insert_wait(
        &self,
        key: &SessionKey,
        kind: WaitKind,
        wait_id: &str,
    ) -> Result<bool, ScopedError> {
        // The foreign-key check (FOR KEY SHARE) conflicts with the FOR UPDATE a write or a
        // sweep holds on the session: it waits for them.
        let parent = RowKey::Session(key.clone());
        let w = wait_row(key, kind, wait_id);
        let row = RowKey::Wait(w.clone());
        Ok(self
            .shared
            .until_free(|st| {
                if st.held_by_other(&parent, None) || st.held_by_other(&row, None) {
                    return None;
                }
                if !st.tables.sessions.contains_key(key) {
                    return Some(false);
                }
                Some(st.tables.waits.insert(w.clone()))
            })
            .await)
    }

    async fn delete_wait(
        &self,
        key: &SessionKey,
        kind: WaitKind,
        wait_id: &str,
    ) -> Result<(), ScopedError> {
        let w = wait_row(key, kind, wait_id);
        let row = RowKey::Wait(w.clone());
        self.shared
            .until_free(|st| {
                if st.held_by_other(&row, None) {
                    return None;
                }
                st.tables.waits.remove(&w);
                Some(())
            })
            .await;
        Ok(())
    }

    async fn pending_obligation_ids(&self) -> Result<Vec<i64>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .deletions
            .values()
            .filter(|d| d.done_at_ms.is_none())
            .map(|d| d.id)
            .collect())
    }

    async fn mark_done_if_pending(
        &self,
        id: i64,
        now_ms: i64,
    ) -> Result<Option<String>, ScopedError> {
        let row = RowKey::Deletion(id);
        Ok(self
            .shared
            .until_free(|st| {
                if st.held_by_other(&row, None) {
                    return None;
                }
                Some(match st.tables.deletions.get_mut(&id) {
                    Some(d) if d.done_at_ms.is_none() => {
                        d.done_at_ms = Some(now_ms);
                        Some(d.prefix.clone())
                    }
                    _ => None,
                })
            })
            .await)
    }

    async fn obligations(&self) -> Result<Vec<DeletionObligation>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .deletions
            .values()
            .cloned()
            .collect())
    }

    async fn records(&self) -> Result<Vec<DeletionRecord>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .records
            .values()
            .cloned()
            .collect())
    }

    async fn set_session_count(
        &self,
        ws: &str,
        agent: &str,
        keep_last: Option<i64>,
    ) -> Result<bool, ScopedError> {
        // The foreign-key check shares the agent row: it waits for a deleter holding it.
        let parent = RowKey::Agent(ws.to_string(), agent.to_string());
        let k = (ws.to_string(), agent.to_string());
        Ok(self
            .shared
            .until_free(|st| {
                if st.held_by_other(&parent, None) {
                    return None;
                }
                if !st.tables.agents.contains_key(&k) {
                    return Some(false);
                }
                match keep_last {
                    Some(n) => st.tables.session_counts.insert(k.clone(), n),
                    None => st.tables.session_counts.remove(&k),
                };
                Some(true)
            })
            .await)
    }

    async fn session_counts(&self) -> Result<Vec<(String, String, i64)>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .session_counts
            .iter()
            .map(|((w, a), n)| (w.clone(), a.clone(), *n))
            .collect())
    }

    async fn set_workspace_retention(
        &self,
        ws: &str,
        ttl_days: Option<i64>,
    ) -> Result<bool, ScopedError> {
        // The foreign-key check shares the workspace row: it waits for a deleter holding it.
        let parent = RowKey::Workspace(ws.to_string());
        Ok(self
            .shared
            .until_free(|st| {
                if st.held_by_other(&parent, None) {
                    return None;
                }
                if !st.tables.workspaces.contains_key(ws) {
                    return Some(false);
                }
                match ttl_days {
                    Some(d) => st.tables.workspace_retention.insert(ws.to_string(), d),
                    None => st.tables.workspace_retention.remove(ws),
                };
                Some(true)
            })
            .await)
    }

    async fn workspace_retentions(&self) -> Result<Vec<(String, i64)>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .workspace_retention
            .iter()
            .map(|(w, d)| (w.clone(), *d))
            .collect())
    }

    async fn applied_session_backstop(&self) -> Result<Option<i64>, ScopedError> {
        Ok(self.shared.lock().tables.applied_session_backstop)
    }

    async fn record_applied_session_backstop(&self, days: i64) -> Result<(), ScopedError> {
        self.shared.lock().tables.applied_session_backstop = Some(days);
        Ok(())
    }

    async fn lock_waiters(&self) -> Result<u64, ScopedError> {
        Ok(self.shared.waiting.load(Ordering::SeqCst))
    }
}

/// Whether a session last active at `last_activity_ms` has been idle its workspace's TTL at
/// `now_ms` (`CANDIDATES_SQL`'s bound): the workspace's own (SPEC SL-5.1), else the default.
fn idle_long_enough(
    t: &Tables,
    key: &SessionKey,
    last_activity_ms: i64,
    now_ms: i64,
    default_ttl_ms: i64,
) -> bool {
    let ttl_ms = t
        .workspace_retention
        .get(&key.workspace)
        .map_or(default_ttl_ms, |d| d.saturating_mul(crate::clock::DAY_MS));
    last_activity_ms <= now_ms.saturating_sub(ttl_ms)
}

#[cfg(test)]
mod tests;

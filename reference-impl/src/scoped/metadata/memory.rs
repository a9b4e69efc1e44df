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
//! Why one file of this length: it mirrors `postgres.rs` statement by statement, so the two
//! are reviewed side by side (`sim/tests/integration/metadata_differential.rs` holds them equal).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tokio::sync::Notify;

use super::{
    DeletionObligation, DeletionRecord, Entity, MetaTx, Metadata, SessionKey, SessionLayers,
    SessionStanding, WaitKind,
};

mod erasure;
use crate::scoped::error::ScopedError;
use crate::scoped::permissions::ScopeSettings;

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

/// An open in-memory transaction.
struct MemTx {
    shared: Arc<Shared>,
    id: u64,
    overlay: Overlay,
    open: bool,
}

impl Drop for MemTx {
    fn drop(&mut self) {
        if self.open {
            self.shared.lock().release(self.id);
            self.shared.released.notify_waiters();
        }
    }
}

/// What a transaction sees: the committed tables under its own writes.
struct View<'a> {
    t: &'a Tables,
    o: &'a Overlay,
}

impl View<'_> {
    fn workspace(&self, ws: &str) -> Option<ScopeSettings> {
        match self.o.workspaces.get(ws) {
            Some(v) => *v,
            None => self.t.workspaces.get(ws).copied(),
        }
    }

    fn agent(&self, ws: &str, agent: &str) -> Option<ScopeSettings> {
        let k = (ws.to_string(), agent.to_string());
        match self.o.agents.get(&k) {
            Some(v) => *v,
            None => self.t.agents.get(&k).copied(),
        }
    }

    fn session(&self, key: &SessionKey) -> Option<SessionRow> {
        match self.o.sessions.get(key) {
            Some(v) => *v,
            None => self.t.sessions.get(key).copied(),
        }
    }

    fn deletion(&self, id: i64) -> Option<DeletionObligation> {
        match self.o.deletions.get(&id) {
            Some(v) => v.clone(),
            None => self.t.deletions.get(&id).cloned(),
        }
    }

    /// Agents of a workspace, in key order.
    fn agents_of(&self, ws: &str) -> Vec<String> {
        let mut v: BTreeSet<String> = self
            .t
            .agents
            .keys()
            .filter(|(w, _)| w == ws)
            .map(|(_, a)| a.clone())
            .collect();
        for ((w, a), row) in &self.o.agents {
            if w == ws {
                if row.is_some() {
                    v.insert(a.clone());
                } else {
                    v.remove(a);
                }
            }
        }
        v.into_iter().collect()
    }

    /// Sessions of an agent, in key order.
    fn sessions_of(&self, ws: &str, agent: &str) -> Vec<SessionKey> {
        // The table is ordered by (workspace, agent, session): the agent's rows are one range.
        let mut v: BTreeSet<SessionKey> = self
            .t
            .sessions
            .range(SessionKey::new(ws, agent, "")..)
            .map(|(k, _)| k)
            .take_while(|k| k.workspace == ws && k.agent == agent)
            .cloned()
            .collect();
        for (k, row) in &self.o.sessions {
            if k.workspace == ws && k.agent == agent {
                if row.is_some() {
                    v.insert(k.clone());
                } else {
                    v.remove(k);
                }
            }
        }
        v.into_iter().collect()
    }

    /// Waits of a session, in key order.
    fn waits_of(&self, key: &SessionKey) -> Vec<WaitRow> {
        let mut v: BTreeSet<WaitRow> = self
            .t
            .waits
            .iter()
            .filter(|w| &w.0 == key)
            .cloned()
            .collect();
        for (w, present) in &self.o.waits {
            if &w.0 == key {
                if *present {
                    v.insert(w.clone());
                } else {
                    v.remove(w);
                }
            }
        }
        v.into_iter().collect()
    }

    fn has_wait(&self, key: &SessionKey) -> bool {
        !self.waits_of(key).is_empty()
    }
}

/// The rows one deletion removes, parents first.
#[derive(Default)]
struct Cascade {
    workspace: Option<String>,
    agents: Vec<(String, String)>,
    sessions: Vec<SessionKey>,
    waits: Vec<WaitRow>,
}

impl Cascade {
    fn of(view: &View<'_>, entity: &Entity) -> Cascade {
        let mut c = Cascade::default();
        let add_session = |c: &mut Cascade, k: SessionKey| {
            c.waits.extend(view.waits_of(&k));
            c.sessions.push(k);
        };
        match entity {
            Entity::Session(k) => {
                if view.session(k).is_some() {
                    add_session(&mut c, k.clone());
                }
            }
            Entity::Agent { workspace, agent } => {
                if view.agent(workspace, agent).is_some() {
                    c.agents.push((workspace.clone(), agent.clone()));
                    for k in view.sessions_of(workspace, agent) {
                        add_session(&mut c, k);
                    }
                }
            }
            Entity::Workspace(ws) => {
                if view.workspace(ws).is_some() {
                    c.workspace = Some(ws.clone());
                    for a in view.agents_of(ws) {
                        for k in view.sessions_of(ws, &a) {
                            add_session(&mut c, k);
                        }
                        c.agents.push((ws.clone(), a));
                    }
                }
            }
        }
        c
    }

    fn rows(&self) -> Vec<RowKey> {
        let mut v = Vec::new();
        v.extend(self.workspace.iter().cloned().map(RowKey::Workspace));
        v.extend(
            self.agents
                .iter()
                .map(|(w, a)| RowKey::Agent(w.clone(), a.clone())),
        );
        v.extend(self.sessions.iter().cloned().map(RowKey::Session));
        v.extend(self.waits.iter().cloned().map(RowKey::Wait));
        v
    }
}

impl MemTx {
    fn view<'a>(&'a self, st: &'a State) -> View<'a> {
        View {
            t: &st.tables,
            o: &self.overlay,
        }
    }

    /// `UPDATE sessions SET … WHERE key`: takes the row (waiting for another holder), then
    /// writes `change` of what this transaction sees into its overlay; no row, no change.
    async fn update_session(
        &mut self,
        key: &SessionKey,
        change: impl FnOnce(SessionRow) -> SessionRow,
    ) {
        self.take(RowKey::Session(key.clone())).await;
        let row = {
            let st = self.shared.lock();
            self.view(&st).session(key)
        };
        if let Some(r) = row {
            self.overlay.sessions.insert(key.clone(), Some(change(r)));
        }
    }

    /// Takes `row` for this transaction once no other holds it.
    async fn take(&mut self, row: RowKey) {
        let me = self.id;
        self.shared
            .until_free(|st| {
                if st.held_by_other(&row, Some(me)) {
                    return None;
                }
                st.locks.insert(row.clone(), me);
                Some(())
            })
            .await
    }

    fn end(&mut self, commit: bool) {
        let overlay = std::mem::take(&mut self.overlay);
        {
            let mut st = self.shared.lock();
            if commit {
                overlay.apply(&mut st.tables);
            }
            st.release(self.id);
        }
        self.open = false;
        self.shared.released.notify_waiters();
    }

    /// Candidate sessions as `CANDIDATES_SQL` selects them, over what this transaction sees.
    fn candidates(
        &self,
        st: &State,
        now_ms: i64,
        default_ttl_ms: i64,
        ignoring_waits: bool,
    ) -> Vec<(i64, SessionKey)> {
        let view = self.view(st);
        let mut keys: BTreeSet<&SessionKey> = st.tables.sessions.keys().collect();
        keys.extend(self.overlay.sessions.keys());
        let mut v: Vec<(i64, SessionKey)> = keys
            .into_iter()
            .filter_map(|k| view.session(k).map(|r| (k, r)))
            .filter(|(k, r)| {
                r.files_swept_at_ms.is_none()
                    && idle_long_enough(&st.tables, k, r.last_activity_ms, now_ms, default_ttl_ms)
            })
            .filter(|(k, _)| ignoring_waits || !view.has_wait(k))
            .map(|(k, r)| (r.last_activity_ms, k.clone()))
            .collect();
        // ORDER BY last_activity_ms, workspace_id, agent_id, id
        v.sort();
        v
    }
}

#[async_trait]
impl MetaTx for MemTx {
    async fn lock_session(
        &mut self,
        key: &SessionKey,
    ) -> Result<Option<SessionLayers>, ScopedError> {
        let me = self.id;
        let row = RowKey::Session(key.clone());
        let overlay = &self.overlay;
        Ok(self
            .shared
            .until_free(|st| {
                if st.held_by_other(&row, Some(me)) {
                    return None;
                }
                let view = View {
                    t: &st.tables,
                    o: overlay,
                };
                let Some(session) = view.session(key) else {
                    return Some(None);
                };
                let layers = SessionLayers {
                    workspace: view.workspace(&key.workspace).unwrap_or_default(),
                    agent: view.agent(&key.workspace, &key.agent).unwrap_or_default(),
                    sweep_unfinished: session.sweep_unfinished_at_ms.is_some(),
                };
                st.locks.insert(row.clone(), me);
                Some(Some(layers))
            })
            .await)
    }

    async fn touch(&mut self, key: &SessionKey, now_ms: i64) -> Result<(), ScopedError> {
        self.update_session(key, |r| SessionRow {
            last_activity_ms: r.last_activity_ms.max(now_ms),
            files_swept_at_ms: None,
            sweep_unfinished_at_ms: None,
            closed_at_ms: None,
            ..r
        })
        .await;
        Ok(())
    }

    async fn claim_idle_sessions(
        &mut self,
        now_ms: i64,
        default_ttl_ms: i64,
        limit: i64,
        ignoring_waits: bool,
        claim: bool,
    ) -> Result<Vec<SessionKey>, ScopedError> {
        let limit = usize::try_from(limit.max(0)).unwrap_or(usize::MAX);
        let mut st = self.shared.lock();
        if !claim {
            // Read outside the transaction, as the mutant's query is: committed rows only.
            let outside = View {
                t: &st.tables,
                o: &Overlay::default(),
            };
            let mut v: Vec<(i64, SessionKey)> = st
                .tables
                .sessions
                .iter()
                .filter(|(k, r)| {
                    r.files_swept_at_ms.is_none()
                        && idle_long_enough(
                            &st.tables,
                            k,
                            r.last_activity_ms,
                            now_ms,
                            default_ttl_ms,
                        )
                })
                .filter(|(k, _)| ignoring_waits || !outside.has_wait(k))
                .map(|(k, r)| (r.last_activity_ms, k.clone()))
                .collect();
            v.sort();
            return Ok(v.into_iter().take(limit).map(|(_, k)| k).collect());
        }
        let picked: Vec<SessionKey> = self
            .candidates(&st, now_ms, default_ttl_ms, ignoring_waits)
            .into_iter()
            .map(|(_, k)| k)
            .filter(|k| !st.held_by_other(&RowKey::Session(k.clone()), Some(self.id)))
            .take(limit)
            .collect();
        for k in &picked {
            st.locks.insert(RowKey::Session(k.clone()), self.id);
        }
        Ok(picked)
    }

    async fn agent_standings(
        &mut self,
        ws: &str,
        agent: Option<&str>,
    ) -> Result<Vec<SessionStanding>, ScopedError> {
        let st = self.shared.lock();
        let view = self.view(&st);
        let agents = match agent {
            Some(a) => vec![a.to_string()],
            None => view.agents_of(ws),
        };
        Ok(agents
            .iter()
            .flat_map(|a| view.sessions_of(ws, a))
            .filter_map(|k| {
                let r = view.session(&k)?;
                Some(SessionStanding {
                    waiting: view.has_wait(&k),
                    key: k,
                    last_activity_ms: r.last_activity_ms,
                    created_at_ms: r.created_at_ms,
                    swept: r.files_swept_at_ms.is_some(),
                    sweep_unfinished: r.sweep_unfinished_at_ms.is_some(),
                })
            })
            .collect())
    }

    async fn claim_sessions(
        &mut self,
        keys: &[SessionKey],
    ) -> Result<Vec<SessionKey>, ScopedError> {
        let me = self.id;
        let mut st = self.shared.lock();
        let claimed: BTreeSet<SessionKey> = {
            let view = self.view(&st);
            keys.iter()
                .filter(|k| view.session(k).is_some())
                .filter(|k| !st.held_by_other(&RowKey::Session((*k).clone()), Some(me)))
                .cloned()
                .collect()
        };
        for k in &claimed {
            st.locks.insert(RowKey::Session(k.clone()), me);
        }
        Ok(claimed.into_iter().collect())
    }

    async fn closed_at(&mut self, key: &SessionKey) -> Result<Option<i64>, ScopedError> {
        let st = self.shared.lock();
        Ok(self.view(&st).session(key).and_then(|r| r.closed_at_ms))
    }

    async fn set_closed_at(
        &mut self,
        key: &SessionKey,
        closed_at_ms: Option<i64>,
    ) -> Result<(), ScopedError> {
        self.update_session(key, |r| SessionRow { closed_at_ms, ..r })
            .await;
        Ok(())
    }

    async fn claim_closed_sessions(
        &mut self,
        cutoff_ms: i64,
        limit: i64,
        ignoring_waits: bool,
        claim: bool,
    ) -> Result<Vec<SessionStanding>, ScopedError> {
        let limit = usize::try_from(limit.max(0)).unwrap_or(usize::MAX);
        let me = self.id;
        let mut st = self.shared.lock();
        let picked: Vec<SessionStanding> = {
            // Without the claim the mutant reads outside the transaction: committed rows only.
            let empty = Overlay::default();
            let view = View {
                t: &st.tables,
                o: if claim { &self.overlay } else { &empty },
            };
            let mut keys: BTreeSet<&SessionKey> = st.tables.sessions.keys().collect();
            keys.extend(view.o.sessions.keys());
            let mut v: Vec<(i64, SessionStanding)> = keys
                .into_iter()
                .filter_map(|k| view.session(k).map(|r| (k, r)))
                .filter_map(|(k, r)| {
                    let closed = r.closed_at_ms.filter(|c| *c <= cutoff_ms)?;
                    (r.files_swept_at_ms.is_none()).then_some((k, r, closed))
                })
                .map(|(k, r, closed)| {
                    let standing = SessionStanding {
                        key: k.clone(),
                        last_activity_ms: r.last_activity_ms,
                        created_at_ms: r.created_at_ms,
                        swept: false,
                        // Not ranked: the close sweep takes every closed session past its grace.
                        sweep_unfinished: false,
                        waiting: view.has_wait(k),
                    };
                    (closed, standing)
                })
                .filter(|(_, s)| ignoring_waits || !s.waiting)
                .filter(|(_, s)| {
                    !claim || !st.held_by_other(&RowKey::Session(s.key.clone()), Some(me))
                })
                .collect();
            // ORDER BY closed_at_ms, workspace_id, agent_id, id
            v.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
            v.into_iter().take(limit).map(|(_, s)| s).collect()
        };
        if claim {
            for s in &picked {
                st.locks.insert(RowKey::Session(s.key.clone()), me);
            }
        }
        Ok(picked)
    }

    async fn claim_unfinished_sessions(
        &mut self,
        limit: i64,
    ) -> Result<Vec<SessionKey>, ScopedError> {
        let limit = usize::try_from(limit.max(0)).unwrap_or(usize::MAX);
        let me = self.id;
        let mut st = self.shared.lock();
        let picked: Vec<SessionKey> = {
            let view = self.view(&st);
            let mut keys: BTreeSet<&SessionKey> = st.tables.sessions.keys().collect();
            keys.extend(self.overlay.sessions.keys());
            // ORDER BY workspace_id, agent_id, id: the keys' own order.
            keys.into_iter()
                .filter(|k| {
                    view.session(k)
                        .is_some_and(|r| r.sweep_unfinished_at_ms.is_some())
                })
                .filter(|k| !st.held_by_other(&RowKey::Session((*k).clone()), Some(me)))
                .take(limit)
                .cloned()
                .collect()
        };
        for k in &picked {
            st.locks.insert(RowKey::Session(k.clone()), me);
        }
        Ok(picked)
    }

    async fn mark_sweep_unfinished(
        &mut self,
        key: &SessionKey,
        now_ms: i64,
    ) -> Result<(), ScopedError> {
        self.update_session(key, |r| SessionRow {
            sweep_unfinished_at_ms: Some(now_ms),
            ..r
        })
        .await;
        Ok(())
    }

    async fn mark_swept(&mut self, key: &SessionKey, now_ms: i64) -> Result<(), ScopedError> {
        self.update_session(key, |r| SessionRow {
            files_swept_at_ms: Some(now_ms),
            sweep_unfinished_at_ms: None,
            ..r
        })
        .await;
        Ok(())
    }

    async fn claim_obligations(&mut self, limit: i64) -> Result<Vec<(i64, String)>, ScopedError> {
        let limit = usize::try_from(limit.max(0)).unwrap_or(usize::MAX);
        let mut st = self.shared.lock();
        let mut ids: BTreeSet<i64> = st.tables.deletions.keys().copied().collect();
        ids.extend(self.overlay.deletions.keys());
        let picked: Vec<(i64, String)> = {
            let view = self.view(&st);
            ids.into_iter()
                .filter_map(|id| view.deletion(id))
                .filter(|d| d.done_at_ms.is_none())
                // An erasure's deletion obligations are met with it (SPEC SL-4).
                .filter(|d| !view.held_by_erasure(d.id))
                .filter(|d| !st.held_by_other(&RowKey::Deletion(d.id), Some(self.id)))
                .take(limit)
                .map(|d| (d.id, d.prefix))
                .collect()
        };
        for (id, _) in &picked {
            st.locks.insert(RowKey::Deletion(*id), self.id);
        }
        Ok(picked)
    }

    async fn record_obligation(
        &mut self,
        deletion_id: i64,
        prefix: &str,
        objects_deleted: i64,
        now_ms: i64,
    ) -> Result<(), ScopedError> {
        let id = self.shared.lock().record_id();
        self.overlay.records.insert(
            id,
            DeletionRecord {
                deletion_id,
                prefix: prefix.to_string(),
                objects_deleted,
                completed_at_ms: now_ms,
            },
        );
        Ok(())
    }

    async fn mark_done(&mut self, id: i64, now_ms: i64) -> Result<(), ScopedError> {
        self.take(RowKey::Deletion(id)).await;
        let row = {
            let st = self.shared.lock();
            self.view(&st).deletion(id)
        };
        if let Some(mut d) = row {
            d.done_at_ms = Some(now_ms);
            self.overlay.deletions.insert(id, Some(d));
        }
        Ok(())
    }

    async fn record_deletion(
        &mut self,
        prefix: &str,
        entity_kind: &str,
        entity_id: &str,
        now_ms: i64,
    ) -> Result<(), ScopedError> {
        let id = self.shared.lock().deletion_id();
        self.overlay.deletions.insert(
            id,
            Some(DeletionObligation {
                id,
                prefix: prefix.to_string(),
                entity_kind: entity_kind.to_string(),
                entity_id: entity_id.to_string(),
                requested_at_ms: Some(now_ms),
                done_at_ms: None,
            }),
        );
        Ok(())
    }

    async fn delete_entity(
        &mut self,
        entity: &Entity,
        now_ms: i64,
        triggers: bool,
    ) -> Result<u64, ScopedError> {
        let me = self.id;
        let overlay = &self.overlay;
        // Every row the cascade removes is taken at once (waiting until none is held by
        // another transaction), then the cascade is worked out again under those locks.
        let (cascade, ids) = self
            .shared
            .until_free(|st| {
                let cascade = Cascade::of(
                    &View {
                        t: &st.tables,
                        o: overlay,
                    },
                    entity,
                );
                let rows = cascade.rows();
                if rows.iter().any(|r| st.held_by_other(r, Some(me))) {
                    return None;
                }
                for r in rows {
                    st.locks.insert(r, me);
                }
                // The trigger rows, in the order PostgreSQL fires them (see `trigger_rows`).
                let rows = if triggers {
                    trigger_rows(&cascade)
                } else {
                    Vec::new()
                };
                let ids: Vec<(i64, (String, &'static str, String))> =
                    rows.into_iter().map(|r| (st.deletion_id(), r)).collect();
                Some((cascade, ids))
            })
            .await;
        let o = &mut self.overlay;
        for w in &cascade.waits {
            o.waits.insert(w.clone(), false);
        }
        for k in &cascade.sessions {
            o.sessions.insert(k.clone(), None);
        }
        for a in &cascade.agents {
            o.agents.insert(a.clone(), None);
            o.session_counts_removed.insert(a.clone());
        }
        if let Some(ws) = &cascade.workspace {
            o.workspaces.insert(ws.clone(), None);
        }
        for (id, (prefix, kind, entity_id)) in ids {
            o.deletions.insert(
                id,
                Some(DeletionObligation {
                    id,
                    prefix,
                    entity_kind: kind.to_string(),
                    entity_id,
                    requested_at_ms: Some(now_ms),
                    done_at_ms: None,
                }),
            );
        }
        let deleted = match entity {
            Entity::Session(_) => !cascade.sessions.is_empty(),
            Entity::Agent { .. } => !cascade.agents.is_empty(),
            Entity::Workspace(_) => cascade.workspace.is_some(),
        };
        Ok(u64::from(deleted))
    }

    async fn commit(mut self: Box<Self>) -> Result<(), ScopedError> {
        self.end(true);
        Ok(())
    }

    async fn rollback(mut self: Box<Self>) -> Result<(), ScopedError> {
        self.end(false);
        Ok(())
    }
}

/// The `storage_deletions` rows the triggers write for a cascade, `(prefix, kind, entity_id)`,
/// with the prefixes of `schema.rs`'s trigger functions, in the order they write them: level
/// by level, the deleted row's own table first (a workspace's row, then its skills), then its
/// children's (agents), then theirs (sessions), each table's trigger firing once per
/// statement; within a level, by key, byte by byte (`COLLATE "C"`), as `schema.rs`'s
/// statement-level triggers order their transition tables. Never by where rows lie: so the
/// ids of a cascade's obligations are the same on both stores however the rows were written.
fn trigger_rows(c: &Cascade) -> Vec<(String, &'static str, String)> {
    let mut out = Vec::new();
    if let Some(ws) = &c.workspace {
        out.push((format!("workspaces/{ws}/"), "workspace", ws.clone()));
        out.push((format!("skills/{ws}/"), "workspace", ws.clone()));
    }
    for (ws, a) in &c.agents {
        out.push((format!("agents/{ws}/{a}/"), "agent", a.clone()));
    }
    for k in &c.sessions {
        out.push((k.prefix(), "session", k.session.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scoped::permissions::Access;

    fn key(ws: &str, a: &str, s: &str) -> SessionKey {
        SessionKey::new(ws, a, s)
    }

    /// w1 with agents a1 (sessions s1, s2; s1 has a wait) and a2 (session s3); w2/b1/t1.
    async fn populated() -> MemoryMetadata {
        let m = MemoryMetadata::new();
        for ws in ["w1", "w2"] {
            m.upsert_workspace(ws, ScopeSettings::default())
                .await
                .unwrap();
        }
        for (ws, a) in [("w1", "a1"), ("w1", "a2"), ("w2", "b1")] {
            assert!(m
                .upsert_agent(ws, a, ScopeSettings::default())
                .await
                .unwrap());
        }
        for k in [
            key("w1", "a1", "s1"),
            key("w1", "a1", "s2"),
            key("w1", "a2", "s3"),
            key("w2", "b1", "t1"),
        ] {
            assert!(m.insert_session(&k, 0).await.unwrap());
        }
        assert!(m
            .insert_wait(&key("w1", "a1", "s1"), WaitKind::Queued, "m1")
            .await
            .unwrap());
        m
    }

    fn prefixes(o: &[DeletionObligation]) -> Vec<&str> {
        o.iter().map(|d| d.prefix.as_str()).collect()
    }

    async fn delete(m: &MemoryMetadata, e: Entity, triggers: bool) -> u64 {
        let mut tx = m.begin().await.unwrap();
        let n = tx.delete_entity(&e, 7, triggers).await.unwrap();
        tx.commit().await.unwrap();
        n
    }

    #[tokio::test]
    async fn a_cascade_records_every_session_of_a_deleted_agent() {
        let m = populated().await;
        let e = Entity::Agent {
            workspace: "w1".into(),
            agent: "a1".into(),
        };
        assert_eq!(delete(&m, e, true).await, 1);
        let o = m.obligations().await.unwrap();
        assert_eq!(
            prefixes(&o),
            ["agents/w1/a1/", "sessions/w1/a1/s1/", "sessions/w1/a1/s2/"]
        );
        assert!(o.iter().all(|d| d.requested_at_ms == Some(7)));
        assert_eq!(o.iter().map(|d| d.id).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(!m.session_exists(&key("w1", "a1", "s1")).await.unwrap());
        assert!(m.session_exists(&key("w1", "a2", "s3")).await.unwrap());
    }

    #[tokio::test]
    async fn deleting_a_workspace_records_its_sessions_agents_itself_and_its_skills() {
        let m = populated().await;
        assert_eq!(delete(&m, Entity::Workspace("w1".into()), true).await, 1);
        let o = m.obligations().await.unwrap();
        assert_eq!(
            prefixes(&o),
            [
                "workspaces/w1/",
                "skills/w1/",
                "agents/w1/a1/",
                "agents/w1/a2/",
                "sessions/w1/a1/s1/",
                "sessions/w1/a1/s2/",
                "sessions/w1/a2/s3/"
            ]
        );
        // The cascade removed the wait too: re-creating the session finds none.
        m.upsert_workspace("w1", ScopeSettings::default())
            .await
            .unwrap();
        m.upsert_agent("w1", "a1", ScopeSettings::default())
            .await
            .unwrap();
        m.insert_session(&key("w1", "a1", "s1"), 0).await.unwrap();
        let mut tx = m.begin().await.unwrap();
        let idle = tx.claim_idle_sessions(0, 0, 10, false, true).await.unwrap();
        assert!(idle.contains(&key("w1", "a1", "s1")));
        assert!(m.session_exists(&key("w2", "b1", "t1")).await.unwrap());
    }

    #[tokio::test]
    async fn with_triggers_off_a_deletion_records_nothing_and_a_missing_row_deletes_nothing() {
        let m = populated().await;
        let e = Entity::Agent {
            workspace: "w1".into(),
            agent: "a1".into(),
        };
        assert_eq!(delete(&m, e.clone(), false).await, 1);
        assert!(m.obligations().await.unwrap().is_empty());
        assert_eq!(delete(&m, e, true).await, 0);
        assert!(m.obligations().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_second_lock_on_a_session_waits_until_the_first_commits_and_sees_its_write() {
        let m = populated().await;
        let k = key("w1", "a2", "s3");
        let mut first = m.begin().await.unwrap();
        assert!(first.lock_session(&k).await.unwrap().is_some());
        first.touch(&k, 50).await.unwrap();
        let m2 = m.clone();
        let k2 = k.clone();
        let second = tokio::spawn(async move {
            let mut tx = m2.begin().await.unwrap();
            tx.lock_session(&k2).await.unwrap();
            // Claimed by this transaction now: the candidates cut off at 60 must not skip it.
            let seen = tx.claim_idle_sessions(60, 0, 10, true, true).await.unwrap();
            tx.commit().await.unwrap();
            seen
        });
        while m.lock_waiters().await.unwrap() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(!second.is_finished());
        first.commit().await.unwrap();
        let seen = second.await.unwrap();
        assert!(
            seen.contains(&k),
            "the committed touch (50) is seen: {seen:?}"
        );
        assert_eq!(m.lock_waiters().await.unwrap(), 0);
        assert_eq!(m.locked_rows(), 0);
    }

    #[tokio::test]
    async fn skip_locked_passes_a_held_session_by_and_takes_the_next() {
        let m = populated().await;
        let mut writer = m.begin().await.unwrap();
        writer.lock_session(&key("w1", "a1", "s2")).await.unwrap();
        let mut sweep = m.begin().await.unwrap();
        let claimed = sweep
            .claim_idle_sessions(0, 0, 2, true, true)
            .await
            .unwrap();
        assert_eq!(claimed, [key("w1", "a1", "s1"), key("w1", "a2", "s3")]);
        let mut other = m.begin().await.unwrap();
        let rest = other
            .claim_idle_sessions(0, 0, 10, true, true)
            .await
            .unwrap();
        assert_eq!(rest, [key("w2", "b1", "t1")]);
        // Read without claiming, everything is there.
        let unlocked = other
            .claim_idle_sessions(0, 0, 10, true, false)
            .await
            .unwrap();
        assert_eq!(unlocked.len(), 4);
        // A session with a wait is not a candidate unless waits are ignored.
        let mut fresh = m.begin().await.unwrap();
        let not_ignoring = fresh
            .claim_idle_sessions(0, 0, 10, false, false)
            .await
            .unwrap();
        assert!(!not_ignoring.contains(&key("w1", "a1", "s1")));
    }

    #[tokio::test]
    async fn a_rolled_back_or_dropped_transaction_leaves_nothing_and_burns_its_ids() {
        let m = populated().await;
        let mut tx = m.begin().await.unwrap();
        tx.delete_entity(&Entity::Workspace("w2".into()), 1, true)
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        {
            let mut tx = m.begin().await.unwrap();
            tx.touch(&key("w1", "a1", "s1"), 99).await.unwrap();
            tx.record_deletion("x/", "session", "x", 1).await.unwrap();
        }
        assert_eq!(m.locked_rows(), 0);
        assert!(m.obligations().await.unwrap().is_empty());
        assert!(m.session_exists(&key("w2", "b1", "t1")).await.unwrap());
        assert!(m.sessions().iter().all(|(_, last, _)| *last == 0));
        // Like a bigserial, ids handed out to rolled-back inserts are not reused: the
        // workspace deletion burned four (t1, b1, w2, skills), the dropped insert one.
        delete(&m, Entity::Session(key("w2", "b1", "t1")), true).await;
        assert_eq!(m.obligations().await.unwrap()[0].id, 6);
    }

    #[tokio::test]
    async fn obligations_are_claimed_once_and_marked_done_only_on_commit() {
        let m = populated().await;
        delete(
            &m,
            Entity::Agent {
                workspace: "w1".into(),
                agent: "a2".into(),
            },
            true,
        )
        .await;
        let mut a = m.begin().await.unwrap();
        let got = a.claim_obligations(10).await.unwrap();
        assert_eq!(got.len(), 2);
        let mut b = m.begin().await.unwrap();
        assert!(b.claim_obligations(10).await.unwrap().is_empty());
        for (id, prefix) in &got {
            a.record_obligation(*id, prefix, 0, 9).await.unwrap();
            a.mark_done(*id, 9).await.unwrap();
        }
        assert!(m.records().await.unwrap().is_empty());
        assert_eq!(m.pending_obligation_ids().await.unwrap().len(), 2);
        a.commit().await.unwrap();
        assert!(m.pending_obligation_ids().await.unwrap().is_empty());
        assert_eq!(m.records().await.unwrap().len(), 2);
        assert_eq!(m.mark_done_if_pending(1, 10).await.unwrap(), None);
    }

    #[tokio::test]
    async fn settings_are_read_through_the_session_lock() {
        let m = populated().await;
        let s = ScopeSettings {
            agent: Some(Access::Read),
            workspace: None,
        };
        m.upsert_agent("w1", "a2", s).await.unwrap();
        let mut tx = m.begin().await.unwrap();
        let layers = tx
            .lock_session(&key("w1", "a2", "s3"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(layers.agent, s);
        assert!(tx
            .lock_session(&key("w1", "a2", "nope"))
            .await
            .unwrap()
            .is_none());
        assert!(!m.upsert_agent("nope", "a", s).await.unwrap());
    }
}

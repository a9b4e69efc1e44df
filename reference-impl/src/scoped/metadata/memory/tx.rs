//! A transaction over the in-memory tables ([`MemTx`]): what it sees ([`View`]: the committed
//! tables under its own writes), the cascade a deletion takes, the row locks it waits for, and
//! the [`MetaTx`] operations in the order `postgres/tx.rs` runs them.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;

use super::{idle_long_enough, Overlay, RowKey, SessionRow, Shared, State, Tables, WaitRow};
use crate::scoped::error::ScopedError;
use crate::scoped::metadata::{
    DeletionObligation, DeletionRecord, Entity, MetaTx, SessionKey, SessionLayers, SessionStanding,
};
use crate::scoped::permissions::ScopeSettings;

/// An open in-memory transaction.
pub(super) struct MemTx {
    pub(super) shared: Arc<Shared>,
    pub(super) id: u64,
    pub(super) overlay: Overlay,
    pub(super) open: bool,
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
pub(super) struct View<'a> {
    pub(super) t: &'a Tables,
    pub(super) o: &'a Overlay,
}

impl View<'_> {
    pub(super) fn workspace(&self, ws: &str) -> Option<ScopeSettings> {
        match self.o.workspaces.get(ws) {
            Some(v) => *v,
            None => self.t.workspaces.get(ws).copied(),
        }
    }

    pub(super) fn agent(&self, ws: &str, agent: &str) -> Option<ScopeSettings> {
        let k = (ws.to_string(), agent.to_string());
        match self.o.agents.get(&k) {
            Some(v) => *v,
            None => self.t.agents.get(&k).copied(),
        }
    }

    pub(super) fn session(&self, key: &SessionKey) -> Option<SessionRow> {
        match self.o.sessions.get(key) {
            Some(v) => *v,
            None => self.t.sessions.get(key).copied(),
        }
    }

    pub(super) fn deletion(&self, id: i64) -> Option<DeletionObligation> {
        match self.o.deletions.get(&id) {
            Some(v) => v.clone(),
            None => self.t.deletions.get(&id).cloned(),
        }
    }

    /// Agents of a workspace, in key order.
    pub(super) fn agents_of(&self, ws: &str) -> Vec<String> {
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
    pub(super) fn sessions_of(&self, ws: &str, agent: &str) -> Vec<SessionKey> {
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
    pub(super) fn waits_of(&self, key: &SessionKey) -> Vec<WaitRow> {
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

    pub(super) fn has_wait(&self, key: &SessionKey) -> bool {
        !self.waits_of(key).is_empty()
    }
}

/// The rows one deletion removes, parents first.
#[derive(Default)]
pub(super) struct Cascade {
    pub(super) workspace: Option<String>,
    pub(super) agents: Vec<(String, String)>,
    pub(super) sessions: Vec<SessionKey>,
    pub(super) waits: Vec<WaitRow>,
}

impl Cascade {
    pub(super) fn of(view: &View<'_>, entity: &Entity) -> Cascade {
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

    pub(super) fn rows(&self) -> Vec<RowKey> {
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
    pub(super) fn view<'a>(&'a self, st: &'a State) -> View<'a> {
        View {
            t: &st.tables,
            o: &self.overlay,
        }
    }

    /// `UPDATE sessions SET … WHERE key`: takes the row (waiting for another holder), then
    /// writes `change` of what this transaction sees into its overlay; no row, no change.
    pub(super) async fn update_session(
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
    pub(super) async fn take(&mut self, row: RowKey) {
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

    pub(super) fn end(&mut self, commit: bool) {
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
    pub(super) fn candidates(
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
pub(super) fn trigger_rows(c: &Cascade) -> Vec<(String, &'static str, String)> {
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

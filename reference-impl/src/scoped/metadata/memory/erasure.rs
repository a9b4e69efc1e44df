//! Erasure obligations and their proofs in memory (SPEC SL-4), with the semantics of
//! `postgres/erasure.rs`'s statements: obligation ids burned like a `bigserial`, a claim that
//! passes rows another transaction holds, proof rows written down at once (outside any
//! transaction) and marked deleted in one, an erasure's deletion obligations (SC-6) held back
//! from SC-6's claim and met with the erasure.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;

use super::{MemTx, MemoryMetadata, RowKey, SessionRow, View};
use crate::scoped::error::ScopedError;
use crate::scoped::metadata::erasure::{
    Creation, ErasureMetadata, ErasureObligation, ErasureProof, ErasureTx,
};
use crate::scoped::metadata::{DeletionRecord, SessionKey};
use crate::scoped::permissions::ScopeSettings;

/// The committed rows: `erasure_obligations`, `erasure_proofs`, and
/// `storage_deletions.erasure_id` (deletion id -> erasure id, only where set).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ErasureTables {
    obligations: BTreeMap<i64, ErasureObligation>,
    proofs: BTreeMap<(i64, String), ErasureProof>,
    deletion_erasure: BTreeMap<i64, i64>,
}

/// A transaction's writes to those rows.
#[derive(Debug, Default)]
pub(super) struct ErasureOverlay {
    obligations: BTreeMap<i64, ErasureObligation>,
    proofs: BTreeMap<(i64, String), ErasureProof>,
    deletion_erasure: BTreeMap<i64, i64>,
}

impl ErasureTables {
    /// Whether an erasure of the subject is pending, as committed.
    fn pending(&self, ws: &str, agent: Option<&str>) -> bool {
        self.obligations
            .values()
            .any(|e| e.workspace == ws && e.agent.as_deref() == agent && e.done_at_ms.is_none())
    }
}

/// The subject locks of a workspace and of one of its agents.
fn subjects(ws: &str, agent: Option<&str>) -> Vec<RowKey> {
    let mut v = vec![RowKey::Subject(ws.to_string())];
    v.extend(agent.map(|a| RowKey::Subject(format!("{ws}/{a}"))));
    v
}

impl ErasureOverlay {
    pub(super) fn apply(self, t: &mut ErasureTables) {
        t.obligations.extend(self.obligations);
        t.proofs.extend(self.proofs);
        t.deletion_erasure.extend(self.deletion_erasure);
    }
}

impl View<'_> {
    /// Whether an erasure holds this deletion obligation (its `erasure_id` is set).
    pub(super) fn held_by_erasure(&self, deletion_id: i64) -> bool {
        self.o.erasure.deletion_erasure.contains_key(&deletion_id)
            || self.t.erasure.deletion_erasure.contains_key(&deletion_id)
    }

    fn erasure_of(&self, deletion_id: i64) -> Option<i64> {
        self.o
            .erasure
            .deletion_erasure
            .get(&deletion_id)
            .or_else(|| self.t.erasure.deletion_erasure.get(&deletion_id))
            .copied()
    }

    fn erasure(&self, id: i64) -> Option<ErasureObligation> {
        self.o
            .erasure
            .obligations
            .get(&id)
            .or_else(|| self.t.erasure.obligations.get(&id))
            .cloned()
    }

    fn erasure_ids(&self) -> BTreeSet<i64> {
        let mut ids: BTreeSet<i64> = self.t.erasure.obligations.keys().copied().collect();
        ids.extend(self.o.erasure.obligations.keys());
        ids
    }

    fn proof(&self, id: i64, key: &str) -> Option<ErasureProof> {
        let k = (id, key.to_string());
        self.o
            .erasure
            .proofs
            .get(&k)
            .or_else(|| self.t.erasure.proofs.get(&k))
            .cloned()
    }

    /// The erasure's proof rows, by key.
    fn proofs_of(&self, id: i64) -> Vec<ErasureProof> {
        let mut rows: BTreeMap<String, ErasureProof> = self
            .t
            .erasure
            .proofs
            .range((id, String::new())..)
            .take_while(|((e, _), _)| *e == id)
            .map(|((_, k), p)| (k.clone(), p.clone()))
            .collect();
        for ((e, k), p) in &self.o.erasure.proofs {
            if *e == id {
                rows.insert(k.clone(), p.clone());
            }
        }
        rows.into_values().collect()
    }

    /// Every deletion obligation's id, committed or this transaction's.
    fn deletion_ids(&self) -> BTreeSet<i64> {
        let mut ids: BTreeSet<i64> = self.t.deletions.keys().copied().collect();
        ids.extend(self.o.deletions.keys());
        ids
    }
}

#[async_trait]
impl ErasureMetadata for MemoryMetadata {
    async fn erasure_pending(&self, ws: &str, agent: Option<&str>) -> Result<bool, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .erasure
            .obligations
            .values()
            .any(|e| e.workspace == ws && e.agent.as_deref() == agent && e.done_at_ms.is_none()))
    }

    async fn erasures(&self) -> Result<Vec<ErasureObligation>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .erasure
            .obligations
            .values()
            .cloned()
            .collect())
    }

    async fn erasure_proofs(&self) -> Result<Vec<ErasureProof>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .erasure
            .proofs
            .values()
            .cloned()
            .collect())
    }

    async fn write_down_erasure_keys(
        &self,
        erasure_id: i64,
        keys: &[String],
        now_ms: i64,
        deleted: bool,
    ) -> Result<(), ScopedError> {
        // One statement, committed at once; ON CONFLICT DO NOTHING keeps a row written before.
        let mut st = self.shared.lock();
        for key in keys {
            st.tables
                .erasure
                .proofs
                .entry((erasure_id, key.clone()))
                .or_insert_with(|| ErasureProof {
                    erasure_id,
                    key: key.clone(),
                    written_at_ms: now_ms,
                    deleted_at_ms: deleted.then_some(now_ms),
                });
        }
        Ok(())
    }

    async fn create_workspace_checked(
        &self,
        ws: &str,
        settings: ScopeSettings,
        refuse_pending: bool,
    ) -> Result<Creation, ScopedError> {
        // One statement under the state's mutex, once no erasure holds the subject or the row.
        let mut held = subjects(ws, None);
        held.push(RowKey::Workspace(ws.to_string()));
        Ok(self
            .shared
            .until_free(|st| {
                if held.iter().any(|r| st.held_by_other(r, None)) {
                    return None;
                }
                if refuse_pending && st.tables.erasure.pending(ws, None) {
                    return Some(Creation::ErasurePending);
                }
                st.tables.workspaces.insert(ws.to_string(), settings);
                Some(Creation::Done)
            })
            .await)
    }

    async fn create_agent_checked(
        &self,
        ws: &str,
        agent: &str,
        settings: ScopeSettings,
        refuse_pending: bool,
    ) -> Result<Creation, ScopedError> {
        let mut held = subjects(ws, Some(agent));
        held.push(RowKey::Workspace(ws.to_string()));
        held.push(RowKey::Agent(ws.to_string(), agent.to_string()));
        Ok(self
            .shared
            .until_free(|st| {
                if held.iter().any(|r| st.held_by_other(r, None)) {
                    return None;
                }
                if refuse_pending && st.tables.erasure.pending(ws, Some(agent)) {
                    return Some(Creation::ErasurePending);
                }
                if !st.tables.workspaces.contains_key(ws) {
                    return Some(Creation::NoParent);
                }
                st.tables
                    .agents
                    .insert((ws.to_string(), agent.to_string()), settings);
                Some(Creation::Done)
            })
            .await)
    }

    async fn create_session_checked(
        &self,
        key: &SessionKey,
        now_ms: i64,
    ) -> Result<bool, ScopedError> {
        let mut held = subjects(&key.workspace, Some(&key.agent));
        held.push(RowKey::Agent(key.workspace.clone(), key.agent.clone()));
        held.push(RowKey::Session(key.clone()));
        Ok(self
            .shared
            .until_free(|st| {
                if held.iter().any(|r| st.held_by_other(r, None)) {
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

    async fn unrecorded_erasure_keys(&self, erasure_id: i64) -> Result<Vec<String>, ScopedError> {
        Ok(self
            .shared
            .lock()
            .tables
            .erasure
            .proofs
            .values()
            .filter(|p| p.erasure_id == erasure_id && p.deleted_at_ms.is_none())
            .map(|p| p.key.clone())
            .collect())
    }
}

#[async_trait]
impl ErasureTx for MemTx {
    async fn lock_subject(&mut self, ws: &str, agent: Option<&str>) -> Result<(), ScopedError> {
        for row in subjects(ws, agent) {
            self.take(row).await;
        }
        Ok(())
    }

    async fn record_erasure(
        &mut self,
        ws: &str,
        agent: Option<&str>,
        now_ms: i64,
        deadline_ms: i64,
        prefixes: &[String],
    ) -> Result<i64, ScopedError> {
        let id = {
            let mut st = self.shared.lock();
            st.next_erasure_id += 1;
            st.next_erasure_id
        };
        self.take(RowKey::Erasure(id)).await;
        self.overlay.erasure.obligations.insert(
            id,
            ErasureObligation {
                id,
                workspace: ws.to_string(),
                agent: agent.map(str::to_string),
                requested_at_ms: now_ms,
                deadline_ms,
                done_at_ms: None,
            },
        );
        // UPDATE storage_deletions SET erasure_id = id WHERE pending, unheld and under a prefix.
        let under = |prefix: &str| prefixes.iter().any(|p| prefix.starts_with(p.as_str()));
        let candidates: Vec<i64> = {
            let st = self.shared.lock();
            let view = self.view(&st);
            view.deletion_ids().into_iter().collect()
        };
        for did in candidates {
            let matches = |tx: &MemTx| {
                let st = tx.shared.lock();
                let view = tx.view(&st);
                view.deletion(did).is_some_and(|d| {
                    d.done_at_ms.is_none() && !view.held_by_erasure(did) && under(&d.prefix)
                })
            };
            if !matches(self) {
                continue;
            }
            // The row is taken (waiting for a holder), then judged again as it is now.
            self.take(RowKey::Deletion(did)).await;
            if matches(self) {
                self.overlay.erasure.deletion_erasure.insert(did, id);
            }
        }
        Ok(id)
    }

    async fn claim_erasures(&mut self, limit: i64) -> Result<Vec<ErasureObligation>, ScopedError> {
        let limit = usize::try_from(limit.max(0)).unwrap_or(usize::MAX);
        let me = self.id;
        let mut st = self.shared.lock();
        let picked: Vec<ErasureObligation> = {
            let view = self.view(&st);
            view.erasure_ids()
                .into_iter()
                .filter_map(|id| view.erasure(id))
                .filter(|e| e.done_at_ms.is_none())
                .filter(|e| !st.held_by_other(&RowKey::Erasure(e.id), Some(me)))
                .take(limit)
                .collect()
        };
        for e in &picked {
            st.locks.insert(RowKey::Erasure(e.id), me);
        }
        Ok(picked)
    }

    async fn mark_erasure_keys_deleted(
        &mut self,
        erasure_id: i64,
        keys: &[String],
        now_ms: i64,
    ) -> Result<(), ScopedError> {
        for key in keys {
            self.take(RowKey::ErasureProof(erasure_id, key.clone()))
                .await;
            let row = {
                let st = self.shared.lock();
                self.view(&st).proof(erasure_id, key)
            };
            if let Some(p) = row.filter(|p| p.deleted_at_ms.is_none()) {
                self.overlay.erasure.proofs.insert(
                    (erasure_id, key.clone()),
                    ErasureProof {
                        deleted_at_ms: Some(now_ms),
                        ..p
                    },
                );
            }
        }
        Ok(())
    }

    async fn complete_erasure(
        &mut self,
        erasure_id: i64,
        done_at_ms: i64,
    ) -> Result<u64, ScopedError> {
        self.take(RowKey::Erasure(erasure_id)).await;
        let (erasure, held) = {
            let st = self.shared.lock();
            let view = self.view(&st);
            let held: Vec<i64> = view
                .deletion_ids()
                .into_iter()
                .filter(|did| view.erasure_of(*did) == Some(erasure_id))
                .collect();
            (view.erasure(erasure_id), held)
        };
        if let Some(e) = erasure {
            self.overlay.erasure.obligations.insert(
                erasure_id,
                ErasureObligation {
                    done_at_ms: Some(done_at_ms),
                    ..e
                },
            );
        }
        let mut met = 0;
        for did in held {
            self.take(RowKey::Deletion(did)).await;
            let (deletion, deleted) = {
                let st = self.shared.lock();
                let view = self.view(&st);
                let d = view.deletion(did).filter(|d| d.done_at_ms.is_none());
                let deleted = d.as_ref().map_or(0, |d| {
                    view.proofs_of(erasure_id)
                        .iter()
                        .filter(|p| p.deleted_at_ms.is_some() && p.key.starts_with(&d.prefix))
                        .count() as i64
                });
                (d, deleted)
            };
            let Some(mut d) = deletion else {
                continue;
            };
            let rid = self.shared.lock().record_id();
            self.overlay.records.insert(
                rid,
                DeletionRecord {
                    deletion_id: did,
                    prefix: d.prefix.clone(),
                    objects_deleted: deleted,
                    completed_at_ms: done_at_ms,
                },
            );
            d.done_at_ms = Some(done_at_ms);
            self.overlay.deletions.insert(did, Some(d));
            met += 1;
        }
        Ok(met)
    }
}

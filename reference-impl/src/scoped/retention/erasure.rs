//! Erasure obligations with proofs (SPEC SL-4): "delete everything for this customer" by a
//! deadline, and a record a person can read afterwards of every key deleted under it.
//!
//! - A request deletes the subject's row as SC-6 does (the cascade, recorded by the triggers)
//!   and records the obligation, with its deadline, in the same transaction (SL-4.1); the
//!   deletion obligations the triggers record under the subject are the erasure's to meet.
//! - The policy sweep (after the idle sessions and the count policies, before SC-6's
//!   obligations) claims pending erasures, writes down (commits) every key it is about to
//!   delete, deletes them in DeleteObjects batches, then in one transaction records them
//!   deleted and, when every key went, marks the obligation met with its deletion obligations
//!   (SL-4.2, SL-4.3). A crash between deleting and recording leaves the keys written down;
//!   the next sweep deletes them again and records them.
//! - Lifecycle rules never meet an obligation (SL-4.5): only what a sweep deleted is recorded.
//! - Creating the subject again while its erasure is pending is `erasure_pending` (SL-4.6):
//!   the check and the create are one decision under the subject's lock, which the request
//!   holds from before it deletes the row until it commits (`metadata/erasure.rs`).
//!
//! A harness reads the obligations and proofs with [`OBLIGATIONS_SQL`] and [`PROOFS_SQL`],
//! which the reference declares (SL-4.7).

use std::collections::BTreeSet;

use crate::scoped::error::CrashPoint;
use crate::scoped::error::ScopedError;
use crate::scoped::layout::{self, Id};
use crate::scoped::metadata::{Entity, ErasureObligation};
use crate::scoped::retention::SweepReport;
use crate::scoped::store::{settle, ScopedStore};
use crate::scoped::ScopedMutant;

/// The reference's obligations as SL-4.7 asks a harness to read them: `obligation` (its id as
/// text), `subject` (`<ws>` or `<ws>/<agent>`), `deadline_ms`, `done_at_ms` (null while
/// pending).
pub const OBLIGATIONS_SQL: &str =
    "SELECT id::text AS obligation,
            CASE WHEN agent_id IS NULL THEN workspace_id ELSE workspace_id || '/' || agent_id END AS subject,
            deadline_ms, done_at_ms
       FROM erasure_obligations";

/// The reference's proofs as SL-4.7 asks a harness to read them: one row per key recorded
/// deleted (`obligation`, `key`, `deleted_at_ms`); a key written down and not yet recorded
/// deleted is no part of the proof.
pub const PROOFS_SQL: &str = "SELECT erasure_id::text AS obligation, key, deleted_at_ms
       FROM erasure_proofs WHERE deleted_at_ms IS NOT NULL";

/// What an erasure is of.
fn subject(ws: &Id, agent: Option<&Id>) -> (Entity, &'static str, String) {
    match agent {
        None => (
            Entity::Workspace(ws.to_string()),
            "workspace",
            ws.to_string(),
        ),
        Some(agent) => (
            Entity::Agent {
                workspace: ws.to_string(),
                agent: agent.to_string(),
            },
            "agent",
            format!("{ws}/{agent}"),
        ),
    }
}

impl ScopedStore {
    /// Requests the erasure of a workspace (`agent` `None`) or of one of its agents, to be met
    /// by `deadline_ms`. A deadline before now is `invalid_policy`, a subject that does not
    /// exist `unknown_entity` (SL-1.4); either changes nothing.
    pub async fn request_erasure(
        &self,
        ws: &str,
        agent: Option<&str>,
        deadline_ms: i64,
    ) -> Result<(), ScopedError> {
        let mutant = self.config().mutant;
        let ws = Id::checked(ws, mutant)?;
        let agent = agent.map(|a| Id::checked(a, mutant)).transpose()?;
        let now = self.now().0;
        if deadline_ms < now && !self.is(ScopedMutant::ErasurePastDeadlineAccepted) {
            return Err(ScopedError::InvalidPolicy(format!(
                "an erasure's deadline ({deadline_ms} ms) is before now ({now} ms)"
            )));
        }
        let (entity, kind, id) = subject(&ws, agent.as_ref());
        let prefixes = layout::subject_prefixes(&ws, agent.as_ref());
        let existed = if self.is(ScopedMutant::ErasureKeepsTheRows) {
            // The mutant deletes nothing: whether the subject exists is asked of a deletion it
            // rolls back.
            let mut probe = self.metadata().begin().await?;
            let n = probe.delete_entity(&entity, now, true).await;
            probe.rollback().await?;
            n? == 1
        } else {
            true
        };
        let mut tx = self.metadata().begin().await?;
        let result: Result<i64, ScopedError> = async {
            // Before the row goes: a create of the subject racing this request waits for it
            // to commit and finds it pending, or lands first and is erased with it (SL-4.6).
            tx.lock_subject(ws.as_str(), agent.as_ref().map(Id::as_str))
                .await?;
            let deleted = if self.is(ScopedMutant::ErasureKeepsTheRows) {
                existed
            } else {
                tx.delete_entity(&entity, now, true).await? == 1
            };
            if !deleted {
                return Err(ScopedError::UnknownEntity { kind, id });
            }
            tx.record_erasure(
                ws.as_str(),
                agent.as_ref().map(Id::as_str),
                now,
                deadline_ms,
                &prefixes,
            )
            .await
        }
        .await;
        let erasure_id = settle(tx, result, "commit erasure").await?;
        if self.is(ScopedMutant::ErasureProofCountsTheBackstop) {
            // The mutant writes the subject's keys down now, so whatever is gone when its
            // sweep comes is recorded as that sweep's deletion, the backstop's included.
            let mut keys = Vec::new();
            for p in &prefixes {
                keys.extend(self.list_keys(p).await?.into_iter().map(|(k, _)| k));
            }
            self.metadata()
                .write_down_erasure_keys(erasure_id, &keys, now, false)
                .await?;
        }
        Ok(())
    }

    /// Whether a create refuses its subject while an erasure of it is pending (SL-4.6); the
    /// mutant lets it through.
    pub(crate) fn refuses_pending_erasure(&self) -> bool {
        !self.is(ScopedMutant::RecreatedUnderPendingErasure)
    }

    /// The erasures, a chunk of pending ones per transaction: each one's keys (those written
    /// down before and not yet recorded, and those under its subject now) are written down,
    /// the chunk's keys deleted in batches of 1,000, and then, in the transaction that claimed
    /// them, the deleted keys recorded and each erasure whose every key went marked met with
    /// its deletion obligations. An S3 failure costs the erasures it touches, which stay
    /// pending for the next sweep.
    pub(crate) async fn sweep_erasures(&self, report: &mut SweepReport) -> Result<(), ScopedError> {
        let chunk = self.config().sweep_chunk;
        loop {
            let mut tx = self.metadata().begin().await?;
            let result: Result<bool, ScopedError> = async {
                let claimed = tx.claim_erasures(chunk).await?;
                if claimed.is_empty() {
                    return Ok(false);
                }
                let now = self.now().0;
                let mut plans: Vec<(ErasureObligation, BTreeSet<String>, bool)> = Vec::new();
                for e in claimed {
                    let (keys, listed) = self.keys_to_erase(&e).await?;
                    if !self.is(ScopedMutant::ErasureWithoutWriteAhead) {
                        let keys: Vec<String> = keys.iter().cloned().collect();
                        self.metadata()
                            .write_down_erasure_keys(
                                e.id,
                                &keys,
                                now,
                                self.is(ScopedMutant::ErasureProofBeforeDeletion),
                            )
                            .await?;
                    }
                    plans.push((e, keys, listed));
                }
                let all: Vec<String> = plans
                    .iter()
                    .flat_map(|(_, keys, _)| keys.iter().cloned())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let failed: BTreeSet<String> = match self.delete_keys(&all).await {
                    Ok(failed) => failed.into_iter().collect(),
                    // A whole request failed: which of its keys went is unknown, so none count.
                    Err(ScopedError::Storage { .. }) => all.iter().cloned().collect(),
                    Err(e) => return Err(e),
                };
                report.objects_deleted += (all.len() - failed.len()) as u64;
                self.crash(CrashPoint::AfterObligationObjectsDeleted)?;
                let mut retried = 0;
                for (e, keys, listed) in &plans {
                    let deleted: Vec<String> = keys
                        .iter()
                        .filter(|k| !failed.contains(*k))
                        .cloned()
                        .collect();
                    if self.is(ScopedMutant::ErasureWithoutWriteAhead) {
                        // The mutant writes its keys down only now, after deleting them.
                        self.metadata()
                            .write_down_erasure_keys(e.id, &deleted, now, false)
                            .await?;
                    }
                    tx.mark_erasure_keys_deleted(e.id, &deleted, now).await?;
                    let every_key_went = *listed && deleted.len() == keys.len();
                    let closed_overdue =
                        self.is(ScopedMutant::ErasureOverdueClosed) && now > e.deadline_ms;
                    if !every_key_went && !closed_overdue {
                        retried += 1;
                        continue;
                    }
                    let done_at = if self.is(ScopedMutant::ErasureLateStampedOnTime) {
                        now.min(e.deadline_ms)
                    } else {
                        now
                    };
                    report.obligations_completed += tx.complete_erasure(e.id, done_at).await?;
                }
                Ok(plans.len() as i64 == chunk && retried == 0)
            }
            .await;
            if !settle(tx, result, "commit erasures").await? {
                return Ok(());
            }
        }
    }

    /// The keys an erasure's sweep deletes: those written down by an earlier sweep and not
    /// recorded (it may have deleted them before a crash), and every key under the subject's
    /// prefixes now; and whether every prefix could be listed.
    async fn keys_to_erase(
        &self,
        e: &ErasureObligation,
    ) -> Result<(BTreeSet<String>, bool), ScopedError> {
        let mut keys: BTreeSet<String> = self
            .metadata()
            .unrecorded_erasure_keys(e.id)
            .await?
            .into_iter()
            .collect();
        let ws = Id::new(e.workspace.as_str())?;
        let agent = e.agent.as_deref().map(Id::new).transpose()?;
        let mut listed = true;
        for prefix in layout::subject_prefixes(&ws, agent.as_ref()) {
            match self.list_keys(&prefix).await {
                Ok(found) => keys.extend(found.into_iter().map(|(k, _)| k)),
                Err(ScopedError::Storage { .. }) => listed = false,
                Err(e) => return Err(e),
            }
        }
        Ok((keys, listed))
    }
}

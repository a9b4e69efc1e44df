//! The idle sweep (SPEC SC-5, SC-6): sessions idle past their TTL lose their files, deletion
//! obligations the triggers recorded are met, and the policy sweep ([`super::policy_sweep`])
//! runs between the two. Its order of row locks and S3 calls is the store's safety argument
//! (see [`super::super::store`]): the sweep claims the rows it sweeps `FOR UPDATE SKIP LOCKED`
//! and holds them for the whole list-and-delete.

use std::sync::atomic::Ordering;

use super::SweepReport;
use crate::scoped::error::{CrashPoint, ScopedError};
use crate::scoped::layout;
use crate::scoped::metadata::SessionKey;
use crate::scoped::mutants::ScopedMutant;
use crate::scoped::store::{settle, ScopedStore};

impl ScopedStore {
    /// The hourly sweep: idle sessions' files, then pending deletion obligations.
    pub async fn sweep(&self) -> Result<SweepReport, ScopedError> {
        let before = self.requests();
        let mut report = SweepReport::default();
        // What an earlier sweep left unfinished, whatever swept it (SPEC SL-2.4).
        self.finish_unfinished_sweeps(&mut report).await?;
        if self.is(ScopedMutant::AgeOnlyExpiry) {
            self.sweep_by_age(layout::SESSIONS_CLASS_PREFIX, &mut report)
                .await?;
        } else {
            self.sweep_idle_sessions(&mut report).await?;
        }
        // The policy sweeper (SPEC SL-1): count policies and closes, beside the idle sweep.
        self.sweep_policies(&mut report).await?;
        // Erasure obligations (SPEC SL-4), before SC-6's: the deletions an erasure's subject
        // recorded are the erasure's, met with its proof.
        self.sweep_erasures(&mut report).await?;
        if self.is(ScopedMutant::SkillsSwept) {
            self.sweep_by_age(layout::SKILLS_CLASS_PREFIX, &mut report)
                .await?;
        }
        self.sweep_obligations(&mut report).await?;
        let after = self.requests();
        report.list_requests = after.list - before.list;
        report.delete_requests = after.delete_batch - before.delete_batch;
        Ok(report)
    }

    /// SQL selecting the sweep's candidates, where a driver looks for it beside the sweep:
    /// [`crate::scoped::metadata::postgres::CANDIDATES_SQL`], which runs it.
    pub const CANDIDATES_SQL: &'static str = crate::scoped::metadata::postgres::CANDIDATES_SQL;

    /// Deletes every object under the prefixes of `sessions` (one DeleteObjects per 1,000 keys
    /// across sessions: the request count approaches the lower bound, list pages +
    /// ceil(keys / 1000)), counting the deletions in `report`. Answers, per session, whether
    /// some of its objects may remain (a listing or a deletion failed): an S3 failure costs the
    /// sessions it touches, never the whole sweep.
    pub(crate) async fn delete_sessions_objects(
        &self,
        sessions: &[SessionKey],
        report: &mut SweepReport,
    ) -> Result<Vec<bool>, ScopedError> {
        let mut keys: Vec<String> = Vec::new();
        let mut owner: Vec<usize> = Vec::new();
        let mut incomplete = vec![false; sessions.len()];
        for (i, session) in sessions.iter().enumerate() {
            match self.list_keys(&session.prefix()).await {
                Ok(listed) => {
                    for (k, _) in listed {
                        keys.push(k);
                        owner.push(i);
                    }
                }
                Err(ScopedError::Storage { .. }) => incomplete[i] = true,
                Err(e) => return Err(e),
            }
        }
        let failed: std::collections::BTreeSet<String> = match self.delete_keys(&keys).await {
            Ok(failed) => failed.into_iter().collect(),
            // A whole request failed: which of its keys went is unknown, so none count.
            Err(ScopedError::Storage { .. }) => keys.iter().cloned().collect(),
            Err(e) => return Err(e),
        };
        for (k, o) in keys.iter().zip(&owner) {
            if failed.contains(k) {
                incomplete[*o] = true;
            }
        }
        report.objects_deleted += (keys.len() - failed.len()) as u64;
        Ok(incomplete)
    }

    async fn sweep_idle_sessions(&self, report: &mut SweepReport) -> Result<(), ScopedError> {
        let now = self.now().0;
        let ignoring_waits = self.is(ScopedMutant::WaitsIgnored);
        // The sweep-unlocked bug: candidates read without claiming their rows, so a write can
        // touch the session and land between the listing and the deletion.
        let claim = !self.is(ScopedMutant::SweepUnlocked);
        loop {
            let mut tx = self.metadata().begin().await?;
            // Any error rolls back at once and releases the claimed rows (see `settle`).
            let result: Result<bool, ScopedError> = async {
                let sessions = tx
                    .claim_idle_sessions(
                        now,
                        self.config().ttl_ms(),
                        self.config().sweep_chunk,
                        ignoring_waits,
                        claim,
                    )
                    .await?;
                // The close-waits-for-ttl mutant keeps a closed session past its TTL until its
                // grace ends (SPEC SL-3.1 takes the earlier of the two).
                let sessions = self.held_by_close_grace(tx.as_mut(), sessions).await?;
                if let Some(pause) = &self.config().sweep_pause {
                    // Once per rendezvous: a later chunk of the same sweep does not stop again.
                    if !pause.used.swap(true, Ordering::SeqCst) {
                        pause.reached.notify_one();
                        pause.resume.notified().await;
                    }
                }
                if sessions.is_empty() {
                    return Ok(false);
                }
                let claimed = sessions.len() as i64;
                // An S3 failure costs the sessions it touches, not the sweep: each claimed
                // session ends either swept or marked unfinished, never as if never claimed.
                let incomplete = self.delete_sessions_objects(&sessions, report).await?;
                self.crash(CrashPoint::AfterSessionObjectsDeleted)?;
                for (i, session) in sessions.iter().enumerate() {
                    if incomplete[i] {
                        // Left unswept for the next sweep, and marked so that an operation
                        // arriving first deletes the rest before it revives the session.
                        tx.mark_sweep_unfinished(session, self.now().0).await?;
                        report.sessions_retried_later += 1;
                        continue;
                    }
                    tx.mark_swept(session, self.now().0).await?;
                    report.sessions_swept += 1;
                }
                // Incomplete sessions stay unswept; looping would pick them straight back up.
                Ok(claimed == self.config().sweep_chunk && report.sessions_retried_later == 0)
            }
            .await;
            if !settle(tx, result, "commit sweep").await? {
                return Ok(());
            }
        }
    }

    /// The age-only bug (and the skills-swept bug): delete by object age under a class prefix,
    /// knowing nothing about session activity.
    async fn sweep_by_age(&self, class: &str, report: &mut SweepReport) -> Result<(), ScopedError> {
        let cutoff = self.now().0.saturating_sub(self.config().ttl_ms());
        let mut doomed = Vec::new();
        for (key, _) in self.list_keys(class).await? {
            let written = self.written_at_ms(&key).await?;
            if written <= cutoff {
                doomed.push(key);
            }
        }
        let failed = self.delete_keys(&doomed).await?;
        report.objects_deleted += (doomed.len() - failed.len()) as u64;
        Ok(())
    }

    /// Empties pending deletion obligations, a chunk at a time: each claimed prefix is listed,
    /// the keys of the whole chunk are deleted in batches of 1,000, and only then, in the same
    /// transaction, is each fully emptied obligation recorded and marked done. A crash anywhere
    /// before the commit leaves every obligation of the chunk pending for the next sweep.
    async fn sweep_obligations(&self, report: &mut SweepReport) -> Result<(), ScopedError> {
        if self.is(ScopedMutant::DeletionBeforeRecord) {
            for id in self.metadata().pending_obligation_ids().await? {
                self.meet_obligation_marking_first(id, report).await?;
            }
            return Ok(());
        }
        loop {
            let mut tx = self.metadata().begin().await?;
            let result: Result<bool, ScopedError> = async {
                let rows = tx.claim_obligations(self.config().sweep_chunk).await?;
                if rows.is_empty() {
                    return Ok(false);
                }
                let claimed = rows.len() as i64;
                let mut obligations: Vec<(i64, String, Vec<String>)> = Vec::new();
                for (id, prefix) in rows {
                    let keys = if prefix.starts_with(layout::SKILLS_CLASS_PREFIX)
                        && self.is(ScopedMutant::WorkspaceDeletionSparesSkills)
                    {
                        // The mutant reads "never swept" as "never deleted": the obligation is
                        // recorded met with the skill versions left in place.
                        Vec::new()
                    } else {
                        self.list_keys(&prefix)
                            .await?
                            .into_iter()
                            .map(|(k, _)| k)
                            .collect()
                    };
                    obligations.push((id, prefix, keys));
                }
                // One DeleteObjects per 1,000 keys across the chunk; a key under two recorded
                // prefixes is sent once.
                let unique: Vec<String> = obligations
                    .iter()
                    .flat_map(|(_, _, keys)| keys.iter().cloned())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let failed: std::collections::BTreeSet<String> =
                    self.delete_keys(&unique).await?.into_iter().collect();
                report.objects_deleted += (unique.len() - failed.len()) as u64;
                self.crash(CrashPoint::AfterObligationObjectsDeleted)?;
                let mut retried = 0;
                for (id, prefix, keys) in &obligations {
                    if keys.iter().any(|k| failed.contains(k)) {
                        // Left pending: recorded done only once its prefix is empty.
                        retried += 1;
                        continue;
                    }
                    tx.record_obligation(*id, prefix, keys.len() as i64, self.now().0)
                        .await?;
                    tx.mark_done(*id, self.now().0).await?;
                    report.obligations_completed += 1;
                }
                report.obligations_retried_later += retried;
                Ok(claimed == self.config().sweep_chunk && retried == 0)
            }
            .await;
            if !settle(tx, result, "commit obligations").await? {
                return Ok(());
            }
        }
    }

    /// The deletion-before-record bug: the obligation is closed first, the objects deleted
    /// after, the record written last; a crash in between performs a deletion nobody recorded.
    async fn meet_obligation_marking_first(
        &self,
        id: i64,
        report: &mut SweepReport,
    ) -> Result<(), ScopedError> {
        let Some(prefix) = self
            .metadata()
            .mark_done_if_pending(id, self.now().0)
            .await?
        else {
            return Ok(());
        };
        let keys: Vec<String> = self
            .list_keys(&prefix)
            .await?
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let failed = self.delete_keys(&keys).await?;
        report.objects_deleted += (keys.len() - failed.len()) as u64;
        self.crash(CrashPoint::AfterObligationObjectsDeleted)?;
        let mut tx = self.metadata().begin().await?;
        let r = tx
            .record_obligation(id, &prefix, keys.len() as i64, self.now().0)
            .await;
        settle(tx, r, "commit record").await?;
        report.obligations_completed += 1;
        Ok(())
    }
}

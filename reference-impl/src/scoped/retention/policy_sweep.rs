//! The policy sweep (SPEC SL-1): run by [`ScopedStore::sweep`] after the idle sessions and
//! before the deletion obligations, with the handed-in time. It takes the sessions the count
//! policies sweep ([`super::count`], SL-2) and the closed sessions whose grace has ended
//! ([`super::close`], SL-3) together:
//!
//! - Claim, then delete, then mark, in one transaction per pass: the pass claims its sessions'
//!   rows (`FOR UPDATE SKIP LOCKED`: a row another sweep or a write holds is passed by, SL-1.3),
//!   lists them, deletes every key of every session of the pass in DeleteObjects batches of at
//!   most 1,000 (across sessions and agents, SL-1.2), and marks each session swept, or
//!   unfinished if any of its keys failed (SC-5.5), before it commits. A crash before the
//!   commit leaves the rows unmarked and the next sweep lists what is left and marks it; no mark
//!   is ever written for a deletion that did not happen.
//! - A pass takes at most `sweep_chunk` sessions, and stops ranking agents once it holds that
//!   many, so a transaction's locks stay bounded (an agent's sessions past its count are
//!   claimed together, so one agent with more is swept in one pass all the same). A count ranks
//!   its agent's sessions as committed, without locking them, and claims only those past the
//!   count: the sessions it keeps are never locked by the sweep, so the conversations going on
//!   in them never wait for it.
//!
//! The lifecycle rules are left alone (SL-1.1): the backstop stays on the bucket whatever the
//! policies sweep.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use crate::scoped::error::CrashPoint;
use crate::scoped::error::ScopedError;
use crate::scoped::metadata::{MetaTx, SessionKey};
use crate::scoped::retention::SweepReport;
use crate::scoped::store::{settle, ScopedStore};
use crate::scoped::ScopedMutant;

/// What one pass of the policy sweep leaves to do.
#[derive(Default)]
struct Pass {
    /// Another pass may find more (agents left, or a full chunk of closes all swept).
    more: bool,
    /// Sessions marked swept before their deletion (the policy-marks-before-deleting mutant),
    /// deleted after the commit.
    delete_after: Vec<SessionKey>,
}

/// A count policy as [`crate::scoped::metadata::Metadata::session_counts`] answers it.
type CountPolicy = (String, String, i64);

impl ScopedStore {
    /// The policy sweep: count policies, then closes, a chunk of sessions per transaction.
    pub(crate) async fn sweep_policies(&self, report: &mut SweepReport) -> Result<(), ScopedError> {
        let counts = self.metadata().session_counts().await?;
        let chunk = usize::try_from(self.config().sweep_chunk.max(1)).unwrap_or(usize::MAX);
        let mut next_agent = 0;
        // Sessions a pass of this sweep failed to empty: left for the next sweep, not retried
        // by the next pass.
        let mut failed = BTreeSet::new();
        let swept_before = report.sessions_swept;
        loop {
            let mut tx = self.metadata().begin().await?;
            let result = self
                .policy_pass(
                    tx.as_mut(),
                    &counts,
                    &mut next_agent,
                    chunk,
                    &mut failed,
                    report,
                )
                .await;
            let pass = settle(tx, result, "commit policy sweep").await?;
            if !pass.delete_after.is_empty() {
                // The mutant's marks are committed; whatever this deletion leaves stays.
                self.delete_sessions_objects(&pass.delete_after, report)
                    .await?;
                self.crash(CrashPoint::AfterSessionObjectsDeleted)?;
            }
            if !pass.more {
                break;
            }
        }
        if self.is(ScopedMutant::SweeperDropsBackstop)
            && (!counts.is_empty() || report.sessions_swept > swept_before)
        {
            // The mutant trusts the sweeper alone once a policy is at work.
            let _ = self
                .s3_client()
                .delete_bucket_lifecycle(&self.config().bucket)
                .await;
        }
        Ok(())
    }

    /// One transaction of the policy sweep: claims up to `chunk` sessions (the count policies'
    /// from `counts[*next_agent..]`, then closes), deletes their keys together, marks them.
    async fn policy_pass(
        &self,
        tx: &mut dyn MetaTx,
        counts: &[CountPolicy],
        next_agent: &mut usize,
        chunk: usize,
        failed: &mut BTreeSet<SessionKey>,
        report: &mut SweepReport,
    ) -> Result<Pass, ScopedError> {
        let mut doomed: BTreeSet<SessionKey> = BTreeSet::new();
        // Rows this pass holds: a count ranks its agent's sessions without locking them and
        // claims only those past the count (a write to a session it keeps never waits for the
        // sweep), so the pass stops taking agents once it holds a chunk's worth.
        let mut held = 0;
        while *next_agent < counts.len() && doomed.len() < chunk && held < chunk {
            let (ws, agent, keep_last) = &counts[*next_agent];
            *next_agent += 1;
            // The mutant counts the workspace's sessions, every agent's.
            let agent = (!self.is(ScopedMutant::CountPerWorkspace)).then_some(agent.as_str());
            let past = self.beyond_the_count(tx.agent_standings(ws, agent).await?, *keep_last);
            if past.is_empty() {
                continue;
            }
            // A session being written is passed by (`SKIP LOCKED`): its activity may make it
            // the newest, and the next sweep ranks it again.
            let claimed = tx.claim_sessions(&past).await?;
            held += claimed.len();
            // Ranked again under the claims: activity committed between the first reading and
            // the claim may have brought a claimed session back among the N (a kept one only
            // grows newer, and what it displaces is the next sweep's).
            let still: BTreeSet<SessionKey> = self
                .beyond_the_count(tx.agent_standings(ws, agent).await?, *keep_last)
                .into_iter()
                .collect();
            doomed.extend(claimed.into_iter().filter(|k| still.contains(k)));
        }
        let mut closes_more = false;
        if doomed.len() < chunk {
            let limit = (chunk - doomed.len()) as i64;
            let (closed, claimed) = self.claim_closed_past_grace(tx, limit).await?;
            let before = doomed.len();
            doomed.extend(closed);
            // A full chunk of closes may hide more; one that added nothing (all counted already,
            // or a mutant's filter) must not be claimed again and again.
            closes_more = claimed as i64 == limit && doomed.len() > before;
        }
        doomed.retain(|s| !failed.contains(s));
        if let Some(pause) = &self.config().policy_pause {
            // Once per rendezvous: a later pass of the same sweep does not stop again.
            if !pause.used.swap(true, Ordering::SeqCst) {
                pause.reached.notify_one();
                pause.resume.notified().await;
            }
        }
        let agents_left = *next_agent < counts.len();
        let doomed: Vec<SessionKey> = doomed.into_iter().collect();
        if doomed.is_empty() {
            return Ok(Pass {
                more: agents_left,
                ..Pass::default()
            });
        }
        let now = self.now().0;
        if self.is(ScopedMutant::PolicyMarksBeforeDeleting) {
            for session in &doomed {
                tx.mark_swept(session, now).await?;
            }
            report.sessions_swept += doomed.len() as u64;
            return Ok(Pass {
                more: agents_left || closes_more,
                delete_after: doomed,
            });
        }
        let incomplete = if self.is(ScopedMutant::PolicyDeletesPerSession) {
            let mut incomplete = Vec::with_capacity(doomed.len());
            for session in &doomed {
                let one = self
                    .delete_sessions_objects(std::slice::from_ref(session), report)
                    .await?;
                incomplete.extend(one);
            }
            incomplete
        } else {
            self.delete_sessions_objects(&doomed, report).await?
        };
        self.crash(CrashPoint::AfterSessionObjectsDeleted)?;
        for (session, incomplete) in doomed.iter().zip(&incomplete) {
            if *incomplete {
                // Left unswept for the next sweep, and marked so that an operation arriving
                // first deletes the rest before it revives the session (SC-5.5).
                tx.mark_sweep_unfinished(session, now).await?;
                report.sessions_retried_later += 1;
                failed.insert(session.clone());
            } else {
                tx.mark_swept(session, now).await?;
                report.sessions_swept += 1;
            }
        }
        let all_done = incomplete.iter().all(|i| !i);
        Ok(Pass {
            more: agents_left || (closes_more && all_done),
            ..Pass::default()
        })
    }
}

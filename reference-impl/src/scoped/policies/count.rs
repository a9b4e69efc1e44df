//! "Keep the last N sessions" (SPEC SL-2): a count per agent, ranked by last activity, swept
//! as the idle sweep sweeps a session (files and text gone, row kept, marked swept), in
//! chunks across agents so its DeleteObjects carry up to 1,000 keys each (SL-1.2).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use super::MAX_KEEP_LAST;
use crate::scoped::error::ScopedError;
use crate::scoped::layout::Id;
use crate::scoped::metadata::{SessionKey, SessionStanding};
use crate::scoped::store::{settle, CrashPoint, ScopedStore, SweepReport};
use crate::scoped::ScopedMutant;

impl ScopedStore {
    /// Sets (`Some(n)`) or removes (`None`) an agent's count policy. A count outside
    /// 1..=[`MAX_KEEP_LAST`] is `invalid_policy` and an agent that does not exist
    /// `unknown_entity`; either changes nothing (SL-1.4).
    pub async fn set_session_count(
        &self,
        ws: &str,
        agent: &str,
        keep_last: Option<i64>,
    ) -> Result<(), ScopedError> {
        let mutant = self.config().mutant;
        let ws = Id::checked(ws, mutant)?;
        let agent = Id::checked(agent, mutant)?;
        if let Some(n) = keep_last {
            if !(1..=MAX_KEEP_LAST).contains(&n) {
                return Err(ScopedError::InvalidPolicy(format!(
                    "an agent keeps from 1 to {MAX_KEEP_LAST} sessions, not {n}"
                )));
            }
        }
        if self
            .metadata()
            .set_session_count(ws.as_str(), agent.as_str(), keep_last)
            .await?
        {
            Ok(())
        } else {
            Err(ScopedError::UnknownEntity {
                kind: "agent",
                id: agent.as_str().to_string(),
            })
        }
    }

    /// The sessions of one agent a count of `keep_last` sweeps now: every session past the
    /// newest `keep_last` by last activity (SL-2.2), not swept yet, with no wait (SL-2.3).
    fn beyond_the_count(
        &self,
        mut standings: Vec<SessionStanding>,
        keep_last: i64,
    ) -> Vec<SessionKey> {
        if self.is(ScopedMutant::CountByCreation) {
            standings.sort_by_key(|s| (Reverse(s.created_at_ms), s.key.clone()));
        } else {
            standings.sort_by_key(|s| (Reverse(s.last_activity_ms), s.key.clone()));
        }
        let sweeps_waiting = self.is(ScopedMutant::CountSweepsWaiting);
        standings
            .into_iter()
            .skip(usize::try_from(keep_last).unwrap_or(usize::MAX))
            .filter(|s| !s.swept && (sweeps_waiting || !s.waiting))
            .map(|s| s.key)
            .collect()
    }

    /// Every count policy, swept across agents a chunk at a time (SL-1.2). Each agent's
    /// sessions are ranked first from a plain read, holding no lock and sending no S3 request;
    /// then each chunk of up to `sweep_chunk` sessions past a count is claimed in one
    /// transaction (rows another holds are passed by, SL-1.3), confirmed past its count under
    /// the claim (ranked again from what is committed now: a session written or revived since
    /// the first ranking is left), emptied with one DeleteObjects per 1,000 keys across the
    /// chunk, and marked swept in the same transaction; a session any of whose keys failed is
    /// marked unfinished instead, as SC-5.5 does. Only the sessions being swept are ever held,
    /// so a conversation being written never waits for another agent's count.
    pub(crate) async fn sweep_session_counts(
        &self,
        report: &mut SweepReport,
    ) -> Result<(), ScopedError> {
        let policies = self.metadata().session_counts().await?;
        // The mutant counts the workspace's sessions, every agent's.
        let per_workspace = self.is(ScopedMutant::CountPerWorkspace);
        let counted = |agent: &str| (!per_workspace).then(|| agent.to_string());
        let mut doomed: Vec<(SessionKey, usize)> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut tx = self.metadata().begin().await?;
        let ranked: Result<(), ScopedError> = async {
            for (i, (ws, agent, keep_last)) in policies.iter().enumerate() {
                let standings = tx.agent_sessions(ws, counted(agent).as_deref()).await?;
                for key in self.beyond_the_count(standings, *keep_last) {
                    if seen.insert(key.clone()) {
                        doomed.push((key, i));
                    }
                }
            }
            Ok(())
        }
        .await;
        settle(tx, ranked, "rank count policies").await?;
        let chunk = usize::try_from(self.config().sweep_chunk.max(1)).unwrap_or(1000);
        for part in doomed.chunks(chunk) {
            let mut tx = self.metadata().begin().await?;
            let result: Result<(), ScopedError> = async {
                let keys: Vec<SessionKey> = part.iter().map(|(k, _)| k.clone()).collect();
                let claimed: BTreeSet<SessionKey> =
                    tx.claim_sessions(&keys).await?.into_iter().collect();
                let mut by_policy: BTreeMap<usize, Vec<SessionKey>> = BTreeMap::new();
                for (key, i) in part {
                    if claimed.contains(key) {
                        by_policy.entry(*i).or_default().push(key.clone());
                    }
                }
                let mut sweeping = Vec::new();
                for (i, keys) in by_policy {
                    let (ws, agent, keep_last) = &policies[i];
                    let standings = tx.agent_sessions(ws, counted(agent).as_deref()).await?;
                    let still: BTreeSet<SessionKey> = self
                        .beyond_the_count(standings, *keep_last)
                        .into_iter()
                        .collect();
                    sweeping.extend(keys.into_iter().filter(|k| still.contains(k)));
                }
                if sweeping.is_empty() {
                    return Ok(());
                }
                let incomplete = self.delete_sessions_objects(&sweeping, report).await?;
                self.crash(CrashPoint::AfterSessionObjectsDeleted)?;
                let now = self.now().0;
                for (i, session) in sweeping.iter().enumerate() {
                    if incomplete[i] {
                        tx.mark_sweep_unfinished(session, now).await?;
                        report.sessions_retried_later += 1;
                    } else {
                        tx.mark_swept(session, now).await?;
                        report.sessions_swept += 1;
                    }
                }
                Ok(())
            }
            .await;
            settle(tx, result, "commit count sweep").await?;
        }
        Ok(())
    }
}

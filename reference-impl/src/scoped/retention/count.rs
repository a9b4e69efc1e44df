//! "Keep the last N sessions" (SPEC SL-2): a count per agent, ranked by last activity, swept
//! as the idle sweep sweeps a session (files and text gone, row kept, marked swept) by the
//! policy sweep ([`super::policy_sweep`]).

use std::cmp::Reverse;

use super::MAX_KEEP_LAST;
use crate::scoped::error::ScopedError;
use crate::scoped::layout::Id;
use crate::scoped::metadata::{SessionKey, SessionStanding};
use crate::scoped::store::ScopedStore;
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

    /// The sessions of one agent a count of `keep_last` sweeps now: of the sessions whose
    /// files are still kept, every one past the newest `keep_last` by last activity (SL-2.2),
    /// with no wait (SL-2.3). A session a sweep emptied, or left unfinished, holds nothing to
    /// keep and takes no place among the N (SL-2.1); an unfinished one is the next sweep's to
    /// finish whatever the count says ([`ScopedStore::finish_unfinished_sweeps`], SL-2.4).
    pub(super) fn beyond_the_count(
        &self,
        standings: Vec<SessionStanding>,
        keep_last: i64,
    ) -> Vec<SessionKey> {
        // The mutant ranks every session, emptied or not, and passes the emptied ones by only
        // after the count has skipped its N.
        let ranks_emptied = self.is(ScopedMutant::CountRanksEmptiedSessions);
        let mut kept: Vec<SessionStanding> = standings
            .into_iter()
            .filter(|s| ranks_emptied || !(s.swept || s.sweep_unfinished))
            .collect();
        if self.is(ScopedMutant::CountByCreation) {
            kept.sort_by_key(|s| (Reverse(s.created_at_ms), s.key.clone()));
        } else {
            kept.sort_by_key(|s| (Reverse(s.last_activity_ms), s.key.clone()));
        }
        let sweeps_waiting = self.is(ScopedMutant::CountSweepsWaiting);
        kept.into_iter()
            .skip(usize::try_from(keep_last).unwrap_or(usize::MAX))
            .filter(|s| !s.swept && (sweeps_waiting || !s.waiting))
            .map(|s| s.key)
            .collect()
    }
}

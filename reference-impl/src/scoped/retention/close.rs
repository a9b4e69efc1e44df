//! A session's close (SPEC SL-3): the host closes a session, and the policy sweep takes a
//! closed session with no wait `close_grace_days` after its close, unless its idle TTL (the idle
//! sweep's, SC-5.3) came first. Closing is not activity; activity reopens; a repeated close
//! keeps the first close time. The sweep itself is [`super::policy_sweep`]'s.

use crate::clock::DAY_MS;
use crate::scoped::error::ScopedError;
use crate::scoped::layout::TurnSpace;
use crate::scoped::metadata::{MetaTx, SessionKey, SessionStanding};
use crate::scoped::store::{session_key, settle, ScopedStore};
use crate::scoped::ScopedMutant;

impl ScopedStore {
    /// Closes the session (a request of the host's, never a guest's). Not activity: its last
    /// activity, its swept mark and its waits are left as they are. A session closed already
    /// keeps its first close time. A session that does not exist is `unknown_entity`.
    pub async fn close_session(&self, turn: &TurnSpace) -> Result<(), ScopedError> {
        let key = session_key(turn);
        let now = self.now().0;
        let mut tx = self.metadata().begin().await?;
        let result: Result<(), ScopedError> = async {
            // Waits, as a write does, for a sweep holding the row, so a close never lands
            // between a sweep's claim and its mark.
            if tx.lock_session(&key).await?.is_none() {
                return Err(ScopedError::UnknownEntity {
                    kind: "session",
                    id: turn.session.to_string(),
                });
            }
            if self.is(ScopedMutant::CloseIsActivity) {
                tx.touch(&key, now).await?;
            }
            let first = tx.closed_at(&key).await?;
            if first.is_none() || self.is(ScopedMutant::RepeatedCloseMovesTime) {
                tx.set_closed_at(&key, Some(now)).await?;
            }
            Ok(())
        }
        .await;
        settle(tx, result, "commit close").await
    }

    /// Records activity in the session the transaction holds, which reopens it (SL-3.2): the
    /// close goes with the swept marks. The activity-keeps-close mutant puts the close back.
    pub(crate) async fn touch_reopening(
        &self,
        tx: &mut dyn MetaTx,
        key: &SessionKey,
    ) -> Result<(), ScopedError> {
        let kept = if self.is(ScopedMutant::ActivityKeepsClose) {
            tx.closed_at(key).await?
        } else {
            None
        };
        tx.touch(key, self.now().0).await?;
        if kept.is_some() {
            tx.set_closed_at(key, kept).await?;
        }
        Ok(())
    }

    fn close_grace_ms(&self) -> i64 {
        i64::from(self.config().close_grace_days) * DAY_MS
    }

    /// Closed sessions whose grace has ended, with no wait (SC-5.2), claimed for `tx` (rows
    /// another sweep holds are passed by, SL-1.3), at most `limit`; `claimed` is how many the
    /// query answered, before any mutant's filter.
    pub(crate) async fn claim_closed_past_grace(
        &self,
        tx: &mut dyn MetaTx,
        limit: i64,
    ) -> Result<(Vec<SessionKey>, usize), ScopedError> {
        let now = self.now().0;
        let cutoff = now.saturating_sub(self.close_grace_ms());
        let claimed: Vec<SessionStanding> = tx
            .claim_closed_sessions(
                cutoff,
                limit,
                self.is(ScopedMutant::CloseSweepsWaiting),
                !self.is(ScopedMutant::PolicySweepUnclaimed),
            )
            .await?;
        let n = claimed.len();
        let ttl_cutoff = now.saturating_sub(self.config().ttl_ms());
        Ok((
            claimed
                .into_iter()
                // The close-waits-for-ttl mutant also waits for the idle TTL: the later of the two.
                .filter(|s| {
                    !self.is(ScopedMutant::CloseWaitsForTtl) || s.last_activity_ms <= ttl_cutoff
                })
                .map(|s| s.key)
                .collect(),
            n,
        ))
    }

    /// The idle sweep's candidates as the close-waits-for-ttl mutant sees them: a closed session
    /// whose grace has not ended is kept, though idle past its TTL. Without the mutant, all of
    /// them (SL-3.1: the earlier of the two limits).
    pub(crate) async fn held_by_close_grace(
        &self,
        tx: &mut dyn MetaTx,
        sessions: Vec<SessionKey>,
    ) -> Result<Vec<SessionKey>, ScopedError> {
        if !self.is(ScopedMutant::CloseWaitsForTtl) {
            return Ok(sessions);
        }
        let cutoff = self.now().0.saturating_sub(self.close_grace_ms());
        let mut kept = Vec::with_capacity(sessions.len());
        for s in sessions {
            match tx.closed_at(&s).await? {
                Some(closed) if closed > cutoff => {}
                _ => kept.push(s),
            }
        }
        Ok(kept)
    }
}

//! A count set after a sweep emptied a newer session (SPEC SL-2.1, generator 7): the shape of
//! the scenario `a-session-a-sweep-already-emptied-takes-no-place-among-the-last-n`, staged with
//! random parameters. The operation closes one of an agent's kept sessions (by its rank, newest
//! first), moves the clock past its grace and sweeps, then sets the agent's count to the number
//! of its sessions still kept (or fewer) and sweeps again, with no activity in between.
//!
//! What the model predicts is what it predicts of every close, count and sweep (`close.rs`,
//! `policies.rs`): a session a sweep emptied holds nothing to keep and takes no place among the
//! N, so the count keeps the newest of the sessions whose files are kept.
//!
//! Why a composite: the other operations touch every session often, and activity makes an
//! emptied session a kept one again, so a count met an emptied session newer than a kept one
//! seldom (`count-ranks-emptied-sessions` was out of the generator's reach).

use std::cmp::Reverse;
use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tidemark_reference::clock::{Clock, DAY_MS, HOUR_MS};

use super::close::CLOSE_GRACE_DAYS;
use super::ops::{agent, ModelOp, SESSIONS};
use super::{Runner, Step};

/// One staging: the agent, which of its kept sessions is closed (0 the newest), how far below
/// the number left the count is set (0 or 1), and the hours past the grace the first sweep runs.
pub(super) fn one(rng: &mut ChaCha8Rng) -> ModelOp {
    ModelOp::EmptiedThenCount {
        agent: rng.gen_range(0..2),
        rank: rng.gen_range(0..2),
        lower: rng.gen_range(0..2),
        hours: rng.gen_range(0..24),
    }
}

/// How `ModelOp`'s `Display` writes it.
pub(super) fn describe(op: &ModelOp, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let ModelOp::EmptiedThenCount {
        agent: a,
        rank,
        lower,
        hours,
    } = *op
    else {
        unreachable!("not an emptied session then a count: {op:?}")
    };
    write!(
        f,
        "agent {} closes its kept session of rank {rank} (newest first, the oldest left out), advance {CLOSE_GRACE_DAYS}d{hours}h, sweep, keep its last sessions kept less {lower}, sweep",
        agent(a)
    )
}

impl Runner<'_> {
    /// The agent's sessions whose files are kept (created, not deleted, not swept), newest
    /// first.
    fn kept_sessions(&self, a: &str) -> Vec<usize> {
        let mut kept: Vec<usize> = (0..SESSIONS.len())
            .filter(|&i| {
                let s = &self.model.sessions[i];
                SESSIONS[i].0 == a && s.created && !s.deleted && !s.swept
            })
            .collect();
        kept.sort_by_key(|&i| Reverse(self.model.sessions[i].last_activity));
        kept
    }

    /// [`ModelOp::EmptiedThenCount`].
    pub(super) async fn emptied_then_count(
        &mut self,
        step: usize,
        agent_index: u8,
        rank: u8,
        lower: u8,
        hours: u8,
        now: i64,
    ) -> Step {
        let a = agent(agent_index);
        let kept = self.kept_sessions(a);
        if self.model.deleted_agents.contains(a) || kept.len() < 2 {
            // An emptied session ranks before a kept one only if one is left to keep.
            self.note("skipped: fewer than two kept sessions");
            return Ok(());
        }
        let closed = kept[usize::from(rank) % (kept.len() - 1)];
        self.close(closed, 0, now).await?;
        self.clock
            .advance_ms(i64::from(CLOSE_GRACE_DAYS) * DAY_MS + i64::from(hours) * HOUR_MS);
        let now = self.clock.now().0;
        self.plain_sweep(now).await?;
        let left = self.kept_sessions(a).len() as i64;
        let keep = (left - i64::from(lower)).max(1);
        let count = ModelOp::SetCount {
            agent: agent_index,
            keep: Some(keep),
        };
        self.note(format!("keep the last {keep} of {a}'s sessions"));
        self.policy(step, &count, now).await?;
        self.plain_sweep(now).await
    }
}

//! A session's close in a model sequence (SPEC SL-3, generator 7), among the turns, waits,
//! count policies, sweeps, faults and clock jumps the other operations bring.
//!
//! What the model predicts:
//! - closing a live session is answered ok and is no activity: its last activity and its
//!   swept mark stay as they were; a session that is gone is `unknown_entity` (SL-3.1, SL-1.4);
//! - a closed session with no wait is taken by the first policy sweep at or after its close plus
//!   [`CLOSE_GRACE_DAYS`], unless the idle sweep took it at its TTL first (whichever comes
//!   first); a wait holds it as it holds any session (SL-3.1);
//! - activity reopens it (the close goes with every `touched`, `state.rs`), and closing a closed
//!   session keeps the first close time (SL-3.2).
//!
//! A close needs no bucket: what it decides shows in what the sweeps after it leave, checked
//! after every sweep as every sweep is (`check_bucket_and_ledger`).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tidemark_reference::clock::{Clock, DAY_MS, HOUR_MS};
use tidemark_reference::scoped::ScopedError;

use super::ops::{session, ModelOp, SESSIONS};
use super::state::Model;
use super::{diverged, Runner, Step};

/// The `close_grace_days` sequences run with (SL-3.1's knob; SPEC's default is 7): shorter
/// than the idle TTL, and than the advances a sequence draws, so closes are swept by their
/// grace in most seeds and by the TTL in some (a workspace TTL shorter than it, SL-5.1).
pub(super) const CLOSE_GRACE_DAYS: u32 = 3;

/// One close: one in two is repeated an hour to five days later, before the grace of the
/// first has ended or after it, so the sweeps after it fall between the two graces (SL-3.2).
/// Every session is closed as often: the later sessions, seldom touched, are those whose close
/// is not undone by activity, so one sweep's policy pass often takes several (SL-1.2).
pub(super) fn one(rng: &mut ChaCha8Rng) -> ModelOp {
    ModelOp::Close {
        session: rng.gen_range(0..SESSIONS.len() as u8),
        again_after_hours: if rng.gen_bool(0.5) {
            rng.gen_range(1..=120)
        } else {
            0
        },
    }
}

fn who(i: usize) -> String {
    let (a, s) = SESSIONS[i];
    format!("{a}/{s}")
}

/// How `ModelOp`'s `Display` writes a close.
pub(super) fn describe(op: &ModelOp, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match *op {
        ModelOp::Close {
            session: s,
            again_after_hours: 0,
        } => write!(f, "close session {}", who(session(s))),
        ModelOp::Close {
            session: s,
            again_after_hours: h,
        } => write!(
            f,
            "close session {}, advance {h}h, close it again",
            who(session(s))
        ),
        _ => unreachable!("not a close: {op:?}"),
    }
}

impl Model {
    /// The close part of the policy sweep (SL-3.1): each live session closed at least the
    /// grace ago, with no wait and not swept already (by the idle sweep, its count, or an
    /// earlier close), loses its files and is marked swept. Returns how many files went.
    pub(super) fn sweep_closes(&mut self, now: i64) -> usize {
        let grace = i64::from(CLOSE_GRACE_DAYS) * DAY_MS;
        let mut removed = 0;
        for (i, s) in self.sessions.iter_mut().enumerate() {
            let due = s.closed.is_some_and(|c| now - c >= grace);
            if s.created && !s.deleted && !s.swept && due && s.waits.is_empty() {
                removed += s.files.len();
                s.files.clear();
                s.swept = true;
                self.emptied.insert(i);
            }
        }
        removed
    }
}

impl Runner<'_> {
    /// [`ModelOp::Close`]: closes session `i`, and again `again_after_hours` later if above 0.
    pub(super) async fn close(&mut self, i: usize, again_after_hours: u8, now: i64) -> Step {
        self.close_once(i, now).await?;
        if again_after_hours > 0 {
            self.clock
                .advance_ms(i64::from(again_after_hours) * HOUR_MS);
            let later = self.clock.now().0;
            self.close_once(i, later).await?;
        }
        Ok(())
    }

    /// One close at `now`: ok for a live session, the first close kept, nothing else changed
    /// (closing is not activity); `unknown_entity` for a session that is gone.
    async fn close_once(&mut self, i: usize, now: i64) -> Step {
        let r = self.store.close_session(&self.turns[i]).await;
        let m = &mut self.model.sessions[i];
        match (r, m.deleted) {
            (Ok(()), false) => {
                m.closed.get_or_insert(now);
                Ok(())
            }
            (Err(ScopedError::UnknownEntity { .. }), true) => Ok(()),
            (r, deleted) => diverged(
                format!(
                    "close session {}: {}",
                    who(i),
                    if deleted {
                        "refused unknown_entity (the session is deleted)"
                    } else {
                        "ok"
                    }
                ),
                format!("close session {}: {:?}", who(i), r.map_err(|e| e.kind())),
            ),
        }
    }
}

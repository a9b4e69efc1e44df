//! Two sweeps at once over closed sessions past their grace (SPEC SL-1.3, generator 7), staged
//! as the scenarios stage `concurrent_sweeps` ([`crate::profiles::scoped::sweeps_at_once`]):
//! the first sweep stops once its policy pass has claimed its sessions, the second runs beside
//! it, then the first goes on.
//!
//! The operation closes the sessions it names, sweeps (a plain sweep, judged as every sweep is)
//! one millisecond before their grace ends, so that sweep takes everything else then due, and
//! races two sweeps at the instant the grace ends: what the pair must take is the closed
//! sessions and whatever else the model sees come due in that millisecond (an erasure
//! subject's session, which the model does not follow, would be counted unnamed were its TTL
//! to end in it; none did in seeds 0-1299 of the memory tier). What the
//! model predicts: each session taken is counted once by the two reports together (the claim
//! makes the second sweep pass by what the first holds), and the bucket and the ledger are as
//! after one sweep (each session's files deleted, each deletion recorded once).
//!
//! Why a composite: the generator's sweeps otherwise run one at a time, so a sweep that takes
//! closed sessions without claiming them (`policy-sweep-unclaimed`) was out of its reach.

use std::fmt;
use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tidemark_reference::clock::{Clock, DAY_MS};
use tidemark_reference::scoped::SweepPause;

use super::close::CLOSE_GRACE_DAYS;
use super::ops::{ModelOp, SESSIONS};
use super::{diverged, Runner, Step};

/// One race: the sessions to close first, as a mask over [`SESSIONS`] (never empty).
pub(super) fn one(rng: &mut ChaCha8Rng) -> ModelOp {
    ModelOp::SweepsAtOnce {
        sessions: rng.gen_range(1..(1u8 << SESSIONS.len())),
    }
}

fn closed(mask: u8) -> impl Iterator<Item = usize> {
    (0..SESSIONS.len()).filter(move |i| mask & (1 << i) != 0)
}

/// How `ModelOp`'s `Display` writes the race.
pub(super) fn describe(op: &ModelOp, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let ModelOp::SweepsAtOnce { sessions } = *op else {
        unreachable!("not two sweeps at once: {op:?}")
    };
    let names: Vec<String> = closed(sessions)
        .map(|i| format!("{}/{}", SESSIONS[i].0, SESSIONS[i].1))
        .collect();
    write!(
        f,
        "close {}, advance to a millisecond before the grace ends, sweep, advance 1ms, sweep twice at once",
        names.join(", ")
    )
}

impl Runner<'_> {
    /// [`ModelOp::SweepsAtOnce`].
    pub(super) async fn sweeps_at_once(&mut self, mask: u8, now: i64) -> Step {
        for i in closed(mask) {
            self.start_session(i, now).await?;
            self.close(i, 0, now).await?;
        }
        self.clock
            .advance_ms(i64::from(CLOSE_GRACE_DAYS) * DAY_MS - 1);
        let before = self.clock.now().0;
        self.plain_sweep(before).await?;
        self.clock.advance_ms(1);
        let now = self.clock.now().0;
        // On a healed store: what faults do to one sweep is the other operations' to explore,
        // and the count is exact only when nothing is left for later.
        self.server.faults().heal();
        let pause = Arc::new(SweepPause::default());
        let mut config = self.config.clone();
        config.policy_pause = Some(pause.clone());
        let first = self.open(config).await?;
        let second = self.open(self.config.clone()).await?;
        let (a, b) = crate::profiles::scoped::sweeps_at_once::race(
            &first,
            &pause,
            &second,
            self.meta.as_ref(),
        )
        .await;
        drop((first, second));
        if let Some(plan) = &self.faults {
            self.server.faults().set_plan(plan.clone());
        }
        let (a, b) = match (a, b) {
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => {
                return diverged(
                    "two sweeps at once on a healed store: both Ok",
                    format!("{:?} and {:?}", a.map(|_| ()), b.map(|_| ())),
                )
            }
        };
        let unswept: Vec<bool> = self
            .model
            .sessions
            .iter()
            .map(|s| !s.swept && !s.deleted)
            .collect();
        self.swept_files += self.model.sweep(now);
        let taken = self
            .model
            .sessions
            .iter()
            .zip(&unswept)
            .filter(|(s, &was)| was && s.swept)
            .count() as u64;
        let counted = a.sessions_swept + b.sessions_swept;
        let left = a.sessions_retried_later + b.sessions_retried_later;
        self.note(format!(
            "two sweeps at once: {} and {} sessions",
            a.sessions_swept, b.sessions_swept
        ));
        if counted != taken || left != 0 {
            return diverged(
                format!("two sweeps at once: {taken} session(s) swept between them, each counted once, none left for later"),
                format!("two sweeps at once: {} + {} session(s) swept, {left} left for later", a.sessions_swept, b.sessions_swept),
            );
        }
        self.check_bucket_and_ledger().await
    }
}

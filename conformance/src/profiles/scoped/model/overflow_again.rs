//! One tool result handed to the store again and again (SPEC SL-7.1, generator 7): every other
//! tool result of a sequence is its own (its step is in it), so none could overflow onto a file
//! that held it before. This one is the same in every session and every step, and the guest may
//! edit the file it overflowed to before it comes again: the overflow may go where this very
//! result is, never over the guest's edit.

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::ops::{session, ModelOp, SESSIONS};
use super::policies::TOOL_OUTPUT_LIMIT_BYTES;
use super::{Runner, Step};

/// The repeated result, twice the limit: the same bytes every time.
fn repeated_result() -> String {
    "the same tool output, again. "
        .chars()
        .cycle()
        .take(2 * TOOL_OUTPUT_LIMIT_BYTES as usize)
        .collect()
}

/// The repeated result in one of the first two sessions (so it comes again to a session it
/// overflowed in before within a sequence); two times in three the guest first edits the file
/// it overflowed to last.
pub(super) fn one(rng: &mut ChaCha8Rng) -> ModelOp {
    ModelOp::OverflowAgain {
        session: rng.gen_range(0..2),
        edit: rng.gen_bool(2.0 / 3.0),
    }
}

fn who(i: usize) -> String {
    let (a, s) = SESSIONS[i];
    format!("{a}/{s}")
}

/// How `ModelOp`'s `Display` writes it.
pub(super) fn describe(op: &ModelOp, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match *op {
        ModelOp::OverflowAgain { session: s, edit } => write!(
            f,
            "{}{} hands in the repeated tool result",
            who(session(s)),
            if edit {
                " edits the file the repeated tool result overflowed to, then"
            } else {
                ""
            }
        ),
        _ => unreachable!("not a repeated tool result: {op:?}"),
    }
}

impl Runner<'_> {
    /// [`ModelOp::OverflowAgain`] in session `i`. Not sent to a session that is gone (SL-7.1:
    /// no harness sends one).
    pub(super) async fn overflow_again(
        &mut self,
        i: usize,
        edit: bool,
        step: usize,
        now: i64,
    ) -> Step {
        if self.model.sessions[i].deleted {
            self.note("skipped: the session is deleted");
            return Ok(());
        }
        if edit {
            let held = self
                .model
                .last_overflow
                .get(&i)
                .filter(|name| self.model.sessions[i].files.contains_key(*name))
                .cloned();
            match held {
                Some(name) => {
                    self.write(i, &name, false, format!("v{step}"), now).await?;
                }
                None => self.note("no file of the repeated result to edit"),
            }
        }
        let what = format!("{} the repeated tool result", who(i));
        if let Some(name) = self
            .hand_tool_result(i, repeated_result(), what, now)
            .await?
        {
            self.model.last_overflow.insert(i, name);
        }
        Ok(())
    }
}

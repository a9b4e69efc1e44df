//! The steps of a session's close and of two sweeps at once (SPEC SL-3, SL-1.3), beside
//! `grammar.rs`'s table (which falls through to [`action`] for a step it does not know):
//!
//! - `close session W/A/S`: the host closes the session.
//! - `sweep twice at once`: two sweeps run together; the expectation is what both swept
//!   (`swept N sessions, M deletions`).

use crate::profiles::scoped::contract::{ScopedOp, Turn};

/// The step `s` (its words) if it is one of this module's; `None` leaves it to the caller's
/// "no such step". `turn` reads a turn as `grammar.rs` does.
pub(super) fn action(
    s: &[&str],
    turn: fn(&str) -> Result<Turn, String>,
) -> Option<Result<ScopedOp, String>> {
    Some(match s {
        ["close", "session", t] => turn(t).map(|turn| ScopedOp::CloseSession { turn }),
        ["sweep", "twice", "at", "once"] => Ok(ScopedOp::ConcurrentSweeps),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(t: &str) -> Result<Turn, String> {
        let mut p = t.split('/');
        match (p.next(), p.next(), p.next()) {
            (Some(w), Some(a), Some(s)) => Ok(Turn::new(w, a, s)),
            _ => Err(format!("not a turn: {t}")),
        }
    }

    #[test]
    fn a_close_names_its_session_and_two_sweeps_are_one_step() {
        assert_eq!(
            action(&["close", "session", "w1/a1/s1"], turn),
            Some(Ok(ScopedOp::CloseSession {
                turn: Turn::new("w1", "a1", "s1")
            }))
        );
        assert!(matches!(
            action(&["close", "session", "w1"], turn),
            Some(Err(_))
        ));
        assert_eq!(
            action(&["sweep", "twice", "at", "once"], turn),
            Some(Ok(ScopedOp::ConcurrentSweeps))
        );
        assert_eq!(action(&["close", "agent", "w1/a1"], turn), None);
    }
}

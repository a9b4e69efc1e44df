//! The scoped vocabulary's erasure steps (SPEC SL-4; `scenarios/scoped/README.md`), kept
//! beside the grammar (`grammar.rs`) rather than in it:
//!
//! - `erase workspace W within DURATION`, `erase agent W/A within DURATION`: an erasure whose
//!   deadline is DURATION after the step's clock (`-1s` stages a deadline already past).
//! - `erasure of W`, `erasure of W/A`: the state of each of the subject's obligations, read by
//!   the harness; expected as `pending`, `met`, `overdue DURATION`, `missed DURATION`, or a
//!   list of them (`["missed 1d", pending]`) when the subject has several.
//! - `proof of W`, `proof of W/A`: the keys its obligations' proofs name (a list of keys).

use tidemark_sim::clip::clip;

use super::words::duration_ms;
use super::{Action, Expect};
use crate::profiles::scoped::contract::ScopedOp;
use crate::profiles::scoped::erasure::parse_state;

/// `erase workspace W within D` or `erase agent W/A within D`, its deadline still D from the
/// step's clock: [`dated`] makes it a time once the loader knows where the clock stands.
pub fn erase(words: &[&str]) -> Result<ScopedOp, String> {
    let ["erase", kind, subject_word, "within", within] = words else {
        return Err("an erasure is `erase workspace W within DURATION` or `erase agent W/A within DURATION`".into());
    };
    let (workspace, agent) = subject(subject_word)?;
    match (*kind, &agent) {
        ("workspace", None) | ("agent", Some(_)) => {}
        ("workspace", Some(_)) => {
            return Err(format!(
                "a workspace is named W, not {:?}; an agent is erased with `erase agent W/A`",
                clip(subject_word)
            ))
        }
        _ => {
            return Err(format!(
                "an agent is named W/A, not {:?}",
                clip(subject_word)
            ))
        }
    }
    Ok(ScopedOp::RequestErasure {
        workspace,
        agent,
        deadline_ms: duration_ms(within)?,
    })
}

/// A subject as a step names it: `W` (a workspace) or `W/A` (an agent of it).
pub fn subject(w: &str) -> Result<(String, Option<String>), String> {
    let parts: Vec<&str> = w.split('/').collect();
    match parts[..] {
        [ws] if !ws.is_empty() => Ok((ws.to_string(), None)),
        [ws, agent] if !ws.is_empty() && !agent.is_empty() => {
            Ok((ws.to_string(), Some(agent.to_string())))
        }
        _ => Err(format!(
            "an erasure's subject is a workspace W or an agent W/A, not {:?}",
            clip(w)
        )),
    }
}

/// `action` with an erasure's deadline made a time: the epoch, plus `offset_ms` (where the
/// scenario's clock stands at the step), plus what the step wrote.
pub fn dated(action: Action, offset_ms: i64) -> Action {
    match action {
        Action::Op(ScopedOp::RequestErasure {
            workspace,
            agent,
            deadline_ms,
        }) => Action::Op(ScopedOp::RequestErasure {
            workspace,
            agent,
            deadline_ms: tidemark_sim::clock::EPOCH.as_millis() + offset_ms + deadline_ms,
        }),
        other => other,
    }
}

/// The expectation of a step, checked against what the step answers: an `erasure of` step is
/// expected to answer states (a list of them is read as states), and no other step is.
pub fn expectation(action: &Action, expect: Expect) -> Result<Expect, String> {
    let states = matches!(action, Action::Op(ScopedOp::ErasureStates { .. }));
    match expect {
        Expect::List(items) if states => Ok(Expect::Erasures(
            items
                .iter()
                .map(|i| parse_state(&i.split_whitespace().collect::<Vec<_>>()))
                .collect::<Result<_, _>>()?,
        )),
        e @ Expect::Erasures(_) if states => Ok(e),
        Expect::Erasures(_) => Err(
            "only an `erasure of` step answers an erasure's state (pending, met, overdue D, missed D)"
                .into(),
        ),
        _ if states => Err(
            "an `erasure of` step answers its obligations' states: pending, met, overdue D, missed D, or a list of them"
                .into(),
        ),
        e => Ok(e),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::profiles::scoped::script::parse;

    fn steps(body: &str) -> Result<Vec<crate::profiles::scoped::script::Step>, String> {
        parse(
            Path::new("x.tdm"),
            &format!("scenario: s\nprofile: scoped\nrules: SL-4.1\n\n{body}"),
        )
        .map(|s| s.steps)
        .map_err(|e| e.to_string())
    }

    #[test]
    fn an_erasures_deadline_is_dated_from_the_steps_clock_and_its_reads_parse() {
        let s = steps(
            "advance 2d\nerase agent w1/a1 within 36h\nerase workspace w1 within -1s => refused invalid_policy\n\
             erasure of w1/a1 => overdue 36h\nerasure of w1 => [\"missed 1d\", pending]\n\
             proof of w1 => [sessions/w1/a1/s1/x.txt]\n",
        )
        .unwrap();
        let epoch = tidemark_sim::clock::EPOCH.as_millis();
        let day = tidemark_reference::clock::DAY_MS;
        let Action::Op(ScopedOp::RequestErasure {
            agent, deadline_ms, ..
        }) = &s[1].action
        else {
            panic!("{:?}", s[1].action)
        };
        assert_eq!(agent.as_deref(), Some("a1"));
        assert_eq!(*deadline_ms, epoch + 2 * day + 3 * day / 2);
        let Action::Op(ScopedOp::RequestErasure { deadline_ms, .. }) = &s[2].action else {
            panic!()
        };
        assert_eq!(*deadline_ms, epoch + 2 * day - 1_000);
        assert_eq!(s[3].expect, Expect::Erasures(vec!["overdue 1d12h".into()]));
        assert_eq!(
            s[4].expect,
            Expect::Erasures(vec!["missed 1d".into(), "pending".into()])
        );
        assert_eq!(
            s[5].expect,
            Expect::List(vec!["sessions/w1/a1/s1/x.txt".into()])
        );
    }

    #[test]
    fn a_malformed_erasure_step_is_a_load_error() {
        for bad in [
            "erase workspace w1/a1 within 1d",
            "erase agent w1 within 1d",
            "erase agent w1/a1 within soon",
            "erasure of w1/a1/s1",
            "erasure of w1 => ok",
            "erasure of w1 => [late]",
            "w1/a1/s1 activity => pending",
            "proof of /a1 => []",
        ] {
            assert!(steps(bad).is_err(), "{bad}");
        }
    }
}

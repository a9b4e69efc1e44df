//! One step line of a rows scenario, read from the shared lexer's tokens: its action
//! ([`action`]) and its expectation ([`expect`]), with the names the scenario has made so far
//! ([`Names`]) so a use before the making, and an unknown kind, table, store, sweep, state or
//! reason, is an error for [`super::parse_with`] to place at the line.

use std::collections::BTreeSet;

use tidemark_reference::rows::replies::{check_kind, STREAMED_KINDS};
use tidemark_reference::rows::{ExpiringStore, TABLES};
use tidemark_sim::clip::{clip, clip_bytes};

use super::{Action, Counted, Entry, Expect, REASONS, STATES, SWEEPS};
use crate::scenario::lex::Token;

/// What the scenario has made so far, by name, so a use before the making is a load error.
#[derive(Default)]
pub(super) struct Names {
    workspaces: BTreeSet<String>,
    sessions: BTreeSet<String>,
    pub(super) replies: BTreeSet<String>,
    pub(super) snapshots: BTreeSet<String>,
    items: BTreeSet<String>,
    requests: BTreeSet<String>,
    models: BTreeSet<String>,
    /// Targets a count has shown non-empty, and snapshots a listing has shown: an absence is
    /// checked only after a presence (no hollow checks).
    pub(super) shown: BTreeSet<Counted>,
    pub(super) listed: BTreeSet<String>,
}

fn known(set: &BTreeSet<String>, what: &str, name: &str, made_by: &str) -> Result<(), String> {
    if set.contains(name) {
        Ok(())
    } else {
        Err(format!(
            "unknown {what} {:?}: no '{made_by}' before this line",
            clip(name)
        ))
    }
}

fn fresh(set: &mut BTreeSet<String>, what: &str, name: &str) -> Result<(), String> {
    if set.insert(name.to_string()) {
        Ok(())
    } else {
        Err(format!(
            "the {what} {:?} is made twice; give the second one its own name",
            clip(name)
        ))
    }
}

/// A name: a word of `[A-Za-z0-9_.-]`.
fn name(w: &Token, what: &str) -> Result<String, String> {
    match w {
        Token::Word(s)
            if !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) =>
        {
            Ok(s.clone())
        }
        t => Err(format!(
            "expected {what} (a name of letters, digits, '_', '-' or '.'), found {}",
            t.describe()
        )),
    }
}

fn text(t: &Token, what: &str) -> Result<String, String> {
    match t {
        Token::Quoted(q) => String::from_utf8(q.clone())
            .map_err(|_| format!("{what} is text, and {:?} is not UTF-8", clip_bytes(q))),
        t => Err(format!(
            "expected {what} as a \"quoted string\", found {}",
            t.describe()
        )),
    }
}

/// The largest batch a scenario may ask for: a scenario stages a few rows, and a larger
/// batch is the default one (1,000, plain `reap`).
const MAX_BATCH: i64 = 1_000;

const REAP_SHAPE: &str = "expected 'reap', 'reap batch N' or 'reap batch N crash after K batches'";

const STEPS: &str = "workspace, session, delete session|workspace|reply, start reply, stream, finish reply, interrupt reply, seal reply, event, prompt, invoke tool, fire trigger, snapshot, name snapshot, drop model, snapshots, item, settle item, hold request, keep, reap [batch N [crash after K batches]], transcript, count, advance";

/// Reads one step's action; `refusal` says whether the step expects a refusal (a kind that
/// is no kind may then be written, to show it refused: as `unknown_kind`, or for the reply or
/// session checked before it under SR-2.1's variant `kind_check_order=target_first`).
pub(super) fn action(
    t: &[Token],
    names: &mut Names,
    refusal: Option<&str>,
) -> Result<Action, String> {
    let words: Vec<&str> = t
        .iter()
        .map(|t| match t {
            Token::Word(w) => w.as_str(),
            _ => "",
        })
        .collect();
    let arity = |n: usize, shape: &str| -> Result<(), String> {
        if t.len() == n {
            Ok(())
        } else {
            Err(format!("expected '{shape}'"))
        }
    };
    let reply = |t: &Token, names: &Names| -> Result<String, String> {
        let r = name(t, "a reply")?;
        known(
            &names.replies,
            "reply",
            &r,
            &format!("start reply {r} in SESSION"),
        )?;
        Ok(r)
    };
    let session = |t: &Token, names: &Names| -> Result<String, String> {
        let s = name(t, "a session")?;
        known(
            &names.sessions,
            "session",
            &s,
            &format!("session {s} in WORKSPACE"),
        )?;
        Ok(s)
    };
    let workspace = |t: &Token, names: &Names| -> Result<String, String> {
        let w = name(t, "a workspace")?;
        known(
            &names.workspaces,
            "workspace",
            &w,
            &format!("workspace {w}"),
        )?;
        Ok(w)
    };
    let snapshot = |t: &Token, names: &Names| -> Result<String, String> {
        let s = name(t, "a snapshot")?;
        known(&names.snapshots, "snapshot", &s, &format!("snapshot {s}"))?;
        Ok(s)
    };
    let item = |t: &Token, names: &Names| -> Result<String, String> {
        let i = name(t, "an item")?;
        known(&names.items, "item", &i, &format!("item {i} in WORKSPACE"))?;
        Ok(i)
    };
    let unknown_kind_ok = refusal.is_some();
    match words.as_slice() {
        ["advance", ..] => {
            arity(2, "advance DURATION")?;
            Ok(Action::Advance(crate::scenario::units::duration_ms(
                words[1],
                crate::scenario::units::Sign::Either,
            )?))
        }
        ["workspace", ..] => {
            arity(2, "workspace NAME")?;
            let w = name(&t[1], "a workspace")?;
            names.workspaces.insert(w.clone());
            Ok(Action::Workspace(w))
        }
        ["session", _, "in", _] => {
            let w = workspace(&t[3], names)?;
            let s = name(&t[1], "a session")?;
            names.sessions.insert(s.clone());
            Ok(Action::Session {
                session: s,
                workspace: w,
            })
        }
        ["session", ..] => Err("expected 'session NAME in WORKSPACE'".into()),
        ["delete", "session", _] => Ok(Action::DeleteSession(session(&t[2], names)?)),
        ["delete", "workspace", _] => Ok(Action::DeleteWorkspace(workspace(&t[2], names)?)),
        ["delete", "reply", _] => Ok(Action::DeleteReply(reply(&t[2], names)?)),
        ["delete", ..] => Err(
            "expected 'delete session NAME', 'delete workspace NAME' or 'delete reply NAME'".into(),
        ),
        ["start", "reply", _, "in", _] => {
            let s = session(&t[4], names)?;
            let r = name(&t[2], "a reply")?;
            fresh(&mut names.replies, "reply", &r)?;
            Ok(Action::StartReply {
                reply: r,
                session: s,
            })
        }
        ["start", ..] => Err("expected 'start reply NAME in SESSION'".into()),
        ["stream", ..] => {
            arity(4, "stream REPLY KIND \"PAYLOAD\"")?;
            let r = reply(&t[1], names)?;
            let kind = name(&t[2], "a streamed kind")?;
            if !STREAMED_KINDS.contains(&kind.as_str()) && !unknown_kind_ok {
                return Err(format!(
                    "unknown streamed kind {:?}; expected one of {} (or '=> refused unknown_kind')",
                    clip(&kind),
                    STREAMED_KINDS.join(", ")
                ));
            }
            Ok(Action::Stream {
                reply: r,
                kind,
                payload: text(&t[3], "a payload")?,
            })
        }
        ["finish", "reply", ..] => {
            arity(4, "finish reply REPLY \"TEXT\"")?;
            Ok(Action::Finish {
                reply: reply(&t[2], names)?,
                text: text(&t[3], "a reply's final text")?,
            })
        }
        ["interrupt", "reply", _] => Ok(Action::Interrupt(reply(&t[2], names)?)),
        ["seal", "reply", _] => Ok(Action::Seal(reply(&t[2], names)?)),
        ["finish" | "interrupt" | "seal", ..] => Err(format!(
            "expected '{} reply REPLY{}'",
            words[0],
            if words[0] == "finish" {
                " \"TEXT\""
            } else {
                ""
            }
        )),
        ["event", ..] => {
            arity(4, "event SESSION KIND \"PAYLOAD\"")?;
            let s = session(&t[1], names)?;
            let kind = match &t[2] {
                Token::Word(k) => k.clone(),
                other => {
                    return Err(format!(
                        "expected an event kind, found {}",
                        other.describe()
                    ))
                }
            };
            if !unknown_kind_ok {
                check_kind(&kind).map_err(|_| {
                    format!(
                        "unknown kind {:?}: a kind is dot-separated words of [a-z0-9_], such as turn.started (or write '=> refused unknown_kind')",
                        clip(&kind)
                    )
                })?;
                if STREAMED_KINDS.contains(&kind.as_str()) {
                    return Err(format!(
                        "{kind} is a streamed kind: stream it into a reply (or write '=> refused unknown_kind')"
                    ));
                }
            }
            Ok(Action::Event {
                session: s,
                kind,
                payload: text(&t[3], "a payload")?,
            })
        }
        ["prompt", ..] => {
            arity(3, "prompt SESSION \"BODY\"")?;
            Ok(Action::Prompt {
                session: session(&t[1], names)?,
                body: text(&t[2], "a prompt")?,
            })
        }
        ["invoke", "tool", "in", _] => Ok(Action::Invoke {
            session: session(&t[3], names)?,
        }),
        ["invoke", ..] => Err("expected 'invoke tool in SESSION'".into()),
        ["fire", "trigger", _] => Ok(Action::Fire {
            trigger: name(&t[2], "a trigger")?,
        }),
        ["fire", ..] => Err("expected 'fire trigger NAME'".into()),
        ["snapshot", _] => {
            let s = name(&t[1], "a snapshot")?;
            fresh(&mut names.snapshots, "snapshot", &s)?;
            Ok(Action::Snapshot(s))
        }
        ["snapshot", ..] => Err("expected 'snapshot NAME'".into()),
        ["name", "snapshot", _, "for", "model", _] => {
            let s = snapshot(&t[2], names)?;
            let m = name(&t[5], "a model")?;
            names.models.insert(m.clone());
            Ok(Action::NameSnapshot {
                snapshot: s,
                model: m,
            })
        }
        ["name", ..] => Err("expected 'name snapshot SNAPSHOT for model MODEL'".into()),
        ["drop", "model", _] => {
            let m = name(&t[2], "a model")?;
            known(
                &names.models,
                "model",
                &m,
                &format!("name snapshot SNAPSHOT for model {m}"),
            )?;
            Ok(Action::DropModel(m))
        }
        ["drop", ..] => Err("expected 'drop model MODEL'".into()),
        ["snapshots"] => Ok(Action::Snapshots),
        ["item", _, "in", _] => {
            let w = workspace(&t[3], names)?;
            let i = name(&t[1], "an item")?;
            fresh(&mut names.items, "item", &i)?;
            Ok(Action::Item {
                item: i,
                workspace: w,
            })
        }
        ["item", ..] => Err("expected 'item NAME in WORKSPACE'".into()),
        ["settle", "item", _] => Ok(Action::Settle(item(&t[2], names)?)),
        ["settle", ..] => Err("expected 'settle item ITEM'".into()),
        ["hold", "request", _, "in", _, rest @ ..] => {
            let s = session(&t[4], names)?;
            let it = match rest {
                [] => None,
                ["for", _] => Some(item(&t[6], names)?),
                _ => return Err("expected 'hold request NAME in SESSION [for ITEM]'".into()),
            };
            let r = name(&t[2], "a request")?;
            fresh(&mut names.requests, "request", &r)?;
            Ok(Action::Hold {
                request: r,
                session: s,
                item: it,
            })
        }
        ["hold", ..] => Err("expected 'hold request NAME in SESSION [for ITEM]'".into()),
        ["keep", store, _, "for", d] => {
            let store = ExpiringStore::ALL
                .into_iter()
                .find(|s| s.table() == *store)
                .ok_or_else(|| {
                    format!(
                        "unknown store {:?}; expected one of {}",
                        clip(store),
                        ExpiringStore::ALL.map(|s| s.table()).join(", ")
                    )
                })?;
            Ok(Action::Keep {
                store,
                id: name(&t[2], "a row id")?,
                for_ms: crate::scenario::units::duration_ms(
                    d,
                    crate::scenario::units::Sign::NotNegative,
                )?,
            })
        }
        ["keep", ..] => Err("expected 'keep STORE ID for DURATION'".into()),
        ["reap"] => Ok(Action::Reap),
        ["reap", "batch", n, rest @ ..] => {
            let batch = n
                .parse::<i64>()
                .ok()
                .filter(|b| (1..=MAX_BATCH).contains(b))
                .ok_or_else(|| {
                    format!(
                        "expected a batch size from 1 to {MAX_BATCH} after 'reap batch', found {:?}",
                        clip(n)
                    )
                })?;
            let crash_after = match rest {
                [] => None,
                ["crash", "after", k, "batch" | "batches"] => Some(k.parse::<u64>().map_err(|_| {
                    format!(
                        "expected how many batches the tick commits before it crashes (a whole number), found {:?}",
                        clip(k)
                    )
                })?),
                _ => return Err(REAP_SHAPE.into()),
            };
            Ok(Action::ReapBatched { batch, crash_after })
        }
        ["reap", ..] => Err(REAP_SHAPE.into()),
        ["transcript", _] => Ok(Action::Transcript(session(&t[1], names)?)),
        ["count", table] => {
            if !TABLES.contains(table) {
                return Err(format!(
                    "unknown table {:?}; expected one of {}",
                    clip(table),
                    TABLES.join(", ")
                ));
            }
            Ok(Action::Count(Counted::Table(table.to_string())))
        }
        ["count", "streamed_events", "of", _] => {
            Ok(Action::Count(Counted::StreamedOf(reply(&t[3], names)?)))
        }
        ["count", "events", "in", _] => {
            Ok(Action::Count(Counted::EventsIn(session(&t[3], names)?)))
        }
        ["count", ..] => Err(
            "expected 'count TABLE', 'count streamed_events of REPLY' or 'count events in SESSION'"
                .into(),
        ),
        _ => Err(format!(
            "no such step: {}; expected one of: {STEPS}",
            clip(
                &t.iter()
                    .map(|t| match t {
                        Token::Word(w) => w.clone(),
                        t => t.describe(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        )),
    }
}

fn number(t: Option<&Token>, what: &str) -> Result<u64, String> {
    match t {
        Some(Token::Word(w)) => w
            .parse::<u64>()
            .map_err(|_| format!("expected {what} (a whole number), found {:?}", clip(w))),
        Some(t) => Err(format!("expected {what}, found {}", t.describe())),
        None => Err(format!("expected {what}")),
    }
}

pub(super) fn expect(t: &[Token], action: &Action) -> Result<Expect, String> {
    match (t.first(), action) {
        (None, _) => Err("expected an expectation after '=>'".into()),
        (Some(Token::Word(w)), _) if w == "refused" => {
            let reason = match t.get(1) {
                Some(Token::Word(r)) if t.len() == 2 => r,
                _ => return Err("expected 'refused REASON'".into()),
            };
            if !REASONS.contains(&reason.as_str()) {
                return Err(format!(
                    "unknown reason {:?}; expected one of {}",
                    clip(reason),
                    REASONS.join(", ")
                ));
            }
            Ok(Expect::Refused(reason.clone()))
        }
        (Some(Token::Word(w)), _) if w == "ok" && t.len() == 1 && !action.is_query() => {
            Ok(Expect::Ok)
        }
        (Some(Token::Word(w)), a) if w == "reaped" && a.is_reap() => {
            if t.len() == 2 {
                return Ok(Expect::Reaped {
                    total: Some(number(t.get(1), "a count of rows")?),
                    sweeps: vec![],
                });
            }
            let mut sweeps: Vec<(String, u64)> = Vec::new();
            for group in t[1..].split(|t| *t == Token::Comma) {
                let sweep = match group.first() {
                    Some(Token::Word(s)) if group.len() == 2 => s,
                    _ => return Err("expected 'reaped N' or 'reaped SWEEP N, SWEEP N, ...'".into()),
                };
                let Some(at) = SWEEPS.iter().position(|s| s == sweep) else {
                    return Err(format!(
                        "unknown sweep {:?}; expected one of {}",
                        clip(sweep),
                        SWEEPS.join(", ")
                    ));
                };
                if let Some((last, _)) = sweeps.last() {
                    if SWEEPS.iter().position(|s| s == last).unwrap_or(0) >= at {
                        return Err(format!(
                            "{sweep} after {last}: name the sweeps in the tick's order ({})",
                            SWEEPS.join(", ")
                        ));
                    }
                }
                let n = number(group.get(1), "a count of rows")?;
                if n == 0 {
                    return Err(format!(
                        "{sweep} 0: name only the sweeps that removed something"
                    ));
                }
                sweeps.push((sweep.clone(), n));
            }
            Ok(Expect::Reaped {
                total: None,
                sweeps,
            })
        }
        (Some(_), Action::Count(_)) => {
            if t.len() != 1 {
                return Err("expected a count of rows".into());
            }
            // A count of rows is a bigint: what `count(*)` gives.
            let n = number(t.first(), "a count of rows")?;
            let n = i64::try_from(n).map_err(|_| {
                format!(
                    "{n} rows is more than a table can count (at most {})",
                    i64::MAX
                )
            })?;
            Ok(Expect::Count(n))
        }
        (Some(Token::Open), Action::Snapshots) => {
            let mut out = Vec::new();
            let inner = list(t)?;
            for item in inner {
                match item {
                    [one] => out.push(name(one, "a snapshot")?),
                    _ => return Err("expected a list of snapshot names".into()),
                }
            }
            Ok(Expect::Snapshots(out))
        }
        (Some(Token::Open), Action::Transcript(_)) => {
            let mut out = Vec::new();
            for item in list(t)? {
                let [r, Token::Word(state), q] = item else {
                    return Err(
                        "expected transcript entries 'REPLY STATE \"TEXT\"', comma-separated"
                            .into(),
                    );
                };
                if !STATES.contains(&state.as_str()) {
                    return Err(format!(
                        "unknown reply state {:?}; expected one of {}",
                        clip(state),
                        STATES.join(", ")
                    ));
                }
                out.push(Entry {
                    reply: name(r, "a reply")?,
                    state: state.clone(),
                    text: text(q, "a reply's text")?,
                });
            }
            Ok(Expect::Transcript(out))
        }
        (Some(_), a) if a.is_reap() => Err(
            "expected 'reaped N', 'reaped SWEEP N, ...' or 'refused database_unavailable'".into(),
        ),
        (Some(_), Action::Snapshots) => Err("expected a list of snapshots, [s1, s2]".into()),
        (Some(_), Action::Transcript(_)) => {
            Err("expected a transcript, [REPLY STATE \"TEXT\", ...]".into())
        }
        (Some(_), _) => Err("expected 'ok' or 'refused REASON'".into()),
    }
}

/// The items of a `[..., ...]` that is the whole expectation, each as its tokens.
fn list(t: &[Token]) -> Result<Vec<&[Token]>, String> {
    match t {
        [Token::Open, inner @ .., Token::Close] => {
            if inner
                .iter()
                .any(|t| matches!(t, Token::Open | Token::Close))
            {
                return Err("a list inside a list".into());
            }
            if inner.is_empty() {
                return Ok(vec![]);
            }
            Ok(inner.split(|t| *t == Token::Comma).collect())
        }
        _ => Err("a list is not closed with ] at the end of the step".into()),
    }
}

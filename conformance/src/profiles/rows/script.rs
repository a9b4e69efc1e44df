//! Rows-profile scenarios as text (`scenarios/rows/*.tdm`): the shared header
//! (`scenario/header.rs`), then one step per line read with the shared lexer
//! (`scenario/lex.rs`), in this profile's vocabulary (documented in `scenarios/rows/README.md`).
//!
//! ```text
//! scenario: a reply still being written keeps its events through a month of reaping
//! profile: rows
//! rules: SR-2.3, SR-2.8
//! kills: streamed-swept-by-age
//!
//! workspace w1
//! session c1 in w1
//! start reply r1 in c1
//! stream r1 chat.delta "Hel"
//! count streamed_events of r1   => 1
//! advance 31d
//! reap                          => reaped 0
//! transcript c1                 => [r1 writing "Hel"]
//! ```
//!
//! Names (workspaces, sessions, replies, snapshots, items, held requests, models) are the
//! scenario's own: a reply, snapshot, item or request is named where it is made and only used
//! after; a name used before it is made, or made twice, is a load error at its line. Every
//! error is `file:line: what was expected`.

use std::collections::{BTreeMap, BTreeSet};

use std::path::{Path, PathBuf};

use tidemark_reference::rows::replies::{check_kind, STREAMED_KINDS};
use tidemark_reference::rows::{ExpiringStore, RowsMutant, TABLES};
use tidemark_sim::clip::{clip, clip_bytes, clip_field, MAX_SCENARIO_SPAN_MS};

pub use crate::scenario::header::utf8_text;
use crate::scenario::header::{self, HeaderVocabulary, StepLine};
use crate::scenario::lex::{tokenize, Token};

/// The rows profile's header vocabulary: part SR of SPEC.md and the rows mutants.
pub const VOCABULARY: HeaderVocabulary = HeaderVocabulary {
    profile: "rows",
    rule_prefix: "SR-",
    mutants: || RowsMutant::ALL.iter().map(|m| m.id()).collect(),
    capabilities: &[],
};

/// The reason codes of SPEC SR-9.1.
pub const REASONS: &[&str] = &[
    "unknown_workspace",
    "unknown_session",
    "unknown_reply",
    "unknown_snapshot",
    "unknown_item",
    "unknown_kind",
    "reply_state",
    "already_exists",
    "database_unavailable",
];

/// The sweeps of a reap report, in the tick's order (SR-7.2).
pub const SWEEPS: &[&str] = &[
    "streamed_events",
    "tool_invocations",
    "trigger_firings",
    "catalog_snapshots",
    "live_sessions",
    "refresh_tokens",
    "webhook_deliveries",
    "breaker_sightings",
];

/// A transcript entry's states: `sealed` is a finished reply whose text came from its events.
pub const STATES: &[&str] = &["writing", "stopped", "finished", "sealed"];

#[derive(Clone, Debug)]
pub struct Script {
    pub file: PathBuf,
    pub name: String,
    pub rules: Vec<String>,
    pub kills: Vec<String>,
    pub steps: Vec<Step>,
}

impl Script {
    /// `rows::<file stem>`, `-` read as `_`.
    pub fn test_name(&self) -> String {
        let stem = self
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().replace('-', "_"))
            .unwrap_or_default();
        format!("rows::{stem}")
    }
}

#[derive(Clone, Debug)]
pub struct Step {
    pub line: usize,
    pub text: String,
    pub action: Action,
    pub expect: Expect,
}

/// What a `count` step counts.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Counted {
    /// Every row of a table of the reference's schema.
    Table(String),
    /// The streamed events naming a reply.
    StreamedOf(String),
    /// A session's events, streamed or not.
    EventsIn(String),
}

#[derive(Clone, Debug)]
pub enum Action {
    Advance(i64),
    Workspace(String),
    Session {
        session: String,
        workspace: String,
    },
    DeleteSession(String),
    DeleteWorkspace(String),
    StartReply {
        reply: String,
        session: String,
    },
    Stream {
        reply: String,
        kind: String,
        payload: String,
    },
    Finish {
        reply: String,
        text: String,
    },
    Interrupt(String),
    Seal(String),
    DeleteReply(String),
    Event {
        session: String,
        kind: String,
        payload: String,
    },
    Prompt {
        session: String,
        body: String,
    },
    Invoke {
        session: String,
    },
    Fire {
        trigger: String,
    },
    Snapshot(String),
    NameSnapshot {
        snapshot: String,
        model: String,
    },
    DropModel(String),
    Item {
        item: String,
        workspace: String,
    },
    Settle(String),
    Hold {
        request: String,
        session: String,
        item: Option<String>,
    },
    Keep {
        store: ExpiringStore,
        id: String,
        for_ms: i64,
    },
    Reap,
    Transcript(String),
    Snapshots,
    Count(Counted),
}

impl Action {
    /// Steps that read rather than change: they must state what they expect.
    fn is_query(&self) -> bool {
        matches!(
            self,
            Action::Reap | Action::Transcript(_) | Action::Snapshots | Action::Count(_)
        )
    }
}

/// One reply as a transcript expectation states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub reply: String,
    pub state: String,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    Ok,
    Refused(String),
    /// The tick's total, or each sweep that removed something with its count, in tick order.
    Reaped {
        total: Option<u64>,
        sweeps: Vec<(String, u64)>,
    },
    Count(i64),
    Snapshots(Vec<String>),
    Transcript(Vec<Entry>),
}

impl Expect {
    pub fn text(&self) -> String {
        match self {
            Expect::Ok => "ok".into(),
            Expect::Refused(r) => format!("refused {r}"),
            Expect::Reaped { total: Some(n), .. } => format!("reaped {n}"),
            Expect::Reaped { sweeps, .. } => format!(
                "reaped {}",
                sweeps
                    .iter()
                    .map(|(s, n)| format!("{s} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Expect::Count(n) => n.to_string(),
            Expect::Snapshots(names) => format!("[{}]", names.join(", ")),
            Expect::Transcript(entries) => transcript_text(entries),
        }
    }
}

pub fn transcript_text(entries: &[Entry]) -> String {
    format!(
        "[{}]",
        entries
            .iter()
            .map(|e| format!("{} {} {:?}", e.reply, e.state, e.text))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct ScriptError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

/// Every rows `*.tdm` under `dir`, in path order, each once, citations checked against `rules`.
pub fn load_dir_with(dir: &Path, rules: &BTreeSet<String>) -> Result<Vec<Script>, ScriptError> {
    let files = tidemark_sim::scenario_files::find(dir, "tdm").map_err(|e| ScriptError {
        file: dir.to_path_buf(),
        line: 0,
        message: format!("cannot read the scenario directory: {e}"),
    })?;
    let scripts = files
        .iter()
        .filter(|f| !header::belongs_elsewhere(f, VOCABULARY.profile))
        .map(|f| {
            let bytes = std::fs::read(f).map_err(|e| ScriptError {
                file: f.clone(),
                line: 0,
                message: format!("cannot read the file: {e}"),
            })?;
            let text = utf8_text(&bytes).map_err(|(line, message)| ScriptError {
                file: f.clone(),
                line,
                message,
            })?;
            parse_with(f, text, rules)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some((name, first, second)) =
        tidemark_sim::scenario_files::duplicate_name(&scripts, Script::test_name, |s| {
            s.file.as_path()
        })
    {
        return Err(ScriptError {
            file: second.to_path_buf(),
            line: 1,
            message: format!(
                "the test name {name} is taken by {} already; rename one of the files",
                first.display()
            ),
        });
    }
    Ok(scripts)
}

/// What the scenario has made so far, by name, so a use before the making is a load error.
#[derive(Default)]
struct Names {
    workspaces: BTreeSet<String>,
    sessions: BTreeSet<String>,
    replies: BTreeSet<String>,
    snapshots: BTreeSet<String>,
    items: BTreeSet<String>,
    requests: BTreeSet<String>,
    models: BTreeSet<String>,
    /// Targets a count has shown non-empty, and snapshots a listing has shown: an absence is
    /// checked only after a presence (no hollow checks).
    shown: BTreeSet<Counted>,
    listed: BTreeSet<String>,
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

const STEPS: &str = "workspace, session, delete session|workspace|reply, start reply, stream, finish reply, interrupt reply, seal reply, event, prompt, invoke tool, fire trigger, snapshot, name snapshot, drop model, snapshots, item, settle item, hold request, keep, reap, transcript, count, advance";

/// Reads one step's action; `refusal` says whether the step expects a refusal (a kind that
/// is no kind may then be written, to show it refused).
fn action(t: &[Token], names: &mut Names, refusal: Option<&str>) -> Result<Action, String> {
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
    let unknown_kind_ok = refusal == Some("unknown_kind");
    match words.as_slice() {
        ["advance", ..] => {
            arity(2, "advance DURATION")?;
            Ok(Action::Advance(
                crate::profiles::scoped::script::duration_ms(words[1])?,
            ))
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
                for_ms: crate::profiles::scoped::script::duration_ms(d)?,
            })
        }
        ["keep", ..] => Err("expected 'keep STORE ID for DURATION'".into()),
        ["reap"] => Ok(Action::Reap),
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

fn expect(t: &[Token], action: &Action) -> Result<Expect, String> {
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
        (Some(Token::Word(w)), Action::Reap) if w == "reaped" => {
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
            Ok(Expect::Count(number(t.first(), "a count of rows")? as i64))
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
        (Some(_), Action::Reap) => Err("expected 'reaped N' or 'reaped SWEEP N, ...'".into()),
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

/// Parses a scenario whose `rules:` must be among `known_rules`.
pub fn parse_with(
    file: &Path,
    text: &str,
    known_rules: &BTreeSet<String>,
) -> Result<Script, ScriptError> {
    let err = |line: usize, message: String| ScriptError {
        file: file.to_path_buf(),
        line,
        message: clip_field(&message).into_owned(),
    };
    let (header, lines) = header::split(text, &VOCABULARY, &|id| known_rules.contains(id))
        .map_err(|(line, m)| err(line, m))?;
    if let Some(k) = header.knobs.first() {
        return Err(err(
            k.line,
            format!(
                "unknown knob {:?}: the rows profile has no knobs",
                clip(&k.name)
            ),
        ));
    }
    header::require_steps(text, &lines).map_err(|(line, m)| err(line, m))?;
    let mut names = Names::default();
    let mut steps = Vec::new();
    let mut offset_ms: i64 = 0;
    for StepLine { line, text: l } in lines {
        let tokens = tokenize(l).map_err(|m| err(line, m))?;
        let (act, exp) = match tokens.iter().position(|t| *t == Token::Arrow) {
            Some(i) => (&tokens[..i], Some(&tokens[i + 1..])),
            None => (&tokens[..], None),
        };
        if exp.is_some_and(|e| e.contains(&Token::Arrow)) {
            return Err(err(line, "a second '=>' on one step".into()));
        }
        let refusal = match exp {
            Some([Token::Word(r), Token::Word(reason)]) if r == "refused" => Some(reason.as_str()),
            _ => None,
        };
        let action = action(act, &mut names, refusal).map_err(|m| err(line, m))?;
        if let Action::Advance(ms) = action {
            offset_ms = offset_ms
                .checked_add(ms)
                .filter(|o| {
                    (-tidemark_sim::clock::EPOCH.as_millis()..=MAX_SCENARIO_SPAN_MS).contains(o)
                })
                .ok_or_else(|| {
                    err(
                        line,
                        "this advance takes the scenario's clock before 1970 or past the span a scenario may cover".into(),
                    )
                })?;
        }
        let expect = match exp {
            Some(e) => expect(e, &action).map_err(|m| err(line, m))?,
            None if action.is_query() => {
                return Err(err(
                    line,
                    "expected '=> ...' stating what this step answers".into(),
                ))
            }
            None => Expect::Ok,
        };
        // No hollow checks: an absence is checked only after the thing was shown present.
        match (&action, &expect) {
            (Action::Count(c), Expect::Count(0)) if !names.shown.contains(c) => {
                return Err(err(
                    line,
                    "a hollow check: show these rows exist (the same count => N above 0) before checking they are gone".into(),
                ))
            }
            (Action::Count(c), Expect::Count(_)) => {
                names.shown.insert(c.clone());
            }
            (Action::Snapshots, Expect::Snapshots(listed)) => {
                for s in listed {
                    if !names.snapshots.contains(s) {
                        return Err(err(
                            line,
                            format!("unknown snapshot {:?}: no 'snapshot {s}' before this line", clip(s)),
                        ));
                    }
                }
                if let Some(gone) = names
                    .snapshots
                    .iter()
                    .find(|s| !listed.contains(s) && !names.listed.contains(*s))
                {
                    return Err(err(
                        line,
                        format!("a hollow check: snapshot {gone} is absent here but no listing above showed it"),
                    ));
                }
                names.listed.extend(listed.iter().cloned());
            }
            (Action::Transcript(_), Expect::Transcript(entries)) => {
                for e in entries {
                    if !names.replies.contains(&e.reply) {
                        return Err(err(
                            line,
                            format!("unknown reply {:?}: no 'start reply {} in SESSION' before this line", clip(&e.reply), e.reply),
                        ));
                    }
                }
            }
            _ => {}
        }
        steps.push(Step {
            line,
            text: l.to_string(),
            action,
            expect,
        });
    }
    Ok(Script {
        file: file.to_path_buf(),
        name: header.name,
        rules: header.rules,
        kills: header.kills,
        steps,
    })
}

/// Identifiers the runner learns as the reference answers (replies, snapshots, items).
pub(crate) type Ids = BTreeMap<String, i64>;

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> BTreeSet<String> {
        ["SR-2.3".to_string()].into_iter().collect()
    }

    const HEAD: &str = "scenario: s\nprofile: rows\nrules: SR-2.3\n";

    fn error(steps: &str) -> String {
        parse_with(Path::new("x.tdm"), &format!("{HEAD}{steps}"), &rules())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_scenario_parses_into_steps_with_expectations() {
        let s = parse_with(
            Path::new("x.tdm"),
            &format!(
                "{HEAD}workspace w\nsession c in w\nstart reply r in c\nstream r chat.delta \"Hel\"\n\
                 count streamed_events of r => 1\nreap => reaped streamed_events 1, trigger_firings 2\n\
                 transcript c => [r writing \"Hel\"]\n"
            ),
            &rules(),
        )
        .unwrap();
        assert_eq!(s.steps.len(), 7);
        assert_eq!(
            s.steps[5].expect,
            Expect::Reaped {
                total: None,
                sweeps: vec![("streamed_events".into(), 1), ("trigger_firings".into(), 2)]
            }
        );
    }

    #[test]
    fn unknown_names_kinds_tables_and_steps_are_load_errors_at_their_line() {
        assert!(error("stream r chat.delta \"x\"\n").starts_with("x.tdm:4: unknown reply"));
        let e =
            error("workspace w\nsession c in w\nstart reply r in c\nstream r chat.bogus \"x\"\n");
        assert!(e.starts_with("x.tdm:7: unknown streamed kind"), "{e}");
        assert!(error("count widgets => 1\n").contains("unknown table"));
        assert!(error("frobnicate\n").contains("no such step"));
        assert!(error("snapshots => [s9]\n").contains("unknown snapshot"));
        assert!(error("workspace w\nsession c in w\ncount events in c => 0\n").contains("hollow"));
        assert!(error("reap\n").contains("stating what this step answers"));
    }
}

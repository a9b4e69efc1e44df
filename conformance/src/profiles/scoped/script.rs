//! Scoped-profile scenarios as text (`scenarios/scoped/*.tdm`), in the same shape as the
//! scratchpad's `.tdm` files: a header, then one step per line with its expectation.
//!
//! ```text
//! scenario: a conversation older than the ttl but still active keeps its uploads
//! profile: scoped
//! rules: SC-5.1, SC-5.3
//! kills: age-only-expiry
//!
//! create workspace w1
//! create agent w1/a1
//! create session w1/a1/s1
//! w1/a1/s1 write session/upload.pdf "contract"   => written session/upload.pdf
//! advance 40d
//! w1/a1/s1 activity                              => ok
//! sweep                                          => swept 0 sessions, 0 deletions
//! w1/a1/s1 read session/upload.pdf               => "contract"
//! ```
//!
//! Steps (a turn is `ws/agent/session`, optionally `+slug=skill-name,...` for its skill table):
//! - `create workspace W [agent=ACCESS] [workspace=ACCESS]`, `create agent W/A [...]`,
//!   `create session W/A/S`; `delete session W/A/S`, `delete agent W/A`, `delete workspace W`
//! - `TURN write PATH "CONTENT"`, `TURN read PATH`, `TURN text PATH`, `TURN list [PREFIX]`,
//!   `TURN delete PATH`, `TURN activity`, `TURN wait KIND ID`, `TURN unwait KIND ID`
//! - `publish skill NAME in W FILE="CONTENT" ...`
//! - `TURN write PATH "CONTENT" during sweep` (a write raced against a sweep)
//! - `advance 1d2h`, `sweep`, `crash at POINT`, `restart`, `heal`,
//!   `faults down`, `faults delete-failure RATE`, `faults error RATE`, `faults fail OP N`,
//!   `faults fail OP from N`,
//!   `faults no-such-bucket`, `faults access-denied`, `faults throttle`, `faults throttle N`
//! - `apply lifecycle BACKSTOP_DAYS`, `lifecycle age-only PREFIX DAYS` (runs an age-only rule
//!   with AWS semantics and answers the keys it deleted)
//! - `bucket PREFIX`, `pending deletions`, `deletion records`, `lifecycle rules`
//! - `close session W/A/S`, `sweep twice at once` (SPEC SL-3, SL-1.3; parsed by
//!   `script_close.rs`, which [`action`] falls through to)
//! - `erase workspace W within D`, `erase agent W/A within D`, `erasure of SUBJECT`,
//!   `proof of SUBJECT` (SPEC SL-4; their parsing is `erasure_script.rs`'s)
//! - `retention of W ttl N days`, `retention of W default` (a workspace's retention, SL-5)
//!
//! Expectations after `=>` (a step without one must answer `ok`): `ok`, `written PATH`,
//! `"CONTENT"`, `text "TEXT"`, `no text`, `[a, b, ...]`, `in order [a, b, ...]`, `refused REASON`,
//! `swept N sessions, M deletions`, `crashed`, `published`, `overflowed`, `overflowed as NAME`
//! (binds NAME to the path answered, for later steps' paths: `bindings.rs`), and an erasure's
//! state (`pending`, `met`, `overdue D`, `missed D`).
//!
//! Why one file: the vocabulary is one table of step shapes, each parsed beside the
//! expectations it may take and the load errors it gives at its line; split by step family, the
//! parsers would import each other's helpers (turns, quoted content, durations) in a ring.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use tidemark_sim::clip::{clip, clip_field, MAX_SCENARIO_SPAN_MS};
use tidemark_sim::real_tier::faults::{FaultPlan, Throttle, S3_OPERATIONS};

use tidemark_reference::clock::DAY_MS;
use tidemark_reference::scoped::Access;

pub use crate::scenario::header::utf8_text;
use crate::scenario::header::{self, HeaderVocabulary, StepLine};
use crate::scenario::lex::{tokenize, Token};
use crate::scenario::load::{self, LoadErrors, ScenarioFileError};

use super::driver::{
    CrashPointName, PeopleCall, ScopedOp, ScopedOutcome, Turn, WaitKindName, ANONYMOUS,
};

#[derive(Clone, Debug)]
pub struct Script {
    pub file: PathBuf,
    pub name: String,
    pub rules: Vec<String>,
    /// Mutant ids this scenario is meant to kill.
    pub kills: Vec<String>,
    pub knobs: BTreeMap<String, i64>,
    pub steps: Vec<Step>,
    /// The `variant:` line and the guarded steps (SPEC.md's variants).
    pub guards: crate::variants::Guards,
}

impl Script {
    /// The scenario as an implementation taking `declared` plays it: only the steps whose
    /// guard holds for it. (Whether it applies at all is [`Script::skip_reason`].)
    pub fn as_played_by(&self, declared: &crate::variants::Declared) -> Script {
        Script {
            steps: self
                .steps
                .iter()
                .filter(|s| self.guards.keeps(s.line, declared))
                .cloned()
                .collect(),
            ..self.clone()
        }
    }

    /// Why the scenario does not apply to an implementation taking `declared`: its
    /// `variant:` line names another choice.
    pub fn skip_reason(&self, declared: &crate::variants::Declared) -> Option<String> {
        self.guards.skip_reason(declared)
    }

    /// `scoped::<file stem>`, so `cargo test cascade` filters by file name.
    pub fn test_name(&self) -> String {
        load::test_name(VOCABULARY.profile, &self.file)
    }

    /// The seed of the scenario's S3 fault generator, from its file name, so every runner
    /// (in process, through a program, on either tier) draws the same faults.
    pub fn fault_seed(&self) -> u64 {
        self.file.to_string_lossy().bytes().fold(0u64, |h, b| {
            h.wrapping_mul(1_099_511_628_211).wrapping_add(u64::from(b))
        })
    }
}

#[derive(Clone, Debug)]
pub struct Step {
    pub line: usize,
    pub text: String,
    pub action: Action,
    pub expect: Expect,
}

#[derive(Clone, Debug)]
pub enum Action {
    Advance(i64),
    Op(ScopedOp),
}

/// What a step must answer. Listings and prefix sets compare as given (both sides sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    Ok,
    Written(String),
    Content(String),
    Text(Option<String>),
    List(Vec<String>),
    /// A guest listing whose order is checked too (`in order [a, b]`, SPEC SC-4.4).
    Ordered(Vec<String>),
    Refused(String),
    Swept {
        sessions: u64,
        deletions: u64,
    },
    Crashed,
    Published,
    /// A tool result written to a session file, at a path the implementation chose (SL-7.1);
    /// `overflowed as NAME` binds NAME to that path for the steps below (`bindings.rs`).
    Overflowed(Option<String>),
    /// The states of a subject's erasure obligations, in `erasure::state_text`'s spelling
    /// (SL-4.4), compared as a set with repeats.
    Erasures(Vec<String>),
}

impl Expect {
    /// Whether `got` satisfies this expectation.
    pub fn matches(&self, got: &ScopedOutcome) -> bool {
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        match (self, got) {
            (Expect::Ok, ScopedOutcome::Ok) => true,
            (Expect::Written(p), ScopedOutcome::Written { path }) => p == path,
            (Expect::Content(c), ScopedOutcome::Content { content }) => c == content,
            (Expect::Text(t), ScopedOutcome::Text { text }) => t == text,
            (Expect::List(l), ScopedOutcome::Listing { paths }) => sorted(l) == sorted(paths),
            (Expect::List(l), ScopedOutcome::Keys { keys }) => sorted(l) == sorted(keys),
            (Expect::List(l), ScopedOutcome::Prefixes { prefixes }) => {
                sorted(l) == sorted(prefixes)
            }
            (Expect::List(l), ScopedOutcome::Rules { rules }) => sorted(l) == sorted(rules),
            (Expect::Ordered(l), ScopedOutcome::Listing { paths }) => l == paths,
            (Expect::Refused(r), ScopedOutcome::Refused { reason, .. }) => r == reason,
            (
                Expect::Swept {
                    sessions,
                    deletions,
                },
                ScopedOutcome::Swept {
                    sessions: s,
                    obligations: o,
                },
            ) => sessions == s && deletions == o,
            (Expect::Crashed, ScopedOutcome::Crashed { .. }) => true,
            (Expect::Published, ScopedOutcome::Published { .. }) => true,
            (Expect::Overflowed(_), ScopedOutcome::Written { path }) => {
                path.starts_with("session/")
            }
            (Expect::Erasures(l), ScopedOutcome::Erasures { states }) => {
                sorted(l) == sorted(states)
            }
            _ => false,
        }
    }
}

/// Every scoped `*.tdm` under `dir`, in path order, each once (`scenario/load.rs` says which),
/// citations checked against this repository's SPEC.md, short identifiers replaced by UUIDs
/// ([`Script::with_uuid_ids`]).
pub fn load_dir(dir: &Path) -> Result<Vec<Script>, LoadErrors> {
    load_dir_with(dir, repo_rules().map_err(|e| e.at(dir))?)
}

/// [`load_dir`] with the rule ids of another SPEC.md (`tidemark run --spec`).
pub fn load_dir_with(dir: &Path, rules: &BTreeSet<String>) -> Result<Vec<Script>, LoadErrors> {
    load::load_dir(
        dir,
        VOCABULARY.profile,
        // Every runner plays the scenario with UUID identifiers (see `uuid_ids`).
        |f, text| parse_with(f, text, rules).map(Script::with_uuid_ids),
        |s| &s.file,
    )
}

/// A SPEC.md that could not be read, before it is placed at a file.
struct SpecUnreadable(String);

impl SpecUnreadable {
    fn at(self, file: &Path) -> ScenarioFileError {
        ScenarioFileError::new(file, 0, self.0)
    }
}

/// This repository's SPEC.md rule ids, read once.
fn repo_rules() -> Result<&'static BTreeSet<String>, SpecUnreadable> {
    static RULES: std::sync::OnceLock<Result<BTreeSet<String>, String>> =
        std::sync::OnceLock::new();
    RULES
        .get_or_init(|| {
            let path = tidemark_sim::spec_rules::repo_spec_path();
            std::fs::read_to_string(&path)
                .map(|t| tidemark_sim::spec_rules::rule_ids(&t))
                .map_err(|e| format!("cannot read {}: {e}", path.display()))
        })
        .as_ref()
        .map_err(|e| SpecUnreadable(e.clone()))
}

/// The shared lexer's tokens as the words this profile's steps match on: a quoted string keeps
/// its quotes (`"a b"`), `PATH=` followed by a quoted string is one word (`PATH="CONTENT"`), a
/// list is one word (`[a, b]`, its items bare or quoted, held as a JSON array so an item keeps
/// its commas: [`list`] reads it back), and a comma outside a list is punctuation (`swept 1
/// session, 0 deletions`). Scoped content is text: a quoted string must decode to UTF-8.
fn words(tokens: &[Token]) -> Result<Vec<String>, String> {
    let text = |b: &[u8]| {
        String::from_utf8(b.to_vec()).map_err(|_| {
            format!(
                "a quoted string here is text, and {:?} is not UTF-8",
                tidemark_sim::clip::clip_bytes(b)
            )
        })
    };
    let mut out: Vec<String> = Vec::new();
    let mut it = tokens.iter().peekable();
    while let Some(t) = it.next() {
        match t {
            Token::Word(w) => match it.peek() {
                Some(Token::Quoted(q)) if w.ends_with('=') => {
                    out.push(format!("{w}\"{}\"", text(q)?));
                    it.next();
                }
                _ => out.push(w.clone()),
            },
            Token::Quoted(q) => out.push(format!("\"{}\"", text(q)?)),
            Token::Comma => {}
            Token::Open => {
                let mut items = Vec::new();
                loop {
                    match it.next() {
                        Some(Token::Close) => break,
                        Some(Token::Comma) => {}
                        Some(Token::Word(w)) => items.push(w.clone()),
                        Some(Token::Quoted(q)) => items.push(text(q)?),
                        Some(t) => {
                            return Err(format!("expected a list item, found {}", t.describe()))
                        }
                        None => return Err("a list is not closed with ]".into()),
                    }
                }
                out.push(serde_json::to_string(&items).expect("strings serialise"));
            }
            Token::Close => return Err("a ']' closes no list".into()),
            Token::Arrow => return Err("a second '=>' on one step".into()),
        }
    }
    Ok(out)
}

fn unquote(w: &str) -> Result<String, String> {
    w.strip_prefix('"')
        .and_then(|w| w.strip_suffix('"'))
        .map(str::to_string)
        .ok_or_else(|| format!("expected a \"quoted string\", got {w}"))
}

/// A list word made by [`words`], its items as written.
fn list(w: &str) -> Result<Vec<String>, String> {
    serde_json::from_str(w).map_err(|_| format!("expected a [list], got {}", clip(w)))
}

/// `1d`, `6d23h`, `30m`, `90s`, `250ms`, `-10d` (a backwards clock jump): the shared reader
/// (`scenario/units.rs`).
pub fn duration_ms(s: &str) -> Result<i64, String> {
    crate::scenario::units::duration_ms(s, crate::scenario::units::Sign::Either)
}

/// A fault rate: a probability, from 0 to 1.
fn rate(r: &str) -> Result<f64, String> {
    r.parse::<f64>()
        .ok()
        .filter(|x| (0.0..=1.0).contains(x))
        .ok_or_else(|| {
            format!(
                "a fault rate is a probability from 0 to 1, not {:?}",
                clip(r)
            )
        })
}

/// A `faults fail OP N` operation: one the fault wrapper counts.
fn fault_op(op: &str) -> Result<String, String> {
    if S3_OPERATIONS.contains(&op) {
        Ok(op.to_string())
    } else {
        Err(format!(
            "no S3 operation {:?}; expected one of {}",
            clip(op),
            S3_OPERATIONS.join(", ")
        ))
    }
}

/// A count of requests (`faults fail OP N`, `faults throttle N`): a whole number from 1.
fn request_count(n: &str) -> Result<u64, String> {
    n.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
        format!(
            "the request number is a whole number from 1, not {:?}",
            clip(n)
        )
    })
}

/// The reason codes of SPEC SC-8.1: a `refused` expectation names one.
pub const REASONS: &[&str] = &[
    "empty_path",
    "missing_scope",
    "unknown_scope",
    "traversal",
    "absolute_path",
    "empty_segment",
    "directory_path",
    "control_character",
    "surrounding_whitespace",
    "key_too_long",
    "reserved_path",
    "unknown_skill",
    "invalid_id",
    "permission_denied",
    "not_found",
    "read_only",
    "no_such_bucket",
    "storage_unavailable",
    "database_unavailable",
    "unknown_entity",
    "config",
    // The people's files API's own (SPEC SF-1.5).
    "unauthenticated",
    "too_large",
    "invalid_encoding",
    // Part SL's (SPEC SL-1.4).
    "invalid_policy",
    "erasure_pending",
];

/// What `TURN wait KIND ID` may name (SC-5.3).
pub const WAIT_KINDS: &[&str] = &["queued", "parked", "waiting"];

/// Where `crash at POINT` may stop the store.
pub const CRASH_POINTS: &[&str] = &[
    "after_text_written",
    "after_session_objects_deleted",
    "after_obligation_objects_deleted",
];

/// `word` if it is one of `known`, else an error listing them.
fn one_of(word: &str, what: &str, known: &[&str]) -> Result<String, String> {
    if known.contains(&word) {
        Ok(word.to_string())
    } else {
        Err(format!(
            "unknown {what} {:?}; expected one of {}",
            clip(word),
            known.join(", ")
        ))
    }
}

/// The `faults` step that sets `plan` (its latency is never set by a scenario).
fn faults(plan: FaultPlan) -> ScopedOp {
    ScopedOp::Faults {
        down: plan.down,
        error_rate: plan.error_rate,
        delete_key_failure_rate: plan.delete_key_failure_rate,
        fail_requests: plan.fail_requests,
        fail_from: plan.fail_from,
        no_such_bucket: plan.no_such_bucket,
        access_denied: plan.access_denied,
        throttle: plan.throttle,
    }
}

/// The scoped knobs, each with the range SPEC part SC allows: the idle TTL is a whole number of
/// days (SC-5.1), at least one, and at most a century.
pub const SCOPED_KNOBS: &[(&str, i64, i64)] = &[
    ("session_file_ttl_days", 1, 36_500),
    // SF-4.3: the people's files API's upload limit, in bytes (up to 1 TiB).
    ("max_upload_bytes", 1, 1 << 40),
    // SL-7.1: a tool result over this many bytes is written to a session file (up to 1 GiB).
    ("tool_output_limit_bytes", 1, 1 << 30),
    // SL-3.1: a closed session is swept this many days after its close (default 7).
    ("close_grace_days", 1, 36_500),
    // SL-5.4: the most lifecycle rules the bucket holds, S3's 1,000 at most and the three class
    // rules at least; lowered, a scenario stages the budget with a few workspaces.
    ("lifecycle_rule_limit", 3, 1000),
];

fn knob(name: &str, value: &str, knobs: &mut BTreeMap<String, i64>) -> Result<(), String> {
    let Some(&(_, min, max)) = SCOPED_KNOBS.iter().find(|(n, _, _)| *n == name) else {
        return Err(format!(
            "unknown knob {:?}; expected one of {}",
            clip(name),
            SCOPED_KNOBS
                .iter()
                .map(|(n, _, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let v = value
        .parse::<i64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| {
            format!(
                "knob {name} must be a whole number from {min} to {max}, not {:?}",
                clip(value)
            )
        })?;
    if knobs.insert(name.to_string(), v).is_some() {
        return Err(format!("knob {name} is set twice"));
    }
    Ok(())
}

fn access(s: &str) -> Result<Access, String> {
    Access::parse(s).ok_or_else(|| format!("access must be none, read or read-write, not {s:?}"))
}

fn turn(w: &str) -> Result<Turn, String> {
    let (ids, skills) = match w.split_once('+') {
        Some((i, s)) => (i, Some(s)),
        None => (w, None),
    };
    let parts: Vec<&str> = ids.split('/').collect();
    let [ws, agent, session] = parts[..] else {
        return Err(format!("a turn is workspace/agent/session, not {w:?}"));
    };
    let mut t = Turn::new(ws, agent, session);
    for pair in skills.into_iter().flat_map(|s| s.split(',')) {
        let (slug, name) = pair
            .split_once('=')
            .ok_or_else(|| format!("a turn's skill is slug=name, not {pair:?}"))?;
        t.skills.insert(slug.into(), name.into());
    }
    Ok(t)
}

fn settings(rest: &[String]) -> Result<(Option<Access>, Option<Access>), String> {
    let (mut a, mut w) = (None, None);
    for kv in rest {
        match kv.split_once('=') {
            Some(("agent", v)) => a = Some(access(v)?),
            Some(("workspace", v)) => w = Some(access(v)?),
            _ => {
                return Err(format!(
                    "expected agent=ACCESS or workspace=ACCESS, got {kv}"
                ))
            }
        }
    }
    Ok((a, w))
}

/// A person's name in a scenario: lowercase letters, digits, `-` and `_`, a letter first (so it
/// never reads as a turn, `w1/a1/s1`).
fn person_name(name: &str) -> Result<String, String> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(name.to_string())
    } else {
        Err(format!(
            "a person is named with lowercase letters, digits, - and _, a letter first, not {:?}",
            clip(name)
        ))
    }
}

/// `person NAME of W [in S ...] [agent=ACCESS] [workspace=ACCESS]` after `person NAME of W`.
fn person(name: &str, workspace: &str, rest: &[String]) -> Result<ScopedOp, String> {
    let name = person_name(name)?;
    if name == ANONYMOUS {
        return Err(format!(
            "{ANONYMOUS} is the person with no credentials, and has none to define"
        ));
    }
    let (mut sessions, mut agent_files, mut workspace_files) = (Vec::new(), None, None);
    let mut in_conversation = false;
    for w in rest {
        match (w.as_str(), w.split_once('=')) {
            ("in", _) if !in_conversation && sessions.is_empty() => in_conversation = true,
            (_, Some(("agent", v))) => agent_files = Some(access(v)?),
            (_, Some(("workspace", v))) => workspace_files = Some(access(v)?),
            (s, None) if in_conversation => sessions.push(s.to_string()),
            _ => {
                return Err(format!(
                    "expected `in SESSION ...`, agent=ACCESS or workspace=ACCESS, got {}",
                    clip(w)
                ))
            }
        }
    }
    if in_conversation && sessions.is_empty() {
        return Err("`in` names no session".into());
    }
    Ok(ScopedOp::Person {
        person: name,
        workspace: workspace.to_string(),
        agent_files,
        workspace_files,
        sessions,
    })
}

/// The URL after `/files/` as a person's request sends it (SPEC SF-3): sent exactly as written,
/// so it must be what an HTTP request target can carry (visible ASCII) and hold no `?` or `#`,
/// which would end the path.
fn url_path(w: &str) -> Result<String, String> {
    let p = unquote_or(w);
    if p.is_empty()
        || !p
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'?' && b != b'#')
    {
        return Err(format!(
            "a URL path is sent as written: visible ASCII with no `?` or `#` (percent-encode the rest), not {:?}",
            clip(&p)
        ));
    }
    Ok(p)
}

fn people(name: &str, session: &str, call: PeopleCall) -> Result<ScopedOp, String> {
    Ok(ScopedOp::People {
        person: person_name(name)?,
        session: session.to_string(),
        call,
    })
}

fn action(w: &[String]) -> Result<Action, String> {
    let s: Vec<&str> = w.iter().map(String::as_str).collect();
    let op = match s[..] {
        ["advance", d] => return Ok(Action::Advance(duration_ms(d)?)),
        ["person", name, "of", ws, ..] => person(name, ws, &w[4..])?,
        [p, "upload", session, url, content] => people(
            p,
            session,
            PeopleCall::Upload {
                url_path: url_path(url)?,
                content: unquote(content)?,
            },
        )?,
        [p, "download", session, url] => people(
            p,
            session,
            PeopleCall::Download {
                url_path: url_path(url)?,
            },
        )?,
        [p, "remove", session, url] => people(
            p,
            session,
            PeopleCall::Remove {
                url_path: url_path(url)?,
            },
        )?,
        [p, "files", session] => people(p, session, PeopleCall::List)?,
        [p, "upload-scopes", session] => people(p, session, PeopleCall::UploadScopes)?,
        ["create", "workspace", ws, ..] => {
            let (agent_access, workspace_access) = settings(&w[3..])?;
            ScopedOp::CreateWorkspace {
                workspace: ws.into(),
                agent_access,
                workspace_access,
            }
        }
        ["create", "agent", wa, ..] => {
            let (ws, agent) = wa
                .split_once('/')
                .ok_or_else(|| format!("an agent is workspace/agent, not {wa:?}"))?;
            let (agent_access, workspace_access) = settings(&w[3..])?;
            ScopedOp::CreateAgent {
                workspace: ws.into(),
                agent: agent.into(),
                agent_access,
                workspace_access,
            }
        }
        ["create", "session", t] => ScopedOp::CreateSession { turn: turn(t)? },
        ["delete", "session", t] => ScopedOp::DeleteSession { turn: turn(t)? },
        ["delete", "agent", wa] => {
            let (ws, agent) = wa
                .split_once('/')
                .ok_or_else(|| format!("an agent is workspace/agent, not {wa:?}"))?;
            ScopedOp::DeleteAgent {
                workspace: ws.into(),
                agent: agent.into(),
            }
        }
        ["delete", "workspace", ws] => ScopedOp::DeleteWorkspace {
            workspace: ws.into(),
        },
        ["publish", "skill", name, "in", ws, ..] => {
            let mut files = BTreeMap::new();
            for f in &w[5..] {
                let (path, content) = f
                    .split_once('=')
                    .ok_or_else(|| format!("a skill file is PATH=\"CONTENT\", not {f}"))?;
                files.insert(path.to_string(), unquote(content)?);
            }
            ScopedOp::PublishSkill {
                workspace: ws.into(),
                name: name.into(),
                files,
            }
        }
        ["sweep"] => ScopedOp::Sweep,
        ["restart"] => ScopedOp::Restart,
        ["heal"] => ScopedOp::Heal,
        ["crash", "at", p] => ScopedOp::CrashAt {
            point: CrashPointName(one_of(p, "crash point", CRASH_POINTS)?),
        },
        ["faults", "down"] => faults(FaultPlan {
            down: true,
            ..FaultPlan::default()
        }),
        ["faults", "delete-failure", r] => faults(FaultPlan {
            delete_key_failure_rate: rate(r)?,
            ..FaultPlan::default()
        }),
        ["faults", "error", r] => faults(FaultPlan {
            error_rate: rate(r)?,
            ..FaultPlan::default()
        }),
        ["faults", "fail", op, n] => faults(FaultPlan {
            fail_requests: vec![(fault_op(op)?, request_count(n)?)],
            ..FaultPlan::default()
        }),
        ["faults", "fail", op, "from", n] => faults(FaultPlan {
            fail_from: vec![(fault_op(op)?, request_count(n)?)],
            ..FaultPlan::default()
        }),
        ["faults", "no-such-bucket"] => faults(FaultPlan {
            no_such_bucket: true,
            ..FaultPlan::default()
        }),
        ["faults", "access-denied"] => faults(FaultPlan {
            access_denied: true,
            ..FaultPlan::default()
        }),
        ["faults", "throttle"] => faults(FaultPlan {
            throttle: Throttle::Always,
            ..FaultPlan::default()
        }),
        ["faults", "throttle", n] => faults(FaultPlan {
            throttle: Throttle::Next(request_count(n)?),
            ..FaultPlan::default()
        }),
        ["faults", ..] => {
            return Err(format!(
                "no such fault: {}; expected faults down, faults error RATE, faults delete-failure RATE, \
                 faults fail OP N, faults fail OP from N, faults no-such-bucket, faults access-denied, faults throttle or faults throttle N",
                clip(&s.join(" "))
            ))
        }
        ["lifecycle", "rules"] => ScopedOp::LifecycleRules,
        ["apply", "lifecycle", days] => ScopedOp::ApplyLifecycle {
            session_backstop_days: days.parse().map_err(|_| format!("bad days {days}"))?,
        },
        ["lifecycle", "age-only", prefix, days] => ScopedOp::RunAgeRule {
            prefix: prefix.to_string(),
            days: days.parse().map_err(|_| format!("bad days {days}"))?,
        },
        ["bucket", p] => ScopedOp::BucketKeys {
            prefix: if p == "\"\"" { String::new() } else { p.into() },
        },
        ["keep", "last", n, "sessions" | "session", "of", wa] => {
            let (ws, agent) = wa
                .split_once('/')
                .ok_or_else(|| format!("an agent is workspace/agent, not {wa:?}"))?;
            ScopedOp::SetSessionCount {
                workspace: ws.into(),
                agent: agent.into(),
                keep_last: Some(n.parse().map_err(|_| {
                    format!("a count is a whole number, not {:?}", clip(n))
                })?),
            }
        }
        ["keep", "every", "session", "of", wa] => {
            let (ws, agent) = wa
                .split_once('/')
                .ok_or_else(|| format!("an agent is workspace/agent, not {wa:?}"))?;
            ScopedOp::SetSessionCount {
                workspace: ws.into(),
                agent: agent.into(),
                keep_last: None,
            }
        }
        ["retention", "of", ws, "ttl", n, "days" | "day"] => ScopedOp::SetWorkspaceRetention {
            workspace: ws.into(),
            session_file_ttl_days: Some(
                n.parse()
                    .map_err(|_| format!("a TTL is a whole number of days, not {:?}", clip(n)))?,
            ),
        },
        ["retention", "of", ws, "default"] => ScopedOp::SetWorkspaceRetention {
            workspace: ws.into(),
            session_file_ttl_days: None,
        },
        [t, "tool", "output", content] => ScopedOp::ToolOutput {
            turn: turn(t)?,
            content: unquote(content)?,
        },
        [t, "promote", from, "to", to] => ScopedOp::Promote {
            turn: turn(t)?,
            from: unquote_or(from),
            to: unquote_or(to),
        },
        ["pending", "deletions"] => ScopedOp::PendingDeletions,
        ["erase", "workspace" | "agent", _, "within", _] => super::erasure_script::erase(&s)?,
        ["erasure", "of", subject] => {
            let (workspace, agent) = super::erasure_script::subject(subject)?;
            ScopedOp::ErasureStates { workspace, agent }
        }
        ["proof", "of", subject] => {
            let (workspace, agent) = super::erasure_script::subject(subject)?;
            ScopedOp::ErasureProof { workspace, agent }
        }
        ["deletion", "records"] => ScopedOp::DeletionRecords,
        [t, "write", path, content] => ScopedOp::Write {
            turn: turn(t)?,
            path: unquote_or(path),
            content: unquote(content)?,
        },
        [t, "write", path, content, "during", "sweep"] => ScopedOp::WriteDuringSweep {
            turn: turn(t)?,
            path: unquote_or(path),
            content: unquote(content)?,
        },
        [t, "read", path] => ScopedOp::Read {
            turn: turn(t)?,
            path: unquote_or(path),
        },
        [t, "text", path] => ScopedOp::ReadText {
            turn: turn(t)?,
            path: unquote_or(path),
        },
        [t, "list"] => ScopedOp::List {
            turn: turn(t)?,
            prefix: None,
        },
        [t, "list", p] => ScopedOp::List {
            turn: turn(t)?,
            prefix: Some(unquote_or(p)),
        },
        [t, "delete", path] => ScopedOp::Delete {
            turn: turn(t)?,
            path: unquote_or(path),
        },
        [t, "activity"] => ScopedOp::Activity { turn: turn(t)? },
        [t, "wait", kind, id] => ScopedOp::AddWait {
            turn: turn(t)?,
            kind: WaitKindName(one_of(kind, "wait kind", WAIT_KINDS)?),
            id: id.into(),
        },
        [t, "unwait", kind, id] => ScopedOp::RemoveWait {
            turn: turn(t)?,
            kind: WaitKindName(one_of(kind, "wait kind", WAIT_KINDS)?),
            id: id.into(),
        },
        _ => match super::script_close::action(&s, turn) {
            Some(op) => op?,
            None => return Err(format!("no such step: {}", clip(&s.join(" ")))),
        },
    };
    Ok(Action::Op(op))
}

/// A path may be quoted (to carry spaces, control characters or an empty string) or bare.
fn unquote_or(w: &str) -> String {
    unquote(w).unwrap_or_else(|_| w.to_string())
}

fn expect(w: &[String]) -> Result<Expect, String> {
    // `swept 1 session, 0 deletions` reads better with its comma; commas outside quotes and
    // lists are punctuation.
    let s: Vec<&str> = w
        .iter()
        .map(|x| {
            if x.starts_with('"') || x.starts_with('[') {
                x.as_str()
            } else {
                x.trim_end_matches(',')
            }
        })
        .collect();
    Ok(match s[..] {
        ["ok"] => Expect::Ok,
        ["crashed"] => Expect::Crashed,
        ["published"] => Expect::Published,
        ["overflowed"] => Expect::Overflowed(None),
        ["overflowed", "as", name] => {
            Expect::Overflowed(Some(super::bindings::binding_name(name)?))
        }
        ["pending" | "met"] | ["overdue" | "missed", _] => {
            Expect::Erasures(vec![super::erasure::parse_state(&s)?])
        }
        ["written", p] => Expect::Written(unquote_or(p)),
        ["refused", r] => Expect::Refused(one_of(r, "refusal reason", REASONS)?),
        ["no", "text"] => Expect::Text(None),
        ["text", t] => Expect::Text(Some(unquote(t)?)),
        ["swept", n, "sessions" | "session", m, "deletions" | "deletion"] => Expect::Swept {
            sessions: n.parse().map_err(|_| format!("bad count {n}"))?,
            deletions: m.parse().map_err(|_| format!("bad count {m}"))?,
        },
        [c] if c.starts_with('"') => Expect::Content(unquote(c)?),
        [l] if l.starts_with('[') => Expect::List(list(l)?),
        ["in", "order", l] if l.starts_with('[') => Expect::Ordered(list(l)?),
        _ => return Err(format!("no such expectation: {}", clip(&s.join(" ")))),
    })
}

/// Parses a scenario, checking its citations against this repository's SPEC.md.
pub fn parse(file: &Path, text: &str) -> Result<Script, ScenarioFileError> {
    parse_with(file, text, repo_rules().map_err(|e| e.at(file))?)
}

/// The scoped profile's header vocabulary: its part of SPEC.md and its mutants.
pub const VOCABULARY: HeaderVocabulary = HeaderVocabulary {
    profile: "scoped",
    rule_prefix: "SC-",
    // Parts SF (the people's files API) and SL (retention policies) extend part SC: their
    // scenarios are scoped scenarios.
    also_cites: &["SF-", "SL-"],
    mutants: || {
        tidemark_reference::scoped::ScopedMutant::ALL
            .iter()
            .map(|m| m.id())
            .collect()
    },
    capabilities: &[],
    variants: super::variants::VARIANTS,
};

/// Parses a scenario whose `rules:` must be among `rules` (the ids of a SPEC.md).
pub fn parse_with(
    file: &Path,
    text: &str,
    known_rules: &BTreeSet<String>,
) -> Result<Script, ScenarioFileError> {
    // Quoted input is clipped where it is quoted; this bounds the whole message as well.
    let err =
        |line: usize, message: String| ScenarioFileError::new(file, line, clip_field(&message));
    let (header, lines) = header::split(text, &VOCABULARY, &|id| known_rules.contains(id))
        .map_err(|(line, m)| err(line, m))?;
    let mut knobs = BTreeMap::new();
    for k in &header.knobs {
        knob(&k.name, &k.value, &mut knobs).map_err(|m| err(k.line, m))?;
    }
    header::require_steps(text, &lines).map_err(|(line, m)| err(line, m))?;
    let mut steps = Vec::new();
    // Where the clock stands, from the epoch, checked at every advance: it may jump back, but
    // never before 1970 nor past the span a scenario may cover.
    let mut offset_ms: i64 = 0;
    // People defined so far (`person NAME of W …`): a request names one of them.
    let mut persons = BTreeSet::new();
    for StepLine { line, text: l } in lines {
        let tokens = tokenize(l).map_err(|m| err(line, m))?;
        let (act, exp) = match tokens.iter().position(|t| *t == Token::Arrow) {
            Some(i) => (&tokens[..i], Some(&tokens[i + 1..])),
            None => (&tokens[..], None),
        };
        let aw = words(act).map_err(|m| err(line, m))?;
        let action = action(&aw).map_err(|m| err(line, m))?;
        match &action {
            Action::Op(ScopedOp::Person { person, .. }) => {
                persons.insert(person.clone());
            }
            Action::Op(ScopedOp::People { person, .. })
                if person != ANONYMOUS && !persons.contains(person) =>
            {
                return Err(err(
                    line,
                    format!(
                        "no person {person} is defined above (`person {person} of WORKSPACE ...`)"
                    ),
                ));
            }
            _ => {}
        }
        if let Action::Advance(ms) = action {
            offset_ms = offset_ms
                .checked_add(ms)
                .filter(|o| (-tidemark_sim::clock::EPOCH.as_millis()..=MAX_SCENARIO_SPAN_MS).contains(o))
                .ok_or_else(|| {
                    err(
                        line,
                        format!(
                            "this advance takes the scenario's clock before 1970 or past {} days after the epoch",
                            MAX_SCENARIO_SPAN_MS / DAY_MS
                        ),
                    )
                })?;
        }
        let expect = match exp {
            Some(e) => expect(&words(e).map_err(|m| err(line, m))?).map_err(|m| err(line, m))?,
            None => Expect::Ok,
        };
        // An erasure's deadline is written from the step's clock (`within 7d`).
        let action = super::erasure_script::dated(action, offset_ms);
        let expect =
            super::erasure_script::expectation(&action, expect).map_err(|m| err(line, m))?;
        steps.push(Step {
            line,
            text: l.to_string(),
            action,
            expect,
        });
    }
    super::bindings::check(&mut steps).map_err(|(line, m)| err(line, m))?;
    Ok(Script {
        file: file.to_path_buf(),
        name: header.name,
        rules: header.rules,
        kills: header.kills,
        knobs,
        steps,
        guards: header.guards,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_reference::clock::HOUR_MS;

    #[test]
    fn a_scenario_parses_into_steps_with_expectations() {
        let s = parse(
            Path::new("x.tdm"),
            "scenario: s\nprofile: scoped\nrules: SC-1.1\nkills: age-only-expiry\n\n\
             create workspace w1 workspace=read-write\n\
             w1/a1/s1 write session/a.md \"hi there\" => written session/a.md\n\
             advance 1d2h\n\
             w1/a1/s1+pricing=v1 list => [session/a.md, agent/b.md]\n\
             sweep => swept 1 sessions, 0 deletions\n",
        )
        .unwrap();
        assert_eq!(s.steps.len(), 5);
        assert_eq!(s.kills, vec!["age-only-expiry"]);
        assert!(matches!(s.steps[2].action, Action::Advance(ms) if ms == DAY_MS + 2 * HOUR_MS));
        assert_eq!(
            s.steps[4].expect,
            Expect::Swept {
                sessions: 1,
                deletions: 0
            }
        );
    }

    #[test]
    fn a_malformed_step_names_its_line() {
        let e = parse(
            Path::new("x.tdm"),
            "scenario: s\nprofile: scoped\nrules: SC-1.1\nfrobnicate\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 4);
    }

    #[test]
    fn the_store_error_faults_and_the_lifecycle_read_back_parse_strictly() {
        let s = parse(
            Path::new("x.tdm"),
            "scenario: s\nprofile: scoped\nrules: SC-8.4\n\
             faults throttle 2\nfaults throttle\nfaults no-such-bucket\nfaults access-denied\n\
             lifecycle rules => [\"sessions/ expire 365d abort 7d\", \"agents/ abort 7d\"]\n\
             w1/a1/s1 list => in order [session/B.md, session/a.md]\n",
        )
        .unwrap();
        let plan = |i: usize| match &s.steps[i].action {
            Action::Op(op) => super::super::remote::fault_plan(op).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(plan(0).throttle, Throttle::Next(2));
        assert_eq!(plan(1).throttle, Throttle::Always);
        assert!(plan(2).no_such_bucket && !plan(2).access_denied);
        assert!(plan(3).access_denied && !plan(3).down);
        assert_eq!(
            s.steps[4].expect,
            Expect::List(vec![
                "sessions/ expire 365d abort 7d".into(),
                "agents/ abort 7d".into()
            ])
        );
        // `in order` checks the order; a plain list does not.
        let listing = |p: &[&str]| ScopedOutcome::Listing {
            paths: p.iter().map(|x| x.to_string()).collect(),
        };
        assert!(s.steps[5]
            .expect
            .matches(&listing(&["session/B.md", "session/a.md"])));
        assert!(!s.steps[5]
            .expect
            .matches(&listing(&["session/a.md", "session/B.md"])));
        for bad in [
            "faults throttle 0",
            "faults throttle -1",
            "faults throttle x",
            "faults slow",
        ] {
            let e = parse(
                Path::new("x.tdm"),
                &format!("scenario: s\nprofile: scoped\nrules: SC-8.4\n{bad}\n"),
            )
            .unwrap_err();
            assert_eq!(e.line, 4, "{bad}: {e}");
        }
    }

    #[test]
    fn a_person_and_their_requests_parse_with_the_url_as_written() {
        let s = parse(
            Path::new("x.tdm"),
            "scenario: s\nprofile: scoped\nrules: SF-1.1\n\
             person alice of w1 in s1, s2 agent=read workspace=read-write\n\
             alice upload s1 session/my%20notes.md \"x\" => written \"session/my notes.md\"\n\
             anonymous files s1 => refused unauthenticated\n\
             alice upload-scopes s1 => in order [session, workspace]\n",
        )
        .unwrap();
        let op = |i: usize| match &s.steps[i].action {
            Action::Op(op) => op.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            op(0),
            ScopedOp::Person {
                person: "alice".into(),
                workspace: "w1".into(),
                agent_files: Some(Access::Read),
                workspace_files: Some(Access::ReadWrite),
                sessions: vec!["s1".into(), "s2".into()],
            }
        );
        assert_eq!(
            op(1),
            ScopedOp::People {
                person: "alice".into(),
                session: "s1".into(),
                call: PeopleCall::Upload {
                    url_path: "session/my%20notes.md".into(),
                    content: "x".into()
                },
            }
        );
        assert_eq!(
            s.steps[1].expect,
            Expect::Written("session/my notes.md".into())
        );
        assert_eq!(s.steps[2].expect, Expect::Refused("unauthenticated".into()));
    }

    #[test]
    fn durations_read_like_the_scratchpad_scenarios() {
        assert_eq!(duration_ms("6d23h").unwrap(), 6 * DAY_MS + 23 * HOUR_MS);
        assert_eq!(duration_ms("-10d").unwrap(), -10 * DAY_MS);
        assert!(duration_ms("5x").is_err());
    }
}

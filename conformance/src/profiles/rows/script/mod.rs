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

mod grammar;

use std::collections::{BTreeMap, BTreeSet};

use std::path::{Path, PathBuf};

use tidemark_reference::rows::{ExpiringStore, RowsMutant};
use tidemark_sim::clip::{clip, clip_field, MAX_SCENARIO_SPAN_MS};

pub use crate::scenario::header::utf8_text;
use crate::scenario::header::{self, HeaderVocabulary, StepLine};
use crate::scenario::lex::{tokenize, Token};
use crate::scenario::load::{self, LoadErrors, ScenarioFileError};

use grammar::{action, expect, Names};

/// The rows profile's header vocabulary: part SR of SPEC.md and the rows mutants.
pub const VOCABULARY: HeaderVocabulary = HeaderVocabulary {
    profile: "rows",
    rule_prefix: "SR-",
    also_cites: &[],
    mutants: || RowsMutant::ALL.iter().map(|m| m.id()).collect(),
    capabilities: &[],
    variants: super::variants::VARIANTS,
};

/// The reason codes of SPEC SR-9.1.
pub const REASONS: &[&str] = &[
    "unknown_workspace",
    "unknown_session",
    "unknown_reply",
    "unknown_snapshot",
    "unknown_item",
    "unknown_kind",
    // Only under SR-5.1's variant `unknown_model_drops=refused`.
    "unknown_model",
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
    /// The `variant:` line and the guarded steps (SPEC.md's variants).
    pub guards: crate::variants::Guards,
}

impl Script {
    /// The scenario as an implementation taking `declared` plays it: only the steps whose
    /// guard holds for it.
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

    /// Why the scenario does not apply to an implementation taking `declared`.
    pub fn skip_reason(&self, declared: &crate::variants::Declared) -> Option<String> {
        self.guards.skip_reason(declared)
    }

    /// `rows::<file stem>`, `-` read as `_`.
    pub fn test_name(&self) -> String {
        load::test_name(VOCABULARY.profile, &self.file)
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
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    /// Every row of a table of the reference's schema.
    Table(String),
    /// The streamed events naming a reply.
    StreamedOf(String),
    /// A session's events, streamed or not.
    EventsIn(String),
}

/// One step's action. Also exploration's operations (`explore/ops.rs`), hence serialisable:
/// a saved failure (`fixtures/explore/rows/`) stores them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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
        #[serde(with = "store_by_table")]
        store: ExpiringStore,
        id: String,
        for_ms: i64,
    },
    Reap,
    /// A reaper tick whose sweeps delete `batch` rows a statement (SR-7.3), dying once
    /// `crash_after` batches that removed a row have committed (SR-7.4), when it is set.
    ReapBatched {
        batch: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        crash_after: Option<u64>,
    },
    Transcript(String),
    Snapshots,
    Count(Counted),
}

/// An expiring store written as its table's name in saved failures.
mod store_by_table {
    use serde::{Deserialize, Deserializer, Serializer};
    use tidemark_reference::rows::ExpiringStore;

    pub fn serialize<S: Serializer>(s: &ExpiringStore, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(s.table())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ExpiringStore, D::Error> {
        let name = String::deserialize(d)?;
        ExpiringStore::ALL
            .into_iter()
            .find(|s| s.table() == name)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "unknown store {name:?}; expected one of {}",
                    ExpiringStore::ALL.map(|s| s.table()).join(", ")
                ))
            })
    }
}

impl Action {
    /// Steps that read rather than change: they must state what they expect.
    pub fn is_reap(&self) -> bool {
        matches!(self, Action::Reap | Action::ReapBatched { .. })
    }

    pub fn is_query(&self) -> bool {
        matches!(
            self,
            Action::Reap
                | Action::ReapBatched { .. }
                | Action::Transcript(_)
                | Action::Snapshots
                | Action::Count(_)
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

/// Every rows `*.tdm` under `dir`, in path order, each once, citations checked against `rules`.
pub fn load_dir_with(dir: &Path, rules: &BTreeSet<String>) -> Result<Vec<Script>, LoadErrors> {
    load::load_dir(
        dir,
        VOCABULARY.profile,
        |f, text| parse_with(f, text, rules),
        |s| &s.file,
    )
}

/// Parses a scenario whose `rules:` must be among `known_rules`.
pub fn parse_with(
    file: &Path,
    text: &str,
    known_rules: &BTreeSet<String>,
) -> Result<Script, ScenarioFileError> {
    let err =
        |line: usize, message: String| ScenarioFileError::new(file, line, clip_field(&message));
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
    // No hollow checks for any implementation: the rows a count finds gone must have been shown
    // by a step every implementation taking those choices plays, not only by a guarded one.
    for declared in header.guards.assignments() {
        let mut shown: BTreeSet<&Counted> = BTreeSet::new();
        for step in steps
            .iter()
            .filter(|s| header.guards.keeps(s.line, &declared))
        {
            match (&step.action, &step.expect) {
                (Action::Count(c), Expect::Count(0)) if !shown.contains(c) => {
                    return Err(err(
                        step.line,
                        format!(
                            "a hollow check for an implementation taking {declared}: the count above 0 that shows these rows is a step it does not play"
                        ),
                    ))
                }
                (Action::Count(c), Expect::Count(_)) => {
                    shown.insert(c);
                }
                _ => {}
            }
        }
    }
    Ok(Script {
        file: file.to_path_buf(),
        name: header.name,
        rules: header.rules,
        kills: header.kills,
        steps,
        guards: header.guards,
    })
}

/// Identifiers the runner learns as the implementation answers (replies, snapshots, items,
/// held requests), by the scenario's names: opaque strings (`contract.rs`).
pub(crate) type Ids = BTreeMap<String, String>;

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
    fn a_count_of_zero_shown_only_by_another_choices_step_is_a_hollow_check() {
        let text = "workspace w\nsession c in w\nevent c turn.started \"x\"\n\
                    when kind_check_order=target_first: count events in c => 1\n\
                    delete session c\ncount events in c => 0\n";
        let e = parse_with(
            Path::new("x.tdm"),
            &format!("{HEAD}{text}"),
            &["SR-2.3".to_string(), "SR-2.1".to_string()]
                .into_iter()
                .collect(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "x.tdm:9: a hollow check for an implementation taking every variant at its default"
            ),
            "{e}"
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

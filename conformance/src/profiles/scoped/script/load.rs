//! A scoped scenario file read whole: its header (the profile's [`VOCABULARY`] and its
//! [`SCOPED_KNOBS`]), each step line through the grammar with the clock the steps before it
//! advanced, then the names it binds checked; and a folder of them loaded with their citations
//! checked against SPEC.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use tidemark_sim::clip::{clip, clip_field, MAX_SCENARIO_SPAN_MS};

use tidemark_reference::clock::DAY_MS;

use crate::scenario::header::{self, HeaderVocabulary, StepLine};
use crate::scenario::lex::{tokenize, Token};
use crate::scenario::load::{self, LoadErrors, ScenarioFileError};

use super::grammar::{action, expect};
use super::words::words;
use super::{Action, Expect, Script, Step};
use crate::profiles::scoped::contract::{ScopedOp, ANONYMOUS};

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
    variants: crate::profiles::scoped::variants::VARIANTS,
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
        let action = super::erasure::dated(action, offset_ms);
        let expect = super::erasure::expectation(&action, expect).map_err(|m| err(line, m))?;
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
    use crate::profiles::scoped::contract::PeopleCall;
    use crate::profiles::scoped::script::*;
    use tidemark_reference::clock::HOUR_MS;
    use tidemark_reference::scoped::Access;
    use tidemark_sim::real_tier::faults::Throttle;

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
            Action::Op(op) => crate::profiles::scoped::process::harness::fault_plan(op).unwrap(),
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

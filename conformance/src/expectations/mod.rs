//! The expectations file: the failures an implementation is known to have, so a team can put
//! Tidemark in CI before it passes everything and still fail on anything new (`tidemark run
//! --expect FILE`), and the differences exploration accepts (`tidemark explore --expect FILE`).
//! `tidemark run --write-expectations FILE` writes today's failures as a starting point.
//!
//! **Why TOML.** People edit this file by hand and review it in diffs: TOML has comments (a team
//! writes down why beside the entry, and the file explains itself in its header), one key per
//! line (a changed outcome is a one-line diff), and strings without JSON's escaping of every
//! quote. It is parsed by the `toml` crate, whose errors carry the byte span this module turns
//! into `file:line`.
//!
//! **The format** (`format = "tidemark-expectations/1"`, then entries):
//!
//! ```toml
//! [[failure]]                 # a scenario known to fail, exactly so
//! scenario = "scratchpad::the_session_cap_evicts_oldest_first"   # its test name
//! at = "scenarios/scratchpad/the-session-cap-evicts-oldest-first.tdm:15"  # the failing step's file:line
//! step = "alice@#general/T1 write new.txt 300B => ok evicted [@alice/a.txt]"
//! expected = "…"              # as the report shows it
//! actual = "…"
//! reason = "why this failure is accepted"        # required
//!
//! [[difference]]              # a difference exploration accepts (tidemark explore)
//! profile = "scratchpad"
//! signature = "SP-3.6 disk: a directory the model never had"   # as explore prints it
//! reason = "we create the caller's directory on every turn"
//! ```
//!
//! **Decisions** (each tested in `judge.rs` and `tests/integration/expectations.rs`):
//! - A run passes when its results match the file: every failure is listed with the same step
//!   (`at` and `step`) and outcome (`expected` and `actual`; of a program's error, what the
//!   harness adds about its process, whether it had exited and its stderr's tail, is neither
//!   written nor compared: it depends on timing and on the machine, not on the implementation's
//!   answer). A listed scenario that passes now,
//!   fails at another step or with another outcome, or was skipped (a capability or profile not
//!   claimed), is *out of date*: reported with exactly what to change, and the run fails until
//!   the file is updated, so the file only shrinks.
//! - An entry whose scenario this run did not select (`--profile`, `--only`) is not checked:
//!   counted, never failed, so one file serves every job of a split CI and every replay.
//! - An entry naming a scenario the suite no longer has is out of date ("delete the entry").
//! - Two entries for one scenario (a scenario fails at most once: its first mismatch ends it), or
//!   two for one signature, are a load error naming both lines; so is a missing or empty
//!   `reason`, an unknown key, a malformed value, an unknown profile or a malformed test name.
//!   A load error is `file:line: what was expected`, and the command exits 2 before running.
//! - `--write-expectations` writes every failure of the run with the reason [`UNTRIAGED`]; an
//!   entry of `--expect`'s file that lists the same failure (scenario, step and outcome) keeps
//!   its reason, and entries for scenarios this run did not select, and every `[[difference]]`,
//!   are carried over unchanged.

pub mod judge;
pub mod write;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::explore::signature::{KnownDifferences, KnownEntry};

/// The value of the file's `format` key.
pub const FORMAT: &str = "tidemark-expectations/1";

/// The reason `--write-expectations` gives each entry it writes: it says plainly that nobody has
/// decided yet whether the failure is acceptable.
pub const UNTRIAGED: &str =
    "UNTRIAGED: recorded by --write-expectations; replace this with why the failure is accepted, or fix it";

/// Whether a reason is still the one `--write-expectations` wrote.
pub fn is_untriaged(reason: &str) -> bool {
    reason.trim_start().starts_with("UNTRIAGED")
}

/// A loaded expectations file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expectations {
    /// The file as messages name it (the path as given).
    pub file: String,
    pub failures: Vec<KnownFailure>,
    pub differences: Vec<ListedDifference>,
}

/// A scenario known to fail, at one step with one outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownFailure {
    /// The line of its `[[failure]]` header.
    pub line: usize,
    /// The test name, `<profile>::<file stem>`.
    pub scenario: String,
    /// The failing step's `file:line`, as the report shows it.
    pub at: String,
    pub step: String,
    pub expected: String,
    pub actual: String,
    pub reason: String,
}

impl KnownFailure {
    pub fn profile(&self) -> &str {
        self.scenario.split_once("::").map(|(p, _)| p).unwrap_or("")
    }
}

/// A difference exploration accepts, by signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedDifference {
    pub line: usize,
    pub profile: String,
    pub signature: String,
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    format: Spanned<String>,
    #[serde(default)]
    failure: Vec<Spanned<RawFailure>>,
    #[serde(default)]
    difference: Vec<Spanned<RawDifference>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFailure {
    scenario: Spanned<String>,
    at: String,
    step: String,
    expected: String,
    actual: String,
    reason: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDifference {
    profile: Spanned<String>,
    signature: Spanned<String>,
    reason: Spanned<String>,
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

impl Expectations {
    /// Reads and checks the file at `path`; an error is `file:line: what is wrong`.
    pub fn load(path: &Path) -> Result<Expectations, String> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the expectations file {file}: {e}"))?;
        Expectations::parse(&file, &text)
    }

    /// Parses `text`, named `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<Expectations, String> {
        let at = |offset: usize, what: String| format!("{file}:{}: {what}", line_of(text, offset));
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let mut what = e.message().trim_end().to_string();
            if what == "missing field `format`" {
                what = format!("this is not an expectations file: it needs format = {FORMAT:?}");
            }
            match e.span() {
                Some(span) => at(span.start, what),
                None => format!("{file}: {what}"),
            }
        })?;
        if raw.format.get_ref() != FORMAT {
            return Err(at(
                raw.format.span().start,
                format!(
                    "expected format = {FORMAT:?} (the only format this tidemark reads), found {:?}",
                    raw.format.get_ref()
                ),
            ));
        }
        let profiles = crate::profiles::names();
        let reason = |r: &Spanned<String>| {
            if r.get_ref().trim().is_empty() {
                Err(at(
                    r.span().start,
                    "the reason is empty: say why this is accepted (every entry needs one)".into(),
                ))
            } else {
                Ok(r.get_ref().clone())
            }
        };
        let mut out = Expectations {
            file: file.to_string(),
            ..Expectations::default()
        };
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for entry in raw.failure {
            let line = line_of(text, entry.span().start);
            let f = entry.into_inner();
            let scenario = f.scenario.get_ref().clone();
            let profile = scenario.split_once("::").map(|(p, _)| p);
            match profile {
                Some(p) if profiles.contains(&p) => {}
                _ => {
                    return Err(at(
                        f.scenario.span().start,
                        format!(
                            "scenario {scenario:?} is not a test name: expected <profile>::<file stem>, the profile one of {}",
                            profiles.join(", ")
                        ),
                    ))
                }
            }
            if let Some(first) = seen.insert(scenario.clone(), line) {
                return Err(at(
                    f.scenario.span().start,
                    format!(
                        "{scenario} is listed twice (lines {first} and {line}): a scenario fails at most once, at its first mismatch; keep one entry"
                    ),
                ));
            }
            out.failures.push(KnownFailure {
                line,
                scenario,
                at: f.at,
                step: f.step,
                expected: f.expected,
                actual: f.actual,
                reason: reason(&f.reason)?,
            });
        }
        let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
        for entry in raw.difference {
            let line = line_of(text, entry.span().start);
            let d = entry.into_inner();
            let profile = d.profile.get_ref().clone();
            if !profiles.contains(&profile.as_str()) {
                return Err(at(
                    d.profile.span().start,
                    format!(
                        "unknown profile {profile:?}; expected one of {}",
                        profiles.join(", ")
                    ),
                ));
            }
            let signature = d.signature.get_ref().trim().to_string();
            if !signature.contains(' ') {
                return Err(at(
                    d.signature.span().start,
                    format!(
                        "signature {signature:?} is not one: expected a rule and what differed, as `tidemark explore` prints it (\"SP-3.6 disk: a directory the model never had\")"
                    ),
                ));
            }
            if let Some(first) = seen.insert((profile.clone(), signature.clone()), line) {
                return Err(at(
                    d.signature.span().start,
                    format!(
                        "the {profile} difference {signature:?} is listed twice (lines {first} and {line}); keep one entry"
                    ),
                ));
            }
            out.differences.push(ListedDifference {
                line,
                profile,
                signature,
                reason: reason(&d.reason)?,
            });
        }
        Ok(out)
    }

    /// The differences this file accepts for `profile`'s exploration.
    pub fn known_differences(&self, profile: &str) -> KnownDifferences {
        KnownDifferences {
            file: self.file.clone(),
            entries: self
                .differences
                .iter()
                .filter(|d| d.profile == profile)
                .map(|d| KnownEntry {
                    signature: d.signature.clone(),
                    line: d.line,
                    reason: d.reason.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"format = "tidemark-expectations/1"

# A comment a team keeps beside its entry.
[[failure]]
scenario = "scratchpad::reads_create_nothing"
at = "scenarios/scratchpad/reads-create-nothing.tdm:12"
step = "disk absent <bob@#general/T1>"
expected = "no <bob@#general/T1>"
actual = "a directory"
reason = "we create the caller's directory on every turn"

[[difference]]
profile = "scratchpad"
signature = "SP-3.6 disk: a directory the model never had"
reason = "the same choice, seen by exploration"
"#;

    #[test]
    fn a_file_with_comments_loads_each_entry_at_its_line() {
        let e = Expectations::parse("x.toml", GOOD).unwrap();
        assert_eq!(e.failures.len(), 1);
        assert_eq!(e.failures[0].line, 4);
        assert_eq!(e.failures[0].profile(), "scratchpad");
        assert_eq!(e.differences[0].line, 12);
        let known = e.known_differences("scratchpad");
        assert_eq!(known.entries.len(), 1);
        assert!(e.known_differences("scoped").is_empty());
    }

    fn error(text: &str) -> String {
        Expectations::parse("x.toml", text).unwrap_err()
    }

    #[test]
    fn every_malformed_file_is_refused_with_its_line() {
        insta::assert_snapshot!(
            "malformed_expectations",
            [
                error("format = \"tidemark-expectations/1\"\n[[failure]]\nscenario = \"scratchpad::a\"\n"),
                error(&GOOD.replace("reason = \"we create", "reasn = \"we create")),
                error(&GOOD.replace("we create the caller's directory on every turn", "  ")),
                error(&GOOD.replace("scratchpad::reads_create_nothing", "reads_create_nothing")),
                error(&GOOD.replace("[[difference]]", "[[failure]]\nscenario = \"scratchpad::reads_create_nothing\"\nat = \"\"\nstep = \"\"\nexpected = \"\"\nactual = \"\"\nreason = \"again\"\n\n[[difference]]")),
                error(&format!("{GOOD}\n[[difference]]\nprofile = \"scratchpad\"\nsignature = \"SP-3.6 disk: a directory the model never had\"\nreason = \"twice\"\n")),
                error(&GOOD.replace("profile = \"scratchpad\"", "profile = \"scratchpd\"")),
                error(&GOOD.replace("SP-3.6 disk: a directory the model never had", "SP-3.6")),
                error(&GOOD.replace("tidemark-expectations/1", "tidemark-expectations/0")),
                error("format = \"tidemark-expectations/1\"\n[[failure]\n"),
                error("[[failure]]\n"),
                error("[[difference]]\nprofile = \"scratchpad\"\nsignature = \"SP-3.6 x\"\nreason = \"r\"\n"),
            ]
            .join("\n")
        );
    }
}

//! Reports of one run, in the three shapes their readers want: the human table (its last line
//! is always `N passed, M failed`), JSON for scripts, and JUnit XML for CI systems. Each scenario
//! carries the SPEC.md rules it checks; each failure its step, the expected and actual outcome,
//! and the command that replays it; each skipped scenario the reason it did not run.
//!
//! With an expectations file (`--expect`, `crate::expectations`), a failure it lists is a *known
//! failure* (`KNOWN` in the table, `known_failure` in JSON, a JUnit `<skipped>` naming it), not a
//! failed scenario, and an entry that no longer matches is *out of date*, reported with what to
//! change, and fails the run.
//!
//! This file holds the report, the table and the JSON; the JUnit XML is `junit.rs`.
//!
//! Nothing here reads a clock: the same run renders byte-identical reports. Every field quoting
//! input or output is cut (4 KiB a quote, 16 KiB a whole outcome) with the count of bytes left
//! out (`tidemark_sim::clip`).

use crate::expectations::judge::{CaseJudgement, Judged};
use crate::play::Failure;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;
use tidemark_sim::clip::{clip, clip_field};

mod junit;

pub(crate) use junit::xml_document;
pub(crate) use junit::xml_safe;
pub use junit::{render_junit, render_junit_setup_error};

/// How many trace lines a failure carries in JSON and JUnit.
pub const TRACE_TAIL_LINES: usize = 8;

/// How many trace lines a failed case keeps: the HTML report draws its timeline from them; JSON
/// and JUnit show the last [`TRACE_TAIL_LINES`].
pub const TRACE_KEPT_LINES: usize = 400;

/// The last [`TRACE_TAIL_LINES`] of a case's kept trace.
fn trace_tail(case: &CaseReport) -> &[String] {
    &case.trace_tail[case.trace_tail.len().saturating_sub(TRACE_TAIL_LINES)..]
}

/// What happened to one scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed(Failure),
    /// Not run, and not a failure: the implementation does not claim the scenario's profile.
    Skipped {
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseReport {
    pub test_name: String,
    /// The sentence the scenario proves.
    pub name: String,
    pub profile: String,
    /// The scenario file, relative to the repository when it is inside it.
    pub file: String,
    pub rules: Vec<String>,
    pub verdict: Verdict,
    /// The last events before a failure (at most [`TRACE_KEPT_LINES`]); empty otherwise.
    pub trace_tail: Vec<String>,
}

/// One run of the suite against one implementation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunReport {
    /// `reference`, or the `--impl` command.
    pub implementation: String,
    /// The command that runs the suite against the same implementation; a failure's replay
    /// command is this plus `--only <test name>`.
    pub replay_prefix: String,
    /// A profile's own command where it differs from `replay_prefix`: a merge of runs made with
    /// different options (`tidemark merge`: `--tier memory` for rows alone).
    pub profile_commands: std::collections::BTreeMap<String, String>,
    /// In suite order, skipped scenarios in their place.
    pub cases: Vec<CaseReport>,
    /// The expectations file's verdict (`--expect`), if one was given.
    pub expectations: Option<Judged>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: usize,
    /// Failures no expectations entry lists as they happened.
    pub failed: usize,
    pub skipped: usize,
    /// With `--expect`: failures listed as they happened (not counted in `failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known: Option<usize>,
    /// With `--expect`: entries that no longer match this run's results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_date: Option<usize>,
}

impl RunReport {
    pub fn counts(&self) -> Counts {
        let count = |f: fn(&Verdict) -> bool| self.cases.iter().filter(|c| f(&c.verdict)).count();
        let known = self
            .cases
            .iter()
            .filter(|c| self.known(c).is_some())
            .count();
        Counts {
            passed: count(|v| matches!(v, Verdict::Passed)),
            failed: count(|v| matches!(v, Verdict::Failed(_))) - known,
            skipped: count(|v| matches!(v, Verdict::Skipped { .. })),
            known: self.expectations.as_ref().map(|_| known),
            out_of_date: self.expectations.as_ref().map(|j| j.out_of_date.len()),
        }
    }

    /// No scenario failed (known failures aside), no expectations entry is out of date, and at
    /// least one scenario ran. Skipped scenarios do not fail a run (the implementation chose its
    /// profiles, and the report says which it did not claim), but a run that checked nothing is
    /// not a pass: a CI gate must not go green on an empty run.
    pub fn passed(&self) -> bool {
        let counts = self.counts();
        counts.failed == 0
            && counts.out_of_date.unwrap_or(0) == 0
            && counts.passed + counts.known.unwrap_or(0) > 0
    }

    /// The entry's line and reason when `case` failed exactly as the expectations file lists it.
    pub fn known(&self, case: &CaseReport) -> Option<(usize, &str)> {
        match self.expectations.as_ref()?.cases.get(&case.test_name)? {
            CaseJudgement::Known { line, reason } if matches!(case.verdict, Verdict::Failed(_)) => {
                Some((*line, reason))
            }
            _ => None,
        }
    }

    /// The line of `case`'s entry when it failed, but not as that entry lists it.
    fn differs(&self, case: &CaseReport) -> Option<usize> {
        match self.expectations.as_ref()?.cases.get(&case.test_name)? {
            CaseJudgement::Differs { line } => Some(*line),
            _ => None,
        }
    }

    pub fn replay_command(&self, case: &CaseReport) -> String {
        let prefix = self
            .profile_commands
            .get(&case.profile)
            .unwrap_or(&self.replay_prefix);
        format!("{prefix} --only {}", case.test_name)
    }
}

/// The human table. Each line: status, test name, rules; a failure adds where, what and how to
/// replay it; a skip adds why. The last line is `N passed, M failed`.
pub fn render_table(report: &RunReport) -> String {
    let report = &bounded(report);
    let mut s = String::new();
    let width = report
        .cases
        .iter()
        .map(|c| c.test_name.len())
        .max()
        .unwrap_or(0);
    // `KNOWN` is a letter wider than the other statuses: the names line up either way.
    let any_known = report.cases.iter().any(|c| report.known(c).is_some());
    for case in &report.cases {
        let known = report.known(case);
        let status = match (&case.verdict, known) {
            (Verdict::Failed(_), Some(_)) => "KNOWN",
            (Verdict::Passed, _) => "PASS",
            (Verdict::Failed(_), None) => "FAIL",
            (Verdict::Skipped { .. }, _) => "SKIP",
        };
        let status_width = if any_known { 5 } else { 4 };
        let _ = writeln!(
            s,
            "{status:<status_width$}  {:<width$}  {}",
            case.test_name,
            case.rules.join(", ")
        );
        match &case.verdict {
            Verdict::Passed => {}
            Verdict::Failed(f) if known.is_some() => {
                let (line, reason) = known.expect("a known failure");
                let file = &report.expectations.as_ref().expect("judged").file;
                let _ = writeln!(s, "      {}: {}", location(&case.file, f.line), f.step);
                let _ = writeln!(
                    s,
                    "      known:    {file}:{line}: {}",
                    indent_continuation(reason, 16)
                );
            }
            Verdict::Failed(f) => {
                let _ = writeln!(s, "      {}: {}", location(&case.file, f.line), f.step);
                let _ = writeln!(
                    s,
                    "      expected: {}",
                    indent_continuation(&f.expected, 16)
                );
                let _ = writeln!(s, "      actual:   {}", indent_continuation(&f.actual, 16));
                let _ = writeln!(s, "      replay:   {}", report.replay_command(case));
                if let Some(line) = report.differs(case) {
                    let file = &report.expectations.as_ref().expect("judged").file;
                    let _ = writeln!(
                        s,
                        "      listed:   {file}:{line} lists another failure of this scenario (see below)"
                    );
                }
            }
            Verdict::Skipped { reason } => {
                let _ = writeln!(s, "      skipped: {reason}");
            }
        }
    }
    if let Some(judged) = &report.expectations {
        s.push_str(&expectations_summary(judged));
    }
    let counts = report.counts();
    if counts.skipped > 0 {
        let _ = writeln!(s, "{} skipped (not run, not failed)", counts.skipped);
    }
    if counts.passed + counts.failed + counts.known.unwrap_or(0) == 0 {
        let _ = writeln!(
            s,
            "no scenario ran: the run checks nothing, so it does not pass"
        );
    }
    let _ = write!(s, "{} passed, {} failed", counts.passed, counts.failed);
    if let (Some(known), Some(stale)) = (counts.known, counts.out_of_date) {
        let _ = write!(s, ", {known} known, {stale} out of date");
    }
    s.push('\n');
    s
}

/// What the expectations file's verdict adds to the table before the counts: every entry out of
/// date with what to change, and the counts of known failures and of entries not checked.
pub fn expectations_summary(judged: &Judged) -> String {
    let mut s = String::new();
    let file = &judged.file;
    if !judged.out_of_date.is_empty() {
        let n = judged.out_of_date.len();
        let _ = writeln!(
            s,
            "{n} entr{} of {file} out of date: the run fails until {} updated (the file only shrinks)",
            if n == 1 { "y" } else { "ies" },
            if n == 1 { "it is" } else { "they are" }
        );
        for o in &judged.out_of_date {
            let _ = writeln!(s, "OUT OF DATE  {file}:{}  {}", o.line, o.scenario);
            let _ = writeln!(s, "      now:  {}", indent_continuation(&o.problem, 6));
            let _ = writeln!(s, "      fix:  {}", indent_continuation(&o.fix, 12));
        }
    }
    let known = judged
        .cases
        .values()
        .filter(|c| matches!(c, CaseJudgement::Known { .. }))
        .count();
    if known > 0 {
        let untriaged = if judged.untriaged > 0 {
            format!(
                " ({} still UNTRIAGED: say why each is accepted, or fix it)",
                judged.untriaged
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "{known} known failure{} listed in {file}, not counted as failed{untriaged}",
            if known == 1 { "" } else { "s" }
        );
    }
    if judged.not_checked > 0 {
        let _ = writeln!(
            s,
            "{} entr{} of {file} not checked: this run did not select {} scenario{} (--profile, --only)",
            judged.not_checked,
            if judged.not_checked == 1 { "y" } else { "ies" },
            if judged.not_checked == 1 { "its" } else { "their" },
            if judged.not_checked == 1 { "" } else { "s" }
        );
    }
    s
}

/// A failure's fields as the report shows them (each cut by the shared rule): the step's
/// `file:line`, its text, the expected and the actual outcome. An expectations entry lists
/// exactly these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownFailure {
    pub at: String,
    pub step: String,
    pub expected: String,
    pub actual: String,
}

pub fn shown_failure(case: &CaseReport, f: &Failure) -> ShownFailure {
    ShownFailure {
        at: location(&clip(&case.file), f.line),
        step: clip(&f.step).into_owned(),
        expected: clip_field(&f.expected).into_owned(),
        actual: clip_field(&f.actual).into_owned(),
    }
}

/// The report with every field that quotes input or an implementation's output cut by the
/// shared rule (`tidemark_sim::clip`), with the count of bytes left out: the step's text, a trace
/// line, the scenario's sentence and the command to 4 KiB (each is one quote); the expected and
/// actual outcomes and a skip's reason to 16 KiB (each may hold quotes already cut to 4 KiB and a
/// stderr tail, whose counts must survive). A 50 MB error message or a 10 MB scenario line
/// therefore cannot make a 50 MB report.
fn bounded(report: &RunReport) -> RunReport {
    let quote = |s: &str| clip(s).into_owned();
    let field = |s: &str| clip_field(s).into_owned();
    RunReport {
        implementation: quote(&report.implementation),
        replay_prefix: quote(&report.replay_prefix),
        profile_commands: report
            .profile_commands
            .iter()
            .map(|(p, c)| (p.clone(), quote(c)))
            .collect(),
        cases: report
            .cases
            .iter()
            .map(|c| CaseReport {
                test_name: quote(&c.test_name),
                name: quote(&c.name),
                profile: c.profile.clone(),
                file: quote(&c.file),
                rules: c.rules.iter().map(|r| quote(r)).collect(),
                verdict: match &c.verdict {
                    Verdict::Passed => Verdict::Passed,
                    Verdict::Failed(f) => Verdict::Failed(Failure {
                        line: f.line,
                        step: quote(&f.step),
                        expected: field(&f.expected),
                        actual: field(&f.actual),
                    }),
                    Verdict::Skipped { reason } => Verdict::Skipped {
                        reason: field(reason),
                    },
                },
                trace_tail: c.trace_tail.iter().map(|t| quote(t)).collect(),
            })
            .collect(),
        expectations: report.expectations.clone(),
    }
}

/// `file:line`, or the file alone for a failure before the first step (line 0).
fn location(file: &str, line: usize) -> String {
    if line == 0 {
        file.to_string()
    } else {
        format!("{file}:{line}")
    }
}

fn indent_continuation(text: &str, indent: usize) -> String {
    text.replace('\n', &format!("\n{}", " ".repeat(indent)))
}

#[derive(Serialize)]
struct JsonReport<'a> {
    /// `crate::merge_run::FORMAT`: what `tidemark merge` recognises a run report by.
    format: &'static str,
    harness_version: &'static str,
    implementation: &'a str,
    /// The command that runs the suite again; a failure's replay adds `--only <test name>`.
    command: &'a str,
    /// A profile's own command, where it differs (a merged report).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    profile_commands: &'a std::collections::BTreeMap<String, String>,
    counts: Counts,
    scenarios: Vec<JsonCase<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expectations: Option<JsonExpectations<'a>>,
}

/// The expectations file's verdict: the entries out of date, with what to change.
#[derive(Serialize)]
struct JsonExpectations<'a> {
    file: &'a str,
    out_of_date: Vec<JsonOutOfDate<'a>>,
    not_checked: usize,
    untriaged: usize,
}

#[derive(Serialize)]
struct JsonOutOfDate<'a> {
    entry: String,
    scenario: &'a str,
    problem: &'a str,
    fix: &'a str,
}

/// How a failed scenario stands with its expectations entry.
#[derive(Serialize)]
struct JsonExpectation<'a> {
    /// `file:line` of the entry.
    entry: String,
    /// The entry's reason, for a known failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    /// `known` (listed as it happened) or `differs` (the entry is out of date).
    status: &'static str,
}

#[derive(Serialize)]
struct JsonCase<'a> {
    test_name: &'a str,
    name: &'a str,
    profile: &'a str,
    file: &'a str,
    rules: &'a [String],
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<JsonFailure<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skip_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expectation: Option<JsonExpectation<'a>>,
}

#[derive(Serialize)]
struct JsonFailure<'a> {
    line: usize,
    step: &'a str,
    expected: &'a str,
    actual: &'a str,
    replay: String,
    trace_tail: &'a [String],
}

/// The run as one JSON document (`--format json`), pretty-printed, with a trailing newline.
pub fn render_json(report: &RunReport) -> String {
    let report = &bounded(report);
    let doc = JsonReport {
        format: crate::merge_run::FORMAT,
        harness_version: env!("CARGO_PKG_VERSION"),
        implementation: &report.implementation,
        command: &report.replay_prefix,
        profile_commands: &report.profile_commands,
        counts: report.counts(),
        scenarios: report
            .cases
            .iter()
            .map(|c| JsonCase {
                test_name: &c.test_name,
                name: &c.name,
                profile: &c.profile,
                file: &c.file,
                rules: &c.rules,
                status: match (&c.verdict, report.known(c)) {
                    (Verdict::Passed, _) => "passed",
                    (Verdict::Failed(_), Some(_)) => "known_failure",
                    (Verdict::Failed(_), None) => "failed",
                    (Verdict::Skipped { .. }, _) => "skipped",
                },
                failure: match &c.verdict {
                    Verdict::Failed(f) => Some(JsonFailure {
                        line: f.line,
                        step: &f.step,
                        expected: &f.expected,
                        actual: &f.actual,
                        replay: report.replay_command(c),
                        trace_tail: trace_tail(c),
                    }),
                    _ => None,
                },
                skip_reason: match &c.verdict {
                    Verdict::Skipped { reason } => Some(reason),
                    _ => None,
                },
                expectation: report.expectations.as_ref().and_then(|j| {
                    match j.cases.get(&c.test_name)? {
                        CaseJudgement::Known { line, reason } => Some(JsonExpectation {
                            entry: format!("{}:{line}", j.file),
                            reason: Some(reason),
                            status: "known",
                        }),
                        CaseJudgement::Differs { line } => Some(JsonExpectation {
                            entry: format!("{}:{line}", j.file),
                            reason: None,
                            status: "differs",
                        }),
                    }
                }),
            })
            .collect(),
        expectations: report.expectations.as_ref().map(|j| JsonExpectations {
            file: &j.file,
            out_of_date: j
                .out_of_date
                .iter()
                .map(|o| JsonOutOfDate {
                    entry: format!("{}:{}", j.file, o.line),
                    scenario: &o.scenario,
                    problem: &o.problem,
                    fix: &o.fix,
                })
                .collect(),
            not_checked: j.not_checked,
            untriaged: j.untriaged,
        }),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("a report always serialises");
    s.push('\n');
    s
}

/// A scenario file as reports show it: relative to the repository (or the current directory)
/// when inside it, so reports do not depend on where the repository was cloned.
pub(crate) fn display_path(path: &Path) -> String {
    let repo = crate::spec::repo_root();
    let cwd = std::env::current_dir().ok();
    let relative = path
        .strip_prefix(&repo)
        .ok()
        .or_else(|| cwd.as_deref().and_then(|c| path.strip_prefix(c).ok()));
    relative.unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_escapes_in_xml() {
        assert_eq!(xml_safe("a\0b\u{1b}c\td"), "a\\u{0}b\\u{1b}c\td");
    }
}

//! Reports of one run, in the three shapes their readers want: the human table (its last line
//! is always `N passed, M failed`), JSON for scripts, and JUnit XML for CI systems. Each scenario
//! carries the SPEC.md rules it checks; each failure its step, the expected and actual outcome,
//! and the command that replays it; each skipped scenario the reason it did not run.
//!
//! Nothing here reads a clock: the same run renders byte-identical reports. Every field quoting
//! input or output is cut (4 KiB a quote, 16 KiB a whole outcome) with the count of bytes left
//! out (`tidemark_sim::clip`).

use crate::play::Failure;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;
use tidemark_sim::clip::{clip, clip_field};

/// How many trace lines a failure carries in JSON and JUnit.
pub const TRACE_TAIL_LINES: usize = 8;

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
    /// The last events before a failure; empty otherwise.
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
    /// In suite order, skipped scenarios in their place.
    pub cases: Vec<CaseReport>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl RunReport {
    pub fn counts(&self) -> Counts {
        let count = |f: fn(&Verdict) -> bool| self.cases.iter().filter(|c| f(&c.verdict)).count();
        Counts {
            passed: count(|v| matches!(v, Verdict::Passed)),
            failed: count(|v| matches!(v, Verdict::Failed(_))),
            skipped: count(|v| matches!(v, Verdict::Skipped { .. })),
        }
    }

    /// No scenario failed, and at least one ran. Skipped scenarios do not fail a run (the
    /// implementation chose its profiles, and the report says which it did not claim), but a run
    /// that checked nothing is not a pass: a CI gate must not go green on an empty run.
    pub fn passed(&self) -> bool {
        let counts = self.counts();
        counts.failed == 0 && counts.passed > 0
    }

    pub fn replay_command(&self, case: &CaseReport) -> String {
        format!("{} --only {}", self.replay_prefix, case.test_name)
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
    for case in &report.cases {
        let status = match case.verdict {
            Verdict::Passed => "PASS",
            Verdict::Failed(_) => "FAIL",
            Verdict::Skipped { .. } => "SKIP",
        };
        let _ = writeln!(
            s,
            "{status}  {:<width$}  {}",
            case.test_name,
            case.rules.join(", ")
        );
        match &case.verdict {
            Verdict::Passed => {}
            Verdict::Failed(f) => {
                let _ = writeln!(s, "      {}: {}", location(&case.file, f.line), f.step);
                let _ = writeln!(
                    s,
                    "      expected: {}",
                    indent_continuation(&f.expected, 16)
                );
                let _ = writeln!(s, "      actual:   {}", indent_continuation(&f.actual, 16));
                let _ = writeln!(s, "      replay:   {}", report.replay_command(case));
            }
            Verdict::Skipped { reason } => {
                let _ = writeln!(s, "      skipped: {reason}");
            }
        }
    }
    let counts = report.counts();
    if counts.skipped > 0 {
        let _ = writeln!(s, "{} skipped (not run, not failed)", counts.skipped);
    }
    if counts.passed + counts.failed == 0 {
        let _ = writeln!(
            s,
            "no scenario ran: the run checks nothing, so it does not pass"
        );
    }
    let _ = writeln!(s, "{} passed, {} failed", counts.passed, counts.failed);
    s
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
    implementation: &'a str,
    counts: Counts,
    scenarios: Vec<JsonCase<'a>>,
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
        implementation: &report.implementation,
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
                status: match c.verdict {
                    Verdict::Passed => "passed",
                    Verdict::Failed(_) => "failed",
                    Verdict::Skipped { .. } => "skipped",
                },
                failure: match &c.verdict {
                    Verdict::Failed(f) => Some(JsonFailure {
                        line: f.line,
                        step: &f.step,
                        expected: &f.expected,
                        actual: &f.actual,
                        replay: report.replay_command(c),
                        trace_tail: &c.trace_tail,
                    }),
                    _ => None,
                },
                skip_reason: match &c.verdict {
                    Verdict::Skipped { reason } => Some(reason),
                    _ => None,
                },
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("a report always serialises");
    s.push('\n');
    s
}

/// The run as JUnit XML: one `<testsuite>` per profile, one `<testcase>` per scenario with its
/// rules as properties, `<failure>` with expected, actual and the replay command, `<skipped>`
/// with its reason. No `time` attributes: reports of the same run are byte-identical.
pub fn render_junit(report: &RunReport) -> String {
    let report = &bounded(report);
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    write_junit(&mut w, report).expect("writing XML to memory cannot fail");
    let mut s = String::from_utf8(w.into_inner()).expect("the XML writer writes UTF-8");
    s.push('\n');
    s
}

fn write_junit(w: &mut Writer<Vec<u8>>, report: &RunReport) -> std::io::Result<()> {
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let all = report.counts();
    // Profiles in order of first appearance, so the document follows the suite's order.
    let mut profiles: Vec<&str> = Vec::new();
    for c in &report.cases {
        if !profiles.contains(&c.profile.as_str()) {
            profiles.push(&c.profile);
        }
    }
    w.create_element("testsuites")
        .with_attribute(("name", "tidemark"))
        .with_attribute(("tests", report.cases.len().to_string().as_str()))
        .with_attribute(("failures", all.failed.to_string().as_str()))
        .with_attribute(("errors", "0"))
        .with_attribute(("skipped", all.skipped.to_string().as_str()))
        .write_inner_content(|w| {
            for profile in &profiles {
                let cases: Vec<&CaseReport> = report
                    .cases
                    .iter()
                    .filter(|c| c.profile == *profile)
                    .collect();
                let failed = cases
                    .iter()
                    .filter(|c| matches!(c.verdict, Verdict::Failed(_)))
                    .count();
                let skipped = cases
                    .iter()
                    .filter(|c| matches!(c.verdict, Verdict::Skipped { .. }))
                    .count();
                w.create_element("testsuite")
                    .with_attribute(("name", format!("tidemark.{profile}").as_str()))
                    .with_attribute(("tests", cases.len().to_string().as_str()))
                    .with_attribute(("failures", failed.to_string().as_str()))
                    .with_attribute(("errors", "0"))
                    .with_attribute(("skipped", skipped.to_string().as_str()))
                    .write_inner_content(|w| {
                        w.create_element("properties").write_inner_content(|w| {
                            property(w, "implementation", &report.implementation)?;
                            Ok(())
                        })?;
                        for case in cases {
                            write_case(w, report, case)?;
                        }
                        Ok(())
                    })?;
            }
            Ok(())
        })?;
    Ok(())
}

/// JUnit XML for a run that could not begin (the program did not complete the init exchange):
/// one `<error>` test case, so a CI job that publishes the file shows why instead of "no report".
pub fn render_junit_setup_error(implementation: &str, message: &str) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let message = clip(message);
    write_setup_error(&mut w, &clip(implementation), &message)
        .expect("writing XML to memory cannot fail");
    let mut s = String::from_utf8(w.into_inner()).expect("the XML writer writes UTF-8");
    s.push('\n');
    s
}

fn write_setup_error(
    w: &mut Writer<Vec<u8>>,
    implementation: &str,
    message: &str,
) -> std::io::Result<()> {
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let counts = [
        ("tests", "1"),
        ("failures", "0"),
        ("errors", "1"),
        ("skipped", "0"),
    ];
    w.create_element("testsuites")
        .with_attribute(("name", "tidemark"))
        .with_attributes(counts)
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attribute(("name", "tidemark.setup"))
                .with_attributes(counts)
                .write_inner_content(|w| {
                    w.create_element("properties")
                        .write_inner_content(|w| property(w, "implementation", implementation))?;
                    w.create_element("testcase")
                        .with_attribute(("classname", "tidemark.setup"))
                        .with_attribute(("name", "init exchange"))
                        .write_inner_content(|w| {
                            w.create_element("error")
                                .with_attribute(("message", xml_safe(first_line(message)).as_str()))
                                .with_attribute(("type", "setup"))
                                .write_text_content(BytesText::new(&xml_safe(message)))?;
                            Ok(())
                        })?;
                    Ok(())
                })?;
            Ok(())
        })?;
    Ok(())
}

fn write_case(
    w: &mut Writer<Vec<u8>>,
    report: &RunReport,
    case: &CaseReport,
) -> std::io::Result<()> {
    w.create_element("testcase")
        .with_attribute(("classname", format!("tidemark.{}", case.profile).as_str()))
        .with_attribute(("name", xml_safe(&case.test_name).as_str()))
        .with_attribute(("file", xml_safe(&case.file).as_str()))
        .write_inner_content(|w| {
            w.create_element("properties").write_inner_content(|w| {
                property(w, "scenario", &case.name)?;
                for rule in &case.rules {
                    property(w, "rule", rule)?;
                }
                Ok(())
            })?;
            match &case.verdict {
                Verdict::Passed => {}
                Verdict::Failed(f) => {
                    let message = format!(
                        "{}: expected {}",
                        location(&case.file, f.line),
                        first_line(&f.expected)
                    );
                    let mut body = format!(
                        "{}: {}\nexpected: {}\nactual:   {}\nreplay:   {}\n",
                        location(&case.file, f.line),
                        f.step,
                        f.expected,
                        indent_continuation(&f.actual, 10),
                        report.replay_command(case)
                    );
                    if !case.trace_tail.is_empty() {
                        body.push_str("trace tail:\n");
                        for t in &case.trace_tail {
                            let _ = writeln!(body, "  {t}");
                        }
                    }
                    w.create_element("failure")
                        .with_attribute(("message", xml_safe(&message).as_str()))
                        .with_attribute(("type", "mismatch"))
                        .write_text_content(BytesText::new(&xml_safe(&body)))?;
                }
                Verdict::Skipped { reason } => {
                    w.create_element("skipped")
                        .with_attribute(("message", xml_safe(reason).as_str()))
                        .write_empty()?;
                }
            }
            Ok(())
        })?;
    Ok(())
}

fn property(w: &mut Writer<Vec<u8>>, name: &str, value: &str) -> std::io::Result<()> {
    w.create_element("property")
        .with_attribute(("name", name))
        .with_attribute(("value", xml_safe(value).as_str()))
        .write_empty()?;
    Ok(())
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// XML 1.0 cannot carry most control characters even escaped; an implementation's answer may
/// contain them (a NUL in a path it echoes). Each becomes a visible `\u{…}` escape.
fn xml_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let allowed = matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..);
        if allowed {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    out
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

//! A run's report as JUnit XML, for CI systems: one `<testsuite>` per profile, one `<testcase>`
//! per scenario, known failures and out-of-date expectations included, and a setup error as a
//! report of its own. Apart from `mod.rs` (the report, its table and its JSON) because XML has
//! its own writer and its own escaping (`xml_safe`), shared by nothing else here.

use super::{bounded, indent_continuation, location, trace_tail, CaseReport, RunReport, Verdict};
use crate::expectations::judge::Judged;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;
use std::fmt::Write as _;
use tidemark_sim::clip::clip;

/// The run as JUnit XML: one `<testsuite>` per profile, one `<testcase>` per scenario with its
/// rules as properties, `<failure>` with expected, actual and the replay command, `<skipped>`
/// with its reason. No `time` attributes: reports of the same run are byte-identical.
pub fn render_junit(report: &RunReport) -> String {
    let report = &bounded(report);
    xml_document(|w| write_junit(w, report))
}

/// One XML document, indented by two spaces and ending in a newline, as `write` writes it (every
/// JUnit file the harness writes: a run's, a run's that could not begin, an exploration's).
pub(crate) fn xml_document(
    write: impl FnOnce(&mut Writer<Vec<u8>>) -> std::io::Result<()>,
) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    write(&mut w).expect("writing XML to memory cannot fail");
    let mut s = String::from_utf8(w.into_inner()).expect("the XML writer writes UTF-8");
    s.push('\n');
    s
}

fn write_junit(w: &mut Writer<Vec<u8>>, report: &RunReport) -> std::io::Result<()> {
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let all = report.counts();
    let out_of_date = report
        .expectations
        .as_ref()
        .map(|j| j.out_of_date.as_slice())
        .unwrap_or_default();
    // Profiles in order of first appearance, so the document follows the suite's order.
    let mut profiles: Vec<&str> = Vec::new();
    for c in &report.cases {
        if !profiles.contains(&c.profile.as_str()) {
            profiles.push(&c.profile);
        }
    }
    // A known failure is a `<skipped>` (see `write_case`); an entry out of date is a failing
    // test case of its own, in the `tidemark.expectations` suite.
    let tests = report.cases.len() + out_of_date.len();
    let failures = all.failed + out_of_date.len();
    let skipped = all.skipped + all.known.unwrap_or(0);
    w.create_element("testsuites")
        .with_attribute(("name", "tidemark"))
        .with_attribute(("tests", tests.to_string().as_str()))
        .with_attribute(("failures", failures.to_string().as_str()))
        .with_attribute(("errors", "0"))
        .with_attribute(("skipped", skipped.to_string().as_str()))
        .write_inner_content(|w| {
            for profile in &profiles {
                let cases: Vec<&CaseReport> = report
                    .cases
                    .iter()
                    .filter(|c| c.profile == *profile)
                    .collect();
                let known = cases.iter().filter(|c| report.known(c).is_some()).count();
                let failed = cases
                    .iter()
                    .filter(|c| matches!(c.verdict, Verdict::Failed(_)))
                    .count()
                    - known;
                let skipped = cases
                    .iter()
                    .filter(|c| matches!(c.verdict, Verdict::Skipped { .. }))
                    .count()
                    + known;
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
            if let Some(judged) = report
                .expectations
                .as_ref()
                .filter(|j| !j.out_of_date.is_empty())
            {
                write_out_of_date(w, judged)?;
            }
            Ok(())
        })?;
    Ok(())
}

/// The entries of the expectations file that no longer match, one failing test case each, so a
/// CI report names the entry to change and how.
fn write_out_of_date(w: &mut Writer<Vec<u8>>, judged: &Judged) -> std::io::Result<()> {
    let n = judged.out_of_date.len().to_string();
    w.create_element("testsuite")
        .with_attribute(("name", "tidemark.expectations"))
        .with_attribute(("tests", n.as_str()))
        .with_attribute(("failures", n.as_str()))
        .with_attribute(("errors", "0"))
        .with_attribute(("skipped", "0"))
        .write_inner_content(|w| {
            w.create_element("properties")
                .write_inner_content(|w| property(w, "expectations", &judged.file))?;
            for o in &judged.out_of_date {
                let entry = format!("{}:{}", judged.file, o.line);
                w.create_element("testcase")
                    .with_attribute(("classname", "tidemark.expectations"))
                    .with_attribute((
                        "name",
                        xml_safe(&format!("{} ({entry})", o.scenario)).as_str(),
                    ))
                    .with_attribute(("file", xml_safe(&judged.file).as_str()))
                    .write_inner_content(|w| {
                        let message = format!("{entry} is out of date: {}", first_line(&o.problem));
                        let body = format!(
                            "{entry}: {}\nnow: {}\nfix: {}\n",
                            o.scenario, o.problem, o.fix
                        );
                        w.create_element("failure")
                            .with_attribute(("message", xml_safe(&message).as_str()))
                            .with_attribute(("type", "out of date"))
                            .write_text_content(BytesText::new(&xml_safe(&body)))?;
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
    let message = clip(message);
    xml_document(|w| write_setup_error(w, &clip(implementation), &message))
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
                // A known failure is `<skipped>`: JUnit has no "expected failure", and every CI
                // report renders a skip as neither passed nor failed, with its message (pytest
                // reports its xfail the same way). The message says it is a known failure and
                // why; the body has the step and outcome the entry lists.
                Verdict::Failed(f) if report.known(case).is_some() => {
                    let (line, reason) = report.known(case).expect("a known failure");
                    let file = &report.expectations.as_ref().expect("judged").file;
                    let message = format!("known failure ({file}:{line}): {}", first_line(reason));
                    let body = format!(
                        "{}: {}\nexpected: {}\nactual:   {}\nreason:   {}\n",
                        location(&case.file, f.line),
                        f.step,
                        f.expected,
                        indent_continuation(&f.actual, 10),
                        indent_continuation(reason, 10),
                    );
                    w.create_element("skipped")
                        .with_attribute(("message", xml_safe(&message).as_str()))
                        .write_text_content(BytesText::new(&xml_safe(&body)))?;
                }
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
                        for t in trace_tail(case) {
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
pub(crate) fn xml_safe(s: &str) -> String {
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

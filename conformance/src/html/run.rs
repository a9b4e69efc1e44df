//! A `tidemark run` report as a page: each profile's counts, each skipped scenario with its
//! reason, each failure with the step, expected and actual, the scenario's rules and the trace
//! the report kept (its last lines: `report::TRACE_KEPT_LINES`).

use super::{FailureView, Page, ProfileSummary};
use crate::report::{RunReport, Verdict};

pub fn page(report: &RunReport) -> Page {
    let mut profiles: Vec<ProfileSummary> = Vec::new();
    let mut failures = Vec::new();
    for case in &report.cases {
        if !profiles.iter().any(|p| p.name == case.profile) {
            profiles.push(ProfileSummary {
                name: case.profile.clone(),
                ..ProfileSummary::default()
            });
        }
        let summary = profiles
            .iter_mut()
            .find(|p| p.name == case.profile)
            .expect("added above");
        let known = report.known(case);
        match &case.verdict {
            Verdict::Passed => summary.passed += 1,
            Verdict::Skipped { reason } => summary
                .skipped
                .push((case.test_name.clone(), reason.clone())),
            Verdict::Failed(f) => {
                if known.is_some() {
                    summary.known += 1;
                } else {
                    summary.failed += 1;
                }
                let shown = crate::report::shown_failure(case, f);
                failures.push(FailureView {
                    title: case.test_name.clone(),
                    profile: case.profile.clone(),
                    what: case.name.clone(),
                    at: format!("{}: {}", shown.at, shown.step),
                    expected: f.expected.clone(),
                    actual: f.actual.clone(),
                    rules: case.rules.clone(),
                    replay: report.replay_command(case),
                    seeds: None,
                    operations: Vec::new(),
                    trace: case.trace_tail.clone(),
                    trace_is_tail: true,
                    diverged_line: None,
                    // A scenario's expectations are written in its file: no model ran.
                    model_state: Vec::new(),
                    known: known.map(|(line, reason)| {
                        let file = report
                            .expectations
                            .as_ref()
                            .map(|j| j.file.as_str())
                            .unwrap_or("");
                        format!("{file}:{line}: {reason}")
                    }),
                });
            }
        }
    }
    // Known failures after the new ones: the page opens on what fails the run.
    failures.sort_by_key(|f| f.known.is_some());
    let mut notes: Vec<String> = report
        .profile_commands
        .iter()
        .map(|(p, c)| format!("the {p} profile was run with its own command: {c}"))
        .collect();
    if let Some(j) = &report.expectations {
        notes.extend(
            crate::report::expectations_summary(j)
                .lines()
                .map(str::to_string),
        );
    }
    Page {
        title: "tidemark run".into(),
        command: report.replay_prefix.clone(),
        implementation: report.implementation.clone(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        seeds: None,
        profiles,
        failures,
        notes,
        coverage: None,
    }
}

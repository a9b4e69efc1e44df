//! `tidemark merge` of `tidemark run` reports: `run` has no shards, so what is merged is the
//! JSON reports (`run --format json`) of runs of different profiles against one implementation
//! (`run --profile scratchpad`, `run --profile rows --tier memory` on two runners) folded into
//! one report, as the run of those profiles together would have written it: printed as its
//! table, and as JSON, JUnit and HTML if asked.
//!
//! Each profile keeps the command its run was made with (`RunReport::profile_commands`), so a
//! failure replays as it ran (`--tier memory` applies to rows alone).
//!
//! Refused, each error naming the file: a report of another harness version or implementation;
//! two reports running the same profile (they overlap, and one verdict would hide the
//! other); a report judged against an expectations file (its judgement covers entries of the
//! profiles it ran, which a merge cannot re-judge: judge the merged report's runs with
//! `--expect` instead); and a file that is not a whole run report.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::play::Failure;
use crate::report::{CaseReport, RunReport, Verdict};

/// The `format` field of every run report (`report::render_json`).
pub const FORMAT: &str = "tidemark-run-report/1";

#[derive(Deserialize)]
struct RunJson {
    harness_version: String,
    implementation: String,
    command: String,
    #[serde(default)]
    profile_commands: std::collections::BTreeMap<String, String>,
    scenarios: Vec<CaseJson>,
    #[serde(default)]
    expectations: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct CaseJson {
    test_name: String,
    name: String,
    profile: String,
    file: String,
    rules: Vec<String>,
    status: String,
    #[serde(default)]
    failure: Option<FailureJson>,
    #[serde(default)]
    skip_reason: Option<String>,
}

#[derive(Deserialize)]
struct FailureJson {
    line: usize,
    step: String,
    expected: String,
    actual: String,
    trace_tail: Vec<String>,
}

/// One run's report as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedRun {
    pub harness_version: String,
    /// Whether it was judged against an expectations file.
    pub judged: bool,
    pub report: RunReport,
}

/// The `format` of a report file, if it is JSON with one.
pub fn format_of(path: &Path) -> Result<Option<String>, String> {
    let value = read(path)?;
    Ok(value
        .get("format")
        .and_then(|f| f.as_str())
        .map(str::to_string))
}

fn read(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read the report: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a whole JSON report (truncated or corrupt?): {e}",
            path.display()
        )
    })
}

/// Reads one run's report.
pub fn load(path: &Path) -> Result<LoadedRun, String> {
    let value = read(path)?;
    let format = value.get("format").and_then(|f| f.as_str());
    if format != Some(FORMAT) {
        return Err(format!(
            "{}: not a run report of this harness: its format is {}, expected {FORMAT:?} (written by tidemark run --format json)",
            path.display(),
            format.map(|f| format!("{f:?}")).unwrap_or_else(|| "missing".into())
        ));
    }
    let run: RunJson = serde_json::from_value(value).map_err(|e| {
        format!(
            "{}: a run report with a field missing or malformed: {e}",
            path.display()
        )
    })?;
    let cases = run
        .scenarios
        .into_iter()
        .map(|c| {
            let verdict = match (c.status.as_str(), c.failure, c.skip_reason) {
                ("passed", _, _) => Verdict::Passed,
                ("skipped", _, Some(reason)) => Verdict::Skipped { reason },
                ("failed" | "known_failure", Some(f), _) => {
                    return Ok(CaseReport {
                        verdict: Verdict::Failed(Failure {
                            line: f.line,
                            step: f.step,
                            expected: f.expected,
                            actual: f.actual,
                        }),
                        trace_tail: f.trace_tail,
                        ..case(c.test_name, c.name, c.profile, c.file, c.rules)
                    })
                }
                (status, _, _) => {
                    return Err(format!(
                        "{}: scenario {}: status {status:?} without what it needs (a failure's details, a skip's reason), or unknown",
                        path.display(),
                        c.test_name
                    ))
                }
            };
            Ok(CaseReport {
                verdict,
                ..case(c.test_name, c.name, c.profile, c.file, c.rules)
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(LoadedRun {
        harness_version: run.harness_version,
        judged: run.expectations.is_some(),
        report: RunReport {
            implementation: run.implementation,
            replay_prefix: run.command,
            profile_commands: run.profile_commands,
            cases,
            expectations: None,
        },
    })
}

fn case(
    test_name: String,
    name: String,
    profile: String,
    file: String,
    rules: Vec<String>,
) -> CaseReport {
    CaseReport {
        test_name,
        name,
        profile,
        file,
        rules,
        verdict: Verdict::Passed,
        trace_tail: Vec::new(),
    }
}

/// The profiles a report ran, in its order.
fn profiles(r: &RunReport) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in &r.cases {
        if !out.contains(&c.profile.as_str()) {
            out.push(&c.profile);
        }
    }
    out
}

/// Folds the runs into one report: their scenarios in the order the suite runs its profiles.
pub fn merge(runs: &[(PathBuf, LoadedRun)]) -> Result<RunReport, String> {
    let (first_path, first) = runs.first().ok_or("merge needs at least one report")?;
    let run_of = |r: &LoadedRun| -> [(&'static str, String); 2] {
        [
            ("harness version", r.harness_version.clone()),
            ("implementation", r.report.implementation.clone()),
        ]
    };
    let expected = run_of(first);
    let mut ran: Vec<(&str, &Path)> = Vec::new();
    for (path, r) in runs {
        if r.judged {
            return Err(format!(
                "{} was judged against an expectations file (--expect): a merge cannot judge the entries of the profiles the other reports ran; merge reports written without --expect",
                path.display()
            ));
        }
        for ((what, a), (_, b)) in expected.iter().zip(run_of(r)) {
            if *a != b {
                return Err(format!(
                    "{} is a run of another harness or implementation than {}: its {what} is {b:?}, not {a:?}",
                    path.display(),
                    first_path.display()
                ));
            }
        }
        for p in profiles(&r.report) {
            if let Some((_, other)) = ran.iter().find(|(q, _)| *q == p) {
                return Err(format!(
                    "{} and {} both ran the {p} profile: merge folds runs of different profiles",
                    other.display(),
                    path.display()
                ));
            }
            ran.push((p, path));
        }
    }
    // The suite's order of profiles, whatever order the files were given in.
    let order = crate::profiles::names();
    let rank = |r: &RunReport| {
        profiles(r)
            .first()
            .and_then(|p| order.iter().position(|o| o == p))
            .unwrap_or(order.len())
    };
    let mut ordered: Vec<&RunReport> = runs.iter().map(|(_, r)| &r.report).collect();
    ordered.sort_by_key(|r| rank(r));
    // The first profile's command reproduces the run; each profile run otherwise keeps its own,
    // so every failure replays as it ran.
    let command = ordered[0].replay_prefix.clone();
    let mut profile_commands = std::collections::BTreeMap::new();
    for r in &ordered {
        for p in profiles(r) {
            let own = r.profile_commands.get(p).unwrap_or(&r.replay_prefix);
            if *own != command {
                profile_commands.insert(p.to_string(), own.clone());
            }
        }
    }
    Ok(RunReport {
        implementation: first.report.implementation.clone(),
        replay_prefix: command,
        profile_commands,
        cases: ordered
            .iter()
            .flat_map(|r| r.cases.iter().cloned())
            .collect(),
        expectations: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::render_json;

    fn run(profile: &str, failed: bool) -> RunReport {
        RunReport {
            implementation: "python3 impl.py".into(),
            replay_prefix: "tidemark run --impl 'python3 impl.py'".into(),
            profile_commands: Default::default(),
            cases: vec![
                CaseReport {
                    test_name: format!("{profile}::a_passing_one"),
                    name: "a passing one".into(),
                    profile: profile.into(),
                    file: format!("scenarios/{profile}/a.tdm"),
                    rules: vec![],
                    verdict: Verdict::Passed,
                    trace_tail: vec![],
                },
                CaseReport {
                    test_name: format!("{profile}::another"),
                    name: "another".into(),
                    profile: profile.into(),
                    file: format!("scenarios/{profile}/b.tdm"),
                    rules: vec!["SP-2.1".into()],
                    verdict: if failed {
                        Verdict::Failed(Failure {
                            line: 4,
                            step: "alice write <b>".into(),
                            expected: "ok".into(),
                            actual: "refused".into(),
                        })
                    } else {
                        Verdict::Skipped {
                            reason: "not claimed".into(),
                        }
                    },
                    trace_tail: if failed {
                        vec!["             0 alice write -> refused".into()]
                    } else {
                        vec![]
                    },
                },
            ],
            expectations: None,
        }
    }

    /// Each report written as `tidemark run --format json` would, then read back.
    fn written(dir: &Path, name: &str, r: &RunReport) -> (PathBuf, LoadedRun) {
        let path = dir.join(name);
        std::fs::write(&path, render_json(r)).unwrap();
        let loaded = load(&path).unwrap();
        (path, loaded)
    }

    #[test]
    fn runs_of_different_profiles_fold_into_one_report_in_the_suites_order() {
        let dir = tempfile::tempdir().unwrap();
        let rows = written(dir.path(), "rows.json", &run("rows", true));
        let scratchpad = written(dir.path(), "scratchpad.json", &run("scratchpad", false));
        assert_eq!(
            rows.1.report,
            run("rows", true),
            "a report reads back whole"
        );
        let merged = merge(&[rows, scratchpad]).unwrap();
        let names: Vec<&str> = merged.cases.iter().map(|c| c.test_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "scratchpad::a_passing_one",
                "scratchpad::another",
                "rows::a_passing_one",
                "rows::another"
            ]
        );
        let counts = merged.counts();
        assert_eq!((counts.passed, counts.failed, counts.skipped), (2, 1, 1));
        assert!(!merged.passed());
        let junit = crate::report::render_junit(&merged);
        assert!(junit.contains("tidemark.rows") && junit.contains("tidemark.scratchpad"));
    }

    #[test]
    fn a_run_of_another_harness_or_implementation_is_refused_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let a = written(dir.path(), "a.json", &run("scratchpad", false));
        let mut other = run("rows", false);
        other.implementation = "./other".into();
        let b = written(dir.path(), "b.json", &other);
        let e = merge(&[a.clone(), b]).unwrap_err();
        assert!(
            e.contains("b.json is a run of another harness or implementation than")
                && e.contains("its implementation is \"./other\", not \"python3 impl.py\""),
            "{e}"
        );
        let mut c = written(dir.path(), "c.json", &run("rows", false));
        c.1.harness_version = "0.0.9".into();
        let e = merge(&[a, c]).unwrap_err();
        assert!(e.contains("its harness version is \"0.0.9\""), "{e}");
    }

    #[test]
    fn each_profile_replays_with_the_command_its_run_was_made_with() {
        let dir = tempfile::tempdir().unwrap();
        let a = written(dir.path(), "a.json", &run("scratchpad", true));
        let mut tier = run("rows", true);
        tier.replay_prefix.push_str(" --tier memory");
        let b = written(dir.path(), "b.json", &tier);
        let merged = merge(&[b, a]).unwrap();
        let replays: Vec<String> = merged
            .cases
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Failed(_)))
            .map(|c| merged.replay_command(c))
            .collect();
        assert_eq!(
            replays,
            [
                "tidemark run --impl 'python3 impl.py' --only scratchpad::another",
                "tidemark run --impl 'python3 impl.py' --tier memory --only rows::another"
            ]
        );
        // Merged again, the merged report keeps them.
        let again = written(dir.path(), "merged.json", &merged);
        assert_eq!(again.1.report, merged);
    }

    #[test]
    fn two_runs_of_one_profile_or_a_judged_run_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = written(dir.path(), "a.json", &run("scratchpad", false));
        let b = written(dir.path(), "b.json", &run("scratchpad", true));
        let e = merge(&[a.clone(), b]).unwrap_err();
        assert!(
            e.contains("a.json and ") && e.contains("b.json both ran the scratchpad profile"),
            "{e}"
        );
        let mut judged = written(dir.path(), "j.json", &run("rows", false));
        judged.1.judged = true;
        let e = merge(&[a, judged]).unwrap_err();
        assert!(
            e.contains("j.json was judged against an expectations file"),
            "{e}"
        );
    }

    #[test]
    fn a_truncated_foreign_or_malformed_report_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let whole = render_json(&run("rows", true));
        let cut = dir.path().join("cut.json");
        std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
        let e = load(&cut).unwrap_err();
        assert!(e.contains("cut.json: not a whole JSON report"), "{e}");
        let old = dir.path().join("old.json");
        std::fs::write(&old, "{\"implementation\": \"reference\", \"counts\": {}}").unwrap();
        let e = load(&old).unwrap_err();
        assert!(
            e.contains("old.json: not a run report of this harness: its format is missing"),
            "{e}"
        );
        let odd = dir.path().join("odd.json");
        std::fs::write(&odd, whole.replace("\"failed\"", "\"exploded\"")).unwrap();
        let e = load(&odd).unwrap_err();
        assert!(
            e.contains("odd.json: scenario rows::another: status \"exploded\""),
            "{e}"
        );
    }
}

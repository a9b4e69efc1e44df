//! A run's results against an expectations file: which failures are known, which entries are out
//! of date and exactly what to change in each, which were not checked by this run.

use std::collections::BTreeMap;

use super::{Expectations, KnownFailure};
use crate::report::{shown_failure, RunReport, ShownFailure, Verdict};

/// How one scenario's result relates to its entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseJudgement {
    /// It failed exactly as its entry says: a known failure, not a failed scenario.
    Known { line: usize, reason: String },
    /// It failed, but not as its entry says: a failure, and the entry is out of date.
    Differs { line: usize },
}

/// An entry that no longer matches this run's results: the run fails until it is updated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfDate {
    pub line: usize,
    pub scenario: String,
    /// What happened instead of the listed failure.
    pub problem: String,
    /// What to do to the entry, and the lines to write where it is to be rewritten.
    pub fix: String,
}

/// The expectations file's verdict on one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Judged {
    /// The file as messages name it.
    pub file: String,
    /// By test name, for each scenario that has an entry and failed.
    pub cases: BTreeMap<String, CaseJudgement>,
    pub out_of_date: Vec<OutOfDate>,
    /// Entries whose scenario this run did not select (`--profile`, `--only`).
    pub not_checked: usize,
    /// Known failures whose reason is still `--write-expectations`' UNTRIAGED.
    pub untriaged: usize,
}

/// What this run selected: the profiles it played, and (`--only`) the test names, empty for all.
pub struct Selection<'a> {
    pub profiles: &'a [&'a str],
    pub only: &'a [String],
}

impl Selection<'_> {
    pub fn selects(&self, test_name: &str) -> bool {
        let profile = test_name.split_once("::").map(|(p, _)| p).unwrap_or("");
        self.profiles.contains(&profile)
            && (self.only.is_empty() || self.only.iter().any(|o| o == test_name))
    }
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The entry's fields for `now`, as TOML lines to paste over the entry's.
pub fn entry_fields(now: &ShownFailure) -> String {
    format!(
        "at = {}\nstep = {}\nexpected = {}\nactual = {}",
        quoted(&now.at),
        quoted(&now.step),
        quoted(&now.expected),
        quoted(stable_actual(&now.actual))
    )
}

/// What the harness adds to an outcome about the program's process, from where it begins: how
/// and whether it exited (found within a grace period, so it depends on timing) and the tail of
/// its stderr (a traceback's paths depend on the machine). None of it is the implementation's
/// answer, so an entry neither records nor compares it.
const PROCESS_ACCOUNT: [&str; 3] = [
    "; the implementation exited (",
    "; its stderr was empty",
    " line(s) of its stderr:",
];

/// `actual` without the harness's account of the process ([`PROCESS_ACCOUNT`]).
pub fn stable_actual(actual: &str) -> &str {
    let mut cut = actual.len();
    for marker in PROCESS_ACCOUNT {
        if let Some(i) = actual.find(marker) {
            // The stderr tail's heading starts its own line: `\nlast N line(s) of its stderr:`.
            let start = if marker.starts_with(' ') {
                actual[..i].rfind('\n').unwrap_or(i)
            } else {
                i
            };
            cut = cut.min(start);
        }
    }
    &actual[..cut]
}

/// Whether `entry` lists exactly `now`.
fn lists(entry: &KnownFailure, now: &ShownFailure) -> bool {
    entry.at == now.at
        && entry.step == now.step
        && entry.expected == now.expected
        && stable_actual(&entry.actual) == stable_actual(&now.actual)
}

/// Which of the entry's fields differ from `now`, named: the same step at another line (the
/// scenario file changed), another step, another outcome.
fn differing(entry: &KnownFailure, now: &ShownFailure) -> Vec<&'static str> {
    let mut v = Vec::new();
    if entry.step != now.step {
        v.push("step");
    } else if entry.at != now.at {
        v.push("line");
    }
    if entry.expected != now.expected || stable_actual(&entry.actual) != stable_actual(&now.actual)
    {
        v.push("outcome");
    }
    v
}

/// Judges `report` by `expectations`: each selected entry is matched with its scenario's result.
pub fn judge(report: &RunReport, expectations: &Expectations, selection: &Selection) -> Judged {
    let mut judged = Judged {
        file: expectations.file.clone(),
        ..Judged::default()
    };
    for entry in &expectations.failures {
        if !selection.selects(&entry.scenario) {
            judged.not_checked += 1;
            continue;
        }
        let stale = |problem: String, fix: String| OutOfDate {
            line: entry.line,
            scenario: entry.scenario.clone(),
            problem,
            fix,
        };
        let Some(case) = report.cases.iter().find(|c| c.test_name == entry.scenario) else {
            judged.out_of_date.push(stale(
                "no scenario of the suite has this test name (renamed or removed?)".into(),
                "delete the entry".into(),
            ));
            continue;
        };
        match &case.verdict {
            Verdict::Passed => judged.out_of_date.push(stale(
                "it passes now".into(),
                "delete the entry: the implementation meets this scenario now".into(),
            )),
            Verdict::Skipped { reason } => judged.out_of_date.push(stale(
                format!("it was not run: {reason}"),
                "delete the entry: a scenario that is not run cannot fail".into(),
            )),
            Verdict::Failed(f) => {
                let now = shown_failure(case, f);
                if lists(entry, &now) {
                    if super::is_untriaged(&entry.reason) {
                        judged.untriaged += 1;
                    }
                    judged.cases.insert(
                        case.test_name.clone(),
                        CaseJudgement::Known {
                            line: entry.line,
                            reason: entry.reason.clone(),
                        },
                    );
                } else {
                    judged.cases.insert(
                        case.test_name.clone(),
                        CaseJudgement::Differs { line: entry.line },
                    );
                    let what = differing(entry, &now);
                    let how = if what == ["line"] {
                        "at another line now (the same step and outcome: the scenario file changed)"
                            .to_string()
                    } else {
                        format!("with another {} now", what.join(" and another "))
                    };
                    judged.out_of_date.push(stale(
                        format!(
                            "it fails {how}: {}: {}\n  expected: {}\n  actual:   {}",
                            now.at,
                            now.step,
                            now.expected,
                            now.actual
                        ),
                        format!(
                            "if this failure is accepted, write these fields in the entry (and say why in its reason); if not, fix the implementation:\n{}",
                            entry_fields(&now)
                        ),
                    ));
                }
            }
        }
    }
    judged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::play::Failure;
    use crate::report::CaseReport;

    fn case(name: &str, verdict: Verdict) -> CaseReport {
        CaseReport {
            test_name: format!("scratchpad::{name}"),
            name: name.replace('_', " "),
            profile: "scratchpad".into(),
            file: format!("scenarios/scratchpad/{}.tdm", name.replace('_', "-")),
            rules: vec!["SP-3.6".into()],
            verdict,
            trace_tail: vec![],
        }
    }

    fn failed(line: usize, actual: &str) -> Verdict {
        Verdict::Failed(Failure {
            line,
            step: "bob@#general/T1 read notes.md => not_found".into(),
            expected: "refused not_found".into(),
            actual: actual.into(),
        })
    }

    fn report() -> RunReport {
        RunReport {
            implementation: "python3 x.py".into(),
            replay_prefix: "tidemark run --impl 'python3 x.py'".into(),
            profile_commands: Default::default(),
            cases: vec![
                case("listed_and_the_same", failed(7, "a directory")),
                case(
                    "listed_with_another_outcome",
                    failed(7, "refused not_a_directory"),
                ),
                case("listed_and_passing_now", Verdict::Passed),
                case(
                    "listed_and_skipped",
                    Verdict::Skipped {
                        reason: "needs binary_content".into(),
                    },
                ),
                case("not_listed", failed(3, "ok")),
            ],
            expectations: None,
        }
    }

    fn entry(name: &str, line: usize, at_line: usize, actual: &str) -> String {
        format!(
            "[[failure]]\nscenario = \"scratchpad::{name}\"\nat = \"scenarios/scratchpad/{}.tdm:{at_line}\"\nstep = \"bob@#general/T1 read notes.md => not_found\"\nexpected = \"refused not_found\"\nactual = \"{actual}\"\nreason = \"{}\"\n{}",
            name.replace('_', "-"),
            if line == 0 { super::super::UNTRIAGED.to_string() } else { "we chose so".into() },
            "\n"
        )
    }

    fn file() -> Expectations {
        let text = [
            "format = \"tidemark-expectations/1\"\n\n".to_string(),
            entry("listed_and_the_same", 0, 7, "a directory"),
            entry("listed_with_another_outcome", 1, 7, "refused not_found"),
            entry("listed_and_passing_now", 1, 7, "a directory"),
            entry("listed_and_skipped", 1, 7, "a directory"),
            entry("renamed_long_ago", 1, 7, "a directory"),
            "[[failure]]\nscenario = \"scoped::not_selected\"\nat = \"a\"\nstep = \"b\"\nexpected = \"c\"\nactual = \"d\"\nreason = \"e\"\n".into(),
        ]
        .concat();
        Expectations::parse("tidemark-expectations.toml", &text).unwrap()
    }

    fn judged() -> Judged {
        judge(
            &report(),
            &file(),
            &Selection {
                profiles: &["scratchpad"],
                only: &[],
            },
        )
    }

    #[test]
    fn a_failure_listed_with_its_step_and_outcome_is_known_and_nothing_else_is() {
        let j = judged();
        assert_eq!(
            j.cases.get("scratchpad::listed_and_the_same"),
            Some(&CaseJudgement::Known {
                line: 3,
                reason: super::super::UNTRIAGED.into()
            })
        );
        assert_eq!(j.untriaged, 1);
        assert!(matches!(
            j.cases.get("scratchpad::listed_with_another_outcome"),
            Some(CaseJudgement::Differs { .. })
        ));
        assert!(!j.cases.contains_key("scratchpad::not_listed"));
        assert_eq!(
            j.not_checked, 1,
            "the scoped entry: its profile was not run"
        );
        let stale: Vec<&str> = j.out_of_date.iter().map(|o| o.scenario.as_str()).collect();
        assert_eq!(
            stale,
            [
                "scratchpad::listed_with_another_outcome",
                "scratchpad::listed_and_passing_now",
                "scratchpad::listed_and_skipped",
                "scratchpad::renamed_long_ago"
            ]
        );
    }

    #[test]
    fn the_harness_account_of_a_process_is_neither_recorded_nor_compared() {
        let crashed = "the implementation reported an error for request 12 (tick): boom";
        assert_eq!(
            stable_actual(&format!(
                "{crashed}; the implementation exited (exit status 1)\nlast 2 line(s) of its stderr:\n  | Traceback\n  |   File \"/home/a/x.py\""
            )),
            crashed
        );
        assert_eq!(
            stable_actual(&format!("{crashed}\nlast 1 line(s) of its stderr:\n  | x")),
            crashed
        );
        assert_eq!(
            stable_actual(&format!("{crashed}; its stderr was empty")),
            crashed
        );
        assert_eq!(stable_actual("written a/b"), "written a/b");
        let mut r = report();
        r.cases[0].verdict = failed(
            7,
            "a directory\nlast 1 line(s) of its stderr:\n  | on this machine",
        );
        let j = judge(
            &r,
            &file(),
            &Selection {
                profiles: &["scratchpad"],
                only: &["scratchpad::listed_and_the_same".into()],
            },
        );
        assert!(j.out_of_date.is_empty(), "{:?}", j.out_of_date);
    }

    #[test]
    fn the_same_failure_at_a_moved_line_is_out_of_date() {
        let mut r = report();
        r.cases[0].verdict = failed(8, "a directory");
        let j = judge(
            &r,
            &file(),
            &Selection {
                profiles: &["scratchpad"],
                only: &["scratchpad::listed_and_the_same".into()],
            },
        );
        assert_eq!(
            j.not_checked, 5,
            "--only leaves the other entries unchecked"
        );
        assert_eq!(j.out_of_date.len(), 1);
        assert!(
            j.out_of_date[0]
                .problem
                .starts_with("it fails at another line now"),
            "{}",
            j.out_of_date[0].problem
        );
        assert!(
            j.out_of_date[0]
                .fix
                .contains("at = \"scenarios/scratchpad/listed-and-the-same.tdm:8\""),
            "{}",
            j.out_of_date[0].fix
        );
    }

    #[test]
    fn the_messages_for_entries_out_of_date_say_what_to_change() {
        let j = judged();
        let text: Vec<String> = j
            .out_of_date
            .iter()
            .map(|o| {
                format!(
                    "line {} {}: {}\n  fix: {}",
                    o.line, o.scenario, o.problem, o.fix
                )
            })
            .collect();
        insta::assert_snapshot!("out_of_date_entries", text.join("\n\n"));
    }
}

//! `tidemark run --write-expectations FILE`: today's failures as an expectations file, the
//! starting point of a gradual adoption. Entries are serialised by the `toml` crate; the header
//! comment says what the file is and how it is used.

use serde::Serialize;

use super::judge::{stable_actual, Selection};
use super::{Expectations, FORMAT, UNTRIAGED};
use crate::report::{shown_failure, RunReport, Verdict};

const HEADER: &str = "\
# Tidemark expectations: the failures this implementation is known to have.
#
# `tidemark run --expect <this file>` passes while every failure is listed here with the same
# step (at, step) and outcome (expected, actual), and fails on anything else: a new failure, and
# a listed one that passes now or fails differently (the report says what to change here), so
# this file only shrinks. Every entry needs a reason; UNTRIAGED means nobody has decided yet.
# Entries for scenarios a run does not select (--profile, --only) are not checked by it.
# `tidemark explore --expect <this file>` reads the [[difference]] entries: differences
# exploration accepts, by the signature it prints (profile, signature, reason).
";

#[derive(Serialize)]
struct Out {
    format: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failure: Vec<OutFailure>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    difference: Vec<OutDifference>,
}

#[derive(Serialize)]
struct OutFailure {
    scenario: String,
    at: String,
    step: String,
    expected: String,
    actual: String,
    reason: String,
}

#[derive(Serialize)]
struct OutDifference {
    profile: String,
    signature: String,
    reason: String,
}

/// The file `--write-expectations` writes after `report`: every failure of the run, in the
/// report's order, then `old`'s entries for scenarios this run did not select; then `old`'s
/// differences. A failure `old` lists identically (its line may have moved) keeps its reason;
/// the others get [`UNTRIAGED`].
pub fn render(report: &RunReport, old: Option<&Expectations>, selection: &Selection) -> String {
    let mut failure = Vec::new();
    for case in &report.cases {
        let Verdict::Failed(f) = &case.verdict else {
            continue;
        };
        let now = shown_failure(case, f);
        let kept = old
            .and_then(|o| {
                o.failures.iter().find(|e| {
                    e.scenario == case.test_name
                        && e.step == now.step
                        && e.expected == now.expected
                        && stable_actual(&e.actual) == stable_actual(&now.actual)
                })
            })
            .map(|e| e.reason.clone());
        failure.push(OutFailure {
            scenario: case.test_name.clone(),
            at: now.at,
            step: now.step,
            expected: now.expected,
            actual: stable_actual(&now.actual).to_string(),
            reason: kept.unwrap_or_else(|| UNTRIAGED.to_string()),
        });
    }
    let mut difference = Vec::new();
    if let Some(old) = old {
        for e in old
            .failures
            .iter()
            .filter(|e| !selection.selects(&e.scenario))
        {
            failure.push(OutFailure {
                scenario: e.scenario.clone(),
                at: e.at.clone(),
                step: e.step.clone(),
                expected: e.expected.clone(),
                actual: e.actual.clone(),
                reason: e.reason.clone(),
            });
        }
        difference = old
            .differences
            .iter()
            .map(|d| OutDifference {
                profile: d.profile.clone(),
                signature: d.signature.clone(),
                reason: d.reason.clone(),
            })
            .collect();
    }
    let body = toml::to_string(&Out {
        format: FORMAT,
        failure,
        difference,
    })
    .expect("an expectations file always serialises");
    format!("{HEADER}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::play::Failure;
    use crate::report::CaseReport;

    fn case(name: &str, verdict: Verdict) -> CaseReport {
        CaseReport {
            test_name: format!("scratchpad::{name}"),
            name: name.into(),
            profile: "scratchpad".into(),
            file: format!("scenarios/scratchpad/{name}.tdm"),
            rules: vec![],
            verdict,
            trace_tail: vec![],
        }
    }

    fn failed(actual: &str) -> Verdict {
        Verdict::Failed(Failure {
            line: 9,
            step: "alice@#g/T1 read \"quoted \\\" name\" => \"x\"".into(),
            expected: "content \"x\"".into(),
            actual: actual.into(),
        })
    }

    #[test]
    fn written_failures_read_back_as_the_same_known_failures_and_reasons_carry_over() {
        let report = RunReport {
            implementation: "p".into(),
            replay_prefix: "tidemark run".into(),
            profile_commands: Default::default(),
            cases: vec![
                case("a", failed("refused not_found\nstderr:\n  line two")),
                case("b", Verdict::Passed),
                case("c", failed("content \"y\"")),
            ],
            expectations: None,
        };
        let all = Selection {
            profiles: &["scratchpad"],
            only: &[],
        };
        let first = render(&report, None, &all);
        let loaded = Expectations::parse("e.toml", &first).unwrap();
        assert_eq!(loaded.failures.len(), 2);
        assert!(loaded.failures.iter().all(|f| f.reason == UNTRIAGED));
        let judged = super::super::judge::judge(&report, &loaded, &all);
        assert_eq!(judged.cases.len(), 2);
        assert!(judged.out_of_date.is_empty(), "{:?}", judged.out_of_date);

        // A team triages one entry; writing again keeps its reason, and carries over an entry
        // this run did not select and every difference.
        let triaged = first.replacen(UNTRIAGED, "we chose so", 1)
            + "\n[[failure]]\nscenario = \"scoped::elsewhere\"\nat = \"a\"\nstep = \"b\"\nexpected = \"c\"\nactual = \"d\"\nreason = \"kept\"\n\n[[difference]]\nprofile = \"scratchpad\"\nsignature = \"SP-3.6 disk: a directory the model never had\"\nreason = \"ours\"\n";
        let old = Expectations::parse("e.toml", &triaged).unwrap();
        let second = Expectations::parse("e.toml", &render(&report, Some(&old), &all)).unwrap();
        let reasons: Vec<&str> = second.failures.iter().map(|f| f.reason.as_str()).collect();
        assert_eq!(reasons, ["we chose so", UNTRIAGED, "kept"]);
        assert_eq!(second.differences.len(), 1);
        assert!(first.starts_with("# Tidemark expectations"), "{first}");
    }
}

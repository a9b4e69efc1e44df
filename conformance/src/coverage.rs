//! SPEC coverage: each rule of the parts a run touched, with the scenarios that cite it, how
//! often exploration reached it, and whether a program's unclaimed capabilities left it
//! unjudged. `tidemark run --coverage` and `tidemark explore --coverage` print it, and the HTML
//! report shows it.
//!
//! What is counted, honestly: a scenario *cites* a rule in its `rules:` header (the suite's
//! promise, checked by `every_rule_cited` and `every_rule_bites`). Exploration *reaches* a rule
//! as its profile counts it (`Explorer::rules_decided`, said in words by `rules_counting` on
//! every table): the scratchpad's model names the rule that decided each outcome it predicts
//! (its signature table applied to the predicted outcome: a refusal's reason's rule, an
//! evicting write SP-4.2, else the operation's rule); the scoped and rows models record no rule
//! per outcome, so each operation of a passing seed counts its operation's rule, the one their
//! signature tables name for a difference at that operation. Coarser rules (SC-5.3 for every
//! sweep) are therefore reached often and finer ones (a rule only a particular outcome
//! decides) read as not reached: a generator gap on the table may be a counting gap, and the
//! table says which counting applies. Every failing seed also counts its difference's rule.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use crate::profiles::Profile;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Every rule of the parts covered, in SPEC.md's id order.
    pub rules: Vec<RuleCoverage>,
    /// What the exploration column counts, for this run.
    pub counting: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCoverage {
    pub rule: String,
    /// Test names of the scenarios citing it.
    pub scenarios: Vec<String>,
    /// How often exploration reached it; `None`: no exploration in this report.
    pub explored: Option<u64>,
    /// Why no scenario citing it was judged (the program did not claim what they need).
    pub unjudged: Option<String>,
}

/// Where a rule stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    Both,
    ScenariosOnly,
    /// Cited by a scenario, explored, never reached: a generator gap.
    GeneratorGap,
    ExplorationOnly,
    Neither,
}

impl RuleCoverage {
    pub fn reach(&self) -> Reach {
        match (!self.scenarios.is_empty(), self.explored) {
            (true, Some(n)) if n > 0 => Reach::Both,
            (true, Some(_)) => Reach::GeneratorGap,
            (true, None) => Reach::ScenariosOnly,
            (false, Some(n)) if n > 0 => Reach::ExplorationOnly,
            (false, _) => Reach::Neither,
        }
    }

    /// The CSS class of its row.
    pub fn class(&self) -> &'static str {
        match self.reach() {
            Reach::Both => "both",
            Reach::ScenariosOnly => "scenarios",
            Reach::GeneratorGap => "gap",
            Reach::ExplorationOnly => "explored",
            Reach::Neither => "neither",
        }
    }
}

/// The parts of SPEC.md a profile's rules come from: its own and those its scenarios also cite
/// (the scoped profile's SF and SL), whose rules its exploration may decide too.
pub fn parts_of(vocabulary: &crate::scenario::header::HeaderVocabulary) -> Vec<&'static str> {
    std::iter::once(vocabulary.rule_prefix)
        .chain(vocabulary.also_cites.iter().copied())
        .collect()
}

/// The rule ids of SPEC.md starting with one of `prefixes`, in order.
pub fn rules_of(spec: &Path, prefixes: &[&str]) -> Result<Vec<String>, String> {
    let index = crate::spec::RuleIndex::load(spec)
        .map_err(|e| format!("cannot read {}: {e}", spec.display()))?;
    let mut ids: Vec<String> = index
        .ids()
        .filter(|id| prefixes.iter().any(|p| id.starts_with(p)))
        .cloned()
        .collect();
    ids.sort_by_key(|id| rule_order(id));
    Ok(ids)
}

/// `SP-10.2` after `SP-9.1`: the part, then each number.
fn rule_order(id: &str) -> (String, Vec<u64>) {
    let (part, nums) = id.split_once('-').unwrap_or((id, ""));
    (
        part.to_string(),
        nums.split('.').map(|n| n.parse().unwrap_or(0)).collect(),
    )
}

/// The scenarios of `profile` under `scenarios` by the rules they cite: test name by rule.
/// A file that does not load is left out (`run` reports it as a load error first).
pub fn citations(
    profile: &dyn Profile,
    scenarios: &Path,
    spec: &Path,
) -> BTreeMap<String, Vec<String>> {
    let index = crate::spec::RuleIndex::load(spec).unwrap_or_default();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let dir = scenarios.join(profile.name());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|f| f.extension().is_some_and(|e| e == "tdm"));
    files.sort();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok((header, _)) =
            crate::scenario::header::split(&text, profile.vocabulary(), &|id| index.contains(id))
        else {
            continue;
        };
        let name = crate::scenario::load::test_name(profile.name(), &file);
        for rule in header.rules {
            out.entry(rule).or_default().push(name.clone());
        }
    }
    out
}

impl Coverage {
    /// Every rule of `rules` with its citations, exploration counts and unjudged reasons.
    pub fn new(
        rules: Vec<String>,
        citations: &BTreeMap<String, Vec<String>>,
        explored: Option<&BTreeMap<String, u64>>,
        unjudged: &BTreeMap<String, String>,
        counting: String,
    ) -> Coverage {
        Coverage {
            rules: rules
                .into_iter()
                .map(|rule| RuleCoverage {
                    scenarios: citations.get(&rule).cloned().unwrap_or_default(),
                    explored: explored.map(|e| e.get(&rule).copied().unwrap_or(0)),
                    unjudged: unjudged.get(&rule).cloned(),
                    rule,
                })
                .collect(),
            counting,
        }
    }

    fn count(&self, reach: Reach) -> usize {
        self.rules.iter().filter(|r| r.reach() == reach).count()
    }

    /// `N rules: a by scenarios and exploration, b by scenarios only (c generator gaps), …`.
    pub fn summary_line(&self) -> String {
        let explored = self.rules.iter().any(|r| r.explored.is_some());
        let mut s = format!("{} rules: ", self.rules.len());
        if explored {
            let _ = write!(
                s,
                "{} reached by scenarios and exploration, {} by scenarios only ({} of them generator gaps: explored, never reached), {} by exploration only, {} by neither",
                self.count(Reach::Both),
                self.count(Reach::GeneratorGap) + self.count(Reach::ScenariosOnly),
                self.count(Reach::GeneratorGap),
                self.count(Reach::ExplorationOnly),
                self.count(Reach::Neither)
            );
        } else {
            let _ = write!(
                s,
                "{} cited by scenarios, {} by none",
                self.rules.len() - self.count(Reach::Neither),
                self.count(Reach::Neither)
            );
        }
        let unjudged = self.rules.iter().filter(|r| r.unjudged.is_some()).count();
        if unjudged > 0 {
            let _ = write!(s, "; {unjudged} left unjudged by capabilities not claimed");
        }
        s
    }

    /// The table as text: one line per rule, then the rules nothing reached and the generator
    /// gaps by name, then the summary line.
    pub fn render_text(&self) -> String {
        let mut s = String::from("SPEC coverage\n");
        let _ = writeln!(s, "  counting: {}", self.counting);
        let _ = writeln!(
            s,
            "  {:<10} {:>9} {:>11}  scenarios citing it",
            "rule", "scenarios", "exploration"
        );
        for r in &self.rules {
            let explored = match r.explored {
                Some(n) => n.to_string(),
                None => "-".into(),
            };
            let mut names = r.scenarios.join(", ");
            if names.len() > 100 {
                let cut = names
                    .char_indices()
                    .take_while(|(i, _)| *i < 100)
                    .last()
                    .map(|(i, _)| i)
                    .unwrap_or(0);
                names = format!("{}…", &names[..cut]);
            }
            let _ = writeln!(
                s,
                "  {:<10} {:>9} {:>11}  {names}",
                r.rule,
                r.scenarios.len(),
                explored
            );
            if let Some(why) = &r.unjudged {
                let _ = writeln!(s, "  {:<10} unjudged: {why}", "");
            }
        }
        let named = |reach: Reach| -> Vec<&str> {
            self.rules
                .iter()
                .filter(|r| r.reach() == reach)
                .map(|r| r.rule.as_str())
                .collect()
        };
        let neither = named(Reach::Neither);
        if !neither.is_empty() {
            let _ = writeln!(s, "rules nothing reached: {}", neither.join(", "));
        }
        let gaps = named(Reach::GeneratorGap);
        if !gaps.is_empty() {
            let _ = writeln!(
                s,
                "generator gaps (cited by a scenario, never reached by exploration): {}",
                gaps.join(", ")
            );
        }
        let _ = writeln!(s, "{}", self.summary_line());
        s
    }
}

/// A run's coverage: the rules of the parts of `profiles`, each with the scenarios of `report`
/// that cite it; a rule whose every citing scenario was skipped is unjudged, with the first
/// skip's reason. No exploration column: `tidemark explore --coverage` has it.
pub fn of_run(
    report: &crate::report::RunReport,
    profiles: &[&dyn Profile],
    spec: &Path,
) -> Result<Coverage, String> {
    use crate::report::Verdict;
    let prefixes: Vec<&str> = profiles
        .iter()
        .flat_map(|p| parts_of(p.vocabulary()))
        .collect();
    let rules = rules_of(spec, &prefixes)?;
    let mut citations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut judged: BTreeMap<String, bool> = BTreeMap::new();
    let mut skip_reason: BTreeMap<String, String> = BTreeMap::new();
    for case in &report.cases {
        for rule in &case.rules {
            citations
                .entry(rule.clone())
                .or_default()
                .push(case.test_name.clone());
            let ran = !matches!(case.verdict, Verdict::Skipped { .. });
            *judged.entry(rule.clone()).or_default() |= ran;
            if let Verdict::Skipped { reason } = &case.verdict {
                skip_reason
                    .entry(rule.clone())
                    .or_insert_with(|| format!("{} skipped: {reason}", case.test_name));
            }
        }
    }
    let unjudged: BTreeMap<String, String> = skip_reason
        .into_iter()
        .filter(|(rule, _)| !judged.get(rule).copied().unwrap_or(false))
        .collect();
    Ok(Coverage::new(
        rules,
        &citations,
        None,
        &unjudged,
        "scenarios of this run citing each rule in their rules: header; exploration is not part of a run (tidemark explore --coverage counts it)".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_is_placed_by_who_reached_it_and_gaps_are_named() {
        let citations = BTreeMap::from([
            ("SP-1.1".to_string(), vec!["scratchpad::a".to_string()]),
            ("SP-1.2".to_string(), vec!["scratchpad::b".to_string()]),
        ]);
        let explored = BTreeMap::from([("SP-1.1".to_string(), 4), ("SP-2.1".to_string(), 1)]);
        let unjudged = BTreeMap::from([("SP-1.2".to_string(), "needs symlinks".to_string())]);
        let c = Coverage::new(
            ["SP-1.1", "SP-1.2", "SP-2.1", "SP-9"]
                .map(String::from)
                .to_vec(),
            &citations,
            Some(&explored),
            &unjudged,
            "test".into(),
        );
        let reach: Vec<Reach> = c.rules.iter().map(RuleCoverage::reach).collect();
        assert_eq!(
            reach,
            [
                Reach::Both,
                Reach::GeneratorGap,
                Reach::ExplorationOnly,
                Reach::Neither
            ]
        );
        let text = c.render_text();
        assert!(text.contains("rules nothing reached: SP-9\n"), "{text}");
        assert!(
            text.contains(
                "generator gaps (cited by a scenario, never reached by exploration): SP-1.2\n"
            ),
            "{text}"
        );
        assert!(text.contains("unjudged: needs symlinks"), "{text}");
        assert!(text.ends_with(
            "4 rules: 1 reached by scenarios and exploration, 1 by scenarios only (1 of them generator gaps: explored, never reached), 1 by exploration only, 1 by neither; 1 left unjudged by capabilities not claimed\n"
        ), "{text}");
    }

    #[test]
    fn a_rule_only_skipped_scenarios_cite_is_unjudged_with_the_skips_reason() {
        use crate::report::{CaseReport, RunReport, Verdict};
        let case = |name: &str, rules: &[&str], verdict: Verdict| CaseReport {
            test_name: name.into(),
            name: name.into(),
            profile: "scratchpad".into(),
            file: format!("{name}.tdm"),
            rules: rules.iter().map(|r| r.to_string()).collect(),
            verdict,
            trace_tail: vec![],
        };
        let skipped = || Verdict::Skipped {
            reason: "needs symlinks, which the implementation does not claim".into(),
        };
        let report = RunReport {
            implementation: "a program".into(),
            replay_prefix: "tidemark run".into(),
            profile_commands: Default::default(),
            cases: vec![
                case("scratchpad::ran", &["SP-2.1"], Verdict::Passed),
                case("scratchpad::skipped_too", &["SP-2.1"], skipped()),
                case("scratchpad::only_skipped", &["SP-2.7"], skipped()),
            ],
            expectations: None,
        };
        let scratchpad = crate::profiles::named("scratchpad").unwrap();
        let c = of_run(&report, &[scratchpad], &crate::default_spec_path()).unwrap();
        let rule = |id: &str| c.rules.iter().find(|r| r.rule == id).unwrap();
        assert_eq!(rule("SP-2.1").unjudged, None);
        assert_eq!(rule("SP-2.1").scenarios.len(), 2);
        assert_eq!(
            rule("SP-2.7").unjudged.as_deref(),
            Some("scratchpad::only_skipped skipped: needs symlinks, which the implementation does not claim")
        );
        assert_eq!(rule("SP-1.1").reach(), Reach::Neither);
        assert!(c.rules.iter().all(|r| r.rule.starts_with("SP-")));
    }

    #[test]
    fn rules_sort_by_their_numbers() {
        let mut ids = vec!["SP-10.1", "SP-9.2", "SP-1.10", "SP-1.2"];
        ids.sort_by_key(|id| rule_order(id));
        assert_eq!(ids, ["SP-1.2", "SP-1.10", "SP-9.2", "SP-10.1"]);
    }
}

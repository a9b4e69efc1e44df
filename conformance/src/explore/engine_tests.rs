//! The engine's loop, shrinking, hunt and determinism check on a profile in miniature.

use super::*;
use crate::explore::compare::compare;
use crate::explore::hunt::{hunt, hunt_report};
use crate::explore::shrink::OpsTree;
use crate::explore::signature::KnownDifferences;
use std::cell::Cell;

/// A profile in miniature: a seed's workload is ten digits; mutant `sevens` diverges on
/// any 7, `odd` on its first odd digit (a difference per digit), `never` never does,
/// `unreachable` is out of reach, `broken` cannot be set up.
#[derive(Default)]
struct Digits {
    /// Added to every pass hash and bumped per run: a nondeterministic implementation.
    drift: Option<Cell<u64>>,
}

const MUTANTS: [&str; 5] = ["sevens", "odd", "never", "unreachable", "broken"];

#[async_trait(?Send)]
impl Explorer for Digits {
    type Workload = Vec<u8>;
    type Passed = String;
    type Divergence = u8;
    type Mutant = &'static str;
    type Tally = ();

    fn profile(&self) -> &'static str {
        "digits"
    }
    fn tree(&self, seed: u64) -> Box<dyn ValueTree<Value = Vec<u8>>> {
        Box::new(OpsTree::of_values(
            (0..10u64)
                .map(|i| ((seed * 31 + i * 7) % 10) as u8)
                .collect(),
        ))
    }
    fn len(&self, w: &Vec<u8>) -> usize {
        w.len()
    }
    async fn run(&self, _: u64, w: &Vec<u8>, m: Option<&'static str>) -> Outcome<String, u8> {
        match m {
            Some("sevens") if w.contains(&7) => Outcome::Diverged(7),
            Some("odd") if w.iter().any(|d| d % 2 == 1) => {
                Outcome::Diverged(*w.iter().find(|d| *d % 2 == 1).expect("an odd digit"))
            }
            Some("broken") => Outcome::Setup("no server".into()),
            _ => {
                let drift = self.drift.as_ref().map_or(0, |d| {
                    d.set(d.get() + 1);
                    d.get()
                });
                Outcome::Passed(format!("{w:?}{drift}"))
            }
        }
    }
    fn pass_hash(&self, p: &String) -> String {
        p.clone()
    }
    fn divergence_hash(&self, d: &u8) -> String {
        d.to_string()
    }
    fn simulated_ms(&self, _: &String) -> i64 {
        1
    }
    fn mutants(&self) -> Vec<&'static str> {
        MUTANTS.to_vec()
    }
    fn mutant_id(&self, m: &'static str) -> &'static str {
        m
    }
    fn out_of_reach(&self, m: &'static str) -> Option<&'static str> {
        (m == "unreachable").then_some("the digits never reach it")
    }
    fn setting(&self) -> String {
        "memory".into()
    }
    fn op_lines(&self, w: &Vec<u8>) -> Vec<String> {
        w.iter().map(u8::to_string).collect()
    }
    fn signature(&self, _: &Vec<u8>, d: &u8) -> Signature {
        Signature::new("D-1", format!("digit {d}"))
    }
    fn divergence_text<'d>(&self, d: &'d u8) -> DivergenceText<'d> {
        DivergenceText {
            trace: &[],
            at: d.to_string(),
            expected: "no 7",
            actual: "a 7",
            model_state: &[],
        }
    }
    fn save(
        &self,
        _: &Failure<Vec<u8>, u8>,
        _: &u8,
        _: Option<&str>,
        _: &Path,
    ) -> Result<Option<PathBuf>, String> {
        Ok(None)
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

fn seeds(n: u64) -> Seeds {
    Seeds {
        first_seed: 0,
        seeds: n,
        shard: Shard::ALL,
        jobs: 1,
    }
}

#[test]
fn a_divergence_shrinks_to_the_one_step_that_fails_and_a_pass_is_not_a_failure() {
    let e = Digits::default();
    assert!(e.generate(0).contains(&7), "{:?}", e.generate(0));
    let f = block_on(explore_seed(&e, 0, Some("sevens"), 100)).expect("seed 0 has a 7");
    assert_eq!((f.workload, f.original_len), (vec![7], 10));
    assert!(block_on(explore_seed(&e, 0, Some("never"), 100)).is_none());
    let run = block_on(explore_seeds(&e, 0..5, Some("broken"), 100, 1, &|| {}));
    assert_eq!((run.passed, run.failures.len()), (0, 5));
    assert!(matches!(run.failures[0].error, Failed::Setup(_)));
}

#[test]
fn the_hunt_takes_the_median_and_lists_unreachable_and_broken_mutants_apart() {
    let e = Digits::default();
    let lines = block_on(hunt(&e, &seeds(20), None, 3));
    let by = |id: &str| lines.iter().find(|l| l.mutant == id).unwrap();
    assert_eq!(by("sevens").searches.len(), 3);
    assert!(by("sevens").median().is_some());
    assert_eq!((by("never").median(), by("never").tried), (None, 60));
    assert_eq!(
        (by("unreachable").tried, by("unreachable").median()),
        (0, None)
    );
    assert!(by("broken").setup_error.is_some() && by("broken").median().is_none());
    let report = hunt_report(&e, &lines, 20);
    assert!(
        report.contains("SKIPPED    unreachable  the digits never reach it"),
        "{report}"
    );
    assert!(
        report.contains("ERROR      broken       seed 0: no server"),
        "{report}"
    );
    assert!(
        report.contains("NOT FOUND  never        in 60 seed(s)"),
        "{report}"
    );
    assert!(
        report.ends_with("2 passed, 2 failed, 1 skipped\n"),
        "{report}"
    );
}

#[test]
fn the_determinism_check_fails_an_implementation_whose_trace_drifts() {
    let steady = Digits::default();
    assert_eq!(
        block_on(compare(&steady, &steady, &seeds(4), None)),
        Ok(true)
    );
    let drifting = Digits {
        drift: Some(Cell::new(0)),
    };
    assert_eq!(
        block_on(compare(&drifting, &drifting, &seeds(4), None)),
        Ok(false)
    );
    assert!(
        block_on(compare(&steady, &steady, &seeds(2), Some("broken")))
            .is_err_and(|e| e.contains("seed 0: no server"))
    );
}

#[test]
fn failures_group_by_signature_and_one_seed_of_each_is_shrunk_to_its_own_difference() {
    let e = Digits::default();
    let ran = block_on(run_seeds(&e, 0..10, Some("odd"), 1, &|| {}));
    assert_eq!(ran.failed.len(), 10, "every seed has an odd digit");
    let f = block_on(findings(
        &e,
        ran.failed,
        ran.known_in_passes,
        Some("odd"),
        1000,
        None,
        &KnownDifferences::default(),
    ))
    .unwrap();
    let groups: Vec<(String, Vec<u64>, Vec<u8>)> = f
        .differences
        .iter()
        .map(|d| {
            (
                d.signature.to_string(),
                d.seeds.clone(),
                d.shrunk.workload.clone(),
            )
        })
        .collect();
    // Seed s's digits are (31s + 7i) % 10, so its first odd digit is seed 0's 7, seed 1's 1, ...
    // Each group is shrunk to the one digit it is named for: a shrink that would show another
    // odd digit first is not taken.
    let digit = |d: u8, seeds: [u64; 2]| (format!("D-1 digit {d}"), seeds.to_vec(), vec![d]);
    assert_eq!(
        groups,
        vec![
            digit(7, [0, 7]),
            digit(1, [1, 4]),
            digit(9, [2, 9]),
            digit(3, [3, 6]),
            digit(5, [5, 8]),
        ]
    );
    assert_eq!(
        closing_line(0, &f),
        "0 passed, 10 failed: 5 distinct differences"
    );
    let summary = findings_summary(&e, &f, Some("odd"), &KnownDifferences::default());
    insta::assert_snapshot!("distinct_differences_summary", summary);
}

#[test]
fn a_known_difference_fails_no_seed_and_the_summary_says_the_seeds_ended_there() {
    let e = Digits::default();
    let known = KnownDifferences {
        file: "e.toml".into(),
        entries: vec![
            crate::explore::signature::KnownEntry {
                signature: "D-1 digit 7".into(),
                line: 3,
                reason: "sevens are ours".into(),
            },
            crate::explore::signature::KnownEntry {
                signature: "D-1 digit 8".into(),
                line: 8,
                reason: "never seen".into(),
            },
        ],
    };
    let ran = block_on(run_seeds(&e, 0..10, Some("odd"), 1, &|| {}));
    let f = block_on(findings(
        &e,
        ran.failed,
        vec![],
        Some("odd"),
        0,
        None,
        &known,
    ))
    .unwrap();
    assert_eq!(f.differences.len(), 4);
    assert_eq!(
        closing_line(0, &f),
        "0 passed, 8 failed: 4 distinct differences, 2 ended at a known difference"
    );
    let summary = findings_summary(&e, &f, Some("odd"), &known);
    insta::assert_snapshot!("known_differences_summary", summary);
}

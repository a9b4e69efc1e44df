//! `tidemark bench --profile report`: the HTML report's size and the time to render and write
//! it, at the sizes that occur. The inputs are synthesised (no implementation runs): a
//! 1,000-scenario run, a tenth of it failing with as many trace lines as a case keeps
//! (`report::TRACE_KEPT_LINES`), and a world failure of 10,000 trace events among three guests,
//! the reaper and the harness. Timings come from the wall clock on purpose: they are
//! measurements, never inputs to a decision.

use std::collections::BTreeMap;
use std::time::Instant;

use super::{FailureView, Page, ProfileSummary};
use crate::play::Failure;
use crate::report::{CaseReport, RunReport, Verdict, TRACE_KEPT_LINES};

/// A run of `n` scenarios, every tenth failing with a kept trace of the usual shape.
pub fn synthetic_run(n: usize) -> RunReport {
    let cases = (0..n)
        .map(|i| {
            let failed = i % 10 == 0;
            CaseReport {
                test_name: format!("scratchpad::scenario_number_{i}_states_a_decision"),
                name: format!("scenario number {i} states a decision"),
                profile: "scratchpad".into(),
                file: format!("scenarios/scratchpad/scenario-number-{i}.tdm"),
                rules: vec!["SP-3.1".into(), "SP-4.2".into()],
                verdict: if failed {
                    Verdict::Failed(Failure {
                        line: 12,
                        step: "alice@#general/T1 write notes.md 900B => ok evicted [@alice/a.txt]"
                            .into(),
                        expected: "written, evicted [151d8375a7636540/a.txt]".into(),
                        actual: "written 151d8375a7636540/notes.md, evicted [151d8375a7636540/b.txt]"
                            .into(),
                    })
                } else {
                    Verdict::Passed
                },
                trace_tail: if failed {
                    (0..TRACE_KEPT_LINES)
                        .map(|t| {
                            format!(
                                "{:>14} {}@#general/T1 write f{t}.txt 100B -> written 151d8375a7636540/f{t}.txt",
                                t as i64 * 37_000,
                                ["alice", "bob", "carol"][t % 3]
                            )
                        })
                        .collect()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    RunReport {
        implementation: "python3 examples/python-scratchpad/scratchpad.py".into(),
        replay_prefix: "tidemark run --impl 'python3 examples/python-scratchpad/scratchpad.py'"
            .into(),
        profile_commands: Default::default(),
        cases,
        expectations: None,
    }
}

/// A world's failing seed with `events` trace events: three guests' calls, the reaper's ticks,
/// the harness's faults and clock jumps.
pub fn synthetic_world(events: usize) -> Page {
    let trace: Vec<String> = (0..events)
        .map(|i| {
            let at = i as i64 * 1_500 + if i > events / 2 { 86_400_000 } else { 0 };
            let event = match i % 25 {
                0 => format!("tick {} reaps at {at} in batches of 4", i / 25),
                12 => "fault Jump(3600000)".to_string(),
                k => format!(
                    "g{} #{i} {{\"op\":\"stream\",\"reply\":\"r{k}\"}} -> ok",
                    k % 3
                ),
            };
            format!("{at:>14} {event}")
        })
        .collect();
    Page {
        title: "tidemark rows world".into(),
        command: "tidemark world --profile rows --first-seed 0 --seeds 1".into(),
        implementation: "the mutant streamed-swept-by-age".into(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        seeds: Some("0..1 (1 seeds)".into()),
        profiles: vec![ProfileSummary {
            name: "rows world".into(),
            failed: 1,
            ..Default::default()
        }],
        failures: vec![FailureView {
            title: "rows world seed 0".into(),
            what: "safety: after tick 11: events rows: the reference has Ok(3), SR keeps 6".into(),
            at: format!("seed 0, after {events} trace events"),
            expected: "no safety or liveness violation (the world's oracle)".into(),
            actual: "safety: after tick 11: events rows: the reference has Ok(3), SR keeps 6"
                .into(),
            rules: vec!["SR-2.8".into()],
            replay: "tidemark world --profile rows --first-seed 0 --seeds 1".into(),
            trace,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Renders `page` and writes it to a temporary file, `times` times; the page's size in bytes
/// and the mean milliseconds of one render and write.
fn measure(page: &Page, rules: &BTreeMap<String, String>, times: u32) -> (usize, f64) {
    let dir =
        tempfile::tempdir_in(tidemark_sim::owner::scratch_base()).expect("a temporary directory");
    let path = dir.path().join("report.html");
    let started = Instant::now();
    for _ in 0..times {
        super::write(&path, page, rules).expect("the report is written");
    }
    let ms = started.elapsed().as_secs_f64() * 1000.0 / f64::from(times);
    let size = std::fs::metadata(&path)
        .map(|m| m.len() as usize)
        .unwrap_or(0);
    (size, ms)
}

/// The figures, one line each.
pub fn run() -> String {
    let rules = super::rule_texts(&crate::default_spec_path());
    let run = synthetic_run(1_000);
    let started = Instant::now();
    let page = super::run::page(&run);
    let build_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (size, ms) = measure(&page, &rules, 5);
    let json = crate::report::render_json(&run).len();
    let mut s = format!(
        "report: 1,000-scenario run (100 failing, {TRACE_KEPT_LINES} trace lines each; synthesised): HTML {:.0} KiB ({} failures in full, {} listed) written in {ms:.1} ms (+{build_ms:.1} ms to build the page); its JSON report {:.0} KiB\n",
        size as f64 / 1024.0,
        super::FULL_FAILURES.min(page.failures.len()),
        page.failures.len().saturating_sub(super::FULL_FAILURES),
        json as f64 / 1024.0,
    );
    let world = synthetic_world(10_000);
    let (size, ms) = measure(&world, &rules, 5);
    s.push_str(&format!(
        "report: world failure of 10,000 trace events (synthesised): HTML {:.0} KiB (its last {} events drawn) written in {ms:.1} ms\n",
        size as f64 / 1024.0,
        super::TIMELINE_EVENTS
    ));
    s
}

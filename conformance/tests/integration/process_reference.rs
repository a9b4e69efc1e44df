//! The reference implementation behind the protocol behaves exactly as it does in-process: with
//! a mutant switched on, the same failures, and with a variant declared, the same judgement.
//! (That it passes every scenario of every profile as in process is held by the one run that
//! `process_protocol_schema` records.)

use super::support::block_on;
use tidemark_conformance::process::{AdapterCommand, ProcessFactory, ProcessOptions};
use tidemark_conformance::profiles::scratchpad as suite;
use tidemark_conformance::profiles::scratchpad::gate;
use tidemark_conformance::profiles::scratchpad::script::Scenario;
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::report::RunReport;
use tidemark_conformance::{default_scenarios_dir, default_spec_path};
use tidemark_reference::scratchpad::ScratchpadMutant;

const ADAPTER: &str = env!("CARGO_BIN_EXE_tidemark-reference-adapter");

fn scenarios() -> Vec<Scenario> {
    suite::load(&default_scenarios_dir(), &default_spec_path()).expect("the suite loads")
}

fn through_the_adapter(scenarios: &[Scenario], args: &str) -> RunReport {
    let selected: Vec<&Scenario> = scenarios.iter().collect();
    let command = AdapterCommand::parse(
        &format!("{ADAPTER} {args}"),
        &std::env::current_dir().unwrap(),
    )
    .unwrap();
    block_on(async {
        let factory = ProcessFactory::probe(command, ProcessOptions::default())
            .await
            .expect("the adapter completes init");
        gate::check(&selected, &factory, "tidemark run --impl adapter".into()).await
    })
}

fn in_process(scenarios: &[Scenario], mutant: Option<ScratchpadMutant>) -> RunReport {
    let selected: Vec<&Scenario> = scenarios.iter().collect();
    block_on(gate::check(
        &selected,
        &ReferenceScratchpad {
            mutant,
            ..Default::default()
        },
        "tidemark run".into(),
    ))
}

/// Each scenario's test name and verdict, failures compared by where they failed and what came
/// back (the actual outcome), which must not depend on the path taken.
fn verdicts(report: &RunReport) -> Vec<(String, String)> {
    super::support::verdicts(&report.cases)
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_mutant_behind_the_protocol_fails_the_same_scenarios_with_the_same_outcomes_as_in_process() {
    let scenarios = scenarios();
    // Three mutants from different families keep the test quick; `tidemark mutants` covers all.
    for mutant in [
        ScratchpadMutant::ALL[0],
        ScratchpadMutant::ALL[ScratchpadMutant::ALL.len() / 2],
        *ScratchpadMutant::ALL.last().unwrap(),
    ] {
        let process = through_the_adapter(&scenarios, &format!("--mutant {}", mutant.id()));
        assert_eq!(
            verdicts(&process),
            verdicts(&in_process(&scenarios, Some(mutant))),
            "mutant {}",
            mutant.id()
        );
        assert!(
            !process.passed(),
            "mutant {} is killed through the protocol",
            mutant.id()
        );
    }
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_reference_declaring_a_variant_behind_the_protocol_is_judged_by_it_as_in_process() {
    use tidemark_conformance::profiles::scratchpad::variants;
    let scenarios = scenarios();
    let declared = variants::each_alternative()
        .into_iter()
        .find(|d| d.non_defaults() == ["read_through_a_file=not_a_directory"])
        .unwrap();
    let process = through_the_adapter(&scenarios, "--variant read_through_a_file=not_a_directory");
    let selected: Vec<&Scenario> = scenarios.iter().collect();
    let in_process = block_on(gate::check(
        &selected,
        &ReferenceScratchpad {
            mutant: None,
            variants: declared,
        },
        "tidemark run".into(),
    ));
    assert_eq!(verdicts(&process), verdicts(&in_process));
    assert!(process.passed(), "{:?}", verdicts(&process));
}

/// Not a check but a measurement, run on demand:
/// `cargo test -p tidemark-conformance --test integration process_reference:: -- --ignored --nocapture`.
/// Wall time of the whole suite in-process and through the reference adapter, after a warm-up,
/// median of several rounds (wall-clock reads here measure; they decide nothing).
#[test]
#[ignore = "a measurement, not a check; run with --ignored --nocapture"]
fn measure_the_overhead_of_the_process_path() {
    const ROUNDS: usize = 7;
    let scenarios = scenarios();
    let median = |f: &dyn Fn()| {
        f();
        let mut times: Vec<std::time::Duration> = (0..ROUNDS)
            .map(|_| {
                let started = std::time::Instant::now();
                f();
                started.elapsed()
            })
            .collect();
        times.sort();
        times[ROUNDS / 2]
    };
    let in_process = median(&|| assert!(in_process(&scenarios, None).passed()));
    let process = median(&|| assert!(through_the_adapter(&scenarios, "").passed()));
    println!(
        "{} scenarios: in-process {:?}, through the reference adapter {:?}, ratio {:.1}x ({:?} per scenario)",
        scenarios.len(),
        in_process,
        process,
        process.as_secs_f64() / in_process.as_secs_f64(),
        (process.saturating_sub(in_process)) / scenarios.len() as u32
    );
}

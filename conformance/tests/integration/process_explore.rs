//! The Python example, written from SPEC.md alone, agrees with the oracle (an executable model
//! of SPEC.md) on random operation sequences, not only on the scenarios: a divergence is either a
//! bug in the example or a place where the spec let two readers go different ways.

use tidemark_conformance::process::{AdapterCommand, ProcessFactory, ProcessOptions};
use tidemark_conformance::profiles::scratchpad::explore::explore_seed;
use tidemark_conformance::spec::repo_root;

fn python_example() -> ProcessFactory {
    let command = AdapterCommand::parse(
        "python3 examples/python-scratchpad/scratchpad.py",
        &repo_root(),
    )
    .unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(ProcessFactory::probe(command, ProcessOptions::default()))
        .expect("the example completes init")
}

fn explore(seeds: std::ops::Range<u64>) {
    let factory = python_example();
    for seed in seeds {
        if let Some(found) = explore_seed(seed, &factory, 256) {
            panic!("{}", found.describe(None));
        }
    }
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_python_example_agrees_with_the_oracle_on_random_sequences() {
    explore(0..4);
}

/// More seeds, on demand: `cargo test -p tidemark-conformance --test integration process_explore:: -- --ignored`.
#[test]
#[ignore = "slow: a hundred seeds through a Python process"]
fn the_python_example_agrees_with_the_oracle_on_a_hundred_seeds() {
    explore(4..104);
}

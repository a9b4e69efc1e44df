//! Prints the trace hash of exploration seeds 0..N for both profiles (the reference, the scoped
//! profile on the memory tier), one line each: the figures a refactoring must leave unchanged.
//!
//! cargo run -p tidemark-conformance --example explore_hashes -- 100

use tidemark_conformance::profiles::scoped::model::{generate, run_ops, Tier, DEFAULT_STEPS};
use tidemark_conformance::profiles::scratchpad::explore;
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    for seed in 0..n {
        let (unmounted, ops) = explore::generate(seed);
        let r = rt.block_on(explore::run::run_ops(
            &ops,
            unmounted,
            &ReferenceScratchpad::default(),
        ));
        println!("scratchpad {seed} {}", r.trace.hash());
    }
    for seed in 0..n {
        let ops = generate(seed, DEFAULT_STEPS);
        match rt.block_on(run_ops(Tier::Memory, seed, &ops, None, None)) {
            Ok(r) => println!("scoped {seed} {}", r.trace_hash()),
            Err(e) => println!("scoped {seed} failed: {e:?}"),
        }
    }
}

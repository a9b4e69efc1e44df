//! The whole gate: every scenario of the Tidemark suite as its own test, run by `cargo test`.
//!
//! ```sh
//! cargo test -p tidemark-example-rust-gate --test conformance           # every scenario
//! cargo test -p tidemark-example-rust-gate --test conformance eviction  # those named *eviction*
//! ```

fn main() {
    tidemark_conformance::profiles::scratchpad::gate::run_as_tests(
        tidemark_example_rust_gate::MyScratchpadFactory,
    );
}

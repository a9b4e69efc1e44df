//! The whole scoped gate: every scoped scenario as its own test, each against a fresh S3 server,
//! bucket and PostgreSQL database the harness provides (`DATABASE_URL`, else an ephemeral
//! cluster from the local PostgreSQL binaries).
//!
//! ```sh
//! cargo test -p tidemark-example-rust-gate --test scoped_conformance           # every scenario
//! cargo test -p tidemark-example-rust-gate --test scoped_conformance traversal # those named *traversal*
//! ```

fn main() {
    tidemark_conformance::profiles::scoped::gate::run_as_tests(
        tidemark_example_rust_gate::scoped::MyScoped,
    );
}

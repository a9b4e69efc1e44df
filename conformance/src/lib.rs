//! Tidemark conformance: the engine written once (the scenario language's header and lexer,
//! the reports, the process protocol, exploration's shrinking and saved failures, interruption)
//! and the profiles that plug into it (`profiles/<name>/`: each one's contract, step
//! vocabulary, runner, model, exploration, mutants and world). The `tidemark` binary
//! (src/bin/tidemark/) is a thin command line over this library.

pub mod coverage;
pub mod declared_sql;
pub mod driver;
pub mod expectations;
pub mod explore;
pub mod html;
pub mod interrupt;
pub mod merge;
pub mod merge_run;
pub mod play;
pub mod process;
pub mod profiles;
pub mod protocol;
pub mod report;
pub mod scenario;
pub mod spec;
pub mod variants;
pub mod world;

use std::path::PathBuf;

/// Where the suite lives in this repository.
pub fn default_scenarios_dir() -> PathBuf {
    spec::repo_root().join("scenarios")
}

pub fn default_spec_path() -> PathBuf {
    spec::repo_root().join("SPEC.md")
}

//! Tidemark conformance: the contract (requests and outcomes as data), the scenario format and
//! its runner, the drivers that reach an implementation, the mutant catalogue's runner, and the
//! reports. The `tidemark` binary (src/main.rs) is a thin command line over this library.

pub mod bench;
pub mod contract;
pub mod declared_sql;
pub mod driver;
pub mod explore;
pub mod gate;
pub mod interrupt;
pub mod mutants;
pub mod names;
pub mod process;
pub mod profiles;
pub mod protocol;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod spec;
pub mod suite;
pub mod world_seeds;

use std::path::PathBuf;

/// Where the suite lives in this repository.
pub fn default_scenarios_dir() -> PathBuf {
    spec::repo_root().join("scenarios")
}

pub fn default_spec_path() -> PathBuf {
    spec::repo_root().join("SPEC.md")
}

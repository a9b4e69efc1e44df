//! The Tidemark reference implementation: both storage designs, and the database rows beside
//! them, as production code.
//!
//! - [`scratchpad`]: the filesystem scratchpad session workspace (SPEC.md part SP).
//! - `scoped`: scope-first object storage on S3 and PostgreSQL (SPEC.md part SC).
//! - [`rows`]: database rows an agent service keeps, and the reaper that sweeps them (SPEC.md
//!   part SR).
//! - [`s3_client`]: the one S3 client of the reference, the simulation and the harness.
//!
//! Time is handed in through [`clock::Clock`]; nothing here reads the wall clock.

pub mod clock;
pub mod rows;
pub mod s3_client;
pub mod scoped;
pub mod scratchpad;

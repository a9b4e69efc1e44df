//! The Tidemark reference implementation: both storage designs as production code.
//!
//! - [`scratchpad`]: the filesystem scratchpad session workspace (SPEC.md part SP).
//! - `scoped`: scope-first object storage on S3 and PostgreSQL (SPEC.md part SC).
//!
//! Time is handed in through [`clock::Clock`]; nothing here reads the wall clock.

pub mod clock;
pub mod scoped;
pub mod scratchpad;

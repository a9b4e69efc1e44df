//! The scenario language every profile shares: the header (`header.rs`: `scenario`, `profile`,
//! `rules`, `kills`, `needs`, `knob`, each error as `file:line: what was expected`) and the
//! lexer of step lines (`lex.rs`), durations (`units.rs`), and the loading of a profile's directory of files with its
//! test names and its one error type (`load.rs`). Each profile reads its own step vocabulary from the step
//! lines `header::split` hands it (the scratchpad's in `profiles/scratchpad/script/`). The
//! grammar is in scenarios/README.md.

pub mod header;
pub mod lex;
pub mod load;
pub mod units;

pub use load::{LoadErrors, ScenarioFileError};

//! In-process drivers for the reference implementation, one module per profile.

pub mod scratchpad;
pub mod scoped;

//! In-process drivers for the reference implementation, one module per profile.

pub mod scoped;
pub mod scratchpad;

//! In-process drivers for the reference implementation, one module per profile.

pub mod scoped;
pub mod scoped_gate;
pub mod scoped_process;
pub mod scratchpad;

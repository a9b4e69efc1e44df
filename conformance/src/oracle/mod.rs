//! The oracle: an executable model of SPEC.md, run beside the implementation at every step of an
//! exploration. It predicts each outcome exactly; any difference is a failure. Because it
//! predicts what must exist as well as what must be refused, it checks safety (nothing the model
//! keeps is deleted, no refused operation has an effect, no read sees another session) and
//! liveness (what the model expired is gone once a sweep runs) with one comparison.
//!
//! The model is written from SPEC.md independently of the reference implementation: it shares
//! no code with it beyond the contract types and the hash function SP-1.2 fixes.

pub mod scratchpad;

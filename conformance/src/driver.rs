//! What the harness reports when an implementation misbehaved, whatever the profile and however
//! it is reached (in process, or a program through the protocol).

use std::fmt;

/// The implementation misbehaved: not a refusal (that is an outcome of the profile's contract) but a crash, a timeout,
/// a protocol violation or an internal error. Always reported, never retried silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError(pub String);

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DriverError {}

//! How the runner reaches an implementation: a [`Driver`] per scenario, made by a
//! [`DriverFactory`]. The in-process reference implementation, an out-of-process program
//! speaking the protocol, and (later) a simulated host are all drivers.

use crate::contract::{Outcome, Request};
use crate::scenario::{Knobs, Profile};
use async_trait::async_trait;
use std::fmt;
use std::path::PathBuf;
use tidemark_reference::clock::Timestamp;

/// What the harness provides to one scenario's implementation.
#[derive(Clone, Debug)]
pub struct Environment {
    /// The scratch root; empty when the scenario runs unmounted (SP-1.3).
    pub root: PathBuf,
    /// The implementation's working directory, which must never be written to.
    pub workdir: PathBuf,
    pub knobs: Knobs,
}

/// The implementation misbehaved: not a refusal (that is an [`Outcome`]) but a crash, a timeout,
/// a protocol violation or an internal error. Always reported, never retried silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError(pub String);

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DriverError {}

#[async_trait]
pub trait Driver: Send {
    /// Performs one request at simulated time `now`. `Request::Start` (re)starts the
    /// implementation from what it persisted.
    async fn call(&mut self, now: Timestamp, request: &Request) -> Result<Outcome, DriverError>;
    /// Stops the implementation abruptly, as a crash would: no shutdown hook runs.
    async fn stop(&mut self) -> Result<(), DriverError>;
}

pub trait DriverFactory: Send + Sync {
    /// A short name for reports, e.g. `reference` or the command line of a program.
    fn name(&self) -> String;
    fn supports(&self, profile: Profile) -> bool;
    /// The optional behaviours the implementation claims (PROTOCOL.md: `sp12_digest`,
    /// `binary_content`). A scenario needing one it does not claim is skipped, with the reason.
    fn capabilities(&self) -> Vec<String> {
        Vec::new()
    }
    fn create(&self, profile: Profile, env: &Environment) -> Result<Box<dyn Driver>, DriverError>;
}

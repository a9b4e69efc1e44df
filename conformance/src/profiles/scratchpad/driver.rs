//! How the scratchpad runner reaches an implementation: a [`Driver`] per scenario, made by a
//! [`DriverFactory`]. The in-process reference and an out-of-process program speaking the
//! protocol are both drivers.

use super::contract::{Outcome, Request};
use super::scenario::{Knobs, Profile};
use crate::driver::DriverError;
use async_trait::async_trait;
use std::path::PathBuf;
use tidemark_reference::clock::Timestamp;

/// What the harness provides to one scenario's implementation.
#[derive(Clone, Debug)]
pub struct Environment {
    /// The scratch root: empty when the scenario runs unmounted (`knob root unmounted`), the
    /// path of a root that does not exist with `knob root missing` (SP-1.3).
    pub root: PathBuf,
    /// The implementation's working directory, which must never be written to.
    pub workdir: PathBuf,
    pub knobs: Knobs,
}

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
    /// The SPEC.md variants the implementation takes (PROTOCOL.md: `init_ok`'s `variants`);
    /// scenarios and the model follow them. Default: every variant at its default.
    fn variants(&self) -> crate::variants::Declared {
        crate::variants::Declared::defaults()
    }
    fn create(&self, profile: Profile, env: &Environment) -> Result<Box<dyn Driver>, DriverError>;
}

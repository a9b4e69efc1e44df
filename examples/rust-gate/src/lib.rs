//! The glue between the Tidemark contract and a Rust scratchpad: a [`DriverFactory`] that makes
//! one [`Driver`] per scenario. This is all a Rust implementation writes to be gated; the gate
//! itself is one call in `tests/conformance.rs`.
//!
//! The implementation here is the reference scratchpad standing in for yours: replace
//! `Scratchpad` with your type and map each request onto its API. Two things to keep:
//!
//! - **Time is an input.** The driver hands your implementation a clock it sets from each
//!   request's `now`; your code must read no other.
//! - **`stop` is a crash.** Drop in-memory state without any shutdown; `Request::Start` then
//!   reopens from what was persisted.

pub mod scoped;

use async_trait::async_trait;
use std::sync::Arc;
use tidemark_conformance::driver::DriverError;
use tidemark_conformance::profiles::scratchpad::contract::{Bytes, Entry, Outcome, Request};
use tidemark_conformance::profiles::scratchpad::contract::{Driver, DriverFactory, Environment};
use tidemark_conformance::profiles::scratchpad::script::Profile;
use tidemark_reference::clock::{ManualClock, Timestamp};
use tidemark_reference::scratchpad::{CallContext, ScratchError, Scratchpad, ScratchpadConfig};

/// Declares the profiles the implementation has, and makes a driver per scenario.
pub struct MyScratchpadFactory;

impl DriverFactory for MyScratchpadFactory {
    fn name(&self) -> String {
        "my-scratchpad".into()
    }

    fn supports(&self, profile: Profile) -> bool {
        // Scenarios of other profiles are reported as ignored tests, not failures.
        profile == Profile::Scratchpad
    }

    fn capabilities(&self) -> Vec<String> {
        // Optional behaviours (PROTOCOL.md): this one names directories with SP-1.2's digest and
        // stores any bytes. Claim only what is true; unclaimed ones skip their scenarios.
        vec!["sp12_digest".into(), "binary_content".into()]
    }

    fn create(&self, _profile: Profile, env: &Environment) -> Result<Box<dyn Driver>, DriverError> {
        Ok(Box::new(MyScratchpadDriver {
            config: config(env)?,
            clock: ManualClock::default(),
            pad: None,
        }))
    }
}

/// The scenario's environment as the implementation's configuration: the root (empty when the
/// scenario runs unmounted), the working directory it must not write to, and the knobs.
fn config(env: &Environment) -> Result<ScratchpadConfig, DriverError> {
    let mut cfg = ScratchpadConfig::with_root(env.root.clone());
    cfg.working_dir = env.workdir.clone();
    for (name, &value) in &env.knobs.values {
        let value =
            u64::try_from(value).map_err(|_| DriverError(format!("knob {name} is negative")))?;
        match name.as_str() {
            "session_cap_bytes" => cfg.session_cap_bytes = value,
            "requester_ceiling_bytes" => cfg.requester_ceiling_bytes = value,
            "max_file_bytes" => cfg.max_file_bytes = value,
            "thread_quiet_ms" => cfg.thread_quiet_ms = value as i64,
            "pairing_idle_ms" => cfg.pairing_idle_ms = value as i64,
            "sweep_interval_ms" => cfg.sweep_interval_ms = value as i64,
            "max_depth" => cfg.max_depth = value as usize,
            "max_path_bytes" => cfg.max_path_bytes = value as usize,
            other => return Err(DriverError(format!("my-scratchpad has no knob {other:?}"))),
        }
    }
    Ok(cfg)
}

struct MyScratchpadDriver {
    config: ScratchpadConfig,
    clock: ManualClock,
    /// `None` while stopped.
    pad: Option<Scratchpad>,
}

#[async_trait]
impl Driver for MyScratchpadDriver {
    async fn call(&mut self, now: Timestamp, request: &Request) -> Result<Outcome, DriverError> {
        self.clock.set(now);
        if let Request::Start = request {
            let mut pad = Scratchpad::open(self.config.clone(), Arc::new(self.clock.clone()))
                .map_err(|e| DriverError(format!("cannot open: {e}")))?;
            let swept = pad
                .start()
                .map_err(|e| DriverError(format!("the startup sweep failed: {e}")))?
                .collected;
            self.pad = Some(pad);
            return Ok(Outcome::Swept { swept });
        }
        let pad = self
            .pad
            .as_mut()
            .ok_or_else(|| DriverError("a request arrived before start".into()))?;
        let context =
            |c: &tidemark_conformance::profiles::scratchpad::contract::Caller| CallContext {
                requester: c.requester.clone(),
                channel: c.channel.clone(),
                thread: c.thread.clone(),
            };
        Ok(match request {
            Request::Start => unreachable!("handled above"),
            // How your implementation names a caller's directories (SP-1.2). The scenarios spell
            // names symbolically, so any function that keeps SP-1.2's rules passes.
            Request::Names { caller } => {
                let ctx = context(caller);
                Outcome::Names {
                    session: ctx.session_dir(),
                    requester: ctx.requester_dir(),
                }
            }
            Request::Tick => {
                let report = pad
                    .tick()
                    .map_err(|e| DriverError(format!("the timed sweep failed: {e}")))?;
                Outcome::Swept {
                    swept: report.map(|r| r.collected).unwrap_or_default(),
                }
            }
            Request::Write {
                caller,
                path,
                content,
            } => match pad.write(&context(caller), &path.0, &content.0) {
                Ok(w) => Outcome::Written {
                    path: w.listed_path,
                    evicted: w.evicted,
                },
                Err(e) => refused(e),
            },
            Request::Read { caller, path } => match pad.read(&context(caller), &path.0) {
                Ok(content) => Outcome::Content {
                    content: Bytes(content),
                },
                Err(e) => refused(e),
            },
            Request::List { caller, path } => {
                match pad.list(&context(caller), path.as_ref().map(|p| p.0.as_slice())) {
                    Ok(entries) => Outcome::Listing {
                        entries: entries
                            .into_iter()
                            .map(|e| Entry {
                                path: e.path,
                                size: e.size,
                            })
                            .collect(),
                    },
                    Err(e) => refused(e),
                }
            }
            Request::Remove { caller, path } => match pad.remove(&context(caller), &path.0) {
                Ok(()) => Outcome::Removed,
                Err(e) => refused(e),
            },
        })
    }

    async fn stop(&mut self) -> Result<(), DriverError> {
        self.pad = None;
        Ok(())
    }
}

/// A refusal is an answer, not an error: its reason code is what scenarios check.
fn refused(e: ScratchError) -> Outcome {
    Outcome::Refused {
        reason: e.refusal.code().to_string(),
        message: e.message,
    }
}

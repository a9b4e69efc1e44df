//! The reference scratchpad (`reference-impl/src/scratchpad/`), driven in process. Time reaches
//! it through a clock the driver sets from each request's timestamp, exactly as an
//! out-of-process implementation receives it.

use crate::driver::DriverError;
use crate::profiles::scratchpad::contract::{Bytes, Entry, Outcome, Request};
use crate::profiles::scratchpad::contract::{Driver, DriverFactory, Environment};
use crate::profiles::scratchpad::script::parse::context_of;
use crate::profiles::scratchpad::script::Profile;
use crate::variants::Declared;
use async_trait::async_trait;
use std::sync::Arc;
use tidemark_reference::clock::{ManualClock, Timestamp};
use tidemark_reference::scratchpad::{
    names_for, Alternative, ScratchError, Scratchpad, ScratchpadConfig, ScratchpadMutant,
};

/// Makes reference scratchpads, optionally with one mutant switched on, taking the variants
/// `variants` declares (the defaults unless set: `tidemark run --variant`).
#[derive(Clone, Debug, Default)]
pub struct ReferenceScratchpad {
    pub mutant: Option<ScratchpadMutant>,
    pub variants: Declared,
}

impl DriverFactory for ReferenceScratchpad {
    fn name(&self) -> String {
        let mut name = match self.mutant {
            Some(m) => format!("reference (mutant {})", m.id()),
            None => "reference".into(),
        };
        if self.variants != Declared::defaults() {
            name.push_str(&format!(" taking {}", self.variants));
        }
        name
    }
    fn variants(&self) -> Declared {
        self.variants.clone()
    }
    fn supports(&self, profile: Profile) -> bool {
        profile == Profile::Scratchpad
    }
    fn capabilities(&self) -> Vec<String> {
        // A thread named by its id alone is not SP-1.2's recommended digest.
        if super::variants::alternatives(&self.variants).contains(&Alternative::ThreadsGlobal) {
            vec!["binary_content".into()]
        } else {
            vec!["sp12_digest".into(), "binary_content".into()]
        }
    }
    fn create(&self, _profile: Profile, env: &Environment) -> Result<Box<dyn Driver>, DriverError> {
        let mut cfg = config_for(env, self.mutant)?;
        cfg.alternatives = super::variants::alternatives(&self.variants);
        Ok(Box::new(ScratchpadDriver {
            cfg,
            clock: ManualClock::default(),
            pad: None,
        }))
    }
}

/// Builds the reference configuration from the harness's environment and knobs.
pub fn config_for(
    env: &Environment,
    mutant: Option<ScratchpadMutant>,
) -> Result<ScratchpadConfig, DriverError> {
    let root = if env.knobs.mounted {
        env.root.clone()
    } else {
        Default::default()
    };
    let mut cfg = ScratchpadConfig::with_root(root);
    cfg.working_dir = env.workdir.clone();
    cfg.mutant = mutant;
    for (name, &v) in &env.knobs.values {
        match name.as_str() {
            "session_cap_bytes" => cfg.session_cap_bytes = v as u64,
            "requester_ceiling_bytes" => cfg.requester_ceiling_bytes = v as u64,
            "max_file_bytes" => cfg.max_file_bytes = v as u64,
            "thread_quiet_ms" => cfg.thread_quiet_ms = v,
            "pairing_idle_ms" => cfg.pairing_idle_ms = v,
            "sweep_interval_ms" => cfg.sweep_interval_ms = v,
            "max_depth" => cfg.max_depth = v as usize,
            "max_path_bytes" => cfg.max_path_bytes = v as usize,
            other => {
                return Err(DriverError(format!(
                    "the reference scratchpad has no knob {other:?}"
                )))
            }
        }
    }
    Ok(cfg)
}

struct ScratchpadDriver {
    cfg: ScratchpadConfig,
    clock: ManualClock,
    pad: Option<Scratchpad>,
}

/// Performs one caller request (write, read, list, remove) on a scratchpad and renders its
/// outcome in the contract's terms. Shared by the in-process driver and the turmoil world's host.
pub fn apply_call(pad: &mut Scratchpad, request: &Request) -> Outcome {
    match request {
        Request::Write {
            caller,
            path,
            content,
        } => match pad.write(&context_of(caller), &path.0, &content.0) {
            Ok(w) => Outcome::Written {
                path: w.listed_path,
                evicted: w.evicted,
            },
            Err(e) => refused(e),
        },
        Request::Read { caller, path } => match pad.read(&context_of(caller), &path.0) {
            Ok(c) => Outcome::Content { content: Bytes(c) },
            Err(e) => refused(e),
        },
        Request::List { caller, path } => {
            match pad.list(&context_of(caller), path.as_ref().map(|p| p.0.as_slice())) {
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
        Request::Remove { caller, path } => match pad.remove(&context_of(caller), &path.0) {
            Ok(()) => Outcome::Removed,
            Err(e) => refused(e),
        },
        Request::Names { caller } => names_of(pad.config(), caller),
        Request::Start | Request::Tick => {
            panic!("apply_call takes caller requests; start and tick drive the sweeper")
        }
    }
}

/// The reference's directory names for a caller: SP-1.2's recommended digest (a thread by its id
/// alone when it takes `thread_identity=global`).
fn names_of(
    cfg: &ScratchpadConfig,
    caller: &crate::profiles::scratchpad::contract::Caller,
) -> Outcome {
    let (session, requester) = names_for(cfg, &context_of(caller));
    Outcome::Names { session, requester }
}

fn refused(e: ScratchError) -> Outcome {
    Outcome::Refused {
        reason: e.refusal.code().to_string(),
        message: e.message,
    }
}

#[async_trait]
impl Driver for ScratchpadDriver {
    async fn call(&mut self, now: Timestamp, request: &Request) -> Result<Outcome, DriverError> {
        self.clock.set(now);
        if let Request::Names { caller } = request {
            return Ok(names_of(&self.cfg, caller));
        }
        if let Request::Start = request {
            let mut pad = Scratchpad::open(self.cfg.clone(), Arc::new(self.clock.clone()))
                .map_err(|e| DriverError(format!("the scratchpad did not open: {e}")))?;
            let report = pad
                .start()
                .map_err(|e| DriverError(format!("the startup sweep failed: {e}")))?;
            self.pad = Some(pad);
            return Ok(Outcome::Swept {
                swept: report.collected,
            });
        }
        let pad = self
            .pad
            .as_mut()
            .ok_or_else(|| DriverError("a request arrived before start".into()))?;
        Ok(match request {
            Request::Start => unreachable!("handled above"),
            Request::Tick => match pad.tick() {
                Ok(r) => Outcome::Swept {
                    swept: r.map(|r| r.collected).unwrap_or_default(),
                },
                Err(e) => return Err(DriverError(format!("the timed sweep failed: {e}"))),
            },
            call => apply_call(pad, call),
        })
    }

    async fn stop(&mut self) -> Result<(), DriverError> {
        // A crash: the in-memory counts go; only the disk remains.
        self.pad = None;
        Ok(())
    }
}

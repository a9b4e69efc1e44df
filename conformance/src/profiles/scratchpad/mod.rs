//! The reference scratchpad, driven in-process. Time reaches it through a clock the driver sets
//! from each request's timestamp, exactly as an out-of-process implementation receives it.

pub mod bench;
pub mod contract;
pub mod driver;
pub mod explore;
pub mod gate;
pub mod mutants;
pub mod names;
pub mod oracle;
pub mod process;
pub mod runner;
pub mod scenario;
pub mod suite;
pub mod variants;
pub mod world;

use crate::driver::DriverError;
use crate::profiles::scratchpad::contract::{Bytes, Entry, Outcome, Request};
use crate::profiles::scratchpad::driver::{Driver, DriverFactory, Environment};
use crate::profiles::scratchpad::scenario::parse::context_of;
use crate::profiles::scratchpad::scenario::Profile;
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
        if variants::alternatives(&self.variants).contains(&Alternative::ThreadsGlobal) {
            vec!["binary_content".into()]
        } else {
            vec!["sp12_digest".into(), "binary_content".into()]
        }
    }
    fn create(&self, _profile: Profile, env: &Environment) -> Result<Box<dyn Driver>, DriverError> {
        let mut cfg = config_for(env, self.mutant)?;
        cfg.alternatives = variants::alternatives(&self.variants);
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

/// The scratchpad profile (SPEC part SP) behind the profile interface.
pub struct ScratchpadProfile;

#[async_trait(?Send)]
impl super::Profile for ScratchpadProfile {
    fn name(&self) -> &'static str {
        "scratchpad"
    }

    fn vocabulary(&self) -> &'static crate::scenario::header::HeaderVocabulary {
        &crate::profiles::scratchpad::scenario::parse::VOCABULARY
    }

    fn load_errors(
        &self,
        scenarios: &std::path::Path,
        spec: &std::path::Path,
    ) -> Vec<crate::scenario::ScenarioFileError> {
        crate::profiles::scratchpad::suite::load(scenarios, spec)
            .err()
            .map(|e| e.0)
            .unwrap_or_default()
    }

    async fn run(
        &self,
        request: &super::RunRequest<'_>,
        program: Option<&crate::process::ProcessFactory>,
    ) -> Result<Vec<crate::report::CaseReport>, String> {
        let all = crate::profiles::scratchpad::suite::load(request.scenarios, request.spec)
            .map_err(|e| e.to_string())?;
        let selection = crate::profiles::scratchpad::gate::Selection {
            profiles: vec![Profile::Scratchpad],
            only: request.only.to_vec(),
        };
        let selected = selection.apply(&all)?;
        let replay = request.replay_prefix.to_string();
        let report = match program {
            Some(factory) => {
                crate::profiles::scratchpad::gate::check_concurrently(
                    &selected,
                    factory,
                    replay,
                    request.jobs,
                )
                .await
            }
            None => {
                crate::profiles::scratchpad::gate::check_concurrently(
                    &selected,
                    &ReferenceScratchpad {
                        mutant: None,
                        variants: request.variants.clone(),
                    },
                    replay,
                    request.jobs,
                )
                .await
            }
        };
        Ok(report.cases)
    }

    async fn mutants(
        &self,
        request: &super::MutantsRequest<'_>,
    ) -> Result<super::MutantRows, String> {
        let all = crate::profiles::scratchpad::suite::load(request.scenarios, request.spec)
            .map_err(|e| e.to_string())?;
        let selected = crate::profiles::scratchpad::suite::select(&all, &[Profile::Scratchpad]);
        let results = crate::profiles::scratchpad::mutants::run_scratchpad_mutants(
            &selected,
            request.only,
            !request.all_killers,
        )
        .await;
        Ok(super::MutantRows {
            rows: crate::profiles::scratchpad::mutants::rows(&results),
            killed: results.iter().filter(|r| r.killed()).count(),
            survived: results.iter().filter(|r| !r.killed()).count(),
        })
    }

    fn explore(&self, request: &super::ExploreRequest) -> Result<bool, String> {
        if request.tier.is_some() {
            return Err(super::unsupported(self.name(), "--tier"));
        }
        if request.differential {
            return Err(super::unsupported(self.name(), "--differential"));
        }
        crate::profiles::scratchpad::explore::cli::explore(request)
    }

    fn owns_fixture(&self, path: &std::path::Path) -> bool {
        crate::profiles::scratchpad::explore::fixture::Fixture::load(path).is_ok()
    }

    fn replay(
        &self,
        fixture: Option<&std::path::Path>,
        seed: Option<u64>,
        mutant: Option<&str>,
        html: Option<&std::path::Path>,
    ) -> Result<crate::explore::cli::ReplayOutcome, String> {
        crate::profiles::scratchpad::explore::cli::replay(
            fixture,
            seed,
            &mutant.map(str::to_string),
            html,
        )
    }

    fn world(&self, request: &super::WorldRequest) -> Result<bool, String> {
        world::WORLD.command(request)
    }

    fn bench(&self, request: &super::BenchRequest) -> Result<String, String> {
        Ok(bench::run(request.seeds))
    }
}

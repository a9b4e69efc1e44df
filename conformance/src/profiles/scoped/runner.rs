//! Playing a parsed scoped scenario ([`Script`]) step by step against the reference, on the
//! real tier or the simulation tier ([`Backend`]), comparing each outcome with its expectation:
//! the scoped profile's runner, apart from its vocabulary (`script/`). The loop over steps is
//! the engine's (`crate::play`); `ScopedPlayer` performs one step.

use std::path::PathBuf;

use super::contract::ScopedOutcome;
use super::reference::ScopedDriver;
use super::script::bindings::Bindings;
use super::script::{Action, Script, Step};
use crate::play::{Failure, Located, Mismatch, StepPlayer};
use crate::variants::Declared;
use tidemark_reference::clock::Timestamp;

/// Runs a scenario from the pinned epoch on its own S3 server (so its faults are its own) and
/// its own database on `pg`.
pub async fn run(
    pg: std::sync::Arc<tidemark_sim::real_tier::PgProvider>,
    script: &Script,
    mutant: Option<tidemark_reference::scoped::ScopedMutant>,
) -> Result<(), Failure> {
    run_on(pg, script, mutant, Backend::Disk).await
}

/// Which stores serve a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The disk S3 store over a temporary directory and PostgreSQL: the real tier.
    Disk,
    /// The in-memory S3 and PostgreSQL, for the differential check of the in-memory S3.
    Memory,
    /// The simulation tier's stores: the in-memory S3 and the in-memory metadata store. Needs
    /// no PostgreSQL.
    Sim,
}

/// [`run`] on a chosen backend.
pub async fn run_on(
    pg: std::sync::Arc<tidemark_sim::real_tier::PgProvider>,
    script: &Script,
    mutant: Option<tidemark_reference::scoped::ScopedMutant>,
    backend: Backend,
) -> Result<(), Failure> {
    run_recorded(Some(pg), script, mutant, backend).await.result
}

/// What one run of a scenario observed: every step's outcome, in order, and the first step
/// whose outcome did not match its expectation (the run stops there).
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `(line, outcome)` for each operation step run.
    pub outcomes: Vec<(usize, ScopedOutcome)>,
    pub result: Result<(), Failure>,
}

/// Runs a scenario from the pinned epoch on `backend` and records every outcome. `pg` is
/// needed by every backend but [`Backend::Sim`].
pub async fn run_recorded(
    pg: Option<std::sync::Arc<tidemark_sim::real_tier::PgProvider>>,
    script: &Script,
    mutant: Option<tidemark_reference::scoped::ScopedMutant>,
    backend: Backend,
) -> Recorded {
    run_recorded_taking(pg, script, mutant, &Declared::defaults(), backend).await
}

/// [`run_recorded`] with the reference taking the SPEC.md variants `variants` declares, and
/// the scenario played as an implementation declaring them plays it (its guarded steps kept
/// or dropped). A scenario whose `variant:` line does not hold is the caller's to skip.
pub async fn run_recorded_taking(
    pg: Option<std::sync::Arc<tidemark_sim::real_tier::PgProvider>>,
    script: &Script,
    mutant: Option<tidemark_reference::scoped::ScopedMutant>,
    variants: &Declared,
    backend: Backend,
) -> Recorded {
    run_recorded_declaring(pg, script, mutant, variants, variants, backend).await
}

/// [`run_recorded_taking`] with the reference taking `takes` while the scenario is played as
/// for an implementation declaring `declares`: what an implementation whose declaration is
/// wrong looks like to the suite.
pub async fn run_recorded_declaring(
    pg: Option<std::sync::Arc<tidemark_sim::real_tier::PgProvider>>,
    script: &Script,
    mutant: Option<tidemark_reference::scoped::ScopedMutant>,
    takes: &Declared,
    declares: &Declared,
    backend: Backend,
) -> Recorded {
    let mut outcomes = Vec::new();
    let played = script.as_played_by(declares);
    let result = run_steps(pg, &played, mutant, takes, backend, &mut outcomes).await;
    Recorded { outcomes, result }
}

async fn run_steps(
    pg: Option<std::sync::Arc<tidemark_sim::real_tier::PgProvider>>,
    script: &Script,
    mutant: Option<tidemark_reference::scoped::ScopedMutant>,
    variants: &Declared,
    backend: Backend,
    outcomes: &mut Vec<(usize, ScopedOutcome)>,
) -> Result<(), Failure> {
    let fail = |line: usize, step: &str, expected: String, actual: String| Failure {
        line,
        step: step.to_string(),
        expected,
        actual,
    };
    let name = script
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let seed = script.fault_seed();
    let started = match backend {
        Backend::Sim => super::ScopedDriver::start_sim(mutant, variants, &script.knobs, seed).await,
        Backend::Disk | Backend::Memory => {
            let Some(pg) = pg else {
                return Err(fail(
                    0,
                    "start",
                    "a PostgreSQL".into(),
                    format!("backend {backend:?} needs PostgreSQL and none was given"),
                ));
            };
            let tier = match backend {
                Backend::Disk => tidemark_sim::real_tier::RealTier::with_postgres(pg, seed).await,
                _ => tidemark_sim::real_tier::RealTier::with_postgres_memory(pg, seed).await,
            }
            .map_err(|e| fail(0, "start", "a running S3 server".into(), e.to_string()))?;
            super::ScopedDriver::start(
                std::sync::Arc::new(tier),
                &name,
                mutant,
                variants,
                &script.knobs,
            )
            .await
        }
    };
    let mut driver =
        started.map_err(|e| fail(0, "start", "a running store".into(), e.to_string()))?;
    let result = play_steps(&mut driver, script, outcomes).await;
    let cleanup = driver.finish().await;
    result?;
    cleanup.map_err(|e| {
        fail(
            0,
            "finish",
            "the scenario's database dropped".into(),
            e.to_string(),
        )
    })
}

async fn play_steps(
    driver: &mut ScopedDriver,
    script: &Script,
    outcomes: &mut Vec<(usize, ScopedOutcome)>,
) -> Result<(), Failure> {
    let mut player = ScopedPlayer {
        driver,
        now: tidemark_sim::clock::EPOCH,
        outcomes,
        bindings: Bindings::default(),
    };
    crate::play::play(&mut player, &script.steps).await
}

impl Located for Step {
    fn line(&self) -> usize {
        self.line
    }
    fn text(&self) -> &str {
        &self.text
    }
}

/// One scoped scenario's steps against its driver: `advance` moves the clock handed to every
/// operation; an operation's outcome is recorded, then compared with the step's expectation.
/// A path the scenario named after the implementation chose it is resolved first.
struct ScopedPlayer<'a> {
    driver: &'a mut ScopedDriver,
    now: Timestamp,
    outcomes: &'a mut Vec<(usize, ScopedOutcome)>,
    bindings: Bindings,
}

impl StepPlayer for ScopedPlayer<'_> {
    type Step = Step;
    type Outcome = ScopedOutcome;

    async fn perform(&mut self, step: &Step) -> Result<Option<ScopedOutcome>, Mismatch> {
        let step = &self.bindings.resolve(step);
        match &step.action {
            Action::Advance(ms) => {
                self.now = self.now.plus_ms(*ms);
                Ok(None)
            }
            Action::Op(op) => self
                .driver
                .call(self.now, op)
                .await
                .map(Some)
                .map_err(|e| Mismatch::new(format!("{:?}", step.expect), e)),
        }
    }

    fn observe(&mut self, step: &Step, outcome: &ScopedOutcome) {
        self.outcomes.push((step.line, outcome.clone()));
        self.bindings.observe(step, outcome);
    }

    fn compare(&self, step: &Step, outcome: &ScopedOutcome) -> Result<(), Mismatch> {
        let step = &self.bindings.resolve(step);
        if step.expect.matches(outcome) {
            Ok(())
        } else {
            Err(Mismatch::new(
                format!("{:?}", step.expect),
                format!("{outcome:?}"),
            ))
        }
    }
}

/// One scenario's result in a suite run.
#[derive(Clone, Debug)]
pub struct ScriptResult {
    pub test_name: String,
    pub name: String,
    pub file: PathBuf,
    pub failure: Option<Failure>,
}

/// Runs every scenario against the reference (or one mutant of it), in order.
pub async fn run_suite(
    pg: std::sync::Arc<tidemark_sim::real_tier::PgProvider>,
    scripts: &[Script],
    mutant: Option<tidemark_reference::scoped::ScopedMutant>,
) -> Vec<ScriptResult> {
    let mut out = Vec::with_capacity(scripts.len());
    for s in scripts {
        out.push(ScriptResult {
            test_name: s.test_name(),
            name: s.name.clone(),
            file: s.file.clone(),
            failure: run(pg.clone(), s, mutant).await.err(),
        });
    }
    out
}

/// For each scoped mutant, the first scenario naming it in `kills:` that fails under it
/// (`None`: the mutant survives, or no scenario names it).
pub async fn mutant_matrix(
    pg: std::sync::Arc<tidemark_sim::real_tier::PgProvider>,
    scripts: &[Script],
) -> Vec<(tidemark_reference::scoped::ScopedMutant, Option<String>)> {
    mutant_matrix_on(Some(pg), scripts, Backend::Disk).await
}

/// [`mutant_matrix`] on a chosen backend (`pg` may be `None` for [`Backend::Sim`]).
pub async fn mutant_matrix_on(
    pg: Option<std::sync::Arc<tidemark_sim::real_tier::PgProvider>>,
    scripts: &[Script],
    backend: Backend,
) -> Vec<(tidemark_reference::scoped::ScopedMutant, Option<String>)> {
    let mut out = Vec::new();
    for m in tidemark_reference::scoped::ScopedMutant::ALL {
        let mut killed_by = None;
        for s in scripts
            .iter()
            .filter(|s| s.kills.iter().any(|k| k == m.id()))
        {
            if run_recorded(pg.clone(), s, Some(m), backend)
                .await
                .result
                .is_err()
            {
                killed_by = Some(s.test_name());
                break;
            }
        }
        out.push((m, killed_by));
    }
    out
}

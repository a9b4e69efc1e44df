//! Random operation sequences against the scoped reference, checked step by step against a
//! small executable model of SPEC part SC: activity, waits, the idle TTL, session and agent
//! deletion, agent-scope files and their access setting, listings, extracted text, skills that
//! are never swept, refusals (traversal, a missing scope, the read-only workspace), and the
//! sweep under faults: per-key DeleteObjects failures, a crash after deleting, a write racing it.
//!
//! A sequence is data ([`ModelOp`], generated from one seed by [`generate`]), so it can be
//! saved, replayed and shrunk. After every sweep the bucket is compared with the model, session
//! by session, agent by agent and skill by skill, and the deletion ledger is checked: every
//! obligation met, met once, recorded once, and nothing left under a recorded prefix.
//! S3 is the in-memory store over HTTP (fast, deterministic LastModified); PostgreSQL is real.
//!
//! Used by `conformance/tests/integration/real_tier_scoped_model.rs` and by `tidemark explore --profile scoped`.
//!
//! The parts, each using the ones before it and none after: the operations as data in `ops.rs`
//! (people's requests' URL spellings in `people_urls.rs`, hostile spellings in `hostile.rs`), the
//! model's state in `state.rs`, outcomes in `outcome.rs`; one module per part of the workload,
//! each with its operations' draw, description and performance: people's requests over HTTP
//! (SPEC part SF) in `people_http.rs`, part SL's policies in `policies.rs`, sessions' closes in
//! `close.rs`, workspaces' retention in `workspace_retention.rs`, erasures in `erasure.rs`, and
//! so on; then the seeded mix in `draw.rs`, an operation's line in `display.rs`, and the runner:
//! this module (a sequence started and run), `perform.rs` (one operation), `guest.rs` (a guest's
//! file calls) and `sweeps.rs` (a sweep and the bucket and ledger checked after it).

mod close;
mod display;
mod draw;
mod emptied_count;
mod erasure;
#[cfg(test)]
mod generator7_tests;
mod guest;
pub mod hostile;
pub mod ops;
mod outcome;
mod overflow_again;
mod people;
pub mod people_http;
pub mod people_urls;
mod perform;
mod policies;
mod state;
mod sweep_requests;
mod sweeps;
mod two_sweeps;
pub mod workspace_retention;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tidemark_reference::clock::{Clock, ManualClock};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, PostgresMetadata};
use tidemark_reference::scoped::{
    ScopeSettings, ScopedConfig, ScopedMutant, ScopedStore, TurnSpace,
};

use crate::variants::Declared;
pub use draw::generate;
use ops::{session, AGENTS, SESSIONS, SETUP_SESSIONS, SKILL_FILES, WORKSPACE};
pub use ops::{IdStyle, ModelOp, GENERATOR};
pub use outcome::{trace_hash, Divergence, SequenceError, SequenceRun};
use state::{Model, SessionModel};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::{FaultPlan, MemoryHandle, PgProvider, S3Server};
use workspace_retention::TTL_DAYS;

/// Steps per sequence unless a caller says otherwise.
pub const DEFAULT_STEPS: usize = 80;

const BUCKET: &str = "model";

/// Where a sequence keeps its metadata. S3 is the in-memory store over HTTP either way.
#[derive(Clone, Copy)]
pub enum Tier<'a> {
    /// A fresh database on this PostgreSQL for each sequence: the real tier.
    Postgres(&'a PgProvider),
    /// The in-memory metadata store with PostgreSQL's semantics: the simulation tier, trusted
    /// because sequences give the same traces on both (`explore --differential`).
    Memory,
}

impl Tier<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            Tier::Postgres(_) => "postgres",
            Tier::Memory => "memory",
        }
    }
}

/// Runs the sequence of `seed` (`steps` operations): [`run_ops`] of [`generate`].
pub async fn run_sequence(
    tier: Tier<'_>,
    seed: u64,
    steps: usize,
    mutant: Option<ScopedMutant>,
    faults: Option<FaultPlan>,
) -> Result<SequenceRun, SequenceError> {
    run_ops(tier, seed, &generate(seed, steps), mutant, faults).await
}

/// Runs `ops` against a store with its own metadata on `tier` and its own in-memory S3 (its
/// fault generator seeded by `seed`), `mutant` switched on, `faults` applied after setup,
/// with UUID identifiers.
pub async fn run_ops(
    tier: Tier<'_>,
    seed: u64,
    ops: &[ModelOp],
    mutant: Option<ScopedMutant>,
    faults: Option<FaultPlan>,
) -> Result<SequenceRun, SequenceError> {
    run_ops_with(tier, seed, ops, mutant, faults, GENERATOR).await
}

/// [`run_ops`] as a given generator version ran its sequences (a saved fixture's): its
/// identifiers ([`IdStyle`]) and its clock ([`ops::ticks`]).
pub async fn run_ops_with(
    tier: Tier<'_>,
    seed: u64,
    ops: &[ModelOp],
    mutant: Option<ScopedMutant>,
    faults: Option<FaultPlan>,
    generator: u32,
) -> Result<SequenceRun, SequenceError> {
    run_ops_taking(
        tier,
        seed,
        ops,
        mutant,
        faults,
        generator,
        &Declared::defaults(),
    )
    .await
}

/// [`run_ops_with`], the reference taking the SPEC.md variants `variants` declares and the
/// model following them (`tidemark explore --profile scoped --variant`).
pub async fn run_ops_taking(
    tier: Tier<'_>,
    seed: u64,
    ops: &[ModelOp],
    mutant: Option<ScopedMutant>,
    faults: Option<FaultPlan>,
    generator: u32,
    variants: &Declared,
) -> Result<SequenceRun, SequenceError> {
    let setup = |e: String| SequenceError::Setup(e);
    let clock = ManualClock::starting_at(EPOCH);
    let (server, mem): (S3Server, MemoryHandle) =
        S3Server::start_memory(Arc::new(clock.clone()), seed)
            .await
            .map_err(|e| setup(e.to_string()))?;
    let pg = match tier {
        Tier::Postgres(pg) => pg,
        Tier::Memory => {
            let meta: Arc<dyn Metadata> = Arc::new(MemoryMetadata::new());
            let mut runner = Runner::start(
                &server, mem, meta, clock, mutant, faults, generator, variants,
            )
            .await?;
            return runner.run(seed, ops).await;
        }
    };
    let db = pg
        .scoped_database(&format!("model{seed}"))
        .await
        .map_err(|e| setup(e.to_string()))?;
    let outcome = async {
        let meta: Arc<dyn Metadata> = Arc::new(PostgresMetadata::new(db.pool.clone()));
        let mut runner = Runner::start(
            &server, mem, meta, clock, mutant, faults, generator, variants,
        )
        .await?;
        runner.run(seed, ops).await
    }
    .await;
    let dropped = pg.drop_database(db).await;
    let run = outcome?;
    dropped.map_err(|e| setup(e.to_string()))?;
    Ok(run)
}

/// Why a step stopped the sequence.
enum Stop {
    /// (expected, actual)
    Diverged(String, String),
    Harness(String),
}

type Step = Result<(), Stop>;

fn diverged<T>(expected: impl Into<String>, actual: impl Into<String>) -> Result<T, Stop> {
    Err(Stop::Diverged(expected.into(), actual.into()))
}

fn harness(e: impl fmt::Display) -> Stop {
    Stop::Harness(e.to_string())
}

struct Runner<'a> {
    server: &'a S3Server,
    mem: MemoryHandle,
    meta: Arc<dyn Metadata>,
    clock: ManualClock,
    client: tidemark_reference::s3_client::S3Client,
    config: ScopedConfig,
    store: ScopedStore,
    turns: Vec<TurnSpace>,
    skill_sha: String,
    model: Model,
    faults: Option<FaultPlan>,
    log: Vec<String>,
    swept_files: usize,
    ids: IdStyle,
    /// Each operation takes a second of the clock ([`ops::ticks`]).
    ticks: bool,
    /// The SPEC.md variants the reference takes, which the model follows.
    variants: Declared,
    /// The people's files API and its client, from the first person's request over HTTP.
    people_http: Option<people_http::PeopleHttp>,
    /// A plain sweep's DeleteObjects are counted ([`sweep_requests::counts_requests`]).
    counts_requests: bool,
}

impl<'a> Runner<'a> {
    #[allow(clippy::too_many_arguments)] // Each is one thing a sequence is run with.
    async fn start(
        server: &'a S3Server,
        mem: MemoryHandle,
        meta: Arc<dyn Metadata>,
        clock: ManualClock,
        mutant: Option<ScopedMutant>,
        faults: Option<FaultPlan>,
        generator: u32,
        variants: &Declared,
    ) -> Result<Runner<'a>, SequenceError> {
        let ids = IdStyle::of_version(generator)
            .ok_or_else(|| SequenceError::Setup(format!("no generator version {generator}")))?;
        let ticks = ops::ticks(generator);
        let ws = ids.id(WORKSPACE);
        let setup = |e: String| SequenceError::Setup(e);
        let client = server.client();
        client
            .create_bucket(BUCKET)
            .await
            .map_err(|e| setup(format!("{e:?}")))?;
        let mut config = ScopedConfig::new(BUCKET);
        config.session_file_ttl_days = TTL_DAYS as u32;
        config.mutant = mutant;
        config.max_upload_bytes = people_http::MAX_UPLOAD_BYTES;
        config.alternatives = crate::profiles::scoped::variants::alternatives(variants);
        config.tool_output_limit_bytes = policies::TOOL_OUTPUT_LIMIT_BYTES;
        // Generator 7's knobs; older sequences hold no close and put no configuration, so
        // they run as they ran.
        config.close_grace_days = close::CLOSE_GRACE_DAYS;
        config.lifecycle_rule_limit = workspace_retention::RULE_LIMIT;
        let store = ScopedStore::with_metadata(
            client.clone(),
            meta.clone(),
            config.clone(),
            Arc::new(clock.clone()),
        )
        .await
        .map_err(|e| setup(e.to_string()))?;
        store
            .create_workspace(&ws, ScopeSettings::default())
            .await
            .map_err(|e| setup(e.to_string()))?;
        for a in AGENTS {
            store
                .create_agent(&ws, &ids.id(a), ScopeSettings::default())
                .await
                .map_err(|e| setup(e.to_string()))?;
        }
        let skill: BTreeMap<String, Vec<u8>> = SKILL_FILES
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
            .collect();
        let skill_sha = store
            .publish_skill_version(&ws, &skill)
            .await
            .map_err(|e| setup(e.to_string()))?;
        let turns: Vec<TurnSpace> = SESSIONS
            .iter()
            .map(|(a, s)| {
                TurnSpace::new(&ws, &ids.id(a), &ids.session_id(a, s))
                    .expect("fixed valid names")
                    .with_skill("kit", &skill_sha)
            })
            .collect();
        let mut model = Model {
            sessions: vec![SessionModel::default(); SESSIONS.len()],
            agent_files: BTreeMap::new(),
            agent_access: BTreeMap::new(),
            deleted_agents: BTreeSet::new(),
            emptied: BTreeSet::new(),
            beside_deleted: false,
            policy: state::PolicyModel::default(),
            retention: workspace_retention::RetentionModel::default(),
            last_overflow: BTreeMap::new(),
            erasure: erasure::ErasureModel::default(),
        };
        for (i, t) in turns.iter().enumerate().take(SETUP_SESSIONS) {
            if ticks {
                clock.advance_ms(policies::TICK_MS);
            }
            store
                .create_session(t)
                .await
                .map_err(|e| setup(e.to_string()))?;
            model.sessions[i].last_activity = clock.now().0;
            model.sessions[i].created = true;
        }
        // Faults from here on: S3 requests fail at random, DeleteObjects keys fail at random.
        if let Some(plan) = &faults {
            server.faults().set_plan(plan.clone());
        }
        Ok(Runner {
            server,
            mem,
            meta,
            clock,
            client,
            config,
            store,
            turns,
            skill_sha,
            model,
            faults,
            log: Vec::new(),
            swept_files: 0,
            ids,
            ticks,
            variants: variants.clone(),
            people_http: None,
            counts_requests: sweep_requests::counts_requests(generator),
        })
    }

    async fn run(&mut self, seed: u64, ops: &[ModelOp]) -> Result<SequenceRun, SequenceError> {
        for (step, op) in ops.iter().enumerate() {
            self.log.push(op.to_string());
            match self.apply(step, op).await {
                Ok(()) => {}
                Err(Stop::Diverged(expected, actual)) => {
                    let now = self.clock.now().0;
                    return Err(SequenceError::Diverged(Divergence {
                        seed,
                        step,
                        ops: self.log.clone(),
                        expected,
                        actual,
                        model_state: crate::html::bounded_lines(
                            self.model.state_lines(Some(op), now),
                        ),
                    }));
                }
                Err(Stop::Harness(e)) => {
                    return Err(SequenceError::Setup(format!("step {step} ({op}): {e}")))
                }
            }
        }
        Ok(SequenceRun {
            steps: ops.len(),
            swept_files: self.swept_files,
            simulated_ms: self.clock.now().0 - EPOCH.0,
            trace: std::mem::take(&mut self.log),
        })
    }

    fn faulty(&self) -> bool {
        self.faults.is_some()
    }

    /// Whether the reference takes `variant=choice` (SPEC.md's variants), which the model
    /// follows.
    fn takes(&self, variant: &str, choice: &str) -> bool {
        crate::profiles::scoped::variants::takes(&self.variants, variant, choice)
    }

    /// The reason a malformed path in session `i` is refused with: its shape's, unless the
    /// session is gone and the reference looks the session up first (SC-3.5's variant
    /// `path_check_order=session_first`).
    fn malformed_reason(&self, i: usize, shape: &'static str) -> &'static str {
        if self.model.sessions[i].deleted && self.takes("path_check_order", "session_first") {
            "unknown_entity"
        } else {
            shape
        }
    }

    fn note(&mut self, what: impl Into<String>) {
        self.log.push(format!("  ({})", what.into()));
    }

    /// A store as a new process with `config` would open it.
    async fn open(&self, config: ScopedConfig) -> Result<ScopedStore, Stop> {
        ScopedStore::with_metadata(
            self.client.clone(),
            self.meta.clone(),
            config,
            Arc::new(self.clock.clone()),
        )
        .await
        .map_err(harness)
    }

    async fn apply(&mut self, step: usize, op: &ModelOp) -> Step {
        if self.ticks {
            self.clock.advance_ms(policies::TICK_MS);
        }
        let now = self.clock.now().0;
        // Boxed: the operations' future is large, and a debug build's test thread (2 MB of
        // stack) would hold it twice, once per layer.
        Box::pin(self.perform(step, op, now)).await
    }

    /// Generator 7's operations, each future built here and boxed: built inline in `perform`,
    /// every one of them took its own slot in `perform`'s poll frame in a debug build (boxing at
    /// the call site does not spare the frame the future before it moves), and a test thread's
    /// 2 MB of stack overflowed on PostgreSQL with all of them in. Here the frame is popped
    /// before the future is polled.
    #[inline(never)]
    fn generator7<'s>(
        &'s mut self,
        step: usize,
        op: &'s ModelOp,
        now: i64,
    ) -> Pin<Box<dyn Future<Output = Step> + 's>> {
        match *op {
            ModelOp::Close {
                session: s,
                again_after_hours,
            } => Box::pin(self.close(session(s), again_after_hours, now)),
            ModelOp::SetRetention { .. } | ModelOp::ApplyLifecycle { .. } => {
                Box::pin(self.workspace_retention(op))
            }
            ModelOp::OverflowAgain { session: s, edit } => {
                Box::pin(self.overflow_again(session(s), edit, step, now))
            }
            // Its staging performs a sweep through `perform`, so it is boxed in any case.
            ModelOp::Erase { .. } | ModelOp::ErasureTouch { .. } => {
                Box::pin(self.erasure_op(step, op, now))
            }
            ModelOp::SweepsAtOnce { sessions } => Box::pin(self.sweeps_at_once(sessions, now)),
            ModelOp::EmptiedThenCount {
                agent: a,
                rank,
                lower,
                hours,
            } => Box::pin(self.emptied_then_count(step, a, rank, lower, hours, now)),
            _ => unreachable!("generator7 is given generator 7's operations only"),
        }
    }

    /// A plain sweep's future, built and boxed outside `perform`'s frame (see `generator7`).
    #[inline(never)]
    fn boxed_sweep(&mut self, now: i64) -> Pin<Box<dyn Future<Output = Step> + '_>> {
        Box::pin(self.plain_sweep(now))
    }
}

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
//! Why one file of this length: running a sequence and checking it after every sweep (the
//! bucket, the ledger) share the run's state; the operations as data are in `ops.rs` (which
//! uses no part's module: the seeded mix is in `draw.rs`, an operation's line in `display.rs`), the model's
//! state in `state.rs`, outcomes in `outcome.rs`, people's requests over HTTP (SPEC part SF)
//! in `people_http.rs` with their URL spellings in `people_urls.rs`, part SL's policies in
//! `policies.rs`, sessions' closes in `close.rs` and workspaces' retention in
//! `workspace_retention.rs`.

mod close;
mod display;
mod draw;
mod emptied_count;
mod erasure;
#[cfg(test)]
mod generator7_tests;
pub mod hostile;
pub mod ops;
mod outcome;
mod overflow_again;
mod people;
pub mod people_http;
pub mod people_urls;
mod policies;
mod state;
mod sweep_requests;
mod two_sweeps;
pub mod workspace_retention;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tidemark_reference::clock::{Clock, ManualClock, DAY_MS, HOUR_MS};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, PostgresMetadata};
use tidemark_reference::scoped::{
    Access, CrashPoint, PathError, ScopeSettings, ScopedConfig, ScopedError, ScopedMutant,
    ScopedStore, SweepPause, TurnSpace,
};

use crate::profiles::scoped::driver::race_against_sweep;
use crate::variants::Declared;
pub use draw::generate;
use ops::{
    agent, path, session, traversal, AGENTS, SESSIONS, SETUP_SESSIONS, SKILL_FILES, WAIT_NAMES,
    WORKSPACE,
};
pub use ops::{IdStyle, ModelOp, GENERATOR};
pub use outcome::{trace_hash, Divergence, SequenceError, SequenceRun};
use state::{kind, Model, SessionModel};
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
    client: aws_sdk_s3::Client,
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
            .create_bucket()
            .bucket(BUCKET)
            .send()
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

    /// Performs `op` at `now`, the clock's step taken: an erasure's staging (`erasure.rs`)
    /// performs a sweep this way after moving the clock itself.
    async fn perform(&mut self, step: usize, op: &ModelOp, now: i64) -> Step {
        if let Some(i) = op.session_touched() {
            self.start_session(i, now).await?;
        }
        match *op {
            ModelOp::Write {
                session: s,
                path: p,
                agent_scope,
            } => {
                self.write(session(s), path(p), agent_scope, format!("v{step}"), now)
                    .await
            }
            ModelOp::Read {
                session: s,
                path: p,
                agent_scope,
            } => self.read(session(s), path(p), agent_scope, now).await,
            ModelOp::Activity { session: s } => {
                let i = session(s);
                let r = self.store.record_activity(&self.turns[i]).await;
                let m = &mut self.model.sessions[i];
                match (r, m.deleted) {
                    (Ok(()), false) => m.touched(now),
                    (Err(ScopedError::UnknownEntity { .. }), true) => {}
                    (r, d) => {
                        let want = if d { "UnknownEntity" } else { "Ok" };
                        return diverged(
                            format!("activity: {want} (deleted {d})"),
                            format!("activity: {r:?}"),
                        );
                    }
                }
                Ok(())
            }
            ModelOp::Wait {
                session: s,
                kind: k,
                id,
                add,
            } => {
                let i = session(s);
                let w = (k % 3, id % 2);
                let wid = format!("w{}", w.1);
                let t = &self.turns[i];
                let r = if add {
                    self.store.add_wait(t, kind(w.0), &wid).await
                } else {
                    self.store.remove_wait(t, kind(w.0), &wid).await
                };
                let m = &mut self.model.sessions[i];
                match (r, m.deleted, add) {
                    (Ok(()), false, true) => {
                        m.waits.insert(w);
                    }
                    (Ok(()), false, false) => {
                        m.waits.remove(&w);
                    }
                    (Ok(()), true, false) => {}
                    (Err(ScopedError::UnknownEntity { .. }), true, true) => {}
                    (r, d, a) => {
                        let want = if d && a { "UnknownEntity" } else { "Ok" };
                        return diverged(
                            format!(
                                "wait {}: {want} (deleted {d}, add {a})",
                                WAIT_NAMES[w.0 as usize]
                            ),
                            format!("wait: {r:?}"),
                        );
                    }
                }
                Ok(())
            }
            ModelOp::Advance { days, hours } => {
                self.clock
                    .advance_ms(i64::from(days) * DAY_MS + i64::from(hours) * HOUR_MS);
                Ok(())
            }
            ModelOp::Sweep => self.boxed_sweep(now).await,
            ModelOp::List { session: s } => self.list(session(s), now).await,
            ModelOp::Text {
                session: s,
                path: p,
            } => self.text(session(s), p, now).await,
            ModelOp::Traversal {
                session: s,
                path: p,
                encoded,
            } => {
                let spelled = traversal(p, encoded);
                let want = self.malformed_reason(session(s), "traversal");
                match self.store.read(&self.turns[session(s)], &spelled).await {
                    Err(e) if e.kind() == want => Ok(()),
                    r => diverged(
                        // The default's words are a saved failure's trace: kept as they were.
                        match want {
                            "traversal" => "read: refused as Traversal, never clamped".to_string(),
                            other => format!("read: refused {other}, never clamped"),
                        },
                        format!("read: {r:?}"),
                    ),
                }
            }
            ModelOp::Hostile {
                session: s,
                spelling,
                write,
            } => {
                self.hostile(session(s), hostile::spelling(spelling), write, step, now)
                    .await
            }
            ModelOp::Person {
                session: s,
                person,
                action,
                path: p,
                scope,
            } => {
                self.person(session(s), person, action, p, scope, step, now)
                    .await
            }
            ModelOp::People(ref r) => self.people(step, r).await,
            ModelOp::MissingScope {
                session: s,
                path: p,
            } => match self.store.read(&self.turns[session(s)], path(p)).await {
                Err(ScopedError::Path(PathError::MissingScope { corrections, .. }))
                    if corrections.len() == 3
                        && self.malformed_reason(session(s), "missing_scope")
                            == "missing_scope" =>
                {
                    Ok(())
                }
                Err(ScopedError::UnknownEntity { .. })
                    if self.malformed_reason(session(s), "missing_scope") == "unknown_entity" =>
                {
                    Ok(())
                }
                r => diverged(
                    format!(
                        "read: refused {}",
                        match self.malformed_reason(session(s), "missing_scope") {
                            "missing_scope" => "as MissingScope with three corrections",
                            other => other,
                        }
                    ),
                    format!("read: {r:?}"),
                ),
            },
            ModelOp::Delete {
                session: s,
                path: p,
            } => self.delete(session(s), p, now).await,
            ModelOp::WorkspaceWrite {
                session: s,
                path: p,
            } => {
                let i = session(s);
                let r = self
                    .store
                    .write(
                        &self.turns[i],
                        &format!("workspace/{}", path(p)),
                        b"shared".to_vec(),
                    )
                    .await;
                // Read-only by default; an agent's own layer may open it (generator 5).
                let writable = self
                    .model
                    .policy
                    .workspace_access(SESSIONS[i].0)
                    .can_write();
                match (r, self.model.sessions[i].deleted, writable) {
                    (Err(ScopedError::Storage { .. }), _, _) if self.faulty() => {
                        self.model.sessions[i].write_failed();
                        self.note("failed: storage");
                        Ok(())
                    }
                    (Err(ScopedError::PermissionDenied { .. }), false, false) => Ok(()),
                    (Ok(_), false, true) => {
                        let files = &mut self.model.policy.workspace_files;
                        files.insert(path(p).to_string(), "shared".to_string());
                        self.model.sessions[i].touched(now);
                        Ok(())
                    }
                    (Err(ScopedError::UnknownEntity { .. }), true, _) => Ok(()),
                    (r, d, w) => {
                        let want = match (d, w) {
                            (true, _) => "workspace write: UnknownEntity (the session is deleted)",
                            (false, false) => {
                                "workspace write: PermissionDenied (read-only by default)"
                            }
                            (false, true) => "workspace write: Ok (the agent's layer opens it)",
                        };
                        diverged(want, format!("workspace write: {r:?}"))
                    }
                }
            }
            ModelOp::SetAgentAccess { agent: a, access } => {
                let a = agent(a);
                if self.model.deleted_agents.contains(a) {
                    self.note("skipped: the agent is deleted");
                    return Ok(());
                }
                let access = [Access::None, Access::Read, Access::ReadWrite][access as usize % 3];
                // The agent's layer is replaced whole (SC-3.2): its workspace access, if a
                // generator-5 operation set one, is sent again.
                let settings = ScopeSettings {
                    agent: Some(access),
                    workspace: self.model.policy.workspace_layer.get(a).copied(),
                };
                if let Err(e) = self
                    .store
                    .create_agent(&self.ids.id(WORKSPACE), &self.ids.id(a), settings)
                    .await
                {
                    return diverged("agent settings: Ok", format!("agent settings: {e}"));
                }
                self.model.agent_access.insert(a, access);
                Ok(())
            }
            ModelOp::ReadSkill { session: s, file } => {
                let i = session(s);
                let (name, content) = SKILL_FILES[file as usize % SKILL_FILES.len()];
                let r = self
                    .store
                    .read(&self.turns[i], &format!("skill/kit/{name}"))
                    .await;
                let m = &mut self.model.sessions[i];
                match (r, m.deleted) {
                    (Ok(b), false) if b == content.as_bytes() => {
                        m.touched(now);
                        Ok(())
                    }
                    (Err(ScopedError::UnknownEntity { .. }), true) => Ok(()),
                    (Err(ScopedError::Storage { .. }), _) if self.faulty() => {
                        self.note("failed: storage");
                        Ok(())
                    }
                    (r, d) => diverged(
                        if d {
                            "skill read: UnknownEntity (the session is deleted)".to_string()
                        } else {
                            format!("skill read: Ok({content:?}) (skill versions are never swept)")
                        },
                        format!(
                            "skill read: {:?}",
                            r.map(|b| String::from_utf8_lossy(&b).into_owned())
                        ),
                    ),
                }
            }
            ModelOp::FaultySweep { percent } => {
                self.server.faults().set_plan(FaultPlan {
                    delete_key_failure_rate: f64::from(percent.min(100)) / 100.0,
                    ..FaultPlan::default()
                });
                let first = self.store.sweep().await;
                // What the failing keys left of an erasure: pending, or met with nothing left.
                Box::pin(self.check_erasures(now, erasure::Reading::Interim)).await?;
                self.server.faults().heal();
                match first {
                    Ok(r) => self.note(format!(
                        "swept {} sessions, {} obligations; {} and {} left for later",
                        r.sessions_swept,
                        r.obligations_completed,
                        r.sessions_retried_later,
                        r.obligations_retried_later
                    )),
                    Err(ScopedError::Storage { .. }) => self.note("failed: storage"),
                    Err(e) => return diverged("sweep under key failures: Ok", format!("{e}")),
                }
                let second = self.store.sweep().await;
                if let Some(plan) = &self.faults {
                    self.server.faults().set_plan(plan.clone());
                }
                self.complete(second, "the healed sweep")?;
                self.swept_files += self.model.sweep(now);
                self.check_bucket_and_ledger().await
            }
            ModelOp::CrashSweep { obligations } => {
                let point = if obligations {
                    CrashPoint::AfterObligationObjectsDeleted
                } else {
                    CrashPoint::AfterSessionObjectsDeleted
                };
                let mut config = self.config.clone();
                config.crash_at = Some(point);
                let doomed = self.open(config).await?;
                match doomed.sweep().await {
                    Ok(_) => self.note("the crash point was not reached"),
                    Err(ScopedError::Crashed(_)) => self.note("crashed"),
                    Err(ScopedError::Storage { .. }) if self.faulty() => {
                        self.note("failed: storage")
                    }
                    Err(e) => return diverged("sweep: Ok or a crash", format!("sweep: {e}")),
                }
                drop(doomed);
                // A new process sweeps at startup.
                self.store = self.open(self.config.clone()).await?;
                self.sweep_healing().await?;
                self.swept_files += self.model.sweep(now);
                self.check_bucket_and_ledger().await
            }
            ModelOp::WriteDuringSweep {
                session: s,
                path: p,
            } => {
                self.write_during_sweep(session(s), p, format!("v{step}"), now)
                    .await
            }
            ModelOp::DeleteSession { session: s } => {
                let i = session(s);
                if self.model.sessions[i].deleted {
                    self.note("skipped: already deleted");
                    return Ok(());
                }
                if let Err(e) = self.store.delete_session(&self.turns[i]).await {
                    return diverged("delete session: Ok", format!("{e}"));
                }
                self.model.sessions[i].deleted = true;
                self.model.sessions[i].waits.clear();
                Ok(())
            }
            ModelOp::StoreFaults {
                error_percent,
                key_failure_percent,
            } => {
                let plan = FaultPlan {
                    error_rate: f64::from(error_percent.min(100)) / 100.0,
                    delete_key_failure_rate: f64::from(key_failure_percent.min(100)) / 100.0,
                    ..FaultPlan::default()
                };
                self.server.faults().set_plan(plan.clone());
                self.faults = Some(plan);
                Ok(())
            }
            ModelOp::Heal => {
                self.server.faults().heal();
                self.faults = None;
                Ok(())
            }
            ModelOp::JumpBack { hours } => {
                self.clock.advance_ms(-i64::from(hours) * HOUR_MS);
                Ok(())
            }
            ModelOp::WorkspaceBeside => self.workspace_beside().await,
            ModelOp::SetCount { .. }
            | ModelOp::SetWorkspaceAccess { .. }
            | ModelOp::Promote { .. }
            | ModelOp::PromoteDuringSweep { .. }
            | ModelOp::ToolOutput { .. } => self.policy(step, op, now).await,
            // Generator 7's operations are built and boxed in a function of their own (see
            // `generator7`).
            ModelOp::Close { .. }
            | ModelOp::SetRetention { .. }
            | ModelOp::ApplyLifecycle { .. }
            | ModelOp::OverflowAgain { .. }
            | ModelOp::Erase { .. }
            | ModelOp::ErasureTouch { .. }
            | ModelOp::SweepsAtOnce { .. }
            | ModelOp::EmptiedThenCount { .. } => self.generator7(step, op, now).await,
            ModelOp::DeleteAgent { agent: a } => {
                let a = agent(a);
                if self.model.deleted_agents.contains(a) {
                    self.note("skipped: already deleted");
                    return Ok(());
                }
                if let Err(e) = self
                    .store
                    .delete_agent(&self.ids.id(WORKSPACE), &self.ids.id(a))
                    .await
                {
                    return diverged("delete agent: Ok", format!("{e}"));
                }
                self.model.deleted_agents.insert(a);
                for (j, (owner, _)) in SESSIONS.iter().enumerate() {
                    if *owner == a {
                        self.model.sessions[j].deleted = true;
                        self.model.sessions[j].waits.clear();
                    }
                }
                Ok(())
            }
        }
    }

    /// Two workspaces beside the model's, the first's id a prefix of the second's, each with
    /// the model's skill version published; then the first is deleted. After the next sweep its
    /// prefixes are empty (the ledger check) and the second's skill version is whole (SC-6.2).
    /// Run on a healed store: what a fault would do to it is the other operations' to explore.
    async fn workspace_beside(&mut self) -> Step {
        if self.model.beside_deleted {
            self.note("skipped: already deleted");
            return Ok(());
        }
        if self.faulty() {
            self.server.faults().heal();
        }
        let result = async {
            let (gone, kept) = beside_workspaces(&self.ids);
            let skill: BTreeMap<String, Vec<u8>> = SKILL_FILES
                .iter()
                .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
                .collect();
            for w in [&gone, &kept] {
                if let Err(e) = self
                    .store
                    .create_workspace(w, ScopeSettings::default())
                    .await
                {
                    return diverged("create workspace: Ok", format!("{e}"));
                }
                match self.store.publish_skill_version(w, &skill).await {
                    Ok(sha) if sha == self.skill_sha => {}
                    Ok(sha) => {
                        return diverged(
                            format!("the same files publish as {}", self.skill_sha),
                            sha,
                        )
                    }
                    Err(e) => return diverged("publish skill: Ok", format!("{e}")),
                }
            }
            if let Err(e) = self.store.delete_workspace(&gone).await {
                return diverged("delete workspace: Ok", format!("{e}"));
            }
            self.model.beside_deleted = true;
            Ok(())
        }
        .await;
        if let Some(plan) = &self.faults {
            self.server.faults().set_plan(plan.clone());
        }
        result
    }

    /// A sweep that must complete: with no faults, nothing is left for later; under faults an
    /// incomplete or interrupted sweep is followed by a healed one that must finish the job.
    async fn sweep_healing(&mut self) -> Step {
        let r = self.store.sweep().await;
        self.finish_sweep(r, "sweep").await.map(|_| ())
    }

    /// Judges a sweep's result; under faults an incomplete or interrupted sweep is followed by
    /// a healed one, which must finish the job. Answers whether it swept again.
    async fn finish_sweep(
        &mut self,
        r: Result<tidemark_reference::scoped::SweepReport, ScopedError>,
        what: &str,
    ) -> Result<bool, Stop> {
        let mut incomplete = match &r {
            Ok(r) => r.sessions_retried_later > 0 || r.obligations_retried_later > 0,
            Err(e) => matches!(e, ScopedError::Storage { .. }),
        };
        if self.faulty() && self.model.erasure.active() {
            // An erasure the faults left pending is in no count of the report (SL-4).
            let now = self.clock.now().0;
            Box::pin(self.check_erasures(now, erasure::Reading::Interim)).await?;
            incomplete = incomplete || self.erasure_left_pending().await?;
        }
        if !(incomplete && self.faulty()) {
            return self.complete(r, what).map(|()| false);
        }
        self.note(format!(
            "{what}: incomplete under faults; healed and swept again"
        ));
        self.server.faults().heal();
        let r = self.store.sweep().await;
        if let Some(plan) = &self.faults {
            self.server.faults().set_plan(plan.clone());
        }
        self.complete(r, "the healed sweep").map(|()| true)
    }

    fn complete(
        &mut self,
        r: Result<tidemark_reference::scoped::SweepReport, ScopedError>,
        what: &str,
    ) -> Step {
        match r {
            Ok(r) if r.sessions_retried_later == 0 && r.obligations_retried_later == 0 => {
                self.note(format!(
                    "{what}: swept {} sessions, {} obligations",
                    r.sessions_swept, r.obligations_completed
                ));
                Ok(())
            }
            Ok(r) => diverged(
                format!("{what}: nothing left for later (no faults)"),
                format!("{what}: {r:?}"),
            ),
            Err(e) => diverged(format!("{what}: Ok"), format!("{what}: {e}")),
        }
    }

    /// After a complete sweep: the bucket agrees with the model (sessions, agents, the skill),
    /// and the ledger is whole: every obligation met and recorded exactly once, nothing left
    /// under a recorded prefix.
    async fn check_bucket_and_ledger(&mut self) -> Step {
        let model = &self.model;
        let id = |short: &str| self.ids.id(short);
        let ws = id(WORKSPACE);
        let turns = &self.turns;
        let sessions = SESSIONS.iter().enumerate().map(|(j, (a, s))| {
            (
                format!("sessions/{ws}/{}/{}/", turns[j].agent, turns[j].session),
                format!("{a}/{s}"),
                model.sessions[j].files.keys().cloned().collect(),
            )
        });
        let agents = AGENTS.iter().map(|a| {
            let files: BTreeSet<String> = model
                .agent_files
                .get(a)
                .map(|f| f.keys().cloned().collect())
                .unwrap_or_default();
            (
                format!("agents/{ws}/{}/", id(a)),
                format!("agent {a}"),
                files,
            )
        });
        let skill = std::iter::once((
            format!("skills/{ws}/{}/", self.skill_sha),
            "the skill version".to_string(),
            SKILL_FILES.iter().map(|(p, _)| p.to_string()).collect(),
        ))
        .chain(self.model.beside_deleted.then(|| {
            (
                format!(
                    "skills/{}/{}/",
                    beside_workspaces(&self.ids).1,
                    self.skill_sha
                ),
                "the skill version of the workspace beside the deleted one".to_string(),
                SKILL_FILES.iter().map(|(p, _)| p.to_string()).collect(),
            )
        }));
        let workspace = std::iter::once((
            format!("workspaces/{ws}/"),
            "the workspace".to_string(),
            self.model.policy.workspace_files.keys().cloned().collect(),
        ));
        for (prefix, name, want) in sessions
            .chain(agents)
            .chain(skill)
            .chain(workspace)
            .collect::<Vec<_>>()
        {
            let got = files_under(&self.mem, &prefix);
            if got != want {
                return diverged(
                    format!("after the sweep {name} holds {want:?}"),
                    format!("after the sweep {name} holds {got:?}"),
                );
            }
        }
        // A session the sweep emptied keeps nothing: no file, and no text a failed write left.
        for &j in &self.model.emptied {
            let (a, s) = SESSIONS[j];
            let t = &self.turns[j];
            let prefix = format!("sessions/{}/{}/{}/", t.workspace, t.agent, t.session);
            let left = self.mem.keys(BUCKET, &prefix);
            if !left.is_empty() {
                return diverged(
                    format!("after the sweep nothing under {a}/{s}"),
                    format!("{} object(s) left: {left:?}", left.len()),
                );
            }
        }
        self.check_lifecycle_kept()?;
        let obligations = self.store.deletion_obligations().await.map_err(harness)?;
        let records = self.store.deletion_records().await.map_err(harness)?;
        for o in &obligations {
            let recorded = records.iter().filter(|r| r.deletion_id == o.id).count();
            if o.done_at_ms.is_none() || recorded != 1 {
                return diverged(
                    format!("obligation {} met and recorded once", o.prefix),
                    format!(
                        "obligation {}: {}, {recorded} record(s)",
                        o.prefix,
                        if o.done_at_ms.is_some() {
                            "done"
                        } else {
                            "pending"
                        }
                    ),
                );
            }
        }
        for r in &records {
            if self.reused_by_a_subject(&r.prefix) {
                // An erased subject created again after its erasure was met (SL-4.6).
                continue;
            }
            let left = self.mem.keys(BUCKET, &r.prefix);
            if !left.is_empty() {
                return diverged(
                    format!("nothing under the recorded deletion {}", r.prefix),
                    format!("{} object(s) left: {left:?}", left.len()),
                );
            }
        }
        if !obligations.is_empty() {
            self.note(format!(
                "ledger: {} obligation(s), all recorded",
                obligations.len()
            ));
        }
        let now = self.clock.now().0;
        Box::pin(self.check_erasures(now, erasure::Reading::Swept)).await
    }

    async fn write(
        &mut self,
        i: usize,
        name: &str,
        agent_scope: bool,
        content: String,
        now: i64,
    ) -> Step {
        let scope = if agent_scope { "agent" } else { "session" };
        self.write_spelled(
            i,
            &format!("{scope}/{name}"),
            name,
            agent_scope,
            content,
            now,
        )
        .await
    }

    /// [`Self::write`] of the file `name`, sent as the guest path `guest` (a spelling SPEC
    /// reads as that file: SC-2.3's variant tidies `session/dir//notes.md` into `dir/notes.md`).
    async fn write_spelled(
        &mut self,
        i: usize,
        guest: &str,
        name: &str,
        agent_scope: bool,
        content: String,
        now: i64,
    ) -> Step {
        let (a, _) = SESSIONS[i];
        let scope = if agent_scope { "agent" } else { "session" };
        let r = self
            .store
            .write(&self.turns[i], guest, content.clone().into_bytes())
            .await;
        let deleted = self.model.sessions[i].deleted;
        let allowed = !agent_scope || self.model.access(a).can_write();
        match (r, deleted, allowed) {
            (Err(ScopedError::Storage { .. }), _, _) if self.faulty() => {
                // A failed write changed nothing: not the file, not the activity; it clears
                // the swept mark (SC-5.4).
                self.model.sessions[i].write_failed();
                self.note("failed: storage");
            }
            (Ok(_), false, true) => {
                let files = if agent_scope {
                    self.model.agent_files.entry(a).or_default()
                } else {
                    &mut self.model.sessions[i].files
                };
                files.insert(name.to_string(), content);
                self.model.sessions[i].touched(now);
            }
            (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
            (Err(ScopedError::PermissionDenied { .. }), false, false) => {}
            (r, d, allowed) => {
                let want = match (d, allowed) {
                    (true, _) => "UnknownEntity (the session is deleted)",
                    (false, false) => "PermissionDenied (the agent scope is not writable)",
                    (false, true) => "Ok (the session is live)",
                };
                return diverged(
                    format!("{scope} write: {want}"),
                    format!("{scope} write: {r:?}"),
                );
            }
        }
        Ok(())
    }

    /// A hostile spelling: refused with its SC-8 reason whatever the session's state (the path
    /// is resolved before anything else, SC-3.5), or a valid name written or read as any file.
    async fn hostile(
        &mut self,
        i: usize,
        spelling: &hostile::Spelling,
        write: bool,
        step: usize,
        now: i64,
    ) -> Step {
        let t = &self.turns[i];
        let fit = hostile::Fit {
            prefix_bytes: format!("sessions/{}/{}/{}/", t.workspace, t.agent, t.session).len(),
        };
        let guest = spelling.guest_path(&fit);
        let tidy = self.takes("empty_and_dot_segments", "tidied");
        match spelling.judged(&fit, tidy) {
            // Sent as spelled: a name that only looks hostile, or one SC-2.3's variant tidies.
            (hostile::Verdict::Name, Some(name)) if write => {
                self.write_spelled(i, &guest, &name, false, format!("v{step}"), now)
                    .await
            }
            (hostile::Verdict::Name, Some(name)) => {
                self.read_spelled(i, &guest, &name, false, now).await
            }
            (verdict, _) => {
                let r = if write {
                    self.store
                        .write(&self.turns[i], &guest, b"hostile".to_vec())
                        .await
                        .map(|_| ())
                } else {
                    self.store.read(&self.turns[i], &guest).await.map(|_| ())
                };
                let hostile::Verdict::Refused(reason) = verdict else {
                    unreachable!("a valid spelling has a file name")
                };
                let reason = self.malformed_reason(i, reason);
                match r {
                    Err(e) if e.kind() == reason => Ok(()),
                    r => diverged(
                        format!(
                            "{guest:?} ({}): refused {reason} ({})",
                            spelling.what, spelling.rule
                        ),
                        format!("{:?}", r.map_err(|e| e.kind())),
                    ),
                }
            }
        }
    }

    async fn read(&mut self, i: usize, name: &str, agent_scope: bool, now: i64) -> Step {
        let scope = if agent_scope { "agent" } else { "session" };
        self.read_spelled(i, &format!("{scope}/{name}"), name, agent_scope, now)
            .await
    }

    /// [`Self::read`] of the file `name`, sent as the guest path `guest`.
    async fn read_spelled(
        &mut self,
        i: usize,
        guest: &str,
        name: &str,
        agent_scope: bool,
        now: i64,
    ) -> Step {
        let (a, _) = SESSIONS[i];
        let scope = if agent_scope { "agent" } else { "session" };
        let r = self.store.read(&self.turns[i], guest).await;
        let deleted = self.model.sessions[i].deleted;
        let readable = !agent_scope || self.model.access(a).can_read();
        let want = if agent_scope {
            self.model.agent_files.get(a).and_then(|f| f.get(name))
        } else {
            self.model.sessions[i].files.get(name)
        }
        .cloned();
        match (r, deleted, readable, want) {
            (Ok(b), false, true, Some(c)) if b == c.as_bytes() => {
                self.model.sessions[i].touched(now);
            }
            (Err(ScopedError::NotFound { .. }), false, true, None) => {}
            (Err(ScopedError::PermissionDenied { .. }), false, false, _) => {}
            (Err(ScopedError::UnknownEntity { .. }), true, _, _) => {}
            (Err(ScopedError::Storage { .. }), false, _, _) if self.faulty() => {
                self.note("failed: storage");
            }
            (r, deleted, readable, want) => {
                let want = match (deleted, readable, want) {
                    (true, _, _) => "UnknownEntity (the session is deleted)".to_string(),
                    (false, false, _) => "PermissionDenied (the agent scope is none)".to_string(),
                    (false, true, None) => "NotFound".to_string(),
                    (false, true, Some(c)) => format!("Ok({c:?})"),
                };
                let got = match r {
                    Ok(b) => format!("Ok({:?})", String::from_utf8_lossy(&b)),
                    Err(e) => format!("Err({e:?})"),
                };
                return diverged(
                    format!("{scope} read: {want}"),
                    format!("{scope} read: {got}"),
                );
            }
        }
        Ok(())
    }

    async fn list(&mut self, i: usize, now: i64) -> Step {
        let r = self.store.list(&self.turns[i], None).await;
        match (r, self.model.sessions[i].deleted) {
            (Err(ScopedError::Storage { .. }), _) if self.faulty() => self.note("failed: storage"),
            (Ok(files), false) => {
                let listed: Vec<String> = files.into_iter().map(|f| f.path).collect();
                let got: BTreeSet<String> = listed.iter().cloned().collect();
                let want = self.model.listing(i);
                if got != want {
                    return diverged(format!("list: {want:?}"), format!("list: {got:?}"));
                }
                // SC-4.4: one listing in the byte order of its paths (the set's order), each
                // once; any order, each once, under its variant `listing_order=any`.
                if listed.len() != want.len() {
                    return diverged(
                        format!("list, each file once: {want:?}"),
                        format!("list: {listed:?}"),
                    );
                }
                if !self.takes("listing_order", "any") && !listed.iter().eq(want.iter()) {
                    return diverged(
                        format!("list in order: {:?}", want.iter().collect::<Vec<_>>()),
                        format!("list in order: {listed:?}"),
                    );
                }
                self.model.sessions[i].touched(now);
            }
            (Err(ScopedError::UnknownEntity { .. }), true) => {}
            (r, d) => {
                let want = if d {
                    "list: UnknownEntity (the session is deleted)"
                } else {
                    "list: Ok"
                };
                return diverged(want, format!("list: {r:?}"));
            }
        }
        Ok(())
    }

    async fn text(&mut self, i: usize, p: u8, now: i64) -> Step {
        let r = self
            .store
            .read_text(&self.turns[i], &format!("session/{}", path(p)))
            .await;
        let faulty = self.faulty();
        let m = &mut self.model.sessions[i];
        let want = m.files.get(path(p)).cloned();
        match (r, m.deleted, want) {
            (Err(ScopedError::Storage { .. }), _, _) if faulty => {
                self.log.push("  (failed: storage)".into())
            }
            (Ok(Some(text)), false, Some(c)) if text == c => m.touched(now),
            (Err(ScopedError::NotFound { .. }), false, None) => {}
            (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
            (r, d, w) => {
                let want = match (d, w) {
                    (true, _) => "text: UnknownEntity (the session is deleted)".to_string(),
                    (false, None) => "text: NotFound (the file is gone, so is its text)".into(),
                    (false, Some(c)) => format!("text: Ok(Some({c:?}))"),
                };
                return diverged(want, format!("text: {r:?}"));
            }
        }
        Ok(())
    }

    async fn delete(&mut self, i: usize, p: u8, now: i64) -> Step {
        let t = &self.turns[i];
        let guest = format!("session/{}", path(p));
        let r = self.store.delete(t, &guest).await;
        let had = self.model.sessions[i].files.contains_key(path(p));
        match (r, self.model.sessions[i].deleted, had) {
            (Err(ScopedError::Storage { .. }), _, _) if self.faulty() => {
                self.note("failed: storage")
            }
            (Ok(()), false, true) => {
                let m = &mut self.model.sessions[i];
                m.files.remove(path(p));
                m.touched(now);
                // The text goes with its file, at once (SC-4): a file the listing no longer
                // shows is not readable, not even as text.
                match self.store.read_text(t, &guest).await {
                    Err(ScopedError::NotFound { .. }) => {}
                    Err(ScopedError::Storage { .. }) if self.faulty() => {
                        self.note("failed: storage")
                    }
                    r => {
                        return diverged("text of a deleted file: NotFound", format!("text: {r:?}"))
                    }
                }
            }
            (Err(ScopedError::NotFound { .. }), false, false) => {}
            (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
            (r, d, h) => {
                let want = match (d, h) {
                    (true, _) => "delete: UnknownEntity (the session is deleted)",
                    (false, true) => "delete: Ok",
                    (false, false) => "delete: NotFound",
                };
                return diverged(want, format!("delete: {r:?}"));
            }
        }
        Ok(())
    }

    /// A write raced against a sweep that has claimed its candidates and not yet deleted
    /// anything. The sweep must hold what it claimed, so the write lands after it: the model
    /// sweeps first, then writes, and the file survives.
    async fn write_during_sweep(&mut self, i: usize, p: u8, content: String, now: i64) -> Step {
        let pause = Arc::new(SweepPause::default());
        let mut config = self.config.clone();
        config.sweep_pause = Some(pause.clone());
        let racing = self.open(config).await?;
        let t = self.turns[i].clone();
        let guest = format!("session/{}", path(p));
        let bytes = content.clone().into_bytes();
        let (swept, written, landed_first) =
            race_against_sweep(&racing, &pause, self.meta.as_ref(), || {
                racing.write(&t, &guest, bytes)
            })
            .await;
        drop(racing);
        let healed = self.finish_sweep(swept, "the raced sweep").await?;
        // A write that landed while the sweep was paused (its session not claimed) is activity
        // before the sweep's count policies rank the sessions (SL-2); a blocked one follows the
        // whole sweep.
        self.swept_files += if landed_first {
            self.model.sweep_idle(now)
        } else {
            self.model.sweep(now)
        };
        let deleted = self.model.sessions[i].deleted;
        match (written, deleted) {
            (Ok(_), false) => {
                let m = &mut self.model.sessions[i];
                m.files.insert(path(p).to_string(), content);
                m.touched(now);
                // Written after the sweep: the session holds this file and its text now.
                self.model.emptied.remove(&i);
            }
            (Err(ScopedError::UnknownEntity { .. }), true) => {}
            (Err(ScopedError::Storage { .. }), _) if self.faulty() => {
                // Its text may have landed after the sweep: the next sweep takes it.
                self.model.sessions[i].write_failed();
                self.model.emptied.remove(&i);
                self.note("failed: storage")
            }
            (r, d) => {
                return diverged(
                    if d {
                        "raced write: UnknownEntity (the session is deleted)"
                    } else {
                        "raced write: Ok"
                    },
                    format!("raced write: {r:?}"),
                )
            }
        }
        if landed_first {
            self.swept_files += self.model.sweep_policies(now);
        }
        if healed {
            // The healed sweep ran after the write: it takes what a failed write left in an
            // idle session (SC-5.4), and ranks the sessions with the write's activity (SL-2).
            self.swept_files += self.model.sweep(now);
        }
        self.check_bucket_and_ledger().await
    }
}

/// The two workspaces of [`ModelOp::WorkspaceBeside`]: the one deleted, whose id is a prefix of
/// the one kept, so a deletion by string prefix would take the kept one's too.
fn beside_workspaces(ids: &IdStyle) -> (String, String) {
    let ws = ids.id(WORKSPACE);
    (format!("{ws}-n"), format!("{ws}-n2"))
}

/// The guest-visible files under `prefix` in the model bucket: extracted text is not a file.
fn files_under(mem: &MemoryHandle, prefix: &str) -> BTreeSet<String> {
    mem.keys(BUCKET, prefix)
        .into_iter()
        .filter_map(|k| k.strip_prefix(prefix).map(str::to_string))
        .filter(|k| !k.starts_with(".tidemark-text/"))
        .collect()
}

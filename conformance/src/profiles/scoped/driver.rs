//! The scoped reference implementation driven by operations as data: what a conformance
//! adapter (and a scenario file) needs. One [`ScopedDriver`] is one scenario: its own bucket,
//! its own metadata (a fresh PostgreSQL database on the real tier, a fresh in-memory store on
//! the simulation tier), a clock set from each operation's timestamp, faults, crashes and
//! restarts from what was persisted, and inspection of the bucket and the obligations.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tidemark_reference::clock::{ManualClock, Timestamp};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, PostgresMetadata};
use tidemark_reference::scoped::{
    Access, ScopedConfig, ScopedError, ScopedMutant, ScopedStore, SweepPause, SweepReport,
};

use super::erasure::subject_text;
use super::people::PeopleClient;

use super::remote::{
    bucket_keys, fault_plan, lifecycle_rules, op_name, run_age_rule, side, with_skill_hashes,
    ScopedService, Side,
};
use tidemark_sim::real_tier::faults::Throttle;
use tidemark_sim::real_tier::{RealTier, RealTierError, S3Server, TestDatabase};

/// Who is calling: a turn in workspace/agent/session, with the skills it was sent by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    pub workspace: String,
    pub agent: String,
    pub session: String,
    /// slug -> the name a skill version was published under in this scenario.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: BTreeMap<String, String>,
}

impl Turn {
    pub fn new(workspace: &str, agent: &str, session: &str) -> Turn {
        Turn {
            workspace: workspace.into(),
            agent: agent.into(),
            session: session.into(),
            skills: BTreeMap::new(),
        }
    }
}

/// One operation of the scoped profile. (Not `Eq`: fault rates are floats.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ScopedOp {
    CreateWorkspace {
        workspace: String,
        #[serde(default)]
        agent_access: Option<Access>,
        #[serde(default)]
        workspace_access: Option<Access>,
    },
    CreateAgent {
        workspace: String,
        agent: String,
        #[serde(default)]
        agent_access: Option<Access>,
        #[serde(default)]
        workspace_access: Option<Access>,
    },
    CreateSession {
        turn: Turn,
    },
    /// A turn happened in the session.
    Activity {
        turn: Turn,
    },
    AddWait {
        turn: Turn,
        kind: WaitKindName,
        id: String,
    },
    RemoveWait {
        turn: Turn,
        kind: WaitKindName,
        id: String,
    },
    Write {
        turn: Turn,
        path: String,
        content: String,
    },
    /// A write raced against a sweep: issued while the sweep has claimed its candidates and
    /// not yet deleted anything, given every chance to land before the sweep goes on.
    WriteDuringSweep {
        turn: Turn,
        path: String,
        content: String,
    },
    Read {
        turn: Turn,
        path: String,
    },
    ReadText {
        turn: Turn,
        path: String,
    },
    List {
        turn: Turn,
        #[serde(default)]
        prefix: Option<String>,
    },
    Delete {
        turn: Turn,
        path: String,
    },
    /// Publishes a skill version through the skills API; `name` is how turns refer to it.
    PublishSkill {
        workspace: String,
        name: String,
        files: BTreeMap<String, String>,
    },
    DeleteSession {
        turn: Turn,
    },
    DeleteAgent {
        workspace: String,
        agent: String,
    },
    DeleteWorkspace {
        workspace: String,
    },
    Sweep,
    /// The next operation reaching this point "dies" there.
    CrashAt {
        point: CrashPointName,
    },
    /// A new process over what the old one persisted.
    Restart,
    Faults {
        #[serde(default)]
        down: bool,
        #[serde(default)]
        error_rate: f64,
        #[serde(default)]
        delete_key_failure_rate: f64,
        /// `(operation, n)`: the n-th request of that operation from now fails.
        #[serde(default)]
        fail_requests: Vec<(String, u64)>,
        /// `(operation, n)`: the n-th request of that operation and every later one fail.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        fail_from: Vec<(String, u64)>,
        /// Every request answers 404 NoSuchBucket.
        #[serde(default)]
        no_such_bucket: bool,
        /// Every request answers 403 AccessDenied.
        #[serde(default)]
        access_denied: bool,
        /// Requests answered 503 SlowDown.
        #[serde(default)]
        throttle: Throttle,
    },
    Heal,
    /// Every key under a prefix, straight from the bucket.
    BucketKeys {
        prefix: String,
    },
    /// Prefixes of pending deletion obligations, sorted (a set: trigger order is not a promise).
    PendingDeletions,
    /// Prefixes with a deletion record, sorted.
    DeletionRecords,
    /// The bucket's lifecycle configuration, read back through GetBucketLifecycleConfiguration
    /// and described rule by rule without ids ([`super::remote::lifecycle_rules`]).
    LifecycleRules,
    /// Puts the profile's lifecycle configuration on the bucket.
    ApplyLifecycle {
        session_backstop_days: u32,
    },
    /// Runs an age-only expiry rule over `prefix` with the lifecycle executor (AWS semantics).
    RunAgeRule {
        prefix: String,
        days: u32,
    },
    /// Credentials for a person of the people's files API (SPEC SF-2.1), minted by the
    /// implementation its own way: `person` is the scenario's name for them.
    Person {
        person: String,
        workspace: String,
        #[serde(default)]
        agent_files: Option<Access>,
        #[serde(default)]
        workspace_files: Option<Access>,
        /// The sessions whose conversations the person is in.
        #[serde(default)]
        sessions: Vec<String>,
    },
    /// A person's request to the people's files API, sent by the harness over HTTP with the
    /// person's credentials (never over the protocol). `person` is [`ANONYMOUS`] for a request
    /// without credentials.
    People {
        person: String,
        session: String,
        call: PeopleCall,
    },
    /// Sets (`Some`) or removes (`None`) an agent's count policy (SPEC SL-2). Any integer is
    /// carried, so a scenario can stage the refusal of an absurd one (SL-1.4).
    SetSessionCount {
        workspace: String,
        agent: String,
        #[serde(default)]
        keep_last: Option<i64>,
    },
    /// Copies a session file to agent or workspace scope (SPEC SL-6).
    Promote {
        turn: Turn,
        from: String,
        to: String,
    },
    /// A tool result handed to the store: shown inline (`content`) or written to a session
    /// file (`written`) past `tool_output_limit_bytes` (SPEC SL-7).
    ToolOutput {
        turn: Turn,
        content: String,
    },
    /// The host closes the session (SPEC SL-3): swept `close_grace_days` after, unless activity
    /// reopens it first.
    CloseSession {
        turn: Turn,
    },
    /// Two sweeps run at once (SPEC SL-1.3): the second starts once the first has claimed its
    /// policy sessions and before it deletes anything. Answered with what both swept together.
    ConcurrentSweeps,
    /// Requests the erasure of a workspace (`agent` absent) or of one of its agents, to be met
    /// by `deadline_ms` (SPEC SL-4.1); a deadline before the request's time is carried too, so
    /// a scenario can stage its refusal (SL-1.4).
    RequestErasure {
        workspace: String,
        #[serde(default)]
        agent: Option<String>,
        deadline_ms: i64,
    },
    /// The state of each erasure obligation of a subject, read by the harness from the
    /// implementation's database (SPEC SL-4.4, SL-4.7).
    ErasureStates {
        workspace: String,
        #[serde(default)]
        agent: Option<String>,
    },
    /// The keys the proofs of a subject's erasures name, read likewise (SL-4.3, SL-4.7).
    ErasureProof {
        workspace: String,
        #[serde(default)]
        agent: Option<String>,
    },
    /// Replaces a workspace's retention whole (SPEC SL-5.1): its own idle TTL in days, or `None`
    /// for the deployment's again. Any integer is carried, so a scenario can stage the refusal
    /// of an absurd one (SL-1.4, SL-5.2).
    SetWorkspaceRetention {
        workspace: String,
        #[serde(default)]
        session_file_ttl_days: Option<i64>,
    },
}

/// The person a scenario names for a request carrying no credentials.
pub const ANONYMOUS: &str = "anonymous";

/// What a person asks of the people's files API. A `url_path` is the URL after
/// `/files/`, sent exactly as written (SPEC SF-3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum PeopleCall {
    /// `PUT …/files/{url_path}` with the content as the body.
    Upload { url_path: String, content: String },
    /// `GET …/files/{url_path}`.
    Download { url_path: String },
    /// `DELETE …/files/{url_path}`.
    Remove { url_path: String },
    /// `GET …/files`: the files.
    List,
    /// `GET …/files`: the scopes the person may write (SF-2.7), in the order answered.
    UploadScopes,
}

/// `queued`, `parked` or `waiting`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WaitKindName(pub String);

/// `after_text_written`, `after_session_objects_deleted` or `after_obligation_objects_deleted`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CrashPointName(pub String);

/// What an operation answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ScopedOutcome {
    Ok,
    Written {
        path: String,
    },
    Content {
        content: String,
    },
    Text {
        text: Option<String>,
    },
    Listing {
        paths: Vec<String>,
    },
    Published {
        sha256: String,
    },
    /// Sessions swept and obligations completed. (Object counts are not part of the outcome:
    /// how many objects a file takes is the implementation's business.)
    Swept {
        sessions: u64,
        obligations: u64,
    },
    Keys {
        keys: Vec<String>,
    },
    Prefixes {
        prefixes: Vec<String>,
    },
    /// The bucket's lifecycle rules, each described without its id, in id order.
    Rules {
        rules: Vec<String>,
    },
    /// Refused with a reason code (SPEC SC-8); nothing changed.
    Refused {
        reason: String,
        message: String,
    },
    /// The process died at an injected crash point.
    Crashed {
        point: String,
    },
    /// A person's credentials (SF-2.1): the headers their requests carry.
    Credentials {
        headers: BTreeMap<String, String>,
    },
    /// The states of a subject's erasure obligations, sorted (`pending`, `overdue 2d`, `met`,
    /// `missed 1h`: [`super::erasure::state_text`]).
    Erasures {
        states: Vec<String>,
    },
}

/// Plays scoped operations against the reference in process: the harness's steps on its own
/// stores, the implementation's through a [`ScopedService`] (as the reference adapter does).
pub struct ScopedDriver {
    tier: DriverTier,
    meta: Arc<dyn Metadata>,
    config: ScopedConfig,
    service: ScopedService,
    /// Skill names as the scenario spells them -> the sha256 each was published under.
    skills: BTreeMap<String, String>,
    /// People's credentials, and the client their requests go through over HTTP.
    people: PeopleClient,
}

/// Where a driver's bucket and metadata live.
enum DriverTier {
    /// The real tier's S3 server and a fresh PostgreSQL database.
    Real {
        tier: Arc<RealTier>,
        db: Box<TestDatabase>,
    },
    /// The in-memory S3 (behind the same fault wrapper, over loopback HTTP) and the in-memory
    /// metadata store: the simulation tier's stores, checked against the real tier.
    Sim { s3: S3Server },
}

impl DriverTier {
    fn s3(&self) -> &S3Server {
        match self {
            DriverTier::Real { tier, .. } => &tier.s3,
            DriverTier::Sim { s3 } => s3,
        }
    }
}

/// The store's configuration for a scenario: `mutant` switched on, the variants `variants`
/// declares taken, `knobs` applied (only `session_file_ttl_days` exists).
fn config_from(
    mutant: Option<ScopedMutant>,
    variants: &crate::variants::Declared,
    knobs: &BTreeMap<String, i64>,
) -> Result<ScopedConfig, RealTierError> {
    let mut config = ScopedConfig::new("unset");
    config.mutant = mutant;
    config.alternatives = super::variants::alternatives(variants);
    for (k, v) in knobs {
        match k.as_str() {
            "session_file_ttl_days" => {
                config.session_file_ttl_days = u32::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!(
                        "session_file_ttl_days = {v}"
                    )))
                })?
            }
            "max_upload_bytes" => {
                config.max_upload_bytes = u64::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!("max_upload_bytes = {v}")))
                })?
            }
            "tool_output_limit_bytes" => {
                config.tool_output_limit_bytes = u64::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!(
                        "tool_output_limit_bytes = {v}"
                    )))
                })?
            }
            "close_grace_days" => {
                config.close_grace_days = u32::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!("close_grace_days = {v}")))
                })?
            }
            "lifecycle_rule_limit" => {
                config.lifecycle_rule_limit = usize::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!(
                        "lifecycle_rule_limit = {v}"
                    )))
                })?
            }
            other => {
                return Err(RealTierError::Scoped(ScopedError::Config(format!(
                    "the scoped reference has no knob {other:?}"
                ))))
            }
        }
    }
    Ok(config)
}

impl ScopedDriver {
    /// A fresh bucket and database on `tier` for one scenario. `knobs` may set
    /// `session_file_ttl_days`.
    pub async fn start(
        tier: Arc<RealTier>,
        name: &str,
        mutant: Option<ScopedMutant>,
        variants: &crate::variants::Declared,
        knobs: &BTreeMap<String, i64>,
    ) -> Result<ScopedDriver, RealTierError> {
        let clock = ManualClock::default();
        let config = config_from(mutant, variants, knobs)?;
        let (store, db) = tier
            .scoped_store(name, config, Arc::new(clock.clone()))
            .await?;
        let config = store.config().clone();
        let meta: Arc<dyn Metadata> = Arc::new(PostgresMetadata::new(db.pool.clone()));
        let service = ScopedService::over(tier.s3.client(), meta.clone(), config.clone(), clock)
            .await
            .map_err(|e| RealTierError::Scoped(ScopedError::Config(e)))?;
        Ok(ScopedDriver {
            tier: DriverTier::Real {
                tier,
                db: Box::new(db),
            },
            meta,
            config,
            service,
            skills: BTreeMap::new(),
            people: PeopleClient::new(),
        })
    }

    /// The simulation tier's stores for one scenario: a fresh in-memory S3 (behind the fault
    /// wrapper, over loopback HTTP, faults seeded by `seed`) and a fresh in-memory metadata
    /// store. No PostgreSQL is needed.
    pub async fn start_sim(
        mutant: Option<ScopedMutant>,
        variants: &crate::variants::Declared,
        knobs: &BTreeMap<String, i64>,
        seed: u64,
    ) -> Result<ScopedDriver, RealTierError> {
        let mut config = config_from(mutant, variants, knobs)?;
        // LastModified of the in-memory store comes from this clock; the scoped reference
        // stamps its own write times, so a fixed instant is enough (as on the memory backend).
        let s3_clock = Arc::new(ManualClock::starting_at(tidemark_sim::clock::EPOCH));
        let (s3, _) = S3Server::start_memory(s3_clock, seed).await?;
        // A fresh server: its first bucket.
        let bucket = tidemark_sim::real_tier::bucket_name(1);
        s3.client()
            .create_bucket()
            .bucket(&bucket)
            .send()
            .await
            .map_err(|e| RealTierError::S3Client {
                message: format!(
                    "CreateBucket {bucket}: {}",
                    aws_sdk_s3::error::DisplayErrorContext(&e)
                ),
            })?;
        config.bucket = bucket;
        let meta: Arc<dyn Metadata> = Arc::new(MemoryMetadata::new());
        let service = ScopedService::over(
            s3.client(),
            meta.clone(),
            config.clone(),
            ManualClock::default(),
        )
        .await
        .map_err(|e| RealTierError::Scoped(ScopedError::Config(e)))?;
        Ok(ScopedDriver {
            tier: DriverTier::Sim { s3 },
            meta,
            config,
            service,
            skills: BTreeMap::new(),
            people: PeopleClient::new(),
        })
    }

    pub fn bucket(&self) -> &str {
        &self.config.bucket
    }

    /// The scenario's PostgreSQL database (`None` on the simulation tier).
    pub fn database(&self) -> Option<&TestDatabase> {
        match &self.tier {
            DriverTier::Real { db, .. } => Some(db),
            DriverTier::Sim { .. } => None,
        }
    }

    /// The metadata store the driver's store runs over.
    pub fn metadata(&self) -> &Arc<dyn Metadata> {
        &self.meta
    }

    /// Ends the scenario: drops its database, so a run against a `DATABASE_URL` server leaves
    /// it as it found it (an ephemeral cluster goes as a whole anyway).
    pub async fn finish(self) -> Result<(), RealTierError> {
        let ScopedDriver { tier, service, .. } = self;
        drop(service);
        match tier {
            DriverTier::Real { tier, db } => tier.pg.drop_database(*db).await,
            DriverTier::Sim { .. } => Ok(()),
        }
    }

    /// Performs one operation at simulated time `now`: the harness's steps here, every other
    /// step through the [`ScopedService`] exactly as the reference adapter performs it, with
    /// the scenario's skill names mapped to the hashes they were published under. `Err` is a
    /// harness or driver failure (not a refusal, which is an outcome).
    pub async fn call(&mut self, now: Timestamp, op: &ScopedOp) -> Result<ScopedOutcome, String> {
        if let ScopedOp::People {
            person,
            session,
            call,
        } = op
        {
            // Over real HTTP to the reference's people's files API, as for a program.
            let base = self.service.people_api().await?.base_url().to_string();
            return self
                .people
                .send(&base, now.as_millis(), person, session, call)
                .await;
        }
        if side(op) != Side::Harness {
            let out = self
                .service
                .call(now, &with_skill_hashes(op, &self.skills))
                .await?;
            if let (ScopedOp::PublishSkill { name, .. }, ScopedOutcome::Published { sha256 }) =
                (op, &out)
            {
                self.skills.insert(name.clone(), sha256.clone());
            }
            if let (ScopedOp::Person { person, .. }, ScopedOutcome::Credentials { headers }) =
                (op, &out)
            {
                self.people.remember(person, headers.clone());
                return Ok(ScopedOutcome::Ok);
            }
            return Ok(out);
        }
        match self.harness_step(now, op).await {
            Ok(o) => Ok(o),
            Err(Failure::Scoped(e)) => Ok(ScopedOutcome::Refused {
                reason: e.kind().to_string(),
                message: e.to_string(),
            }),
            Err(Failure::Harness(m)) => Err(m),
        }
    }

    /// The steps the harness performs on its own stores (PROTOCOL.md's harness side).
    async fn harness_step(
        &mut self,
        now: Timestamp,
        op: &ScopedOp,
    ) -> Result<ScopedOutcome, Failure> {
        let s = self.service.store();
        Ok(match op {
            ScopedOp::Restart => {
                self.service.restart().await?;
                ScopedOutcome::Ok
            }
            ScopedOp::Faults { .. } => {
                if let Some(plan) = fault_plan(op) {
                    self.tier.s3().faults().set_plan(plan);
                }
                ScopedOutcome::Ok
            }
            ScopedOp::Heal => {
                self.tier.s3().faults().heal();
                ScopedOutcome::Ok
            }
            ScopedOp::BucketKeys { prefix } => ScopedOutcome::Keys {
                keys: bucket_keys(&self.tier.s3().client(), &self.config.bucket, prefix)
                    .await
                    .map_err(Failure::Harness)?,
            },
            ScopedOp::PendingDeletions => ScopedOutcome::Prefixes {
                prefixes: s
                    .deletion_obligations()
                    .await?
                    .into_iter()
                    .filter(|o| o.done_at_ms.is_none())
                    .map(|o| o.prefix)
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            },
            ScopedOp::DeletionRecords => ScopedOutcome::Prefixes {
                prefixes: s
                    .deletion_records()
                    .await?
                    .into_iter()
                    .map(|r| r.prefix)
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            },
            ScopedOp::LifecycleRules => ScopedOutcome::Rules {
                rules: lifecycle_rules(&self.tier.s3().client(), &self.config.bucket)
                    .await
                    .map_err(Failure::Harness)?,
            },
            ScopedOp::RunAgeRule { prefix, days } => ScopedOutcome::Keys {
                keys: run_age_rule(
                    &self.tier.s3().client(),
                    &self.config.bucket,
                    prefix,
                    *days,
                    now,
                )
                .await
                .map_err(Failure::Harness)?,
            },
            ScopedOp::ErasureStates { workspace, agent } => ScopedOutcome::Erasures {
                states: self
                    .erasure_ledger()
                    .await?
                    .states(&subject_text(workspace, agent.as_deref()), now.as_millis())?,
            },
            ScopedOp::ErasureProof { workspace, agent } => ScopedOutcome::Keys {
                keys: self
                    .erasure_ledger()
                    .await?
                    .proof(&subject_text(workspace, agent.as_deref()), now.as_millis())?,
            },
            other => {
                return Err(Failure::Harness(format!(
                    "{} is not a harness step",
                    op_name(other)
                )))
            }
        })
    }
}

impl ScopedDriver {
    /// The erasure obligations and proofs as the reference keeps them: read with its declared
    /// queries from PostgreSQL (SL-4.7), or from the in-memory store on the simulation tier.
    async fn erasure_ledger(&self) -> Result<super::erasure::ErasureLedger, Failure> {
        Ok(match &self.tier {
            DriverTier::Real { db, .. } => {
                super::erasure::ErasureQueries::reference()
                    .read(&db.pool)
                    .await?
            }
            DriverTier::Sim { .. } => {
                super::erasure::ErasureLedger::of_metadata(self.meta.as_ref()).await?
            }
        })
    }
}

enum Failure {
    Scoped(ScopedError),
    Harness(String),
}

impl From<ScopedError> for Failure {
    fn from(e: ScopedError) -> Self {
        Failure::Scoped(e)
    }
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Harness(e)
    }
}

/// Drives a write raced against a paused sweep until it either lands (the sweep did not hold
/// the session: a bug) or is seen blocked on a row lock in PostgreSQL (the sweep holds it:
/// correct), so the race's outcome does not depend on how loaded the machine is. Gives up
/// waiting after ten seconds.
pub async fn race_until_blocked<F, T>(
    write: &mut std::pin::Pin<&mut F>,
    pool: &sqlx::PgPool,
) -> Option<T>
where
    F: std::future::Future<Output = T>,
{
    race_until_blocked_on(write, &PostgresMetadata::new(pool.clone())).await
}

/// A sweep of `store` (opened with `pause` as its rendezvous) raced by the write `write` makes:
/// the write is issued once the sweep has claimed its candidates and driven until it lands or
/// is seen blocked on a row lock, then the sweep goes on (and a blocked write after it). A sweep that never reaches the
/// rendezvous (a mutant sweeping another way) finishes first and the write follows it, so the
/// race never hangs.
pub async fn race_write_against_sweep<W, T>(
    store: &ScopedStore,
    pause: &SweepPause,
    meta: &dyn Metadata,
    write: impl FnOnce() -> W,
) -> (Result<SweepReport, ScopedError>, T)
where
    W: std::future::Future<Output = T>,
{
    let (swept, written, _) = race_against_sweep(store, pause, meta, write).await;
    (swept, written)
}

/// [`race_write_against_sweep`], also telling whether the write landed while the sweep was
/// paused after claiming its candidates (`true`), rather than after the whole sweep: what the
/// sweep does after that pause (part SL's count policies rank sessions by activity) sees it.
pub async fn race_against_sweep<W, T>(
    store: &ScopedStore,
    pause: &SweepPause,
    meta: &dyn Metadata,
    write: impl FnOnce() -> W,
) -> (Result<SweepReport, ScopedError>, T, bool)
where
    W: std::future::Future<Output = T>,
{
    let sweep = store.sweep();
    tokio::pin!(sweep);
    // `biased`: tokio otherwise picks among ready branches at random, from a seed of its own.
    tokio::select! {
        biased;
        swept = &mut sweep => (swept, write().await, false),
        _ = pause.reached.notified() => {
            let write = write();
            tokio::pin!(write);
            let landed = race_until_blocked_on(&mut write, meta).await;
            pause.resume.notify_one();
            match landed {
                Some(written) => (sweep.await, written, true),
                // Blocked behind the sweep: the sweep finishes first, then the write is driven
                // on. Polling both at once would let the write's S3 requests interleave with
                // the rest of the sweep's by timing, and faults drawn per request would no
                // longer replay by seed.
                None => {
                    let swept = sweep.await;
                    (swept, write.await, false)
                }
            }
        }
    }
}

/// [`race_until_blocked`] over any metadata store: "blocked" is a statement waiting for a row
/// lock ([`Metadata::lock_waiters`]).
pub async fn race_until_blocked_on<F, T>(
    write: &mut std::pin::Pin<&mut F>,
    meta: &dyn Metadata,
) -> Option<T>
where
    F: std::future::Future<Output = T>,
{
    let started = std::time::Instant::now();
    loop {
        tokio::select! {
            r = write.as_mut() => return Some(r),
            _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {
                let blocked = meta.lock_waiters().await.unwrap_or(0);
                if blocked > 0 || started.elapsed() > std::time::Duration::from_secs(10) {
                    return None;
                }
            }
        }
    }
}

//! The scoped reference implementation driven by operations as data: what a conformance
//! adapter (and a scenario file) needs. One [`ScopedDriver`] is one scenario: its own bucket,
//! its own metadata (a fresh PostgreSQL database on the real tier, a fresh in-memory store on
//! the simulation tier), a clock set from each operation's timestamp, faults, crashes and
//! restarts from what was persisted, and inspection of the bucket and the obligations.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tidemark_reference::clock::{Clock, ManualClock, Timestamp};
use tidemark_reference::scoped::lifecycle::{Filter, LifecycleConfiguration, Rule};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, PostgresMetadata};
use tidemark_reference::scoped::{
    Access, CrashPoint, ScopeSettings, ScopedConfig, ScopedError, ScopedMutant, ScopedStore,
    SweepPause, SweepReport, TurnSpace, WaitKind,
};

use super::{FaultPlan, RealTier, RealTierError, S3Server, TestDatabase};
use crate::lifecycle::LifecycleExecutor;

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
    /// Puts the profile's lifecycle configuration on the bucket.
    ApplyLifecycle {
        session_backstop_days: u32,
    },
    /// Runs an age-only expiry rule over `prefix` with the lifecycle executor (AWS semantics).
    RunAgeRule {
        prefix: String,
        days: u32,
    },
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
    /// Refused with a reason code (SPEC SC-8); nothing changed.
    Refused {
        reason: String,
        message: String,
    },
    /// The process died at an injected crash point.
    Crashed {
        point: String,
    },
}

pub struct ScopedDriver {
    tier: DriverTier,
    meta: Arc<dyn Metadata>,
    clock: ManualClock,
    config: ScopedConfig,
    store: ScopedStore,
    skills: BTreeMap<String, String>,
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

fn wait_kind(k: &WaitKindName) -> Result<WaitKind, String> {
    match k.0.as_str() {
        "queued" => Ok(WaitKind::Queued),
        "parked" => Ok(WaitKind::Parked),
        "waiting" => Ok(WaitKind::Waiting),
        other => Err(format!("no wait kind {other:?}")),
    }
}

fn crash_point(p: &CrashPointName) -> Result<CrashPoint, String> {
    match p.0.as_str() {
        "after_text_written" => Ok(CrashPoint::AfterTextWritten),
        "after_session_objects_deleted" => Ok(CrashPoint::AfterSessionObjectsDeleted),
        "after_obligation_objects_deleted" => Ok(CrashPoint::AfterObligationObjectsDeleted),
        other => Err(format!("no crash point {other:?}")),
    }
}

fn settings(agent: Option<Access>, workspace: Option<Access>) -> ScopeSettings {
    ScopeSettings { agent, workspace }
}

/// The store's configuration for a scenario: `mutant` switched on, `knobs` applied (only
/// `session_file_ttl_days` exists).
fn config_from(
    mutant: Option<ScopedMutant>,
    knobs: &BTreeMap<String, i64>,
) -> Result<ScopedConfig, RealTierError> {
    let mut config = ScopedConfig::new("unset");
    config.mutant = mutant;
    for (k, v) in knobs {
        match k.as_str() {
            "session_file_ttl_days" => {
                config.session_file_ttl_days = u32::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!(
                        "session_file_ttl_days = {v}"
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
        knobs: &BTreeMap<String, i64>,
    ) -> Result<ScopedDriver, RealTierError> {
        let clock = ManualClock::default();
        let config = config_from(mutant, knobs)?;
        let (store, db) = tier
            .scoped_store(name, config, Arc::new(clock.clone()))
            .await?;
        let config = store.config().clone();
        let meta: Arc<dyn Metadata> = Arc::new(PostgresMetadata::new(db.pool.clone()));
        Ok(ScopedDriver {
            tier: DriverTier::Real {
                tier,
                db: Box::new(db),
            },
            meta,
            clock,
            config,
            store,
            skills: BTreeMap::new(),
        })
    }

    /// The simulation tier's stores for one scenario: a fresh in-memory S3 (behind the fault
    /// wrapper, over loopback HTTP, faults seeded by `seed`) and a fresh in-memory metadata
    /// store. No PostgreSQL is needed.
    pub async fn start_sim(
        name: &str,
        mutant: Option<ScopedMutant>,
        knobs: &BTreeMap<String, i64>,
        seed: u64,
    ) -> Result<ScopedDriver, RealTierError> {
        let clock = ManualClock::default();
        let mut config = config_from(mutant, knobs)?;
        // LastModified of the in-memory store comes from this clock; the scoped reference
        // stamps its own write times, so a fixed instant is enough (as on the memory backend).
        let s3_clock = Arc::new(ManualClock::starting_at(crate::clock::EPOCH));
        let (s3, _) = S3Server::start_memory(s3_clock, seed).await?;
        let bucket = super::bucket_name(name, "sim");
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
        let store = ScopedStore::with_metadata(
            s3.client(),
            meta.clone(),
            config.clone(),
            Arc::new(clock.clone()),
        )
        .await?;
        Ok(ScopedDriver {
            tier: DriverTier::Sim { s3 },
            meta,
            clock,
            config,
            store,
            skills: BTreeMap::new(),
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

    async fn reopen(&mut self, config: ScopedConfig) -> Result<(), String> {
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        self.store =
            ScopedStore::with_metadata(self.tier.s3().client(), self.meta.clone(), config, clock)
                .await
                .map_err(|e| format!("the store did not reopen: {e}"))?;
        Ok(())
    }

    fn space(&self, t: &Turn) -> Result<TurnSpace, ScopedError> {
        let mut space = TurnSpace::new(&t.workspace, &t.agent, &t.session)?;
        for (slug, name) in &t.skills {
            let sha = self
                .skills
                .get(name)
                .cloned()
                .unwrap_or_else(|| name.clone());
            space = space.with_skill(slug, &sha);
        }
        Ok(space)
    }

    /// Performs one operation at simulated time `now`. `Err` is a harness or driver failure
    /// (not a refusal, which is an outcome).
    pub async fn call(&mut self, now: Timestamp, op: &ScopedOp) -> Result<ScopedOutcome, String> {
        self.clock.set(now);
        let result = self.perform(op).await;
        match result {
            Ok(o) => Ok(o),
            Err(Failure::Scoped(ScopedError::Crashed(p))) => {
                // The process is gone: the next process starts clean of injected crashes.
                let mut config = self.config.clone();
                config.crash_at = None;
                self.reopen(config).await?;
                Ok(ScopedOutcome::Crashed {
                    point: format!("{p:?}"),
                })
            }
            Err(Failure::Scoped(e)) => Ok(ScopedOutcome::Refused {
                reason: e.kind().to_string(),
                message: e.to_string(),
            }),
            Err(Failure::Harness(m)) => Err(m),
        }
    }

    async fn perform(&mut self, op: &ScopedOp) -> Result<ScopedOutcome, Failure> {
        let s = &self.store;
        Ok(match op {
            ScopedOp::CreateWorkspace {
                workspace,
                agent_access,
                workspace_access,
            } => {
                s.create_workspace(workspace, settings(*agent_access, *workspace_access))
                    .await?;
                ScopedOutcome::Ok
            }
            ScopedOp::CreateAgent {
                workspace,
                agent,
                agent_access,
                workspace_access,
            } => {
                s.create_agent(workspace, agent, settings(*agent_access, *workspace_access))
                    .await?;
                ScopedOutcome::Ok
            }
            ScopedOp::CreateSession { turn } => {
                s.create_session(&self.space(turn)?).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::Activity { turn } => {
                s.record_activity(&self.space(turn)?).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::AddWait { turn, kind, id } => {
                s.add_wait(&self.space(turn)?, wait_kind(kind)?, id).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::RemoveWait { turn, kind, id } => {
                s.remove_wait(&self.space(turn)?, wait_kind(kind)?, id)
                    .await?;
                ScopedOutcome::Ok
            }
            ScopedOp::Write {
                turn,
                path,
                content,
            } => {
                let r = s
                    .write(&self.space(turn)?, path, content.as_bytes().to_vec())
                    .await?;
                ScopedOutcome::Written {
                    path: r.guest_path(),
                }
            }
            ScopedOp::WriteDuringSweep {
                turn,
                path,
                content,
            } => {
                let pause = Arc::new(SweepPause::default());
                let mut config = self.config.clone();
                config.sweep_pause = Some(pause.clone());
                self.reopen(config).await?;
                let space = self.space(turn)?;
                let (swept, written) =
                    race_write_against_sweep(&self.store, &pause, self.meta.as_ref(), || {
                        self.store.write(&space, path, content.as_bytes().to_vec())
                    })
                    .await;
                self.reopen(self.config.clone()).await?;
                swept?;
                ScopedOutcome::Written {
                    path: written?.guest_path(),
                }
            }
            ScopedOp::Read { turn, path } => {
                let bytes = s.read(&self.space(turn)?, path).await?;
                ScopedOutcome::Content {
                    content: String::from_utf8_lossy(&bytes).into_owned(),
                }
            }
            ScopedOp::ReadText { turn, path } => ScopedOutcome::Text {
                text: s.read_text(&self.space(turn)?, path).await?,
            },
            ScopedOp::List { turn, prefix } => ScopedOutcome::Listing {
                paths: s
                    .list(&self.space(turn)?, prefix.as_deref())
                    .await?
                    .into_iter()
                    .map(|f| f.path)
                    .collect(),
            },
            ScopedOp::Delete { turn, path } => {
                s.delete(&self.space(turn)?, path).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::PublishSkill {
                workspace,
                name,
                files,
            } => {
                let files = files
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_bytes().to_vec()))
                    .collect();
                let sha = s.publish_skill_version(workspace, &files).await?;
                self.skills.insert(name.clone(), sha.clone());
                ScopedOutcome::Published { sha256: sha }
            }
            ScopedOp::DeleteSession { turn } => {
                s.delete_session(&self.space(turn)?).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::DeleteAgent { workspace, agent } => {
                s.delete_agent(workspace, agent).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::DeleteWorkspace { workspace } => {
                s.delete_workspace(workspace).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::Sweep => {
                let r = s.sweep().await?;
                ScopedOutcome::Swept {
                    sessions: r.sessions_swept,
                    obligations: r.obligations_completed,
                }
            }
            ScopedOp::CrashAt { point } => {
                let mut config = self.config.clone();
                config.crash_at = Some(crash_point(point)?);
                self.reopen(config).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::Restart => {
                self.reopen(self.config.clone()).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::Faults {
                down,
                error_rate,
                delete_key_failure_rate,
                fail_requests,
            } => {
                self.tier.s3().faults().set_plan(FaultPlan {
                    down: *down,
                    error_rate: *error_rate,
                    delete_key_failure_rate: *delete_key_failure_rate,
                    latency: std::time::Duration::ZERO,
                    fail_requests: fail_requests.clone(),
                });
                ScopedOutcome::Ok
            }
            ScopedOp::Heal => {
                self.tier.s3().faults().heal();
                ScopedOutcome::Ok
            }
            ScopedOp::BucketKeys { prefix } => ScopedOutcome::Keys {
                keys: self.bucket_keys(prefix).await?,
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
            ScopedOp::ApplyLifecycle {
                session_backstop_days,
            } => {
                s.apply_lifecycle(&LifecycleConfiguration::for_profile(
                    *session_backstop_days,
                    7,
                ))
                .await?;
                ScopedOutcome::Ok
            }
            ScopedOp::RunAgeRule { prefix, days } => {
                let ex = LifecycleExecutor::new(LifecycleConfiguration {
                    rules: vec![Rule {
                        id: "age-only".into(),
                        enabled: true,
                        filter: Some(Filter::Prefix(prefix.clone())),
                        expiration_days: Some(*days),
                        abort_incomplete_multipart_days: None,
                    }],
                })
                .map_err(|e| Failure::Harness(e.to_string()))?;
                ScopedOutcome::Keys {
                    keys: ex
                        .run_on_bucket(
                            &self.tier.s3().client(),
                            &self.config.bucket,
                            self.clock.now(),
                        )
                        .await
                        .map_err(Failure::Harness)?,
                }
            }
        })
    }

    async fn bucket_keys(&self, prefix: &str) -> Result<Vec<String>, Failure> {
        let client = self.tier.s3().client();
        let mut keys = Vec::new();
        let mut token = None;
        loop {
            let page = client
                .list_objects_v2()
                .bucket(&self.config.bucket)
                .prefix(prefix)
                .set_continuation_token(token.take())
                .send()
                .await
                .map_err(|e| {
                    Failure::Harness(format!(
                        "listing the bucket: {}",
                        aws_sdk_s3::error::DisplayErrorContext(&e)
                    ))
                })?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_string)),
            );
            match (page.is_truncated(), page.next_continuation_token()) {
                (Some(true), Some(t)) => token = Some(t.to_string()),
                _ => break,
            }
        }
        Ok(keys)
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
/// is seen blocked on a row lock, then the sweep goes on. A sweep that never reaches the
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
    let sweep = store.sweep();
    tokio::pin!(sweep);
    tokio::select! {
        swept = &mut sweep => (swept, write().await),
        _ = pause.reached.notified() => {
            let write = write();
            tokio::pin!(write);
            let landed = race_until_blocked_on(&mut write, meta).await;
            pause.resume.notify_one();
            match landed {
                Some(written) => (sweep.await, written),
                None => tokio::join!(sweep, write),
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

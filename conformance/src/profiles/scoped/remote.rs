//! The scoped profile split across a process boundary (conformance/PROTOCOL.md, "The scoped
//! profile"): which operations an implementation answers and which steps the harness performs
//! itself, the implementation side as the reference adapter runs it ([`ScopedService`]: a
//! [`ScopedStore`] on the bucket and database the harness handed over), and the harness side's
//! steps ([`bucket_keys`], [`run_age_rule`], [`fault_plan`]; the ledger is read by
//! [`super::ledger`]).
//!
//! The in-process [`super::ScopedDriver`] does both halves in one place: it performs the
//! harness's steps itself and hands every other step to a [`ScopedService`] over its own stores,
//! so the mapping from an operation to the store is written once, here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
pub use sqlx::PgPool;
use tidemark_reference::clock::{Clock, ManualClock, Timestamp};
use tidemark_reference::scoped::lifecycle::{Filter, LifecycleConfiguration, Rule};
use tidemark_reference::scoped::metadata::{Metadata, PostgresMetadata};
use tidemark_reference::scoped::people::{PeopleApi, Person, StoreSlot};
use tidemark_reference::scoped::{
    CrashPoint, ScopeSettings, ScopedConfig, ScopedError, ScopedMutant, ScopedStore, SweepPause,
    TurnSpace, WaitKind,
};

use super::driver::{race_write_against_sweep, ScopedOp, ScopedOutcome, Turn};
use tidemark_sim::lifecycle::LifecycleExecutor;
use tidemark_sim::real_tier::FaultPlan;

/// Who performs a scoped step when the implementation runs in another process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Sent to the implementation as a request; it answers with an outcome.
    Implementation,
    /// Sent to the implementation only if it claims this capability; otherwise the scenario is
    /// skipped, not failed.
    ImplementationWith(&'static str),
    /// The harness performs it on its own S3 server, its own database, or the process itself.
    Harness,
    /// The harness sends it over HTTP to the people's files API the implementation named
    /// (SPEC part SF), as the person it names; only to a program claiming [`PEOPLE_API`].
    People,
}

/// The capability a program claims to be sent `crash_at` (and to die where it says).
pub const CRASH_POINTS: &str = "crash_points";
/// The capability a program claims to be sent `write_during_sweep` (and race it itself).
pub const WRITE_DURING_SWEEP: &str = "write_during_sweep";
/// The capability a program claims when every object it puts carries the user metadata
/// `tidemark-written-at-ms` (SC-7.4), so the harness can run an age-only lifecycle rule on the
/// scenario's clock.
pub const WRITTEN_AT_STAMP: &str = "written_at_stamp";
/// The capability a program claims when it serves the people's files API (SPEC part SF) and
/// names its base URL in `init_ok` (`people_api`): it is then sent `person` requests, and the
/// harness sends people's requests over HTTP.
pub const PEOPLE_API: &str = "people_api";

/// The capability a program claims to be sent SPEC part SL's requests (retention policies).
pub const RETENTION_POLICIES: &str = "retention_policies";

/// The capability a program claims to be sent `close_session` (SPEC SL-3) and to sweep what
/// it closed: a program claiming only [`RETENTION_POLICIES`] skips the scenarios of a close.
pub const SESSION_CLOSE: &str = "session_close";

/// The capability a program claims to be sent `concurrent_sweeps` (SPEC SL-1.3) and run two
/// sweeps at once itself, as [`WRITE_DURING_SWEEP`] races a write.
pub const CONCURRENT_SWEEPS: &str = "concurrent_sweeps";

/// The capability a program claims to be sent erasure requests (SPEC SL-4) and to have its
/// erasure obligations and proofs read with the queries it declares in `init_ok`'s `erasure`.
pub const ERASURE_OBLIGATIONS: &str = "erasure_obligations";

/// The capability a program claims to be sent SPEC SL-5's request (a workspace's own retention,
/// `set_workspace_retention`), and to build its lifecycle rules from the retentions it accepted.
pub const WORKSPACE_RETENTION: &str = "workspace_retention";

/// The capability a step needs of the implementation, if any: one sent only to a program
/// claiming it, or a harness step that reads what only such a program writes (an age-only rule
/// reads the write stamps, SC-7.4).
pub fn capability_needed(op: &ScopedOp) -> Option<&'static str> {
    match (op, side(op)) {
        (_, Side::ImplementationWith(c)) => Some(c),
        (_, Side::People) => Some(PEOPLE_API),
        (ScopedOp::RunAgeRule { .. }, _) => Some(WRITTEN_AT_STAMP),
        // Read with the queries only a program claiming it declares (SL-4.7).
        (ScopedOp::ErasureStates { .. } | ScopedOp::ErasureProof { .. }, _) => {
            Some(ERASURE_OBLIGATIONS)
        }
        _ => None,
    }
}

/// Where each operation is performed (PROTOCOL.md lists the same split).
pub fn side(op: &ScopedOp) -> Side {
    match op {
        ScopedOp::CreateWorkspace { .. }
        | ScopedOp::CreateAgent { .. }
        | ScopedOp::CreateSession { .. }
        | ScopedOp::Activity { .. }
        | ScopedOp::AddWait { .. }
        | ScopedOp::RemoveWait { .. }
        | ScopedOp::Write { .. }
        | ScopedOp::Read { .. }
        | ScopedOp::ReadText { .. }
        | ScopedOp::List { .. }
        | ScopedOp::Delete { .. }
        | ScopedOp::PublishSkill { .. }
        | ScopedOp::DeleteSession { .. }
        | ScopedOp::DeleteAgent { .. }
        | ScopedOp::DeleteWorkspace { .. }
        | ScopedOp::Sweep
        | ScopedOp::ApplyLifecycle { .. } => Side::Implementation,
        ScopedOp::CrashAt { .. } => Side::ImplementationWith(CRASH_POINTS),
        ScopedOp::WriteDuringSweep { .. } => Side::ImplementationWith(WRITE_DURING_SWEEP),
        ScopedOp::Person { .. } => Side::ImplementationWith(PEOPLE_API),
        ScopedOp::People { .. } => Side::People,
        ScopedOp::SetSessionCount { .. }
        | ScopedOp::Promote { .. }
        | ScopedOp::ToolOutput { .. } => Side::ImplementationWith(RETENTION_POLICIES),
        ScopedOp::CloseSession { .. } => Side::ImplementationWith(SESSION_CLOSE),
        ScopedOp::ConcurrentSweeps => Side::ImplementationWith(CONCURRENT_SWEEPS),
        ScopedOp::RequestErasure { .. } => Side::ImplementationWith(ERASURE_OBLIGATIONS),
        ScopedOp::SetWorkspaceRetention { .. } => Side::ImplementationWith(WORKSPACE_RETENTION),
        ScopedOp::Restart
        | ScopedOp::Faults { .. }
        | ScopedOp::Heal
        | ScopedOp::BucketKeys { .. }
        | ScopedOp::PendingDeletions
        | ScopedOp::DeletionRecords
        | ScopedOp::LifecycleRules
        | ScopedOp::RunAgeRule { .. }
        | ScopedOp::ErasureStates { .. }
        | ScopedOp::ErasureProof { .. } => Side::Harness,
    }
}

/// The operation's name on the wire (its `op` tag).
pub fn op_name(op: &ScopedOp) -> String {
    serde_json::to_value(op)
        .ok()
        .and_then(|v| v.get("op").and_then(|o| o.as_str()).map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// The object store an implementation is handed in `init`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Access {
    pub endpoint_url: String,
    pub region: String,
    pub bucket: String,
    pub access_key_id: String,
    pub secret_access_key: String,
}

/// The endpoint as the scoped service opens it: the same five values under the name the
/// real tier uses.
impl From<&crate::protocol::S3Endpoint> for S3Access {
    fn from(s3: &crate::protocol::S3Endpoint) -> Self {
        S3Access {
            endpoint_url: s3.endpoint_url.clone(),
            region: s3.region.clone(),
            bucket: s3.bucket.clone(),
            access_key_id: s3.access_key_id.clone(),
            secret_access_key: s3.secret_access_key.clone(),
        }
    }
}

/// An aws-sdk-s3 client for `access` (configured as [`tidemark_sim::real_tier::s3_client`]: path style, no retries).
pub fn s3_client_for(access: &S3Access) -> aws_sdk_s3::Client {
    tidemark_sim::real_tier::server::s3_client_with(
        &access.endpoint_url,
        &access.region,
        &access.access_key_id,
        &access.secret_access_key,
    )
}

/// A pool on the database at `url`.
pub async fn connect(url: &str) -> Result<PgPool, String> {
    PgPoolOptions::new()
        .max_connections(8)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .map_err(|e| format!("cannot connect to PostgreSQL at {url}: {e}"))
}

/// The scoped reference's configuration for `bucket`: `mutant` switched on, `knobs` applied
/// (only `session_file_ttl_days` exists; any other knob is refused).
pub fn config_for(
    bucket: &str,
    knobs: &BTreeMap<String, i64>,
    mutant: Option<ScopedMutant>,
) -> Result<ScopedConfig, String> {
    let mut config = ScopedConfig::new(bucket);
    config.mutant = mutant;
    for (k, v) in knobs {
        match k.as_str() {
            "session_file_ttl_days" => {
                config.session_file_ttl_days = u32::try_from(*v)
                    .map_err(|_| format!("session_file_ttl_days = {v} is out of range"))?
            }
            "max_upload_bytes" => {
                config.max_upload_bytes = u64::try_from(*v)
                    .map_err(|_| format!("max_upload_bytes = {v} is out of range"))?
            }
            "tool_output_limit_bytes" => {
                config.tool_output_limit_bytes = u64::try_from(*v)
                    .map_err(|_| format!("tool_output_limit_bytes = {v} is out of range"))?
            }
            "close_grace_days" => {
                config.close_grace_days = u32::try_from(*v)
                    .map_err(|_| format!("close_grace_days = {v} is out of range"))?
            }
            "lifecycle_rule_limit" => {
                config.lifecycle_rule_limit = usize::try_from(*v)
                    .map_err(|_| format!("lifecycle_rule_limit = {v} is out of range"))?
            }
            other => return Err(format!("the scoped reference has no knob {other:?}")),
        }
    }
    Ok(config)
}

/// [`config_for`], the reference taking the SPEC.md variants `variants` declares.
pub fn config_taking(
    bucket: &str,
    knobs: &BTreeMap<String, i64>,
    mutant: Option<ScopedMutant>,
    variants: &crate::variants::Declared,
) -> Result<ScopedConfig, String> {
    let mut config = config_for(bucket, knobs, mutant)?;
    config.alternatives = super::variants::alternatives(variants);
    Ok(config)
}

/// The reference implementation's side of the scoped profile: a [`ScopedStore`] over a bucket
/// and a metadata store, its clock set from each request's time. The reference adapter runs one
/// over what `init` handed it; the in-process driver runs one over its own stores.
pub struct ScopedService {
    s3: aws_sdk_s3::Client,
    meta: Arc<dyn Metadata>,
    clock: ManualClock,
    config: ScopedConfig,
    store: Arc<ScopedStore>,
    /// The store the people's files API serves: the same one, replaced on every reopen.
    slot: StoreSlot,
    /// The people's files API, started on the first `person` request (or by
    /// [`ScopedService::people_api`]).
    people: Option<PeopleApi>,
}

impl ScopedService {
    /// Opens the store over the bucket and PostgreSQL database the harness handed over
    /// (bringing the schema up to date).
    pub async fn open(
        s3: &S3Access,
        postgres_url: &str,
        knobs: &BTreeMap<String, i64>,
        mutant: Option<ScopedMutant>,
    ) -> Result<ScopedService, String> {
        ScopedService::open_taking(
            s3,
            postgres_url,
            knobs,
            mutant,
            &crate::variants::Declared::defaults(),
            None,
        )
        .await
    }

    /// [`ScopedService::open`], the reference taking the SPEC.md variants `variants` declares
    /// (the reference adapter's `--variant`) and, when given, spelling its text area
    /// `text_segment` (SC-1.4; the adapter's `--text-segment`).
    pub async fn open_taking(
        s3: &S3Access,
        postgres_url: &str,
        knobs: &BTreeMap<String, i64>,
        mutant: Option<ScopedMutant>,
        variants: &crate::variants::Declared,
        text_segment: Option<&str>,
    ) -> Result<ScopedService, String> {
        let mut config = config_taking(&s3.bucket, knobs, mutant, variants)?;
        if let Some(segment) = text_segment {
            config.text_segment = segment.to_string();
        }
        let pool = connect(postgres_url).await?;
        let meta: Arc<dyn Metadata> = Arc::new(PostgresMetadata::new(pool));
        ScopedService::over(s3_client_for(s3), meta, config, ManualClock::default()).await
    }

    /// Opens the store over `s3` (the bucket is `config.bucket`) and `meta`, reading time from
    /// `clock`, which [`ScopedService::call`] sets.
    pub async fn over(
        s3: aws_sdk_s3::Client,
        meta: Arc<dyn Metadata>,
        config: ScopedConfig,
        clock: ManualClock,
    ) -> Result<ScopedService, String> {
        let store = Arc::new(
            ScopedStore::with_metadata(
                s3.clone(),
                meta.clone(),
                config.clone(),
                Arc::new(clock.clone()),
            )
            .await
            .map_err(|e| format!("the store did not open: {e}"))?,
        );
        Ok(ScopedService {
            s3,
            meta,
            clock,
            config,
            slot: Arc::new(std::sync::RwLock::new(store.clone())),
            store,
            people: None,
        })
    }

    /// The store as it is now (a crash point or a raced sweep may have reopened it).
    pub fn store(&self) -> &ScopedStore {
        &self.store
    }

    /// The base URL of the people's files API, once started.
    pub fn people_base_url(&self) -> Option<&str> {
        self.people.as_ref().map(PeopleApi::base_url)
    }

    /// The people's files API over this store (SPEC part SF), started on loopback the first
    /// time it is asked for, its clock the one every request sets (time handed in through the
    /// `tidemark-now-ms` header). Its tokens are seeded by the bucket's name, so a run replays.
    pub async fn people_api(&mut self) -> Result<&PeopleApi, String> {
        if self.people.is_none() {
            let secret = format!("tidemark-people-api/{}", self.config.bucket);
            let api = PeopleApi::serve(
                self.slot.clone(),
                Some(self.clock.clone()),
                secret.as_bytes(),
            )
            .await
            .map_err(|e| format!("the people's files API did not start: {e}"))?;
            self.people = Some(api);
        }
        Ok(self.people.as_ref().expect("started above"))
    }

    /// A new process over what the old one persisted.
    pub async fn restart(&mut self) -> Result<(), String> {
        self.reopen(self.config.clone()).await
    }

    async fn reopen(&mut self, config: ScopedConfig) -> Result<(), String> {
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        self.store = Arc::new(
            ScopedStore::with_metadata(self.s3.clone(), self.meta.clone(), config, clock)
                .await
                .map_err(|e| format!("the store did not reopen: {e}"))?,
        );
        *self.slot.write().expect("the store slot is never poisoned") = self.store.clone();
        Ok(())
    }

    /// Performs one operation at `now`. Refusals are outcomes; `Err` is an operation this side
    /// does not perform (a harness-side step) or a failure to reopen after a crash.
    pub async fn call(&mut self, now: Timestamp, op: &ScopedOp) -> Result<ScopedOutcome, String> {
        self.clock.set(now);
        match self.perform(op).await {
            Ok(o) => Ok(o),
            Err(Failure::Scoped(ScopedError::Crashed(p))) => {
                // The process "died" there; a harness kills and restarts it after this answer,
                // and a store reopened here starts clean of injected crashes too.
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
            Err(Failure::Other(m)) => Err(m),
        }
    }

    async fn perform(&mut self, op: &ScopedOp) -> Result<ScopedOutcome, Failure> {
        Ok(match op {
            ScopedOp::WriteDuringSweep {
                turn,
                path,
                content,
            } => {
                let pause = Arc::new(SweepPause::default());
                let mut config = self.config.clone();
                config.sweep_pause = Some(pause.clone());
                self.reopen(config).await?;
                let space = space(&self.store, turn)?;
                let store: &ScopedStore = &self.store;
                let (swept, written) =
                    race_write_against_sweep(store, &pause, store.metadata().as_ref(), || {
                        store.write(&space, path, content.as_bytes().to_vec())
                    })
                    .await;
                self.reopen(self.config.clone()).await?;
                swept?;
                ScopedOutcome::Written {
                    path: written?.guest_path(),
                }
            }
            ScopedOp::ConcurrentSweeps => {
                let pause = Arc::new(SweepPause::default());
                let mut config = self.config.clone();
                config.policy_pause = Some(pause.clone());
                self.reopen(config).await?;
                // A second store over the same bucket and database: another process's sweeper.
                let other = ScopedStore::with_metadata(
                    self.s3.clone(),
                    self.meta.clone(),
                    self.config.clone(),
                    Arc::new(self.clock.clone()),
                )
                .await?;
                let store: &ScopedStore = &self.store;
                let (first, second) =
                    super::sweeps_at_once::race(store, &pause, &other, store.metadata().as_ref())
                        .await;
                self.reopen(self.config.clone()).await?;
                let (first, second) = (first?, second?);
                ScopedOutcome::Swept {
                    sessions: first.sessions_swept + second.sessions_swept,
                    obligations: first.obligations_completed + second.obligations_completed,
                }
            }
            ScopedOp::CrashAt { point } => {
                let mut config = self.config.clone();
                config.crash_at = Some(crash_point(&point.0)?);
                self.reopen(config).await?;
                ScopedOutcome::Ok
            }
            ScopedOp::Person {
                workspace,
                agent_files,
                workspace_files,
                sessions,
                ..
            } => ScopedOutcome::Credentials {
                headers: self.people_api().await?.mint(Person {
                    workspace: workspace.clone(),
                    agent_files: *agent_files,
                    workspace_files: *workspace_files,
                    sessions: sessions.iter().cloned().collect(),
                }),
            },
            op if is_store_operation(op) => apply_to_store(&self.store, op).await?,
            op => {
                return Err(Failure::Other(format!(
                    "{} is a harness-side step, never sent to an implementation",
                    op_name(op)
                )))
            }
        })
    }
}

/// Whether `op` is an operation of the store alone, which [`apply_to_store`] performs: not a
/// harness-side step, and not one that needs the process around the store (a write raced
/// against a sweep, an injected crash).
pub fn is_store_operation(op: &ScopedOp) -> bool {
    !matches!(
        op,
        ScopedOp::WriteDuringSweep { .. }
            | ScopedOp::ConcurrentSweeps
            | ScopedOp::CrashAt { .. }
            | ScopedOp::Restart
            | ScopedOp::Faults { .. }
            | ScopedOp::Heal
            | ScopedOp::BucketKeys { .. }
            | ScopedOp::PendingDeletions
            | ScopedOp::DeletionRecords
            | ScopedOp::LifecycleRules
            | ScopedOp::RunAgeRule { .. }
            | ScopedOp::Person { .. }
            | ScopedOp::People { .. }
            | ScopedOp::ErasureStates { .. }
            | ScopedOp::ErasureProof { .. }
    )
}

/// Performs one store operation (see [`is_store_operation`]) on `s`: the one mapping from an
/// operation to the store's API, shared by every implementation side the harness runs (the
/// program side of the protocol, the in-process driver, the turmoil world's host). A turn's
/// skill table must already carry the published hashes ([`with_skill_hashes`]).
pub async fn apply_to_store(s: &ScopedStore, op: &ScopedOp) -> Result<ScopedOutcome, ScopedError> {
    let settings = |agent, workspace| ScopeSettings { agent, workspace };
    let wait_kind = |k: &super::driver::WaitKindName| {
        wait_kind(&k.0).ok_or_else(|| ScopedError::Config(format!("no wait kind {:?}", k.0)))
    };
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
            s.create_session(&space(s, turn)?).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::Activity { turn } => {
            s.record_activity(&space(s, turn)?).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::AddWait { turn, kind, id } => {
            s.add_wait(&space(s, turn)?, wait_kind(kind)?, id).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::RemoveWait { turn, kind, id } => {
            s.remove_wait(&space(s, turn)?, wait_kind(kind)?, id)
                .await?;
            ScopedOutcome::Ok
        }
        ScopedOp::Write {
            turn,
            path,
            content,
        } => {
            let r = s
                .write(&space(s, turn)?, path, content.as_bytes().to_vec())
                .await?;
            ScopedOutcome::Written {
                path: r.guest_path(),
            }
        }
        ScopedOp::Read { turn, path } => {
            let bytes = s.read(&space(s, turn)?, path).await?;
            ScopedOutcome::Content {
                content: String::from_utf8_lossy(&bytes).into_owned(),
            }
        }
        ScopedOp::ReadText { turn, path } => ScopedOutcome::Text {
            text: s.read_text(&space(s, turn)?, path).await?,
        },
        ScopedOp::List { turn, prefix } => ScopedOutcome::Listing {
            paths: s
                .list(&space(s, turn)?, prefix.as_deref())
                .await?
                .into_iter()
                .map(|f| f.path)
                .collect(),
        },
        ScopedOp::Delete { turn, path } => {
            s.delete(&space(s, turn)?, path).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::PublishSkill {
            workspace, files, ..
        } => {
            let files = files
                .iter()
                .map(|(k, v)| (k.clone(), v.as_bytes().to_vec()))
                .collect();
            ScopedOutcome::Published {
                sha256: s.publish_skill_version(workspace, &files).await?,
            }
        }
        ScopedOp::DeleteSession { turn } => {
            s.delete_session(&space(s, turn)?).await?;
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
        ScopedOp::ApplyLifecycle {
            session_backstop_days,
        } => {
            // SC-7.1's three rules, and a rule per workspace shorter than the deployment
            // (SPEC SL-5.3; none while no workspace has set its own retention).
            s.apply_lifecycle_with_retention(*session_backstop_days)
                .await?;
            ScopedOutcome::Ok
        }
        ScopedOp::SetWorkspaceRetention {
            workspace,
            session_file_ttl_days,
        } => {
            s.set_workspace_retention(workspace, *session_file_ttl_days)
                .await?;
            ScopedOutcome::Ok
        }
        ScopedOp::SetSessionCount {
            workspace,
            agent,
            keep_last,
        } => {
            s.set_session_count(workspace, agent, *keep_last).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::CloseSession { turn } => {
            s.close_session(&space(s, turn)?).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::Promote { turn, from, to } => ScopedOutcome::Written {
            path: s.promote(&space(s, turn)?, from, to).await?.guest_path(),
        },
        ScopedOp::ToolOutput { turn, content } => {
            use tidemark_reference::scoped::ToolOutput;
            match s
                .tool_output(&space(s, turn)?, content.as_bytes().to_vec())
                .await?
            {
                ToolOutput::Inline(bytes) => ScopedOutcome::Content {
                    content: String::from_utf8_lossy(&bytes).into_owned(),
                },
                ToolOutput::Written(path) => ScopedOutcome::Written { path },
            }
        }
        ScopedOp::RequestErasure {
            workspace,
            agent,
            deadline_ms,
        } => {
            s.request_erasure(workspace, agent.as_deref(), *deadline_ms)
                .await?;
            ScopedOutcome::Ok
        }
        other => {
            return Err(ScopedError::Config(format!(
                "{} is not an operation of the store alone",
                op_name(other)
            )))
        }
    })
}

/// `op` with each turn's skill table mapped from the scenario's skill names to the sha256 each
/// was published under (a name never published is sent as written, so a scenario can send a
/// bad hash on purpose).
pub fn with_skill_hashes(op: &ScopedOp, skills: &BTreeMap<String, String>) -> ScopedOp {
    let mut op = op.clone();
    if let Some(turn) = turn_mut(&mut op) {
        for name in turn.skills.values_mut() {
            if let Some(sha) = skills.get(name.as_str()) {
                *name = sha.clone();
            }
        }
    }
    op
}

fn turn_mut(op: &mut ScopedOp) -> Option<&mut Turn> {
    match op {
        ScopedOp::CreateSession { turn }
        | ScopedOp::Activity { turn }
        | ScopedOp::AddWait { turn, .. }
        | ScopedOp::RemoveWait { turn, .. }
        | ScopedOp::Write { turn, .. }
        | ScopedOp::WriteDuringSweep { turn, .. }
        | ScopedOp::Read { turn, .. }
        | ScopedOp::ReadText { turn, .. }
        | ScopedOp::List { turn, .. }
        | ScopedOp::Delete { turn, .. }
        | ScopedOp::Promote { turn, .. }
        | ScopedOp::ToolOutput { turn, .. }
        | ScopedOp::CloseSession { turn }
        | ScopedOp::DeleteSession { turn } => Some(turn),
        _ => None,
    }
}

/// A turn as sent over the protocol: its skill table already maps each slug to a sha256.
/// The identifiers are checked as the store's deployment checks them (SC-1.3).
fn space(s: &ScopedStore, t: &Turn) -> Result<TurnSpace, ScopedError> {
    let mut space = s.turn_space(&t.workspace, &t.agent, &t.session)?;
    for (slug, sha) in &t.skills {
        space = space.with_skill(slug, sha);
    }
    Ok(space)
}

fn wait_kind(k: &str) -> Option<WaitKind> {
    match k {
        "queued" => Some(WaitKind::Queued),
        "parked" => Some(WaitKind::Parked),
        "waiting" => Some(WaitKind::Waiting),
        _ => None,
    }
}

fn crash_point(p: &str) -> Result<CrashPoint, Failure> {
    match p {
        "after_text_written" => Ok(CrashPoint::AfterTextWritten),
        "after_session_objects_deleted" => Ok(CrashPoint::AfterSessionObjectsDeleted),
        "after_obligation_objects_deleted" => Ok(CrashPoint::AfterObligationObjectsDeleted),
        other => Err(Failure::Other(format!("no crash point {other:?}"))),
    }
}

enum Failure {
    Scoped(ScopedError),
    Other(String),
}

impl From<ScopedError> for Failure {
    fn from(e: ScopedError) -> Self {
        Failure::Scoped(e)
    }
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Other(e)
    }
}

// ----- the harness side --------------------------------------------------------------------

/// Every key under `prefix`, straight from the bucket.
pub async fn bucket_keys(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    prefix: &str,
) -> Result<Vec<String>, String> {
    let mut keys = Vec::new();
    let mut token = None;
    loop {
        let page = client
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .set_continuation_token(token.take())
            .send()
            .await
            .map_err(|e| {
                format!(
                    "listing the bucket: {}",
                    aws_sdk_s3::error::DisplayErrorContext(&e)
                )
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

/// Runs an age-only expiry rule of `days` over `prefix` with AWS semantics, at `now`; answers
/// the keys it deleted.
pub async fn run_age_rule(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    prefix: &str,
    days: u32,
    now: Timestamp,
) -> Result<Vec<String>, String> {
    let ex = LifecycleExecutor::new(LifecycleConfiguration {
        rules: vec![Rule {
            id: "age-only".into(),
            enabled: true,
            filter: Some(Filter::Prefix(prefix.to_string())),
            expiration_days: Some(days),
            abort_incomplete_multipart_days: None,
        }],
    })
    .map_err(|e| e.to_string())?;
    ex.run_on_bucket(client, bucket, now).await
}

/// The bucket's lifecycle configuration as the store answers GetBucketLifecycleConfiguration,
/// one description per rule in id order (none when the bucket has no configuration), judged by
/// what SPEC SC-7.1 pins and not by the ids, which are the implementation's choice: a rule is
/// `PREFIX` (`""` for an empty one; a filter that is not a prefix is spelled `tag:K=V`,
/// `size>N`, `size<N`, `and(...)` or `no-filter`), then `expire Nd` or `expire on DATE`,
/// `abort Nd` (left out of a workspace's own rule under `sessions/` when no shorter than the
/// session class rule's, which covers it: SPEC SL-5.3), and `disabled` when it is not enabled, with anything else the rule carries
/// (noncurrent versions, transitions, delete markers) named so that it never matches silently.
/// Ids that SC-7.2 forbids (empty, longer than 255 characters, or used twice) add one entry
/// naming them, so no expectation can match them either.
pub async fn lifecycle_rules(
    client: &aws_sdk_s3::Client,
    bucket: &str,
) -> Result<Vec<String>, String> {
    use aws_sdk_s3::error::ProvideErrorMetadata;
    use aws_sdk_s3::types::{ExpirationStatus, LifecycleRuleFilter};
    let got = match client
        .get_bucket_lifecycle_configuration()
        .bucket(bucket)
        .send()
        .await
    {
        Ok(got) => got,
        Err(e) if e.code() == Some("NoSuchLifecycleConfiguration") => return Ok(Vec::new()),
        Err(e) => {
            return Err(format!(
                "reading the bucket's lifecycle configuration: {}",
                aws_sdk_s3::error::DisplayErrorContext(&e)
            ))
        }
    };
    let filter = |f: Option<&LifecycleRuleFilter>| -> String {
        let Some(f) = f else {
            return "no-filter".into();
        };
        let prefix = |p: &str| {
            if p.is_empty() {
                "\"\"".to_string()
            } else {
                p.to_string()
            }
        };
        if let Some(p) = f.prefix() {
            return prefix(p);
        }
        if let Some(t) = f.tag() {
            return format!("tag:{}={}", t.key(), t.value());
        }
        if let Some(n) = f.object_size_greater_than() {
            return format!("size>{n}");
        }
        if let Some(n) = f.object_size_less_than() {
            return format!("size<{n}");
        }
        if let Some(a) = f.and() {
            let mut parts = Vec::new();
            if let Some(p) = a.prefix() {
                parts.push(prefix(p));
            }
            parts.extend(
                a.tags()
                    .iter()
                    .map(|t| format!("tag:{}={}", t.key(), t.value())),
            );
            if let Some(n) = a.object_size_greater_than() {
                parts.push(format!("size>{n}"));
            }
            if let Some(n) = a.object_size_less_than() {
                parts.push(format!("size<{n}"));
            }
            return format!("and({})", parts.join(" "));
        }
        "no-filter".into()
    };
    // A rule's prefix, in either spelling (the filter's, or the older one outside it).
    #[allow(deprecated)]
    let prefix_of = |r: &aws_sdk_s3::types::LifecycleRule| -> Option<String> {
        r.filter()
            .and_then(|f| f.prefix())
            .or(r.prefix())
            .map(str::to_string)
    };
    let abort_of = |r: &aws_sdk_s3::types::LifecycleRule| {
        r.abort_incomplete_multipart_upload()
            .and_then(|a| a.days_after_initiation())
    };
    // The session class's multipart abort covers every workspace's own rule under it (SPEC
    // SL-5.3): where rules overlap the shortest wins (SC-7.3), so a workspace rule's abort no
    // shorter than the class's changes nothing and is the implementation's own to carry or not.
    let class_abort = got
        .rules()
        .iter()
        .filter(|r| prefix_of(r).as_deref() == Some("sessions/"))
        .filter_map(abort_of)
        .min();
    let redundant_abort = |r: &aws_sdk_s3::types::LifecycleRule| {
        let nested = prefix_of(r).is_some_and(|p| p.starts_with("sessions/") && p != "sessions/");
        matches!((abort_of(r), class_abort), (Some(a), Some(c)) if nested && a >= c)
    };
    let mut rules: Vec<(String, String)> = Vec::new();
    let mut ids = std::collections::BTreeMap::<String, usize>::new();
    #[allow(deprecated)]
    for r in got.rules() {
        let id = r.id().unwrap_or_default().to_string();
        *ids.entry(id.clone()).or_default() += 1;
        // A rule's prefix may also sit outside the filter (the older, deprecated spelling).
        let mut d = match (r.filter(), r.prefix()) {
            (None, Some(p)) => p.to_string(),
            (f, _) => filter(f),
        };
        if let Some(e) = r.expiration() {
            if let Some(days) = e.days() {
                d.push_str(&format!(" expire {days}d"));
            }
            if let Some(date) = e.date() {
                d.push_str(&format!(" expire on {date}"));
            }
            if e.expired_object_delete_marker() == Some(true) {
                d.push_str(" expire delete-markers");
            }
        }
        if let Some(days) = abort_of(r).filter(|_| !redundant_abort(r)) {
            d.push_str(&format!(" abort {days}d"));
        }
        if r.noncurrent_version_expiration().is_some() {
            d.push_str(" noncurrent-expiration");
        }
        if !r.transitions().is_empty() || !r.noncurrent_version_transitions().is_empty() {
            d.push_str(" transitions");
        }
        if r.status() != &ExpirationStatus::Enabled {
            d.push_str(" disabled");
        }
        rules.push((id, d));
    }
    rules.sort();
    let mut out: Vec<String> = rules.into_iter().map(|(_, d)| d).collect();
    let bad: Vec<String> = ids
        .iter()
        .filter(|(id, n)| **n > 1 || id.is_empty() || id.chars().count() > 255)
        .map(|(id, n)| {
            if *n > 1 {
                format!("{:?} used {n} times", tidemark_sim::clip::clip(id))
            } else {
                format!("{:?} not 1-255 characters", tidemark_sim::clip::clip(id))
            }
        })
        .collect();
    if !bad.is_empty() {
        out.push(format!("ids SC-7.2 refuses: {}", bad.join("; ")));
    }
    Ok(out)
}

/// The fault plan a `faults` step sets, if `op` is one.
pub fn fault_plan(op: &ScopedOp) -> Option<FaultPlan> {
    match op {
        ScopedOp::Faults {
            down,
            error_rate,
            delete_key_failure_rate,
            fail_requests,
            fail_from,
            no_such_bucket,
            access_denied,
            throttle,
        } => Some(FaultPlan {
            down: *down,
            error_rate: *error_rate,
            delete_key_failure_rate: *delete_key_failure_rate,
            latency: Duration::ZERO,
            fail_requests: fail_requests.clone(),
            fail_from: fail_from.clone(),
            no_such_bucket: *no_such_bucket,
            access_denied: *access_denied,
            throttle: *throttle,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_and_the_bucket_are_read_by_the_harness_and_crashes_need_a_capability() {
        assert_eq!(side(&ScopedOp::PendingDeletions), Side::Harness);
        assert_eq!(side(&ScopedOp::Sweep), Side::Implementation);
        assert_eq!(
            side(&ScopedOp::CrashAt {
                point: super::super::driver::CrashPointName("after_text_written".into())
            }),
            Side::ImplementationWith(CRASH_POINTS)
        );
        assert_eq!(op_name(&ScopedOp::PendingDeletions), "pending_deletions");
    }
}

//! The implementation side of the process boundary as the reference adapter runs it
//! (conformance/PROTOCOL.md, "The scoped profile"): a [`ScopedService`] is a [`ScopedStore`] on
//! the bucket and database the harness handed over, answering every step the implementation
//! answers ([`side`](crate::profiles::scoped::contract::side)); the steps the harness keeps are
//! `harness.rs`'s.
//!
//! The in-process `ScopedDriver` (`reference.rs`) does both halves in one place: it performs the
//! harness's steps itself and hands every other step to a [`ScopedService`] over its own stores,
//! so the mapping from an operation to the store is written once, here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
pub use sqlx::PgPool;
use tidemark_reference::clock::{Clock, ManualClock, Timestamp};
use tidemark_reference::s3_client::S3Client;
use tidemark_reference::scoped::metadata::{Metadata, PostgresMetadata};
use tidemark_reference::scoped::people::{PeopleApi, Person, StoreSlot};
use tidemark_reference::scoped::{
    CrashPoint, ScopeSettings, ScopedConfig, ScopedError, ScopedMutant, ScopedStore, SweepPause,
    TurnSpace, WaitKind,
};

use crate::profiles::scoped::contract::{op_name, ScopedOp, ScopedOutcome, Turn, WaitKindName};
use crate::profiles::scoped::sweeps_at_once::race_write_against_sweep;

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

/// An S3 client for `access` (configured as [`tidemark_sim::real_tier::s3_client`]: path style,
/// no retries).
pub fn s3_client_for(access: &S3Access) -> S3Client {
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
    config.alternatives = crate::profiles::scoped::variants::alternatives(variants);
    Ok(config)
}

/// The reference implementation's side of the scoped profile: a [`ScopedStore`] over a bucket
/// and a metadata store, its clock set from each request's time. The reference adapter runs one
/// over what `init` handed it; the in-process driver runs one over its own stores.
pub struct ScopedService {
    s3: S3Client,
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
        s3: S3Client,
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
                let (first, second) = crate::profiles::scoped::sweeps_at_once::race(
                    store,
                    &pause,
                    &other,
                    store.metadata().as_ref(),
                )
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
/// skill table must already carry the published hashes
/// ([`with_skill_hashes`](crate::profiles::scoped::contract::with_skill_hashes)).
pub async fn apply_to_store(s: &ScopedStore, op: &ScopedOp) -> Result<ScopedOutcome, ScopedError> {
    let settings = |agent, workspace| ScopeSettings { agent, workspace };
    let wait_kind = |k: &WaitKindName| {
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

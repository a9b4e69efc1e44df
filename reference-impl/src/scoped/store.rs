//! The scoped store: files through a real S3 client over HTTP, session state and deletion
//! obligations in a [`Metadata`] store (PostgreSQL on the real tier, the in-memory store with
//! its semantics in simulation), time from a handed-in clock.
//!
//! Concurrency rule (why a write racing a sweep is never lost): every file operation touches
//! its session's activity inside a transaction that holds the session row's lock for the whole
//! S3 call, and the sweep locks the rows it sweeps (`FOR UPDATE SKIP LOCKED`) for the whole
//! list-and-delete. So a write either lands before the sweep looks (and makes the session
//! active, so it is not swept) or waits until the sweep has committed (and lands after it).
//!
//! Why one file of this length: every operation's order of S3 calls and row locks is the
//! safety argument above, and reads best in one place; key shapes live in `layout.rs`,
//! permissions in `permissions.rs`, the rows in `metadata/`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use super::alternatives::Alternative;
use super::config::{ScopedConfig, DEFAULT_TTL_DAYS};
use super::error::{CrashPoint, PathError, ScopedError};
use super::layout::{self, Id, Purpose, Resolved, TurnSpace};
use super::metadata::{
    Creation, DeletionObligation, DeletionRecord, Entity, MetaTx, Metadata, PostgresMetadata,
    SessionKey, WaitKind,
};
use super::mutants::ScopedMutant;
use super::permissions::{Access, Permissions, Scope, ScopeSettings};
use crate::clock::{Clock, Timestamp};

/// S3's limit on keys per DeleteObjects request, and ListObjectsV2's page size.
pub const S3_BATCH: usize = 1000;

/// Attempts at one S3 request the store answers with a throttle (503) before the operation
/// fails with `storage_unavailable`: SPEC SC-8.4's "at least three", as the AWS SDKs' standard
/// retry mode makes.
pub const S3_ATTEMPTS: u32 = 3;

/// User metadata carrying the (handed-in) time a file was written. The real tier's S3 store reports
/// wall time as LastModified, which a simulated clock knows nothing about; this is what the
/// age-only mutant and the lifecycle executor measure age from.
pub const WRITTEN_AT_META: &str = "tidemark-written-at-ms";

/// User metadata on a file and on its extracted text: the sha256 of the file's content. A text
/// whose stamp differs from its file's is stale (an overwrite failed between the two PUTs) and
/// is never served: the text is extracted afresh from the file instead.
pub const SOURCE_SHA_META: &str = "tidemark-source-sha256";

/// Requests this store has issued to S3, by kind. The sweep's efficiency is judged in
/// requests, not seconds (a disk-backed listing's cost grows with the bucket).
#[derive(Debug, Default)]
struct Counters {
    put: AtomicU64,
    get: AtomicU64,
    head: AtomicU64,
    list: AtomicU64,
    delete_one: AtomicU64,
    delete_batch: AtomicU64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequestCounts {
    pub put: u64,
    pub get: u64,
    pub head: u64,
    pub list: u64,
    pub delete_one: u64,
    pub delete_batch: u64,
}

impl RequestCounts {
    pub fn total(&self) -> u64 {
        self.put + self.get + self.head + self.list + self.delete_one + self.delete_batch
    }
}

/// One file as a listing shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ListedFile {
    /// The guest path: `session/notes.md`.
    pub path: String,
    pub size: u64,
}

pub struct ScopedStore {
    s3: aws_sdk_s3::Client,
    meta: Arc<dyn Metadata>,
    cfg: ScopedConfig,
    clock: Arc<dyn Clock>,
    counters: Counters,
}

/// How an S3 call failed, before it is turned into a [`ScopedError`].
enum S3Failure {
    NotFound,
    Error(ScopedError),
}

/// How a store's error maps to a reason (SPEC SC-8.1, SC-8.3): a missing bucket is
/// `no_such_bucket`, a missing object is not found, and everything else the store answers
/// (AccessDenied and a throttle that outlasted its retries included) is `storage_unavailable`.
fn classify<E>(
    operation: &'static str,
    bucket: &str,
    mutant: Option<ScopedMutant>,
    err: SdkError<E>,
) -> S3Failure
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let status = err.raw_response().map(|r| r.status().as_u16());
    let code = err
        .as_service_error()
        .and_then(|e| e.code())
        .map(str::to_string);
    match code.as_deref() {
        Some("NoSuchBucket") if mutant != Some(ScopedMutant::MissingBucketUnavailable) => {
            return S3Failure::Error(ScopedError::NoSuchBucket {
                bucket: bucket.to_string(),
            })
        }
        Some("AccessDenied") if mutant == Some(ScopedMutant::StoreDeniedAsPermission) => {
            return S3Failure::Error(ScopedError::PermissionDenied {
                scope: Scope::Session,
                granted: Access::None,
                needed: Access::ReadWrite,
            })
        }
        Some("NoSuchKey") | Some("NotFound") => return S3Failure::NotFound,
        _ => {}
    }
    if status == Some(404) && code.is_none() {
        return S3Failure::NotFound;
    }
    S3Failure::Error(ScopedError::Storage {
        operation,
        message: format!("{}", DisplayErrorContext(&err)),
    })
}

fn must<E>(
    operation: &'static str,
    bucket: &str,
    mutant: Option<ScopedMutant>,
    err: SdkError<E>,
) -> ScopedError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match classify(operation, bucket, mutant, err) {
        S3Failure::NotFound => ScopedError::Storage {
            operation,
            message: "unexpected 404".into(),
        },
        S3Failure::Error(e) => e,
    }
}

/// Text extracted at write time: the file's bytes if they are UTF-8 without NUL (SPEC decision:
/// no content-type sniffing; binary files have no text).
pub fn extract_text(bytes: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(bytes).ok()?;
    (!s.contains('\0')).then_some(s)
}

impl ScopedStore {
    /// Builds a store and brings the database schema up to date.
    pub async fn open(
        s3: aws_sdk_s3::Client,
        pg: PgPool,
        cfg: ScopedConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<ScopedStore, ScopedError> {
        ScopedStore::with_metadata(s3, Arc::new(PostgresMetadata::new(pg)), cfg, clock).await
    }

    /// Builds a store over any metadata store (the in-memory one in simulation) and brings its
    /// schema up to date.
    pub async fn with_metadata(
        s3: aws_sdk_s3::Client,
        meta: Arc<dyn Metadata>,
        cfg: ScopedConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<ScopedStore, ScopedError> {
        meta.migrate().await?;
        Ok(ScopedStore {
            s3,
            meta,
            cfg,
            clock,
            counters: Counters::default(),
        })
    }

    pub fn config(&self) -> &ScopedConfig {
        &self.cfg
    }

    /// The PostgreSQL pool, when the metadata lives in PostgreSQL.
    pub fn pool(&self) -> Option<&PgPool> {
        self.meta.pool()
    }

    pub fn metadata(&self) -> &Arc<dyn Metadata> {
        &self.meta
    }

    /// The S3 client, for a policy module's request the store has no method for.
    pub(crate) fn s3_client(&self) -> &aws_sdk_s3::Client {
        &self.s3
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    pub(crate) fn mutant(&self) -> Option<ScopedMutant> {
        self.cfg.mutant
    }

    pub(crate) fn is(&self, m: ScopedMutant) -> bool {
        self.cfg.mutant == Some(m)
    }

    /// Resolves a guest path by this store's rules. Under `path_check_order=session_first`
    /// (SC-3.5's variant) a path refused for its shape in a session that does not exist is
    /// `unknown_entity`, as if the session row had been looked up first.
    async fn resolve(
        &self,
        path: &str,
        turn: &TurnSpace,
        purpose: Purpose,
    ) -> Result<Resolved, ScopedError> {
        match layout::resolve_with(path, turn, purpose, &self.cfg.path_rules()) {
            Ok(r) => Ok(r),
            Err(e)
                if self.cfg.takes(Alternative::SessionBeforeShape)
                    && !self.meta.session_exists(&session_key(turn)).await? =>
            {
                let _ = e;
                Err(ScopedError::UnknownEntity {
                    kind: "session",
                    id: turn.session.to_string(),
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// [`Self::resolve`] for a write or a delete: under `unknown_skill_writes=read_only`
    /// (SC-2.6's variant) a slug the table lacks is `read_only`, as any skill path is.
    pub(crate) async fn resolve_for_change(
        &self,
        path: &str,
        turn: &TurnSpace,
    ) -> Result<Resolved, ScopedError> {
        match self
            .resolve_checked(turn, path, Purpose::File, Access::ReadWrite)
            .await
        {
            Err(ScopedError::Path(PathError::UnknownSkill { .. }))
                if self.cfg.takes(Alternative::SkillWritesReadOnly) =>
            {
                Err(ScopedError::ReadOnly {
                    path: path.to_string(),
                })
            }
            r => r,
        }
    }

    pub(crate) fn text_key(&self, r: &Resolved) -> String {
        layout::text_key_in(&r.prefix, &r.key, &self.cfg.text_segment)
    }

    /// Sends one S3 request, made afresh by `request` for each attempt, retrying it while the
    /// store answers 503 (SlowDown or ServiceUnavailable: a throttle), at most
    /// [`S3_ATTEMPTS`] attempts in all with a short backoff between them (SPEC SC-8.4). Any
    /// other error is answered at once, never retried.
    async fn send<T, E, Fut>(&self, mut request: impl FnMut() -> Fut) -> Result<T, SdkError<E>>
    where
        Fut: std::future::Future<Output = Result<T, SdkError<E>>>,
    {
        let mut attempt = 1;
        // What is retried: a throttle (503), unless this store reports it at once
        // (`throttles=reported`); every 5xx when it retries server errors too
        // (`server_errors=retried`). SPEC SC-8.4 and its two variants.
        let retried = |status: Option<u16>| match status {
            Some(503) => {
                !self.is(ScopedMutant::ThrottleNotRetried)
                    && !self.cfg.takes(Alternative::ThrottlesReported)
            }
            Some(500..=599) => self.cfg.takes(Alternative::ServerErrorsRetried),
            _ => false,
        };
        loop {
            match request().await {
                Err(e)
                    if attempt < S3_ATTEMPTS
                        && retried(e.raw_response().map(|r| r.status().as_u16())) =>
                {
                    // Backoff is not time the scenario sees: every attempt runs at the
                    // request's `now`.
                    tokio::time::sleep(std::time::Duration::from_millis(10 << attempt)).await;
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    pub(crate) fn crash(&self, point: CrashPoint) -> Result<(), ScopedError> {
        if self.cfg.crash_at == Some(point) {
            Err(ScopedError::Crashed(point))
        } else {
            Ok(())
        }
    }

    pub fn requests(&self) -> RequestCounts {
        let c = &self.counters;
        RequestCounts {
            put: c.put.load(Ordering::Relaxed),
            get: c.get.load(Ordering::Relaxed),
            head: c.head.load(Ordering::Relaxed),
            list: c.list.load(Ordering::Relaxed),
            delete_one: c.delete_one.load(Ordering::Relaxed),
            delete_batch: c.delete_batch.load(Ordering::Relaxed),
        }
    }

    // ----- entities -------------------------------------------------------------------------

    pub async fn create_workspace(
        &self,
        ws: &str,
        settings: ScopeSettings,
    ) -> Result<(), ScopedError> {
        let ws = Id::new(ws)?;
        match self
            .meta
            .create_workspace_checked(ws.as_str(), settings, self.refuses_pending_erasure())
            .await?
        {
            Creation::ErasurePending => Err(ScopedError::ErasurePending(format!("workspace {ws}"))),
            Creation::Done | Creation::NoParent => Ok(()),
        }
    }

    pub async fn create_agent(
        &self,
        ws: &str,
        agent: &str,
        settings: ScopeSettings,
    ) -> Result<(), ScopedError> {
        let (ws, agent) = (Id::new(ws)?, Id::new(agent)?);
        match self
            .meta
            .create_agent_checked(
                ws.as_str(),
                agent.as_str(),
                settings,
                self.refuses_pending_erasure(),
            )
            .await?
        {
            Creation::Done => Ok(()),
            Creation::ErasurePending => {
                Err(ScopedError::ErasurePending(format!("agent {ws}/{agent}")))
            }
            Creation::NoParent => Err(ScopedError::UnknownEntity {
                kind: "workspace",
                id: ws.to_string(),
            }),
        }
    }

    /// A turn's space, its identifiers checked as this deployment checks them (SC-1.3).
    pub fn turn_space(
        &self,
        workspace: &str,
        agent: &str,
        session: &str,
    ) -> Result<TurnSpace, ScopedError> {
        Ok(TurnSpace::checked(
            workspace,
            agent,
            session,
            self.mutant(),
        )?)
    }

    /// The space of session `session` as a person of `workspace` holding `grant` reaches it
    /// through the people's files API (SPEC SF-2.2): the session is looked up in the person's
    /// workspace only, so a session of another workspace is `unknown_entity` exactly as one
    /// that does not exist. (The `foreign-session-served` mutant takes the first session of
    /// that id in any workspace.)
    pub async fn person_space(
        &self,
        workspace: &str,
        session: &str,
        grant: super::permissions::PersonGrant,
    ) -> Result<TurnSpace, ScopedError> {
        let ws = Id::checked(workspace, self.mutant())?;
        let id = Id::checked(session, self.mutant())?;
        let named = self.meta.sessions_named(id.as_str()).await?;
        let found = if self.is(ScopedMutant::ForeignSessionServed) {
            named.into_iter().next()
        } else {
            named.into_iter().find(|k| k.workspace == ws.as_str())
        };
        let key = found.ok_or_else(|| ScopedError::UnknownEntity {
            kind: "session",
            id: session.to_string(),
        })?;
        Ok(self
            .turn_space(&key.workspace, &key.agent, &key.session)?
            .for_person(grant))
    }

    /// Opens a session; its activity clock starts now.
    pub async fn create_session(&self, turn: &TurnSpace) -> Result<(), ScopedError> {
        let key = session_key(turn);
        if !self.meta.create_session_checked(&key, self.now().0).await? {
            if !self.meta.session_exists(&key).await? {
                return Err(ScopedError::UnknownEntity {
                    kind: "agent",
                    id: turn.agent.to_string(),
                });
            }
            if self.is(ScopedMutant::RepeatedCreateIsActivity) {
                return self.record_activity(turn).await;
            }
        }
        Ok(())
    }

    /// Records activity in a session (a turn, a message). Activity never moves backwards, even
    /// if the handed-in clock does.
    pub async fn record_activity(&self, turn: &TurnSpace) -> Result<(), ScopedError> {
        self.in_session(turn, "commit activity", async |_| Ok(()))
            .await
    }

    /// Runs `body` inside the session's transaction (row locked, activity recorded, the
    /// effective permissions handed in) and commits only if it succeeds. On an error the
    /// transaction is rolled back at once, not merely dropped: a dropped PostgreSQL
    /// transaction keeps the session's row lock until its pooled connection is next used, and
    /// the sweep (`SKIP LOCKED`) would pass the session by.
    pub(crate) async fn in_session<T>(
        &self,
        turn: &TurnSpace,
        op: &'static str,
        body: impl AsyncFnOnce(Permissions) -> Result<T, ScopedError>,
    ) -> Result<T, ScopedError> {
        let activity = self.counts_as_activity(turn, op);
        let mut tx = self.meta.begin().await?;
        let result = match self.touch(tx.as_mut(), turn, activity).await {
            Ok(perms) => body(perms).await,
            Err(e) => Err(e),
        };
        let refused = matches!(&result, Err(e) if !matches!(e, ScopedError::Storage { .. }));
        let settled = settle(tx, result, op).await;
        if refused && self.is(ScopedMutant::RefusalIsActivity) {
            // The mutant counts the refused operation as activity all the same.
            let mut tx = self.meta.begin().await?;
            if self.touch(tx.as_mut(), turn, activity).await.is_ok() {
                let _ = settle(tx, Ok(()), op).await;
            }
        }
        settled
    }

    /// Whether a successful operation `op` (an [`Self::in_session`] label) is activity of the
    /// session: every one of an agent's turn (SC-4.3); of a person's request only an upload or
    /// a removal, never a listing or a download (SPEC SF-4.2). The `upload-not-activity`
    /// mutant counts no person's request at all.
    fn counts_as_activity(&self, turn: &TurnSpace, op: &str) -> bool {
        match turn.person {
            None => true,
            Some(_) if self.is(ScopedMutant::UploadNotActivity) => false,
            Some(_) => matches!(op, "commit write" | "commit delete"),
        }
    }

    pub async fn add_wait(
        &self,
        turn: &TurnSpace,
        kind: WaitKind,
        wait_id: &str,
    ) -> Result<(), ScopedError> {
        let key = session_key(turn);
        if !self.meta.insert_wait(&key, kind, wait_id).await?
            && !self.meta.session_exists(&key).await?
        {
            return Err(ScopedError::UnknownEntity {
                kind: "session",
                id: turn.session.to_string(),
            });
        }
        Ok(())
    }

    pub async fn remove_wait(
        &self,
        turn: &TurnSpace,
        kind: WaitKind,
        wait_id: &str,
    ) -> Result<(), ScopedError> {
        self.meta
            .delete_wait(&session_key(turn), kind, wait_id)
            .await
    }

    /// Locks the session row for the rest of the transaction, records activity, and returns
    /// the effective permissions from the settings cascade.
    async fn touch(
        &self,
        tx: &mut dyn MetaTx,
        turn: &TurnSpace,
        activity: bool,
    ) -> Result<Permissions, ScopedError> {
        let key = session_key(turn);
        let layers = tx
            .lock_session(&key)
            .await?
            .ok_or_else(|| ScopedError::UnknownEntity {
                kind: "session",
                id: turn.session.to_string(),
            })?;
        // The person-skips-unfinished-sweep mutant serves a person's request from what the
        // interrupted sweep left.
        let skipped = turn.person.is_some() && self.is(ScopedMutant::PersonSkipsUnfinishedSweep);
        if layers.sweep_unfinished && !skipped {
            self.finish_unfinished_sweep(&key).await?;
        }
        if activity {
            // Activity reopens a closed session (SPEC SL-3.2).
            self.touch_reopening(tx, &key).await?;
        }
        // A person's access is their own grant, never the agent's cascade (SPEC SF-2.4).
        let cascade = Permissions::cascade(
            self.cfg.deployment_settings,
            layers.workspace,
            layers.agent,
            self.mutant(),
        );
        if let Some(grant) = &turn.person {
            let own = grant.permissions(self.mutant());
            if self.is(ScopedMutant::PersonCappedByAgentSettings) {
                // The mutant caps the person's access by the agent's.
                return Ok(Permissions {
                    session: own.session,
                    agent: own.agent.min(cascade.agent),
                    workspace: own.workspace.min(cascade.workspace),
                });
            }
            return Ok(own);
        }
        Ok(cascade)
    }

    /// A sweep found this session expired and deleted only part of its files. Nothing has been
    /// written to it since (any write would have come through here first), so everything under
    /// its prefix is what the sweep meant to delete: delete it before the operation makes the
    /// session active again, or fail the operation and leave it to the next sweep. The caller
    /// holds the session's row lock.
    async fn finish_unfinished_sweep(&self, key: &SessionKey) -> Result<(), ScopedError> {
        let keys: Vec<String> = self
            .list_keys(&key.prefix())
            .await?
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let failed = self.delete_keys(&keys).await?;
        if failed.is_empty() {
            Ok(())
        } else {
            Err(ScopedError::Storage {
                operation: "DeleteObjects",
                message: format!(
                    "{} expired file(s) of an interrupted sweep could not be deleted; the session stays expired until they are",
                    failed.len()
                ),
            })
        }
    }

    pub(crate) fn require(
        &self,
        perms: &Permissions,
        r: &Resolved,
        needed: Access,
    ) -> Result<(), ScopedError> {
        let granted = perms.for_scope(r.scope, self.mutant());
        let ok = match needed {
            Access::ReadWrite => granted.can_write(),
            Access::Read => granted.can_read(),
            Access::None => true,
        };
        if ok {
            Ok(())
        } else {
            Err(ScopedError::PermissionDenied {
                scope: r.scope,
                granted,
                needed,
            })
        }
    }

    /// Resolves a guest path (SC-2) before anything else is asked (SC-3.5). The
    /// `permission-before-shape` mutant, given a path that does not resolve, first checks the
    /// access its first segment names and answers `permission_denied` if that falls short.
    pub(crate) async fn resolve_checked(
        &self,
        turn: &TurnSpace,
        path: &str,
        purpose: Purpose,
        needed: Access,
    ) -> Result<Resolved, ScopedError> {
        let resolved = self.resolve(path, turn, purpose).await;
        if resolved.is_ok() || !self.is(ScopedMutant::PermissionBeforeShape) {
            return resolved;
        }
        let scope = path.split('/').next().and_then(Scope::from_guest_name);
        if let Some(scope) = scope.filter(|s| *s != Scope::Skill) {
            let probe = Resolved {
                scope,
                relative: String::new(),
                key: String::new(),
                prefix: String::new(),
            };
            if let Ok(perms) = self.permissions(turn).await {
                self.require(&perms, &probe, needed)?;
            }
        }
        resolved
    }

    /// The effective permissions for a turn (no activity recorded).
    pub async fn permissions(&self, turn: &TurnSpace) -> Result<Permissions, ScopedError> {
        let mut tx = self.meta.begin().await?;
        let p = self.touch(tx.as_mut(), turn, true).await;
        tx.rollback().await?;
        p
    }

    // ----- files ----------------------------------------------------------------------------

    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), ScopedError> {
        self.put_tagged(key, bytes, None).await
    }

    /// Puts an object, stamping the write time and, for a file and its text, the sha256 of the
    /// file's content (see [`SOURCE_SHA_META`]).
    pub(crate) async fn put_tagged(
        &self,
        key: &str,
        bytes: Vec<u8>,
        source_sha: Option<&str>,
    ) -> Result<(), ScopedError> {
        self.counters.put.fetch_add(1, Ordering::Relaxed);
        let written_at = self.now().0.to_string();
        let stamped = !self.is(ScopedMutant::NoWrittenAtStamp);
        self.send(|| {
            let mut req = self.s3.put_object().bucket(&self.cfg.bucket).key(key);
            if stamped {
                req = req.metadata(WRITTEN_AT_META, &written_at);
            }
            if let Some(sha) = source_sha {
                req = req.metadata(SOURCE_SHA_META, sha);
            }
            req.body(ByteStream::from(bytes.clone())).send()
        })
        .await
        .map_err(|e| must("PutObject", &self.cfg.bucket, self.mutant(), e))?;
        Ok(())
    }

    pub(crate) async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, ScopedError> {
        Ok(self.get_stamped(key).await?.map(|(b, _)| b))
    }

    /// An object's bytes and its source-sha stamp, or `None` if it does not exist.
    async fn get_stamped(
        &self,
        key: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, ScopedError> {
        self.counters.get.fetch_add(1, Ordering::Relaxed);
        match self
            .send(|| {
                self.s3
                    .get_object()
                    .bucket(&self.cfg.bucket)
                    .key(key)
                    .send()
            })
            .await
        {
            Ok(out) => {
                let stamp = out.metadata().and_then(|m| m.get(SOURCE_SHA_META)).cloned();
                let body = out.body.collect().await.map_err(|e| ScopedError::Storage {
                    operation: "GetObject body",
                    message: e.to_string(),
                })?;
                Ok(Some((body.into_bytes().to_vec(), stamp)))
            }
            Err(e) => match classify("GetObject", &self.cfg.bucket, self.mutant(), e) {
                S3Failure::NotFound => Ok(None),
                S3Failure::Error(e) => Err(e),
            },
        }
    }

    async fn exists(&self, key: &str) -> Result<bool, ScopedError> {
        Ok(self.head_stamp(key).await?.is_some())
    }

    /// `None` if the object does not exist, else its source-sha stamp (if it has one).
    pub(crate) async fn head_stamp(
        &self,
        key: &str,
    ) -> Result<Option<Option<String>>, ScopedError> {
        self.counters.head.fetch_add(1, Ordering::Relaxed);
        match self
            .send(|| {
                self.s3
                    .head_object()
                    .bucket(&self.cfg.bucket)
                    .key(key)
                    .send()
            })
            .await
        {
            Ok(out) => Ok(Some(
                out.metadata().and_then(|m| m.get(SOURCE_SHA_META)).cloned(),
            )),
            Err(e) => match classify("HeadObject", &self.cfg.bucket, self.mutant(), e) {
                S3Failure::NotFound => Ok(None),
                S3Failure::Error(e) => Err(e),
            },
        }
    }

    /// The (handed-in) time a file was written, from its [`WRITTEN_AT_META`] stamp; a file
    /// without one is as old as can be. What the age-only sweeps measure age from.
    pub(crate) async fn written_at_ms(&self, key: &str) -> Result<i64, ScopedError> {
        self.counters.head.fetch_add(1, Ordering::Relaxed);
        let head = self
            .send(|| {
                self.s3
                    .head_object()
                    .bucket(&self.cfg.bucket)
                    .key(key)
                    .send()
            })
            .await
            .map_err(|e| must("HeadObject", &self.cfg.bucket, self.mutant(), e))?;
        let written = head
            .metadata()
            .and_then(|m| m.get(WRITTEN_AT_META))
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(i64::MIN);
        Ok(written)
    }

    pub(crate) async fn delete_one(&self, key: &str) -> Result<(), ScopedError> {
        self.counters.delete_one.fetch_add(1, Ordering::Relaxed);
        self.send(|| {
            self.s3
                .delete_object()
                .bucket(&self.cfg.bucket)
                .key(key)
                .send()
        })
        .await
        .map_err(|e| must("DeleteObject", &self.cfg.bucket, self.mutant(), e))?;
        Ok(())
    }

    /// Every key under `prefix`, in key order, one ListObjectsV2 page at a time.
    pub(crate) async fn list_keys(&self, prefix: &str) -> Result<Vec<(String, u64)>, ScopedError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            self.counters.list.fetch_add(1, Ordering::Relaxed);
            let page = self
                .send(|| {
                    self.s3
                        .list_objects_v2()
                        .bucket(&self.cfg.bucket)
                        .prefix(prefix)
                        .max_keys(S3_BATCH as i32)
                        .set_continuation_token(token.clone())
                        .send()
                })
                .await
                .map_err(|e| must("ListObjectsV2", &self.cfg.bucket, self.mutant(), e))?;
            for o in page.contents() {
                if let Some(k) = o.key() {
                    out.push((k.to_string(), o.size().unwrap_or(0).max(0) as u64));
                }
            }
            match (page.is_truncated(), page.next_continuation_token()) {
                (Some(true), Some(t)) => token = Some(t.to_string()),
                _ => break,
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Deletes keys in batches of 1,000 and returns the keys S3 reported as not deleted.
    pub(crate) async fn delete_keys(&self, keys: &[String]) -> Result<Vec<String>, ScopedError> {
        let mut failed = Vec::new();
        for chunk in keys.chunks(S3_BATCH) {
            let ids = chunk
                .iter()
                .map(|k| ObjectIdentifier::builder().key(k).build())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ScopedError::Storage {
                    operation: "DeleteObjects",
                    message: e.to_string(),
                })?;
            let delete = Delete::builder()
                .set_objects(Some(ids))
                .quiet(true)
                .build()
                .map_err(|e| ScopedError::Storage {
                    operation: "DeleteObjects",
                    message: e.to_string(),
                })?;
            self.counters.delete_batch.fetch_add(1, Ordering::Relaxed);
            let out = self
                .send(|| {
                    self.s3
                        .delete_objects()
                        .bucket(&self.cfg.bucket)
                        .delete(delete.clone())
                        .send()
                })
                .await
                .map_err(|e| must("DeleteObjects", &self.cfg.bucket, self.mutant(), e))?;
            if !self.is(ScopedMutant::PartialBatchMarkedDone) {
                failed.extend(
                    out.errors()
                        .iter()
                        .filter_map(|e| e.key().map(str::to_string)),
                );
            }
        }
        Ok(failed)
    }

    /// Writes a file. The extracted text is stored first and the file second, so a file is
    /// never visible without its text; an error means the file was not (re)written.
    pub async fn write(
        &self,
        turn: &TurnSpace,
        path: &str,
        bytes: Vec<u8>,
    ) -> Result<Resolved, ScopedError> {
        let r = self.resolve_for_change(path, turn).await?;
        let skill_writable = self.is(ScopedMutant::SkillsWritable);
        if r.scope == Scope::Skill && !skill_writable {
            return Err(ScopedError::ReadOnly {
                path: path.to_string(),
            });
        }
        let written = self
            .in_session(turn, "commit write", async |perms| {
                if !(r.scope == Scope::Skill && skill_writable) {
                    self.require(&perms, &r, Access::ReadWrite)?;
                }
                self.store_file(&r, bytes).await
            })
            .await;
        if let Err(ScopedError::Storage { .. }) = &written {
            if self.is(ScopedMutant::FailedWriteReportedWritten) {
                return Ok(r);
            }
            // The text may have landed before the file failed, and the rollback restored a
            // swept mark: let the next sweep look at the session again, or the text would
            // outlive the retention period unseen (found by the scoped world, seed 27).
            if !self.is(ScopedMutant::FailedWriteKeepsTheMark) {
                self.meta.unmark_swept(&session_key(turn)).await?;
            }
        }
        written?;
        Ok(r)
    }

    /// Stores a file and its extracted text at `r`, the text first, so a file is never visible
    /// without its text; each stamped with the file's sha256. The caller holds the session's
    /// lock and has checked the access ([`Self::write`]).
    pub(crate) async fn store_file(&self, r: &Resolved, bytes: Vec<u8>) -> Result<(), ScopedError> {
        let text_key = self.text_key(r);
        let sha = hex::encode(Sha256::digest(&bytes));
        if self.is(ScopedMutant::FileBeforeText) {
            // The mutant stores the file first: a crash before the text leaves a file
            // without it, after the text both (the crash point comes after both).
            self.put_tagged(&r.key, bytes.clone(), Some(&sha)).await?;
            if let Some(text) = extract_text(&bytes) {
                self.put_tagged(&text_key, text.as_bytes().to_vec(), Some(&sha))
                    .await?;
            }
            self.crash(CrashPoint::AfterTextWritten)?;
            return Ok(());
        }
        match extract_text(&bytes) {
            Some(text) => {
                self.put_tagged(&text_key, text.as_bytes().to_vec(), Some(&sha))
                    .await?
            }
            // Overwriting a text file with a binary one must not leave the old text behind.
            None => self.delete_one(&text_key).await?,
        }
        self.crash(CrashPoint::AfterTextWritten)?;
        self.put_tagged(&r.key, bytes, Some(&sha)).await
    }

    pub async fn read(&self, turn: &TurnSpace, path: &str) -> Result<Vec<u8>, ScopedError> {
        let r = self
            .resolve_checked(turn, path, Purpose::File, Access::Read)
            .await?;
        self.in_session(turn, "commit read", async |perms| {
            self.require(&perms, &r, Access::Read)?;
            self.get(&r.key)
                .await?
                .ok_or_else(|| ScopedError::NotFound {
                    path: path.to_string(),
                })
        })
        .await
    }

    /// The text extracted from a file when it was written; `None` for a binary file. A file
    /// that no longer exists has no readable text, whatever is left in the text area.
    pub async fn read_text(
        &self,
        turn: &TurnSpace,
        path: &str,
    ) -> Result<Option<String>, ScopedError> {
        let r = self.resolve(path, turn, Purpose::File).await?;
        self.in_session(turn, "commit read", async |perms| {
            self.require(&perms, &r, Access::Read)?;
            let outlives = self.is(ScopedMutant::TextOutlivesFile);
            let not_found = || ScopedError::NotFound {
                path: path.to_string(),
            };
            let file = self.head_stamp(&r.key).await?;
            if file.is_none() && !outlives {
                return Err(not_found());
            }
            let text = self.get_stamped(&self.text_key(&r)).await?;
            let lossy = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
            match (file, text) {
                // Only the mutant gets here: text served for a file that is gone.
                (None, Some((t, _))) => Ok(Some(lossy(t))),
                (None, None) => Err(not_found()),
                (Some(file_sha), Some((t, text_sha))) if outlives || file_sha == text_sha => {
                    Ok(Some(lossy(t)))
                }
                // Stale or missing text (an overwrite failed between its two PUTs, or the
                // file is binary): extract afresh rather than serve another version's text.
                (Some(_), _) => {
                    let bytes = self.get(&r.key).await?.ok_or_else(not_found)?;
                    Ok(extract_text(&bytes).map(str::to_string))
                }
            }
        })
        .await
    }

    /// Deletes a file and its text (text first: a crash in between leaves a file without text,
    /// never text without a file).
    pub async fn delete(&self, turn: &TurnSpace, path: &str) -> Result<(), ScopedError> {
        let r = self.resolve_for_change(path, turn).await?;
        if r.scope == Scope::Skill {
            return Err(ScopedError::ReadOnly {
                path: path.to_string(),
            });
        }
        let needed = if self.is(ScopedMutant::DeleteNeedsOnlyRead)
            || (turn.person.is_some() && self.is(ScopedMutant::PersonDeleteNeedsOnlyRead))
        {
            Access::Read
        } else {
            Access::ReadWrite
        };
        self.in_session(turn, "commit delete", async |perms| {
            self.require(&perms, &r, needed)?;
            if !self.exists(&r.key).await? {
                return Err(ScopedError::NotFound {
                    path: path.to_string(),
                });
            }
            if !self.is(ScopedMutant::TextOutlivesFile) {
                self.delete_one(&self.text_key(&r)).await?;
            }
            self.delete_one(&r.key).await
        })
        .await
    }

    /// Lists what the caller may see. With no prefix (or an empty one): all three scopes the
    /// agent may read. Skills are not listed; they are read through the turn's skill table.
    pub async fn list(
        &self,
        turn: &TurnSpace,
        prefix: Option<&str>,
    ) -> Result<Vec<ListedFile>, ScopedError> {
        // A prefix is resolved before the session row is looked up (SC-3.5).
        let named = match prefix.filter(|p| !p.is_empty()) {
            Some(p) => Some(self.resolve_listing(p, turn).await?),
            None => None,
        };
        self.in_session(turn, "commit list", async |perms| {
            let targets: Vec<Resolved> = match named {
                Some(named) => {
                    for r in &named {
                        self.require(&perms, r, Access::Read)?;
                    }
                    named
                }
                None => {
                    let scopes: &[Scope] = if self.is(ScopedMutant::ListingOwnScopeOnly) {
                        &[Scope::Session]
                    } else {
                        &Scope::FILE_SCOPES
                    };
                    let mut v = Vec::new();
                    for s in scopes {
                        if turn.person.is_some() && self.is(ScopedMutant::PeopleListingRefuses) {
                            // The mutant refuses a person's whole listing for one scope they
                            // may not read (SPEC SF-2.6 leaves it out).
                            let probe = Resolved {
                                scope: *s,
                                relative: String::new(),
                                key: String::new(),
                                prefix: String::new(),
                            };
                            self.require(&perms, &probe, Access::Read)?;
                        }
                        if perms.for_scope(*s, self.mutant()).can_read() {
                            let prefix = turn.scope_prefix(*s);
                            v.push(Resolved {
                                scope: *s,
                                relative: String::new(),
                                key: prefix.clone(),
                                prefix,
                            });
                        }
                    }
                    v
                }
            };
            let guest = |r: &Resolved, rel: &str| {
                if r.scope == Scope::Skill {
                    let slug = r.relative.split('/').next().unwrap_or_default();
                    format!("skill/{slug}/{rel}")
                } else {
                    format!("{}/{rel}", r.scope)
                }
            };
            let mut files = Vec::new();
            for r in targets {
                let under = r.relative.split_once('/').map_or("", |(_, inner)| inner);
                let names_something = if r.scope == Scope::Skill {
                    !under.is_empty()
                } else {
                    !r.relative.is_empty()
                };
                if names_something && self.cfg.takes(Alternative::FilePrefixListsTheFile) {
                    // `file_prefix_listings=the_file` (SC-2.7's variant): a prefix that names
                    // a file lists that file.
                    let file_key = r.key.trim_end_matches('/');
                    for (key, size) in self.list_keys(file_key).await? {
                        if key == file_key {
                            let rel = &key[r.prefix.len()..];
                            files.push(ListedFile {
                                path: guest(&r, rel),
                                size,
                            });
                        }
                    }
                }
                for (key, size) in self.list_keys(&r.key).await? {
                    // Directory markers (keys ending in `/`) made by other tools are not files.
                    if layout::is_text_key_in(&r.prefix, &key, &self.cfg.text_segment)
                        || key.ends_with('/')
                    {
                        continue;
                    }
                    let Some(rel) = key.strip_prefix(&r.prefix) else {
                        continue;
                    };
                    files.push(ListedFile {
                        path: guest(&r, rel),
                        size,
                    });
                }
            }
            // One listing in the order of its guest paths' bytes (SPEC SC-4.4), however many
            // scopes it spans; the mutant, and a store taking `listing_order=any`, leave each
            // scope's files where its listing put them.
            if !self.is(ScopedMutant::ListingByScope)
                && !self.cfg.takes(Alternative::ListingsByScope)
            {
                files.sort_by(|a, b| a.path.cmp(&b.path));
            }
            Ok(files)
        })
        .await
    }

    /// What a listing's prefix names: one folder, or under `bare_skill_listings=every_skill`
    /// (SC-2.7's variant) a bare `skill` names every skill of the turn's table.
    async fn resolve_listing(
        &self,
        prefix: &str,
        turn: &TurnSpace,
    ) -> Result<Vec<Resolved>, ScopedError> {
        match self.resolve(prefix, turn, Purpose::List).await {
            Err(ScopedError::Path(PathError::Empty { .. }))
                if self.cfg.takes(Alternative::BareSkillListsEverySkill)
                    && prefix.split('/').filter(|s| !s.is_empty()).eq(["skill"]) =>
            {
                let mut all = Vec::new();
                for slug in turn.skills.keys() {
                    all.push(
                        self.resolve(&format!("skill/{slug}"), turn, Purpose::List)
                            .await?,
                    );
                }
                Ok(all)
            }
            r => r.map(|r| vec![r]),
        }
    }

    // ----- lifecycle ------------------------------------------------------------------------

    /// Validates the bucket's lifecycle configuration (the 1,000-rule cap, one filter per rule,
    /// no abort in a tag-filtered rule, a session backstop longer than the idle TTL) and puts
    /// it on the bucket. Nothing is sent if validation fails.
    pub async fn apply_lifecycle(
        &self,
        config: &super::lifecycle::LifecycleConfiguration,
    ) -> Result<(), ScopedError> {
        let ttl_days = if self.is(ScopedMutant::BackstopCheckedAgainstDefaultTtl) {
            DEFAULT_TTL_DAYS
        } else {
            self.cfg.session_file_ttl_days
        };
        config
            .validate_for_ttl(ttl_days)
            .map_err(|e| ScopedError::Config(e.to_string()))?;
        let mut config = config.clone();
        if self.is(ScopedMutant::KeptClassesExpire) {
            let backstop = config.rules.iter().find_map(|r| r.expiration_days);
            for r in &mut config.rules {
                r.expiration_days = r.expiration_days.or(backstop);
            }
        }
        if self.is(ScopedMutant::LifecycleMerged) {
            // Keeps what the bucket has and adds this configuration's rules, with ids made
            // unique by the backstop they carry.
            let kept = self
                .send(|| {
                    self.s3
                        .get_bucket_lifecycle_configuration()
                        .bucket(&self.cfg.bucket)
                        .send()
                })
                .await
                .map(|got| got.rules().to_vec())
                .unwrap_or_default();
            let mut aws = super::lifecycle::to_aws(&config).map_err(ScopedError::Config)?;
            let mut rules = kept;
            for mut r in aws.rules().to_vec() {
                let days = r.expiration().and_then(|e| e.days()).unwrap_or(0);
                r.id = Some(format!("{}-{days}", r.id().unwrap_or_default()));
                if !rules.iter().any(|k| k.id() == r.id()) {
                    rules.push(r);
                }
            }
            aws = aws_sdk_s3::types::BucketLifecycleConfiguration::builder()
                .set_rules(Some(rules))
                .build()
                .map_err(|e| ScopedError::Config(e.to_string()))?;
            return self
                .send(|| {
                    self.s3
                        .put_bucket_lifecycle_configuration()
                        .bucket(&self.cfg.bucket)
                        .lifecycle_configuration(aws.clone())
                        .send()
                })
                .await
                .map(|_| ())
                .map_err(|e| {
                    must(
                        "PutBucketLifecycleConfiguration",
                        &self.cfg.bucket,
                        self.mutant(),
                        e,
                    )
                });
        }
        let aws = super::lifecycle::to_aws(&config).map_err(ScopedError::Config)?;
        self.send(|| {
            self.s3
                .put_bucket_lifecycle_configuration()
                .bucket(&self.cfg.bucket)
                .lifecycle_configuration(aws.clone())
                .send()
        })
        .await
        .map_err(|e| {
            must(
                "PutBucketLifecycleConfiguration",
                &self.cfg.bucket,
                self.mutant(),
                e,
            )
        })?;
        Ok(())
    }

    // ----- skills ---------------------------------------------------------------------------

    /// Publishes a skill version through the skills API (not the files API) and returns its
    /// sha256. The hash covers every path and its bytes in path order, so the same content is
    /// the same version; an existing version is never overwritten.
    pub async fn publish_skill_version(
        &self,
        ws: &str,
        files: &BTreeMap<String, Vec<u8>>,
    ) -> Result<String, ScopedError> {
        let ws = Id::new(ws)?;
        if !self.meta.workspace_exists(ws.as_str()).await? {
            return Err(ScopedError::UnknownEntity {
                kind: "workspace",
                id: ws.to_string(),
            });
        }
        // A version with no files names nothing a turn could read (SPEC SC-2.6), unless this
        // store publishes it anyway (`empty_skill_versions=published`).
        if files.is_empty() && !self.cfg.takes(Alternative::EmptySkillVersionsPublished) {
            return Err(ScopedError::Path(super::error::PathError::Empty {
                path: "skill/<slug>/".to_string(),
            }));
        }
        let mut h = Sha256::new();
        for (path, bytes) in files {
            h.update((path.len() as u64).to_be_bytes());
            h.update(path.as_bytes());
            h.update((bytes.len() as u64).to_be_bytes());
            h.update(bytes);
        }
        let sha = hex::encode(h.finalize());
        let probe = TurnSpace {
            workspace: ws.clone(),
            agent: Id::new("skills")?,
            session: Id::new("skills")?,
            skills: BTreeMap::from([("v".to_string(), sha.clone())]),
            person: None,
        };
        // Validate every path before writing anything, so a bad path writes nothing.
        let mut keys = Vec::new();
        for path in files.keys() {
            let rules = layout::PathRules {
                mutant: None,
                ..self.cfg.path_rules()
            };
            let r =
                layout::resolve_with(&format!("skill/v/{path}"), &probe, Purpose::File, &rules)?;
            keys.push(r.key);
        }
        for (key, bytes) in keys.iter().zip(files.values()) {
            if !self.exists(key).await? {
                self.put(key, bytes.clone()).await?;
            }
        }
        Ok(sha)
    }

    // ----- deletion of entities -------------------------------------------------------------

    async fn delete_entity(
        &self,
        entity: Entity,
        kind: &'static str,
        app_prefix: String,
    ) -> Result<(), ScopedError> {
        let mut tx = self.meta.begin().await?;
        let result: Result<(), ScopedError> = async {
            let now = self.now().0;
            let (entity_id, id) = match &entity {
                Entity::Session(k) => (
                    k.session.clone(),
                    format!("{}/{}/{}", k.workspace, k.agent, k.session),
                ),
                Entity::Agent { workspace, agent } => {
                    (agent.clone(), format!("{workspace}/{agent}"))
                }
                Entity::Workspace(ws) => (ws.clone(), ws.clone()),
            };
            let app_records = self.is(ScopedMutant::AppRecordedDeletions);
            if app_records {
                // The bug: application code records the one prefix it knows about (and the
                // triggers stand down); the rows a cascade removes are never recorded.
                tx.record_deletion(&app_prefix, kind, &entity_id, now)
                    .await?;
            }
            if tx.delete_entity(&entity, now, !app_records).await? == 0 {
                return Err(ScopedError::UnknownEntity { kind, id });
            }
            Ok(())
        }
        .await;
        settle(tx, result, "commit deletion").await
    }

    /// Deletes a session; the trigger records its prefix for the sweep.
    pub async fn delete_session(&self, turn: &TurnSpace) -> Result<(), ScopedError> {
        self.delete_entity(
            Entity::Session(session_key(turn)),
            "session",
            layout::session_prefix(&turn.workspace, &turn.agent, &turn.session),
        )
        .await
    }

    /// Deletes an agent; the cascade removes its sessions and the triggers record every prefix.
    pub async fn delete_agent(&self, ws: &str, agent: &str) -> Result<(), ScopedError> {
        let (ws, agent) = (Id::new(ws)?, Id::new(agent)?);
        self.delete_entity(
            Entity::Agent {
                workspace: ws.to_string(),
                agent: agent.to_string(),
            },
            "agent",
            layout::agent_prefix(&ws, &agent),
        )
        .await
    }

    /// Deletes a workspace: its agents and sessions cascade, and the triggers record the
    /// workspace, skills, every agent and every session prefix.
    pub async fn delete_workspace(&self, ws: &str) -> Result<(), ScopedError> {
        let ws = Id::new(ws)?;
        self.delete_entity(
            Entity::Workspace(ws.to_string()),
            "workspace",
            layout::workspace_prefix(&ws),
        )
        .await
    }

    pub async fn deletion_obligations(&self) -> Result<Vec<DeletionObligation>, ScopedError> {
        self.meta.obligations().await
    }

    pub async fn deletion_records(&self) -> Result<Vec<DeletionRecord>, ScopedError> {
        self.meta.records().await
    }
}

pub(crate) fn session_key(turn: &TurnSpace) -> SessionKey {
    SessionKey::new(
        turn.workspace.as_str(),
        turn.agent.as_str(),
        turn.session.as_str(),
    )
}

/// Commits on success; on failure rolls back at once (see [`ScopedStore::in_session`] for why a
/// dropped transaction is not enough) and returns the original error.
pub(crate) async fn settle<T>(
    tx: Box<dyn MetaTx>,
    result: Result<T, ScopedError>,
    op: &'static str,
) -> Result<T, ScopedError> {
    match result {
        Ok(v) => {
            tx.commit().await.map_err(|e| match e {
                ScopedError::Database { source, .. } => ScopedError::Database {
                    operation: op,
                    source,
                },
                e => e,
            })?;
            Ok(v)
        }
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_extracted_from_utf8_without_nul_only() {
        assert_eq!(extract_text(b"hello"), Some("hello"));
        assert_eq!(extract_text(&[0xff, 0xfe]), None);
        assert_eq!(extract_text(b"a\0b"), None);
    }
}

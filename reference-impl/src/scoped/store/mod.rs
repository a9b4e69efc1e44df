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
//! This file holds the store and that rule's half in the rows: a session's transaction
//! ([`ScopedStore::in_session`]), its activity, its waits and the permission checks made inside
//! it. The other half is each operation's S3 calls, inside that transaction:
//!
//! - [`s3`]: one S3 request each (retried on a throttle, counted, its failures classified).
//! - [`files`]: the files API (write, read, read its text, delete, list) and skill versions.
//! - [`entities`]: workspaces, agents and sessions created, and deleted by their triggers.
//! - [`bucket_lifecycle`]: the bucket's lifecycle configuration, validated and put.
//!
//! The sweeps are [`super::retention`]'s; key shapes live in [`super::layout`], permissions
//! in [`super::permissions`], the rows in [`super::metadata`].

mod bucket_lifecycle;
mod entities;
mod files;
mod s3;

pub use files::extract_text;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sqlx::PgPool;

use super::alternatives::Alternative;
use super::config::ScopedConfig;
use super::error::{CrashPoint, PathError, ScopedError};
use super::layout::{self, Purpose, Resolved, TurnSpace};
use super::metadata::{MetaTx, Metadata, PostgresMetadata, SessionKey, WaitKind};
use super::mutants::ScopedMutant;
use super::permissions::{Access, Permissions, Scope};
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
    s3: crate::s3_client::S3Client,
    meta: Arc<dyn Metadata>,
    cfg: ScopedConfig,
    clock: Arc<dyn Clock>,
    counters: Counters,
}

impl ScopedStore {
    /// Builds a store and brings the database schema up to date.
    pub async fn open(
        s3: crate::s3_client::S3Client,
        pg: PgPool,
        cfg: ScopedConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<ScopedStore, ScopedError> {
        ScopedStore::with_metadata(s3, Arc::new(PostgresMetadata::new(pg)), cfg, clock).await
    }

    /// Builds a store over any metadata store (the in-memory one in simulation) and brings its
    /// schema up to date.
    pub async fn with_metadata(
        s3: crate::s3_client::S3Client,
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
    pub(crate) fn s3_client(&self) -> &crate::s3_client::S3Client {
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

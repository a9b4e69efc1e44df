//! Where erasure obligations and their proofs are kept (SPEC SL-4): two supertraits of
//! [`super::Metadata`] and [`super::MetaTx`], so the rows of part SL's erasures live beside
//! part SC's ledger in both stores (`postgres/erasure.rs`, `memory/erasure.rs`) without
//! growing the traits every part shares.
//!
//! The tables (PostgreSQL's names; the in-memory store keeps the same rows):
//! - `erasure_obligations`: one row per erasure, its subject (a workspace, or an agent of one),
//!   when it was requested, its deadline, and when it was met (null while pending).
//! - `erasure_proofs`: one row per key an erasure's sweep wrote down before deleting it, marked
//!   with the time it was recorded deleted (null while written down only).
//! - `storage_deletions.erasure_id`: the deletion obligations (SC-6) an erasure's subject
//!   recorded, or that were pending under its prefixes when it was requested, are the
//!   erasure's to meet: SC-6's sweep passes them by, and the erasure meets them with itself.

use async_trait::async_trait;

use crate::scoped::error::ScopedError;
use crate::scoped::metadata::SessionKey;
use crate::scoped::permissions::ScopeSettings;

/// What a create under a subject an erasure may hold answered (SPEC SL-4.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Creation {
    /// Inserted, or its settings replaced.
    Done,
    /// Its parent (the workspace of an agent) does not exist.
    NoParent,
    /// An erasure of the subject is pending: nothing was written.
    ErasurePending,
}

/// A row of `erasure_obligations`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ErasureObligation {
    pub id: i64,
    pub workspace: String,
    /// `None`: the workspace itself is the subject.
    pub agent: Option<String>,
    pub requested_at_ms: i64,
    pub deadline_ms: i64,
    pub done_at_ms: Option<i64>,
}

/// A row of `erasure_proofs`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ErasureProof {
    pub erasure_id: i64,
    pub key: String,
    /// When the sweep wrote the key down, before deleting it.
    pub written_at_ms: i64,
    /// When its deletion was recorded; `None` while it is written down only.
    pub deleted_at_ms: Option<i64>,
}

/// The statements about erasures that run on their own, each committed at once.
#[async_trait]
pub trait ErasureMetadata {
    /// Whether an erasure of the subject (a workspace's own when `agent` is `None`) is pending.
    async fn erasure_pending(&self, ws: &str, agent: Option<&str>) -> Result<bool, ScopedError>;

    /// Every erasure obligation, in id order.
    async fn erasures(&self) -> Result<Vec<ErasureObligation>, ScopedError>;

    /// Every proof row, in (erasure, key) order, key by its bytes.
    async fn erasure_proofs(&self) -> Result<Vec<ErasureProof>, ScopedError>;

    /// Writes `keys` down for the erasure (SL-4.3: before they are deleted), committed at once;
    /// a key already written down is left as it is. With `deleted`, each is recorded deleted
    /// at `now_ms` at the same time (only the proof-before-deletion mutant asks that).
    async fn write_down_erasure_keys(
        &self,
        erasure_id: i64,
        keys: &[String],
        now_ms: i64,
        deleted: bool,
    ) -> Result<(), ScopedError>;

    /// The keys written down for the erasure and not yet recorded deleted, by their bytes.
    async fn unrecorded_erasure_keys(&self, erasure_id: i64) -> Result<Vec<String>, ScopedError>;

    /// Inserts the workspace or replaces its settings, unless (with `refuse_pending`) an
    /// erasure of it is pending. The check and the write are one decision, taken under the
    /// workspace's subject lock that an erasure's request holds until it commits
    /// ([`ErasureTx::lock_subject`]): a create racing the erasure lands before it (and is
    /// erased with it) or finds it pending, never between the two (SL-4.6).
    async fn create_workspace_checked(
        &self,
        ws: &str,
        settings: ScopeSettings,
        refuse_pending: bool,
    ) -> Result<Creation, ScopedError>;

    /// [`Self::create_workspace_checked`] for an agent: under its workspace's subject lock
    /// (shared) and its own; `NoParent` when the workspace does not exist (an erasure of the
    /// workspace racing it is waited for, so it finds the workspace gone, not half gone).
    async fn create_agent_checked(
        &self,
        ws: &str,
        agent: &str,
        settings: ScopeSettings,
        refuse_pending: bool,
    ) -> Result<Creation, ScopedError>;

    /// [`super::Metadata::insert_session`] under its workspace's and agent's subject locks
    /// (shared): an erasure of either racing it is waited for, so the session is created before
    /// the erasure (and erased with it) or finds its agent gone.
    async fn create_session_checked(
        &self,
        key: &SessionKey,
        now_ms: i64,
    ) -> Result<bool, ScopedError>;
}

/// The statements about erasures that run in a transaction.
#[async_trait]
pub trait ErasureTx {
    /// Takes the subject's lock (a workspace's when `agent` is `None`, else the agent's, after
    /// its workspace's shared) for the rest of the transaction, waiting for a create under it to
    /// finish: an erasure's request takes it before it deletes the subject's row, so the creates
    /// of [`ErasureMetadata`] see the erasure pending or come before it (SL-4.6).
    async fn lock_subject(&mut self, ws: &str, agent: Option<&str>) -> Result<(), ScopedError>;

    /// Records an erasure of the subject at `now_ms` with its deadline, in the transaction that
    /// deleted the subject's row, and makes every pending deletion obligation under `prefixes`
    /// that no erasure holds yet (the trigger's, just written, and any left from before) the
    /// erasure's. Returns its id.
    async fn record_erasure(
        &mut self,
        ws: &str,
        agent: Option<&str>,
        now_ms: i64,
        deadline_ms: i64,
        prefixes: &[String],
    ) -> Result<i64, ScopedError>;

    /// Pending erasures in id order, at most `limit`, locked for this transaction (`FOR NO KEY
    /// UPDATE SKIP LOCKED`: a proof row written meanwhile never waits for the lock, and an
    /// erasure another sweep holds is passed by).
    async fn claim_erasures(&mut self, limit: i64) -> Result<Vec<ErasureObligation>, ScopedError>;

    /// Records `keys`, written down before, deleted at `now_ms` (those not recorded yet).
    async fn mark_erasure_keys_deleted(
        &mut self,
        erasure_id: i64,
        keys: &[String],
        now_ms: i64,
    ) -> Result<(), ScopedError>;

    /// Marks the erasure met at `done_at_ms` and meets its pending deletion obligations: a
    /// deletion record each (counting the proof's deleted keys under its prefix) and done.
    /// Returns how many deletion obligations it met.
    async fn complete_erasure(
        &mut self,
        erasure_id: i64,
        done_at_ms: i64,
    ) -> Result<u64, ScopedError>;
}

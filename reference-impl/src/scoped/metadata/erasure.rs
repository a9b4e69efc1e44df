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
}

/// The statements about erasures that run in a transaction.
#[async_trait]
pub trait ErasureTx {
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

//! Retention: what removes what is past keeping. The idle sweep (SPEC SC-5, SC-6), and the
//! retention policies that lifecycle rules cannot express (SPEC part SL) beside it: the
//! lifecycle rules stay the backstop (SL-1.1), and these are the sweeper's. Each is an
//! `impl ScopedStore` over the store's own S3 calls and rows ([`super::store`]), which names
//! nothing here; it calls two of these methods, each where its rule acts inside the store's
//! transaction: a create asks whether a pending erasure refuses it (`refuses_pending_erasure`,
//! SL-4.6) and a touch reopens a closed session (`touch_reopening`, SL-3).
//!
//! - [`idle`]: the hourly sweep: idle sessions' files, the policy sweep, deletion obligations.
//! - [`policy_sweep`]: the policy sweep, beside the idle sweep: claim, delete across sessions,
//!   mark, in one transaction per chunk (SL-1).
//! - [`count`]: keep an agent's last N sessions, ranked by last activity (SL-2).
//! - [`close`]: a session's close, swept a grace after it unless activity reopens it (SL-3).
//! - [`erasure`]: erasure obligations with a deadline, and their proofs (SL-4).
//! - [`unfinished`]: the sessions a sweep left unfinished, finished by the next one whatever
//!   swept them (SL-2.4, SL-1.2).
//! - [`workspace_retention`]: a workspace's own idle TTL and its backstop lifecycle rule (SL-5).
//!
//! A promotion (SL-6, `promotion.rs`) and a tool result's overflow (SL-7, `overflow.rs`) keep
//! files rather than remove them: they are rules of their own beside this folder.

pub mod close;
pub mod count;
pub mod erasure;
pub mod idle;
pub mod policy_sweep;
pub mod unfinished;
pub mod workspace_retention;

/// The largest count a policy may keep (SL-1.4): past it, a count is a typo, not a policy.
pub const MAX_KEEP_LAST: i64 = 100_000;

/// What a sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepReport {
    pub sessions_swept: u64,
    /// Sessions whose deletion was incomplete (a key failed); left for the next sweep.
    pub sessions_retried_later: u64,
    pub obligations_completed: u64,
    pub obligations_retried_later: u64,
    pub objects_deleted: u64,
    pub list_requests: u64,
    pub delete_requests: u64,
}

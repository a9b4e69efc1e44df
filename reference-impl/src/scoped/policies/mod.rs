//! Retention policies that lifecycle rules cannot express (SPEC.md part SL), beside the idle
//! sweep of [`super::store`]: the lifecycle rules stay the backstop (SL-1.1), and these are the
//! policy sweeper's.
//!
//! - [`sweep`]: the policy sweep itself, beside the idle sweep: claim, delete across sessions,
//!   mark, in one transaction per chunk (SL-1).
//! - [`count`]: keep an agent's last N sessions, ranked by last activity (SL-2).
//! - [`close`]: a session's close, swept a grace after it unless activity reopens it (SL-3).
//! - [`promotion`]: a session file copied, with its text, to agent or workspace scope (SL-6).
//! - [`overflow`]: a tool result too large to show, written to a session file (SL-7).
//! - [`erasure`]: erasure obligations with a deadline, and their proofs (SL-4).
//! - [`unfinished`]: the sessions a sweep left unfinished, finished by the next one whatever
//!   swept them (SL-2.4, SL-1.2).
//! - [`workspace_retention`]: a workspace's own idle TTL and its backstop lifecycle rule (SL-5).

pub mod close;
pub mod count;
pub mod erasure;
pub mod overflow;
pub mod promotion;
pub mod sweep;
pub mod unfinished;
pub mod workspace_retention;

/// The largest count a policy may keep (SL-1.4): past it, a count is a typo, not a policy.
pub const MAX_KEEP_LAST: i64 = 100_000;

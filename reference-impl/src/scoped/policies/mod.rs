//! Retention policies that lifecycle rules cannot express (SPEC.md part SL), beside the idle
//! sweep of [`super::store`]: the lifecycle rules stay the backstop (SL-1.1), and these are the
//! policy sweeper's.
//!
//! - [`count`]: keep an agent's last N sessions, ranked by last activity (SL-2).
//! - [`promotion`]: a session file copied, with its text, to agent or workspace scope (SL-6).
//! - [`overflow`]: a tool result too large to show, written to a session file (SL-7).
//! - [`workspace_retention`]: a workspace's own idle TTL and its backstop lifecycle rule (SL-5).
//!
//! Not built yet (issue 23): a session's close (SL-3), erasure obligations and their proofs
//! (SL-4).

pub mod count;
pub mod overflow;
pub mod promotion;
pub mod workspace_retention;

/// The largest count a policy may keep (SL-1.4): past it, a count is a typo, not a policy.
pub const MAX_KEEP_LAST: i64 = 100_000;

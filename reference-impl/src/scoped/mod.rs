//! The scoped object-storage profile (SPEC.md part SC): one bucket laid out scope-first,
//! guest paths resolved by refusal rather than clamping, per-scope permissions from a settings
//! cascade, session files swept from the session's last activity, and deletions of sessions,
//! agents and workspaces recorded by a database trigger and swept.
//!
//! This file is the design's face: what a driver calls is re-exported here. The parts, each
//! using only those listed before it (no import circle, issue 25):
//!
//! - [`mutants`]: deliberately broken variants, switched at run time where they act.
//! - [`alternatives`]: the other side of SPEC.md's variants, which the store can take.
//! - [`permissions`]: the scopes and the settings cascade.
//! - [`error`]: refusals and their reason codes (and the harness's crash points).
//! - [`layout`]: the only module that knows the shape of keys.
//! - [`lifecycle`]: the bucket lifecycle configuration and its validation.
//! - [`schema`]: the PostgreSQL schema and its triggers.
//! - [`config`]: the knobs ([`ScopedConfig`]) and the harness's hooks.
//! - [`metadata`]: the metadata trait and its rows, over PostgreSQL and in memory with its
//!   semantics.
//! - [`store`]: files over S3 (a real client over HTTP), state in a [`metadata`] store.
//! - [`retention`]: what removes what is past keeping: the idle sweep and the retention
//!   policies lifecycle rules cannot express (SPEC part SL).
//! - [`promotion`]: a session file copied, with its text, to agent or workspace scope (SL-6).
//! - [`overflow`]: a tool result too large to show, written to a session file (SL-7).
//! - [`people`]: the people's files API (SPEC part SF) over the store.

pub mod alternatives;
pub mod config;
pub mod error;
pub mod layout;
pub mod lifecycle;
pub mod metadata;
pub mod mutants;
pub mod overflow;
pub mod people;
pub mod permissions;
pub mod promotion;
pub mod retention;
pub mod schema;
pub mod store;

pub use alternatives::Alternative;
pub use config::{ScopedConfig, SweepPause};
pub use error::{CrashPoint, PathError, ScopedError};
pub use layout::{Resolved, TurnSpace};
pub use metadata::WaitKind;
pub use mutants::ScopedMutant;
pub use overflow::ToolOutput;
pub use permissions::{Access, Permissions, PersonGrant, Scope, ScopeSettings};
pub use retention::{SweepReport, MAX_KEEP_LAST};
pub use store::ScopedStore;

//! The scoped object-storage profile (SPEC.md part SC): one bucket laid out scope-first,
//! guest paths resolved by refusal rather than clamping, per-scope permissions from a settings
//! cascade, session files swept from the session's last activity, and deletions of sessions,
//! agents and workspaces recorded by a database trigger and swept.
//!
//! - [`layout`]: the only module that knows the shape of keys.
//! - [`permissions`]: the settings cascade.
//! - [`store`]: files over S3 (a real client over HTTP), state in a [`metadata`] store, the sweep.
//! - [`metadata`]: the metadata trait, over PostgreSQL and in memory with its semantics.
//! - [`schema`]: the PostgreSQL schema and its triggers.
//! - [`lifecycle`]: the bucket lifecycle configuration and its validation.
//! - [`mutants`]: deliberately broken variants, switched at run time.
//! - [`alternatives`]: the other side of SPEC.md's variants, which the store can take.
//! - [`policies`]: retention policies lifecycle rules cannot express (SPEC part SL).

pub mod alternatives;
pub mod error;
pub mod layout;
pub mod lifecycle;
pub mod metadata;
pub mod mutants;
pub mod people;
pub mod permissions;
pub mod policies;
pub mod schema;
pub mod store;

pub use alternatives::Alternative;
pub use error::{PathError, ScopedError};
pub use layout::{Resolved, Scope, TurnSpace};
pub use mutants::ScopedMutant;
pub use permissions::{Access, Permissions, PersonGrant, ScopeSettings};
pub use store::{CrashPoint, ScopedConfig, ScopedStore, SweepPause, SweepReport, WaitKind};

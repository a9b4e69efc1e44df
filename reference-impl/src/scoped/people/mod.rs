//! The people's files API (SPEC part SF): the session's files reached by people over HTTP,
//! beside the agent's file tool, over the same [`ScopedStore`].
//!
//! - [`url`]: a request's path to a session, a scope and a guest path, decoded exactly once.
//! - [`credentials`]: the reference's own credential scheme, opaque bearer tokens it mints.
//! - [`server`]: the routes, served by axum on a loopback listener, or on a listener the caller
//!   owns ([`PeopleRoutes`]: the scoped turmoil world serves them over simulated TCP).

pub mod credentials;
pub mod server;
pub mod url;

use std::sync::{Arc, RwLock};

use serde::Serialize;

use super::store::ScopedStore;
use super::ScopedError;

pub use credentials::{Credentials, Person};
pub use server::{PeopleApi, PeopleRoutes};

/// The store a running API serves. A process that reopens its store (after an injected crash,
/// or a harness's restart in process) puts the new one here, and the next request uses it.
pub type StoreSlot = Arc<RwLock<Arc<ScopedStore>>>;

/// A refusal or failure of the API: a reason of SC-8.1 or SF-1.5 and a message (whose wording
/// no harness judges).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApiError {
    pub reason: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            reason,
            message: message.into(),
        }
    }

    /// The status SF-1.5's table gives the reason.
    pub fn status(&self) -> u16 {
        status_of(self.reason)
    }
}

impl From<ScopedError> for ApiError {
    fn from(e: ScopedError) -> Self {
        ApiError {
            reason: e.kind(),
            message: e.to_string(),
        }
    }
}

/// SF-1.5: the status of a reason.
pub fn status_of(reason: &str) -> u16 {
    match reason {
        "unauthenticated" => 401,
        "permission_denied" | "read_only" => 403,
        "not_found" | "unknown_entity" | "unknown_scope" | "unknown_skill" => 404,
        "too_large" => 413,
        "storage_unavailable" | "database_unavailable" | "no_such_bucket" => 503,
        "config" | "crashed" => 500,
        _ => 400,
    }
}

//! A guest's sessions as the oracle models them: which one an operation goes to ([`Sess`]), and
//! what the guest knows of one ([`SessionModel`]): its files, its activity, and every request
//! to it ([`Request`]), from which `super::claims` tells when a sweep certainly took it. Below
//! the oracle, the claims and the plans, which all name sessions.

use std::collections::BTreeMap;

use tidemark_reference::clock::DAY_MS;

use super::paths::PathModel;
use super::TTL_DAYS;
use crate::profiles::scoped::contract::Turn;

/// How close to the TTL a session's idle time may come before the oracle stops promising its
/// files. The server stamps activity when it handles a request (after the guest sent it) and the
/// clock may jump back by up to two hours, so a sweep can see a session idle for up to two hours
/// longer than the guest measured from its own send times; a day covers that with room to
/// spare. The cost is only that a session idle between six and seven days is not checked.
pub(super) const EXPIRY_MARGIN_MS: i64 = DAY_MS;
const TTL_MS: i64 = TTL_DAYS as i64 * DAY_MS;

/// Which of a guest's sessions an operation goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sess {
    /// Holds a wait from the start and idles until the end.
    Kept,
    /// The busy one.
    Active,
    /// Its agent's access to agent and workspace scope is `none`.
    Shut,
    /// In the workspace the deleter works on: identity checks only.
    Exposed,
}

pub(super) struct SessionModel {
    pub(super) turn: Turn,
    /// World ms the guest sent the first request that may have created the session, and then
    /// each later operation of the guest, or upload or removal of its person, that succeeded.
    pub(super) last_activity: Option<i64>,
    pub(super) wait_confirmed: bool,
    /// The wait is known to have been in place before the session could have expired.
    pub(super) protected: bool,
    pub(super) paths: BTreeMap<String, PathModel>,
    /// Every request to the session, the guest's and its person's (`super::claims`).
    pub(super) requests: Vec<Request>,
    /// The network ms of each request sent to the session and not yet in `requests` (its
    /// answer, or its timeout, still to come): it may be holding the session's row now, so no
    /// sweep running meanwhile certainly claimed the session (`super::claims`).
    pub(super) in_flight: Vec<u64>,
}

impl SessionModel {
    pub(super) fn new(turn: Turn) -> SessionModel {
        SessionModel {
            turn,
            last_activity: None,
            wait_confirmed: false,
            protected: false,
            paths: BTreeMap::new(),
            requests: Vec::new(),
            in_flight: Vec::new(),
        }
    }

    /// Whether a sweep may have found the session idle for the TTL by `at`.
    pub(super) fn expirable(&self, at: i64) -> bool {
        !self.protected
            && self
                .last_activity
                .is_some_and(|last| at - last >= TTL_MS - EXPIRY_MARGIN_MS)
    }
}

/// One request to a session: sent and answered (turmoil ms, `u64::MAX` if no answer came),
/// and answered at world ms.
#[derive(Clone, Copy, Debug)]
pub(super) struct Request {
    pub(super) sent_net: u64,
    pub(super) replied_net: u64,
    pub(super) replied_at: i64,
}

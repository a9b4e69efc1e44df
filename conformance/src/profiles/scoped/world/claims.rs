//! When the oracle knows a sweep took a session's files (SC-5.5): a sweep that ran to its end
//! and started when the session was certainly idle for the TTL claimed it, and a claimed
//! session's files are gone for every request after the sweep, even where S3 failed part of
//! the way (the next request deletes the rest first, SC-5.5 and SF-4.1). Everywhere else the
//! oracle only knows that a session *may* have expired, and allows its files either way.
//!
//! "Certainly idle": no request to the session was in flight while the sweep ran (a request
//! holding the session's row makes the sweep pass it by), and the latest any request to it
//! could have been stamped, plus the TTL and a day (the clock jumps back by up to two hours),
//! is before the sweep started. A request whose answer never came may land at any time, so
//! after one the oracle is never certain again; nor while one is in flight (a person's upload
//! whose answer is still to come, and which the oracle records only when it comes or times out,
//! may have landed as activity before the sweep started: the scoped world's seed 80).

use std::sync::{Arc, Mutex};

use tidemark_reference::clock::DAY_MS;

use super::session::{Request, SessionModel};
use super::TTL_DAYS;
use crate::world::lock;

/// One sweep of `app`'s that ran to its end: when it started (world ms), and its network
/// times (turmoil ms).
#[derive(Clone, Copy, Debug)]
pub(super) struct SweepRecord {
    pub(super) started: i64,
    pub(super) net_start: u64,
    pub(super) net_end: u64,
    pub(super) refused: bool,
}

/// Every sweep that ran to its end, as `app` records them (outside the trace).
pub(super) type Sweeps = Arc<Mutex<Vec<SweepRecord>>>;

const MARGIN_MS: i64 = TTL_DAYS as i64 * DAY_MS + DAY_MS;

impl SessionModel {
    /// The network time a sweep that certainly claimed the session started at, the latest of
    /// those that ended before `before_net`.
    pub(super) fn claimed(&self, sweeps: &Sweeps, before_net: u64) -> Option<u64> {
        if self.last_activity.is_none() || self.wait_confirmed {
            return None;
        }
        // A request still in flight (sent, its answer or timeout to come) may have held the
        // session's row, or landed as activity, while any sweep since its sending ran.
        let in_flight = self.in_flight.iter().map(|&sent_net| Request {
            sent_net,
            replied_net: u64::MAX,
            replied_at: i64::MAX,
        });
        let requests: Vec<Request> = self.requests.iter().copied().chain(in_flight).collect();
        lock(sweeps)
            .iter()
            .filter(|r| !r.refused && r.net_end < before_net)
            .filter(|r| {
                requests.iter().all(|q| {
                    let during = q.replied_net >= r.net_start && q.sent_net <= r.net_end;
                    let after = q.sent_net > r.net_end;
                    !during && (after || q.replied_at + MARGIN_MS <= r.started)
                })
            })
            .map(|r| r.net_start)
            .max()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::profiles::scoped::contract::Turn;

    fn idle_session() -> SessionModel {
        SessionModel {
            turn: Turn::new("w1", "n0", "n0"),
            last_activity: Some(0),
            wait_confirmed: false,
            protected: false,
            paths: BTreeMap::new(),
            // One upload, answered long before the sweep.
            requests: vec![Request {
                sent_net: 10,
                replied_net: 20,
                replied_at: 0,
            }],
            in_flight: Vec::new(),
        }
    }

    fn one_sweep() -> Sweeps {
        Arc::new(Mutex::new(vec![SweepRecord {
            started: MARGIN_MS + 1,
            net_start: 100,
            net_end: 200,
            refused: false,
        }]))
    }

    #[test]
    fn a_sweep_after_the_ttl_certainly_claimed_a_session_nobody_was_reaching() {
        assert_eq!(idle_session().claimed(&one_sweep(), 300), Some(100));
    }

    #[test]
    fn a_request_still_in_flight_when_the_sweep_ran_leaves_the_claim_uncertain() {
        // Seed 80 of the scoped world: a person's upload sent before the sweep and answered
        // (by its timeout) only after the listing that the oracle judged by the claim.
        let mut s = idle_session();
        s.in_flight.push(90);
        assert_eq!(s.claimed(&one_sweep(), 300), None);
        // One sent after the sweep ended changes nothing about it.
        let mut s = idle_session();
        s.in_flight.push(250);
        assert_eq!(s.claimed(&one_sweep(), 300), Some(100));
    }
}

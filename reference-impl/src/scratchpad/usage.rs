//! Running byte counts, so a write's quota check costs the same in a session of ten files as in
//! one of ten thousand (SP-4.5). Rebuilt by one walk of the root when the scratchpad opens, so
//! the counts stay right across a restart; every write, eviction, removal and sweep keeps them.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    by_pair: BTreeMap<(String, String), u64>,
    by_session: BTreeMap<String, u64>,
    by_requester: BTreeMap<String, u64>,
}

impl Usage {
    pub fn session_bytes(&self, session: &str) -> u64 {
        self.by_session.get(session).copied().unwrap_or(0)
    }
    pub fn requester_bytes(&self, requester: &str) -> u64 {
        self.by_requester.get(requester).copied().unwrap_or(0)
    }
    pub fn pair_bytes(&self, session: &str, requester: &str) -> u64 {
        self.by_pair
            .get(&(session.to_string(), requester.to_string()))
            .copied()
            .unwrap_or(0)
    }

    pub fn add(&mut self, session: &str, requester: &str, bytes: u64) {
        if bytes == 0 {
            return; // an empty file holds no quota; keeping no entry keeps the maps comparable
        }
        *self
            .by_pair
            .entry((session.to_string(), requester.to_string()))
            .or_default() += bytes;
        *self.by_session.entry(session.to_string()).or_default() += bytes;
        *self.by_requester.entry(requester.to_string()).or_default() += bytes;
    }

    pub fn subtract(&mut self, session: &str, requester: &str, bytes: u64) {
        fn dec(v: &mut u64, by: u64) {
            // A count below zero would mean the disk and the counts disagree; saturate rather
            // than wrap, and let the restart walk put it right.
            *v = v.saturating_sub(by);
        }
        if let Some(v) = self
            .by_pair
            .get_mut(&(session.to_string(), requester.to_string()))
        {
            dec(v, bytes);
        }
        if let Some(v) = self.by_session.get_mut(session) {
            dec(v, bytes);
        }
        if let Some(v) = self.by_requester.get_mut(requester) {
            dec(v, bytes);
        }
        self.by_pair.retain(|_, v| *v > 0);
        self.by_session.retain(|_, v| *v > 0);
        self.by_requester.retain(|_, v| *v > 0);
    }

    /// Forgets a whole session (it was swept).
    pub fn drop_session(&mut self, session: &str) {
        let pairs: Vec<(String, u64)> = self
            .by_pair
            .iter()
            .filter(|((s, _), _)| s == session)
            .map(|((_, r), b)| (r.clone(), *b))
            .collect();
        for (requester, bytes) in pairs {
            self.subtract(session, &requester, bytes);
        }
    }

    /// Every (session, requester) pair with bytes, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&(String, String), &u64)> {
        self.by_pair.iter()
    }
}

//! What the scoped world's oracle may be told about one path ([`PathModel`]), and what a read
//! may answer when another guest writes the path while the read is in flight ([`Window`]).
//!
//! Every path has one writer (an agent guest writes its own names, a person guest its own),
//! and a writer waits for each answer before its next request; but a person reads what its
//! agent writes and the agent what its person uploads, concurrently. So a write or removal is
//! registered when it is sent ([`PathModel::send`]), each reader takes what the path may hold
//! when it sends ([`PathModel::seen`]), and its answer may be anything the path held then, or
//! any value sent to it since ([`PathModel::window`]). A writer reading its own path sees no
//! value sent meanwhile, so its verdict is as exact as before.

use std::collections::{BTreeMap, BTreeSet};

/// The world's network time in milliseconds (turmoil's, monotonic: the world clock can jump
/// back, so it cannot order sends).
pub(super) fn net_ms() -> u64 {
    turmoil::sim_elapsed().unwrap_or_default().as_millis() as u64
}

/// What a reply may be for one path: `None` is "not found".
#[derive(Clone, Debug, Default)]
pub(super) struct PathModel {
    pub(super) allowed: BTreeSet<Option<String>>,
    /// A write or delete whose outcome the guest never learned: it may land at any time, so
    /// from then on any content the guest wrote there (or none) is acceptable.
    pub(super) haunted: bool,
    pub(super) written: BTreeSet<String>,
    /// The value of a write or removal sent and not answered yet (one writer, one at a time).
    pending: Option<Option<String>>,
    /// Every value sent to the path, with the network millisecond it was sent at.
    sent: Vec<(u64, Option<String>)>,
}

impl PathModel {
    pub(super) fn absent() -> PathModel {
        PathModel {
            allowed: BTreeSet::from([None]),
            ..PathModel::default()
        }
    }

    pub(super) fn accepts(&self, v: &Option<String>) -> bool {
        if self.haunted {
            v.as_ref().is_none_or(|c| self.written.contains(c))
        } else {
            self.allowed.contains(v)
        }
    }

    pub(super) fn set(&mut self, v: Option<String>) {
        if let Some(c) = &v {
            self.written.insert(c.clone());
        }
        self.allowed = BTreeSet::from([v]);
    }

    pub(super) fn must_exist(&self) -> bool {
        !self.haunted && !self.allowed.contains(&None)
    }

    /// Registers a write (`Some`) or removal (`None`) as it is sent at `at_ms` (network time).
    pub(super) fn send(&mut self, v: Option<String>, at_ms: u64) {
        self.pending = Some(v.clone());
        self.sent.push((at_ms, v));
    }

    /// The writer learnt its request's fate (the caller then sets or haunts the path).
    pub(super) fn settle(&mut self) {
        if let Some(Some(c)) = self.pending.take() {
            // Whatever became of it, it may have been read meanwhile.
            self.written.insert(c);
        }
    }

    /// A request whose answer never came: it may land at any time.
    pub(super) fn haunt(&mut self, v: Option<String>) {
        self.settle();
        self.haunted = true;
        if let Some(c) = v {
            self.written.insert(c);
        }
    }

    /// Whether anything was sent to the path at or after network ms `net` (or may still land).
    pub(super) fn written_since(&self, net: u64) -> bool {
        self.haunted || self.pending.is_some() || self.sent.iter().any(|(at, _)| *at >= net)
    }

    /// What a read sent now may find.
    pub(super) fn seen(&self) -> Seen {
        let mut values = self.allowed.clone();
        values.extend(self.pending.clone());
        Seen {
            values,
            haunted: self.haunted,
        }
    }

    /// What a read may answer that was sent at `since_ms` when the path held `seen` (`None`: no
    /// model of the path then, so it held nothing).
    pub(super) fn window(&self, seen: Option<&Seen>, since_ms: u64) -> Window {
        let mut values: BTreeSet<Option<String>> = match seen {
            Some(s) => s.values.clone(),
            None => BTreeSet::from([None]),
        };
        values.extend(self.allowed.iter().cloned());
        let mut quiet = self.pending.is_none();
        for (at, v) in &self.sent {
            if *at >= since_ms {
                values.insert(v.clone());
                quiet = false;
            }
        }
        let mut written = self.written.clone();
        written.extend(values.iter().flatten().cloned());
        Window {
            values,
            haunted: self.haunted || seen.is_some_and(|s| s.haunted),
            written,
            quiet,
        }
    }
}

/// What a path may hold as a read is sent.
#[derive(Clone, Debug)]
pub(super) struct Seen {
    values: BTreeSet<Option<String>>,
    haunted: bool,
}

/// What a read may have found between its sending and its answer.
pub(super) struct Window {
    pub(super) values: BTreeSet<Option<String>>,
    haunted: bool,
    written: BTreeSet<String>,
    /// Nothing was sent to the path meanwhile and nothing is in flight: the answer is what
    /// the path holds now, and the reader may narrow the model to it.
    pub(super) quiet: bool,
}

impl Window {
    pub(super) fn accepts(&self, v: &Option<String>) -> bool {
        if self.haunted {
            v.as_ref().is_none_or(|c| self.written.contains(c))
        } else {
            self.values.contains(v)
        }
    }

    pub(super) fn must_exist(&self) -> bool {
        !self.haunted && !self.values.contains(&None)
    }

    pub(super) fn must_not_exist(&self) -> bool {
        !self.haunted && self.values.len() == 1 && self.values.contains(&None)
    }
}

/// What a request's reader took as it was sent: the network time, and what each path it may
/// see held then (by guest path: `session/…`, `agent/…`, `workspace/…`).
#[derive(Clone, Debug, Default)]
pub(super) struct Ticket {
    pub(super) sent_ms: u64,
    pub(super) seen: BTreeMap<String, Seen>,
}

impl Ticket {
    /// The window of `path` for this request, from its model now.
    pub(super) fn window(&self, path: &str, m: &PathModel) -> Window {
        m.window(self.seen.get(path), self.sent_ms)
    }
}

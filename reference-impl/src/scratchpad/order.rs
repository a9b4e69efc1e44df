//! Each session's eviction order (SP-4.2), kept incrementally so an evicting write costs about
//! what a write that evicts nothing costs, however many files the session holds.
//!
//! Per session: the files by (modification time, listing path), oldest first, and by listing
//! path for updates. Every write, eviction, removal and sweep of the scratchpad keeps it; one walk
//! of the root rebuilds it when the scratchpad opens (the same walk that rebuilds the byte counts,
//! SP-4.5), so it is right after a restart.
//!
//! The index knows only what the scratchpad did itself. How it stays honest about the disk is the
//! caller's half (`Scratchpad::evict_from_session`): every candidate is checked on disk before it
//! is removed (a regular file, no symbolic link on its path, the size and time the index holds),
//! and on any disagreement the session is walked again and the index and counts are rebuilt from
//! what the walk saw before anything is evicted.

use crate::clock::Timestamp;
use std::collections::{BTreeMap, BTreeSet};

/// One file of a session as the index holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Indexed {
    /// `<requester-dir>/<path>`, as the session listing shows it.
    pub listed: String,
    pub mtime: Timestamp,
    pub size: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct FileFacts {
    mtime: Timestamp,
    size: u64,
    /// When the scratchpad last wrote the file, as a running count (walk order after a restart).
    /// Only the `equal-times-by-write-order` mutant reads it.
    written_seq: u64,
}

/// One session's files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionOrder {
    oldest_first: BTreeSet<(Timestamp, String)>,
    files: BTreeMap<String, FileFacts>,
}

impl SessionOrder {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Every session's eviction order. Compared whole by tests against a fresh walk, so the write
/// sequence numbers are left out of equality (see [`EvictionOrder::same_files`]).
#[derive(Clone, Debug, Default)]
pub struct EvictionOrder {
    sessions: BTreeMap<String, SessionOrder>,
    next_seq: u64,
}

impl EvictionOrder {
    /// Records that `listed` in `session` now has this time and size (a write or an overwrite).
    pub fn upsert(&mut self, session: &str, listed: &str, mtime: Timestamp, size: u64) {
        self.next_seq += 1;
        let seq = self.next_seq;
        let s = self.sessions.entry(session.to_string()).or_default();
        if let Some(old) = s.files.insert(
            listed.to_string(),
            FileFacts {
                mtime,
                size,
                written_seq: seq,
            },
        ) {
            s.oldest_first.remove(&(old.mtime, listed.to_string()));
        }
        s.oldest_first.insert((mtime, listed.to_string()));
    }

    /// Forgets one file (removed or evicted).
    pub fn remove(&mut self, session: &str, listed: &str) {
        if let Some(s) = self.sessions.get_mut(session) {
            if let Some(old) = s.files.remove(listed) {
                s.oldest_first.remove(&(old.mtime, listed.to_string()));
            }
            if s.is_empty() {
                self.sessions.remove(session);
            }
        }
    }

    /// Forgets a whole session (it was swept).
    pub fn drop_session(&mut self, session: &str) {
        self.sessions.remove(session);
    }

    /// Replaces a session's files with what a walk saw, in walk (path) order.
    pub fn replace_session(&mut self, session: &str, files: impl IntoIterator<Item = Indexed>) {
        self.sessions.remove(session);
        for f in files {
            self.upsert(session, &f.listed, f.mtime, f.size);
        }
    }

    /// The files SP-4.2 evicts to free `need` bytes: oldest first, equal times by listing path,
    /// never `keep` (the file being overwritten). Stops as soon as the sizes reach `need`, so it
    /// reads only as many entries as it returns (plus `keep`).
    pub fn oldest(&self, session: &str, keep: Option<&str>, need: u64) -> Vec<Indexed> {
        let mut out = Vec::new();
        let Some(s) = self.sessions.get(session) else {
            return out;
        };
        let mut freed = 0u64;
        for (mtime, listed) in &s.oldest_first {
            if freed >= need {
                break;
            }
            if Some(listed.as_str()) == keep {
                continue;
            }
            let size = s.files[listed].size;
            freed += size;
            out.push(Indexed {
                listed: listed.clone(),
                mtime: *mtime,
                size,
            });
        }
        out
    }

    /// The `equal-times-by-write-order` mutant's order: oldest first, equal times by the order the
    /// files were written (what an in-memory list appended on each write gives). Walks the whole
    /// session; a mutant need not be fast.
    pub fn oldest_by_write_order(&self, session: &str, keep: &str, need: u64) -> Vec<Indexed> {
        let Some(s) = self.sessions.get(session) else {
            return Vec::new();
        };
        let mut all: Vec<(Timestamp, u64, &String, u64)> = s
            .files
            .iter()
            .filter(|(l, _)| l.as_str() != keep)
            .map(|(l, f)| (f.mtime, f.written_seq, l, f.size))
            .collect();
        all.sort();
        let mut freed = 0u64;
        let mut out = Vec::new();
        for (mtime, _, listed, size) in all {
            if freed >= need {
                break;
            }
            freed += size;
            out.push(Indexed {
                listed: listed.clone(),
                mtime,
                size,
            });
        }
        out
    }

    /// Every session's files, oldest first, for comparing the index with a fresh walk.
    pub fn files(&self) -> Vec<(String, Indexed)> {
        let mut out = Vec::new();
        for (session, s) in &self.sessions {
            for (mtime, listed) in &s.oldest_first {
                out.push((
                    session.clone(),
                    Indexed {
                        listed: listed.clone(),
                        mtime: *mtime,
                        size: s.files[listed].size,
                    },
                ));
            }
        }
        out
    }

    /// Whether two indexes hold the same files with the same times and sizes (write sequence
    /// numbers aside: a fresh walk numbers files in path order).
    pub fn same_files(&self, other: &EvictionOrder) -> bool {
        self.files() == other.files()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp(ms)
    }

    #[test]
    fn oldest_first_equal_times_by_listing_path_never_the_kept_file() {
        let mut o = EvictionOrder::default();
        o.upsert("s", "r/z.txt", t(1), 100);
        o.upsert("s", "r/m.txt", t(1), 100);
        o.upsert("s", "r/a.txt", t(2), 100);
        o.upsert("other", "r/old.txt", t(0), 100);
        let names = |v: Vec<Indexed>| v.into_iter().map(|i| i.listed).collect::<Vec<_>>();
        assert_eq!(names(o.oldest("s", None, 150)), ["r/m.txt", "r/z.txt"]);
        assert_eq!(
            names(o.oldest("s", Some("r/m.txt"), 150)),
            ["r/z.txt", "r/a.txt"]
        );
        assert_eq!(
            names(o.oldest_by_write_order("s", "", 150)),
            ["r/z.txt", "r/m.txt"]
        );
        // An overwrite moves the file to its new time.
        o.upsert("s", "r/m.txt", t(3), 100);
        assert_eq!(names(o.oldest("s", None, 1)), ["r/z.txt"]);
        o.remove("s", "r/z.txt");
        assert_eq!(names(o.oldest("s", None, 1)), ["r/a.txt"]);
        o.drop_session("s");
        assert!(o.oldest("s", None, 1).is_empty());
        assert_eq!(names(o.oldest("other", None, 1)), ["r/old.txt"]);
    }

    #[test]
    fn empty_files_ahead_of_the_need_are_taken_as_a_walk_would() {
        let mut o = EvictionOrder::default();
        o.upsert("s", "r/empty", t(1), 0);
        o.upsert("s", "r/big", t(2), 500);
        o.upsert("s", "r/next", t(3), 500);
        let got: Vec<_> = o
            .oldest("s", None, 10)
            .into_iter()
            .map(|i| i.listed)
            .collect();
        assert_eq!(got, ["r/empty", "r/big"]);
    }
}

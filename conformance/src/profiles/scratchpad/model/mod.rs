//! The scratchpad model (SPEC.md part SP): the whole disk as ordered maps, and the rules as
//! plain code.

mod seen;

pub use seen::{ObservedMember, ObservedSession};

use crate::profiles::scratchpad::contract::{Bytes, Caller, Entry, Outcome, Request};
use std::collections::{BTreeMap, BTreeSet};
use tidemark_reference::scratchpad::{digest, requester_dir, Alternative};

/// The knobs of SP-5.6, in the model's own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelKnobs {
    pub mounted: bool,
    pub session_cap_bytes: u64,
    pub requester_ceiling_bytes: u64,
    pub max_file_bytes: u64,
    pub thread_quiet_ms: i64,
    pub pairing_idle_ms: i64,
    pub sweep_interval_ms: i64,
    pub max_depth: usize,
    pub max_path_bytes: usize,
    /// The SPEC.md variants the implementation takes the other way (its declaration, read by
    /// `variants::alternatives`): the model follows each.
    pub alternatives: BTreeSet<Alternative>,
}

impl ModelKnobs {
    fn takes(&self, a: Alternative) -> bool {
        self.alternatives.contains(&a)
    }
}

impl Default for ModelKnobs {
    fn default() -> Self {
        ModelKnobs {
            mounted: true,
            session_cap_bytes: 1 << 20,
            requester_ceiling_bytes: 4 << 20,
            max_file_bytes: 1 << 20,
            thread_quiet_ms: 7 * 86_400_000,
            pairing_idle_ms: 3_600_000,
            sweep_interval_ms: 300_000,
            max_depth: 16,
            max_path_bytes: 1024,
            alternatives: BTreeSet::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct File {
    content: Vec<u8>,
    mtime: i64,
}

/// One requester's subtree inside a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Subtree {
    files: BTreeMap<Vec<String>, File>,
    dirs: BTreeSet<Vec<String>>,
    links: BTreeSet<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Session {
    thread: bool,
    /// SP-5.3: the session directory's own time, moved when a member directory is created in it.
    dir_mtime: i64,
    members: BTreeMap<String, Subtree>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScratchpadModel {
    knobs: ModelKnobs,
    sessions: BTreeMap<String, Session>,
    running: bool,
    next_sweep_at: Option<i64>,
    /// The implementation's directory names, by the recommended digest's (SP-1.2 leaves the
    /// naming function to each implementation, and eviction breaks ties by listing path, which
    /// holds the names): empty for the reference's own names.
    renamed_sessions: BTreeMap<String, String>,
    renamed_requesters: BTreeMap<String, String>,
    /// Under `eviction_ties=any`, the eviction the implementation answered for the write being
    /// judged ([`ScratchpadModel::apply_seen`]): taken when SP-4.2 allows it.
    seen_eviction: Option<Vec<String>>,
}

fn refused(reason: &str) -> Outcome {
    Outcome::Refused {
        reason: reason.into(),
        message: String::new(),
    }
}

/// SP-2 in the order of SP-6.2: empty, NUL, UTF-8, length, absolute, backslash, components, depth.
fn parse_path(raw: &[u8], k: &ModelKnobs) -> Result<Vec<String>, Outcome> {
    if raw.is_empty() {
        return Err(refused("empty_path"));
    }
    if raw.contains(&0) {
        return Err(refused("nul_byte"));
    }
    let Ok(s) = std::str::from_utf8(raw) else {
        return Err(refused("not_utf8"));
    };
    let limited = !k.takes(Alternative::NoPathLimits);
    if limited && raw.len() > k.max_path_bytes {
        return Err(refused("path_too_long"));
    }
    if s.starts_with('/') {
        return Err(refused("absolute_path"));
    }
    if s.contains('\\') {
        return Err(refused("backslash"));
    }
    let mut out = Vec::new();
    for c in s.split('/') {
        match c {
            ".." => return Err(refused("traversal")),
            "" | "." if k.takes(Alternative::PathsTidied) => {}
            "" | "." => return Err(refused("non_canonical")),
            c => out.push(c.to_string()),
        }
    }
    if out.is_empty() {
        // Only a tidied path can lose every component (`./`): it names no file.
        return Err(refused("empty_path"));
    }
    if limited && out.len() > k.max_depth {
        return Err(refused("too_deep"));
    }
    Ok(out)
}

/// SP-1.2's recommended session name for `c`: a thread by its channel and id, or (the variant
/// `thread_identity=global`) by its id alone.
fn session_of(c: &Caller, global_threads: bool) -> (String, bool) {
    match &c.thread {
        Some(t) if global_threads => (format!("t-{}", digest("thread", &[t])), true),
        Some(t) => (format!("t-{}", digest("thread", &[&c.channel, t])), true),
        None => (
            format!("c-{}", digest("pairing", &[&c.channel, &c.requester])),
            false,
        ),
    }
}

/// An eviction candidate: its time, listing path, member, path in the member's subtree, size.
type Candidate = (i64, String, String, Vec<String>, u64);

/// `eviction_ties=any` (SP-4.2): whether `seen` is an eviction SP-4.2 allows from `candidates`
/// (sorted oldest first) to free `need` bytes: files in non-decreasing time, every file older
/// than the last one taken, and no file after the need was met. If so, the candidates in the
/// order to evict them: `seen`, then the rest.
fn tie_order(candidates: &[Candidate], need: u64, seen: &[String]) -> Option<Vec<Candidate>> {
    let mut taken: Vec<Candidate> = Vec::new();
    for l in seen {
        let c = candidates.iter().find(|c| &c.1 == l)?;
        if taken.iter().any(|t| t.1 == c.1) || taken.last().is_some_and(|t| t.0 > c.0) {
            return None;
        }
        taken.push(c.clone());
    }
    let last = taken.last()?;
    let older_all_taken = candidates
        .iter()
        .filter(|c| c.0 < last.0)
        .all(|c| taken.iter().any(|t| t.1 == c.1));
    let before_last: u64 = taken[..taken.len() - 1].iter().map(|t| t.4).sum();
    let all: u64 = before_last + last.4;
    if !older_all_taken || before_last >= need || all < need {
        return None;
    }
    let rest = candidates
        .iter()
        .filter(|c| !taken.iter().any(|t| t.1 == c.1))
        .cloned();
    Some(taken.iter().cloned().chain(rest).collect())
}

impl Subtree {
    fn link_on(&self, path: &[String]) -> bool {
        (1..=path.len()).any(|n| self.links.contains(&path[..n]))
    }
    fn file_on_parents(&self, path: &[String]) -> bool {
        (1..path.len())
            .any(|n| self.files.contains_key(&path[..n]) || self.links.contains(&path[..n]))
    }
    fn bytes(&self) -> u64 {
        self.files.values().map(|f| f.content.len() as u64).sum()
    }
}

impl ScratchpadModel {
    pub fn new(knobs: ModelKnobs) -> Self {
        ScratchpadModel {
            knobs,
            sessions: BTreeMap::new(),
            running: false,
            next_sweep_at: None,
            renamed_sessions: BTreeMap::new(),
            renamed_requesters: BTreeMap::new(),
            seen_eviction: None,
        }
    }

    /// SP-1.2's recommended names for `caller`: its session directory and requester directory.
    pub fn recommended_names(&self, caller: &Caller) -> (String, String) {
        (
            session_of(caller, self.knobs.takes(Alternative::ThreadsGlobal)).0,
            requester_dir(&caller.requester),
        )
    }

    /// From now on, names directories as an implementation does: each map takes a recommended
    /// name to the implementation's. Set before the first file operation (names never change,
    /// SP-1.2).
    pub fn rename(
        &mut self,
        sessions: BTreeMap<String, String>,
        requesters: BTreeMap<String, String>,
    ) {
        self.renamed_sessions = sessions;
        self.renamed_requesters = requesters;
    }

    fn session_of(&self, c: &Caller) -> (String, bool) {
        let (name, thread) = session_of(c, self.knobs.takes(Alternative::ThreadsGlobal));
        let name = self.renamed_sessions.get(&name).cloned().unwrap_or(name);
        (name, thread)
    }

    fn requester_of(&self, requester: &str) -> String {
        let name = requester_dir(requester);
        self.renamed_requesters.get(&name).cloned().unwrap_or(name)
    }

    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The harness planted a symbolic link at `path` in `caller`'s subtree (a fault).
    pub fn plant_link(&mut self, caller: &Caller, path: &[String], now: i64) {
        let (sid, thread) = self.session_of(caller);
        let me = self.requester_of(&caller.requester);
        let sub = self.member_subtree(sid, thread, me, now);
        for n in 1..path.len() {
            sub.dirs.insert(path[..n].to_vec());
        }
        sub.links.insert(path.to_vec());
    }

    /// Whether planting a link at `path` is possible (nothing is there yet, no file on the way).
    pub fn can_plant_link(&self, caller: &Caller, path: &[String]) -> bool {
        let (sid, _) = self.session_of(caller);
        let me = self.requester_of(&caller.requester);
        match self.sessions.get(&sid).and_then(|s| s.members.get(&me)) {
            None => true,
            Some(sub) => {
                !sub.link_on(path)
                    && !sub.file_on_parents(path)
                    && !sub.files.contains_key(path)
                    && !sub.dirs.contains(path)
                    && !sub.files.keys().any(|f| f.starts_with(path))
            }
        }
    }

    pub fn stop(&mut self) {
        self.running = false;
        self.next_sweep_at = None;
    }

    /// Predicts the outcome of `req` at `now` as [`ScratchpadModel::apply`] does, where the
    /// implementation's answer `seen` settles what its variants leave open: under
    /// `eviction_ties=any`, which of equally old files a write evicts. An answer SP-4.2 does not
    /// allow settles nothing, and the prediction is the default's.
    pub fn apply_seen(&mut self, now: i64, req: &Request, seen: &Outcome) -> Outcome {
        self.seen_eviction = match seen {
            Outcome::Written { evicted, .. }
                if self.knobs.takes(Alternative::EvictionTiesByWriteOrder) =>
            {
                Some(evicted.clone())
            }
            _ => None,
        };
        let out = self.apply(now, req);
        self.seen_eviction = None;
        out
    }

    /// Predicts the outcome of `req` at `now`.
    pub fn apply(&mut self, now: i64, req: &Request) -> Outcome {
        match req {
            Request::Start => {
                self.running = true;
                self.next_sweep_at = Some(now + self.knobs.sweep_interval_ms);
                Outcome::Swept {
                    swept: self.sweep(now),
                }
            }
            Request::Tick => match self.next_sweep_at {
                Some(due) if now >= due => {
                    let interval = self.knobs.sweep_interval_ms;
                    self.next_sweep_at =
                        Some(if self.knobs.takes(Alternative::SweepOnFixedPeriod) {
                            // The next instant of the period after now; missed ones are dropped.
                            due + ((now - due) / interval.max(1) + 1) * interval
                        } else {
                            now + interval
                        });
                    Outcome::Swept {
                        swept: self.sweep(now),
                    }
                }
                _ => Outcome::Swept { swept: vec![] },
            },
            // Names are not an operation: answered mounted or not (PROTOCOL.md).
            Request::Names { caller } => Outcome::Names {
                session: self.session_of(caller).0,
                requester: self.requester_of(&caller.requester),
            },
            _ if !self.knobs.mounted => refused("unmounted"),
            Request::Write { caller, .. }
            | Request::Read { caller, .. }
            | Request::List { caller, .. }
            | Request::Remove { caller, .. }
                if self.knobs.takes(Alternative::DirectoriesOnEveryOperation)
                    && !self.has_caller_dirs(caller) =>
            {
                self.make_caller_dirs(now, caller);
                self.apply(now, req)
            }
            Request::Write {
                caller,
                path,
                content,
            } => self.write(now, caller, &path.0, &content.0),
            Request::Read { caller, path } => self.read(caller, &path.0),
            Request::List { caller, path: None } => self.list(caller),
            Request::List {
                caller,
                path: Some(p),
            } => self.list_path(caller, &p.0),
            Request::Remove { caller, path } => self.remove(now, caller, &path.0),
        }
    }

    /// Whether `caller`'s session and requester directories exist.
    fn has_caller_dirs(&self, caller: &Caller) -> bool {
        let (sid, _) = self.session_of(caller);
        let me = self.requester_of(&caller.requester);
        self.sessions
            .get(&sid)
            .is_some_and(|s| s.members.contains_key(&me))
    }

    /// `caller_directories=on_every_operation` (SP-3.6): the operation first makes the caller's
    /// session and requester directories, stamped now, as a write would.
    fn make_caller_dirs(&mut self, now: i64, caller: &Caller) {
        let (sid, thread) = self.session_of(caller);
        let me = self.requester_of(&caller.requester);
        self.member_subtree(sid, thread, me, now);
    }

    /// The requester `me`'s subtree in session `sid`, the session and the member directory made
    /// at `now` where missing: a new member directory moves the session directory's time
    /// (SP-5.3).
    fn member_subtree(&mut self, sid: String, thread: bool, me: String, now: i64) -> &mut Subtree {
        let session = self.sessions.entry(sid).or_insert(Session {
            thread,
            dir_mtime: now,
            members: BTreeMap::new(),
        });
        if !session.members.contains_key(&me) {
            session.dir_mtime = now;
        }
        session.members.entry(me).or_default()
    }

    /// The refusal for a path that is no file or directory under any candidate: `not_found`,
    /// or (`read_through_a_file=not_a_directory`) `not_a_directory` when a candidate's parent
    /// path crosses a file.
    fn nothing_at(&self, crossed_a_file: bool) -> Outcome {
        if crossed_a_file && self.knobs.takes(Alternative::ReadThroughFileNotADirectory) {
            refused("not_a_directory")
        } else {
            refused("not_found")
        }
    }

    fn requester_total(&self, me: &str) -> u64 {
        self.sessions
            .values()
            .filter_map(|s| s.members.get(me))
            .map(Subtree::bytes)
            .sum()
    }

    fn write(&mut self, now: i64, caller: &Caller, raw: &[u8], data: &[u8]) -> Outcome {
        let path = match parse_path(raw, &self.knobs) {
            Ok(p) => p,
            Err(o) => return o,
        };
        let len = data.len() as u64;
        if len > self.knobs.max_file_bytes.min(self.knobs.session_cap_bytes) {
            return refused("too_large");
        }
        let (sid, thread) = self.session_of(caller);
        let me = self.requester_of(&caller.requester);
        let listed = format!("{me}/{}", path.join("/"));
        let empty = Subtree::default();
        let sub = self
            .sessions
            .get(&sid)
            .and_then(|s| s.members.get(&me))
            .unwrap_or(&empty);
        if sub.link_on(&path) {
            return refused("symlink_escape");
        }
        if sub.dirs.contains(&path) {
            return refused("is_a_directory");
        }
        if sub.file_on_parents(&path) {
            return refused("not_a_directory");
        }
        let old = sub
            .files
            .get(&path)
            .map(|f| f.content.len() as u64)
            .unwrap_or(0);
        if self.requester_total(&me) - old + len > self.knobs.requester_ceiling_bytes {
            return refused("ceiling_exceeded");
        }
        let session_total: u64 = self
            .sessions
            .get(&sid)
            .map(|s| s.members.values().map(Subtree::bytes).sum())
            .unwrap_or(0);
        let mut evicted = Vec::new();
        if session_total - old + len > self.knobs.session_cap_bytes {
            let need = session_total - old + len - self.knobs.session_cap_bytes;
            let session = self
                .sessions
                .get_mut(&sid)
                .expect("a session over its cap exists");
            let mut candidates: Vec<Candidate> = Vec::new();
            for (member, s) in &session.members {
                for (p, f) in &s.files {
                    let l = format!("{member}/{}", p.join("/"));
                    if l != listed {
                        candidates.push((
                            f.mtime,
                            l,
                            member.clone(),
                            p.clone(),
                            f.content.len() as u64,
                        ));
                    }
                }
            }
            candidates.sort();
            if let Some(seen) = self.seen_eviction.as_deref() {
                if let Some(order) = tie_order(&candidates, need, seen) {
                    candidates = order;
                }
            }
            let mut freed = 0;
            for (_, l, member, p, size) in candidates {
                if freed >= need {
                    break;
                }
                session
                    .members
                    .get_mut(&member)
                    .expect("member")
                    .files
                    .remove(&p);
                freed += size;
                evicted.push(l);
            }
        }
        let sub = self.member_subtree(sid, thread, me, now);
        for n in 1..path.len() {
            sub.dirs.insert(path[..n].to_vec());
        }
        sub.files.insert(
            path,
            File {
                content: data.to_vec(),
                mtime: now,
            },
        );
        Outcome::Written {
            path: listed,
            evicted,
        }
    }

    /// What a read and a path listing start from: the path parsed, the caller's session (none is
    /// `not_found`) and who the caller is.
    fn reading(
        &self,
        caller: &Caller,
        raw: &[u8],
    ) -> Result<(Vec<String>, &Session, String), Outcome> {
        let path = parse_path(raw, &self.knobs)?;
        let (sid, _) = self.session_of(caller);
        let Some(session) = self.sessions.get(&sid) else {
            return Err(refused("not_found"));
        };
        Ok((path, session, self.requester_of(&caller.requester)))
    }

    fn read(&self, caller: &Caller, raw: &[u8]) -> Outcome {
        let (path, session, me) = match self.reading(caller, raw) {
            Ok(r) => r,
            Err(o) => return o,
        };
        let mut saw_dir = false;
        let mut crossed_a_file = false;
        // Own path first (SP-3.2), then the path as the listing shows it.
        let own = session.members.get(&me).map(|s| (s, path.as_slice()));
        let shared = session.members.get(&path[0]).map(|s| (s, &path[1..]));
        for (sub, rel) in [own, shared].into_iter().flatten() {
            if rel.is_empty() {
                saw_dir = true; // a member's directory itself
                continue;
            }
            if sub.link_on(rel) {
                return refused("symlink_escape");
            }
            if let Some(f) = sub.files.get(rel) {
                if self.knobs.takes(Alternative::LargeReadsRefused)
                    && f.content.len() as u64 > self.knobs.max_file_bytes
                {
                    return refused("too_large");
                }
                return Outcome::Content {
                    content: Bytes(f.content.clone()),
                };
            }
            if sub.dirs.contains(rel) {
                saw_dir = true;
            }
            crossed_a_file |= sub.file_on_parents(rel);
        }
        if saw_dir {
            refused("is_a_directory")
        } else {
            self.nothing_at(crossed_a_file)
        }
    }

    fn list(&self, caller: &Caller) -> Outcome {
        let (sid, _) = self.session_of(caller);
        let mut entries = Vec::new();
        if let Some(s) = self.sessions.get(&sid) {
            for (member, sub) in &s.members {
                for (p, f) in &sub.files {
                    entries.push(Entry {
                        path: format!("{member}/{}", p.join("/")),
                        size: f.content.len() as u64,
                    });
                }
            }
        }
        entries.sort();
        Outcome::Listing { entries }
    }

    /// SP-3.3: a path lists the files below that directory, or that one file, resolved as a read
    /// is (the caller's own path first, then the path as the listing shows it). Links are refused
    /// on each candidate as it is tried (SP-2.7) and never listed.
    fn list_path(&self, caller: &Caller, raw: &[u8]) -> Outcome {
        let (path, session, me) = match self.reading(caller, raw) {
            Ok(r) => r,
            Err(o) => return o,
        };
        let own = session
            .members
            .get(&me)
            .map(|s| (me.as_str(), s, path.as_slice()));
        let shared = session
            .members
            .get_key_value(&path[0])
            .map(|(m, s)| (m.as_str(), s, &path[1..]));
        let mut crossed_a_file = false;
        for (member, sub, rel) in [own, shared].into_iter().flatten() {
            if sub.link_on(rel) {
                return refused("symlink_escape");
            }
            crossed_a_file |= sub.file_on_parents(rel);
            let listed = |p: &Vec<String>, f: &File| Entry {
                path: format!("{member}/{}", p.join("/")),
                size: f.content.len() as u64,
            };
            if let Some(f) = sub.files.get(rel) {
                return Outcome::Listing {
                    entries: vec![listed(&rel.to_vec(), f)],
                };
            }
            if rel.is_empty() || sub.dirs.contains(rel) {
                let mut entries: Vec<Entry> = sub
                    .files
                    .iter()
                    .filter(|(p, _)| p.len() > rel.len() && p.starts_with(rel))
                    .map(|(p, f)| listed(p, f))
                    .collect();
                entries.sort();
                return Outcome::Listing { entries };
            }
        }
        self.nothing_at(crossed_a_file)
    }

    fn remove(&mut self, _now: i64, caller: &Caller, raw: &[u8]) -> Outcome {
        let path = match parse_path(raw, &self.knobs) {
            Ok(p) => p,
            Err(o) => return o,
        };
        let (sid, _) = self.session_of(caller);
        let me = self.requester_of(&caller.requester);
        let Some(sub) = self
            .sessions
            .get_mut(&sid)
            .and_then(|s| s.members.get_mut(&me))
        else {
            return refused("not_found");
        };
        if sub.link_on(&path) {
            return refused("symlink_escape");
        }
        if sub.files.remove(&path).is_some() {
            Outcome::Removed
        } else if sub.dirs.contains(&path) {
            refused("is_a_directory")
        } else {
            let crossed_a_file = sub.file_on_parents(&path);
            self.nothing_at(crossed_a_file)
        }
    }

    /// SP-5: collect every session whose newest file (or, empty, its own directory time) is at
    /// least its timer old. Names in order.
    pub fn sweep(&mut self, now: i64) -> Vec<String> {
        let expired = self.expired(now);
        for id in &expired {
            self.sessions.remove(id);
        }
        expired
    }

    /// The sessions a sweep at `now` would collect, in name order, without collecting them.
    pub fn expired(&self, now: i64) -> Vec<String> {
        if !self.knobs.mounted {
            return vec![];
        }
        let k = &self.knobs;
        self.sessions
            .iter()
            .filter(|(_, s)| {
                let newest = s
                    .members
                    .values()
                    .flat_map(|m| m.files.values().map(|f| f.mtime))
                    .max()
                    .unwrap_or(s.dir_mtime);
                let ttl = if s.thread {
                    k.thread_quiet_ms
                } else {
                    k.pairing_idle_ms
                };
                now - newest >= ttl
            })
            .map(|(id, _)| id.clone())
            .collect()
    }
}

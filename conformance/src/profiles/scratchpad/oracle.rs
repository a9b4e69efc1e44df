//! The scratchpad model (SPEC.md part SP): the whole disk as ordered maps, and the rules as
//! plain code.

use crate::profiles::scratchpad::contract::{Bytes, Caller, Entry, Outcome, Request};
use std::collections::{BTreeMap, BTreeSet};
use tidemark_reference::scratchpad::{digest, requester_dir};

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
    if raw.len() > k.max_path_bytes {
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
            "" | "." => return Err(refused("non_canonical")),
            c => out.push(c.to_string()),
        }
    }
    if out.len() > k.max_depth {
        return Err(refused("too_deep"));
    }
    Ok(out)
}

fn session_of(c: &Caller) -> (String, bool) {
    match &c.thread {
        Some(t) => (format!("t-{}", digest("thread", &[&c.channel, t])), true),
        None => (
            format!("c-{}", digest("pairing", &[&c.channel, &c.requester])),
            false,
        ),
    }
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
        }
    }

    /// SP-1.2's recommended names for `caller`: its session directory and requester directory.
    pub fn recommended_names(caller: &Caller) -> (String, String) {
        (session_of(caller).0, requester_dir(&caller.requester))
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
        let (name, thread) = session_of(c);
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
        let session = self.sessions.entry(sid).or_insert(Session {
            thread,
            dir_mtime: now,
            members: BTreeMap::new(),
        });
        if !session.members.contains_key(&me) {
            session.dir_mtime = now;
        }
        let sub = session.members.entry(me).or_default();
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
                    self.next_sweep_at = Some(now + self.knobs.sweep_interval_ms);
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
            let mut candidates: Vec<(i64, String, String, Vec<String>, u64)> = Vec::new();
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
        let session = self.sessions.entry(sid).or_insert(Session {
            thread,
            dir_mtime: now,
            members: BTreeMap::new(),
        });
        if !session.members.contains_key(&me) {
            session.dir_mtime = now;
        }
        let sub = session.members.entry(me).or_default();
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

    fn read(&self, caller: &Caller, raw: &[u8]) -> Outcome {
        let path = match parse_path(raw, &self.knobs) {
            Ok(p) => p,
            Err(o) => return o,
        };
        let (sid, _) = self.session_of(caller);
        let Some(session) = self.sessions.get(&sid) else {
            return refused("not_found");
        };
        let me = self.requester_of(&caller.requester);
        let mut saw_dir = false;
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
                return Outcome::Content {
                    content: Bytes(f.content.clone()),
                };
            }
            if sub.dirs.contains(rel) {
                saw_dir = true;
            }
        }
        if saw_dir {
            refused("is_a_directory")
        } else {
            refused("not_found")
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
        let path = match parse_path(raw, &self.knobs) {
            Ok(p) => p,
            Err(o) => return o,
        };
        let (sid, _) = self.session_of(caller);
        let Some(session) = self.sessions.get(&sid) else {
            return refused("not_found");
        };
        let me = self.requester_of(&caller.requester);
        let own = session
            .members
            .get(&me)
            .map(|s| (me.as_str(), s, path.as_slice()));
        let shared = session
            .members
            .get_key_value(&path[0])
            .map(|(m, s)| (m.as_str(), s, &path[1..]));
        for (member, sub, rel) in [own, shared].into_iter().flatten() {
            if sub.link_on(rel) {
                return refused("symlink_escape");
            }
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
        refused("not_found")
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
            refused("not_found")
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

    /// The sessions the model holds, by directory name.
    pub fn session_names(&self) -> std::collections::BTreeSet<String> {
        self.sessions.keys().cloned().collect()
    }

    /// Whether the model holds the session directory `session` and, given `member`, that member
    /// directory in it (SP-3.6: only a write creates them).
    pub fn holds_dir(&self, session: &str, member: Option<&str>) -> bool {
        match (self.sessions.get(session), member) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(s), Some(m)) => s.members.contains_key(m),
        }
    }

    /// Takes what is on disk as the model's state (its knobs, names, running state and sweep
    /// schedule stay): after a known difference, exploration goes on from what the harness can
    /// observe, the implementation's own disk. A session's kind is its name's prefix (SP-1.4).
    pub fn adopt_disk(&mut self, observed: Vec<ObservedSession>) {
        self.sessions = observed
            .into_iter()
            .map(|s| {
                let members = s
                    .members
                    .into_iter()
                    .map(|m| {
                        let sub = Subtree {
                            files: m
                                .files
                                .into_iter()
                                .map(|(p, content, mtime)| (p, File { content, mtime }))
                                .collect(),
                            dirs: m.dirs.into_iter().collect(),
                            links: m.links.into_iter().collect(),
                        };
                        (m.name, sub)
                    })
                    .collect();
                let session = Session {
                    thread: s.name.starts_with("t-"),
                    dir_mtime: s.dir_mtime,
                    members,
                };
                (s.name, session)
            })
            .collect();
    }
}

/// A session directory as the harness finds it on disk, for [`ScratchpadModel::adopt_disk`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedSession {
    pub name: String,
    /// Its own modification time, in milliseconds (SP-7.2).
    pub dir_mtime: i64,
    pub members: Vec<ObservedMember>,
}

/// A member directory: its regular files (path, content, time in milliseconds), its
/// directories and its symbolic links, by path below it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedMember {
    pub name: String,
    pub files: Vec<(Vec<String>, Vec<u8>, i64)>,
    pub dirs: Vec<Vec<String>>,
    pub links: Vec<Vec<String>>,
}

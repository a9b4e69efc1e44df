//! The model as the harness shows and corrects it, apart from the rules (`mod.rs`): its state in
//! words at a divergence ([`ScratchpadModel::state_lines`]), what it holds of a session's
//! directories (SP-3.6's check after every call), and the model re-derived from the disk after
//! a known difference ([`ScratchpadModel::adopt_disk`], from what `explore/observe.rs` reads).

use super::*;

impl ScratchpadModel {
    /// The model's state as a person reads it at a divergence: for `caller`, its session (kind,
    /// directory time, each file with its size and time) and its quota use (the session's bytes
    /// against the cap, the requester's across sessions against the ceiling); with no caller (a
    /// start, a tick), every session held with its bytes, newest time and whether a sweep at
    /// `now` collects it. Times are simulated, from the epoch. Built only when a step diverged.
    pub fn state_lines(&self, caller: Option<&Caller>, now: i64) -> Vec<String> {
        let at =
            |ms: i64| crate::html::timeline::clock(ms - tidemark_sim::clock::EPOCH.as_millis());
        let kind = |s: &Session| if s.thread { "thread" } else { "pairing" };
        let mut out = vec![format!(
            "at {}; {}; next sweep {}",
            at(now),
            if self.running { "running" } else { "stopped" },
            self.next_sweep_at.map(at).unwrap_or_else(|| "none".into())
        )];
        let Some(c) = caller else {
            let expired: BTreeSet<String> = self.expired(now).into_iter().collect();
            if self.sessions.is_empty() {
                out.push("no session held".into());
            }
            for (name, s) in &self.sessions {
                let files: usize = s.members.values().map(|m| m.files.len()).sum();
                let bytes: u64 = s.members.values().map(Subtree::bytes).sum();
                let newest = s
                    .members
                    .values()
                    .flat_map(|m| m.files.values().map(|f| f.mtime))
                    .max()
                    .unwrap_or(s.dir_mtime);
                out.push(format!(
                    "{name} ({}): {files} files, {bytes} B, newest {}{}",
                    kind(s),
                    at(newest),
                    if expired.contains(name) {
                        ", expired"
                    } else {
                        ""
                    }
                ));
            }
            return out;
        };
        let (sid, _) = self.session_of(c);
        let me = self.requester_of(&c.requester);
        out.push(format!(
            "{}: requester {me} holds {} B of its {} B ceiling",
            c.display(),
            self.requester_total(&me),
            self.knobs.requester_ceiling_bytes
        ));
        let Some(s) = self.sessions.get(&sid) else {
            out.push(format!("session {sid}: not held"));
            return out;
        };
        let bytes: u64 = s.members.values().map(Subtree::bytes).sum();
        out.push(format!(
            "session {sid} ({}): {bytes} B of its {} B cap, directory time {}",
            kind(s),
            self.knobs.session_cap_bytes,
            at(s.dir_mtime)
        ));
        for (member, sub) in &s.members {
            for (path, f) in &sub.files {
                out.push(format!(
                    "  {member}/{} {} B, {}",
                    path.join("/"),
                    f.content.len(),
                    at(f.mtime)
                ));
            }
            for path in &sub.links {
                out.push(format!("  {member}/{} (a planted link)", path.join("/")));
            }
        }
        out
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

//! The executable model of SPEC part SC the sequences are checked against: what each session
//! holds, its activity and waits, agent-scope files and access, and what a sweep removes; part
//! SL's policies and where a repeated tool result last overflowed are kept here too, since the
//! modules that act on them (`policies.rs`, `overflow_again.rs`) use the whole state.

use std::collections::{BTreeMap, BTreeSet};

use tidemark_reference::clock::DAY_MS;
use tidemark_reference::scoped::{Access, WaitKind};

use super::ops::{ModelOp, SESSIONS, WAIT_NAMES};
use tidemark_sim::clock::EPOCH;

#[derive(Default, Clone, Debug)]
pub(super) struct SessionModel {
    pub(super) last_activity: i64,
    pub(super) waits: BTreeSet<(u8, u8)>,
    pub(super) files: BTreeMap<String, String>,
    pub(super) deleted: bool,
    /// The session exists or existed: created at setup, or by the first operation naming it.
    pub(super) created: bool,
    /// A sweep emptied it and marked it swept (SC-5.4), until activity or a failed write
    /// (SC-5.4's decision) clears the mark: a count ranks only sessions not swept (SL-2.1).
    pub(super) swept: bool,
    /// When the host first closed it, until activity reopens it (SL-3, generator 7).
    pub(super) closed: Option<i64>,
}

impl SessionModel {
    /// Activity (SC-5.1): the last activity never moves back, the swept mark goes, and a
    /// close goes with it (SL-3.2: activity reopens the session).
    pub(super) fn touched(&mut self, now: i64) {
        self.last_activity = self.last_activity.max(now);
        self.swept = false;
        self.closed = None;
    }

    /// A write that failed with the store clears the swept mark, so the next sweep takes what
    /// it may have left (SC-5.4).
    pub(super) fn write_failed(&mut self) {
        self.swept = false;
    }
}

pub(super) struct Model {
    pub(super) sessions: Vec<SessionModel>,
    /// Agent-scope files by agent, kept while the agent exists (SC-1.1).
    pub(super) agent_files: BTreeMap<&'static str, BTreeMap<String, String>>,
    /// The agent layer's agent-scope access; absent means the default, read-write.
    pub(super) agent_access: BTreeMap<&'static str, Access>,
    pub(super) deleted_agents: BTreeSet<&'static str>,
    /// Sessions the last sweep found expired or deleted: nothing at all may remain under their
    /// prefixes, extracted text included.
    pub(super) emptied: BTreeSet<usize>,
    /// Whether the workspace beside the model's was deleted (`ModelOp::WorkspaceBeside`): its
    /// neighbour's skill version must then outlive it.
    pub(super) beside_deleted: bool,
    /// Part SL's state: count policies, the agent layers' workspace access, workspace files.
    pub(super) policy: PolicyModel,
    /// The workspaces' own retention and the lifecycle configuration put (SL-5, generator 7).
    pub(super) retention: super::workspace_retention::RetentionModel,
    /// Where the repeated tool result last overflowed, by session (generator 7).
    pub(super) last_overflow: LastOverflow,
    /// SL-4's erasure subjects and obligations (generator 7).
    pub(super) erasure: super::erasure::ErasureModel,
}

impl Model {
    /// Applies a sweep: idle sessions, deleted ones, then the policy sweep (SL-1.1); returns
    /// how many files it removed.
    pub(super) fn sweep(&mut self, now: i64) -> usize {
        self.sweep_idle(now) + self.sweep_policies(now)
    }

    /// The policy sweep (SL-1): the count policies, then the closed sessions whose grace has
    /// ended (SL-3.1), in one pass; a session both is taken once.
    pub(super) fn sweep_policies(&mut self, now: i64) -> usize {
        self.sweep_counts() + self.sweep_closes(now)
    }

    /// The part of a sweep before its count policies: idle sessions (SC-5.3) and what deleted
    /// sessions and agents left (SC-6). Starts the sweep's set of emptied sessions.
    pub(super) fn sweep_idle(&mut self, now: i64) -> usize {
        let mut removed = 0;
        // The sessions are workspace w1's: its own TTL replaces the deployment's (SL-5.1).
        let ttl_days = self.retention.idle_ttl_days();
        self.emptied.clear();
        for (i, s) in self.sessions.iter_mut().enumerate() {
            if !s.created {
                continue;
            }
            if s.deleted || (s.waits.is_empty() && now - s.last_activity >= ttl_days * DAY_MS) {
                s.swept = !s.deleted;
                removed += s.files.len();
                s.files.clear();
                self.emptied.insert(i);
            }
        }
        // A deleted agent's obligation is emptied by the same sweep (SC-6).
        for a in &self.deleted_agents {
            if let Some(files) = self.agent_files.get_mut(a) {
                removed += files.len();
                files.clear();
            }
        }
        removed
    }

    /// The model's state as a person reads it at a divergence: for the operation's session,
    /// its activity, waits, deleted and swept marks and files; its agent's files and access;
    /// the workspace beside; with no session (a sweep, the clock), every session's summary.
    /// Times are simulated, from the epoch. Built only when a step diverged.
    pub(super) fn state_lines(&self, op: Option<&ModelOp>, now: i64) -> Vec<String> {
        let at = |ms: i64| crate::html::timeline::clock(ms - EPOCH.0);
        let session_line = |i: usize| {
            let s = &self.sessions[i];
            let (a, n) = SESSIONS[i];
            format!(
                "session {a}/{n}: last activity {} (idle {}), {} files, {} waits{}{}{}{}",
                at(s.last_activity),
                crate::html::timeline::duration(now - s.last_activity),
                s.files.len(),
                s.waits.len(),
                if s.deleted { ", deleted" } else { "" },
                if self.emptied.contains(&i) {
                    ", emptied by the last sweep"
                } else {
                    ""
                },
                if s.created { "" } else { ", not created yet" },
                s.closed
                    .map(|c| format!(", closed at {}", at(c)))
                    .unwrap_or_default()
            )
        };
        let mut out = vec![format!(
            "at {}; idle TTL {}d; workspace beside {}",
            at(now),
            self.retention.idle_ttl_days(),
            if self.beside_deleted {
                "deleted"
            } else {
                "kept"
            }
        )];
        let touched = op.and_then(ModelOp::session_touched);
        match touched {
            Some(i) => {
                out.push(session_line(i));
                let s = &self.sessions[i];
                if !s.waits.is_empty() {
                    let waits: Vec<String> = s
                        .waits
                        .iter()
                        .map(|(k, id)| format!("{} {id}", WAIT_NAMES[*k as usize % 3]))
                        .collect();
                    out.push(format!("  waits: {}", waits.join(", ")));
                }
                for (p, content) in &s.files {
                    out.push(format!("  session/{p} ({} B: {content})", content.len()));
                }
            }
            None => out.extend((0..self.sessions.len()).map(session_line)),
        }
        out.extend(self.policy.state_lines());
        out.extend(self.retention.state_lines());
        out.extend(self.erasure.state_lines(now));
        if let Some(a) = op.and_then(ModelOp::agent_touched) {
            let files = self.agent_files.get(a);
            out.push(format!(
                "agent {a}: access {:?}{}, {} agent-scope files",
                self.access(a),
                if self.deleted_agents.contains(a) {
                    ", deleted"
                } else {
                    ""
                },
                files.map_or(0, BTreeMap::len)
            ));
            for (p, content) in files.into_iter().flatten() {
                out.push(format!("  agent/{p} ({} B: {content})", content.len()));
            }
        }
        out
    }

    pub(super) fn access(&self, agent: &str) -> Access {
        self.agent_access
            .get(agent)
            .copied()
            .unwrap_or(Access::ReadWrite)
    }

    /// What a listing with no prefix shows for session `i` (SC-2.5): its session files and, if
    /// the agent scope is readable, its agent's files, and the workspace's files (promoted or
    /// written where an agent's layer opened the scope, generator 5) if that scope is.
    pub(super) fn listing(&self, i: usize) -> BTreeSet<String> {
        let agent = SESSIONS[i].0;
        let session = self.sessions[i]
            .files
            .keys()
            .map(|p| format!("session/{p}"));
        let agent_files = self
            .agent_files
            .get(agent)
            .filter(|_| self.access(agent).can_read())
            .into_iter()
            .flat_map(|f| f.keys().map(|p| format!("agent/{p}")));
        let workspace_files = self
            .policy
            .workspace_files
            .keys()
            .filter(|_| self.policy.workspace_access(agent).can_read())
            .map(|p| format!("workspace/{p}"));
        session.chain(agent_files).chain(workspace_files).collect()
    }
}

pub(super) fn kind(k: u8) -> WaitKind {
    [WaitKind::Queued, WaitKind::Parked, WaitKind::Waiting][k as usize % 3]
}

/// What the model knows of part SL's state.
#[derive(Clone, Debug, Default)]
pub(super) struct PolicyModel {
    /// Count policies by agent (SL-2).
    pub(super) counts: BTreeMap<&'static str, i64>,
    /// The agent layer's workspace access, where a `SetWorkspaceAccess` set one.
    pub(super) workspace_layer: BTreeMap<&'static str, Access>,
    /// The workspace's files: promoted (SL-6), or written where an agent's layer opened the
    /// scope.
    pub(super) workspace_files: BTreeMap<String, String>,
}

impl PolicyModel {
    /// The workspace scope's access for `agent`'s turns: its layer's, else the default, read
    /// (SC-3.2; the model's workspace layer sets none).
    pub(super) fn workspace_access(&self, agent: &str) -> Access {
        self.workspace_layer
            .get(agent)
            .copied()
            .unwrap_or(Access::Read)
    }

    pub(super) fn state_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (a, n) in &self.counts {
            out.push(format!("agent {a} keeps its last {n} sessions"));
        }
        for (a, access) in &self.workspace_layer {
            out.push(format!("agent {a}: workspace access {access:?}"));
        }
        for (p, content) in &self.workspace_files {
            out.push(format!(
                "  workspace/{p} ({} B: {})",
                content.len(),
                short(content)
            ));
        }
        out
    }
}

/// Where the repeated result last overflowed, by session: the guest's edit goes there.
pub(super) type LastOverflow = BTreeMap<usize, String>;

/// A file's content as a trace shows it: its first 24 bytes.
pub(super) fn short(content: &str) -> String {
    if content.len() > 24 {
        format!("{}…", &content[..24])
    } else {
        content.to_string()
    }
}

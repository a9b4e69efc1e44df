//! The scoped world's oracle. Safety: each guest's exact model of what it wrote ([`Guest`]),
//! every answer checked against it as it arrives (`Guest::observe`; a person's answers in
//! `super::person_oracle`, against the same model). Liveness: after the heal and one sweep,
//! what the store and the metadata hold (`super::liveness`). Part SL's share (count policies,
//! promotions, tool results) is in [`policies`]; what a session's model holds is in
//! `super::session`, what the files are called and hold in `super::names`, one path's model in
//! `super::paths`, and when a sweep certainly took a session in `super::claims`.

pub(super) mod policies;
pub(super) use policies::PROMOTED;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::claims::Sweeps;
use super::names::refused_spellings;
use super::paths::{net_ms, PathModel, Ticket};
use super::session::{Request, Sess, SessionModel};
use super::{
    summary, turn, AGENTS, EXPOSED, HOME, REF_PATH, SKILL_CONTENT, SKILL_NAME, SKILL_PATH,
};
use crate::profiles::scoped::contract::{ScopedOp, ScopedOutcome, Turn};
use crate::world::lock;

/// Whether `content` may be read at `path` from turn `t`: session files must carry the
/// session's identity, agent files the agent's, workspace files the workspace's.
fn identity_ok(t: &Turn, path: &str, content: &str) -> bool {
    if let Some(ok) = policies::promoted_identity(t, path, content) {
        return ok;
    }
    let owner = match path.split('/').next() {
        Some("session") => format!("{}/{}/{}/", t.workspace, t.agent, t.session),
        Some("agent") => format!("{}/{}/", t.workspace, t.agent),
        Some("workspace") => format!("{}/", t.workspace),
        Some("skill") => return content == SKILL_CONTENT,
        _ => return false,
    };
    content.starts_with(&owner) && content.contains(&format!("/{path}#"))
}

/// The files people upload to the home workspace's scope, by guest path: every guest lists
/// them, so every guest's model shares them.
pub(super) type Curated = Arc<Mutex<BTreeMap<String, PathModel>>>;

/// One guest's exact model of what it and its person wrote, and the verdicts on what they
/// were told (the guest and its person share it).
pub(super) struct Guest {
    pub(super) c: usize,
    pub(super) sessions: Vec<(Sess, SessionModel)>,
    /// Agent-scope files of the guest's own agent (written through Kept and Active, by the
    /// guest and its person).
    pub(super) agent_paths: BTreeMap<String, PathModel>,
    /// Agent-scope files of the shut session's agent, which only the person writes.
    pub(super) shut_agent_paths: BTreeMap<String, PathModel>,
    pub(super) curated: Curated,
    /// The sweeps `app` ran to their end.
    pub(super) sweeps: Sweeps,
    /// Part SL: what the count may take from the busy session, tool results unanswered.
    pub(super) policy: policies::PolicyWatch,
    /// What setup put in the home workspace, if setup confirmed it.
    pub(super) reference: Option<String>,
    pub(super) skill_published: bool,
    pub(super) violations: Vec<String>,
}

/// Whether a refusal is the store's or the database's failure.
pub(super) fn is_infra(reason: &str) -> bool {
    matches!(reason, "storage_unavailable" | "database_unavailable")
}

/// Whether a write or removal refused for the store's failure (`is_infra`), sent at `ticket`,
/// may still land. SPEC SC-8.2 promises that a failed operation changes nothing visible, and a
/// refusal quicker than the store client's timeout did not (the world's fault wrapper fails a
/// request before it applies it: that is how a file stored before its text is caught). But a
/// request the client gave up on at its timeout may be carried out by the store afterwards, and
/// no implementation can know: the reference's PutObject timed out and landed after the answer
/// in seed 177 of `tidemark world --profile scoped`. Such a write is held as one whose answer
/// never came (`PathModel::haunt`).
pub(super) fn may_land(ticket: &Ticket) -> bool {
    net_ms().saturating_sub(ticket.sent_ms) >= super::S3_TIMEOUT.as_millis() as u64
}

fn home_turn(agent: &str, session: &str) -> Turn {
    let mut t = turn(HOME, agent, session);
    t.skills
        .insert(SKILL_NAME.to_string(), SKILL_NAME.to_string());
    t
}

impl Guest {
    pub(super) fn new(c: usize, curated: Curated, sweeps: Sweeps) -> Guest {
        let sessions = vec![
            (
                Sess::Kept,
                SessionModel::new(home_turn(&format!("g{c}"), &format!("k{c}"))),
            ),
            (
                Sess::Active,
                SessionModel::new(home_turn(&format!("g{c}"), &format!("s{c}"))),
            ),
            (
                Sess::Shut,
                SessionModel::new(home_turn(&format!("n{c}"), &format!("n{c}"))),
            ),
            (
                Sess::Exposed,
                SessionModel::new(turn(EXPOSED, AGENTS[c % AGENTS.len()], &format!("x{c}"))),
            ),
        ];
        Guest {
            c,
            sessions,
            agent_paths: BTreeMap::new(),
            shut_agent_paths: BTreeMap::new(),
            curated,
            sweeps,
            policy: policies::PolicyWatch::default(),
            reference: None,
            skill_published: false,
            violations: Vec::new(),
        }
    }

    pub(super) fn turn(&self, s: Sess) -> Turn {
        self.session(s).turn.clone()
    }

    pub(super) fn session(&self, s: Sess) -> &SessionModel {
        &self
            .sessions
            .iter()
            .find(|(k, _)| *k == s)
            .expect("every session kind")
            .1
    }

    pub(super) fn session_mut(&mut self, s: Sess) -> &mut SessionModel {
        &mut self
            .sessions
            .iter_mut()
            .find(|(k, _)| *k == s)
            .expect("every session kind")
            .1
    }

    fn violation(&mut self, at: i64, what: String) {
        self.violations.push(format!("g{} at {at}: {what}", self.c));
    }

    /// The guest's write or removal that its model follows, as `(path, value)`: a path its
    /// person may read while the request is in flight.
    fn tracked_write(&self, s: Sess, op: &ScopedOp) -> Option<(String, Option<String>)> {
        let (path, v) = match op {
            ScopedOp::Write { path, content, .. } => (path, Some(content.clone())),
            ScopedOp::Delete { path, .. } => (path, None),
            _ => return None,
        };
        let tracked = s != Sess::Exposed
            && (path.starts_with("session/")
                || (path.starts_with("agent/") && matches!(s, Sess::Kept | Sess::Active)))
            && !refused_spellings(&self.turn(s))
                .iter()
                .any(|(p, ..)| p == path);
        tracked.then(|| (path.clone(), v))
    }

    /// What the guest's request `op` in `s` takes as it is sent: its write registered, and what
    /// each path it may read holds now.
    pub(super) fn begin(&mut self, s: Sess, op: &ScopedOp) -> Ticket {
        let mut ticket = Ticket {
            sent_ms: net_ms(),
            ..Ticket::default()
        };
        if let Some((path, v)) = self.tracked_write(s, op) {
            if let Some(m) = self.path_model(s, &path) {
                m.send(v, ticket.sent_ms);
            }
        }
        self.sent(s, ticket.sent_ms);
        self.policy_begin(s, op, ticket.sent_ms);
        match op {
            _ if s == Sess::Exposed => {}
            ScopedOp::Read { path, .. } | ScopedOp::ReadText { path, .. } => {
                ticket.seen = self.seen(s, true, true);
                ticket.seen.retain(|p, _| p == path);
            }
            ScopedOp::List { .. } => ticket.seen = self.seen(s, s != Sess::Shut, s != Sess::Shut),
            _ => {}
        }
        ticket
    }

    /// What each path of `s`'s session scope, and of its agent and workspace scopes when
    /// asked, may hold now.
    pub(super) fn seen(
        &self,
        s: Sess,
        agent: bool,
        workspace: bool,
    ) -> BTreeMap<String, super::paths::Seen> {
        let mut out: BTreeMap<_, _> = (self.session(s).paths.iter())
            .map(|(p, m)| (p.clone(), m.seen()))
            .collect();
        if agent {
            out.extend(
                self.agent_scope(s)
                    .iter()
                    .map(|(p, m)| (p.clone(), m.seen())),
            );
        }
        if workspace {
            out.extend(
                lock(&self.curated)
                    .iter()
                    .map(|(p, m)| (p.clone(), m.seen())),
            );
        }
        out
    }

    /// The agent-scope paths reached through `s`.
    pub(super) fn agent_scope(&self, s: Sess) -> &BTreeMap<String, PathModel> {
        match s {
            Sess::Shut => &self.shut_agent_paths,
            _ => &self.agent_paths,
        }
    }

    /// Runs `f` on the model of `path` reached through `s` (a person's too: the shut agent's
    /// scope, and the home workspace's curated files), if the oracle follows it.
    pub(super) fn with_path<R>(
        &mut self,
        s: Sess,
        path: &str,
        f: impl FnOnce(&mut PathModel) -> R,
    ) -> Option<R> {
        if path.starts_with("workspace/") && path != REF_PATH && s != Sess::Exposed {
            let mut curated = lock(&self.curated);
            Some(f(curated
                .entry(path.to_string())
                .or_insert_with(PathModel::absent)))
        } else if path.starts_with("agent/") && s == Sess::Shut {
            Some(f(self
                .shut_agent_paths
                .entry(path.to_string())
                .or_insert_with(PathModel::absent)))
        } else {
            self.path_model(s, path).map(f)
        }
    }

    /// The model of a session- or agent-scope path of a checked session.
    fn path_model(&mut self, s: Sess, path: &str) -> Option<&mut PathModel> {
        if path.starts_with("session/") {
            Some(
                self.session_mut(s)
                    .paths
                    .entry(path.to_string())
                    .or_insert_with(PathModel::absent),
            )
        } else if path.starts_with("agent/") && matches!(s, Sess::Kept | Sess::Active) {
            Some(
                self.agent_paths
                    .entry(path.to_string())
                    .or_insert_with(PathModel::absent),
            )
        } else {
            None
        }
    }

    /// Records a request to `s`: sent at `ticket`'s network time, answered now (`None`: no
    /// answer came) at world ms `replied`.
    pub(super) fn record(&mut self, s: Sess, ticket: &Ticket, answered: Option<i64>) {
        self.landed_or_unsent(s, ticket.sent_ms);
        let request = Request {
            sent_net: ticket.sent_ms,
            replied_net: answered.map_or(u64::MAX, |_| net_ms()),
            replied_at: answered.unwrap_or(i64::MAX),
        };
        self.session_mut(s).requests.push(request);
    }

    /// Whether `path`, read through `s` by a request sent at `ticket`, is certainly gone: a
    /// sweep claimed the session after its last write (`super::claims`).
    pub(super) fn swept_away(&self, s: Sess, ticket: &Ticket, path: &str) -> bool {
        path.starts_with("session/")
            && s != Sess::Exposed
            && self
                .session(s)
                .claimed(&self.sweeps, ticket.sent_ms)
                .is_some_and(|net| {
                    self.session(s)
                        .paths
                        .get(path)
                        .is_none_or(|m| !m.written_since(net))
                })
    }

    /// A request to `s` sent at network ms `at`: in flight until it is recorded or found
    /// unsent.
    pub(super) fn sent(&mut self, s: Sess, at: u64) {
        self.session_mut(s).in_flight.push(at);
    }

    /// The request to `s` sent at network ms `at` is in flight no more.
    pub(super) fn landed_or_unsent(&mut self, s: Sess, at: u64) {
        let in_flight = &mut self.session_mut(s).in_flight;
        if let Some(i) = in_flight.iter().position(|t| *t == at) {
            in_flight.remove(i);
        }
    }

    /// An operation whose connection never opened: it never reached `app`.
    pub(super) fn unsent(&mut self, s: Sess, op: &ScopedOp, ticket: &Ticket) {
        self.landed_or_unsent(s, ticket.sent_ms);
        if let Some((path, _)) = self.tracked_write(s, op) {
            if let Some(m) = self.path_model(s, &path) {
                m.settle();
            }
        }
    }

    /// An operation whose answer never came (timeout, connection lost): it may have happened.
    pub(super) fn unknown(&mut self, s: Sess, op: &ScopedOp, ticket: &Ticket) {
        self.record(s, ticket, None);
        self.policy_unknown(s, op);
        let (path, v) = match op {
            ScopedOp::Write { path, content, .. } => (path, Some(content.clone())),
            ScopedOp::Delete { path, .. } => (path, None),
            _ => return,
        };
        if s == Sess::Exposed {
            if let Some(c) = &v {
                self.session_mut(s)
                    .paths
                    .entry(path.clone())
                    .or_default()
                    .written
                    .insert(c.clone());
            }
            return;
        }
        if let Some(m) = self.path_model(s, path) {
            m.haunt(v);
        }
    }

    /// Checks one answered operation against the model, then applies its effect.
    pub(super) fn observe(
        &mut self,
        s: Sess,
        op: &ScopedOp,
        ticket: &Ticket,
        (sent, replied): (i64, i64),
        out: &ScopedOutcome,
    ) {
        if let Some((path, _)) = self.tracked_write(s, op) {
            if let Some(m) = self.path_model(s, &path) {
                m.settle();
            }
        }
        self.record(s, ticket, Some(replied));
        let refused = match out {
            ScopedOutcome::Refused { reason, .. } => Some(reason.as_str()),
            _ => None,
        };
        let t = self.turn(s);
        let name = format!("{}/{}/{}", t.workspace, t.agent, t.session);
        // Checks that hold in every session, whatever was deleted: resolution refuses before
        // anything is read or written.
        let probe = match op {
            ScopedOp::Write { path, .. }
            | ScopedOp::Read { path, .. }
            | ScopedOp::ReadText { path, .. }
            | ScopedOp::Delete { path, .. } => Some(path.as_str()),
            _ => None,
        };
        if let Some(path) = probe {
            if let Some((_, reason, rule)) =
                refused_spellings(&t).into_iter().find(|(p, ..)| p == path)
            {
                if refused != Some(reason) {
                    self.violation(
                        replied,
                        format!(
                            "{name}: the path {path:?} was answered {}, not refused {reason} ({rule})",
                            summary(out)
                        ),
                    );
                }
                return;
            }
            if path == "notes.md" {
                if refused != Some("missing_scope") {
                    self.violation(
                        replied,
                        format!(
                            "{name}: the scopeless path {path:?} was answered {} (SC-2.4)",
                            summary(out)
                        ),
                    );
                }
                return;
            }
        }
        // Anything read must be what its scope's owner wrote there.
        let read_back = match out {
            ScopedOutcome::Content { content } => Some(content.clone()),
            ScopedOutcome::Text { text: Some(t) } => Some(t.clone()),
            _ => None,
        };
        if let (Some(path), Some(c)) = (probe, &read_back) {
            if !identity_ok(&t, path, c) {
                self.violation(
                    replied,
                    format!("{name}: reading {path} returned {c:?}, which is not this turn's (another workspace, agent or session)"),
                );
                return;
            }
        }
        if s == Sess::Exposed {
            // Someone may delete this session at any time: only identity, and that session
            // content is this guest's own.
            if let (ScopedOp::Read { path, .. } | ScopedOp::ReadText { path, .. }, Some(c)) =
                (op, &read_back)
            {
                if path.starts_with("session/")
                    && !self
                        .session(s)
                        .paths
                        .get(path)
                        .is_some_and(|m| m.written.contains(c))
                {
                    self.violation(
                        replied,
                        format!("{name}: {path} returned {c:?}, never written by its only writer"),
                    );
                }
            }
            if let (ScopedOp::Write { path, content, .. }, ScopedOutcome::Written { .. }) =
                (op, out)
            {
                self.session_mut(s)
                    .paths
                    .entry(path.clone())
                    .or_default()
                    .written
                    .insert(content.clone());
            }
            return;
        }
        if refused == Some("unknown_entity") && self.session(s).last_activity.is_some() {
            if !matches!(op, ScopedOp::CreateSession { .. }) {
                self.violation(
                    replied,
                    format!(
                        "{name}: the session is unknown, though nobody deletes anything in {HOME}"
                    ),
                );
            }
            return;
        }
        let ok = refused.is_none();
        if let ScopedOp::CreateSession { .. } = op {
            if ok && self.session(s).last_activity.is_none() {
                self.session_mut(s).last_activity = Some(sent);
            }
            return;
        }
        if self.session(s).last_activity.is_none() {
            // Never confirmed to exist: nothing to promise.
            return;
        }
        // A sweep may have taken the session's files since its last confirmed activity, before
        // this operation arrived (whether it succeeded or not).
        if self.session(s).expirable(replied) {
            for m in self.session_mut(s).paths.values_mut() {
                m.allowed.insert(None);
            }
        }
        self.policy_observe(s, refused, ticket);
        match op {
            ScopedOp::AddWait { .. } if ok => {
                let expirable = self.session(s).expirable(replied);
                let m = self.session_mut(s);
                m.wait_confirmed = true;
                m.protected = !expirable;
            }
            ScopedOp::Write { path, content, .. } => {
                let slow = may_land(ticket);
                self.check_write(s, &name, (path, content, slow), replied, out)
            }
            ScopedOp::Read { path, .. } | ScopedOp::ReadText { path, .. } => {
                self.check_read(s, &name, (path, ticket), replied, out)
            }
            ScopedOp::Delete { path, .. } => {
                if let Some(m) = self.path_model(s, path) {
                    match refused {
                        None => m.set(None),
                        Some("not_found") => {
                            if !m.accepts(&None) {
                                let w = format!(
                                    "{name}: deleting {path} found nothing, but it holds {:?}",
                                    m.allowed
                                );
                                self.violation(replied, w);
                            } else if !m.haunted {
                                m.set(None);
                            }
                        }
                        Some(r) if is_infra(r) && may_land(ticket) => m.haunt(None),
                        _ => {}
                    }
                }
            }
            ScopedOp::List { prefix: None, .. } => {
                self.check_listing(s, &name, ticket, replied, out)
            }
            ScopedOp::Promote { .. } | ScopedOp::ToolOutput { .. } => {
                self.check_policy(s, &name, op, (ticket, replied), out)
            }
            _ => {}
        }
        if ok && policies::touches(op, out) {
            let m = self.session_mut(s);
            m.last_activity = Some(sent);
            if m.wait_confirmed {
                m.protected = true;
            }
            self.active_at(s, replied);
        }
    }

    /// `slow`: the refusal came after the store client's timeout (`may_land`).
    fn check_write(
        &mut self,
        s: Sess,
        name: &str,
        (path, content, slow): (&str, &str, bool),
        at: i64,
        out: &ScopedOutcome,
    ) {
        let refused = match out {
            ScopedOutcome::Refused { reason, .. } => Some(reason.clone()),
            _ => None,
        };
        let may_write =
            path.starts_with("session/") || (path.starts_with("agent/") && s != Sess::Shut);
        if !may_write {
            // Workspace scope is read-only by default (SC-3.2), and the shut agent has none.
            if !refused
                .as_deref()
                .is_some_and(|r| r == "permission_denied" || is_infra(r))
            {
                self.violation(
                    at,
                    format!(
                        "{name}: writing {path} without write access was answered {} (SC-3.3)",
                        summary(out)
                    ),
                );
            }
            return;
        }
        let Some(m) = self.path_model(s, path) else {
            return;
        };
        match refused.as_deref() {
            None => {
                if m.haunted {
                    m.written.insert(content.to_string());
                } else {
                    m.set(Some(content.to_string()));
                }
            }
            Some(r) if is_infra(r) && slow => m.haunt(Some(content.to_string())),
            Some(r) if is_infra(r) => {}
            Some(r) => {
                let w = format!(
                    "{name}: writing {path} was refused {r}, though the guest may write it"
                );
                self.violation(at, w);
            }
        }
    }

    fn check_read(
        &mut self,
        s: Sess,
        name: &str,
        (path, ticket): (&str, &Ticket),
        at: i64,
        out: &ScopedOutcome,
    ) {
        let answer: Result<Option<String>, &str> = match out {
            ScopedOutcome::Content { content } => Ok(Some(content.clone())),
            ScopedOutcome::Text { text: Some(t) } => Ok(Some(t.clone())),
            ScopedOutcome::Text { text: None } => Ok(Some("<no text>".into())),
            ScopedOutcome::Refused { reason, .. } if reason == "not_found" => Ok(None),
            ScopedOutcome::Refused { reason, .. } => Err(reason.as_str()),
            _ => Err("an unexpected outcome"),
        };
        let shut_scope =
            s == Sess::Shut && (path.starts_with("agent/") || path.starts_with("workspace/"));
        if shut_scope {
            // The agent's access to this scope is none: refused, never answered (SC-3.3).
            if !matches!(answer, Err(r) if r == "permission_denied" || is_infra(r)) {
                self.violation(
                    at,
                    format!(
                        "{name}: reading {path} with access none was answered {}",
                        summary(out)
                    ),
                );
            }
            return;
        }
        let answer = match answer {
            Ok(a) => a,
            Err(r) if is_infra(r) => return,
            Err(r) => {
                self.violation(at, format!("{name}: reading {path} was refused {r}"));
                return;
            }
        };
        if path == SKILL_PATH {
            if self.skill_published && answer.as_deref() != Some(SKILL_CONTENT) {
                self.violation(at, format!("{name}: the skill published at setup reads {answer:?} (skills are never swept, SC-6.2)"));
            }
            return;
        }
        if path == REF_PATH {
            if self.reference.is_some() && answer != self.reference {
                let w = format!("{name}: {path} reads {answer:?}, not what setup wrote (a refused write had an effect, or workspace files went)");
                self.violation(at, w);
            }
            return;
        }
        let kept = s == Sess::Kept && self.session(s).protected;
        let swept = self.swept_away(s, ticket, path);
        if swept && answer.is_some() {
            let w = format!("{name}: {path} reads {answer:?}, though a sweep claimed the session after its last write (SC-5.5)");
            self.violation(at, w);
            return;
        }
        let Some((ok, allowed)) = self.with_path(s, path, |m| {
            let w = ticket.window(path, m);
            let ok = w.accepts(&answer);
            if ok && w.quiet && !m.haunted {
                m.set(answer.clone());
            }
            (ok, w.values)
        }) else {
            return;
        };
        if !ok {
            let why = if answer.is_none() && kept {
                "its session holds a wait, so it is never swept (SC-5.2)"
            } else if answer.is_none() {
                "its session is live and nobody deleted it"
            } else {
                "the latest content the guest wrote is another (a refused or deleted write shows, or extracted text outlived its file)"
            };
            let w = format!("{name}: {path} reads {answer:?}, expected one of {allowed:?}: {why}");
            self.violation(at, w);
        }
    }

    fn check_listing(
        &mut self,
        s: Sess,
        name: &str,
        ticket: &Ticket,
        at: i64,
        out: &ScopedOutcome,
    ) {
        let ScopedOutcome::Listing { paths } = out else {
            return;
        };
        let listed: BTreeSet<&str> = paths.iter().map(String::as_str).collect();
        // Whether each path must be listed, and whether it must not be.
        let mut known: BTreeMap<String, (bool, bool)> = BTreeMap::new();
        let mut add = |p: &String, m: &PathModel| {
            let w = ticket.window(p, m);
            let verdict = if self.swept_away(s, ticket, p) {
                (false, true)
            } else {
                (w.must_exist(), w.must_not_exist())
            };
            known.insert(p.clone(), verdict);
        };
        self.session(s).paths.iter().for_each(|(p, m)| add(p, m));
        let mut problems = Vec::new();
        if let Some(w) = paths
            .windows(2)
            .find(|w| w[0].as_bytes() >= w[1].as_bytes())
        {
            problems.push(format!(
                "lists {} before {}: a listing is in ascending byte order of its guest paths (SC-4.4)",
                w[0], w[1]
            ));
        }
        if s == Sess::Shut {
            if let Some(p) = paths.iter().find(|p| !p.starts_with("session/")) {
                problems.push(format!("lists {p} from a scope with access none (SC-3.4)"));
            }
        } else {
            self.agent_paths.iter().for_each(|(p, m)| add(p, m));
            lock(&self.curated).iter().for_each(|(p, m)| add(p, m));
            if self.reference.is_some() {
                known.insert(REF_PATH.to_string(), (true, false));
            }
        }
        for (p, (must_exist, must_not_exist)) in &known {
            if *must_exist && !listed.contains(p.as_str()) {
                problems.push(format!(
                    "does not list {p} (a listing with no prefix shows all three scopes, SC-3.4)"
                ));
            }
            if *must_not_exist && listed.contains(p.as_str()) {
                problems.push(format!("lists {p}, which is gone"));
            }
        }
        for p in &listed {
            // The shut session's stray scopes are reported above.
            if !known.contains_key(*p) && self.unknown_listed_is_news(s, p) {
                problems.push(format!("lists {p}, which nobody wrote"));
            }
        }
        if let Some(p) = problems.into_iter().next() {
            self.violation(at, format!("{name}: the listing {p}"));
        }
    }
}

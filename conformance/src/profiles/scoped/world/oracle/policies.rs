//! Part SL in the scoped world's oracle: what a guest checks of its promotions and tool
//! results, what its agent's count policy (keep the last session, set by the admin as it
//! starts) may take from its busy session, and what liveness checks of the count policies and
//! promoted files after the heal.
//!
//! Each guest's agent keeps its last session (SL-2). It has two: the kept one, which holds a
//! wait and so is never swept by the count (SL-2.3), and the busy one, which is past the count
//! whenever the kept one's activity is the newer, and then loses its files at the next sweep.
//! The guest knows its own sessions' order: the busy one is safely the newest once it has an
//! activity sent a margin after the kept one's latest reply (the margin covers a clock jumped
//! back), and not at all once an operation in the kept one went unanswered (it may land any
//! time).

use std::collections::{BTreeMap, BTreeSet};

use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, SessionKey};
use tidemark_sim::real_tier::memory_s3::MemoryHandle;

use super::{is_infra, may_land, Guest};
use crate::profiles::scoped::contract::{PeopleCall, ScopedOp, ScopedOutcome, Turn};
use crate::profiles::scoped::world::paths::Ticket;
use crate::profiles::scoped::world::session::{Sess, EXPIRY_MARGIN_MS};
use crate::profiles::scoped::world::{summary, BUCKET, TOOL_OUTPUT_LIMIT_BYTES};

/// Where a guest promotes its session files: `agent/kept/<the session file's path>`.
pub(in crate::profiles::scoped::world) const PROMOTED: &str = "agent/kept/";

/// What a guest follows of part SL beside its paths.
#[derive(Clone, Debug, Default)]
pub(in crate::profiles::scoped::world) struct PolicyWatch {
    /// The latest reply (world ms) to an operation that made the kept session active.
    kept_latest: Option<i64>,
    /// An operation in the kept session went unanswered: it may make it the newer at any time.
    kept_unknown: bool,
    /// A tool result over the limit went unanswered: a session file at a path only the
    /// implementation knows may exist.
    overflow_unknown: bool,
    /// Tool results over the limit sent and not answered yet: a person's listing meanwhile may
    /// show a file the guest learns of only with the answer.
    overflow_pending: usize,
}

/// Whether `content` may be read at the promoted `path` of turn `t`'s agent (`None`: not a
/// promoted path): a session file's content of that agent, written at the session path the
/// promotion copied.
pub(super) fn promoted_identity(t: &Turn, path: &str, content: &str) -> Option<bool> {
    let rest = path.strip_prefix(PROMOTED)?;
    let owner = format!("{}/{}/", t.workspace, t.agent);
    Some(content.starts_with(&owner) && content.contains(&format!("/session/{rest}#")))
}

/// Whether a successful `op` answered `out` is activity of its session (SC-4.3, SC-5.1): a
/// turn and every file operation, a promotion (SL-6.2), a tool result written to a file
/// (SL-7.2; one shown inline writes nothing).
pub(super) fn touches(op: &ScopedOp, out: &ScopedOutcome) -> bool {
    matches!(
        op,
        ScopedOp::Activity { .. }
            | ScopedOp::Write { .. }
            | ScopedOp::Read { .. }
            | ScopedOp::ReadText { .. }
            | ScopedOp::List { .. }
            | ScopedOp::Delete { .. }
            | ScopedOp::Promote { .. }
    ) || matches!(
        (op, out),
        (ScopedOp::ToolOutput { .. }, ScopedOutcome::Written { .. })
    )
}

impl Guest {
    /// What part SL's request `op` in `s` takes as it is sent (`super::Guest::begin`): a
    /// promotion's destination registered with every content its source may hold, a tool
    /// result over the limit counted as in flight.
    pub(super) fn policy_begin(&mut self, s: Sess, op: &ScopedOp, at_ms: u64) {
        match op {
            ScopedOp::Promote { from, to, .. }
                if to.starts_with(PROMOTED) && matches!(s, Sess::Kept | Sess::Active) =>
            {
                let possible = self.possible_contents(s, from);
                if let Some(m) = self.path_model(s, to) {
                    for c in possible {
                        m.send(Some(c), at_ms);
                    }
                }
            }
            ScopedOp::ToolOutput { content, .. }
                if content.len() as u64 > TOOL_OUTPUT_LIMIT_BYTES =>
            {
                self.policy.overflow_pending += 1;
            }
            _ => {}
        }
    }

    /// The writer of part SL's request learnt its fate (answered, or never).
    fn policy_settle(&mut self, s: Sess, op: &ScopedOp) {
        match op {
            ScopedOp::Promote { to, .. } if to.starts_with(PROMOTED) => {
                if let Some(m) = self.path_model(s, to) {
                    m.settle();
                }
            }
            ScopedOp::ToolOutput { content, .. }
                if content.len() as u64 > TOOL_OUTPUT_LIMIT_BYTES =>
            {
                self.policy.overflow_pending = self.policy.overflow_pending.saturating_sub(1);
            }
            _ => {}
        }
    }

    /// Before judging the guest's answered request in `s`: a request to the kept session
    /// refused by the store after the client's timeout may still land (`super::may_land`), and
    /// be activity, at any time; and the count may have taken the busy session's files.
    pub(super) fn policy_observe(&mut self, s: Sess, refused: Option<&str>, ticket: &Ticket) {
        if s == Sess::Kept && refused.is_some_and(is_infra) && may_land(ticket) {
            self.policy.kept_unknown = true;
        }
        self.count_exposure(s);
    }

    /// A person's request whose answer never came: an upload or removal in the kept session
    /// may land, and be activity, at any time.
    pub(in crate::profiles::scoped::world) fn person_unknown(
        &mut self,
        s: Sess,
        call: &PeopleCall,
    ) {
        if s == Sess::Kept && matches!(call, PeopleCall::Upload { .. } | PeopleCall::Remove { .. })
        {
            self.policy.kept_unknown = true;
        }
    }

    /// Before judging an operation of the busy session: if the count may have found it past
    /// the last session since its last confirmed activity, its files may be gone.
    pub(in crate::profiles::scoped::world) fn count_exposure(&mut self, s: Sess) {
        if self.count_may_take(s) {
            for m in self.session_mut(s).paths.values_mut() {
                m.allowed.insert(None);
            }
        }
    }

    /// Whether the count may take session `s`'s files now: the busy session, unless it is
    /// safely the newer of its agent's two.
    pub(in crate::profiles::scoped::world) fn count_may_take(&self, s: Sess) -> bool {
        if s != Sess::Active {
            return false;
        }
        let safe = !self.policy.kept_unknown
            && match (
                self.session(Sess::Active).last_activity,
                self.policy.kept_latest,
            ) {
                (Some(active), Some(kept)) => active > kept + EXPIRY_MARGIN_MS,
                (Some(_), None) => true,
                (None, _) => false,
            };
        !safe
    }

    /// After an operation that was activity of session `s`, answered at `replied`.
    pub(in crate::profiles::scoped::world) fn active_at(&mut self, s: Sess, replied: i64) {
        if s == Sess::Kept {
            let latest = self.policy.kept_latest.unwrap_or(replied).max(replied);
            self.policy.kept_latest = Some(latest);
        }
    }

    /// An operation whose answer never came: a promotion may have copied its source, a tool
    /// result may have been written where the guest cannot know, and either, like any
    /// operation in the kept session, may be activity landing at any time.
    pub(super) fn policy_unknown(&mut self, s: Sess, op: &ScopedOp) {
        if s == Sess::Kept {
            self.policy.kept_unknown = true;
        }
        self.policy_settle(s, op);
        match op {
            ScopedOp::ToolOutput { content, .. }
                if content.len() as u64 > TOOL_OUTPUT_LIMIT_BYTES =>
            {
                self.policy.overflow_unknown = true;
            }
            ScopedOp::Promote { from, to, .. } if to.starts_with(PROMOTED) => {
                let possible = self.possible_contents(s, from);
                if let Some(m) = self.path_model(s, to) {
                    m.haunt(None);
                    m.written.extend(possible);
                }
            }
            _ => {}
        }
    }

    /// Whether `path`, listed in `s` and unknown to the model, is news (the guest's listing
    /// check: the shut session's stray scopes are reported apart, and a tool result's file
    /// may exist that the guest has not learnt of yet).
    pub(super) fn unknown_listed_is_news(&self, s: Sess, path: &str) -> bool {
        (s != Sess::Shut || path.starts_with("session/")) && !self.may_list_unknown(path)
    }

    /// Whether a listing may show `path` although the guest never learnt it: a tool result's
    /// file whose answer never came, or has not come yet.
    pub(in crate::profiles::scoped::world) fn may_list_unknown(&self, path: &str) -> bool {
        (self.policy.overflow_unknown || self.policy.overflow_pending > 0)
            && path.starts_with("session/")
    }

    /// What the session file `from` may hold: every content the guest wrote there that the
    /// model still allows.
    fn possible_contents(&mut self, s: Sess, from: &str) -> BTreeSet<String> {
        match self.path_model(s, from) {
            Some(m) if m.haunted => m.written.clone(),
            Some(m) => m.allowed.iter().flatten().cloned().collect(),
            None => BTreeSet::new(),
        }
    }

    /// Judges part SL's request `op` of the guest's (a promotion or a tool result).
    pub(super) fn check_policy(
        &mut self,
        s: Sess,
        name: &str,
        op: &ScopedOp,
        (ticket, at): (&Ticket, i64),
        out: &ScopedOutcome,
    ) {
        match op {
            ScopedOp::Promote { from, to, .. } => {
                self.check_promotion(s, name, (from, to), (ticket, at), out)
            }
            ScopedOp::ToolOutput { content, .. } => {
                self.check_tool_output(s, name, content, (ticket, at), out)
            }
            _ => {}
        }
    }

    /// SL-6: a promotion into a scope the turn may not write is refused `permission_denied`
    /// and writes nothing (SL-6.2); one that succeeds copied a file the session held (SL-6.1:
    /// the source stays, which the model keeps), and one refused `not_found` found none.
    fn check_promotion(
        &mut self,
        s: Sess,
        name: &str,
        (from, to): (&str, &str),
        (ticket, at): (&Ticket, i64),
        out: &ScopedOutcome,
    ) {
        self.policy_settle(
            s,
            &ScopedOp::Promote {
                turn: self.turn(s),
                from: from.to_string(),
                to: to.to_string(),
            },
        );
        let refused = match out {
            ScopedOutcome::Refused { reason, .. } => Some(reason.as_str()),
            _ => None,
        };
        let may_write = to.starts_with(PROMOTED) && matches!(s, Sess::Kept | Sess::Active);
        if !may_write {
            if !refused.is_some_and(|r| r == "permission_denied" || is_infra(r)) {
                self.violation(
                    at,
                    format!(
                        "{name}: promoting {from} to {to} without write access was answered {} (SL-6.2)",
                        summary(out)
                    ),
                );
            }
            return;
        }
        let possible = self.possible_contents(s, from);
        match (out, refused) {
            (ScopedOutcome::Written { path }, _) if path == to => {
                if possible.is_empty() {
                    self.violation(
                        at,
                        format!("{name}: promoting {from} succeeded, but it holds nothing the guest wrote"),
                    );
                    return;
                }
                let Some(m) = self.path_model(s, to) else {
                    return;
                };
                let one = (possible.len() == 1 && !m.haunted)
                    .then(|| possible.iter().next().cloned())
                    .flatten();
                match one {
                    Some(c) => m.set(Some(c)),
                    None => {
                        m.haunt(None);
                        m.written.extend(possible);
                    }
                }
            }
            (_, Some("not_found")) => {
                let Some(m) = self.path_model(s, from) else {
                    return;
                };
                if !m.accepts(&None) {
                    let w = format!(
                        "{name}: promoting {from} found nothing, but it holds {:?}",
                        m.allowed
                    );
                    self.violation(at, w);
                } else if !m.haunted {
                    m.set(None);
                }
            }
            (_, Some(r)) if is_infra(r) && may_land(ticket) => {
                // Refused after the store client's timeout: the copy may still land.
                if let Some(m) = self.path_model(s, to) {
                    m.haunt(None);
                    m.written.extend(possible);
                }
            }
            (_, Some(r)) if is_infra(r) => {}
            _ => self.violation(
                at,
                format!(
                    "{name}: promoting {from} to {to}, which it may write, was answered {}",
                    summary(out)
                ),
            ),
        }
    }

    /// SL-7.1: a result at or under the limit is answered as it is; one over it is written to
    /// a session file the answer names (SL-7.2), which the session then lists.
    fn check_tool_output(
        &mut self,
        s: Sess,
        name: &str,
        content: &str,
        (ticket, at): (&Ticket, i64),
        out: &ScopedOutcome,
    ) {
        let over = content.len() as u64 > TOOL_OUTPUT_LIMIT_BYTES;
        self.policy_settle(
            s,
            &ScopedOp::ToolOutput {
                turn: self.turn(s),
                content: content.to_string(),
            },
        );
        match out {
            ScopedOutcome::Content { content: c } if !over && c == content => {}
            ScopedOutcome::Written { path } if over && path.starts_with("session/") => {
                if let Some(m) = self.path_model(s, path) {
                    // Written by the request sent at `ticket` (what a sweep that claimed the
                    // session before it cannot have taken, `super::Guest::swept_away`).
                    m.send(Some(content.to_string()), ticket.sent_ms);
                    m.settle();
                    if m.haunted {
                        m.written.insert(content.to_string());
                    } else {
                        m.set(Some(content.to_string()));
                    }
                }
            }
            ScopedOutcome::Refused { reason, .. } if over && is_infra(reason) => {
                if may_land(ticket) {
                    // Refused after the store client's timeout: the file may still land.
                    self.policy.overflow_unknown = true;
                }
            }
            out => self.violation(
                at,
                format!(
                    "{name}: a tool result of {} bytes (limit {TOOL_OUTPUT_LIMIT_BYTES}) was answered {} (SL-7.1: {})",
                    content.len(),
                    summary(out),
                    if over {
                        "over the limit, written to a session file"
                    } else {
                        "at or under the limit, shown as it is"
                    }
                ),
            ),
        }
    }
}

/// A session as liveness ranks it for its agent's count: its key, last activity, and whether
/// a sweep emptied it.
type Standing = (SessionKey, i64, bool);

/// After the heal and one sweep: every count policy's sessions past the count (those with at
/// least that many sessions of the agent strictly newer whose files are kept: a tie is the
/// implementation's, SL-2.2, and an emptied session takes no place, SL-2.1) hold no object
/// unless a wait keeps them (SL-2.3); and every promoted file has its text beside it (SL-6.3;
/// SC-1.4 says where).
pub(in crate::profiles::scoped::world) fn liveness(
    meta: &MemoryMetadata,
    objects: &MemoryHandle,
) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let counts = rt
        .block_on(meta.session_counts())
        .map_err(|e| e.to_string())?;
    let mut by_agent: BTreeMap<(String, String), Vec<Standing>> = BTreeMap::new();
    for (k, last, swept) in meta.sessions() {
        by_agent
            .entry((k.workspace.clone(), k.agent.clone()))
            .or_default()
            .push((k, last, swept.is_some()));
    }
    for (ws, agent, keep) in counts {
        let sessions = by_agent.remove(&(ws, agent)).unwrap_or_default();
        for (k, last, _) in &sessions {
            let newer = sessions
                .iter()
                .filter(|(_, l, swept)| l > last && !swept)
                .count();
            if (newer as i64) < keep || meta.has_wait(k) {
                continue;
            }
            let left = objects.keys(BUCKET, &k.prefix());
            if !left.is_empty() {
                return Err(format!(
                    "session {} has {newer} newer sessions of its agent, which keeps its last {keep} (SL-2), but keeps {:?}",
                    k.prefix(),
                    left
                ));
            }
        }
    }
    let text = tidemark_reference::scoped::layout::TEXT_DIR;
    for key in objects.keys(BUCKET, "agents/") {
        let parts: Vec<&str> = key.splitn(4, '/').collect();
        let [_, ws, agent, rest] = parts.as_slice() else {
            continue;
        };
        let Some(file) = rest.strip_prefix(&PROMOTED["agent/".len()..]) else {
            continue;
        };
        let text_key = format!("agents/{ws}/{agent}/{text}/kept/{file}");
        if !objects.keys(BUCKET, &text_key).contains(&text_key) {
            return Err(format!(
                "the promoted {key} has no text beside it (SL-6.3, SC-1.4)"
            ));
        }
    }
    Ok(())
}

//! Part SL in a model sequence (generator 5): count policies set, lowered, raised and removed
//! on agents (SL-2), promotions to agent and workspace scope, refused or racing a sweep (SL-6),
//! and tool results under, at and over `tool_output_limit_bytes` (SL-7), among the turns,
//! sweeps, faults, crashes and clock jumps the other operations bring.
//!
//! What the model predicts:
//! - a count ranks an agent's live sessions by last activity; those past the count with no
//!   wait lose their files at the next sweep, after the idle sessions (SL-2.1 to SL-2.4). No
//!   two sessions share a last activity (each operation of generator 5 takes a second of its
//!   own, `ops::ticks`), so the ranking never meets a tie SL-2.2 leaves to the implementation;
//! - a promotion is a file operation of its session (SL-6.2): SC-2's shape first, then the
//!   session, the destination's access, the source; a success copies the file (the source
//!   stays, SL-6.1), its text readable at once (SL-6.3), and the copy is the destination
//!   scope's, never swept with the session (SL-6.4, checked after every sweep);
//! - a tool result at or under the limit is answered as it is and changes nothing; one over it
//!   is written to a session file whose path the answer names, read back and listed like any
//!   other, and is activity of the session (SL-7.1, SL-7.2).

use std::cmp::Reverse;
use std::fmt;
use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tidemark_reference::scoped::policies::overflow::ToolOutput;
use tidemark_reference::scoped::policies::MAX_KEEP_LAST;
use tidemark_reference::scoped::{Access, Resolved, ScopeSettings, ScopedError, SweepPause};

use super::ops::{agent, path, session, ModelOp, ACCESS_NAMES, AGENTS, PATHS, SESSIONS, WORKSPACE};
use super::state::{short, Model};
use super::{diverged, Runner, Step, BUCKET};
use crate::profiles::scoped::sweeps_at_once::race_against_sweep;

/// The clock's step before each operation of generator 5 (and each session created at setup).
pub(super) const TICK_MS: i64 = 1_000;

/// The `tool_output_limit_bytes` sequences run with: small, so results on both sides of it
/// stay cheap (SPEC's default is 65,536; the limit is the deployment's knob).
pub(super) const TOOL_OUTPUT_LIMIT_BYTES: u64 = 1_024;

/// The counts a `SetCount` draws: removal, the counts an agent's three or four sessions make
/// interesting, and three SL-1.4 refuses.
const KEEPS: [Option<i64>; 9] = [
    None,
    Some(1),
    Some(1),
    Some(2),
    Some(2),
    Some(3),
    Some(0),
    Some(-1),
    Some(MAX_KEEP_LAST + 1),
];

impl Model {
    /// The sweep's count policies, after its idle sessions (SL-1.1): each live agent's
    /// sessions whose files are still kept (a swept one takes no place, SL-2.1), ranked by last
    /// activity, newest first; those past its count, with no wait, lose their files and are
    /// marked swept. Returns how many files went.
    pub(super) fn sweep_counts(&mut self) -> usize {
        let mut removed = 0;
        for (&a, &keep) in &self.policy.counts {
            if self.deleted_agents.contains(a) {
                continue;
            }
            let mut ranked: Vec<usize> = (0..SESSIONS.len())
                .filter(|&i| {
                    let s = &self.sessions[i];
                    SESSIONS[i].0 == a && s.created && !s.deleted && !s.swept
                })
                .collect();
            ranked.sort_by_key(|&i| Reverse(self.sessions[i].last_activity));
            for i in ranked
                .into_iter()
                .skip(usize::try_from(keep).unwrap_or(usize::MAX))
            {
                let s = &mut self.sessions[i];
                if s.waits.is_empty() {
                    removed += s.files.len();
                    s.files.clear();
                    s.swept = true;
                    self.emptied.insert(i);
                }
            }
        }
        removed
    }
}

/// One of part SL's operations, `session` and `p` drawn as every operation draws them.
pub(super) fn one(rng: &mut ChaCha8Rng, session: u8, p: u8) -> ModelOp {
    let a = rng.gen_range(0..AGENTS.len() as u8);
    match rng.gen_range(0..30u32) {
        0..=5 => ModelOp::SetCount {
            agent: a,
            keep: KEEPS[rng.gen_range(0..KEEPS.len())],
        },
        6..=8 => ModelOp::SetWorkspaceAccess {
            agent: a,
            access: rng.gen_range(0..3),
        },
        9..=17 => ModelOp::Promote {
            session,
            path: p,
            dest: rng.gen_range(0..PATHS.len() as u8),
            workspace: rng.gen_bool(0.4),
            form: rng.gen_range(0..10),
        },
        18..=20 => ModelOp::PromoteDuringSweep {
            session,
            path: p,
            dest: rng.gen_range(0..PATHS.len() as u8),
            workspace: rng.gen_bool(0.4),
        },
        _ => ModelOp::ToolOutput {
            session,
            size: rng.gen_range(0..4),
        },
    }
}

/// What SPEC answers a promotion's paths with, before the session and the store are looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// From a session file to agent or workspace scope.
    WellFormed,
    /// From outside session scope, or into it (SL-6.2).
    InvalidPolicy,
    /// A path SC-2 refuses, with its reason.
    Refused(&'static str),
}

/// A promotion's two guest paths and their shape: `form` (modulo 10) 0 to 5 well-formed (0 to
/// 2 of a file the turn writes first: [`writes_first`]), 6 a source in agent scope, 7 a
/// destination in session scope, 8 a destination that climbs out of its scope, 9 one with no
/// scope.
fn promotion(form: u8, p: u8, dest: u8, workspace: bool) -> (String, String, Shape) {
    let scope = if workspace { "workspace" } else { "agent" };
    let (file, dest) = (path(p), path(dest));
    let session_file = format!("session/{file}");
    match form % 10 {
        6 => (
            format!("agent/{file}"),
            format!("{scope}/{dest}"),
            Shape::InvalidPolicy,
        ),
        7 => (
            session_file,
            format!("session/promoted/{dest}"),
            Shape::InvalidPolicy,
        ),
        8 => (
            session_file,
            format!("{scope}/../session/{dest}"),
            Shape::Refused("traversal"),
        ),
        9 => (
            session_file,
            dest.to_string(),
            Shape::Refused("missing_scope"),
        ),
        _ => (session_file, format!("{scope}/{dest}"), Shape::WellFormed),
    }
}

/// Whether a promotion's `form` has the turn write its source first (a draft written, then
/// kept): most sessions hold few files, and a promotion of a missing one is `not_found`.
fn writes_first(form: u8) -> bool {
    form % 10 < 3
}

/// A tool result of `len` bytes, unique to its step.
fn tool_result(step: usize, len: usize) -> String {
    format!("tool output of step {step}. ")
        .chars()
        .cycle()
        .take(len)
        .collect()
}

/// The size of a `ToolOutput`'s result, and how it stands to the limit.
fn tool_size(size: u8) -> (usize, &'static str) {
    let limit = TOOL_OUTPUT_LIMIT_BYTES as usize;
    match size % 4 {
        0 => (limit / 2, "under the limit"),
        1 => (limit, "at the limit"),
        2 => (limit + 1, "one byte over the limit"),
        _ => (limit * 3, "over the limit"),
    }
}

fn who(i: usize) -> String {
    let (a, s) = SESSIONS[i];
    format!("{a}/{s}")
}

/// How `ModelOp`'s `Display` writes part SL's operations.
pub(super) fn describe(op: &ModelOp, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match *op {
        ModelOp::SetCount { agent: a, keep } => match keep {
            Some(n) => write!(f, "agent {} keeps its last {n} sessions", agent(a)),
            None => write!(f, "agent {} keeps every session", agent(a)),
        },
        ModelOp::SetWorkspaceAccess { agent: a, access } => write!(
            f,
            "agent {} sets workspace access {}",
            agent(a),
            ACCESS_NAMES[access as usize % 3]
        ),
        ModelOp::Promote {
            session: s,
            path: p,
            dest,
            workspace,
            form,
        } => {
            let (from, to, _) = promotion(form, p, dest, workspace);
            if writes_first(form) {
                write!(f, "{} write {from} and promote it to {to}", who(session(s)))
            } else {
                write!(f, "{} promote {from} to {to}", who(session(s)))
            }
        }
        ModelOp::PromoteDuringSweep {
            session: s,
            path: p,
            dest,
            workspace,
        } => {
            let (from, to, _) = promotion(0, p, dest, workspace);
            write!(
                f,
                "{} promote {from} to {to} while a sweep holds its candidates",
                who(session(s))
            )
        }
        ModelOp::ToolOutput { session: s, size } => {
            let (len, how) = tool_size(size);
            write!(f, "{} tool output of {len} bytes ({how})", who(session(s)))
        }
        _ => unreachable!("not one of part SL's operations: {op:?}"),
    }
}

impl Runner<'_> {
    /// Creates session `i` at the first operation naming it (generator 5's later sessions);
    /// a session whose agent was deleted first never exists, and every operation in it is
    /// `unknown_entity`.
    pub(super) async fn start_session(&mut self, i: usize, now: i64) -> Step {
        let m = &mut self.model.sessions[i];
        if m.created {
            return Ok(());
        }
        m.created = true;
        if m.deleted {
            return Ok(());
        }
        match self.store.create_session(&self.turns[i]).await {
            Ok(()) => {
                self.model.sessions[i].last_activity = now;
                self.note(format!("{} starts", who(i)));
                Ok(())
            }
            Err(e) => diverged(
                format!("{} starts: Ok", who(i)),
                format!("{} starts: {e}", who(i)),
            ),
        }
    }

    /// Performs one of part SL's operations.
    pub(super) async fn policy(&mut self, step: usize, op: &ModelOp, now: i64) -> Step {
        match *op {
            ModelOp::SetCount { agent: a, keep } => self.set_count(agent(a), keep).await,
            ModelOp::SetWorkspaceAccess { agent: a, access } => {
                self.set_workspace_access(agent(a), access).await
            }
            ModelOp::Promote {
                session: s,
                path: p,
                dest,
                workspace,
                form,
            } => {
                let i = session(s);
                let (from, to, shape) = promotion(form, p, dest, workspace);
                if writes_first(form) {
                    self.write(i, path(p), false, format!("v{step}"), now)
                        .await?;
                }
                let r = self.store.promote(&self.turns[i], &from, &to).await;
                self.judge_promotion(i, p, &to, shape, r, now).await
            }
            ModelOp::PromoteDuringSweep {
                session: s,
                path: p,
                dest,
                workspace,
            } => {
                self.promote_during_sweep(session(s), p, dest, workspace, now)
                    .await
            }
            ModelOp::ToolOutput { session: s, size } => {
                self.tool_output(session(s), size, step, now).await
            }
            _ => unreachable!("not one of part SL's operations: {op:?}"),
        }
    }

    /// SL-2 and SL-1.4: a count from 1 to 100,000 on a live agent is in force from the next
    /// sweep; any other count is `invalid_policy` and one on a deleted agent `unknown_entity`,
    /// either changing nothing (with both wrong, SPEC leaves the order open: either reason).
    async fn set_count(&mut self, a: &'static str, keep: Option<i64>) -> Step {
        let r = self
            .store
            .set_session_count(&self.ids.id(WORKSPACE), &self.ids.id(a), keep)
            .await;
        let absurd = keep.is_some_and(|n| !(1..=MAX_KEEP_LAST).contains(&n));
        let gone = self.model.deleted_agents.contains(a);
        match r {
            Ok(()) if !absurd && !gone => {
                match keep {
                    Some(n) => self.model.policy.counts.insert(a, n),
                    None => self.model.policy.counts.remove(a),
                };
                Ok(())
            }
            Err(e) if absurd && e.kind() == "invalid_policy" => Ok(()),
            Err(e) if gone && e.kind() == "unknown_entity" => Ok(()),
            r => {
                let want = match (absurd, gone) {
                    (false, false) => "Ok",
                    (true, false) => "refused invalid_policy (SL-1.4)",
                    (false, true) => "refused unknown_entity (the agent is deleted)",
                    (true, true) => "refused invalid_policy or unknown_entity",
                };
                diverged(
                    format!("count policy on {a}: {want}"),
                    format!("count policy on {a}: {:?}", r.map_err(|e| e.kind())),
                )
            }
        }
    }

    /// The agent layer's workspace access (SC-3.2), its agent access sent again: the layer is
    /// replaced whole.
    async fn set_workspace_access(&mut self, a: &'static str, access: u8) -> Step {
        if self.model.deleted_agents.contains(a) {
            self.note("skipped: the agent is deleted");
            return Ok(());
        }
        let access = [Access::None, Access::Read, Access::ReadWrite][access as usize % 3];
        let settings = ScopeSettings {
            agent: self.model.agent_access.get(a).copied(),
            workspace: Some(access),
        };
        if let Err(e) = self
            .store
            .create_agent(&self.ids.id(WORKSPACE), &self.ids.id(a), settings)
            .await
        {
            return diverged("agent settings: Ok", format!("agent settings: {e}"));
        }
        self.model.policy.workspace_layer.insert(a, access);
        Ok(())
    }

    /// Judges a promotion of `session/path(p)` to `to` against SL-6.2's order, and on success
    /// copies the file in the model and reads the copy's text at once (SL-6.3).
    async fn judge_promotion(
        &mut self,
        i: usize,
        p: u8,
        to: &str,
        shape: Shape,
        r: Result<Resolved, ScopedError>,
        now: i64,
    ) -> Step {
        let (a, _) = SESSIONS[i];
        let deleted = self.model.sessions[i].deleted;
        let (scope, dest) = to.split_once('/').unwrap_or(("", to));
        let source = self.model.sessions[i].files.get(path(p)).cloned();
        let writable = match scope {
            "agent" => self.model.access(a).can_write(),
            _ => self.model.policy.workspace_access(a).can_write(),
        };
        // The reason SPEC refuses it with, in SL-6.2's order, if it does.
        let want: Option<&str> = match shape {
            Shape::Refused(reason) => Some(self.malformed_reason(i, reason)),
            // The scope checks belong with the paths' shape, before the session row (SL-6.2);
            // under SC-3.5's variant `session_first` after it, as every shape is.
            Shape::InvalidPolicy => Some(self.malformed_reason(i, "invalid_policy")),
            Shape::WellFormed if deleted => Some("unknown_entity"),
            Shape::WellFormed if !writable => Some("permission_denied"),
            Shape::WellFormed if source.is_none() => Some("not_found"),
            Shape::WellFormed => None,
        };
        let what = format!("{} promote {} to {to}", who(i), path(p));
        match (r, want) {
            (Err(ScopedError::Storage { .. }), _) if self.faulty() => {
                // A promotion that failed wrote no file (its text may have landed: the next
                // successful promotion to the same place replaces it).
                self.note("failed: storage");
                Ok(())
            }
            (Err(e), Some(reason)) if e.kind() == reason => Ok(()),
            (Ok(r), None) if r.guest_path() == to => {
                let content = source.expect("a well-formed promotion of a file the model holds");
                let files = match scope {
                    "agent" => self.model.agent_files.entry(a).or_default(),
                    _ => &mut self.model.policy.workspace_files,
                };
                files.insert(dest.to_string(), content.clone());
                self.model.sessions[i].touched(now);
                self.promoted_text(i, to, &content).await
            }
            (r, want) => diverged(
                format!(
                    "{what}: {}",
                    match want {
                        None => format!("written {to}"),
                        Some(w) => format!("refused {w}"),
                    }
                ),
                format!(
                    "{what}: {:?}",
                    r.map(|r| r.guest_path()).map_err(|e| e.kind())
                ),
            ),
        }
    }

    /// The promoted file's text, stored beside it where SC-1.4 puts every file's (a store that
    /// extracts afresh would serve a missing one, so the bucket is looked at first), and read
    /// at once: the copy is never visible without it (SL-6.3).
    async fn promoted_text(&mut self, i: usize, to: &str, content: &str) -> Step {
        let (a, _) = SESSIONS[i];
        let ws = self.ids.id(WORKSPACE);
        let (scope, dest) = to.split_once('/').unwrap_or(("", to));
        let prefix = match scope {
            "agent" => format!("agents/{ws}/{}/", self.ids.id(a)),
            _ => format!("workspaces/{ws}/"),
        };
        let text_key = format!("{prefix}{}/{dest}", self.config.text_segment);
        if !self.mem.keys(BUCKET, &text_key).contains(&text_key) {
            return diverged(
                format!("the promoted {to} has its text beside it (SC-1.4, SL-6.3)"),
                format!("no object at the text's key under {prefix}"),
            );
        }
        match self.store.read_text(&self.turns[i], to).await {
            Ok(Some(text)) if text == content => Ok(()),
            Err(ScopedError::Storage { .. }) if self.faulty() => {
                self.note("failed: storage");
                Ok(())
            }
            r => diverged(
                format!("text of the promoted {to}: {:?} (SL-6.3)", short(content)),
                format!("text of the promoted {to}: {r:?}"),
            ),
        }
    }

    /// A well-formed promotion raced against a sweep that has claimed its candidates (SL-6.4):
    /// it lands before the sweep claims its session (which it then keeps, being active) or
    /// waits and finds its source swept. Never half done: after the sweep the bucket agrees
    /// with the model, the copy included.
    async fn promote_during_sweep(
        &mut self,
        i: usize,
        p: u8,
        dest: u8,
        workspace: bool,
        now: i64,
    ) -> Step {
        let (from, to, shape) = promotion(0, p, dest, workspace);
        let pause = Arc::new(SweepPause::default());
        let mut config = self.config.clone();
        config.sweep_pause = Some(pause.clone());
        let racing = self.open(config).await?;
        let t = self.turns[i].clone();
        let (swept, promoted, landed_first) =
            race_against_sweep(&racing, &pause, self.meta.as_ref(), || {
                racing.promote(&t, &from, &to)
            })
            .await;
        drop(racing);
        let healed = self.finish_sweep(swept, "the raced sweep").await?;
        // Landed while the sweep was paused: activity before its count policies rank the
        // sessions (SL-2); blocked: after the whole sweep, on what it left.
        self.swept_files += if landed_first {
            self.model.sweep_idle(now)
        } else {
            self.model.sweep(now)
        };
        self.judge_promotion(i, p, &to, shape, promoted, now)
            .await?;
        if landed_first {
            self.swept_files += self.model.sweep_policies(now);
        }
        if healed {
            // The healed sweep ran after the promotion.
            self.swept_files += self.model.sweep(now);
        }
        self.check_bucket_and_ledger().await
    }

    /// SL-7: a result at or under the limit is answered as it is and changes nothing (an
    /// inline answer is no file operation, and no activity); one over it is a write of the
    /// session, where no file of the session is (SL-7.1), read back at the path the answer
    /// names. None is sent for a session that is gone: SL-7.1 leaves looking it up to the
    /// implementation, and no harness sends one.
    async fn tool_output(&mut self, i: usize, size: u8, step: usize, now: i64) -> Step {
        if self.model.sessions[i].deleted {
            self.note("skipped: the session is deleted");
            return Ok(());
        }
        let (len, how) = tool_size(size);
        let content = tool_result(step, len);
        let what = format!("{} tool output of {len} bytes ({how})", who(i));
        self.hand_tool_result(i, content, what, now)
            .await
            .map(|_| ())
    }

    /// Hands `content` to the store as session `i`'s tool result and judges the answer
    /// (SL-7.1, SL-7.2); answers the session file it overflowed to, if it did.
    pub(super) async fn hand_tool_result(
        &mut self,
        i: usize,
        content: String,
        what: String,
        now: i64,
    ) -> Result<Option<String>, super::Stop> {
        let len = content.len();
        let r = self
            .store
            .tool_output(&self.turns[i], content.clone().into_bytes())
            .await;
        let over = len as u64 > TOOL_OUTPUT_LIMIT_BYTES;
        match r {
            Ok(ToolOutput::Inline(b)) if !over && b == content.as_bytes() => Ok(None),
            Err(ScopedError::Storage { .. }) if over && self.faulty() => {
                self.model.sessions[i].write_failed();
                self.note("failed: storage");
                Ok(None)
            }
            Ok(ToolOutput::Written(guest)) if over => {
                let Some(name) = guest.strip_prefix("session/") else {
                    return diverged(
                        format!("{what}: written to a session file (SL-7.2)"),
                        format!("{what}: written {guest}"),
                    );
                };
                // A path holding this very result may be written again (SL-7.1), one holding
                // anything else never.
                if let Some(held) = self.model.sessions[i]
                    .files
                    .get(name)
                    .filter(|held| **held != content)
                {
                    return diverged(
                        format!("{what}: written where no file of the session is (SL-7.1)"),
                        format!("{what}: written over {guest}, which held {:?}", short(held)),
                    );
                }
                let name = name.to_string();
                self.model.sessions[i]
                    .files
                    .insert(name.clone(), content.clone());
                self.model.sessions[i].touched(now);
                self.note(format!("written {guest}"));
                self.overflow_read_back(i, &guest, &content).await?;
                Ok(Some(name))
            }
            r => {
                let want = if over {
                    "written to a session file"
                } else {
                    "answered inline, nothing written"
                };
                let got = match r {
                    Ok(ToolOutput::Inline(b)) => format!("inline, {} bytes", b.len()),
                    Ok(ToolOutput::Written(p)) => format!("written {p}"),
                    Err(e) => format!("refused {}", e.kind()),
                };
                diverged(format!("{what}: {want}"), format!("{what}: {got}"))
            }
        }
    }

    /// The overflow file read back through the files API, content and text (SL-7.2).
    async fn overflow_read_back(&mut self, i: usize, guest: &str, content: &str) -> Step {
        let read = self.store.read(&self.turns[i], guest).await;
        let text = self.store.read_text(&self.turns[i], guest).await;
        let faulty = self.faulty();
        match (read, text) {
            (Ok(b), Ok(Some(t))) if b == content.as_bytes() && t == content => Ok(()),
            (Err(ScopedError::Storage { .. }), _) | (_, Err(ScopedError::Storage { .. }))
                if faulty =>
            {
                self.note("failed: storage");
                Ok(())
            }
            (read, text) => diverged(
                format!(
                    "{guest} reads back as the tool result, text included: {:?}",
                    short(content)
                ),
                format!(
                    "{guest}: {:?}, text {:?}",
                    read.map(|b| short(&String::from_utf8_lossy(&b))),
                    text.map(|t| t.map(|t| short(&t)))
                ),
            ),
        }
    }
}

#[cfg(test)]
#[path = "policies_tests.rs"]
mod tests;

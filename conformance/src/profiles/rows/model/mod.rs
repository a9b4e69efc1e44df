//! The executable model of part SR: the rules as plain data in memory, written from SPEC.md
//! without the reference's code, answering every step of the rows vocabulary with the outcome
//! the SPEC predicts. `tests::every_scenario_is_predicted_by_the_model` plays every
//! `scenarios/rows/*.tdm` through it, so the scenarios, the model and (through
//! `rows_scenarios`) the reference agree. It is exploration's oracle too (`explore/run.rs`):
//! every outcome, and after every reap every row ([`Model::rows`]).

use std::collections::{BTreeMap, BTreeSet};

use tidemark_reference::clock::DAY_MS;
use tidemark_reference::rows::ExpiringStore;
use tidemark_reference::rows::ReapReport;

use super::runner::Outcome;
use super::script::{Action, Counted, Entry};

pub mod state;

/// The streamed kinds (SR-2.1), written out again rather than imported.
const STREAMED: [&str; 6] = [
    "chat.delta",
    "chat.reasoning",
    "chat.writing",
    "chat.tool",
    "chat.tool_result",
    "chat.steer",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Writing,
    Stopped,
    Finished { sealed: bool },
}

#[derive(Clone, Debug)]
struct Reply {
    session: String,
    state: State,
    text: Option<String>,
}

#[derive(Clone, Debug)]
struct Event {
    session: String,
    reply: Option<String>,
    kind: String,
    payload: String,
    /// When its day ends (SR-2.3, SR-2.4); `None` while its reply has not ended.
    forget_at: Option<i64>,
}

/// Every row the SR rules keep, by the scenario's names where the scenario names them.
#[derive(Clone, Debug, Default)]
pub struct Model {
    workspaces: BTreeSet<String>,
    sessions: BTreeMap<String, String>,
    prompts: Vec<String>,
    replies: BTreeMap<String, Reply>,
    /// Replies in the order they were started (SR-2.6).
    reply_order: Vec<String>,
    events: Vec<Event>,
    invocations: Vec<(String, i64)>,
    firings: Vec<i64>,
    /// Snapshots in taking order (SR-5.2).
    snapshots: Vec<String>,
    models: BTreeMap<String, String>,
    stores: BTreeMap<(&'static str, String), i64>,
    items: BTreeMap<String, (String, Option<i64>)>,
    held: Vec<(String, Option<String>)>,
    /// SR-2.1's variant `kind_check_order=target_first`: an event's session, or a streamed
    /// event's reply and its state, is checked before its kind.
    target_first: bool,
    /// SR-5.1's variant `unknown_model_drops=refused`.
    refuse_unknown_model_drops: bool,
}

/// A tick that died of the crash fault.
#[derive(Debug)]
struct Crashed;

/// A tick's batches: their size, and how many more that remove a row may commit before the
/// crash fault (none: no fault).
struct Budget {
    batch: usize,
    left: Option<u64>,
}

impl Budget {
    /// One sweep over `expired` (indexes, in the order its batches take them): the indexes its
    /// batches removed before the sweep ended or the fault struck, counted into `count`.
    fn take(&mut self, expired: Vec<usize>, count: &mut u64) -> Vec<usize> {
        let mut taken = Vec::new();
        for chunk in expired.chunks(self.batch) {
            if self.left == Some(0) {
                break;
            }
            taken.extend_from_slice(chunk);
            self.left = self.left.map(|l| l - 1);
        }
        *count = taken.len() as u64;
        taken
    }

    /// Whether the fault has struck: the last batch it allowed has committed.
    fn crashed(&self) -> Result<(), Crashed> {
        match self.left {
            Some(0) => Err(Crashed),
            _ => Ok(()),
        }
    }
}

/// The indexes of the expiries at or before `now`, earliest first, the first written among
/// equals.
fn by_expiry(expiries: impl Iterator<Item = i64>, now: i64) -> Vec<usize> {
    let mut v: Vec<(i64, usize)> = expiries
        .enumerate()
        .filter(|(_, at)| *at <= now)
        .map(|(i, at)| (at, i))
        .collect();
    v.sort();
    v.into_iter().map(|(_, i)| i).collect()
}

/// Removes the elements at `indexes` from `v`.
fn remove_at<T>(v: &mut Vec<T>, indexes: &[usize]) {
    let gone: BTreeSet<usize> = indexes.iter().copied().collect();
    let mut i = 0;
    v.retain(|_| {
        let keep = !gone.contains(&i);
        i += 1;
        keep
    });
}

fn refused(reason: &str) -> Outcome {
    Outcome::Refused {
        reason: reason.into(),
        message: "(the model)".into(),
    }
}

/// SR-2.1: dot-separated words of `[a-z0-9_]`, at least two, at most 64 bytes.
fn well_formed(kind: &str) -> bool {
    kind.len() <= 64
        && kind.split('.').count() >= 2
        && kind.split('.').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

impl Model {
    /// An empty model following the SPEC.md variants `declared` takes.
    pub fn taking(declared: &crate::variants::Declared) -> Model {
        use super::variants::takes;
        Model {
            target_first: takes(declared, "kind_check_order", "target_first"),
            refuse_unknown_model_drops: takes(declared, "unknown_model_drops", "refused"),
            ..Model::default()
        }
    }

    fn end_reply(&mut self, reply: &str, at: i64) {
        for e in self.events.iter_mut() {
            if e.reply.as_deref() == Some(reply) {
                e.forget_at = Some(at + DAY_MS);
            }
        }
    }

    fn replay(&self, reply: &str) -> String {
        self.events
            .iter()
            .filter(|e| e.reply.as_deref() == Some(reply) && e.kind == "chat.delta")
            .map(|e| e.payload.as_str())
            .collect()
    }

    fn drop_session(&mut self, s: &str) {
        self.sessions.remove(s);
        self.prompts.retain(|p| p != s);
        self.events.retain(|e| e.session != s);
        let gone: Vec<String> = self
            .replies
            .iter()
            .filter(|(_, r)| r.session == s)
            .map(|(n, _)| n.clone())
            .collect();
        for r in gone {
            self.replies.remove(&r);
            self.reply_order.retain(|o| *o != r);
        }
        self.invocations.retain(|(session, _)| session != s);
        self.held.retain(|(session, _)| session != s);
    }

    /// One step at `now` (milliseconds from the epoch).
    pub fn apply(&mut self, action: &Action, now: i64) -> Outcome {
        match action {
            Action::Advance(_) => Outcome::Ok,
            Action::Workspace(w) => {
                if !self.workspaces.insert(w.clone()) {
                    return refused("already_exists");
                }
                Outcome::Ok
            }
            Action::Session { session, workspace } => {
                if self.sessions.contains_key(session) {
                    refused("already_exists")
                } else if !self.workspaces.contains(workspace) {
                    refused("unknown_workspace")
                } else {
                    self.sessions.insert(session.clone(), workspace.clone());
                    Outcome::Ok
                }
            }
            Action::DeleteSession(s) => {
                if !self.sessions.contains_key(s) {
                    return refused("unknown_session");
                }
                self.drop_session(s);
                Outcome::Ok
            }
            Action::DeleteWorkspace(w) => {
                if !self.workspaces.remove(w) {
                    return refused("unknown_workspace");
                }
                let sessions: Vec<String> = self
                    .sessions
                    .iter()
                    .filter(|(_, ws)| *ws == w)
                    .map(|(s, _)| s.clone())
                    .collect();
                for s in sessions {
                    self.drop_session(&s);
                }
                let items: BTreeSet<String> = self
                    .items
                    .iter()
                    .filter(|(_, (ws, _))| ws == w)
                    .map(|(i, _)| i.clone())
                    .collect();
                self.items.retain(|i, _| !items.contains(i));
                self.held
                    .retain(|(_, item)| item.as_ref().is_none_or(|i| !items.contains(i)));
                Outcome::Ok
            }
            Action::StartReply { reply, session } => {
                if !self.sessions.contains_key(session) {
                    return refused("unknown_session");
                }
                self.replies.insert(
                    reply.clone(),
                    Reply {
                        session: session.clone(),
                        state: State::Writing,
                        text: None,
                    },
                );
                self.reply_order.push(reply.clone());
                Outcome::Ok
            }
            Action::Stream {
                reply,
                kind,
                payload,
            } => {
                let kind_ok = well_formed(kind) && STREAMED.contains(&kind.as_str());
                if !kind_ok && !self.target_first {
                    return refused("unknown_kind");
                }
                let Some(r) = self.replies.get(reply) else {
                    return refused("unknown_reply");
                };
                if r.state != State::Writing {
                    return refused("reply_state");
                }
                if !kind_ok {
                    return refused("unknown_kind");
                }
                self.events.push(Event {
                    session: r.session.clone(),
                    reply: Some(reply.clone()),
                    kind: kind.clone(),
                    payload: payload.clone(),
                    forget_at: None,
                });
                Outcome::Ok
            }
            Action::Finish { reply, text } => match self.replies.get_mut(reply) {
                None => refused("unknown_reply"),
                Some(r) if r.state != State::Writing => refused("reply_state"),
                Some(r) => {
                    r.state = State::Finished { sealed: false };
                    r.text = Some(text.clone());
                    self.end_reply(reply, now);
                    Outcome::Ok
                }
            },
            Action::Interrupt(reply) => match self.replies.get_mut(reply) {
                None => refused("unknown_reply"),
                Some(r) if r.state != State::Writing => refused("reply_state"),
                Some(r) => {
                    r.state = State::Stopped;
                    Outcome::Ok
                }
            },
            Action::Seal(reply) => {
                let text = self.replay(reply);
                match self.replies.get_mut(reply) {
                    None => refused("unknown_reply"),
                    Some(r) if matches!(r.state, State::Finished { .. }) => refused("reply_state"),
                    Some(r) => {
                        r.state = State::Finished { sealed: true };
                        r.text = Some(text);
                        self.end_reply(reply, now);
                        Outcome::Ok
                    }
                }
            }
            Action::DeleteReply(reply) => {
                if self.replies.remove(reply).is_none() {
                    return refused("unknown_reply");
                }
                self.reply_order.retain(|r| r != reply);
                // Its day runs from the deletion, or from its end if that came first (SR-2.4).
                for e in self.events.iter_mut() {
                    if e.reply.as_deref() == Some(reply.as_str()) {
                        e.forget_at = e.forget_at.or(Some(now + DAY_MS));
                    }
                }
                Outcome::Ok
            }
            Action::Event {
                session,
                kind,
                payload,
            } => {
                let kind_ok = well_formed(kind) && !STREAMED.contains(&kind.as_str());
                if !kind_ok && !self.target_first {
                    return refused("unknown_kind");
                }
                if !self.sessions.contains_key(session) {
                    return refused("unknown_session");
                }
                if !kind_ok {
                    return refused("unknown_kind");
                }
                self.events.push(Event {
                    session: session.clone(),
                    reply: None,
                    kind: kind.clone(),
                    payload: payload.clone(),
                    forget_at: None,
                });
                Outcome::Ok
            }
            Action::Prompt { session, .. } => {
                if !self.sessions.contains_key(session) {
                    return refused("unknown_session");
                }
                self.prompts.push(session.clone());
                Outcome::Ok
            }
            Action::Invoke { session } => {
                if !self.sessions.contains_key(session) {
                    return refused("unknown_session");
                }
                self.invocations.push((session.clone(), now + DAY_MS));
                Outcome::Ok
            }
            Action::Fire { .. } => {
                self.firings.push(now + 30 * DAY_MS);
                Outcome::Ok
            }
            Action::Snapshot(s) => {
                self.snapshots.push(s.clone());
                Outcome::Ok
            }
            Action::NameSnapshot { snapshot, model } => {
                if !self.snapshots.contains(snapshot) {
                    return refused("unknown_snapshot");
                }
                self.models.insert(model.clone(), snapshot.clone());
                Outcome::Ok
            }
            Action::DropModel(m) => {
                if self.models.remove(m).is_none() && self.refuse_unknown_model_drops {
                    return refused("unknown_model");
                }
                Outcome::Ok
            }
            Action::Item { item, workspace } => {
                if !self.workspaces.contains(workspace) {
                    return refused("unknown_workspace");
                }
                self.items.insert(item.clone(), (workspace.clone(), None));
                Outcome::Ok
            }
            Action::Settle(item) => match self.items.get_mut(item) {
                None => refused("unknown_item"),
                Some((_, settled)) => {
                    settled.get_or_insert(now);
                    Outcome::Ok
                }
            },
            Action::Hold { session, item, .. } => {
                if !self.sessions.contains_key(session) {
                    return refused("unknown_session");
                }
                if item.as_ref().is_some_and(|i| !self.items.contains_key(i)) {
                    return refused("unknown_item");
                }
                self.held.push((session.clone(), item.clone()));
                Outcome::Ok
            }
            Action::Keep { store, id, for_ms } => {
                self.stores
                    .insert((store.table(), id.clone()), now + for_ms);
                Outcome::Ok
            }
            Action::Reap => Outcome::Reaped(self.reap(now)),
            Action::ReapBatched { batch, crash_after } => {
                match self.reap_in_batches(now, *batch, *crash_after) {
                    Ok(report) => Outcome::Reaped(report),
                    Err(Crashed) => refused("database_unavailable"),
                }
            }
            Action::Transcript(s) => {
                if !self.sessions.contains_key(s) {
                    return refused("unknown_session");
                }
                Outcome::Transcript(
                    self.reply_order
                        .iter()
                        .filter(|r| self.replies.get(*r).is_some_and(|r| r.session == *s))
                        .map(|name| {
                            let r = &self.replies[name];
                            Entry {
                                reply: name.clone(),
                                state: match r.state {
                                    State::Writing => "writing",
                                    State::Stopped => "stopped",
                                    State::Finished { sealed: false } => "finished",
                                    State::Finished { sealed: true } => "sealed",
                                }
                                .into(),
                                text: r.text.clone().unwrap_or_else(|| self.replay(name)),
                            }
                        })
                        .collect(),
                )
            }
            Action::Snapshots => Outcome::Snapshots(self.snapshots.clone()),
            Action::Count(c) => Outcome::Count(self.count(c)),
        }
    }

    /// One tick (SR-7.2): each rule removes what it no longer keeps; SR-6's rows are untouched.
    fn reap(&mut self, now: i64) -> ReapReport {
        match self.reap_in_batches(now, i64::MAX, None) {
            Ok(r) => r,
            Err(Crashed) => unreachable!("a tick with no crash fault does not crash"),
        }
    }

    /// One tick whose sweeps delete `batch` rows a statement, each repeated until one comes
    /// back short (SR-7.3), the tick dying once `crash_after` statements that removed a row
    /// have run; what they removed stays removed (SR-7.4). Which of a sweep's expired rows a
    /// batch takes first is the implementation's: the model takes the earliest expiry first
    /// and the earliest written among equals, and the scenarios only count what a crashed tick
    /// left.
    fn reap_in_batches(
        &mut self,
        now: i64,
        batch: i64,
        crash_after: Option<u64>,
    ) -> Result<ReapReport, Crashed> {
        let mut r = ReapReport::default();
        let mut budget = Budget {
            batch: batch.max(1) as usize,
            left: crash_after,
        };
        if budget.left == Some(0) {
            return Err(Crashed);
        }
        // Each sweep's expired rows in the order its batches take them, as indexes.
        let mut order: Vec<(Option<i64>, usize)> = self
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.forget_at.is_some_and(|at| at <= now))
            .map(|(i, e)| (e.forget_at, i))
            .collect();
        order.sort();
        let gone = budget.take(
            order.into_iter().map(|(_, i)| i).collect(),
            &mut r.streamed_events,
        );
        remove_at(&mut self.events, &gone);
        budget.crashed()?;

        let gone = budget.take(
            by_expiry(self.invocations.iter().map(|(_, at)| *at), now),
            &mut r.tool_invocations,
        );
        remove_at(&mut self.invocations, &gone);
        budget.crashed()?;

        let gone = budget.take(
            by_expiry(self.firings.iter().copied(), now),
            &mut r.trigger_firings,
        );
        remove_at(&mut self.firings, &gone);
        budget.crashed()?;

        let named: BTreeSet<&String> = self.models.values().collect();
        let newest = self.snapshots.len().saturating_sub(3);
        let old: Vec<usize> = self
            .snapshots
            .iter()
            .enumerate()
            .filter(|(i, s)| *i < newest && !named.contains(s))
            .map(|(i, _)| i)
            .collect();
        let gone = budget.take(old, &mut r.catalog_snapshots);
        remove_at(&mut self.snapshots, &gone);
        budget.crashed()?;

        for store in ExpiringStore::ALL {
            let rows: Vec<((&'static str, String), i64)> = self
                .stores
                .iter()
                .filter(|((t, _), _)| *t == store.table())
                .map(|(k, at)| (k.clone(), *at))
                .collect();
            let taken = budget.take(
                by_expiry(rows.iter().map(|(_, at)| *at), now),
                match store {
                    ExpiringStore::LiveSessions => &mut r.live_sessions,
                    ExpiringStore::RefreshTokens => &mut r.refresh_tokens,
                    ExpiringStore::WebhookDeliveries => &mut r.webhook_deliveries,
                    ExpiringStore::BreakerSightings => &mut r.breaker_sightings,
                },
            );
            for i in taken {
                self.stores.remove(&rows[i].0);
            }
            budget.crashed()?;
        }
        Ok(r)
    }

    /// The rows the model holds of the tables `action` involves (every table for a reap, the
    /// clock or an action of no one table), each as `table: row`, tables in name order: what a
    /// person needs beside a divergence. `None` is the end of the sequence (every table).
    /// Built only when a step diverged.
    pub fn state_lines(&self, action: Option<&Action>) -> Vec<String> {
        self.rows_of(&action.map(tables_of).unwrap_or_default())
    }

    /// The rows the model holds of `tables` (every table when empty), as
    /// [`Model::state_lines`] words them.
    pub fn rows_of(&self, tables: &[&str]) -> Vec<String> {
        let rows = self.rows();
        let mut out = Vec::new();
        let mut empty = Vec::new();
        for (table, lines) in &rows.tables {
            if !tables.is_empty() && !tables.contains(&table.as_str()) {
                continue;
            }
            if lines.is_empty() {
                empty.push(table.as_str());
            }
            out.extend(lines.iter().map(|l| format!("{table}: {l}")));
        }
        if !empty.is_empty() {
            out.push(format!("no rows in {}", empty.join(", ")));
        }
        out
    }

    /// The sessions that exist, by name.
    pub fn sessions(&self) -> Vec<String> {
        self.sessions.keys().cloned().collect()
    }

    /// Every row the model holds, table by table, each as one line of
    /// [`state`]'s format, sorted: what the reference's tables must hold after a
    /// reap. Times are milliseconds from the epoch; replies are seen through the transcripts.
    pub fn rows(&self) -> state::State {
        use state::{line_event, line_expiring, State};
        let mut st = State::default();
        st.put("workspaces", self.workspaces.iter().cloned());
        st.put(
            "sessions",
            self.sessions.iter().map(|(s, w)| format!("{s} in {w}")),
        );
        st.put("session_prompts", self.prompts.iter().cloned());
        st.put("replies", self.replies.keys().map(|_| "a row".to_string()));
        st.put(
            "events",
            self.events.iter().map(|e| {
                line_event(
                    &e.session,
                    e.reply.as_deref(),
                    &e.kind,
                    &e.payload,
                    e.forget_at,
                )
            }),
        );
        st.put(
            "tool_invocations",
            self.invocations.iter().map(|(s, at)| line_expiring(s, *at)),
        );
        st.put(
            "trigger_firings",
            self.firings.iter().map(|at| line_expiring("firing", *at)),
        );
        st.put("catalog_snapshots", self.snapshots.iter().cloned());
        st.put(
            "models",
            self.models.iter().map(|(m, s)| format!("{m} -> {s}")),
        );
        for store in ExpiringStore::ALL {
            st.put(
                store.table(),
                self.stores
                    .iter()
                    .filter(|((t, _), _)| *t == store.table())
                    .map(|((_, id), at)| line_expiring(id, *at)),
            );
        }
        st.put(
            "action_items",
            self.items
                .iter()
                .map(|(i, (w, settled))| state::line_item(i, w, *settled)),
        );
        st.put(
            "held_requests",
            self.held
                .iter()
                .map(|(s, i)| format!("{s} for {}", i.as_deref().unwrap_or("-"))),
        );
        let mut model = self.clone();
        for s in self.sessions.keys() {
            if let Outcome::Transcript(t) = model.apply(&Action::Transcript(s.clone()), 0) {
                st.put_one(
                    "transcripts",
                    format!("{s}: {}", super::script::transcript_text(&t)),
                );
            }
        }
        st
    }

    fn count(&self, c: &Counted) -> i64 {
        let n = match c {
            Counted::StreamedOf(r) => self
                .events
                .iter()
                .filter(|e| e.reply.as_ref() == Some(r))
                .count(),
            Counted::EventsIn(s) => self.events.iter().filter(|e| e.session == *s).count(),
            Counted::Table(t) => match t.as_str() {
                "workspaces" => self.workspaces.len(),
                "sessions" => self.sessions.len(),
                "session_prompts" => self.prompts.len(),
                "replies" => self.replies.len(),
                "events" => self.events.len(),
                "tool_invocations" => self.invocations.len(),
                "trigger_firings" => self.firings.len(),
                "catalog_snapshots" => self.snapshots.len(),
                "models" => self.models.len(),
                "action_items" => self.items.len(),
                "held_requests" => self.held.len(),
                store => self.stores.keys().filter(|(t, _)| *t == store).count(),
            },
        };
        n as i64
    }
}

/// The tables an action reads or writes, by SR's table names; empty for one that involves every
/// table (a reap, the clock, a deletion that cascades).
fn tables_of(action: &Action) -> Vec<&'static str> {
    match action {
        Action::Workspace(_) | Action::DeleteWorkspace(_) => vec![],
        Action::Session { .. } => vec!["sessions"],
        Action::DeleteSession(_) => vec![],
        Action::StartReply { .. }
        | Action::Stream { .. }
        | Action::Finish { .. }
        | Action::Interrupt(_)
        | Action::Seal(_)
        | Action::DeleteReply(_)
        | Action::Transcript(_) => vec!["replies", "events"],
        Action::Event { .. } => vec!["events"],
        Action::Prompt { .. } => vec!["session_prompts"],
        Action::Invoke { .. } => vec!["tool_invocations"],
        Action::Fire { .. } => vec!["trigger_firings"],
        Action::Snapshot(_) | Action::NameSnapshot { .. } | Action::DropModel(_) => {
            vec!["catalog_snapshots", "models"]
        }
        Action::Item { .. } | Action::Settle(_) => vec!["action_items"],
        Action::Hold { .. } => vec!["held_requests"],
        Action::Keep { store, .. } => vec![store.table()],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::rows::{runner, script};

    /// Every rows scenario, played through the model, meets every expectation it states, for
    /// every variant's every choice (the model following the choice, the scenario played with
    /// the steps that choice keeps).
    #[test]
    fn every_scenario_is_predicted_by_the_model() {
        let root = crate::spec::repo_root();
        let rules = crate::spec::RuleIndex::load(&root.join("SPEC.md")).unwrap();
        let scripts = script::load_dir_with(&root.join("scenarios/rows"), rules.id_set()).unwrap();
        assert!(scripts.len() >= 13);
        let declarations = std::iter::once(crate::variants::Declared::defaults())
            .chain(crate::profiles::rows::variants::each_alternative());
        for declared in declarations {
            for s in &scripts {
                if s.skip_reason(&declared).is_none() {
                    predicted(&s.as_played_by(&declared), &declared);
                }
            }
        }
    }

    fn predicted(s: &script::Script, declared: &crate::variants::Declared) {
        {
            let mut model = Model::taking(declared);
            let mut now = 0i64;
            for step in &s.steps {
                if let Action::Advance(ms) = step.action {
                    now += ms;
                }
                let got = model.apply(&step.action, now);
                assert!(
                    runner::matches(&step.expect, &got),
                    "{}:{}: {}\n  expected: {}\n  the model, taking {declared}: {}",
                    s.file.display(),
                    step.line,
                    step.text,
                    step.expect.text(),
                    got.text()
                );
            }
        }
    }
}

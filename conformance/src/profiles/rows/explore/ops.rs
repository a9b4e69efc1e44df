//! A seed's operations for `tidemark explore --profile rows`: realistic sequences in the rows
//! vocabulary ([`Action`], the scenarios' own steps) and the reaper's faults, generated from one
//! seed by [`generate`], so a sequence is data that can be saved, replayed and shrunk.
//!
//! Why steps and not the contract's operations (`contract.rs`): those carry the ids an
//! implementation makes, which exist only once it has answered; a sequence names what it makes,
//! as a scenario does, and the runner turns each step into the contract's operation with the ids
//! learnt so far (`runner::perform`), the one path scenarios take to the endpoint. A saved
//! failure therefore means the same against any implementation.
//!
//! The generator keeps a rough picture of what it has made (which replies are being written,
//! which snapshots exist, when each row's clock runs out) so most operations are meaningful, and
//! some are not on purpose (a reply streamed into after it ended, a kind of the wrong shape, a
//! session deleted twice), for the refusals. Time moves in varied steps: minutes, hours, the
//! one-day and thirty-day rules' boundaries exactly and a millisecond either side, the expiry of
//! a row it wrote, backwards jumps, and the reaper down for a week (writes, no tick for seven
//! days, then one tick). The reaper's crash is an operation of its own ([`ExploreOp::CrashedReap`]).

use std::fmt;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tidemark_reference::clock::{DAY_MS, HOUR_MS, MINUTE_MS};
use tidemark_reference::rows::{ExpiringStore, TABLES};
use tidemark_sim::seed::MasterSeed;

use crate::profiles::rows::script::{Action, Counted};

/// The generator's version, saved with every failure: a seed names a workload only together
/// with it. A replay runs the saved operations and never regenerates.
/// Version 2 draws conversation kinds that look like streamed ones (`chat.title`,
/// `chat.deltas`, ...), aims advances a day after a reply's start and after each streamed event
/// (where a rule measured from the wrong instant strikes), deletes sessions three times as
/// often, and now and then stages an end's day at once: a finished reply withdrawn within its
/// day and the tick at its end (SR-2.4), a sealed reply's tick at its last event's day (SR-2.5).
/// Version 3 (two changes made side by side, each first called version 2): version 2's draws,
/// and a revocation keeps its row for `0ms` (expiring now), never for a negative time, which no
/// scenario may write (`keep … for -5d` is refused).
pub const GENERATOR_VERSION: u32 = 3;

/// Operations per seed unless a caller says otherwise.
pub const DEFAULT_STEPS: usize = 70;

/// One explored operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExploreOp {
    /// A step of the rows vocabulary (`scenarios/rows/README.md`); `advance` moves the clock
    /// (backwards when negative), `reap` is one full tick.
    Step(Action),
    /// The reaper's crash (SR-7.4): a tick that dies once `after` delete batches have
    /// committed, then the restarted reaper's full tick at the same `now`.
    CrashedReap { after: u64 },
}

/// The seed's batch size and operations: small batches, so a sweep takes several and a crash
/// can land between two of them.
pub fn generate(seed: u64, steps: usize) -> (i64, Vec<ExploreOp>) {
    let mut g = Gen::new(MasterSeed(seed).stream("rows-explore"));
    let batch = g.rng.gen_range(1..=3);
    g.setup();
    while g.ops.len() < steps {
        g.one();
    }
    g.ops.truncate(steps);
    (batch, g.ops)
}

const STREAMED: [&str; 6] = [
    "chat.delta",
    "chat.reasoning",
    "chat.writing",
    "chat.tool",
    "chat.tool_result",
    "chat.steer",
];

/// Conversation kinds: every other well-formed kind (SR-2.1), half of them looking like streamed
/// ones (a `chat.` prefix, a streamed kind with more after it, or the same words otherwise
/// joined), which the streamed rule must never touch (SR-2.7).
const CONVERSATION: [&str; 12] = [
    "turn.started",
    "user.message",
    "tool.approval_requested",
    "agent.handoff_v2",
    "billing.usage.tokens",
    "chat.title",
    "chat.deltas",
    "chat.delta.final",
    "chat.tool_result_v2",
    "chat.steering",
    "xchat.delta",
    "chat_delta.x",
];
const MALFORMED: [&str; 6] = [
    "chat",
    "Chat.Delta",
    "chat..delta",
    "chat.delta.",
    "chat-delta.x",
    // 65 bytes: one over the limit.
    "a.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
];

/// Payloads as agents send them: text, unicode of every width, control characters, JSON,
/// binary-looking escapes, the empty string. Never NUL: PostgreSQL's text cannot hold it.
const PAYLOADS: [&str; 14] = [
    "Hel",
    "lo, world",
    "",
    " ",
    "naïve café — ünïcödé",
    "日本語のテキスト",
    "🦀🚀 emoji 👩‍👩‍👧",
    "مرحبا بالعالم",
    "e\u{301} combining",
    "line one\nline two\r\n\ttabbed",
    "\u{1}\u{2}\u{7f}\u{1b}[31mbinary-ish\u{fffd}",
    "{\"tool\":\"search\",\"args\":{\"q\":\"rows\"}}",
    "\\x00\\xff quoted \"escapes\" \\",
    "QUJDREVGR0g=/+==",
];

const TRIGGERS: [&str; 3] = ["nightly-digest", "on-push", "cron.*/5"];
const MODELS: [&str; 3] = ["claude-sonnet", "gpt-4o-mini", "local.llama"];

/// A row whose clock the generator started, and when it runs out: the boundaries advances aim
/// at.
struct Gen {
    rng: ChaCha8Rng,
    ops: Vec<ExploreOp>,
    /// Milliseconds from the epoch.
    now: i64,
    workspaces: Vec<String>,
    sessions: Vec<(String, String)>,
    /// Replies made so far, with whether the generator believes they take events.
    replies: Vec<(String, bool)>,
    snapshots: Vec<String>,
    items: Vec<String>,
    requests: usize,
    store_ids: Vec<String>,
    boundaries: Vec<i64>,
    /// When each ended reply (finished or sealed) ended, by name.
    ended_at: std::collections::BTreeMap<String, i64>,
    /// When each reply's latest event was streamed, by name.
    last_event_at: std::collections::BTreeMap<String, i64>,
}

impl Gen {
    fn new(rng: ChaCha8Rng) -> Gen {
        let mut g = Gen {
            rng,
            ops: Vec::new(),
            now: 0,
            workspaces: Vec::new(),
            sessions: Vec::new(),
            replies: Vec::new(),
            snapshots: Vec::new(),
            items: Vec::new(),
            requests: 0,
            store_ids: Vec::new(),
            boundaries: Vec::new(),
            ended_at: Default::default(),
            last_event_at: Default::default(),
        };
        g.workspaces = (0..2).map(|_| g.uuid("ws")).collect();
        let sessions: Vec<String> = (0..4).map(|_| g.uuid("sess")).collect();
        for (i, s) in sessions.into_iter().enumerate() {
            let w = g.workspaces[i % 2].clone();
            g.sessions.push((s, w));
        }
        g.store_ids = (0..3).map(|_| g.uuid("tok")).collect();
        g
    }

    /// A UUID-shaped name from the seed, with a readable prefix.
    fn uuid(&mut self, prefix: &str) -> String {
        let b: [u8; 16] = self.rng.gen();
        let h = hex::encode(b);
        format!(
            "{prefix}-{}-{}-4{}-a{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[17..20],
            &h[20..32]
        )
    }

    fn push(&mut self, a: Action) {
        if let Action::Advance(ms) = a {
            self.now += ms;
        }
        self.ops.push(ExploreOp::Step(a));
    }

    fn setup(&mut self) {
        self.push(Action::Workspace(self.workspaces[0].clone()));
        if self.rng.gen_bool(0.7) {
            self.push(Action::Workspace(self.workspaces[1].clone()));
        }
        for i in 0..self.rng.gen_range(1..=3) {
            let (s, w) = self.sessions[i].clone();
            self.push(Action::Session {
                session: s,
                workspace: w,
            });
        }
    }

    fn pick<T: Clone>(&mut self, v: &[T]) -> Option<T> {
        v.choose(&mut self.rng).cloned()
    }

    fn session(&mut self) -> String {
        let i = self.rng.gen_range(0..self.sessions.len());
        self.sessions[i].0.clone()
    }

    fn workspace(&mut self) -> String {
        let i = self.rng.gen_range(0..self.workspaces.len());
        self.workspaces[i].clone()
    }

    /// A reply, mostly one the generator believes is being written.
    fn reply(&mut self, writing: bool) -> Option<String> {
        let live: Vec<String> = self
            .replies
            .iter()
            .filter(|(_, w)| *w == writing)
            .map(|(r, _)| r.clone())
            .collect();
        if !live.is_empty() && self.rng.gen_bool(0.85) {
            return self.pick(&live);
        }
        let all: Vec<String> = self.replies.iter().map(|(r, _)| r.clone()).collect();
        self.pick(&all)
    }

    fn end_reply(&mut self, r: &str) {
        for (name, w) in self.replies.iter_mut() {
            if name == r {
                *w = false;
            }
        }
    }

    fn payload(&mut self) -> String {
        let n = self.rng.gen_range(1..=2);
        (0..n)
            .map(|_| PAYLOADS[self.rng.gen_range(0..PAYLOADS.len())])
            .collect()
    }

    fn one(&mut self) {
        match self.rng.gen_range(0..154u32) {
            0..=3 => {
                let w = self.workspace();
                self.push(Action::Workspace(w));
            }
            4..=8 => {
                let i = self.rng.gen_range(0..self.sessions.len());
                let (session, workspace) = self.sessions[i].clone();
                self.push(Action::Session { session, workspace });
            }
            9..=20 => {
                let reply = format!("r{}", self.replies.len() + 1);
                let session = self.session();
                self.replies.push((reply.clone(), true));
                // A day from the start: where a rule measured from it, not from the end, strikes.
                self.boundaries.push(self.now + DAY_MS);
                self.push(Action::StartReply { reply, session });
            }
            21..=44 => {
                let Some(reply) = self.reply(true) else {
                    return;
                };
                let kind = match self.rng.gen_range(0..20) {
                    0..=9 => "chat.delta",
                    10 => CONVERSATION[self.rng.gen_range(0..CONVERSATION.len())],
                    11 => MALFORMED[self.rng.gen_range(0..MALFORMED.len())],
                    _ => STREAMED[self.rng.gen_range(1..STREAMED.len())],
                };
                let payload = self.payload();
                // A day from the event: where a rule measured from the events' ages strikes.
                self.boundaries.push(self.now + DAY_MS);
                self.last_event_at.insert(reply.clone(), self.now);
                self.push(Action::Stream {
                    reply,
                    kind: kind.into(),
                    payload,
                });
            }
            45..=50 => {
                let Some(reply) = self.reply(true) else {
                    return;
                };
                self.end_reply(&reply);
                let text = self.payload();
                self.boundaries.push(self.now + DAY_MS);
                self.ended_at.entry(reply.clone()).or_insert(self.now);
                let end = self.now;
                self.push(Action::Finish {
                    reply: reply.clone(),
                    text,
                });
                // Now and then the reply is withdrawn within its day, and the reaper ticks at
                // the day's end: the deletion must not restart the day (SR-2.4).
                if self.rng.gen_bool(0.2) {
                    let within = self.rng.gen_range(1..=20) * HOUR_MS;
                    self.push(Action::Advance(within));
                    self.ended_at.remove(&reply);
                    self.push(Action::DeleteReply(reply));
                    self.push(Action::Advance(end + DAY_MS - self.now));
                    self.push(Action::Reap);
                }
            }
            51..=56 => {
                let Some(reply) = self.reply(true) else {
                    return;
                };
                self.end_reply(&reply);
                self.push(Action::Interrupt(reply));
            }
            57..=62 => {
                let writing = self.rng.gen_bool(0.3);
                let Some(reply) = self.reply(writing) else {
                    return;
                };
                self.end_reply(&reply);
                self.boundaries.push(self.now + DAY_MS);
                self.ended_at.entry(reply.clone()).or_insert(self.now);
                let last = self.last_event_at.get(&reply).copied();
                self.push(Action::Seal(reply));
                // A sealed reply's day runs from the seal, not from its last event (SR-2.5):
                // half the time the reaper ticks at that event's day, or at once if it passed.
                if let Some(last) = last.filter(|l| *l < self.now && self.rng.gen_bool(0.5)) {
                    if last + DAY_MS > self.now {
                        self.push(Action::Advance(last + DAY_MS - self.now));
                    }
                    self.push(Action::Reap);
                }
            }
            63..=66 => {
                // Mostly a reply that ended earlier and is within its day, when there is one:
                // its deletion must not restart the day (SR-2.4).
                let recent: Vec<String> = self
                    .ended_at
                    .iter()
                    .filter(|(_, e)| **e < self.now && **e + DAY_MS > self.now)
                    .map(|(r, _)| r.clone())
                    .collect();
                let writing = self.rng.gen_bool(0.5);
                let reply = match self.pick(&recent) {
                    Some(r) if self.rng.gen_bool(0.6) => Some(r),
                    _ => self.reply(writing),
                };
                let Some(reply) = reply else {
                    return;
                };
                self.end_reply(&reply);
                self.boundaries.push(self.now + DAY_MS);
                let ended = self.ended_at.remove(&reply);
                self.push(Action::DeleteReply(reply));
                // A reply deleted after it ended keeps the day from its end (SR-2.4): half the
                // time, the clock goes straight to that day's end and the reaper ticks.
                if let Some(end) = ended.filter(|e| e + DAY_MS > self.now) {
                    if self.rng.gen_bool(0.5) {
                        self.push(Action::Advance(end + DAY_MS - self.now));
                        self.push(Action::Reap);
                    }
                }
            }
            67..=71 => {
                let session = self.session();
                let kind = match self.rng.gen_range(0..8) {
                    0 => STREAMED[self.rng.gen_range(0..STREAMED.len())],
                    1 => MALFORMED[self.rng.gen_range(0..MALFORMED.len())],
                    _ => CONVERSATION[self.rng.gen_range(0..CONVERSATION.len())],
                };
                let payload = self.payload();
                self.push(Action::Event {
                    session,
                    kind: kind.into(),
                    payload,
                });
            }
            72..=74 => {
                let session = self.session();
                let body = self.payload();
                self.push(Action::Prompt { session, body });
            }
            75..=80 => {
                let session = self.session();
                self.boundaries.push(self.now + DAY_MS);
                self.push(Action::Invoke { session });
            }
            81..=85 => {
                let trigger = self.pick(&TRIGGERS).unwrap_or_default().to_string();
                self.boundaries.push(self.now + DAY_MS);
                self.boundaries.push(self.now + 30 * DAY_MS);
                self.push(Action::Fire { trigger });
            }
            86..=92 => {
                let s = format!("s{}", self.snapshots.len() + 1);
                self.snapshots.push(s.clone());
                self.push(Action::Snapshot(s));
            }
            93..=97 => {
                let Some(snapshot) = self.snapshots.first().cloned() else {
                    return;
                };
                // Mostly an old one: the newest three are kept anyway.
                let snapshot = if self.rng.gen_bool(0.6) {
                    snapshot
                } else {
                    let all = self.snapshots.clone();
                    self.pick(&all).unwrap_or(snapshot)
                };
                let model = self.pick(&MODELS).unwrap_or_default().to_string();
                self.push(Action::NameSnapshot { snapshot, model });
            }
            98..=99 => {
                let model = self.pick(&MODELS).unwrap_or_default().to_string();
                self.push(Action::DropModel(model));
            }
            100..=102 => {
                let item = format!("i{}", self.items.len() + 1);
                self.items.push(item.clone());
                let workspace = self.workspace();
                self.push(Action::Item { item, workspace });
            }
            103..=105 => {
                let items = self.items.clone();
                let Some(item) = self.pick(&items) else {
                    return;
                };
                self.boundaries.push(self.now + 30 * DAY_MS);
                self.push(Action::Settle(item));
            }
            106..=109 => {
                self.requests += 1;
                let request = format!("h{}", self.requests);
                let session = self.session();
                let items = self.items.clone();
                let item = if self.rng.gen_bool(0.5) {
                    self.pick(&items)
                } else {
                    None
                };
                self.boundaries.push(self.now + DAY_MS);
                self.push(Action::Hold {
                    request,
                    session,
                    item,
                });
            }
            110..=118 => {
                let store = ExpiringStore::ALL[self.rng.gen_range(0..4)];
                let ids = self.store_ids.clone();
                let id = self.pick(&ids).unwrap_or_default();
                let for_ms = match self.rng.gen_range(0..6) {
                    0 => self.rng.gen_range(1..=MINUTE_MS),
                    1 => self.rng.gen_range(1..=DAY_MS),
                    2 => DAY_MS,
                    3 => self.rng.gen_range(1..=40) * HOUR_MS,
                    4 => self.rng.gen_range(1..=40) * DAY_MS,
                    // A revocation: expiring now. (Version 1 drew a time up to an hour back here;
                    // the draw is kept so every other operation of a seed stays the same.)
                    _ => {
                        let _ = self.rng.gen_range(0..=HOUR_MS);
                        0
                    }
                };
                self.boundaries.push(self.now + for_ms);
                self.push(Action::Keep { store, id, for_ms });
            }
            119..=131 => self.advance(),
            132..=140 => self.push(Action::Reap),
            141..=143 => {
                let after = self.rng.gen_range(0..=6);
                self.ops.push(ExploreOp::CrashedReap { after });
            }
            144 => self.reaper_down_for_a_week(),
            145..=146 => {
                let s = self.session();
                self.push(Action::Transcript(s));
            }
            147 => self.push(Action::Snapshots),
            148..=149 => {
                let c = match self.rng.gen_range(0..3) {
                    0 => Counted::Table(TABLES[self.rng.gen_range(0..TABLES.len())].into()),
                    1 => match self.reply(false) {
                        Some(r) => Counted::StreamedOf(r),
                        None => Counted::Table("events".into()),
                    },
                    _ => Counted::EventsIn(self.session()),
                };
                self.push(Action::Count(c));
            }
            150..=152 => {
                let s = self.session();
                self.push(Action::DeleteSession(s));
            }
            _ => {
                let w = self.workspace();
                self.push(Action::DeleteWorkspace(w));
            }
        }
    }

    /// The clock moves: a few minutes or hours, a rule's boundary exactly or a millisecond
    /// either side (from now, or the expiry of a row written earlier), or a backwards jump.
    /// Landing on a boundary is followed by a tick more often than not, so it is looked at.
    fn advance(&mut self) {
        let jitter = [-1, 0, 0, 1][self.rng.gen_range(0..4)];
        let ms = match self.rng.gen_range(0..10) {
            0 => self.rng.gen_range(1..=59) * MINUTE_MS,
            1 => self.rng.gen_range(1..=23) * HOUR_MS,
            2 | 3 => DAY_MS + jitter,
            4 => 30 * DAY_MS + jitter,
            5 => self.rng.gen_range(2..=12) * DAY_MS,
            6 | 7 => {
                let ahead: Vec<i64> = self
                    .boundaries
                    .iter()
                    .copied()
                    .filter(|b| *b > self.now)
                    .collect();
                match self.pick(&ahead) {
                    Some(b) => b - self.now + jitter,
                    None => DAY_MS + jitter,
                }
            }
            // A clock that jumps back (never before the epoch).
            _ => -self
                .rng
                .gen_range(HOUR_MS..=10 * DAY_MS)
                .min(self.now.max(0)),
        };
        if ms == 0 {
            return;
        }
        self.push(Action::Advance(ms));
        if jitter == 0 && self.rng.gen_bool(0.6) {
            self.push(Action::Reap);
        }
    }

    /// The reaper down for a week: the service keeps writing and the clock runs seven days with
    /// no tick, then one tick removes what expired meanwhile (SR-7.4).
    fn reaper_down_for_a_week(&mut self) {
        let mut left = 7 * DAY_MS;
        while left > 0 {
            let step = self.rng.gen_range(HOUR_MS..=3 * DAY_MS).min(left);
            self.push(Action::Advance(step));
            left -= step;
            for _ in 0..self.rng.gen_range(0..=2) {
                // Writes, but never a tick.
                let before = self.ops.len();
                self.one();
                let ticked = self.ops[before..].iter().any(|o| {
                    matches!(
                        o,
                        ExploreOp::CrashedReap { .. } | ExploreOp::Step(Action::Reap)
                    )
                });
                let moved: i64 = self.ops[before..]
                    .iter()
                    .map(|o| match o {
                        ExploreOp::Step(Action::Advance(ms)) => *ms,
                        _ => 0,
                    })
                    .sum();
                if ticked || moved != 0 {
                    self.now -= moved;
                    self.ops.truncate(before);
                }
            }
        }
        self.push(Action::Reap);
    }
}

/// A duration as the scenarios write it, with milliseconds when there are some.
pub fn duration_text(ms: i64) -> String {
    // Unsigned, so `i64::MIN` (a hostile saved failure's) is written, not negated past i64.
    let (sign, mut left) = if ms < 0 {
        ("-", ms.unsigned_abs())
    } else {
        ("", ms as u64)
    };
    let mut s = String::from(sign);
    for (unit, size) in [("d", DAY_MS), ("h", HOUR_MS), ("m", MINUTE_MS), ("s", 1000)] {
        let size = size as u64;
        if left >= size {
            s.push_str(&format!("{}{unit}", left / size));
            left %= size;
        }
    }
    if left > 0 || s.len() == sign.len() {
        s.push_str(&format!("{left}ms"));
    }
    s
}

/// A quoted string as the scenario lexer reads it (`\n`, `\t`, `\\`, `\"`, `\xNN`).
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An action as a step line of the rows vocabulary.
pub fn action_text(a: &Action) -> String {
    match a {
        Action::Advance(ms) => format!("advance {}", duration_text(*ms)),
        Action::Workspace(w) => format!("workspace {w}"),
        Action::Session { session, workspace } => format!("session {session} in {workspace}"),
        Action::DeleteSession(s) => format!("delete session {s}"),
        Action::DeleteWorkspace(w) => format!("delete workspace {w}"),
        Action::StartReply { reply, session } => format!("start reply {reply} in {session}"),
        Action::Stream {
            reply,
            kind,
            payload,
        } => format!("stream {reply} {kind} {}", quote(payload)),
        Action::Finish { reply, text } => format!("finish reply {reply} {}", quote(text)),
        Action::Interrupt(r) => format!("interrupt reply {r}"),
        Action::Seal(r) => format!("seal reply {r}"),
        Action::DeleteReply(r) => format!("delete reply {r}"),
        Action::Event {
            session,
            kind,
            payload,
        } => format!("event {session} {kind} {}", quote(payload)),
        Action::Prompt { session, body } => format!("prompt {session} {}", quote(body)),
        Action::Invoke { session } => format!("invoke tool in {session}"),
        Action::Fire { trigger } => format!("fire trigger {trigger}"),
        Action::Snapshot(s) => format!("snapshot {s}"),
        Action::NameSnapshot { snapshot, model } => {
            format!("name snapshot {snapshot} for model {model}")
        }
        Action::DropModel(m) => format!("drop model {m}"),
        Action::Item { item, workspace } => format!("item {item} in {workspace}"),
        Action::Settle(i) => format!("settle item {i}"),
        Action::Hold {
            request,
            session,
            item,
        } => match item {
            Some(i) => format!("hold request {request} in {session} for {i}"),
            None => format!("hold request {request} in {session}"),
        },
        Action::Keep { store, id, for_ms } => {
            format!("keep {} {id} for {}", store.table(), duration_text(*for_ms))
        }
        Action::Reap => "reap".into(),
        Action::ReapBatched { batch, crash_after } => match crash_after {
            Some(k) => format!("reap batch {batch} crash after {k} batches"),
            None => format!("reap batch {batch}"),
        },
        Action::Transcript(s) => format!("transcript {s}"),
        Action::Snapshots => "snapshots".into(),
        Action::Count(Counted::Table(t)) => format!("count {t}"),
        Action::Count(Counted::StreamedOf(r)) => format!("count streamed_events of {r}"),
        Action::Count(Counted::EventsIn(s)) => format!("count events in {s}"),
    }
}

impl fmt::Display for ExploreOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExploreOp::Step(a) => f.write_str(&action_text(a)),
            ExploreOp::CrashedReap { after } => {
                write!(f, "reap crashing after {after} batches, then reap again")
            }
        }
    }
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;

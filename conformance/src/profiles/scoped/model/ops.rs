//! The operations of a scoped model sequence, as data: each is self-contained (which session,
//! which path, which fault), so a sequence can be saved, replayed and shrunk by deleting steps.
//! Every operation is valid in every state: one that no longer applies (a deleted agent's
//! settings, a second deletion) is skipped by the runner, which is what lets a shrinker delete
//! any step.
//!
//! This file is the bottom of the model: every part's module uses it and it uses none of them
//! (`draw.rs` draws a sequence, `display.rs` writes an operation's line). A person's request
//! over HTTP ([`PeopleRequest`]) is data of [`ModelOp`], so it is here too, with its callers
//! and actions; `people_http.rs` draws and sends it.

use std::fmt;

use serde::{Deserialize, Serialize};
use tidemark_reference::scoped::Access;

use super::people_urls;
use crate::profiles::scoped::contract::ANONYMOUS;

/// Sessions of the sequence, by index: (agent, session) in workspace `w1`. The first
/// [`SETUP_SESSIONS`] are created at setup; the others (reached from generator 6 on) start at
/// the first operation that names them, so an agent's sessions are created at different times
/// and their activity comes out of creation order (SPEC SL-2.2).
pub const SESSIONS: [(&str, &str); 7] = [
    ("a1", "s1"),
    ("a1", "s2"),
    ("a2", "s1"),
    ("a2", "s2"),
    ("a1", "s3"),
    ("a2", "s3"),
    ("a1", "s4"),
];
/// How many of [`SESSIONS`] exist from setup on.
pub const SETUP_SESSIONS: usize = 4;
pub const AGENTS: [&str; 2] = ["a1", "a2"];

/// How the model's short names (`w1`, `a1`, `s1`) reach the store: version 1 of the generator
/// sent them as they are; versions 2 to 4 send a UUID for each short name, as real systems name
/// things, drawn by the seeded generator (see [`crate::profiles::scoped::uuid_ids`]), so two
/// agents' `s1` shared one; versions 5 and on give every session its own UUID, since the
/// people's files API names a session by its id alone (SF-2.2). Traces and divergences keep the
/// short names as labels; a fixture saved by an older version replays with that version's ids,
/// so its trace hash still holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdStyle {
    Short,
    Uuid,
    UniqueUuid,
}

/// The generator version of today's seeds.
pub const GENERATOR: u32 = 7;

/// Whether a sequence of generator `version` gives each operation (and each session created at
/// setup) a second of the clock of its own: from version 6, so no two sessions ever share a
/// last activity and a count policy's ranking never meets a tie, which SPEC SL-2.2 leaves to
/// the implementation. Older versions ran every operation between two advances at one instant,
/// and replay as they ran.
pub fn ticks(version: u32) -> bool {
    version >= 6
}

/// The only workspace the model uses, by its short name.
pub const WORKSPACE: &str = "w1";

impl IdStyle {
    /// The style a seed's workload runs with today.
    pub const CURRENT: IdStyle = IdStyle::UniqueUuid;

    /// The generator version a fixture records for this style.
    /// Version 3 is version 2 (UUIDs) with a workspace deleted beside published skills
    /// ([`ModelOp::WorkspaceBeside`]) in the mix; version 4 adds people's requests through the
    /// people's files API's door of the store ([`ModelOp::Person`], SPEC part SF); version 5
    /// sends them over HTTP instead ([`ModelOp::People`]) with every session its own UUID;
    /// version 6 adds retention policies (count policies, promotions, tool output: SPEC part
    /// SL), three sessions created when first used, and one second of the clock per operation
    /// ([`ticks`]); version 7 adds sessions' closes (SL-3), workspaces' own retention with
    /// the lifecycle configuration built from it (SL-5), one tool result handed in again
    /// (SL-7.1), a bound on a plain sweep's DeleteObjects (SL-1.2, `sweep_requests.rs`) and
    /// erasure obligations ([`ModelOp::Erase`], [`ModelOp::ErasureTouch`]: SPEC SL-4), two
    /// sweeps at once over closes ([`ModelOp::SweepsAtOnce`], SL-1.3) and a count set after a
    /// sweep emptied a newer session ([`ModelOp::EmptiedThenCount`], SL-2.1); a seed's
    /// workload is version 7's
    /// ([`GENERATOR`]). A style names the first version that used it.
    pub fn version(self) -> u32 {
        match self {
            IdStyle::Short => 1,
            IdStyle::Uuid => 4,
            IdStyle::UniqueUuid => 5,
        }
    }

    /// The style of a fixture's generator version, if known.
    pub fn of_version(v: u32) -> Option<IdStyle> {
        match v {
            1 => Some(IdStyle::Short),
            2..=4 => Some(IdStyle::Uuid),
            5..=GENERATOR => Some(IdStyle::UniqueUuid),
            _ => None,
        }
    }

    /// The identifier the store is given for a short name.
    pub fn id(self, short: &str) -> String {
        match self {
            IdStyle::Short => short.to_string(),
            IdStyle::Uuid | IdStyle::UniqueUuid => {
                crate::profiles::scoped::uuid_ids::uuid_for("scoped-model", short)
            }
        }
    }

    /// The identifier the store is given for `agent`'s session `session`.
    pub fn session_id(self, agent: &str, session: &str) -> String {
        match self {
            IdStyle::Short | IdStyle::Uuid => self.id(session),
            IdStyle::UniqueUuid => self.id(&format!("{agent}/{session}")),
        }
    }
}
pub const PATHS: [&str; 3] = ["notes.md", "dir/data.csv", "upload.pdf"];
/// The files of the one skill version published at setup, readable as `skill/kit/<file>`.
pub const SKILL_FILES: [(&str, &str); 2] = [("README.md", "how to price"), ("tool.py", "print(1)")];

/// One step. Indices are taken modulo their table, so any value is valid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ModelOp {
    /// A session-scope write (`agent_scope`: an agent-scope write). Content is `v<step>`.
    Write {
        session: u8,
        path: u8,
        agent_scope: bool,
    },
    Read {
        session: u8,
        path: u8,
        agent_scope: bool,
    },
    Activity {
        session: u8,
    },
    Wait {
        session: u8,
        kind: u8,
        id: u8,
        add: bool,
    },
    Advance {
        days: u8,
        hours: u8,
    },
    Sweep,
    List {
        session: u8,
    },
    Text {
        session: u8,
        path: u8,
    },
    /// A read that climbs out of the session scope: `dir/../../` or `%2e%2e/`.
    Traversal {
        session: u8,
        path: u8,
        encoded: bool,
    },
    /// A read with no scope in the path.
    MissingScope {
        session: u8,
        path: u8,
    },
    /// A single-file delete in session scope.
    Delete {
        session: u8,
        path: u8,
    },
    /// A write to the workspace scope, read-only by default.
    WorkspaceWrite {
        session: u8,
        path: u8,
    },
    /// Sets an agent's own layer of agent-scope access: 0 none, 1 read, 2 read-write.
    SetAgentAccess {
        agent: u8,
        access: u8,
    },
    ReadSkill {
        session: u8,
        file: u8,
    },
    /// Two workspaces beside the model's, the first's id a prefix of the second's, each given
    /// the model's skill version; then the first is deleted (SC-6.2). Once per sequence.
    WorkspaceBeside,
    /// A sweep during which each key of a DeleteObjects fails with `percent`% probability;
    /// then the store heals and sweeps again.
    FaultySweep {
        percent: u8,
    },
    /// A sweep that dies after deleting objects (`obligations`: in the obligations pass, else
    /// in the idle-session pass); a new process starts and sweeps at startup.
    CrashSweep {
        obligations: bool,
    },
    /// A session write issued while a sweep holds its candidates, before it deletes anything.
    WriteDuringSweep {
        session: u8,
        path: u8,
    },
    DeleteSession {
        session: u8,
    },
    DeleteAgent {
        agent: u8,
    },
    /// From here on each S3 request fails with `error_percent`% probability and each key of a
    /// DeleteObjects with `key_failure_percent`%; sweeps heal and sweep again to finish.
    StoreFaults {
        error_percent: u8,
        key_failure_percent: u8,
    },
    /// The store stops failing.
    Heal,
    /// The handed-in clock jumps back (an NTP step, a restored VM): activity never moves back.
    JumpBack {
        hours: u8,
    },
    /// A write (else a read) of a hostile spelling ([`super::hostile::SPELLINGS`]): refused with
    /// its reason, or a valid name treated as any other file.
    Hostile {
        session: u8,
        spelling: u8,
        write: bool,
    },
    /// A person's request through the people's files API's door of the store (SPEC part SF):
    /// `person` of [`PEOPLE`], `action` 0 upload, 1 download, 2 list, 3 remove, in `scope` 0
    /// session, 1 agent, 2 workspace (a download only: the model keeps no workspace files).
    /// Generator version 4 drew it; version 5 sends people's requests over HTTP instead
    /// ([`ModelOp::People`]), and this one stays so a version-4 sequence replays as it ran.
    Person {
        session: u8,
        person: u8,
        action: u8,
        path: u8,
        scope: u8,
    },
    /// A person's request over HTTP to the people's files API the reference serves on
    /// loopback (SPEC part SF, generator version 5): [`PeopleRequest`], sent by `people_http.rs`.
    People(PeopleRequest),
    /// Part SL's operations (generator 6), run by `policies.rs`. An agent's count policy
    /// (SL-2): keep its last `keep` sessions, `None` removes it; any integer is sent, so an
    /// absurd one's refusal is staged too (SL-1.4).
    SetCount {
        agent: u8,
        keep: Option<i64>,
    },
    /// Sets the agent layer's workspace access (SC-3.2), keeping its agent access: 0 none,
    /// 1 read, 2 read-write. A promotion to workspace scope needs read-write.
    SetWorkspaceAccess {
        agent: u8,
        access: u8,
    },
    /// A promotion (SL-6) of the session file `path` to the file `dest` of agent scope
    /// (`workspace` false) or workspace scope; `form` picks a well-formed request or one SPEC
    /// refuses for its shape (`policies::PromotionForm`).
    Promote {
        session: u8,
        path: u8,
        dest: u8,
        workspace: bool,
        form: u8,
    },
    /// A well-formed promotion issued while a sweep holds its candidates (SL-6.4).
    PromoteDuringSweep {
        session: u8,
        path: u8,
        dest: u8,
        workspace: bool,
    },
    /// A tool result handed to the store (SL-7): `size` 0 under `tool_output_limit_bytes`,
    /// 1 at it, 2 one byte over it, 3 far over it.
    ToolOutput {
        session: u8,
        size: u8,
    },
    /// A session's close (SL-3, generator 7, run by `close.rs`): the host closes it; with
    /// `again_after_hours` above 0 the clock moves on that many hours and the host closes it
    /// again, which keeps the first close (SL-3.2).
    Close {
        session: u8,
        again_after_hours: u8,
    },
    /// A workspace's retention put whole (SL-5.1, generator 7, run by
    /// `workspace_retention.rs`): `workspace` indexes its `WORKSPACES`, `ttl_days` is its own
    /// idle TTL (any integer, so SL-1.4's and SL-5.2's refusals are staged), `None` the
    /// deployment's again.
    SetRetention {
        workspace: u8,
        ttl_days: Option<i64>,
    },
    /// The lifecycle configuration built from every workspace's retention and put on the bucket
    /// with this session backstop (SL-5.3, SL-5.4), then read back.
    ApplyLifecycle {
        backstop_days: u16,
    },
    /// One tool result, the same every time, handed in again (SL-7.1, generator 7, run by
    /// `overflow_again.rs`); with `edit`, the guest first writes over the file it overflowed to
    /// last in this session.
    OverflowAgain {
        session: u8,
        edit: bool,
    },
    /// An erasure (SL-4, generator 7; run by `erasure.rs`) of one of the subjects outside the
    /// sessions above (`erasure::SUBJECTS`: two agents of the model's workspace and a workspace
    /// of its own), set up with files first unless it exists; `deadline` picks one of
    /// `erasure::DEADLINES` (past ones refused, SL-1.4), and `then` what follows at once
    /// (`erasure::Then`: nothing, a sweep crashing between its batch and its record, or the
    /// sweeper down past the deadline while keys fail or the backstop runs).
    Erase {
        subject: u8,
        deadline: u8,
        then: u8,
    },
    /// Something done to an erasure's subject (SL-4.6, SL-4.7): `action` 0 a turn's write
    /// into its session, 1 creating it again, 2 reading its obligations and proofs.
    ErasureTouch {
        subject: u8,
        action: u8,
    },
    /// Closes the sessions of the mask `sessions` (bit `i`: [`SESSIONS`]`[i]`), sweeps a
    /// millisecond before their grace ends, then runs two sweeps at once as their grace ends
    /// (SL-1.3, generator 7; run by `two_sweeps.rs`).
    SweepsAtOnce {
        sessions: u8,
    },
    /// An agent's kept session of rank `rank` (newest first, never the oldest) closed and swept
    /// empty `hours` past its grace, then the agent's count set to its kept sessions less
    /// `lower` and a sweep (SL-2.1, generator 7; run by `emptied_count.rs`).
    EmptiedThenCount {
        agent: u8,
        rank: u8,
        lower: u8,
        hours: u8,
    },
}

impl ModelOp {
    /// The session (an index into [`SESSIONS`]) the operation acts for, if one.
    pub fn session_touched(&self) -> Option<usize> {
        match *self {
            ModelOp::Write { session: s, .. }
            | ModelOp::Read { session: s, .. }
            | ModelOp::Activity { session: s }
            | ModelOp::Wait { session: s, .. }
            | ModelOp::List { session: s }
            | ModelOp::Text { session: s, .. }
            | ModelOp::Traversal { session: s, .. }
            | ModelOp::MissingScope { session: s, .. }
            | ModelOp::Delete { session: s, .. }
            | ModelOp::WorkspaceWrite { session: s, .. }
            | ModelOp::ReadSkill { session: s, .. }
            | ModelOp::WriteDuringSweep { session: s, .. }
            | ModelOp::DeleteSession { session: s }
            | ModelOp::Hostile { session: s, .. }
            | ModelOp::Person { session: s, .. }
            | ModelOp::Promote { session: s, .. }
            | ModelOp::PromoteDuringSweep { session: s, .. }
            | ModelOp::ToolOutput { session: s, .. }
            | ModelOp::Close { session: s, .. }
            | ModelOp::OverflowAgain { session: s, .. } => Some(session(s)),
            ModelOp::People(ref r) => Some(session(r.session)),
            _ => None,
        }
    }

    /// The agent the operation acts for: its session's, or the one it names.
    pub fn agent_touched(&self) -> Option<&'static str> {
        match *self {
            ModelOp::SetAgentAccess { agent: a, .. }
            | ModelOp::DeleteAgent { agent: a }
            | ModelOp::SetCount { agent: a, .. }
            | ModelOp::SetWorkspaceAccess { agent: a, .. }
            | ModelOp::EmptiedThenCount { agent: a, .. } => Some(agent(a)),
            _ => self.session_touched().map(|i| SESSIONS[i].0),
        }
    }
}

/// The people of a sequence (version 4 and 5): name, whether they are in every session's conversation,
/// their `agent_files` and `workspace_files` authorities, and whether they belong to another
/// workspace (`w9`, which the model never creates: every session is unknown to them, SF-2.2).
pub const PEOPLE: [(&str, bool, Access, Access, bool); 4] = [
    ("member", true, Access::None, Access::None, false),
    (
        "steward",
        false,
        Access::ReadWrite,
        Access::ReadWrite,
        false,
    ),
    ("reader", false, Access::Read, Access::None, false),
    ("outsider", true, Access::ReadWrite, Access::ReadWrite, true),
];

pub const PERSON_ACTIONS: [&str; 4] = ["upload", "download", "list", "remove"];
pub const PERSON_SCOPES: [&str; 3] = ["session", "agent", "workspace"];

pub fn session(i: u8) -> usize {
    i as usize % SESSIONS.len()
}

pub fn path(i: u8) -> &'static str {
    PATHS[i as usize % PATHS.len()]
}

pub fn agent(i: u8) -> &'static str {
    AGENTS[i as usize % AGENTS.len()]
}

pub const ACCESS_NAMES: [&str; 3] = ["none", "read", "read-write"];
pub const WAIT_NAMES: [&str; 3] = ["queued", "parked", "waiting"];

/// The guest path of a traversal attempt at `path(p)` in the agent scope.
pub fn traversal(p: u8, encoded: bool) -> String {
    if encoded {
        format!("session/%2e%2e/agent/{}", path(p))
    } else {
        format!("session/dir/../../agent/{}", path(p))
    }
}

// A person's request over HTTP (SPEC part SF, generator version 5) as data.

/// A caller whose token the API never minted: a well-formed bearer token of the reference's
/// shape, from no deployment (SF-2.1).
pub(super) const FORGER: &str = "forger";
pub(super) const FORGED_TOKEN: &str =
    "Bearer tdm_0000000000000000000000000000000000000000000000000000000000000000";

/// Who sends a request: the people of [`PEOPLE`] by name, then a caller without credentials
/// and one with a forged token.
pub const CALLERS: [&str; 6] = ["member", "steward", "reader", "outsider", ANONYMOUS, FORGER];

/// What a request does: `upload scopes` is the listing read for its `writable` (SF-2.7).
pub const ACTIONS: [&str; 5] = ["upload", "download", "list", "remove", "upload scopes"];
pub(super) const UPLOAD: u8 = 0;
pub(super) const DOWNLOAD: u8 = 1;
pub(super) const LIST: u8 = 2;
pub(super) const REMOVE: u8 = 3;
pub(super) const MEMBER: u8 = 0;

/// Which session a request's URL names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Addressed {
    /// The operation's session.
    #[default]
    Session,
    /// A UUID no workspace has (SF-2.2: `unknown_entity`, once the credentials pass).
    Unknown,
    /// The operation's session id with `.1` after it: outside SC-1.3's alphabet (`invalid_id`).
    Dotted,
}

/// An upload's body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Body {
    /// A few bytes naming the step.
    #[default]
    Small,
    /// Exactly [`MAX_UPLOAD_BYTES`]: stored (SF-4.3).
    AtLimit,
    /// One byte more: `too_large`, nothing written (SF-4.3).
    OverLimit,
}

/// What happens just before the request: the clock moves `idle_days` on, and a sweep runs while
/// `key_failure_percent`% of the keys it deletes fail, so a session it found expired is left
/// unfinished (SC-5.5); after the request the store heals and sweeps, and the bucket and the
/// ledger are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptedSweep {
    pub idle_days: u8,
    pub key_failure_percent: u8,
}

/// One person's request, as data (any value of any field is valid).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeopleRequest {
    /// The session, an index into [`SESSIONS`].
    pub session: u8,
    /// An index into [`CALLERS`].
    pub caller: u8,
    /// An index into [`ACTIONS`].
    pub action: u8,
    /// `{scope}` of a plain URL: a download reaches any of the three scopes, an upload or a
    /// removal session or agent scope (the workspace's files are the agents': promoted, or
    /// written where an agent's layer opened the scope).
    pub scope: u8,
    /// The file of a plain URL, an index into the model's paths.
    pub path: u8,
    /// The URL's file part is this spelling of [`people_urls`] instead of `{scope}/{path}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spelling: Option<u8>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub addressed: Addressed,
    #[serde(default, skip_serializing_if = "is_default")]
    pub body: Body,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_interrupted_sweep: Option<InterruptedSweep>,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl PeopleRequest {
    pub(super) fn caller(&self) -> &'static str {
        CALLERS[self.caller as usize % CALLERS.len()]
    }

    pub(super) fn action(&self) -> u8 {
        self.action % ACTIONS.len() as u8
    }

    /// `{scope}` of a plain URL.
    pub(super) fn scope(&self) -> &'static str {
        match self.action() {
            DOWNLOAD => PERSON_SCOPES[self.scope as usize % 3],
            _ => PERSON_SCOPES[self.scope as usize % 2],
        }
    }

    /// The operation's name and the SPEC rule deciding its outcome: a divergence's signature
    /// and what `--coverage` counts.
    pub fn operation(&self) -> (&'static str, &'static str) {
        if self.after_interrupted_sweep.is_some() {
            return ("a person's request after an interrupted sweep", "SF-4.1");
        }
        match (self.caller(), self.addressed) {
            (ANONYMOUS | FORGER, _) => return ("a person's request without credentials", "SF-2.1"),
            (_, Addressed::Dotted) => return ("a person's request naming an invalid id", "SC-1.3"),
            (_, Addressed::Unknown) | ("outsider", _) => {
                return ("a person's request to a session not theirs", "SF-2.2")
            }
            _ => {}
        }
        match (self.action(), self.spelling, self.body) {
            (LIST, _, _) => ("a person's listing", "SF-2.6"),
            (4, _, _) => ("a person's upload scopes", "SF-2.7"),
            (_, Some(k), _) => ("a person's URL spelling", people_urls::rule(k)),
            (UPLOAD, None, Body::Small) => ("a person's upload", "SF-1.3"),
            (UPLOAD, None, _) => ("a person's upload at the size limit", "SF-4.3"),
            (DOWNLOAD, None, _) => ("a person's download", "SF-1.4"),
            _ => ("a person's removal", "SF-4.4"),
        }
    }
}

impl PeopleRequest {
    /// A rule every sending of this request decides besides [`Self::operation`]'s: SF-2.3 for
    /// a credentialed person's request for a file of a session of their own workspace (by a
    /// name SPEC accepts), whose access their own authorities decide.
    pub fn also_decides(&self) -> Option<&'static str> {
        let own = matches!(self.caller(), "member" | "steward" | "reader")
            && self.addressed == Addressed::Session
            && self.after_interrupted_sweep.is_none();
        // A file's request whose URL SPEC refuses for its shape never reaches the access.
        let file = !matches!(self.action(), LIST | 4)
            && self.spelling.is_none_or(people_urls::names_a_file);
        (own && file && self.operation().1 != "SF-2.3").then_some("SF-2.3")
    }
}

impl fmt::Display for PeopleRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.after_interrupted_sweep {
            if s.idle_days > 0 {
                write!(f, "advance {}d, ", s.idle_days)?;
            }
            write!(
                f,
                "sweep with {}% of deleted keys failing, then: ",
                s.key_failure_percent
            )?;
        }
        let (a, s) = SESSIONS[session(self.session)];
        let place = match self.addressed {
            Addressed::Session => format!("{a}/{s}"),
            Addressed::Unknown => "a session no workspace has".to_string(),
            Addressed::Dotted => format!("{a}/{s}'s id with `.1` after it"),
        };
        let caller = self.caller();
        match self.action() {
            LIST => write!(f, "{caller} lists {place}'s files over HTTP")?,
            4 => write!(
                f,
                "{caller} asks which scopes of {place} they may upload to over HTTP"
            )?,
            action => {
                let target = match self.spelling {
                    Some(k) => people_urls::shown(k),
                    None => format!("{}/{}", self.scope(), path(self.path)),
                };
                write!(
                    f,
                    "{caller} {}s {target} in {place} over HTTP",
                    ACTIONS[action as usize]
                )?;
                match (action, self.body) {
                    (UPLOAD, Body::AtLimit) => write!(f, ", a body of exactly the limit")?,
                    (UPLOAD, Body::OverLimit) => write!(f, ", a body one byte over the limit")?,
                    _ => {}
                }
            }
        }
        if self.after_interrupted_sweep.is_some() {
            write!(f, "; the store heals and sweeps")?;
        }
        Ok(())
    }
}

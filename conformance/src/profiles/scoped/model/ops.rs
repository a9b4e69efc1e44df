//! The operations of a scoped model sequence, as data: each is self-contained (which session,
//! which path, which fault), so a sequence can be saved, replayed and shrunk by deleting steps.
//! Every operation is valid in every state: one that no longer applies (a deleted agent's
//! settings, a second deletion) is skipped by the runner, which is what lets a shrinker delete
//! any step.

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tidemark_reference::scoped::Access;

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
    /// loopback (SPEC part SF, generator version 5): [`super::people_http::PeopleRequest`].
    People(super::people_http::PeopleRequest),
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

fn who(i: u8) -> String {
    let (a, s) = SESSIONS[session(i)];
    format!("{a}/{s}")
}

pub const ACCESS_NAMES: [&str; 3] = ["none", "read", "read-write"];
pub const WAIT_NAMES: [&str; 3] = ["queued", "parked", "waiting"];

impl fmt::Display for ModelOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = |agent: &bool| if *agent { "agent" } else { "session" };
        match self {
            ModelOp::Write {
                session,
                path: p,
                agent_scope,
            } => write!(
                f,
                "{} write {}/{}",
                who(*session),
                scope(agent_scope),
                path(*p)
            ),
            ModelOp::Read {
                session,
                path: p,
                agent_scope,
            } => write!(
                f,
                "{} read {}/{}",
                who(*session),
                scope(agent_scope),
                path(*p)
            ),
            ModelOp::Activity { session } => write!(f, "{} activity", who(*session)),
            ModelOp::Wait {
                session,
                kind,
                id,
                add,
            } => write!(
                f,
                "{} {} wait {} w{}",
                who(*session),
                if *add { "add" } else { "remove" },
                WAIT_NAMES[*kind as usize % 3],
                id % 2
            ),
            ModelOp::Advance { days, hours } => write!(f, "advance {days}d{hours}h"),
            ModelOp::Sweep => write!(f, "sweep"),
            ModelOp::List { session } => write!(f, "{} list", who(*session)),
            ModelOp::Text { session, path: p } => {
                write!(f, "{} text session/{}", who(*session), path(*p))
            }
            ModelOp::Traversal {
                session,
                path: p,
                encoded,
            } => write!(f, "{} read {}", who(*session), traversal(*p, *encoded)),
            ModelOp::MissingScope { session, path: p } => {
                write!(f, "{} read {}", who(*session), path(*p))
            }
            ModelOp::Delete { session, path: p } => {
                write!(f, "{} delete session/{}", who(*session), path(*p))
            }
            ModelOp::WorkspaceWrite { session, path: p } => {
                write!(f, "{} write workspace/{}", who(*session), path(*p))
            }
            ModelOp::SetAgentAccess { agent: a, access } => write!(
                f,
                "agent {} sets agent access {}",
                agent(*a),
                ACCESS_NAMES[*access as usize % 3]
            ),
            ModelOp::WorkspaceBeside => write!(
                f,
                "publish the skill in workspaces w1-n and w1-n2, then delete workspace w1-n"
            ),
            ModelOp::ReadSkill { session, file } => write!(
                f,
                "{} read skill/kit/{}",
                who(*session),
                SKILL_FILES[*file as usize % SKILL_FILES.len()].0
            ),
            ModelOp::FaultySweep { percent } => {
                write!(
                    f,
                    "sweep with {percent}% of deleted keys failing, heal, sweep"
                )
            }
            ModelOp::CrashSweep { obligations } => write!(
                f,
                "sweep crashing after deleting {} objects, restart, sweep",
                if *obligations {
                    "obligation"
                } else {
                    "session"
                }
            ),
            ModelOp::WriteDuringSweep { session, path: p } => write!(
                f,
                "{} write session/{} while a sweep holds its candidates",
                who(*session),
                path(*p)
            ),
            ModelOp::DeleteSession { session } => write!(f, "{} delete session", who(*session)),
            ModelOp::DeleteAgent { agent: a } => write!(f, "delete agent {}", agent(*a)),
            ModelOp::StoreFaults {
                error_percent,
                key_failure_percent,
            } => write!(
                f,
                "store faults: {error_percent}% of requests, {key_failure_percent}% of deleted keys"
            ),
            ModelOp::Heal => write!(f, "store heals"),
            ModelOp::JumpBack { hours } => write!(f, "clock jumps back {hours}h"),
            ModelOp::Person {
                session,
                person,
                action,
                path: p,
                scope,
            } => {
                let action = PERSON_ACTIONS[*action as usize % 4];
                let who_asks = PEOPLE[*person as usize % PEOPLE.len()].0;
                if action == "list" {
                    write!(f, "{who_asks} lists {}'s files", who(*session))
                } else {
                    write!(
                        f,
                        "{who_asks} {action}s {}/{} in {}",
                        PERSON_SCOPES[*scope as usize % 3],
                        path(*p),
                        who(*session)
                    )
                }
            }
            ModelOp::SetCount { .. }
            | ModelOp::SetWorkspaceAccess { .. }
            | ModelOp::Promote { .. }
            | ModelOp::PromoteDuringSweep { .. }
            | ModelOp::ToolOutput { .. } => super::policies::describe(self, f),
            ModelOp::Close { .. } => super::close::describe(self, f),
            ModelOp::OverflowAgain { .. } => super::overflow_again::describe(self, f),
            ModelOp::SetRetention { .. } | ModelOp::ApplyLifecycle { .. } => {
                super::workspace_retention::describe(self, f)
            }
            ModelOp::Erase { .. } | ModelOp::ErasureTouch { .. } => {
                super::erasure::describe(self, f)
            }
            ModelOp::SweepsAtOnce { .. } => super::two_sweeps::describe(self, f),
            ModelOp::EmptiedThenCount { .. } => super::emptied_count::describe(self, f),
            ModelOp::People(r) => r.fmt(f),
            ModelOp::Hostile {
                session,
                spelling,
                write,
            } => write!(
                f,
                "{} {} a hostile path: {}",
                who(*session),
                if *write { "write" } else { "read" },
                super::hostile::spelling(*spelling).what
            ),
        }
    }
}

/// The guest path of a traversal attempt at `path(p)` in the agent scope.
pub fn traversal(p: u8, encoded: bool) -> String {
    if encoded {
        format!("session/%2e%2e/agent/{}", path(p))
    } else {
        format!("session/dir/../../agent/{}", path(p))
    }
}

/// The `steps` operations of `seed`. The mix (out of 140): write 25 (agent scope 2 more),
/// read 18, activity 10, wait 10, advance 15 (one in five 30–60 days, else 0–19 days), sweep 17, list 4, text 2, traversal 2, missing
/// scope 1, single delete 1, workspace write 1, agent access 4, agent-scope read 3, skill read 2,
/// faulty sweep 2, crashing sweep 2, write during a sweep 5, session deletion 5, agent deletion 1,
/// store faults 3 (requests 5–20%, keys 10–40%), heal 3, clock jump back 4 (1–48 hours),
/// hostile spelling 7 (half writes), a workspace deleted beside published skills 1, a person's
/// request over HTTP 40 ([`super::people_http::draw`]), part SL's operations 30
/// ([`super::policies::one`]), and from generator 6 five more writes during a sweep, five more
/// sweeps, four more text reads and two more deletions (out of 236 in all); generator 7 adds
/// sessions' closes 16 ([`super::close::one`]) and workspaces' retention with lifecycle
/// configurations 28 ([`super::workspace_retention::one`]) and a tool result handed in again 8
/// ([`super::overflow_again::one`]), and ten more people's requests, one more agent access,
/// eight more of part SL's operations and one more faulty sweep, so what generator 6 drew keeps
/// its share of the mix, erasures 20 ([`super::erasure::one`]), two sweeps at once over
/// closes 6 ([`super::two_sweeps::one`]) and a count set after a sweep emptied a newer
/// session 6 ([`super::emptied_count::one`]; out of 340 in all).
pub fn generate(seed: u64, steps: usize) -> Vec<ModelOp> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..steps).map(|_| one(&mut rng)).collect()
}

fn one(rng: &mut ChaCha8Rng) -> ModelOp {
    // Three operations in four go to the sessions of setup, so each keeps enough files and
    // activity for the races and sweeps the generator is for; the fourth to any session.
    let session = if rng.gen_bool(0.75) {
        rng.gen_range(0..SETUP_SESSIONS as u8)
    } else {
        rng.gen_range(0..SESSIONS.len() as u8)
    };
    let p = rng.gen_range(0..PATHS.len() as u8);
    match rng.gen_range(0..340u32) {
        0..=24 => ModelOp::Write {
            session,
            path: p,
            agent_scope: false,
        },
        25..=42 => ModelOp::Read {
            session,
            path: p,
            agent_scope: false,
        },
        45..=54 => ModelOp::Activity { session },
        55..=64 => ModelOp::Wait {
            session,
            kind: rng.gen_range(0..3),
            id: rng.gen_range(0..2),
            add: rng.gen_bool(0.5),
        },
        65..=79 => ModelOp::Advance {
            // One advance in five is the sweeper down for longer than the retention period.
            days: if rng.gen_bool(0.2) {
                rng.gen_range(30..=60)
            } else {
                rng.gen_range(0..20)
            },
            hours: rng.gen_range(0..24),
        },
        80..=96 | 225..=229 => ModelOp::Sweep,
        97..=98 => ModelOp::Write {
            session,
            path: p,
            agent_scope: true,
        },
        99..=100 => ModelOp::List { session },
        101..=102 | 230..=233 => ModelOp::Text { session, path: p },
        103..=104 => ModelOp::Traversal {
            session,
            path: p,
            encoded: rng.gen_bool(0.5),
        },
        105 => ModelOp::MissingScope { session, path: p },
        106 | 234..=235 => ModelOp::Delete { session, path: p },
        107 => ModelOp::WorkspaceWrite { session, path: p },
        108..=111 | 298 => ModelOp::SetAgentAccess {
            agent: rng.gen_range(0..AGENTS.len() as u8),
            access: rng.gen_range(0..3),
        },
        112..=114 => ModelOp::Read {
            session,
            path: p,
            agent_scope: true,
        },
        115..=116 => ModelOp::ReadSkill {
            session,
            file: rng.gen_range(0..SKILL_FILES.len() as u8),
        },
        117..=118 | 307 => ModelOp::FaultySweep {
            percent: rng.gen_range(20..80),
        },
        119..=120 => ModelOp::CrashSweep {
            obligations: rng.gen_bool(0.5),
        },
        43..=44 | 121..=123 | 220..=224 => ModelOp::WriteDuringSweep { session, path: p },
        124..=128 => ModelOp::DeleteSession { session },
        129 => ModelOp::DeleteAgent {
            agent: rng.gen_range(0..AGENTS.len() as u8),
        },
        130..=132 => ModelOp::StoreFaults {
            error_percent: rng.gen_range(5..=20),
            key_failure_percent: rng.gen_range(10..=40),
        },
        133..=135 => ModelOp::Heal,
        136..=139 => ModelOp::JumpBack {
            hours: rng.gen_range(1..=48),
        },
        147 => ModelOp::WorkspaceBeside,
        148..=149 => ModelOp::List { session },
        150..=189 | 288..=297 => super::people_http::draw(rng, session, p),
        190..=219 | 299..=306 => super::policies::one(rng, session, p),
        236..=251 => super::close::one(rng),
        252..=279 => super::workspace_retention::one(rng),
        280..=287 => super::overflow_again::one(rng),
        308..=327 => super::erasure::one(rng),
        328..=333 => super::two_sweeps::one(rng),
        334..=339 => super::emptied_count::one(rng),
        _ => ModelOp::Hostile {
            session,
            spelling: rng.gen_range(0..super::hostile::SPELLINGS.len() as u8),
            write: rng.gen_bool(0.5),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_means_one_sequence_and_operations_round_trip_through_json() {
        let a = generate(7, 80);
        assert_eq!(a, generate(7, 80));
        assert_ne!(a, generate(8, 80));
        let json = serde_json::to_string(&a).unwrap();
        let back: Vec<ModelOp> = serde_json::from_str(&json).unwrap();
        assert_eq!(a, back);
    }
}

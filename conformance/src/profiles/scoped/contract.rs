//! The scoped profile's contract: the operations a scenario step performs and the outcomes it
//! answers, as data ([`ScopedOp`], [`ScopedOutcome`], [`Turn`], a person's [`PeopleCall`]), and
//! who performs each when the implementation is another process ([`side`]: PROTOCOL.md's split,
//! with the capabilities a step needs). The reference in process (`reference.rs`), a program
//! over the protocol (`process/`), the model and the world all speak these.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tidemark_reference::scoped::Access;
use tidemark_sim::real_tier::faults::Throttle;

/// Who is calling: a turn in workspace/agent/session, with the skills it was sent by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    pub workspace: String,
    pub agent: String,
    pub session: String,
    /// slug -> the name a skill version was published under in this scenario.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: BTreeMap<String, String>,
}

impl Turn {
    pub fn new(workspace: &str, agent: &str, session: &str) -> Turn {
        Turn {
            workspace: workspace.into(),
            agent: agent.into(),
            session: session.into(),
            skills: BTreeMap::new(),
        }
    }
}

/// One operation of the scoped profile. (Not `Eq`: fault rates are floats.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ScopedOp {
    CreateWorkspace {
        workspace: String,
        #[serde(default)]
        agent_access: Option<Access>,
        #[serde(default)]
        workspace_access: Option<Access>,
    },
    CreateAgent {
        workspace: String,
        agent: String,
        #[serde(default)]
        agent_access: Option<Access>,
        #[serde(default)]
        workspace_access: Option<Access>,
    },
    CreateSession {
        turn: Turn,
    },
    /// A turn happened in the session.
    Activity {
        turn: Turn,
    },
    AddWait {
        turn: Turn,
        kind: WaitKindName,
        id: String,
    },
    RemoveWait {
        turn: Turn,
        kind: WaitKindName,
        id: String,
    },
    Write {
        turn: Turn,
        path: String,
        content: String,
    },
    /// A write raced against a sweep: issued while the sweep has claimed its candidates and
    /// not yet deleted anything, given every chance to land before the sweep goes on.
    WriteDuringSweep {
        turn: Turn,
        path: String,
        content: String,
    },
    Read {
        turn: Turn,
        path: String,
    },
    ReadText {
        turn: Turn,
        path: String,
    },
    List {
        turn: Turn,
        #[serde(default)]
        prefix: Option<String>,
    },
    Delete {
        turn: Turn,
        path: String,
    },
    /// Publishes a skill version through the skills API; `name` is how turns refer to it.
    PublishSkill {
        workspace: String,
        name: String,
        files: BTreeMap<String, String>,
    },
    DeleteSession {
        turn: Turn,
    },
    DeleteAgent {
        workspace: String,
        agent: String,
    },
    DeleteWorkspace {
        workspace: String,
    },
    Sweep,
    /// The next operation reaching this point "dies" there.
    CrashAt {
        point: CrashPointName,
    },
    /// A new process over what the old one persisted.
    Restart,
    Faults {
        #[serde(default)]
        down: bool,
        #[serde(default)]
        error_rate: f64,
        #[serde(default)]
        delete_key_failure_rate: f64,
        /// `(operation, n)`: the n-th request of that operation from now fails.
        #[serde(default)]
        fail_requests: Vec<(String, u64)>,
        /// `(operation, n)`: the n-th request of that operation and every later one fail.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        fail_from: Vec<(String, u64)>,
        /// Every request answers 404 NoSuchBucket.
        #[serde(default)]
        no_such_bucket: bool,
        /// Every request answers 403 AccessDenied.
        #[serde(default)]
        access_denied: bool,
        /// Requests answered 503 SlowDown.
        #[serde(default)]
        throttle: Throttle,
    },
    Heal,
    /// Every key under a prefix, straight from the bucket.
    BucketKeys {
        prefix: String,
    },
    /// Prefixes of pending deletion obligations, sorted (a set: trigger order is not a promise).
    PendingDeletions,
    /// Prefixes with a deletion record, sorted.
    DeletionRecords,
    /// The bucket's lifecycle configuration, read back through GetBucketLifecycleConfiguration
    /// and described rule by rule without ids ([`super::process::harness::lifecycle_rules`]).
    LifecycleRules,
    /// Puts the profile's lifecycle configuration on the bucket.
    ApplyLifecycle {
        session_backstop_days: u32,
    },
    /// Runs an age-only expiry rule over `prefix` with the lifecycle executor (AWS semantics).
    RunAgeRule {
        prefix: String,
        days: u32,
    },
    /// Credentials for a person of the people's files API (SPEC SF-2.1), minted by the
    /// implementation its own way: `person` is the scenario's name for them.
    Person {
        person: String,
        workspace: String,
        #[serde(default)]
        agent_files: Option<Access>,
        #[serde(default)]
        workspace_files: Option<Access>,
        /// The sessions whose conversations the person is in.
        #[serde(default)]
        sessions: Vec<String>,
    },
    /// A person's request to the people's files API, sent by the harness over HTTP with the
    /// person's credentials (never over the protocol). `person` is [`ANONYMOUS`] for a request
    /// without credentials.
    People {
        person: String,
        session: String,
        call: PeopleCall,
    },
    /// Sets (`Some`) or removes (`None`) an agent's count policy (SPEC SL-2). Any integer is
    /// carried, so a scenario can stage the refusal of an absurd one (SL-1.4).
    SetSessionCount {
        workspace: String,
        agent: String,
        #[serde(default)]
        keep_last: Option<i64>,
    },
    /// Copies a session file to agent or workspace scope (SPEC SL-6).
    Promote {
        turn: Turn,
        from: String,
        to: String,
    },
    /// A tool result handed to the store: shown inline (`content`) or written to a session
    /// file (`written`) past `tool_output_limit_bytes` (SPEC SL-7).
    ToolOutput {
        turn: Turn,
        content: String,
    },
    /// The host closes the session (SPEC SL-3): swept `close_grace_days` after, unless activity
    /// reopens it first.
    CloseSession {
        turn: Turn,
    },
    /// Two sweeps run at once (SPEC SL-1.3): the second starts once the first has claimed its
    /// policy sessions and before it deletes anything. Answered with what both swept together.
    ConcurrentSweeps,
    /// Requests the erasure of a workspace (`agent` absent) or of one of its agents, to be met
    /// by `deadline_ms` (SPEC SL-4.1); a deadline before the request's time is carried too, so
    /// a scenario can stage its refusal (SL-1.4).
    RequestErasure {
        workspace: String,
        #[serde(default)]
        agent: Option<String>,
        deadline_ms: i64,
    },
    /// The state of each erasure obligation of a subject, read by the harness from the
    /// implementation's database (SPEC SL-4.4, SL-4.7).
    ErasureStates {
        workspace: String,
        #[serde(default)]
        agent: Option<String>,
    },
    /// The keys the proofs of a subject's erasures name, read likewise (SL-4.3, SL-4.7).
    ErasureProof {
        workspace: String,
        #[serde(default)]
        agent: Option<String>,
    },
    /// Replaces a workspace's retention whole (SPEC SL-5.1): its own idle TTL in days, or `None`
    /// for the deployment's again. Any integer is carried, so a scenario can stage the refusal
    /// of an absurd one (SL-1.4, SL-5.2).
    SetWorkspaceRetention {
        workspace: String,
        #[serde(default)]
        session_file_ttl_days: Option<i64>,
    },
}

/// The person a scenario names for a request carrying no credentials.
pub const ANONYMOUS: &str = "anonymous";

/// What a person asks of the people's files API. A `url_path` is the URL after
/// `/files/`, sent exactly as written (SPEC SF-3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum PeopleCall {
    /// `PUT …/files/{url_path}` with the content as the body.
    Upload { url_path: String, content: String },
    /// `GET …/files/{url_path}`.
    Download { url_path: String },
    /// `DELETE …/files/{url_path}`.
    Remove { url_path: String },
    /// `GET …/files`: the files.
    List,
    /// `GET …/files`: the scopes the person may write (SF-2.7), in the order answered.
    UploadScopes,
}

/// `queued`, `parked` or `waiting`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WaitKindName(pub String);

/// `after_text_written`, `after_session_objects_deleted` or `after_obligation_objects_deleted`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CrashPointName(pub String);

/// What an operation answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ScopedOutcome {
    Ok,
    Written {
        path: String,
    },
    Content {
        content: String,
    },
    Text {
        text: Option<String>,
    },
    Listing {
        paths: Vec<String>,
    },
    Published {
        sha256: String,
    },
    /// Sessions swept and obligations completed. (Object counts are not part of the outcome:
    /// how many objects a file takes is the implementation's business.)
    Swept {
        sessions: u64,
        obligations: u64,
    },
    Keys {
        keys: Vec<String>,
    },
    Prefixes {
        prefixes: Vec<String>,
    },
    /// The bucket's lifecycle rules, each described without its id, in id order.
    Rules {
        rules: Vec<String>,
    },
    /// Refused with a reason code (SPEC SC-8); nothing changed.
    Refused {
        reason: String,
        message: String,
    },
    /// The process died at an injected crash point.
    Crashed {
        point: String,
    },
    /// A person's credentials (SF-2.1): the headers their requests carry.
    Credentials {
        headers: BTreeMap<String, String>,
    },
    /// The states of a subject's erasure obligations, sorted (`pending`, `overdue 2d`, `met`,
    /// `missed 1h`: [`super::erasure::state_text`]).
    Erasures {
        states: Vec<String>,
    },
}

/// Who performs a scoped step when the implementation runs in another process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Sent to the implementation as a request; it answers with an outcome.
    Implementation,
    /// Sent to the implementation only if it claims this capability; otherwise the scenario is
    /// skipped, not failed.
    ImplementationWith(&'static str),
    /// The harness performs it on its own S3 server, its own database, or the process itself.
    Harness,
    /// The harness sends it over HTTP to the people's files API the implementation named
    /// (SPEC part SF), as the person it names; only to a program claiming [`PEOPLE_API`].
    People,
}

/// The capability a program claims to be sent `crash_at` (and to die where it says).
pub const CRASH_POINTS: &str = "crash_points";
/// The capability a program claims to be sent `write_during_sweep` (and race it itself).
pub const WRITE_DURING_SWEEP: &str = "write_during_sweep";
/// The capability a program claims when every object it puts carries the user metadata
/// `tidemark-written-at-ms` (SC-7.4), so the harness can run an age-only lifecycle rule on the
/// scenario's clock.
pub const WRITTEN_AT_STAMP: &str = "written_at_stamp";
/// The capability a program claims when it serves the people's files API (SPEC part SF) and
/// names its base URL in `init_ok` (`people_api`): it is then sent `person` requests, and the
/// harness sends people's requests over HTTP.
pub const PEOPLE_API: &str = "people_api";
/// The `init_ok` field naming the people's files API's base URL (PROTOCOL.md).
pub const PEOPLE_API_FIELD: &str = "people_api";

/// The capability a program claims to be sent SPEC part SL's requests (retention policies).
pub const RETENTION_POLICIES: &str = "retention_policies";

/// The capability a program claims to be sent `close_session` (SPEC SL-3) and to sweep what
/// it closed: a program claiming only [`RETENTION_POLICIES`] skips the scenarios of a close.
pub const SESSION_CLOSE: &str = "session_close";

/// The capability a program claims to be sent `concurrent_sweeps` (SPEC SL-1.3) and run two
/// sweeps at once itself, as [`WRITE_DURING_SWEEP`] races a write.
pub const CONCURRENT_SWEEPS: &str = "concurrent_sweeps";

/// The capability a program claims to be sent erasure requests (SPEC SL-4) and to have its
/// erasure obligations and proofs read with the queries it declares in `init_ok`'s `erasure`.
pub const ERASURE_OBLIGATIONS: &str = "erasure_obligations";

/// The capability a program claims to be sent SPEC SL-5's request (a workspace's own retention,
/// `set_workspace_retention`), and to build its lifecycle rules from the retentions it accepted.
pub const WORKSPACE_RETENTION: &str = "workspace_retention";

/// The capability a step needs of the implementation, if any: one sent only to a program
/// claiming it, or a harness step that reads what only such a program writes (an age-only rule
/// reads the write stamps, SC-7.4).
pub fn capability_needed(op: &ScopedOp) -> Option<&'static str> {
    match (op, side(op)) {
        (_, Side::ImplementationWith(c)) => Some(c),
        (_, Side::People) => Some(PEOPLE_API),
        (ScopedOp::RunAgeRule { .. }, _) => Some(WRITTEN_AT_STAMP),
        // Read with the queries only a program claiming it declares (SL-4.7).
        (ScopedOp::ErasureStates { .. } | ScopedOp::ErasureProof { .. }, _) => {
            Some(ERASURE_OBLIGATIONS)
        }
        _ => None,
    }
}

/// Where each operation is performed (PROTOCOL.md lists the same split).
pub fn side(op: &ScopedOp) -> Side {
    match op {
        ScopedOp::CreateWorkspace { .. }
        | ScopedOp::CreateAgent { .. }
        | ScopedOp::CreateSession { .. }
        | ScopedOp::Activity { .. }
        | ScopedOp::AddWait { .. }
        | ScopedOp::RemoveWait { .. }
        | ScopedOp::Write { .. }
        | ScopedOp::Read { .. }
        | ScopedOp::ReadText { .. }
        | ScopedOp::List { .. }
        | ScopedOp::Delete { .. }
        | ScopedOp::PublishSkill { .. }
        | ScopedOp::DeleteSession { .. }
        | ScopedOp::DeleteAgent { .. }
        | ScopedOp::DeleteWorkspace { .. }
        | ScopedOp::Sweep
        | ScopedOp::ApplyLifecycle { .. } => Side::Implementation,
        ScopedOp::CrashAt { .. } => Side::ImplementationWith(CRASH_POINTS),
        ScopedOp::WriteDuringSweep { .. } => Side::ImplementationWith(WRITE_DURING_SWEEP),
        ScopedOp::Person { .. } => Side::ImplementationWith(PEOPLE_API),
        ScopedOp::People { .. } => Side::People,
        ScopedOp::SetSessionCount { .. }
        | ScopedOp::Promote { .. }
        | ScopedOp::ToolOutput { .. } => Side::ImplementationWith(RETENTION_POLICIES),
        ScopedOp::CloseSession { .. } => Side::ImplementationWith(SESSION_CLOSE),
        ScopedOp::ConcurrentSweeps => Side::ImplementationWith(CONCURRENT_SWEEPS),
        ScopedOp::RequestErasure { .. } => Side::ImplementationWith(ERASURE_OBLIGATIONS),
        ScopedOp::SetWorkspaceRetention { .. } => Side::ImplementationWith(WORKSPACE_RETENTION),
        ScopedOp::Restart
        | ScopedOp::Faults { .. }
        | ScopedOp::Heal
        | ScopedOp::BucketKeys { .. }
        | ScopedOp::PendingDeletions
        | ScopedOp::DeletionRecords
        | ScopedOp::LifecycleRules
        | ScopedOp::RunAgeRule { .. }
        | ScopedOp::ErasureStates { .. }
        | ScopedOp::ErasureProof { .. } => Side::Harness,
    }
}

/// The operation's name on the wire (its `op` tag).
pub fn op_name(op: &ScopedOp) -> String {
    serde_json::to_value(op)
        .ok()
        .and_then(|v| v.get("op").and_then(|o| o.as_str()).map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// `op` with each turn's skill table mapped from the scenario's skill names to the sha256 each
/// was published under (a name never published is sent as written, so a scenario can send a
/// bad hash on purpose).
pub fn with_skill_hashes(op: &ScopedOp, skills: &BTreeMap<String, String>) -> ScopedOp {
    let mut op = op.clone();
    if let Some(turn) = turn_mut(&mut op) {
        for name in turn.skills.values_mut() {
            if let Some(sha) = skills.get(name.as_str()) {
                *name = sha.clone();
            }
        }
    }
    op
}

fn turn_mut(op: &mut ScopedOp) -> Option<&mut Turn> {
    match op {
        ScopedOp::CreateSession { turn }
        | ScopedOp::Activity { turn }
        | ScopedOp::AddWait { turn, .. }
        | ScopedOp::RemoveWait { turn, .. }
        | ScopedOp::Write { turn, .. }
        | ScopedOp::WriteDuringSweep { turn, .. }
        | ScopedOp::Read { turn, .. }
        | ScopedOp::ReadText { turn, .. }
        | ScopedOp::List { turn, .. }
        | ScopedOp::Delete { turn, .. }
        | ScopedOp::Promote { turn, .. }
        | ScopedOp::ToolOutput { turn, .. }
        | ScopedOp::CloseSession { turn }
        | ScopedOp::DeleteSession { turn } => Some(turn),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_and_the_bucket_are_read_by_the_harness_and_crashes_need_a_capability() {
        assert_eq!(side(&ScopedOp::PendingDeletions), Side::Harness);
        assert_eq!(side(&ScopedOp::Sweep), Side::Implementation);
        assert_eq!(
            side(&ScopedOp::CrashAt {
                point: CrashPointName("after_text_written".into())
            }),
            Side::ImplementationWith(CRASH_POINTS)
        );
        assert_eq!(op_name(&ScopedOp::PendingDeletions), "pending_deletions");
    }
}

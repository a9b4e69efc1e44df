//! The rows profile's operations as data: what the harness asks an implementation of part SR
//! and what it answers, the same types in process ([`ReferenceRows`](super::reference::ReferenceRows)) and across the process
//! protocol (PROTOCOL.md, "The rows profile"), so a scenario means the same thing to both.
//!
//! Identifiers an implementation makes (replies, snapshots, action items, held requests) are
//! opaque strings to the harness: the reference's are numbers, another implementation's may be
//! UUIDs. The harness learns them from [`RowsOutcome::Made`] and sends them back unchanged; a
//! name whose making was refused has no id, and is sent as [`UNMADE`], which the implementation
//! must answer as it answers any id it never made (`unknown_reply`, `unknown_snapshot`, ...).
//!
//! What remains in the database is not asked of the implementation: an [`Observation`] is read
//! by the harness itself (SR-1.4), with read-only SQL the implementation declares or the
//! reference's schema by default.

use serde::{Deserialize, Serialize};
use tidemark_reference::rows::ReapReport;

/// The id the harness sends for a name whose making was refused: no implementation makes it.
pub const UNMADE: &str = "";

/// The capability of a program that takes a reap's `batch` and `crash_after_batches`: the
/// scenarios that stage batches or a crashed tick need it.
pub const REAP_BATCHES: &str = "reap_batches";

/// One rows operation at one simulated instant (the time travels beside it, as `now_ms`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RowsOp {
    CreateWorkspace {
        workspace: String,
    },
    /// A session is a conversation.
    CreateSession {
        session: String,
        workspace: String,
    },
    /// SR-2.7's cascade.
    DeleteSession {
        session: String,
    },
    /// The workspace, its sessions (with all they keep) and its action items.
    DeleteWorkspace {
        workspace: String,
    },
    /// Answers [`RowsOutcome::Made`] with the reply's id.
    StartReply {
        session: String,
    },
    /// A streamed event into a `writing` reply (SR-2.1, SR-2.2).
    Stream {
        reply: String,
        kind: String,
        payload: String,
    },
    FinishReply {
        reply: String,
        text: String,
    },
    InterruptReply {
        reply: String,
    },
    /// SR-2.5.
    SealReply {
        reply: String,
    },
    /// A withdrawn or regenerated reply (SR-2.4).
    DeleteReply {
        reply: String,
    },
    /// A conversation event: a well-formed kind that is not streamed.
    RecordEvent {
        session: String,
        kind: String,
        payload: String,
    },
    AddPrompt {
        session: String,
        body: String,
    },
    /// A tool invocation, kept a day (SR-3.1).
    RecordInvocation {
        session: String,
    },
    /// A trigger firing, kept thirty days (SR-3.2).
    FireTrigger {
        trigger: String,
    },
    /// Writes (or rewrites, SR-4.2) row `id` of `store`, expiring `for_ms` after now.
    Keep {
        store: String,
        id: String,
        for_ms: i64,
    },
    /// Answers [`RowsOutcome::Made`] with the snapshot's id.
    TakeSnapshot,
    /// Points `model` at `snapshot` (creating the model, or repointing it).
    NameSnapshot {
        model: String,
        snapshot: String,
    },
    DropModel {
        model: String,
    },
    /// Answers [`RowsOutcome::Made`] with the item's id.
    OpenItem {
        workspace: String,
    },
    SettleItem {
        item: String,
    },
    /// Answers [`RowsOutcome::Made`] with the request's id.
    HoldRequest {
        session: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        item: Option<String>,
    },
    /// One reaper tick at now (SR-7); answers [`RowsOutcome::Reaped`]. `batch`: the rows per
    /// delete statement, else the implementation's own (SR-7.3). `crash_after_batches`: the
    /// tick dies, as if its process did, once that many delete batches that removed a row have
    /// committed; what they removed stays removed, and the tick answers `database_unavailable`
    /// (SR-7.4, SR-7.5). Sent only to a program claiming [`REAP_BATCHES`].
    Reap {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        batch: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        crash_after_batches: Option<u64>,
    },
    /// Answers [`RowsOutcome::Transcript`] (SR-2.6).
    Transcript {
        session: String,
    },
    /// Answers [`RowsOutcome::Snapshots`].
    Snapshots,
}

impl RowsOp {
    /// The operation's name on the wire (its `op` tag).
    pub fn name(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.get("op").and_then(|o| o.as_str()).map(str::to_string))
            .unwrap_or_else(|| "?".into())
    }

    /// Whether the operation makes a thing the harness names, and so must answer `made`.
    pub fn makes(&self) -> bool {
        matches!(
            self,
            RowsOp::StartReply { .. }
                | RowsOp::TakeSnapshot
                | RowsOp::OpenItem { .. }
                | RowsOp::HoldRequest { .. }
        )
    }
}

/// What one sweep of a tick removed, in the tick's order (SR-7.2, SR-7.5).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Swept {
    pub streamed_events: u64,
    pub tool_invocations: u64,
    pub trigger_firings: u64,
    pub catalog_snapshots: u64,
    pub live_sessions: u64,
    pub refresh_tokens: u64,
    pub webhook_deliveries: u64,
    pub breaker_sightings: u64,
}

impl Swept {
    /// The counts in the tick's order, beside [`super::script::SWEEPS`].
    pub fn counts(&self) -> [u64; 8] {
        [
            self.streamed_events,
            self.tool_invocations,
            self.trigger_firings,
            self.catalog_snapshots,
            self.live_sessions,
            self.refresh_tokens,
            self.webhook_deliveries,
            self.breaker_sightings,
        ]
    }

    pub fn total(&self) -> u64 {
        self.counts().iter().sum()
    }
}

impl From<ReapReport> for Swept {
    fn from(r: ReapReport) -> Swept {
        Swept {
            streamed_events: r.streamed_events,
            tool_invocations: r.tool_invocations,
            trigger_firings: r.trigger_firings,
            catalog_snapshots: r.catalog_snapshots,
            live_sessions: r.live_sessions,
            refresh_tokens: r.refresh_tokens,
            webhook_deliveries: r.webhook_deliveries,
            breaker_sightings: r.breaker_sightings,
        }
    }
}

impl From<Swept> for ReapReport {
    fn from(s: Swept) -> ReapReport {
        ReapReport {
            streamed_events: s.streamed_events,
            tool_invocations: s.tool_invocations,
            trigger_firings: s.trigger_firings,
            catalog_snapshots: s.catalog_snapshots,
            live_sessions: s.live_sessions,
            refresh_tokens: s.refresh_tokens,
            webhook_deliveries: s.webhook_deliveries,
            breaker_sightings: s.breaker_sightings,
        }
    }
}

/// One reply in a transcript read: its id, `writing`, `stopped`, `finished` or `sealed` (finished
/// by sealing), and its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptEntry {
    pub reply: String,
    pub state: String,
    pub text: String,
}

/// What an operation answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RowsOutcome {
    Ok,
    /// The id of the thing made, opaque to the harness.
    Made {
        id: String,
    },
    /// A typed refusal: a reason code of SR-9.1.
    Refused {
        reason: String,
        message: String,
    },
    Reaped {
        swept: Swept,
    },
    /// The session's replies in the order they were started.
    Transcript {
        replies: Vec<TranscriptEntry>,
    },
    /// The ids of the snapshots that exist, in any order.
    Snapshots {
        snapshots: Vec<String>,
    },
}

/// What the harness reads from the database itself, never asking the implementation (SR-1.4).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "count", rename_all = "snake_case")]
pub enum Observation {
    /// Every row of a table, named as the reference's schema names it (`events`, `sessions`,
    /// `held_requests`, ...: [`tidemark_reference::rows::TABLES`]).
    Table { table: String },
    /// The streamed events naming a reply (which need not exist any more), by its id.
    StreamedOf { reply: String },
    /// A session's events, streamed or not.
    EventsIn { session: String },
}

/// What the harness talks to while it plays a rows scenario: the reference in process
/// ([`ReferenceRows`](super::reference::ReferenceRows)) or a program through the protocol.
#[async_trait::async_trait(?Send)]
pub trait RowsEndpoint {
    /// One operation at `now_ms`, milliseconds since the Unix epoch. An `Err` is the
    /// implementation failing (not a refusal, which is an outcome), reported at the step.
    async fn call(&mut self, now_ms: i64, op: &RowsOp) -> Result<RowsOutcome, String>;

    /// A count read from the database the implementation was handed. An `Err` is the
    /// observation failing (a declared query that does not run), reported at the step.
    async fn observe(&mut self, what: &Observation) -> Result<i64, String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_is_one_json_object_tagged_by_op_with_ids_as_strings() {
        let op = RowsOp::HoldRequest {
            session: "c1".into(),
            item: Some("7".into()),
        };
        let line = serde_json::to_string(&op).unwrap();
        assert_eq!(line, r#"{"op":"hold_request","session":"c1","item":"7"}"#);
        assert_eq!(serde_json::from_str::<RowsOp>(&line).unwrap(), op);
        assert_eq!(op.name(), "hold_request");
        assert!(op.makes());
        assert_eq!(
            serde_json::to_string(&RowsOp::TakeSnapshot).unwrap(),
            r#"{"op":"take_snapshot"}"#
        );
    }

    #[test]
    fn a_reap_answers_every_sweep_by_name_and_a_transcript_its_replies_by_id() {
        let reaped: RowsOutcome = serde_json::from_str(
            r#"{"outcome":"reaped","swept":{"streamed_events":2,"tool_invocations":0,"trigger_firings":0,"catalog_snapshots":1,"live_sessions":0,"refresh_tokens":0,"webhook_deliveries":0,"breaker_sightings":0}}"#,
        )
        .unwrap();
        match reaped {
            RowsOutcome::Reaped { swept } => assert_eq!(swept.total(), 3),
            other => panic!("{other:?}"),
        }
        let t: RowsOutcome = serde_json::from_str(
            r#"{"outcome":"transcript","replies":[{"reply":"9f1c","state":"sealed","text":"Hi"}]}"#,
        )
        .unwrap();
        assert_eq!(
            t,
            RowsOutcome::Transcript {
                replies: vec![TranscriptEntry {
                    reply: "9f1c".into(),
                    state: "sealed".into(),
                    text: "Hi".into()
                }]
            }
        );
    }
}

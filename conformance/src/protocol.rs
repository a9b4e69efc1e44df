//! The out-of-process protocol, `tidemark/1`, as data (PROTOCOL.md is the prose, and
//! protocol.schema.json the JSON Schema, of these types).
//!
//! One JSON object per line: the harness writes [`ToImplementation`] lines to the program's stdin
//! and reads [`FromImplementation`] lines from its stdout; stderr is the program's log. The
//! envelopes are generic over their body: the request and outcome bodies are exactly the JSON of
//! the profile's own types (the scratchpad's `Request` and `Outcome` in
//! `profiles/scratchpad/contract.rs`, the scoped profile's `ScopedOp` and `ScopedOutcome`), so a
//! scenario means the same thing in every language.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The protocol name and version both sides state in the init exchange. A change that an
/// existing implementation could misread bumps the number.
pub const PROTOCOL: &str = "tidemark/1";

/// The id of the init message; requests count up from 1.
pub const INIT_ID: u64 = 0;

/// A line the harness writes to the implementation's stdin. The body type is the profile's
/// request (the same `op` names mean different things in two profiles, so the profile of the
/// `init` decides how to read them).
// One message per line, built and dropped at once: the size of the init variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToImplementation<B> {
    Init(Init),
    Request(RequestEnvelope<B>),
}

/// The first line a program receives: what the harness provides for the coming scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Init {
    pub id: u64,
    /// Always [`PROTOCOL`].
    pub protocol: String,
    /// The profile the coming scenario exercises. `None` when the harness starts the program only
    /// to ask what it supports; stdin closes right after `init_ok`.
    pub profile: Option<String>,
    /// The scratch root (scratchpad profile). Empty when the scenario runs unmounted (SP-1.3):
    /// the empty string must never be resolved to anything.
    pub root: String,
    /// The program's working directory, also its actual current directory. The harness checks
    /// that an unmounted scratchpad writes nothing here.
    pub workdir: String,
    /// The knobs the scenario sets, by their SPEC.md names (sizes in bytes, durations in
    /// milliseconds). A knob not named keeps its SPEC.md default.
    pub knobs: BTreeMap<String, i64>,
    /// The object store (scoped profile); absent for the scratchpad profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Endpoint>,
    /// A PostgreSQL connection URL, a fresh database of its own per scenario (scoped and rows
    /// profiles); absent for the scratchpad profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_url: Option<String>,
}

/// An S3-compatible endpoint and the credentials to reach it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct S3Endpoint {
    pub endpoint_url: String,
    pub region: String,
    pub bucket: String,
    pub access_key_id: String,
    pub secret_access_key: String,
}

/// One operation at one simulated instant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestEnvelope<B> {
    pub id: u64,
    /// The current time, milliseconds since the Unix epoch, UTC. The only clock the program may
    /// use for a retention decision.
    pub now_ms: i64,
    pub body: B,
}

/// A line the implementation writes to stdout. The body of a reply is the profile's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromImplementation<O> {
    InitOk(InitOk),
    Reply(Reply<O>),
    /// The program could not perform a request at all (a bug, a disk error): not a refusal,
    /// which is an ordinary outcome. The harness reports it as the scenario's failure.
    Error(ErrorReply),
}

impl<O> FromImplementation<O> {
    pub fn in_reply_to(&self) -> u64 {
        match self {
            FromImplementation::InitOk(m) => m.in_reply_to,
            FromImplementation::Reply(m) => m.in_reply_to,
            FromImplementation::Error(m) => m.in_reply_to,
        }
    }
    pub fn type_name(&self) -> &'static str {
        match self {
            FromImplementation::InitOk(_) => "init_ok",
            FromImplementation::Reply(_) => "reply",
            FromImplementation::Error(_) => "error",
        }
    }
}

/// What the program supports. Profiles are selected by these claims: a scenario whose profile is
/// not claimed is skipped, not failed. Names the harness does not know are kept but unused, so a
/// program may claim a profile before the harness it runs under supports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitOk {
    pub in_reply_to: u64,
    pub protocol: String,
    /// A name for reports, e.g. `my-scratchpad 0.3.1`.
    #[serde(default)]
    pub implementation: String,
    pub profiles: Vec<String>,
    /// Optional behaviours beyond a profile's required rules.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// The SPEC.md variants the program takes, by name (`"read_through_a_file":
    /// "not_a_directory"`); every variant it does not name takes its default. Checked at the
    /// handshake ([`crate::variants::Declared::read`]).
    #[serde(default)]
    pub variants: BTreeMap<String, String>,
    /// Every other field, by name: what a profile's part of the protocol adds (the scoped
    /// profile's `ledger` queries, the rows profile's `rows`), read by that profile with
    /// [`InitOk::declared`]; a field no profile reads is kept but unused.
    #[serde(flatten)]
    pub declared: BTreeMap<String, serde_json::Value>,
}

impl InitOk {
    /// The variants the program declared. A declaration the handshake refused never reaches a
    /// scenario, so this reads only checked ones.
    pub fn declared_variants(&self) -> crate::variants::Declared {
        crate::variants::Declared::read(&self.variants)
            .expect("the handshake checks the declared variants")
    }

    /// The field `name` a profile declares, read as `T`: `None` when absent or null, an error
    /// (serde's words) when malformed.
    pub fn declared<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, String> {
        match self.declared.get(name) {
            None => Ok(None),
            Some(v) => serde_json::from_value::<Option<T>>(v.clone()).map_err(|e| e.to_string()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply<O> {
    pub in_reply_to: u64,
    pub body: O,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReply {
    pub in_reply_to: u64,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scoped_request_carries_a_scoped_op_with_its_time_and_its_reply_parses_as_a_scoped_outcome()
    {
        use crate::profiles::scoped::{ScopedOp, ScopedOutcome, Turn};
        let line = serde_json::to_string(&ToImplementation::Request(RequestEnvelope {
            id: 4,
            now_ms: 1_767_225_600_000,
            body: ScopedOp::Read {
                turn: Turn::new("w1", "a1", "s1"),
                path: "session/notes.md".into(),
            },
        }))
        .unwrap();
        assert_eq!(
            line,
            r#"{"type":"request","id":4,"now_ms":1767225600000,"body":{"op":"read","turn":{"workspace":"w1","agent":"a1","session":"s1"},"path":"session/notes.md"}}"#
        );
        let m: FromImplementation<ScopedOutcome> = serde_json::from_str(
            r#"{"type":"reply","in_reply_to":4,"body":{"outcome":"content","content":"hello"}}"#,
        )
        .unwrap();
        assert_eq!(
            m,
            FromImplementation::Reply(Reply {
                in_reply_to: 4,
                body: ScopedOutcome::Content {
                    content: "hello".into()
                }
            })
        );
    }

    #[test]
    fn an_init_ok_may_omit_its_name_and_capabilities() {
        let m: FromImplementation<serde::de::IgnoredAny> =
            serde_json::from_str(r#"{"type":"init_ok","in_reply_to":0,"protocol":"tidemark/1","profiles":["scratchpad"]}"#).unwrap();
        assert_eq!(m.type_name(), "init_ok");
        assert_eq!(m.in_reply_to(), 0);
    }
}

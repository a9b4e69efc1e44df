//! The contract between the harness and an implementation, as data: the requests a scenario
//! sends and the outcomes an implementation returns. The same types are the JSON of the
//! out-of-process protocol (PROTOCOL.md), so a scenario means the same thing in every language.

use serde::{Deserialize, Serialize};

/// Who is calling, and where. Inside a thread the session is the thread (shared); in a channel
/// outside a thread it is the channel-and-user pairing (private).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Caller {
    pub requester: String,
    pub channel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
}

impl Caller {
    /// `alice@#general/T1` or `alice@#general`, the scenario spelling.
    pub fn display(&self) -> String {
        match &self.thread {
            Some(t) => format!("{}@#{}/{}", self.requester, self.channel, t),
            None => format!("{}@#{}", self.requester, self.channel),
        }
    }
}

/// Bytes carried as lowercase hex, so paths that are not UTF-8 and binary content survive JSON.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(#[serde(with = "hex_bytes")] pub Vec<u8>);

mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(v))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        hex::decode(&s).map_err(serde::de::Error::custom)
    }
}

impl Bytes {
    pub fn lossy(&self) -> String {
        String::from_utf8_lossy(&self.0).to_string()
    }
}

/// One operation an implementation performs. Scratchpad profile operations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Write a file into the caller's own subtree (SP-3.1).
    Write {
        caller: Caller,
        path: Bytes,
        content: Bytes,
    },
    /// Read a file: own path first, then the session listing path (SP-3.2).
    Read { caller: Caller, path: Bytes },
    /// List the session, or one directory of it (SP-3.3).
    List {
        caller: Caller,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<Bytes>,
    },
    /// Remove one of the caller's own files (SP-3.4).
    Remove { caller: Caller, path: Bytes },
    /// The process starts (or restarts after a stop): it sweeps once at once (SP-5.5).
    Start,
    /// Time has moved; the sweeper's timer may fire (SP-5.5).
    Tick,
    /// How the implementation names this caller's session and requester directories (SP-1.2).
    /// Not an operation: it touches nothing and is not activity.
    Names { caller: Caller },
}

impl Request {
    /// The caller of a file operation.
    pub fn caller(&self) -> Option<&Caller> {
        match self {
            Request::Write { caller, .. }
            | Request::Read { caller, .. }
            | Request::List { caller, .. }
            | Request::Remove { caller, .. } => Some(caller),
            _ => None,
        }
    }

    pub fn op_name(&self) -> &'static str {
        match self {
            Request::Write { .. } => "write",
            Request::Read { .. } => "read",
            Request::List { .. } => "list",
            Request::Remove { .. } => "remove",
            Request::Start => "start",
            Request::Tick => "tick",
            Request::Names { .. } => "names",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Entry {
    pub path: String,
    pub size: u64,
}

/// What an implementation answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Written {
        path: String,
        evicted: Vec<String>,
    },
    Content {
        content: Bytes,
    },
    Listing {
        entries: Vec<Entry>,
    },
    Removed,
    /// A start or tick; `swept` names the sessions collected by a sweep it ran, if any.
    Swept {
        swept: Vec<String>,
    },
    /// Refused with a reason code from SPEC.md; nothing changed.
    Refused {
        reason: String,
        message: String,
    },
    /// The answer to `names`: the caller's session directory name and requester directory name.
    Names {
        session: String,
        requester: String,
    },
}

impl Outcome {
    /// A one-line human rendering, used in traces and failure reports.
    pub fn summary(&self) -> String {
        match self {
            Outcome::Written { path, evicted } if evicted.is_empty() => format!("written {path}"),
            Outcome::Written { path, evicted } => {
                format!("written {path}, evicted [{}]", evicted.join(", "))
            }
            Outcome::Content { content } => format!("content {:?}", abbreviate(&content.lossy())),
            Outcome::Listing { entries } => format!(
                "listing [{}]",
                entries
                    .iter()
                    .map(|e| e.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Outcome::Removed => "removed".into(),
            Outcome::Swept { swept } => format!("swept [{}]", swept.join(", ")),
            Outcome::Refused { reason, .. } => format!("refused {reason}"),
            Outcome::Names { session, requester } => {
                format!("names session {session}, requester {requester}")
            }
        }
    }
}

fn abbreviate(s: &str) -> String {
    if s.chars().count() > 40 {
        format!(
            "{}…({} bytes)",
            s.chars().take(32).collect::<String>(),
            s.len()
        )
    } else {
        s.to_string()
    }
}

/// Every refusal reason of the scratchpad profile (SP-2, SP-3, SP-4). A scenario naming any
/// other reason is malformed.
pub const SCRATCHPAD_REASONS: &[&str] = &[
    "unmounted",
    "empty_path",
    "absolute_path",
    "nul_byte",
    "not_utf8",
    "traversal",
    "non_canonical",
    "backslash",
    "too_deep",
    "path_too_long",
    "symlink_escape",
    "too_large",
    "ceiling_exceeded",
    "not_found",
    "is_a_directory",
    "not_a_directory",
];

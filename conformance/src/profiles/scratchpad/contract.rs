//! The contract between the harness and an implementation, as data: the requests a scenario
//! sends and the outcomes an implementation returns. The same types are the JSON of the
//! out-of-process protocol (PROTOCOL.md), so a scenario means the same thing in every language.
//!
//! The runner reaches an implementation through a [`Driver`] per scenario, made by a
//! [`DriverFactory`] for the scenario's [`Profile`] and [`Knobs`]: the in-process reference
//! (`reference.rs`) and a program speaking the protocol (`process.rs`) are both drivers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tidemark_reference::clock::Timestamp;

use crate::driver::DriverError;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Profile {
    Scratchpad,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Scratchpad => "scratchpad",
        }
    }
    pub fn from_name(s: &str) -> Option<Profile> {
        match s {
            "scratchpad" => Some(Profile::Scratchpad),
            _ => None,
        }
    }
    /// The prefix of this profile's rule ids in SPEC.md.
    pub fn rule_prefix(self) -> &'static str {
        match self {
            Profile::Scratchpad => "SP-",
        }
    }
}

/// Knob values handed to the implementation at start: byte sizes in bytes, durations in
/// milliseconds, counts as counts. `mounted = false` hands it an empty root (`knob root
/// unmounted`); `root_missing` hands it the path of a root that does not exist (`knob root
/// missing`). Both are unmounted roots (SP-1.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knobs {
    pub values: BTreeMap<String, i64>,
    pub mounted: bool,
    pub root_missing: bool,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            values: BTreeMap::new(),
            mounted: true,
            root_missing: false,
        }
    }
}

/// What the harness provides to one scenario's implementation.
#[derive(Clone, Debug)]
pub struct Environment {
    /// The scratch root: empty when the scenario runs unmounted (`knob root unmounted`), the
    /// path of a root that does not exist with `knob root missing` (SP-1.3).
    pub root: PathBuf,
    /// The implementation's working directory, which must never be written to.
    pub workdir: PathBuf,
    pub knobs: Knobs,
}

#[async_trait]
pub trait Driver: Send {
    /// Performs one request at simulated time `now`. `Request::Start` (re)starts the
    /// implementation from what it persisted.
    async fn call(&mut self, now: Timestamp, request: &Request) -> Result<Outcome, DriverError>;
    /// Stops the implementation abruptly, as a crash would: no shutdown hook runs.
    async fn stop(&mut self) -> Result<(), DriverError>;
}

pub trait DriverFactory: Send + Sync {
    /// A short name for reports, e.g. `reference` or the command line of a program.
    fn name(&self) -> String;
    fn supports(&self, profile: Profile) -> bool;
    /// The optional behaviours the implementation claims (PROTOCOL.md: `sp12_digest`,
    /// `binary_content`). A scenario needing one it does not claim is skipped, with the reason.
    fn capabilities(&self) -> Vec<String> {
        Vec::new()
    }
    /// The SPEC.md variants the implementation takes (PROTOCOL.md: `init_ok`'s `variants`);
    /// scenarios and the model follow them. Default: every variant at its default.
    fn variants(&self) -> crate::variants::Declared {
        crate::variants::Declared::defaults()
    }
    fn create(&self, profile: Profile, env: &Environment) -> Result<Box<dyn Driver>, DriverError>;
}

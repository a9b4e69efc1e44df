//! Scenarios are data (`scenarios/**/*.tdm`): readable by someone who does not read Rust, each
//! step's expectation explicit, each scenario citing the SPEC.md rules it checks.
//!
//! ```text
//! scenario: a quiet thread is collected after its week
//! profile: scratchpad
//! rules: SP-5.2, SP-5.5
//!
//! alice@#general/T1 write notes.md "draft"   => ok
//! advance 6d23h
//! bob@#general/T1 list                       => [@alice/notes.md]
//! advance 1h
//! bob@#general/T1 list                       => []
//! ```
//!
//! The grammar is in `parse.rs` and in scenarios/README.md.

mod lex;
pub(crate) mod parse;

pub use parse::{parse_file, parse_str};

use crate::contract::Request;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub file: PathBuf,
    /// The sentence the scenario proves.
    pub name: String,
    pub profile: Profile,
    pub rules: Vec<String>,
    pub knobs: Knobs,
    pub steps: Vec<Step>,
}

impl Scenario {
    /// The test name: `<profile>::<file stem>`, so `cargo test eviction` filters by file name.
    pub fn test_name(&self) -> String {
        let stem = self
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().replace('-', "_"))
            .unwrap_or_default();
        format!("{}::{}", self.profile.name(), stem)
    }
}

/// Knob values handed to the implementation at start: byte sizes in bytes, durations in
/// milliseconds, counts as counts. `mounted = false` hands it an empty root (SP-1.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knobs {
    pub values: BTreeMap<String, i64>,
    pub mounted: bool,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            values: BTreeMap::new(),
            mounted: true,
        }
    }
}

/// The knobs a scratchpad scenario may set, and the unit its value is written in.
pub const SCRATCHPAD_KNOBS: &[(&str, KnobUnit)] = &[
    ("session_cap_bytes", KnobUnit::Bytes),
    ("requester_ceiling_bytes", KnobUnit::Bytes),
    ("max_file_bytes", KnobUnit::Bytes),
    ("thread_quiet_ms", KnobUnit::Duration),
    ("pairing_idle_ms", KnobUnit::Duration),
    ("sweep_interval_ms", KnobUnit::Duration),
    ("max_depth", KnobUnit::Count),
    ("max_path_bytes", KnobUnit::Bytes),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobUnit {
    Bytes,
    Duration,
    Count,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// 1-based line in the scenario file.
    pub line: usize,
    /// The line as written, for reports.
    pub text: String,
    pub action: Action,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Simulated time moves forward; a running implementation is then given a tick.
    Advance { ms: i64 },
    /// The implementation stops (a crash: nothing is flushed that was not already on disk).
    Stop,
    /// The implementation starts again from what it persisted, and sweeps at once.
    Start,
    /// One request and what must come back.
    Call { request: Request, expect: Expect },
    /// The harness acts on, or looks at, the scratch root directly.
    Disk(DiskAction),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Any success.
    Ok,
    /// A write succeeded and the cap evicted exactly these (listing paths, in order).
    Written { evicted: Vec<String> },
    /// A read returned exactly these bytes.
    Content(Vec<u8>),
    /// A listing returned exactly these paths.
    Listing(Vec<String>),
    /// Refused with this reason code.
    Refused(String),
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Ok => write!(f, "ok"),
            Expect::Written { evicted } if evicted.is_empty() => {
                write!(f, "written, nothing evicted")
            }
            Expect::Written { evicted } => write!(f, "written, evicted [{}]", evicted.join(", ")),
            Expect::Content(c) => write!(f, "content {:?}", String::from_utf8_lossy(c)),
            Expect::Listing(p) => write!(f, "listing [{}]", p.join(", ")),
            Expect::Refused(r) => write!(f, "refused {r}"),
        }
    }
}

/// Paths here are relative to the scratch root, placeholders already expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskAction {
    Mkdir(String),
    Write(String, Vec<u8>),
    Symlink {
        link: String,
        target: String,
    },
    Exists(String),
    Absent(String),
    /// No path under the root contains this text (identifiers never reach a path, SP-1.2).
    NoPathContains(String),
    /// The working directory handed to the implementation is still empty (SP-1.3).
    WorkdirEmpty,
}

/// A malformed scenario file: its path, line, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// Loads every `*.tdm` file below `dir`, sorted by path, each once (directory symlinks are not
/// followed); two files with one test name are an error at the second.
pub fn load_dir(
    dir: &Path,
    rules: &crate::spec::RuleIndex,
) -> Result<Vec<Scenario>, ScenarioError> {
    let files = tidemark_sim::scenario_files::find(dir, "tdm").map_err(|e| ScenarioError {
        file: dir.to_path_buf(),
        line: 0,
        message: format!("cannot read the scenario directory: {e}"),
    })?;
    let scenarios = files
        .iter()
        .map(|f| parse_file(f, rules))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some((name, first, second)) =
        tidemark_sim::scenario_files::duplicate_name(&scenarios, Scenario::test_name, |s| {
            s.file.as_path()
        })
    {
        return Err(ScenarioError {
            file: second.to_path_buf(),
            line: 1,
            message: format!(
                "the test name {name} is taken by {} already; rename one of the files",
                first.display()
            ),
        });
    }
    Ok(scenarios)
}

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

mod anchor;
pub mod names;
pub(crate) mod parse;

pub use names::{Component, NameSource, PathTemplate, SessionKey};
pub use parse::{parse_file, parse_str};

use crate::profiles::scratchpad::contract::{Bytes, Caller, Request};
/// The profile a header names and the knobs it sets are what an implementation is started with:
/// the contract's.
pub use crate::profiles::scratchpad::contract::{Knobs, Profile};
use crate::scenario::load::{self, LoadErrors};
use crate::variants::{Declared, Guards};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub file: PathBuf,
    /// The sentence the scenario proves.
    pub name: String,
    pub profile: Profile,
    pub rules: Vec<String>,
    /// Mutants this scenario must kill (`kills:`).
    pub kills: Vec<String>,
    /// Capabilities the scenario needs (`needs: sp12_digest`); an implementation that does not
    /// claim one skips the scenario, with the reason.
    pub needs: Vec<String>,
    /// The line of the `needs:` header, for the skip reason (0 when there is none).
    pub needs_line: usize,
    pub knobs: Knobs,
    pub steps: Vec<Step>,
    /// The `variant:` line and the guarded steps (SPEC.md's variants).
    pub guards: Guards,
}

impl Scenario {
    /// The scenario as an implementation taking `declared` plays it: only the steps whose guard
    /// holds for it. (Whether the scenario applies at all is [`Guards::skip_reason`].)
    pub fn as_played_by(&self, declared: &Declared) -> Scenario {
        Scenario {
            steps: self
                .steps
                .iter()
                .filter(|s| self.guards.keeps(s.line, declared))
                .cloned()
                .collect(),
            ..self.clone()
        }
    }

    /// The test name: `<profile>::<file stem>`, so `cargo test eviction` filters by file name.
    pub fn test_name(&self) -> String {
        load::test_name(self.profile.name(), &self.file)
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

/// SPEC.md SP-5.6's default of every scratchpad knob. The harness sends every knob, the
/// scenario's value or else this, so an implementation's own defaults never decide a verdict.
pub const SCRATCHPAD_KNOB_DEFAULTS: &[(&str, i64)] = &[
    ("session_cap_bytes", 1024 * 1024),
    ("requester_ceiling_bytes", 4 * 1024 * 1024),
    ("max_file_bytes", 1024 * 1024),
    ("thread_quiet_ms", 7 * 86_400_000),
    ("pairing_idle_ms", 3_600_000),
    ("sweep_interval_ms", 300_000),
    ("max_depth", 16),
    ("max_path_bytes", 1024),
];

impl Knobs {
    /// Every knob of `profile`: the scenario's values, and SPEC.md's defaults for the rest.
    pub fn complete(&self, profile: Profile) -> BTreeMap<String, i64> {
        let defaults = match profile {
            Profile::Scratchpad => SCRATCHPAD_KNOB_DEFAULTS,
        };
        let mut all: BTreeMap<String, i64> = defaults
            .iter()
            .map(|(name, v)| (name.to_string(), *v))
            .collect();
        all.extend(self.values.iter().map(|(k, v)| (k.clone(), *v)));
        all
    }
}

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
    /// Simulated time moves forward; a running implementation is then given a tick. With
    /// `swept`, the tick must answer exactly these session directories (in any order).
    Advance {
        ms: i64,
        swept: Option<Vec<PathTemplate>>,
    },
    /// The implementation stops (a crash: nothing is flushed that was not already on disk).
    Stop,
    /// The implementation starts again from what it persisted, and sweeps at once; with
    /// `swept`, that sweep must answer exactly these session directories.
    Start { swept: Option<Vec<PathTemplate>> },
    /// One request and what must come back.
    Call { call: Call, expect: Expect },
    /// The harness acts on, or looks at, the scratch root directly.
    Disk(DiskAction),
}

/// A caller's request as the scenario spells it: its paths still hold names to be learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Write {
        caller: Caller,
        path: PathTemplate,
        content: Vec<u8>,
    },
    Read {
        caller: Caller,
        path: PathTemplate,
    },
    List {
        caller: Caller,
        path: Option<PathTemplate>,
    },
    Remove {
        caller: Caller,
        path: PathTemplate,
    },
}

impl Call {
    pub fn caller(&self) -> &Caller {
        match self {
            Call::Write { caller, .. }
            | Call::Read { caller, .. }
            | Call::List { caller, .. }
            | Call::Remove { caller, .. } => caller,
        }
    }

    pub fn path(&self) -> Option<&PathTemplate> {
        match self {
            Call::Write { path, .. } | Call::Read { path, .. } | Call::Remove { path, .. } => {
                Some(path)
            }
            Call::List { path, .. } => path.as_ref(),
        }
    }

    /// The request the implementation receives, with its own names in the path.
    pub fn resolve(&self, names: &dyn NameSource) -> Request {
        let caller = self.caller().clone();
        match self {
            Call::Write { path, content, .. } => Request::Write {
                caller,
                path: Bytes(path.resolve(names)),
                content: Bytes(content.clone()),
            },
            Call::Read { path, .. } => Request::Read {
                caller,
                path: Bytes(path.resolve(names)),
            },
            Call::List { path, .. } => Request::List {
                caller,
                path: path.as_ref().map(|p| Bytes(p.resolve(names))),
            },
            Call::Remove { path, .. } => Request::Remove {
                caller,
                path: Bytes(path.resolve(names)),
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Any success.
    Ok,
    /// A write succeeded and the cap evicted exactly these (listing paths, in order).
    Written { evicted: Vec<PathTemplate> },
    /// A read returned exactly these bytes.
    Content(Vec<u8>),
    /// A listing returned exactly these paths.
    Listing(Vec<PathTemplate>),
    /// Refused with this reason code.
    Refused(String),
}

impl Expect {
    /// The paths this expectation names, for the names the runner must learn first.
    pub fn paths(&self) -> &[PathTemplate] {
        match self {
            Expect::Written { evicted } => evicted,
            Expect::Listing(p) => p,
            _ => &[],
        }
    }

    /// The expectation in the implementation's names, for matching and for reports.
    pub fn resolve(&self, names: &dyn NameSource) -> Expected {
        let all = |ps: &[PathTemplate]| ps.iter().map(|p| p.resolve_lossy(names)).collect();
        match self {
            Expect::Ok => Expected::Ok,
            Expect::Written { evicted } => Expected::Written {
                evicted: all(evicted),
            },
            Expect::Content(c) => Expected::Content(c.clone()),
            Expect::Listing(p) => Expected::Listing(all(p)),
            Expect::Refused(r) => Expected::Refused(r.clone()),
        }
    }
}

/// An [`Expect`] with the implementation's names filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    Ok,
    Written { evicted: Vec<String> },
    Content(Vec<u8>),
    Listing(Vec<String>),
    Refused(String),
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Ok => write!(f, "ok"),
            Expected::Written { evicted } if evicted.is_empty() => {
                write!(f, "written, nothing evicted")
            }
            Expected::Written { evicted } => {
                write!(f, "written, evicted [{}]", evicted.join(", "))
            }
            Expected::Content(c) => write!(f, "content {:?}", String::from_utf8_lossy(c)),
            Expected::Listing(p) => write!(f, "listing [{}]", p.join(", ")),
            Expected::Refused(r) => write!(f, "refused {r}"),
        }
    }
}

/// Paths here are relative to the scratch root; names are resolved by the runner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskAction {
    Mkdir(PathTemplate),
    Write(PathTemplate, Vec<u8>),
    Symlink {
        link: PathTemplate,
        target: String,
    },
    Exists(PathTemplate),
    Absent(PathTemplate),
    /// No path under the root contains this text (identifiers never reach a path, SP-1.2).
    NoPathContains(String),
    /// The working directory handed to the implementation is still empty (SP-1.3).
    WorkdirEmpty,
    /// The root of `knob root missing` still does not exist, and nothing appeared beside it
    /// (SP-1.3: a missing root is not created).
    RootAbsent,
}

impl DiskAction {
    /// The paths this step names under the root.
    pub fn paths(&self) -> Vec<&PathTemplate> {
        match self {
            DiskAction::Mkdir(p)
            | DiskAction::Write(p, _)
            | DiskAction::Exists(p)
            | DiskAction::Absent(p) => vec![p],
            DiskAction::Symlink { link, .. } => vec![link],
            DiskAction::NoPathContains(_) | DiskAction::WorkdirEmpty | DiskAction::RootAbsent => {
                vec![]
            }
        }
    }
}

impl Step {
    /// Every path template the step holds, for the names the runner must learn.
    pub fn paths(&self) -> Vec<&PathTemplate> {
        match &self.action {
            Action::Advance { swept, .. } | Action::Start { swept } => {
                swept.iter().flatten().collect()
            }
            Action::Stop => vec![],
            Action::Call { call, expect } => {
                call.path().into_iter().chain(expect.paths()).collect()
            }
            Action::Disk(d) => d.paths(),
        }
    }
}

/// Loads every scratchpad `*.tdm` file below `dir` (files of another profile are that
/// profile's to load), sorted by path, each once, by the rules every profile shares
/// (`scenario/load.rs`); on any error, all of them.
pub fn load_dir(dir: &Path, rules: &crate::spec::RuleIndex) -> Result<Vec<Scenario>, LoadErrors> {
    load::load_dir(
        dir,
        Profile::Scratchpad.name(),
        |f, text| parse_str(f, text, rules),
        |s| &s.file,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_reference::scratchpad::ScratchpadConfig;

    #[test]
    fn the_knob_defaults_sent_are_the_references_and_every_knob_has_one() {
        let reference = ScratchpadConfig::with_root("/r");
        let all = Knobs::default().complete(Profile::Scratchpad);
        let want = [
            ("session_cap_bytes", reference.session_cap_bytes as i64),
            (
                "requester_ceiling_bytes",
                reference.requester_ceiling_bytes as i64,
            ),
            ("max_file_bytes", reference.max_file_bytes as i64),
            ("thread_quiet_ms", reference.thread_quiet_ms),
            ("pairing_idle_ms", reference.pairing_idle_ms),
            ("sweep_interval_ms", reference.sweep_interval_ms),
            ("max_depth", reference.max_depth as i64),
            ("max_path_bytes", reference.max_path_bytes as i64),
        ];
        assert_eq!(
            all,
            want.map(|(k, v)| (k.to_string(), v)).into_iter().collect()
        );
        for (name, _) in SCRATCHPAD_KNOBS {
            assert!(all.contains_key(*name), "{name} has a default");
        }
    }

    #[test]
    fn a_scenario_value_replaces_its_default_and_the_rest_are_sent() {
        let mut knobs = Knobs::default();
        knobs.values.insert("session_cap_bytes".into(), 1000);
        let all = knobs.complete(Profile::Scratchpad);
        assert_eq!(all["session_cap_bytes"], 1000);
        assert_eq!(all.len(), SCRATCHPAD_KNOB_DEFAULTS.len());
    }
}

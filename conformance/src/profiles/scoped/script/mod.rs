//! Scoped-profile scenarios as text (`scenarios/scoped/*.tdm`), in the same shape as the
//! scratchpad's `.tdm` files: a header, then one step per line with its expectation.
//!
//! ```text
//! scenario: a conversation older than the ttl but still active keeps its uploads
//! profile: scoped
//! rules: SC-5.1, SC-5.3
//! kills: age-only-expiry
//!
//! create workspace w1
//! create agent w1/a1
//! create session w1/a1/s1
//! w1/a1/s1 write session/upload.pdf "contract"   => written session/upload.pdf
//! advance 40d
//! w1/a1/s1 activity                              => ok
//! sweep                                          => swept 0 sessions, 0 deletions
//! w1/a1/s1 read session/upload.pdf               => "contract"
//! ```
//!
//! Steps (a turn is `ws/agent/session`, optionally `+slug=skill-name,...` for its skill table):
//! - `create workspace W [agent=ACCESS] [workspace=ACCESS]`, `create agent W/A [...]`,
//!   `create session W/A/S`; `delete session W/A/S`, `delete agent W/A`, `delete workspace W`
//! - `TURN write PATH "CONTENT"`, `TURN read PATH`, `TURN text PATH`, `TURN list [PREFIX]`,
//!   `TURN delete PATH`, `TURN activity`, `TURN wait KIND ID`, `TURN unwait KIND ID`
//! - `publish skill NAME in W FILE="CONTENT" ...`
//! - `TURN write PATH "CONTENT" during sweep` (a write raced against a sweep)
//! - `advance 1d2h`, `sweep`, `crash at POINT`, `restart`, `heal`,
//!   `faults down`, `faults delete-failure RATE`, `faults error RATE`, `faults fail OP N`,
//!   `faults fail OP from N`,
//!   `faults no-such-bucket`, `faults access-denied`, `faults throttle`, `faults throttle N`
//! - `apply lifecycle BACKSTOP_DAYS`, `lifecycle age-only PREFIX DAYS` (runs an age-only rule
//!   with AWS semantics and answers the keys it deleted)
//! - `bucket PREFIX`, `pending deletions`, `deletion records`, `lifecycle rules`
//! - `close session W/A/S`, `sweep twice at once` (SPEC SL-3, SL-1.3; parsed by
//!   `close.rs`, which `grammar.rs` falls through to)
//! - `erase workspace W within D`, `erase agent W/A within D`, `erasure of SUBJECT`,
//!   `proof of SUBJECT` (SPEC SL-4; their parsing is `erasure.rs`'s)
//! - `retention of W ttl N days`, `retention of W default` (a workspace's retention, SL-5)
//!
//! Expectations after `=>` (a step without one must answer `ok`): `ok`, `written PATH`,
//! `"CONTENT"`, `text "TEXT"`, `no text`, `[a, b, ...]`, `in order [a, b, ...]`, `refused REASON`,
//! `swept N sessions, M deletions`, `crashed`, `published`, `overflowed`, `overflowed as NAME`
//! (binds NAME to the path answered, for later steps' paths: `bindings.rs`), and an erasure's
//! state (`pending`, `met`, `overdue D`, `missed D`).
//!
//! The vocabulary's files: `words.rs` reads the shared lexer's tokens as words; `grammar.rs` is
//! the table of step shapes and expectations (a close and two sweeps at once fall through to
//! `close.rs`, erasures to `erasure.rs`); `load.rs` reads the header and a whole file, checks the
//! citations and the knobs, and dates each step; `bindings.rs` checks and resolves the names
//! `overflowed as NAME` binds. This file holds what a scenario is once read ([`Script`],
//! [`Step`], [`Action`], [`Expect`]), which every one of them builds or reads.

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use crate::scenario::header::utf8_text;

use super::contract::{ScopedOp, ScopedOutcome};

pub mod bindings;
pub mod close;
pub mod erasure;
pub mod grammar;
pub mod load;
pub mod words;

pub use grammar::{CRASH_POINTS, REASONS, WAIT_KINDS};
pub use load::{load_dir, load_dir_with, parse, parse_with, SCOPED_KNOBS, VOCABULARY};
pub use words::duration_ms;

#[derive(Clone, Debug)]
pub struct Script {
    pub file: PathBuf,
    pub name: String,
    pub rules: Vec<String>,
    /// Mutant ids this scenario is meant to kill.
    pub kills: Vec<String>,
    pub knobs: BTreeMap<String, i64>,
    pub steps: Vec<Step>,
    /// The `variant:` line and the guarded steps (SPEC.md's variants).
    pub guards: crate::variants::Guards,
}

impl Script {
    /// The scenario as an implementation taking `declared` plays it: only the steps whose
    /// guard holds for it. (Whether it applies at all is [`Script::skip_reason`].)
    pub fn as_played_by(&self, declared: &crate::variants::Declared) -> Script {
        Script {
            steps: self
                .steps
                .iter()
                .filter(|s| self.guards.keeps(s.line, declared))
                .cloned()
                .collect(),
            ..self.clone()
        }
    }

    /// Why the scenario does not apply to an implementation taking `declared`: its
    /// `variant:` line names another choice.
    pub fn skip_reason(&self, declared: &crate::variants::Declared) -> Option<String> {
        self.guards.skip_reason(declared)
    }

    /// `scoped::<file stem>`, so `cargo test cascade` filters by file name.
    pub fn test_name(&self) -> String {
        crate::scenario::load::test_name(VOCABULARY.profile, &self.file)
    }

    /// The seed of the scenario's S3 fault generator, from its file name, so every runner
    /// (in process, through a program, on either tier) draws the same faults.
    pub fn fault_seed(&self) -> u64 {
        self.file.to_string_lossy().bytes().fold(0u64, |h, b| {
            h.wrapping_mul(1_099_511_628_211).wrapping_add(u64::from(b))
        })
    }
}

#[derive(Clone, Debug)]
pub struct Step {
    pub line: usize,
    pub text: String,
    pub action: Action,
    pub expect: Expect,
}

#[derive(Clone, Debug)]
pub enum Action {
    Advance(i64),
    Op(ScopedOp),
}

/// What a step must answer. Listings and prefix sets compare as given (both sides sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    Ok,
    Written(String),
    Content(String),
    Text(Option<String>),
    List(Vec<String>),
    /// A guest listing whose order is checked too (`in order [a, b]`, SPEC SC-4.4).
    Ordered(Vec<String>),
    Refused(String),
    Swept {
        sessions: u64,
        deletions: u64,
    },
    Crashed,
    Published,
    /// A tool result written to a session file, at a path the implementation chose (SL-7.1);
    /// `overflowed as NAME` binds NAME to that path for the steps below (`bindings.rs`).
    Overflowed(Option<String>),
    /// The states of a subject's erasure obligations, in `erasure::state_text`'s spelling
    /// (SL-4.4), compared as a set with repeats.
    Erasures(Vec<String>),
}

impl Expect {
    /// Whether `got` satisfies this expectation.
    pub fn matches(&self, got: &ScopedOutcome) -> bool {
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        match (self, got) {
            (Expect::Ok, ScopedOutcome::Ok) => true,
            (Expect::Written(p), ScopedOutcome::Written { path }) => p == path,
            (Expect::Content(c), ScopedOutcome::Content { content }) => c == content,
            (Expect::Text(t), ScopedOutcome::Text { text }) => t == text,
            (Expect::List(l), ScopedOutcome::Listing { paths }) => sorted(l) == sorted(paths),
            (Expect::List(l), ScopedOutcome::Keys { keys }) => sorted(l) == sorted(keys),
            (Expect::List(l), ScopedOutcome::Prefixes { prefixes }) => {
                sorted(l) == sorted(prefixes)
            }
            (Expect::List(l), ScopedOutcome::Rules { rules }) => sorted(l) == sorted(rules),
            (Expect::Ordered(l), ScopedOutcome::Listing { paths }) => l == paths,
            (Expect::Refused(r), ScopedOutcome::Refused { reason, .. }) => r == reason,
            (
                Expect::Swept {
                    sessions,
                    deletions,
                },
                ScopedOutcome::Swept {
                    sessions: s,
                    obligations: o,
                },
            ) => sessions == s && deletions == o,
            (Expect::Crashed, ScopedOutcome::Crashed { .. }) => true,
            (Expect::Published, ScopedOutcome::Published { .. }) => true,
            (Expect::Overflowed(_), ScopedOutcome::Written { path }) => {
                path.starts_with("session/")
            }
            (Expect::Erasures(l), ScopedOutcome::Erasures { states }) => {
                sorted(l) == sorted(states)
            }
            _ => false,
        }
    }
}

//! The operations an exploration generates: small indices into fixed tables, so a sequence is
//! compact to save, shrinks well, and prints as lines a person reads like a scenario.
//!
//! Two generator versions exist. A seed means what its version generates: version 1 is kept
//! unchanged so a seed number found before version 2 still names the same workload
//! (`generate_version(1, seed)`); version 2 ([`GENERATOR_VERSION`]) adds single-path listings,
//! focused seeds (one caller, one thread, so overwrites under cap pressure, refusals at a full cap
//! and equal times in eviction are common) and short advances that probe the sweeper's schedule.
//! Saved fixtures hold their operations, so no replay depends on either generator.

use crate::profiles::scratchpad::contract::{Bytes, Caller, Request};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt;

pub const WHO: [&str; 3] = ["alice", "bob", "carol"];
pub const CHANNEL: &str = "g";
/// Places: two threads and the caller's own channel pairing.
pub const PLACES: [Option<&str>; 3] = [Some("T1"), Some("T2"), None];
/// Paths chosen to collide: shared names, a directory that is also written as a file, a climb,
/// another member's listing path, and paths through a planted link.
pub const PATHS: [&str; 10] = [
    "notes.md",
    "a.txt",
    "b.txt",
    "dir/c.txt",
    "dir",
    "dir/deep/d.txt",
    "../x",
    "@bob/notes.md",
    "link/secret.txt",
    "link",
];
/// Where the harness may plant a symbolic link (a fault: someone else's link in the subtree).
pub const LINK_PATHS: [&str; 2] = ["link", "dir/link"];
/// With the exploration knobs (cap 1000 B), 1001 is over size.
pub const SIZES: [u16; 5] = [10, 200, 450, 900, 1001];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SimOp {
    /// Does nothing. First among the alternatives, so shrinking turns unneeded steps into it.
    Nop,
    Write {
        who: u8,
        place: u8,
        path: u8,
        size: u8,
    },
    Read {
        who: u8,
        place: u8,
        path: u8,
    },
    List {
        who: u8,
        place: u8,
    },
    Remove {
        who: u8,
        place: u8,
        path: u8,
    },
    /// Time moves (negative: the clock jumps backward); a running implementation gets a tick.
    Advance {
        ms: i64,
    },
    /// The implementation dies; nothing but the disk survives.
    Crash,
    /// The implementation starts again (and sweeps at once).
    Restart,
    /// The harness places a symbolic link pointing outside the root.
    PlantLink {
        who: u8,
        place: u8,
        path: u8,
    },
    /// Lists one path: a file (SP-3.3 "or that one file"), a directory, or nothing. Generator
    /// version 2 on.
    ListPath {
        who: u8,
        place: u8,
        path: u8,
    },
}

pub fn caller(who: u8, place: u8) -> Caller {
    Caller {
        requester: WHO[who as usize % WHO.len()].to_string(),
        channel: CHANNEL.to_string(),
        thread: PLACES[place as usize % PLACES.len()].map(str::to_string),
    }
}

/// A path from the table, with `@bob` expanded to bob's hashed directory (SP-1.2).
pub fn path(i: u8) -> Vec<u8> {
    PATHS[i as usize % PATHS.len()]
        .replace(
            "@bob",
            &tidemark_reference::scratchpad::requester_dir("bob"),
        )
        .into_bytes()
}

/// Content for the write at position `step`: distinct per step so a read tells writes apart.
pub fn content(step: usize, size: u8) -> Vec<u8> {
    let n = SIZES[size as usize % SIZES.len()] as usize;
    let mut c = format!("step {step};").into_bytes();
    c.extend((0..n).map(|i| b'a' + (i % 26) as u8));
    c.truncate(n);
    c
}

impl SimOp {
    /// The contract request for a call operation, `None` for the others.
    pub fn request(&self, step: usize) -> Option<Request> {
        Some(match *self {
            SimOp::Write {
                who,
                place,
                path: p,
                size,
            } => Request::Write {
                caller: caller(who, place),
                path: Bytes(path(p)),
                content: Bytes(content(step, size)),
            },
            SimOp::Read {
                who,
                place,
                path: p,
            } => Request::Read {
                caller: caller(who, place),
                path: Bytes(path(p)),
            },
            SimOp::List { who, place } => Request::List {
                caller: caller(who, place),
                path: None,
            },
            SimOp::ListPath {
                who,
                place,
                path: p,
            } => Request::List {
                caller: caller(who, place),
                path: Some(Bytes(path(p))),
            },
            SimOp::Remove {
                who,
                place,
                path: p,
            } => Request::Remove {
                caller: caller(who, place),
                path: Bytes(path(p)),
            },
            _ => return None,
        })
    }
}

fn duration(ms: i64) -> String {
    if ms < 0 {
        // Through u64, so `i64::MIN` (a hostile saved failure's) is written, not negated.
        return format!("-{}", unsigned_duration(ms.unsigned_abs()));
    }
    unsigned_duration(ms as u64)
}

fn unsigned_duration(ms: u64) -> String {
    let units = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
        (1, "ms"),
    ];
    let mut rest = ms;
    let mut s = String::new();
    for (u, name) in units {
        if rest >= u {
            s.push_str(&format!("{}{name}", rest / u));
            rest %= u;
        }
    }
    if s.is_empty() {
        s.push_str("0s");
    }
    s
}

impl fmt::Display for SimOp {
    /// Scenario-like spelling: `alice@#g/T1 write dir/c.txt 450B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = |w: u8, p: u8| caller(w, p).display();
        let p = |i: u8| PATHS[i as usize % PATHS.len()];
        match *self {
            SimOp::Nop => write!(f, "nop"),
            SimOp::Write {
                who: w,
                place,
                path,
                size,
            } => {
                write!(
                    f,
                    "{} write {} {}B",
                    who(w, place),
                    p(path),
                    SIZES[size as usize % SIZES.len()]
                )
            }
            SimOp::Read {
                who: w,
                place,
                path,
            } => write!(f, "{} read {}", who(w, place), p(path)),
            SimOp::List { who: w, place } => write!(f, "{} list", who(w, place)),
            SimOp::ListPath {
                who: w,
                place,
                path,
            } => write!(f, "{} list {}", who(w, place), p(path)),
            SimOp::Remove {
                who: w,
                place,
                path,
            } => write!(f, "{} remove {}", who(w, place), p(path)),
            SimOp::Advance { ms } => write!(f, "advance {}", duration(ms)),
            SimOp::Crash => write!(f, "stop"),
            SimOp::Restart => write!(f, "start"),
            SimOp::PlantLink {
                who: w,
                place,
                path,
            } => {
                write!(
                    f,
                    "disk symlink {}:{} -> $OUTSIDE",
                    who(w, place),
                    LINK_PATHS[path as usize % LINK_PATHS.len()]
                )
            }
        }
    }
}

/// A path index, favouring `notes.md` and `@bob/notes.md`: own-path precedence only shows when
/// one member writes under another's listed path and the other has that file too.
fn path_index() -> impl Strategy<Value = u8> {
    prop_oneof![3 => Just(0u8), 3 => Just(7u8), 6 => 0u8..PATHS.len() as u8]
}

/// The generator a seed runs through unless told otherwise; recorded in saved fixtures.
pub const GENERATOR_VERSION: u32 = 2;

/// Version 1's step, unchanged: weights tuned so 200 steps span about a month of simulated time
/// (forward advances average about 14 hours and are about a quarter of the steps), with crashes,
/// backward clock jumps and planted links as rare faults.
pub fn op_v1() -> impl Strategy<Value = SimOp> {
    let who = 0u8..3;
    let place = 0u8..3;
    let forward = prop_oneof![
        3 => Just(1_000i64),
        5 => Just(60_000),
        5 => Just(300_000),
        4 => Just(1_800_000),
        4 => Just(3_540_000),
        3 => Just(3_600_000),
        4 => Just(21_600_000),
        6 => Just(86_400_000),
        3 => Just(3 * 86_400_000),
        1 => Just(7 * 86_400_000),
    ];
    let backward = prop_oneof![Just(-60_000i64), Just(-3_600_000), Just(-86_400_000)];
    prop_oneof![
        1 => Just(SimOp::Nop),
        30 => (who.clone(), place.clone(), path_index(), 0u8..SIZES.len() as u8)
            .prop_map(|(who, place, path, size)| SimOp::Write { who, place, path, size }),
        14 => (who.clone(), place.clone(), path_index()).prop_map(|(who, place, path)| SimOp::Read { who, place, path }),
        12 => (who.clone(), place.clone()).prop_map(|(who, place)| SimOp::List { who, place }),
        8 => (who.clone(), place.clone(), path_index()).prop_map(|(who, place, path)| SimOp::Remove { who, place, path }),
        24 => forward.prop_map(|ms| SimOp::Advance { ms }),
        2 => backward.prop_map(|ms| SimOp::Advance { ms }),
        2 => Just(SimOp::Crash),
        3 => Just(SimOp::Restart),
        1 => (who, place, 0u8..LINK_PATHS.len() as u8).prop_map(|(who, place, path)| SimOp::PlantLink { who, place, path }),
    ]
}

/// Where a version-2 seed puts its callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// Three requesters in two threads and their pairings, as version 1.
    Spread,
    /// Alice in one thread, bob a third of the time (so another member's files are evicted too):
    /// writes pile into one session, so overwrites of the oldest file under cap pressure, writes
    /// onto `dir` or through a file at a full cap, and files written at one instant and then
    /// evicted are common.
    OneSession,
    /// One requester in all three places: their total nears the ceiling (SP-4.1), so
    /// overwrites that cross it are common.
    OneRequester,
}

/// Version 2's step: version 1's mix plus single-path listings and short advances (2 and 3
/// minutes: with the 5-minute sweep interval, ticks that fall between a fixed period's sweep and
/// one counted from the previous sweep, SP-5.5), with callers as `focus` says.
pub fn op_v2(focus: Focus) -> BoxedStrategy<SimOp> {
    let (who, place): (BoxedStrategy<u8>, BoxedStrategy<u8>) = match focus {
        Focus::Spread => ((0u8..3).boxed(), (0u8..3).boxed()),
        Focus::OneSession => (
            prop_oneof![2 => Just(0u8), 1 => Just(1u8)].boxed(),
            Just(0u8).boxed(),
        ),
        Focus::OneRequester => (Just(0u8).boxed(), (0u8..3).boxed()),
    };
    // Focused, mostly the paths that collide in one subtree (notes.md, a.txt, b.txt, dir/c.txt,
    // dir, dir/deep/d.txt), `notes.md` and bob's listed path favoured as in version 1 (own-path
    // precedence needs both), and now and then a path through a planted link; the climb is the
    // spread workload's.
    let path: BoxedStrategy<u8> = match focus {
        Focus::Spread => path_index().boxed(),
        _ => prop_oneof![2 => Just(0u8), 2 => Just(7u8), 8 => 0u8..6, 1 => Just(8u8)].boxed(),
    };
    let forward = prop_oneof![
        3 => Just(1_000i64),
        5 => Just(60_000),
        3 => Just(120_000),
        3 => Just(180_000),
        5 => Just(300_000),
        4 => Just(1_800_000),
        4 => Just(3_540_000),
        3 => Just(3_600_000),
        4 => Just(21_600_000),
        6 => Just(86_400_000),
        3 => Just(3 * 86_400_000),
        1 => Just(7 * 86_400_000),
    ];
    let backward = prop_oneof![Just(-60_000i64), Just(-3_600_000), Just(-86_400_000)];
    prop_oneof![
        1 => Just(SimOp::Nop),
        30 => (who.clone(), place.clone(), path.clone(), 0u8..SIZES.len() as u8)
            .prop_map(|(who, place, path, size)| SimOp::Write { who, place, path, size }),
        14 => (who.clone(), place.clone(), path.clone()).prop_map(|(who, place, path)| SimOp::Read { who, place, path }),
        10 => (who.clone(), place.clone()).prop_map(|(who, place)| SimOp::List { who, place }),
        6 => (who.clone(), place.clone(), path.clone()).prop_map(|(who, place, path)| SimOp::ListPath { who, place, path }),
        8 => (who.clone(), place.clone(), path).prop_map(|(who, place, path)| SimOp::Remove { who, place, path }),
        24 => forward.prop_map(|ms| SimOp::Advance { ms }),
        2 => backward.prop_map(|ms| SimOp::Advance { ms }),
        2 => Just(SimOp::Crash),
        3 => Just(SimOp::Restart),
        1 => (who, place, 0u8..LINK_PATHS.len() as u8).prop_map(|(who, place, path)| SimOp::PlantLink { who, place, path }),
    ]
    .boxed()
}

/// Operations per seed in the standard workload.
pub const OPS_PER_SEED: usize = 200;

/// A whole seed's workload under generator `version`: always [`OPS_PER_SEED`] steps (shrinking
/// turns steps into `Nop`), and, for one seed in twenty, an unmounted root. Version 2 spreads
/// half the seeds and focuses a quarter each on one session and on one requester ([`Focus`]).
pub fn workload_version(version: u32) -> BoxedStrategy<(bool, Vec<SimOp>)> {
    match version {
        1 => (
            proptest::bool::weighted(0.05),
            crate::explore::shrink::sequence(op_v1().boxed(), OPS_PER_SEED),
        )
            .boxed(),
        _ => (
            proptest::bool::weighted(0.05),
            prop_oneof![
                2 => Just(Focus::Spread),
                1 => Just(Focus::OneSession),
                1 => Just(Focus::OneRequester),
            ],
        )
            .prop_flat_map(|(unmounted, focus)| {
                (
                    Just(unmounted),
                    crate::explore::shrink::sequence(op_v2(focus), OPS_PER_SEED),
                )
            })
            .boxed(),
    }
}

/// The current generator's workload.
pub fn workload() -> BoxedStrategy<(bool, Vec<SimOp>)> {
    workload_version(GENERATOR_VERSION)
}

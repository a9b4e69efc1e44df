//! The running byte counts (SP-4.5) always equal what one walk of the disk measures: after any
//! sequence of writes, overwrites, removals, evictions and sweeps, and after a restart.

use proptest::prelude::*;
use std::sync::Arc;
use tidemark_reference::clock::{ManualClock, Timestamp, HOUR_MS};
use tidemark_reference::scratchpad::{measure_usage, CallContext, Scratchpad, ScratchpadConfig};

#[derive(Clone, Debug)]
enum Step {
    Write {
        who: usize,
        thread: Option<usize>,
        path: usize,
        size: usize,
    },
    Remove {
        who: usize,
        thread: Option<usize>,
        path: usize,
    },
    Advance {
        hours: i64,
    },
    Restart,
}

const WHO: [&str; 3] = ["alice", "bob", "carol"];
const PATHS: [&str; 4] = ["a.txt", "b.txt", "dir/c.txt", "notes.md"];

fn step() -> impl Strategy<Value = Step> {
    let thread = proptest::option::of(0usize..2);
    prop_oneof![
        6 => (0usize..3, thread.clone(), 0usize..4, 0usize..900).prop_map(|(who, thread, path, size)| Step::Write { who, thread, path, size }),
        2 => (0usize..3, thread, 0usize..4).prop_map(|(who, thread, path)| Step::Remove { who, thread, path }),
        1 => (0i64..48).prop_map(|hours| Step::Advance { hours }),
        1 => Just(Step::Restart),
    ]
}

fn ctx(who: usize, thread: Option<usize>) -> CallContext {
    CallContext {
        requester: WHO[who].into(),
        channel: "g".into(),
        thread: thread.map(|t| format!("T{t}")),
    }
}

fn config(root: &std::path::Path) -> ScratchpadConfig {
    let mut cfg = ScratchpadConfig::with_root(root);
    cfg.session_cap_bytes = 1000;
    cfg.max_file_bytes = 1000;
    cfg.requester_ceiling_bytes = 2500;
    cfg
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]
    #[test]
    fn the_running_counts_always_match_a_walk_of_the_disk(steps in proptest::collection::vec(step(), 1..60)) {
        let tmp = tempfile::tempdir().unwrap();
        let clock = ManualClock::starting_at(Timestamp(1_767_225_600_000));
        let mut pad = Scratchpad::open(config(tmp.path()), Arc::new(clock.clone())).unwrap();
        pad.start().unwrap();
        for s in steps {
            match s {
                Step::Write { who, thread, path, size } => { let _ = pad.write(&ctx(who, thread), PATHS[path].as_bytes(), &vec![b'x'; size]); }
                Step::Remove { who, thread, path } => { let _ = pad.remove(&ctx(who, thread), PATHS[path].as_bytes()); }
                Step::Advance { hours } => { clock.advance_ms(hours * HOUR_MS); pad.tick().unwrap(); }
                Step::Restart => {
                    pad = Scratchpad::open(config(tmp.path()), Arc::new(clock.clone())).unwrap();
                    pad.start().unwrap();
                }
            }
            prop_assert_eq!(pad.usage(), &measure_usage(tmp.path()).unwrap());
        }
    }
}

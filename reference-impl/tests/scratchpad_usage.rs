//! The running byte counts (SP-4.5) and the eviction index (SP-4.2) always equal what one walk of
//! the disk measures: after any sequence of writes, overwrites, removals, evictions and sweeps,
//! and after a restart. Each eviction the index chooses is the one a walk of the disk just before
//! the write chooses (oldest first, equal times by listing path, never the file overwritten).

use proptest::prelude::*;
use std::sync::Arc;
use tidemark_reference::clock::{ManualClock, Timestamp, HOUR_MS};
use tidemark_reference::scratchpad::{
    measure, measure_usage, CallContext, Scratchpad, ScratchpadConfig,
};

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
        // Zero hours: several writes share a time, so ties in eviction are exercised.
        1 => (0i64..48).prop_map(|hours| Step::Advance { hours }),
        1 => Just(Step::Advance { hours: 0 }),
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
                Step::Write { who, thread, path, size } => {
                    let c = ctx(who, thread);
                    let keep = format!("{}/{}", c.requester_dir(), PATHS[path]);
                    let predicted = walk_predicts(tmp.path(), &c.session_dir(), &keep, size as u64);
                    if let Ok(w) = pad.write(&c, PATHS[path].as_bytes(), &vec![b'x'; size]) {
                        prop_assert_eq!(w.evicted, predicted);
                    }
                }
                Step::Remove { who, thread, path } => { let _ = pad.remove(&ctx(who, thread), PATHS[path].as_bytes()); }
                Step::Advance { hours } => { clock.advance_ms(hours * HOUR_MS); pad.tick().unwrap(); }
                Step::Restart => {
                    pad = Scratchpad::open(config(tmp.path()), Arc::new(clock.clone())).unwrap();
                    pad.start().unwrap();
                }
            }
            prop_assert_eq!(pad.usage(), &measure_usage(tmp.path()).unwrap());
            let walked = measure(tmp.path()).unwrap().1;
            prop_assert!(
                pad.eviction_order().same_files(&walked),
                "index {:?}\nwalk  {:?}",
                pad.eviction_order().files(),
                walked.files()
            );
        }
    }
}

/// What SP-4.2 evicts for a write of `len` bytes over `keep`, from a walk of the session's disk
/// (the cap is `config`'s 1000 B): files oldest first, equal times by listing path.
fn walk_predicts(root: &std::path::Path, session: &str, keep: &str, len: u64) -> Vec<String> {
    let sdir = root.join(session);
    let mut files: Vec<(i64, String, u64)> = Vec::new();
    let mut stack = vec![sdir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                let listed = e
                    .path()
                    .strip_prefix(&sdir)
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                let mtime = Timestamp::from_system_time(m.modified().unwrap()).as_millis();
                files.push((mtime, listed, m.len()));
            }
        }
    }
    let total: u64 = files.iter().map(|f| f.2).sum();
    let old = files.iter().find(|f| f.1 == keep).map_or(0, |f| f.2);
    let need = (total - old + len).saturating_sub(1000);
    files.sort();
    let mut freed = 0;
    let mut out = Vec::new();
    for (_, listed, size) in files {
        if freed >= need {
            break;
        }
        if listed != keep {
            freed += size;
            out.push(listed);
        }
    }
    out
}

/// Someone else removes the index's oldest file, touches the next one and plants a link where a
/// third one's directory was: the evicting write still evicts what a walk of the disk says, follows
/// no link, and leaves the index and the counts equal to a walk.
#[test]
fn the_index_is_checked_against_the_disk_before_it_evicts() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("c.txt"), "outside").unwrap();
    let clock = ManualClock::starting_at(Timestamp(1_767_225_600_000));
    let mut pad = Scratchpad::open(config(tmp.path()), Arc::new(clock.clone())).unwrap();
    pad.start().unwrap();
    let c = ctx(0, Some(0));
    for p in ["dir/c.txt", "a.txt", "b.txt", "notes.md"] {
        pad.write(&c, p.as_bytes(), &[b'x'; 200]).unwrap();
        clock.advance_ms(1_000);
    }
    let mine = tmp.path().join(c.session_dir()).join(c.requester_dir());
    // dir/c.txt (oldest) becomes a link to a directory outside holding a c.txt; a.txt is
    // removed; b.txt is touched to be the newest.
    std::fs::remove_dir_all(mine.join("dir")).unwrap();
    std::os::unix::fs::symlink(outside.path(), mine.join("dir")).unwrap();
    std::fs::remove_file(mine.join("a.txt")).unwrap();
    let later = Timestamp(1_767_225_600_000 + 3_600_000);
    filetime::set_file_mtime(
        mine.join("b.txt"),
        filetime::FileTime::from_system_time(later.to_system_time()),
    )
    .unwrap();
    // On disk: notes.md (200 B, t+3s) and b.txt (200 B, t+1h). 400 + 700 > 1000: notes.md goes.
    let w = pad.write(&c, b"new.txt", &[b'x'; 700]).unwrap();
    assert_eq!(w.evicted, vec![format!("{}/notes.md", c.requester_dir())]);
    assert!(outside.path().join("c.txt").exists(), "a link was followed");
    assert!(mine.join("b.txt").exists());
    assert_eq!(pad.usage(), &measure_usage(tmp.path()).unwrap());
    assert!(pad
        .eviction_order()
        .same_files(&measure(tmp.path()).unwrap().1));
}

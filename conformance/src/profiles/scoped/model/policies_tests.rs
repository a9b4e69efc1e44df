//! The model's part SL, tried on hand-written sequences (memory tier). Random search for its
//! mutants is exploration's to test (`explore/mod.rs`), which the model does not import.

use super::super::{run_ops, SequenceError, Tier};
use super::*;
use tidemark_reference::scoped::ScopedMutant;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// a1's sessions: s1 and s2 from setup, s3 started by its first write, then s1 (created
/// first) used again, so activity runs out of creation order; s2 holds a wait. A count of
/// one keeps s1's files, s2's for its wait, and sweeps s3's, which a2's count leaves alone.
fn out_of_creation_order() -> Vec<ModelOp> {
    let write = |session: u8, path: u8| ModelOp::Write {
        session,
        path,
        agent_scope: false,
    };
    vec![
        write(0, 0),
        write(1, 1),
        write(2, 2),
        ModelOp::Wait {
            session: 1,
            kind: 0,
            id: 0,
            add: true,
        },
        ModelOp::Advance { days: 0, hours: 1 },
        write(4, 0),
        ModelOp::Advance { days: 0, hours: 1 },
        ModelOp::Activity { session: 0 },
        ModelOp::SetCount {
            agent: 0,
            keep: Some(1),
        },
        ModelOp::SetCount {
            agent: 1,
            keep: Some(1),
        },
        ModelOp::Sweep,
        ModelOp::List { session: 0 },
        ModelOp::List { session: 1 },
        ModelOp::List { session: 2 },
    ]
}

#[test]
fn a_count_ranks_an_agents_sessions_by_activity_and_each_count_mutant_diverges() {
    let rt = runtime();
    let ops = out_of_creation_order();
    let run = |m| rt.block_on(run_ops(Tier::Memory, 3, &ops, m, None));
    let passed = run(None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        passed.swept_files, 1,
        "the count sweeps a1/s3's one file: {:?}",
        passed.trace
    );
    for m in [
        ScopedMutant::CountByCreation,
        ScopedMutant::CountSweepsWaiting,
        ScopedMutant::CountPerWorkspace,
    ] {
        assert!(
            matches!(run(Some(m)), Err(SequenceError::Diverged(_))),
            "{} passes the sequence",
            m.id()
        );
    }
}

/// SL-2.1's decision: a session a sweep emptied takes no place among the N. a1/s1 waits,
/// a1/s2 is swept by a count of one; raised to two, with s1's wait gone, the last two
/// sessions whose files are kept are s3 and s1, so s1 keeps its file; lowered to one, it goes.
#[test]
fn an_emptied_session_takes_no_place_among_the_last_n_and_the_mutant_that_ranks_it_diverges() {
    let write = |session: u8| ModelOp::Write {
        session,
        path: 0,
        agent_scope: false,
    };
    let wait = |add: bool| ModelOp::Wait {
        session: 0,
        kind: 0,
        id: 0,
        add,
    };
    let count = |keep: i64| ModelOp::SetCount {
        agent: 0,
        keep: Some(keep),
    };
    let hour = ModelOp::Advance { days: 0, hours: 1 };
    let ops = vec![
        write(0),
        wait(true),
        hour.clone(),
        write(1),
        hour,
        write(4),
        count(1),
        ModelOp::Sweep,
        count(2),
        wait(false),
        ModelOp::Sweep,
        count(1),
        ModelOp::Sweep,
    ];
    let rt = runtime();
    let passed = rt
        .block_on(run_ops(Tier::Memory, 9, &ops, None, None))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        passed.swept_files, 2,
        "s2's file, then s1's: {:?}",
        passed.trace
    );
    let r = rt.block_on(run_ops(
        Tier::Memory,
        9,
        &ops,
        Some(ScopedMutant::CountRanksEmptiedSessions),
        None,
    ));
    let Err(SequenceError::Diverged(d)) = r else {
        panic!("count-ranks-emptied-sessions passes: {r:?}")
    };
    assert_eq!(d.step, 10, "the second sweep takes s1's file: {d}");
}

#[test]
fn a_tool_result_at_the_limit_is_shown_and_one_byte_over_is_a_session_file() {
    let rt = runtime();
    let ops = [1, 2].map(|size| ModelOp::ToolOutput { session: 0, size });
    let passed = rt
        .block_on(run_ops(Tier::Memory, 5, &ops, None, None))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        passed
            .trace
            .iter()
            .any(|l| l.starts_with("  (written session/")),
        "{:?}",
        passed.trace
    );
    for m in [
        ScopedMutant::OverflowAtTheLimit,
        ScopedMutant::OverflowOutsideSession,
    ] {
        let r = rt.block_on(run_ops(Tier::Memory, 5, &ops, Some(m), None));
        assert!(
            matches!(r, Err(SequenceError::Diverged(_))),
            "{} passes",
            m.id()
        );
    }
}

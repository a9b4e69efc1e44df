//! Generator 7's operations (closes, workspaces' retention and lifecycle configurations, a tool
//! result handed in again, two sweeps at once, a count after an emptied session), tried on
//! hand-written sequences on the memory tier: each passes against the reference, and each
//! mutant it stages makes it diverge.

use super::ops::IdStyle;
use super::{run_ops, ModelOp, SequenceError, Tier};
use tidemark_reference::scoped::ScopedMutant;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Runs `ops` against the reference (which must pass) and against each of `mutants` (each
/// must diverge); answers the files the reference's sweeps removed.
fn passes_and_each_mutant_diverges(ops: &[ModelOp], mutants: &[ScopedMutant]) -> usize {
    let rt = runtime();
    let run = |m| rt.block_on(run_ops(Tier::Memory, 7, ops, m, None));
    let passed = run(None).unwrap_or_else(|e| panic!("{e}"));
    for m in mutants {
        assert!(
            matches!(run(Some(*m)), Err(SequenceError::Diverged(_))),
            "{} passes the sequence",
            m.id()
        );
    }
    passed.swept_files
}

fn write(session: u8) -> ModelOp {
    ModelOp::Write {
        session,
        path: 0,
        agent_scope: false,
    }
}

fn close(session: u8, again_after_hours: u8) -> ModelOp {
    ModelOp::Close {
        session,
        again_after_hours,
    }
}

/// a1/s1 closed and left: swept at its 3-day grace, 27 days before its TTL. a1/s2 closed with a
/// wait: kept. a2/s1 closed, then active: reopened, kept. a2/s2 closed twice two days apart:
/// swept at its first close's grace.
#[test]
fn a_closed_session_goes_at_its_grace_unless_it_waits_or_reopened_and_a_second_close_keeps_the_first(
) {
    let ops = vec![
        write(0),
        write(1),
        write(2),
        write(3),
        ModelOp::Wait {
            session: 1,
            kind: 0,
            id: 0,
            add: true,
        },
        close(0, 0),
        close(1, 0),
        close(2, 0),
        ModelOp::Activity { session: 2 },
        close(3, 48),
        ModelOp::Advance { days: 1, hours: 1 },
        ModelOp::Sweep,
    ];
    let swept = passes_and_each_mutant_diverges(
        &ops,
        &[
            ScopedMutant::CloseWaitsForTtl,
            ScopedMutant::CloseSweepsWaiting,
            ScopedMutant::ActivityKeepsClose,
            ScopedMutant::RepeatedCloseMovesTime,
        ],
    );
    assert_eq!(swept, 2, "a1/s1's and a2/s2's one file each");
}

/// w2 and w3 shorter than the deployment, the shorter one with the greater id: the one rule
/// of the budget is the shorter's. w1 puts 45 days and then the deployment's again: its
/// session goes at 30 days. A TTL at the backstop is refused.
#[test]
fn workspace_rules_follow_the_shortest_ttls_within_the_budget_and_a_retention_put_replaces_the_last(
) {
    let ids = IdStyle::CURRENT;
    // WORKSPACES: w1, w2, w3, w9.
    let (short, long) = if ids.id("w2") > ids.id("w3") {
        (1, 2)
    } else {
        (2, 1)
    };
    let retention = |workspace: u8, ttl_days: Option<i64>| ModelOp::SetRetention {
        workspace,
        ttl_days,
    };
    let ops = vec![
        retention(short, Some(3)),
        retention(long, Some(7)),
        retention(long, Some(365)),
        retention(3, Some(7)),
        retention(0, Some(45)),
        retention(0, None),
        ModelOp::ApplyLifecycle { backstop_days: 365 },
        write(0),
        ModelOp::Advance { days: 30, hours: 0 },
        ModelOp::Sweep,
    ];
    let swept = passes_and_each_mutant_diverges(
        &ops,
        &[
            ScopedMutant::WorkspaceRulesById,
            ScopedMutant::WorkspaceRulesOverBudget,
            ScopedMutant::WorkspaceRetentionMerged,
            ScopedMutant::WorkspaceTtlAtBackstop,
            ScopedMutant::KeptClassesExpire,
        ],
    );
    assert_eq!(swept, 1, "a1/s1's file, at the deployment's 30 days");
}

/// The repeated tool result overflows, the guest edits that file, and it comes again: it goes
/// to another file, the edit kept.
#[test]
fn a_tool_result_handed_in_again_never_overwrites_the_guests_edit_of_its_file() {
    let ops = vec![
        ModelOp::OverflowAgain {
            session: 0,
            edit: false,
        },
        ModelOp::OverflowAgain {
            session: 0,
            edit: false,
        },
        ModelOp::OverflowAgain {
            session: 0,
            edit: true,
        },
        ModelOp::List { session: 0 },
    ];
    passes_and_each_mutant_diverges(&ops, &[ScopedMutant::OverflowOverwrites]);
}

/// a1/s1 and a1/s2 closed, swept a millisecond before their grace ends (nothing due), then
/// two sweeps at once as it ends: between them both sessions are swept and counted once.
#[test]
fn two_sweeps_at_once_over_two_closed_sessions_count_each_once() {
    let ops = [write(0), write(1), ModelOp::SweepsAtOnce { sessions: 0b11 }];
    let swept = passes_and_each_mutant_diverges(&ops, &[ScopedMutant::PolicySweepUnclaimed]);
    assert_eq!(swept, 2, "both closed sessions' files");
}

/// a1/s2, the newer of a1's two sessions, closed and swept empty at its grace; a count of one
/// then keeps a1/s1, the one session whose files are kept.
#[test]
fn a_count_set_after_a_sweep_emptied_the_newer_session_keeps_the_older() {
    let ops = [
        write(0),
        write(1),
        ModelOp::EmptiedThenCount {
            agent: 0,
            rank: 0,
            lower: 0,
            hours: 0,
        },
    ];
    let swept = passes_and_each_mutant_diverges(&ops, &[ScopedMutant::CountRanksEmptiedSessions]);
    assert_eq!(swept, 1, "a1/s2's file only");
}

//! The scoped world's workload: each guest's plan (its sessions created, the kept one given a
//! wait and files, then operations from its own stream across its active, shut and exposed
//! sessions, part SL's calls among them from a stream of their own, and the kept session read
//! back at the end), and the person deleting and re-creating things (and setting count
//! policies) in the exposed workspace.

use rand::Rng;
use tidemark_reference::scoped::Access;
use tidemark_sim::seed::MasterSeed;

use super::names::{content_for, readable_by_agent, refused_spellings, TRAVERSALS};
use super::oracle::{Guest, PROMOTED};
use super::session::Sess;
use super::{
    turn, AGENTS, EXPOSED, GUESTS, HOME, OPS_PER_CLIENT, REF_PATH, SKILL_PATH,
    TOOL_OUTPUT_LIMIT_BYTES,
};
use crate::profiles::scoped::contract::{ScopedOp, Turn, WaitKindName};

/// A path to refuse: the guest's own stream picks a traversal as it always has; then, half the
/// time, the hostile stream swaps it for a spelling from [`refused_spellings`].
fn refused_pick(rng: &mut impl Rng, hostile: &mut impl Rng, t: &Turn) -> String {
    let traversal = TRAVERSALS[rng.gen_range(0..TRAVERSALS.len())];
    let refused = refused_spellings(t);
    if hostile.gen_bool(0.5) {
        refused[hostile.gen_range(TRAVERSALS.len()..refused.len())]
            .0
            .clone()
    } else {
        traversal.to_string()
    }
}

/// A guest's plan: `(pause in ms, session, op, retry until it succeeds)`.
type Plan = Vec<(u64, Sess, ScopedOp, bool)>;

pub(super) fn guest_plan(master: MasterSeed, g: &Guest) -> Plan {
    let c = g.c;
    let mut rng = master.stream(&format!("scoped-world-guest-{c}"));
    // Hostile spellings draw from their own stream, so adding spellings never moves the rest
    // of a guest's plan (the races a seed is known to stage stay staged).
    let mut hostile_rng = master.stream(&format!("scoped-world-guest-{c}-hostile"));
    let mut people_rng = master.stream(&format!("scoped-world-guest-{c}-people"));
    // Part SL's calls likewise: they come between the others, which keep their draws.
    let mut policy_rng = master.stream(&format!("scoped-world-guest-{c}-policy"));
    let mut n = 0;
    let mut write = |s: Sess, path: &str| {
        n += 1;
        let t = g.turn(s);
        ScopedOp::Write {
            content: content_for(&t, path, &format!("g{c}n{n}")),
            turn: t,
            path: path.to_string(),
        }
    };
    let mut plan: Plan = Vec::new();
    for s in [Sess::Kept, Sess::Active, Sess::Shut, Sess::Exposed] {
        plan.push((5, s, ScopedOp::CreateSession { turn: g.turn(s) }, true));
    }
    let k = g.turn(Sess::Kept);
    plan.push((
        5,
        Sess::Kept,
        ScopedOp::AddWait {
            turn: k.clone(),
            kind: WaitKindName("parked".into()),
            id: "hold".into(),
        },
        true,
    ));
    plan.push((5, Sess::Kept, write(Sess::Kept, "session/keep.md"), true));
    plan.push((5, Sess::Kept, write(Sess::Kept, "agent/keep.md"), false));
    let read = |s: Sess, path: &str| ScopedOp::Read {
        turn: g.turn(s),
        path: path.to_string(),
    };
    let read_text = |s: Sess, path: &str| ScopedOp::ReadText {
        turn: g.turn(s),
        path: path.to_string(),
    };
    let active_paths = ["session/notes.md", "session/data.md", "agent/mem.md"];
    let readable = [
        "session/notes.md",
        "session/data.md",
        "agent/mem.md",
        "agent/keep.md",
        REF_PATH,
        SKILL_PATH,
    ];
    for _ in 0..OPS_PER_CLIENT {
        let pause = if rng.gen_bool(0.05) {
            rng.gen_range(800..1_500)
        } else {
            rng.gen_range(5..200)
        };
        let roll = rng.gen_range(0..100);
        let (s, op) = if roll < 60 {
            let s = Sess::Active;
            let op = match rng.gen_range(0..17) {
                0..=3 => write(s, active_paths[rng.gen_range(0..active_paths.len())]),
                4 => write(s, REF_PATH),
                5..=7 => read(s, readable[rng.gen_range(0..readable.len())]),
                8 => read_text(s, readable[rng.gen_range(0..3)]),
                9 => {
                    let path = active_paths[rng.gen_range(0..2)];
                    plan.push((
                        pause,
                        s,
                        ScopedOp::Delete {
                            turn: g.turn(s),
                            path: path.into(),
                        },
                        false,
                    ));
                    // Its text must go with it (SC-4.2).
                    read_text(s, path)
                }
                10 | 11 => ScopedOp::List {
                    turn: g.turn(s),
                    prefix: None,
                },
                12 => write(s, "notes.md"),
                13 => read(s, "notes.md"),
                14 => read(s, &refused_pick(&mut rng, &mut hostile_rng, &g.turn(s))),
                15 => write(s, &refused_pick(&mut rng, &mut hostile_rng, &g.turn(s))),
                _ => ScopedOp::Activity { turn: g.turn(s) },
            };
            (s, op)
        } else if roll < 75 {
            let s = Sess::Shut;
            let op = match rng.gen_range(0..7) {
                0 => write(s, "session/n.md"),
                1 => read(s, "session/n.md"),
                2 => read(s, REF_PATH),
                3 => read_text(s, REF_PATH),
                4 => read(s, SKILL_PATH),
                5 => write(s, "agent/x.md"),
                _ => ScopedOp::List {
                    turn: g.turn(s),
                    prefix: None,
                },
            };
            (s, op)
        } else {
            let s = Sess::Exposed;
            let paths = ["session/x.md", "agent/shared.md", "workspace/w2.md"];
            let p = paths[rng.gen_range(0..paths.len())];
            let op = match rng.gen_range(0..8) {
                0..=2 => write(s, p),
                3 | 4 => read(s, p),
                5 => ScopedOp::List {
                    turn: g.turn(s),
                    prefix: None,
                },
                6 => ScopedOp::Delete {
                    turn: g.turn(s),
                    path: p.into(),
                },
                _ => ScopedOp::CreateSession { turn: g.turn(s) },
            };
            (s, op)
        };
        plan.push((pause, s, op, false));
        // What the guest's person uploads, read by the agent by the same name (its own
        // stream, so the rest of the plan stays as it was).
        if people_rng.gen_bool(0.2) {
            let names = readable_by_agent(c);
            let path = &names[people_rng.gen_range(0..names.len())];
            let s = if people_rng.gen_bool(0.7) {
                Sess::Active
            } else {
                Sess::Kept
            };
            let op = if people_rng.gen_bool(0.5) {
                read(s, path)
            } else {
                read_text(s, path)
            };
            plan.push((5, s, op, false));
        }
        if policy_rng.gen_bool(0.2) {
            let tag = plan.len();
            for (s, op) in policy_calls(&mut policy_rng, g, tag) {
                plan.push((policy_rng.gen_range(5..200), s, op, false));
            }
        }
    }
    // The end: the kept session, idle since the start, must still hold its files.
    for op in [
        read(Sess::Kept, "session/keep.md"),
        read_text(Sess::Kept, "session/keep.md"),
        read(Sess::Kept, "agent/keep.md"),
        ScopedOp::List {
            turn: k,
            prefix: None,
        },
    ] {
        plan.push((5, Sess::Kept, op, false));
    }
    plan
}

/// One of part SL's calls of guest `g` (SPEC SL-6, SL-7), `tag` making its content unique: a
/// session file promoted to the agent's `agent/kept/` and its text read back, a promotion
/// into a scope the turn may not write (the read-only workspace, or the shut agent's scope),
/// or a tool result under, at, just over or far over the limit.
fn policy_calls(rng: &mut impl Rng, g: &Guest, tag: usize) -> Vec<(Sess, ScopedOp)> {
    let promote = |s: Sess, from: &str, to: &str| ScopedOp::Promote {
        turn: g.turn(s),
        from: from.to_string(),
        to: to.to_string(),
    };
    match rng.gen_range(0..10) {
        0..=3 => {
            let file = ["notes.md", "data.md"][rng.gen_range(0..2)];
            let to = format!("{PROMOTED}{file}");
            vec![
                (
                    Sess::Active,
                    promote(Sess::Active, &format!("session/{file}"), &to),
                ),
                (
                    Sess::Active,
                    ScopedOp::ReadText {
                        turn: g.turn(Sess::Active),
                        path: to,
                    },
                ),
            ]
        }
        4 => vec![(
            Sess::Active,
            promote(Sess::Active, "session/notes.md", REF_PATH),
        )],
        5 => vec![(
            Sess::Shut,
            promote(Sess::Shut, "session/n.md", &format!("{PROMOTED}n.md")),
        )],
        _ => {
            let limit = TOOL_OUTPUT_LIMIT_BYTES as usize;
            let len = [limit / 2, limit, limit + 1, limit * 3][rng.gen_range(0..4)];
            let t = g.turn(Sess::Active);
            let base = content_for(&t, "tool", &format!("g{}t{tag}", g.c));
            let content = format!("{base:.<len$}");
            vec![(Sess::Active, ScopedOp::ToolOutput { turn: t, content })]
        }
    }
}

/// The person deleting (and re-creating) sessions, agents and the exposed workspace, and
/// setting, changing and removing the count policies of its agents (SPEC SL-2; liveness
/// checks them). Nothing in the home workspace is ever deleted, so the guests' checked
/// sessions are theirs alone.
pub(super) fn admin_ops(master: MasterSeed) -> Vec<(u64, ScopedOp)> {
    let mut rng = master.stream("scoped-world-admin");
    // Count policies draw from their own stream and come between the other calls.
    let mut counts = master.stream("scoped-world-admin-counts");
    // Erasures (SPEC SL-4) likewise, from theirs (`erasures.rs`).
    let mut erasures = master.stream("scoped-world-admin-erasures");
    // First, each guest's agent keeps its last session (SPEC SL-2): of its kept session (a
    // wait) and its busy one, the count takes the busy one's files whenever the kept one is
    // the newer (`oracle::policies`). Set here rather than at setup, so the guests' plans
    // start as they did before part SL's calls joined them.
    let mut out: Vec<(u64, ScopedOp)> = (0..GUESTS)
        .map(|c| {
            (
                5,
                ScopedOp::SetSessionCount {
                    workspace: HOME.to_string(),
                    agent: format!("g{c}"),
                    keep_last: Some(1),
                },
            )
        })
        .collect();
    for _ in 0..OPS_PER_CLIENT / 3 {
        if counts.gen_bool(0.3) {
            out.push((
                counts.gen_range(50..600),
                ScopedOp::SetSessionCount {
                    workspace: EXPOSED.to_string(),
                    agent: AGENTS[counts.gen_range(0..AGENTS.len())].to_string(),
                    keep_last: [None, Some(1), Some(2)][counts.gen_range(0..3)],
                },
            ));
        }
        out.extend(super::erasures::draw(&mut erasures));
        let ws = EXPOSED.to_string();
        let agent = AGENTS[rng.gen_range(0..AGENTS.len())].to_string();
        let op = match rng.gen_range(0..8) {
            0 | 1 => {
                let c = rng.gen_range(0..GUESTS);
                ScopedOp::DeleteSession {
                    turn: turn(EXPOSED, AGENTS[c % AGENTS.len()], &format!("x{c}")),
                }
            }
            2 => ScopedOp::DeleteAgent {
                workspace: ws,
                agent,
            },
            3 => ScopedOp::DeleteWorkspace { workspace: ws },
            4 | 5 => ScopedOp::CreateWorkspace {
                workspace: ws,
                agent_access: None,
                workspace_access: Some(Access::ReadWrite),
            },
            _ => ScopedOp::CreateAgent {
                workspace: ws,
                agent,
                agent_access: None,
                workspace_access: None,
            },
        };
        out.push((rng.gen_range(50..600), op));
    }
    out
}

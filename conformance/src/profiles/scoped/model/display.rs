//! How an operation reads in a trace, a divergence and a saved failure: one line, naming the
//! sequence's short names. Each part's operations are written by that part's module
//! (`policies::describe`, `close::describe`, ...); this `Display` only dispatches to them, so
//! it sits above them and `ops.rs` (the operations as data) stays below every part.

use std::fmt;

use super::ops::{
    agent, path, session, traversal, ModelOp, ACCESS_NAMES, PEOPLE, PERSON_ACTIONS, PERSON_SCOPES,
    SESSIONS, SKILL_FILES, WAIT_NAMES,
};

fn who(i: u8) -> String {
    let (a, s) = SESSIONS[session(i)];
    format!("{a}/{s}")
}

impl fmt::Display for ModelOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = |agent: &bool| if *agent { "agent" } else { "session" };
        match self {
            ModelOp::Write {
                session,
                path: p,
                agent_scope,
            } => write!(
                f,
                "{} write {}/{}",
                who(*session),
                scope(agent_scope),
                path(*p)
            ),
            ModelOp::Read {
                session,
                path: p,
                agent_scope,
            } => write!(
                f,
                "{} read {}/{}",
                who(*session),
                scope(agent_scope),
                path(*p)
            ),
            ModelOp::Activity { session } => write!(f, "{} activity", who(*session)),
            ModelOp::Wait {
                session,
                kind,
                id,
                add,
            } => write!(
                f,
                "{} {} wait {} w{}",
                who(*session),
                if *add { "add" } else { "remove" },
                WAIT_NAMES[*kind as usize % 3],
                id % 2
            ),
            ModelOp::Advance { days, hours } => write!(f, "advance {days}d{hours}h"),
            ModelOp::Sweep => write!(f, "sweep"),
            ModelOp::List { session } => write!(f, "{} list", who(*session)),
            ModelOp::Text { session, path: p } => {
                write!(f, "{} text session/{}", who(*session), path(*p))
            }
            ModelOp::Traversal {
                session,
                path: p,
                encoded,
            } => write!(f, "{} read {}", who(*session), traversal(*p, *encoded)),
            ModelOp::MissingScope { session, path: p } => {
                write!(f, "{} read {}", who(*session), path(*p))
            }
            ModelOp::Delete { session, path: p } => {
                write!(f, "{} delete session/{}", who(*session), path(*p))
            }
            ModelOp::WorkspaceWrite { session, path: p } => {
                write!(f, "{} write workspace/{}", who(*session), path(*p))
            }
            ModelOp::SetAgentAccess { agent: a, access } => write!(
                f,
                "agent {} sets agent access {}",
                agent(*a),
                ACCESS_NAMES[*access as usize % 3]
            ),
            ModelOp::WorkspaceBeside => write!(
                f,
                "publish the skill in workspaces w1-n and w1-n2, then delete workspace w1-n"
            ),
            ModelOp::ReadSkill { session, file } => write!(
                f,
                "{} read skill/kit/{}",
                who(*session),
                SKILL_FILES[*file as usize % SKILL_FILES.len()].0
            ),
            ModelOp::FaultySweep { percent } => {
                write!(
                    f,
                    "sweep with {percent}% of deleted keys failing, heal, sweep"
                )
            }
            ModelOp::CrashSweep { obligations } => write!(
                f,
                "sweep crashing after deleting {} objects, restart, sweep",
                if *obligations {
                    "obligation"
                } else {
                    "session"
                }
            ),
            ModelOp::WriteDuringSweep { session, path: p } => write!(
                f,
                "{} write session/{} while a sweep holds its candidates",
                who(*session),
                path(*p)
            ),
            ModelOp::DeleteSession { session } => write!(f, "{} delete session", who(*session)),
            ModelOp::DeleteAgent { agent: a } => write!(f, "delete agent {}", agent(*a)),
            ModelOp::StoreFaults {
                error_percent,
                key_failure_percent,
            } => write!(
                f,
                "store faults: {error_percent}% of requests, {key_failure_percent}% of deleted keys"
            ),
            ModelOp::Heal => write!(f, "store heals"),
            ModelOp::JumpBack { hours } => write!(f, "clock jumps back {hours}h"),
            ModelOp::Person {
                session,
                person,
                action,
                path: p,
                scope,
            } => {
                let action = PERSON_ACTIONS[*action as usize % 4];
                let who_asks = PEOPLE[*person as usize % PEOPLE.len()].0;
                if action == "list" {
                    write!(f, "{who_asks} lists {}'s files", who(*session))
                } else {
                    write!(
                        f,
                        "{who_asks} {action}s {}/{} in {}",
                        PERSON_SCOPES[*scope as usize % 3],
                        path(*p),
                        who(*session)
                    )
                }
            }
            ModelOp::SetCount { .. }
            | ModelOp::SetWorkspaceAccess { .. }
            | ModelOp::Promote { .. }
            | ModelOp::PromoteDuringSweep { .. }
            | ModelOp::ToolOutput { .. } => super::policies::describe(self, f),
            ModelOp::Close { .. } => super::close::describe(self, f),
            ModelOp::OverflowAgain { .. } => super::overflow_again::describe(self, f),
            ModelOp::SetRetention { .. } | ModelOp::ApplyLifecycle { .. } => {
                super::workspace_retention::describe(self, f)
            }
            ModelOp::Erase { .. } | ModelOp::ErasureTouch { .. } => {
                super::erasure::describe(self, f)
            }
            ModelOp::SweepsAtOnce { .. } => super::two_sweeps::describe(self, f),
            ModelOp::EmptiedThenCount { .. } => super::emptied_count::describe(self, f),
            ModelOp::People(r) => r.fmt(f),
            ModelOp::Hostile {
                session,
                spelling,
                write,
            } => write!(
                f,
                "{} {} a hostile path: {}",
                who(*session),
                if *write { "write" } else { "read" },
                super::hostile::spelling(*spelling).what
            ),
        }
    }
}

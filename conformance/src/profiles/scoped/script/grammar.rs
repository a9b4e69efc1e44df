//! One step line of a scoped scenario: the table of step shapes ([`action`]) and of the
//! expectations after `=>` ([`expect`]), each with the load error it gives at its line. A close
//! and two sweeps at once are `close.rs`'s, erasures `erasure.rs`'s; the scenario's doc
//! (`mod.rs`) lists the whole vocabulary.

use std::collections::BTreeMap;

use tidemark_sim::clip::clip;
use tidemark_sim::real_tier::faults::{FaultPlan, Throttle, S3_OPERATIONS};

use tidemark_reference::scoped::Access;

use super::words::{duration_ms, list, unquote, unquote_or};
use super::{Action, Expect};
use crate::profiles::scoped::contract::{
    CrashPointName, PeopleCall, ScopedOp, Turn, WaitKindName, ANONYMOUS,
};

/// A fault rate: a probability, from 0 to 1.
fn rate(r: &str) -> Result<f64, String> {
    r.parse::<f64>()
        .ok()
        .filter(|x| (0.0..=1.0).contains(x))
        .ok_or_else(|| {
            format!(
                "a fault rate is a probability from 0 to 1, not {:?}",
                clip(r)
            )
        })
}

/// A `faults fail OP N` operation: one the fault wrapper counts.
fn fault_op(op: &str) -> Result<String, String> {
    if S3_OPERATIONS.contains(&op) {
        Ok(op.to_string())
    } else {
        Err(format!(
            "no S3 operation {:?}; expected one of {}",
            clip(op),
            S3_OPERATIONS.join(", ")
        ))
    }
}

/// A count of requests (`faults fail OP N`, `faults throttle N`): a whole number from 1.
fn request_count(n: &str) -> Result<u64, String> {
    n.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
        format!(
            "the request number is a whole number from 1, not {:?}",
            clip(n)
        )
    })
}

/// The reason codes of SPEC SC-8.1: a `refused` expectation names one.
pub const REASONS: &[&str] = &[
    "empty_path",
    "missing_scope",
    "unknown_scope",
    "traversal",
    "absolute_path",
    "empty_segment",
    "directory_path",
    "control_character",
    "surrounding_whitespace",
    "key_too_long",
    "reserved_path",
    "unknown_skill",
    "invalid_id",
    "permission_denied",
    "not_found",
    "read_only",
    "no_such_bucket",
    "storage_unavailable",
    "database_unavailable",
    "unknown_entity",
    "config",
    // The people's files API's own (SPEC SF-1.5).
    "unauthenticated",
    "too_large",
    "invalid_encoding",
    // Part SL's (SPEC SL-1.4).
    "invalid_policy",
    "erasure_pending",
];

/// What `TURN wait KIND ID` may name (SC-5.3).
pub const WAIT_KINDS: &[&str] = &["queued", "parked", "waiting"];

/// Where `crash at POINT` may stop the store.
pub const CRASH_POINTS: &[&str] = &[
    "after_text_written",
    "after_session_objects_deleted",
    "after_obligation_objects_deleted",
];

/// `word` if it is one of `known`, else an error listing them.
fn one_of(word: &str, what: &str, known: &[&str]) -> Result<String, String> {
    if known.contains(&word) {
        Ok(word.to_string())
    } else {
        Err(format!(
            "unknown {what} {:?}; expected one of {}",
            clip(word),
            known.join(", ")
        ))
    }
}

/// The `faults` step that sets `plan` (its latency is never set by a scenario).
fn faults(plan: FaultPlan) -> ScopedOp {
    ScopedOp::Faults {
        down: plan.down,
        error_rate: plan.error_rate,
        delete_key_failure_rate: plan.delete_key_failure_rate,
        fail_requests: plan.fail_requests,
        fail_from: plan.fail_from,
        no_such_bucket: plan.no_such_bucket,
        access_denied: plan.access_denied,
        throttle: plan.throttle,
    }
}

fn access(s: &str) -> Result<Access, String> {
    Access::parse(s).ok_or_else(|| format!("access must be none, read or read-write, not {s:?}"))
}

fn turn(w: &str) -> Result<Turn, String> {
    let (ids, skills) = match w.split_once('+') {
        Some((i, s)) => (i, Some(s)),
        None => (w, None),
    };
    let parts: Vec<&str> = ids.split('/').collect();
    let [ws, agent, session] = parts[..] else {
        return Err(format!("a turn is workspace/agent/session, not {w:?}"));
    };
    let mut t = Turn::new(ws, agent, session);
    for pair in skills.into_iter().flat_map(|s| s.split(',')) {
        let (slug, name) = pair
            .split_once('=')
            .ok_or_else(|| format!("a turn's skill is slug=name, not {pair:?}"))?;
        t.skills.insert(slug.into(), name.into());
    }
    Ok(t)
}

fn settings(rest: &[String]) -> Result<(Option<Access>, Option<Access>), String> {
    let (mut a, mut w) = (None, None);
    for kv in rest {
        match kv.split_once('=') {
            Some(("agent", v)) => a = Some(access(v)?),
            Some(("workspace", v)) => w = Some(access(v)?),
            _ => {
                return Err(format!(
                    "expected agent=ACCESS or workspace=ACCESS, got {kv}"
                ))
            }
        }
    }
    Ok((a, w))
}

/// A person's name in a scenario: lowercase letters, digits, `-` and `_`, a letter first (so it
/// never reads as a turn, `w1/a1/s1`).
fn person_name(name: &str) -> Result<String, String> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(name.to_string())
    } else {
        Err(format!(
            "a person is named with lowercase letters, digits, - and _, a letter first, not {:?}",
            clip(name)
        ))
    }
}

/// `person NAME of W [in S ...] [agent=ACCESS] [workspace=ACCESS]` after `person NAME of W`.
fn person(name: &str, workspace: &str, rest: &[String]) -> Result<ScopedOp, String> {
    let name = person_name(name)?;
    if name == ANONYMOUS {
        return Err(format!(
            "{ANONYMOUS} is the person with no credentials, and has none to define"
        ));
    }
    let (mut sessions, mut agent_files, mut workspace_files) = (Vec::new(), None, None);
    let mut in_conversation = false;
    for w in rest {
        match (w.as_str(), w.split_once('=')) {
            ("in", _) if !in_conversation && sessions.is_empty() => in_conversation = true,
            (_, Some(("agent", v))) => agent_files = Some(access(v)?),
            (_, Some(("workspace", v))) => workspace_files = Some(access(v)?),
            (s, None) if in_conversation => sessions.push(s.to_string()),
            _ => {
                return Err(format!(
                    "expected `in SESSION ...`, agent=ACCESS or workspace=ACCESS, got {}",
                    clip(w)
                ))
            }
        }
    }
    if in_conversation && sessions.is_empty() {
        return Err("`in` names no session".into());
    }
    Ok(ScopedOp::Person {
        person: name,
        workspace: workspace.to_string(),
        agent_files,
        workspace_files,
        sessions,
    })
}

/// The URL after `/files/` as a person's request sends it (SPEC SF-3): sent exactly as written,
/// so it must be what an HTTP request target can carry (visible ASCII) and hold no `?` or `#`,
/// which would end the path.
fn url_path(w: &str) -> Result<String, String> {
    let p = unquote_or(w);
    if p.is_empty()
        || !p
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'?' && b != b'#')
    {
        return Err(format!(
            "a URL path is sent as written: visible ASCII with no `?` or `#` (percent-encode the rest), not {:?}",
            clip(&p)
        ));
    }
    Ok(p)
}

fn people(name: &str, session: &str, call: PeopleCall) -> Result<ScopedOp, String> {
    Ok(ScopedOp::People {
        person: person_name(name)?,
        session: session.to_string(),
        call,
    })
}

pub(super) fn action(w: &[String]) -> Result<Action, String> {
    let s: Vec<&str> = w.iter().map(String::as_str).collect();
    let op = match s[..] {
        ["advance", d] => return Ok(Action::Advance(duration_ms(d)?)),
        ["person", name, "of", ws, ..] => person(name, ws, &w[4..])?,
        [p, "upload", session, url, content] => people(
            p,
            session,
            PeopleCall::Upload {
                url_path: url_path(url)?,
                content: unquote(content)?,
            },
        )?,
        [p, "download", session, url] => people(
            p,
            session,
            PeopleCall::Download {
                url_path: url_path(url)?,
            },
        )?,
        [p, "remove", session, url] => people(
            p,
            session,
            PeopleCall::Remove {
                url_path: url_path(url)?,
            },
        )?,
        [p, "files", session] => people(p, session, PeopleCall::List)?,
        [p, "upload-scopes", session] => people(p, session, PeopleCall::UploadScopes)?,
        ["create", "workspace", ws, ..] => {
            let (agent_access, workspace_access) = settings(&w[3..])?;
            ScopedOp::CreateWorkspace {
                workspace: ws.into(),
                agent_access,
                workspace_access,
            }
        }
        ["create", "agent", wa, ..] => {
            let (ws, agent) = wa
                .split_once('/')
                .ok_or_else(|| format!("an agent is workspace/agent, not {wa:?}"))?;
            let (agent_access, workspace_access) = settings(&w[3..])?;
            ScopedOp::CreateAgent {
                workspace: ws.into(),
                agent: agent.into(),
                agent_access,
                workspace_access,
            }
        }
        ["create", "session", t] => ScopedOp::CreateSession { turn: turn(t)? },
        ["delete", "session", t] => ScopedOp::DeleteSession { turn: turn(t)? },
        ["delete", "agent", wa] => {
            let (ws, agent) = wa
                .split_once('/')
                .ok_or_else(|| format!("an agent is workspace/agent, not {wa:?}"))?;
            ScopedOp::DeleteAgent {
                workspace: ws.into(),
                agent: agent.into(),
            }
        }
        ["delete", "workspace", ws] => ScopedOp::DeleteWorkspace {
            workspace: ws.into(),
        },
        ["publish", "skill", name, "in", ws, ..] => {
            let mut files = BTreeMap::new();
            for f in &w[5..] {
                let (path, content) = f
                    .split_once('=')
                    .ok_or_else(|| format!("a skill file is PATH=\"CONTENT\", not {f}"))?;
                files.insert(path.to_string(), unquote(content)?);
            }
            ScopedOp::PublishSkill {
                workspace: ws.into(),
                name: name.into(),
                files,
            }
        }
        ["sweep"] => ScopedOp::Sweep,
        ["restart"] => ScopedOp::Restart,
        ["heal"] => ScopedOp::Heal,
        ["crash", "at", p] => ScopedOp::CrashAt {
            point: CrashPointName(one_of(p, "crash point", CRASH_POINTS)?),
        },
        ["faults", "down"] => faults(FaultPlan {
            down: true,
            ..FaultPlan::default()
        }),
        ["faults", "delete-failure", r] => faults(FaultPlan {
            delete_key_failure_rate: rate(r)?,
            ..FaultPlan::default()
        }),
        ["faults", "error", r] => faults(FaultPlan {
            error_rate: rate(r)?,
            ..FaultPlan::default()
        }),
        ["faults", "fail", op, n] => faults(FaultPlan {
            fail_requests: vec![(fault_op(op)?, request_count(n)?)],
            ..FaultPlan::default()
        }),
        ["faults", "fail", op, "from", n] => faults(FaultPlan {
            fail_from: vec![(fault_op(op)?, request_count(n)?)],
            ..FaultPlan::default()
        }),
        ["faults", "no-such-bucket"] => faults(FaultPlan {
            no_such_bucket: true,
            ..FaultPlan::default()
        }),
        ["faults", "access-denied"] => faults(FaultPlan {
            access_denied: true,
            ..FaultPlan::default()
        }),
        ["faults", "throttle"] => faults(FaultPlan {
            throttle: Throttle::Always,
            ..FaultPlan::default()
        }),
        ["faults", "throttle", n] => faults(FaultPlan {
            throttle: Throttle::Next(request_count(n)?),
            ..FaultPlan::default()
        }),
        ["faults", ..] => {
            return Err(format!(
                "no such fault: {}; expected faults down, faults error RATE, faults delete-failure RATE, \
                 faults fail OP N, faults fail OP from N, faults no-such-bucket, faults access-denied, faults throttle or faults throttle N",
                clip(&s.join(" "))
            ))
        }
        ["lifecycle", "rules"] => ScopedOp::LifecycleRules,
        ["apply", "lifecycle", days] => ScopedOp::ApplyLifecycle {
            session_backstop_days: days.parse().map_err(|_| format!("bad days {days}"))?,
        },
        ["lifecycle", "age-only", prefix, days] => ScopedOp::RunAgeRule {
            prefix: prefix.to_string(),
            days: days.parse().map_err(|_| format!("bad days {days}"))?,
        },
        ["bucket", p] => ScopedOp::BucketKeys {
            prefix: if p == "\"\"" { String::new() } else { p.into() },
        },
        ["keep", "last", n, "sessions" | "session", "of", wa] => {
            let (ws, agent) = wa
                .split_once('/')
                .ok_or_else(|| format!("an agent is workspace/agent, not {wa:?}"))?;
            ScopedOp::SetSessionCount {
                workspace: ws.into(),
                agent: agent.into(),
                keep_last: Some(n.parse().map_err(|_| {
                    format!("a count is a whole number, not {:?}", clip(n))
                })?),
            }
        }
        ["keep", "every", "session", "of", wa] => {
            let (ws, agent) = wa
                .split_once('/')
                .ok_or_else(|| format!("an agent is workspace/agent, not {wa:?}"))?;
            ScopedOp::SetSessionCount {
                workspace: ws.into(),
                agent: agent.into(),
                keep_last: None,
            }
        }
        ["retention", "of", ws, "ttl", n, "days" | "day"] => ScopedOp::SetWorkspaceRetention {
            workspace: ws.into(),
            session_file_ttl_days: Some(
                n.parse()
                    .map_err(|_| format!("a TTL is a whole number of days, not {:?}", clip(n)))?,
            ),
        },
        ["retention", "of", ws, "default"] => ScopedOp::SetWorkspaceRetention {
            workspace: ws.into(),
            session_file_ttl_days: None,
        },
        [t, "tool", "output", content] => ScopedOp::ToolOutput {
            turn: turn(t)?,
            content: unquote(content)?,
        },
        [t, "promote", from, "to", to] => ScopedOp::Promote {
            turn: turn(t)?,
            from: unquote_or(from),
            to: unquote_or(to),
        },
        ["pending", "deletions"] => ScopedOp::PendingDeletions,
        ["erase", "workspace" | "agent", _, "within", _] => super::erasure::erase(&s)?,
        ["erasure", "of", subject] => {
            let (workspace, agent) = super::erasure::subject(subject)?;
            ScopedOp::ErasureStates { workspace, agent }
        }
        ["proof", "of", subject] => {
            let (workspace, agent) = super::erasure::subject(subject)?;
            ScopedOp::ErasureProof { workspace, agent }
        }
        ["deletion", "records"] => ScopedOp::DeletionRecords,
        [t, "write", path, content] => ScopedOp::Write {
            turn: turn(t)?,
            path: unquote_or(path),
            content: unquote(content)?,
        },
        [t, "write", path, content, "during", "sweep"] => ScopedOp::WriteDuringSweep {
            turn: turn(t)?,
            path: unquote_or(path),
            content: unquote(content)?,
        },
        [t, "read", path] => ScopedOp::Read {
            turn: turn(t)?,
            path: unquote_or(path),
        },
        [t, "text", path] => ScopedOp::ReadText {
            turn: turn(t)?,
            path: unquote_or(path),
        },
        [t, "list"] => ScopedOp::List {
            turn: turn(t)?,
            prefix: None,
        },
        [t, "list", p] => ScopedOp::List {
            turn: turn(t)?,
            prefix: Some(unquote_or(p)),
        },
        [t, "delete", path] => ScopedOp::Delete {
            turn: turn(t)?,
            path: unquote_or(path),
        },
        [t, "activity"] => ScopedOp::Activity { turn: turn(t)? },
        [t, "wait", kind, id] => ScopedOp::AddWait {
            turn: turn(t)?,
            kind: WaitKindName(one_of(kind, "wait kind", WAIT_KINDS)?),
            id: id.into(),
        },
        [t, "unwait", kind, id] => ScopedOp::RemoveWait {
            turn: turn(t)?,
            kind: WaitKindName(one_of(kind, "wait kind", WAIT_KINDS)?),
            id: id.into(),
        },
        _ => match super::close::action(&s, turn) {
            Some(op) => op?,
            None => return Err(format!("no such step: {}", clip(&s.join(" ")))),
        },
    };
    Ok(Action::Op(op))
}

pub(super) fn expect(w: &[String]) -> Result<Expect, String> {
    // `swept 1 session, 0 deletions` reads better with its comma; commas outside quotes and
    // lists are punctuation.
    let s: Vec<&str> = w
        .iter()
        .map(|x| {
            if x.starts_with('"') || x.starts_with('[') {
                x.as_str()
            } else {
                x.trim_end_matches(',')
            }
        })
        .collect();
    Ok(match s[..] {
        ["ok"] => Expect::Ok,
        ["crashed"] => Expect::Crashed,
        ["published"] => Expect::Published,
        ["overflowed"] => Expect::Overflowed(None),
        ["overflowed", "as", name] => {
            Expect::Overflowed(Some(super::bindings::binding_name(name)?))
        }
        ["pending" | "met"] | ["overdue" | "missed", _] => {
            Expect::Erasures(vec![crate::profiles::scoped::erasure::parse_state(&s)?])
        }
        ["written", p] => Expect::Written(unquote_or(p)),
        ["refused", r] => Expect::Refused(one_of(r, "refusal reason", REASONS)?),
        ["no", "text"] => Expect::Text(None),
        ["text", t] => Expect::Text(Some(unquote(t)?)),
        ["swept", n, "sessions" | "session", m, "deletions" | "deletion"] => Expect::Swept {
            sessions: n.parse().map_err(|_| format!("bad count {n}"))?,
            deletions: m.parse().map_err(|_| format!("bad count {m}"))?,
        },
        [c] if c.starts_with('"') => Expect::Content(unquote(c)?),
        [l] if l.starts_with('[') => Expect::List(list(l)?),
        ["in", "order", l] if l.starts_with('[') => Expect::Ordered(list(l)?),
        _ => return Err(format!("no such expectation: {}", clip(&s.join(" ")))),
    })
}

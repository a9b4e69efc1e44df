//! SL-4's erasure obligations in the scoped world: the admin erases the exposed workspace or
//! one of its agents now and then (deadlines an hour past, now, and hours or days on), among
//! its deletions and re-creations, under the world's faults (the store down past a deadline,
//! crashes, clock jumps, failing deletions) and the guests' writes into the subject.
//!
//! What is judged:
//! - as it happens: an accepted erasure has deleted its subject's row (SL-4.1), and a
//!   workspace or agent the admin creates again is never accepted while an
//!   erasure of it is pending (SL-4.6), read from the metadata once the answer is in (an erasure
//!   pending after the answer was pending when it was given: only the admin requests them, one
//!   call at a time);
//! - after the heal and a sweep ([`liveness`]): every obligation is met and proved, its deadline
//!   no earlier than its request (SL-1.4 refuses the past), its proof naming each key once and
//!   only keys under its subject (SL-4.3), none of them still in the bucket and nothing left
//!   under the subject unless it lives again (SL-4.2). SC-6's obligations the erasure met with
//!   itself are the general liveness check's, as every obligation is.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tidemark_reference::clock::{DAY_MS, HOUR_MS};
use tidemark_reference::scoped::metadata::{ErasureMetadata, MemoryMetadata};
use tidemark_reference::scoped::Access;
use tidemark_sim::real_tier::memory_s3::MemoryHandle;

use super::{AGENTS, BUCKET, EXPOSED};
use crate::profiles::scoped::contract::{ScopedOp, ScopedOutcome};
use crate::profiles::scoped::uuid_ids::uuid_for;

/// Deadlines from the moment the admin sends the request: an hour before it (refused), the
/// moment itself (a few network milliseconds past when the request arrives, so refused too:
/// SL-1.4's boundary by transit), then hours and days on.
const DEADLINES: [i64; 5] = [-HOUR_MS, 0, 2 * HOUR_MS, DAY_MS, 3 * DAY_MS];

/// An erasure for the admin's plan, one time in four, and half the time a create of its subject
/// right after it (a host repeating its create, SL-4.6's mistake to refuse while the erasure
/// is pending): its deadline is relative to the moment it is sent ([`at_send`]), the plan
/// being drawn before the world's clock runs.
pub(super) fn draw(rng: &mut ChaCha8Rng) -> Vec<(u64, ScopedOp)> {
    if !rng.gen_bool(0.25) {
        return Vec::new();
    }
    let agent = if rng.gen_bool(0.25) {
        None
    } else {
        Some(AGENTS[rng.gen_range(0..AGENTS.len())].to_string())
    };
    let mut out = vec![(
        rng.gen_range(50..600),
        ScopedOp::RequestErasure {
            workspace: EXPOSED.to_string(),
            agent: agent.clone(),
            deadline_ms: DEADLINES[rng.gen_range(0..DEADLINES.len())],
        },
    )];
    if rng.gen_bool(0.5) {
        let workspace = EXPOSED.to_string();
        out.push((
            rng.gen_range(20..100),
            match agent {
                Some(agent) => ScopedOp::CreateAgent {
                    workspace,
                    agent,
                    agent_access: None,
                    workspace_access: None,
                },
                None => ScopedOp::CreateWorkspace {
                    workspace,
                    agent_access: None,
                    workspace_access: Some(Access::ReadWrite),
                },
            },
        ));
    }
    out
}

/// The admin's operation as sent at `now_ms` (absolute): an erasure's deadline is its plan's
/// offset from now.
pub(super) fn at_send(op: ScopedOp, now_ms: i64) -> ScopedOp {
    match op {
        ScopedOp::RequestErasure {
            workspace,
            agent,
            deadline_ms,
        } => ScopedOp::RequestErasure {
            workspace,
            agent,
            deadline_ms: now_ms + deadline_ms,
        },
        op => op,
    }
}

/// A violation of SL-4.1 in the admin's erasure, if its answer accepted it and the subject's
/// row is still there (only the admin creates workspaces and agents, one call at a time, so
/// nothing made it again in between).
pub(super) fn rows_kept(
    meta: &MemoryMetadata,
    op: &ScopedOp,
    outcome: &ScopedOutcome,
) -> Option<String> {
    let ScopedOp::RequestErasure {
        workspace, agent, ..
    } = op
    else {
        return None;
    };
    if matches!(outcome, ScopedOutcome::Refused { .. }) {
        return None;
    }
    let id = |short: &str| uuid_for("scoped-world", short);
    let kept = match agent {
        Some(a) => meta.agent_row_exists(&id(workspace), &id(a)),
        None => meta.workspace_row_exists(&id(workspace)),
    };
    kept.then(|| format!("an accepted erasure kept its subject's row (SL-4.1): {op:?}"))
}

/// A violation of SL-4.6 in the admin's create, if its answer accepted it while an erasure of
/// that very subject is pending.
pub(super) async fn created_under_pending(
    meta: &MemoryMetadata,
    op: &ScopedOp,
    outcome: &ScopedOutcome,
) -> Option<String> {
    if matches!(outcome, ScopedOutcome::Refused { .. }) {
        return None;
    }
    let id = |short: &str| uuid_for("scoped-world", short);
    let (ws, agent) = match op {
        ScopedOp::CreateWorkspace { workspace, .. } => (workspace, None),
        ScopedOp::CreateAgent {
            workspace, agent, ..
        } => (workspace, Some(agent)),
        _ => return None,
    };
    let agent_id = agent.map(|a| id(a));
    match meta.erasure_pending(&id(ws), agent_id.as_deref()).await {
        Ok(true) => Some(format!(
            "{} created again while its erasure is pending (SL-4.6): {op:?}",
            match agent {
                Some(a) => format!("agent {ws}/{a}"),
                None => format!("workspace {ws}"),
            }
        )),
        _ => None,
    }
}

/// After the heal and a sweep: every erasure met and proved (see the module's note). Times
/// are compared only in a world whose clock never jumped back (`log`'s faults): after a jump
/// back a later sweep may stamp an earlier time, as SPEC lets it (time is an input).
pub(super) fn liveness(
    meta: &MemoryMetadata,
    objects: &MemoryHandle,
    log: &[(i64, String)],
) -> Result<(), String> {
    let rewound = log.iter().any(|(_, l)| l.starts_with("fault Jump(-"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let (erasures, proofs) = rt.block_on(async {
        (
            meta.erasures().await.map_err(|e| e.to_string()),
            meta.erasure_proofs().await.map_err(|e| e.to_string()),
        )
    });
    let (erasures, proofs) = (erasures?, proofs?);
    for e in &erasures {
        let subject = match &e.agent {
            Some(a) => format!("agent {}/{a}", e.workspace),
            None => format!("workspace {}", e.workspace),
        };
        let what = format!("erasure {} of {subject}", e.id);
        if e.deadline_ms < e.requested_at_ms {
            return Err(format!(
                "{what} was accepted with a deadline {} ms before its request (SL-1.4)",
                e.requested_at_ms - e.deadline_ms
            ));
        }
        let Some(done) = e.done_at_ms else {
            return Err(format!(
                "{what} is still pending after the heal and a sweep (SL-4.2)"
            ));
        };
        if !rewound && done < e.requested_at_ms {
            return Err(format!(
                "{what} reads met {} ms before it was requested",
                e.requested_at_ms - done
            ));
        }
        let prefixes: Vec<String> = match &e.agent {
            Some(a) => vec![
                format!("agents/{}/{a}/", e.workspace),
                format!("sessions/{}/{a}/", e.workspace),
            ],
            None => ["workspaces", "skills", "agents", "sessions"]
                .iter()
                .map(|c| format!("{c}/{}/", e.workspace))
                .collect(),
        };
        let lives_again = match &e.agent {
            Some(a) => meta.agent_row_exists(&e.workspace, a),
            None => meta.workspace_row_exists(&e.workspace),
        };
        let mut named = std::collections::BTreeSet::new();
        for p in proofs.iter().filter(|p| p.erasure_id == e.id) {
            let Some(deleted) = p.deleted_at_ms else {
                return Err(format!(
                    "{what} is met with {:?} written down and never recorded deleted (SL-4.3)",
                    p.key
                ));
            };
            if !rewound && deleted > done {
                return Err(format!(
                    "{what}'s proof records {:?} deleted after the obligation was met",
                    p.key
                ));
            }
            if !named.insert(p.key.as_str()) {
                return Err(format!("{what}'s proof names {:?} twice", p.key));
            }
            if !prefixes.iter().any(|pre| p.key.starts_with(pre.as_str())) {
                return Err(format!(
                    "{what}'s proof names {:?}, which is not under its subject (SL-4.3)",
                    p.key
                ));
            }
            if !lives_again && objects.keys(BUCKET, &p.key).contains(&p.key) {
                return Err(format!(
                    "{what}'s proof names {:?}, which is still in the bucket (SL-4.3)",
                    p.key
                ));
            }
        }
        if !lives_again {
            for pre in &prefixes {
                let left = objects.keys(BUCKET, pre);
                if !left.is_empty() {
                    return Err(format!(
                        "{what} is met with {} keys left under {pre}: {:?} (SL-4.2)",
                        left.len(),
                        &left[..left.len().min(3)]
                    ));
                }
            }
        }
    }
    Ok(())
}

//! The operation-level driver (what a conformance adapter wraps), checked on the two families
//! the user named: cascade deletion and mid-conversation expiry. Steps are data (JSON), each
//! with its time and its expected outcome.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use tidemark_conformance::profiles::scoped::{ScopedDriver, ScopedOp, ScopedOutcome};
use tidemark_reference::clock::{Timestamp, DAY_MS};
use tidemark_reference::scoped::ScopedMutant;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::RealTier;

/// (day, operation, expected outcome) triples.
async fn run(
    tier: &Arc<RealTier>,
    name: &str,
    mutant: Option<ScopedMutant>,
    steps: &[(i64, Value, Value)],
) -> Result<(), String> {
    let mut d = ScopedDriver::start(
        tier.clone(),
        name,
        mutant,
        &tidemark_conformance::variants::Declared::defaults(),
        &BTreeMap::new(),
    )
    .await
    .map_err(|e| e.to_string())?;
    for (i, (day, op, expected)) in steps.iter().enumerate() {
        let op: ScopedOp =
            serde_json::from_value(op.clone()).map_err(|e| format!("step {i}: {e}"))?;
        let expected: ScopedOutcome =
            serde_json::from_value(expected.clone()).map_err(|e| format!("step {i}: {e}"))?;
        let got = d.call(Timestamp(EPOCH.0 + day * DAY_MS), &op).await?;
        let same = match (&got, &expected) {
            // A refusal matches on its reason; the message is for people.
            (
                ScopedOutcome::Refused { reason: a, .. },
                ScopedOutcome::Refused { reason: b, .. },
            ) => a == b,
            _ => got == expected,
        };
        if !same {
            return Err(format!(
                "step {i} ({op:?}): expected {expected:?}, got {got:?}"
            ));
        }
    }
    Ok(())
}

fn turn(ws: &str, a: &str, s: &str) -> Value {
    json!({"workspace": ws, "agent": a, "session": s})
}

fn ok() -> Value {
    json!({"outcome": "ok"})
}

fn cascade() -> Vec<(i64, Value, Value)> {
    let mut steps = vec![(
        0,
        json!({"op": "create_workspace", "workspace": "w1", "workspace_access": "read-write"}),
        ok(),
    )];
    for a in ["a1", "a2"] {
        steps.push((
            0,
            json!({"op": "create_agent", "workspace": "w1", "agent": a}),
            ok(),
        ));
        for s in ["s1", "s2"] {
            steps.push((
                0,
                json!({"op": "create_session", "turn": turn("w1", a, s)}),
                ok(),
            ));
            steps.push((
                0,
                json!({"op": "write", "turn": turn("w1", a, s), "path": "session/f.txt", "content": "f"}),
                json!({"outcome": "written", "path": "session/f.txt"}),
            ));
        }
        steps.push((
            0,
            json!({"op": "write", "turn": turn("w1", a, "s1"), "path": "agent/g.txt", "content": "g"}),
            json!({"outcome": "written", "path": "agent/g.txt"}),
        ));
    }
    steps.push((
        0,
        json!({"op": "write", "turn": turn("w1", "a1", "s1"), "path": "workspace/h.txt", "content": "h"}),
        json!({"outcome": "written", "path": "workspace/h.txt"}),
    ));
    steps.push((
        1,
        json!({"op": "delete_workspace", "workspace": "w1"}),
        ok(),
    ));
    steps.push((
        1,
        json!({"op": "pending_deletions"}),
        json!({"outcome": "prefixes", "prefixes": [
            "agents/w1/a1/", "agents/w1/a2/",
            "sessions/w1/a1/s1/", "sessions/w1/a1/s2/", "sessions/w1/a2/s1/", "sessions/w1/a2/s2/",
            "skills/w1/", "workspaces/w1/"
        ]}),
    ));
    steps.push((
        1,
        json!({"op": "sweep"}),
        json!({"outcome": "swept", "sessions": 0, "obligations": 8}),
    ));
    steps.push((
        1,
        json!({"op": "bucket_keys", "prefix": ""}),
        json!({"outcome": "keys", "keys": []}),
    ));
    steps.push((
        1,
        json!({"op": "pending_deletions"}),
        json!({"outcome": "prefixes", "prefixes": []}),
    ));
    steps
}

fn mid_conversation() -> Vec<(i64, Value, Value)> {
    let t = turn("w1", "a1", "s1");
    let mut steps = vec![
        (
            0,
            json!({"op": "create_workspace", "workspace": "w1"}),
            ok(),
        ),
        (
            0,
            json!({"op": "create_agent", "workspace": "w1", "agent": "a1"}),
            ok(),
        ),
        (0, json!({"op": "create_session", "turn": t}), ok()),
        (
            0,
            json!({"op": "write", "turn": t, "path": "session/upload.pdf", "content": "contract"}),
            json!({"outcome": "written", "path": "session/upload.pdf"}),
        ),
    ];
    for day in (10..=40).step_by(10) {
        steps.push((day, json!({"op": "activity", "turn": t}), ok()));
        steps.push((
            day,
            json!({"op": "sweep"}),
            json!({"outcome": "swept", "sessions": 0, "obligations": 0}),
        ));
    }
    steps.push((
        40,
        json!({"op": "read", "turn": t, "path": "session/upload.pdf"}),
        json!({"outcome": "content", "content": "contract"}),
    ));
    steps.push((
        70,
        json!({"op": "sweep"}),
        json!({"outcome": "swept", "sessions": 1, "obligations": 0}),
    ));
    steps.push((
        70,
        json!({"op": "read", "turn": t, "path": "session/upload.pdf"}),
        json!({"outcome": "refused", "reason": "not_found", "message": ""}),
    ));
    steps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_workspace_cascades_to_every_agent_and_session_prefix_and_the_sweep_empties_them(
) {
    let tier = Arc::new(RealTier::start(11).await.unwrap());
    run(&tier, "cascade", None, &cascade()).await.unwrap();
    let m = ScopedMutant::AppRecordedDeletions;
    assert!(
        run(&tier, "cascade", Some(m), &cascade()).await.is_err(),
        "mutant {} survives",
        m.id()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_older_than_the_ttl_but_still_active_keeps_its_uploads_as_data() {
    let tier = Arc::new(RealTier::start(12).await.unwrap());
    run(&tier, "midconv", None, &mid_conversation())
        .await
        .unwrap();
    let m = ScopedMutant::AgeOnlyExpiry;
    assert!(
        run(&tier, "midconv", Some(m), &mid_conversation())
            .await
            .is_err(),
        "mutant {} survives",
        m.id()
    );
}

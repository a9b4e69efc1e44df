//! The in-memory store's own checks: its trigger's cascade, its row locks, its transactions'
//! buffering. The check that it answers as PostgreSQL does is
//! `sim/tests/integration/metadata_differential.rs`.

use super::*;
use crate::scoped::metadata::Entity;
use crate::scoped::permissions::Access;

fn key(ws: &str, a: &str, s: &str) -> SessionKey {
    SessionKey::new(ws, a, s)
}

/// w1 with agents a1 (sessions s1, s2; s1 has a wait) and a2 (session s3); w2/b1/t1.
async fn populated() -> MemoryMetadata {
    let m = MemoryMetadata::new();
    for ws in ["w1", "w2"] {
        m.upsert_workspace(ws, ScopeSettings::default())
            .await
            .unwrap();
    }
    for (ws, a) in [("w1", "a1"), ("w1", "a2"), ("w2", "b1")] {
        assert!(m
            .upsert_agent(ws, a, ScopeSettings::default())
            .await
            .unwrap());
    }
    for k in [
        key("w1", "a1", "s1"),
        key("w1", "a1", "s2"),
        key("w1", "a2", "s3"),
        key("w2", "b1", "t1"),
    ] {
        assert!(m.insert_session(&k, 0).await.unwrap());
    }
    assert!(m
        .insert_wait(&key("w1", "a1", "s1"), WaitKind::Queued, "m1")
        .await
        .unwrap());
    m
}

fn prefixes(o: &[DeletionObligation]) -> Vec<&str> {
    o.iter().map(|d| d.prefix.as_str()).collect()
}

async fn delete(m: &MemoryMetadata, e: Entity, triggers: bool) -> u64 {
    let mut tx = m.begin().await.unwrap();
    let n = tx.delete_entity(&e, 7, triggers).await.unwrap();
    tx.commit().await.unwrap();
    n
}

#[tokio::test]
async fn a_cascade_records_every_session_of_a_deleted_agent() {
    let m = populated().await;
    let e = Entity::Agent {
        workspace: "w1".into(),
        agent: "a1".into(),
    };
    assert_eq!(delete(&m, e, true).await, 1);
    let o = m.obligations().await.unwrap();
    assert_eq!(
        prefixes(&o),
        ["agents/w1/a1/", "sessions/w1/a1/s1/", "sessions/w1/a1/s2/"]
    );
    assert!(o.iter().all(|d| d.requested_at_ms == Some(7)));
    assert_eq!(o.iter().map(|d| d.id).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(!m.session_exists(&key("w1", "a1", "s1")).await.unwrap());
    assert!(m.session_exists(&key("w1", "a2", "s3")).await.unwrap());
}

#[tokio::test]
async fn deleting_a_workspace_records_its_sessions_agents_itself_and_its_skills() {
    let m = populated().await;
    assert_eq!(delete(&m, Entity::Workspace("w1".into()), true).await, 1);
    let o = m.obligations().await.unwrap();
    assert_eq!(
        prefixes(&o),
        [
            "workspaces/w1/",
            "skills/w1/",
            "agents/w1/a1/",
            "agents/w1/a2/",
            "sessions/w1/a1/s1/",
            "sessions/w1/a1/s2/",
            "sessions/w1/a2/s3/"
        ]
    );
    // The cascade removed the wait too: re-creating the session finds none.
    m.upsert_workspace("w1", ScopeSettings::default())
        .await
        .unwrap();
    m.upsert_agent("w1", "a1", ScopeSettings::default())
        .await
        .unwrap();
    m.insert_session(&key("w1", "a1", "s1"), 0).await.unwrap();
    let mut tx = m.begin().await.unwrap();
    let idle = tx.claim_idle_sessions(0, 0, 10, false, true).await.unwrap();
    assert!(idle.contains(&key("w1", "a1", "s1")));
    assert!(m.session_exists(&key("w2", "b1", "t1")).await.unwrap());
}

#[tokio::test]
async fn with_triggers_off_a_deletion_records_nothing_and_a_missing_row_deletes_nothing() {
    let m = populated().await;
    let e = Entity::Agent {
        workspace: "w1".into(),
        agent: "a1".into(),
    };
    assert_eq!(delete(&m, e.clone(), false).await, 1);
    assert!(m.obligations().await.unwrap().is_empty());
    assert_eq!(delete(&m, e, true).await, 0);
    assert!(m.obligations().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_second_lock_on_a_session_waits_until_the_first_commits_and_sees_its_write() {
    let m = populated().await;
    let k = key("w1", "a2", "s3");
    let mut first = m.begin().await.unwrap();
    assert!(first.lock_session(&k).await.unwrap().is_some());
    first.touch(&k, 50).await.unwrap();
    let m2 = m.clone();
    let k2 = k.clone();
    let second = tokio::spawn(async move {
        let mut tx = m2.begin().await.unwrap();
        tx.lock_session(&k2).await.unwrap();
        // Claimed by this transaction now: the candidates cut off at 60 must not skip it.
        let seen = tx.claim_idle_sessions(60, 0, 10, true, true).await.unwrap();
        tx.commit().await.unwrap();
        seen
    });
    while m.lock_waiters().await.unwrap() == 0 {
        tokio::task::yield_now().await;
    }
    assert!(!second.is_finished());
    first.commit().await.unwrap();
    let seen = second.await.unwrap();
    assert!(
        seen.contains(&k),
        "the committed touch (50) is seen: {seen:?}"
    );
    assert_eq!(m.lock_waiters().await.unwrap(), 0);
    assert_eq!(m.locked_rows(), 0);
}

#[tokio::test]
async fn skip_locked_passes_a_held_session_by_and_takes_the_next() {
    let m = populated().await;
    let mut writer = m.begin().await.unwrap();
    writer.lock_session(&key("w1", "a1", "s2")).await.unwrap();
    let mut sweep = m.begin().await.unwrap();
    let claimed = sweep
        .claim_idle_sessions(0, 0, 2, true, true)
        .await
        .unwrap();
    assert_eq!(claimed, [key("w1", "a1", "s1"), key("w1", "a2", "s3")]);
    let mut other = m.begin().await.unwrap();
    let rest = other
        .claim_idle_sessions(0, 0, 10, true, true)
        .await
        .unwrap();
    assert_eq!(rest, [key("w2", "b1", "t1")]);
    // Read without claiming, everything is there.
    let unlocked = other
        .claim_idle_sessions(0, 0, 10, true, false)
        .await
        .unwrap();
    assert_eq!(unlocked.len(), 4);
    // A session with a wait is not a candidate unless waits are ignored.
    let mut fresh = m.begin().await.unwrap();
    let not_ignoring = fresh
        .claim_idle_sessions(0, 0, 10, false, false)
        .await
        .unwrap();
    assert!(!not_ignoring.contains(&key("w1", "a1", "s1")));
}

#[tokio::test]
async fn a_rolled_back_or_dropped_transaction_leaves_nothing_and_burns_its_ids() {
    let m = populated().await;
    let mut tx = m.begin().await.unwrap();
    tx.delete_entity(&Entity::Workspace("w2".into()), 1, true)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    {
        let mut tx = m.begin().await.unwrap();
        tx.touch(&key("w1", "a1", "s1"), 99).await.unwrap();
        tx.record_deletion("x/", "session", "x", 1).await.unwrap();
    }
    assert_eq!(m.locked_rows(), 0);
    assert!(m.obligations().await.unwrap().is_empty());
    assert!(m.session_exists(&key("w2", "b1", "t1")).await.unwrap());
    assert!(m.sessions().iter().all(|(_, last, _)| *last == 0));
    // Like a bigserial, ids handed out to rolled-back inserts are not reused: the
    // workspace deletion burned four (t1, b1, w2, skills), the dropped insert one.
    delete(&m, Entity::Session(key("w2", "b1", "t1")), true).await;
    assert_eq!(m.obligations().await.unwrap()[0].id, 6);
}

#[tokio::test]
async fn obligations_are_claimed_once_and_marked_done_only_on_commit() {
    let m = populated().await;
    delete(
        &m,
        Entity::Agent {
            workspace: "w1".into(),
            agent: "a2".into(),
        },
        true,
    )
    .await;
    let mut a = m.begin().await.unwrap();
    let got = a.claim_obligations(10).await.unwrap();
    assert_eq!(got.len(), 2);
    let mut b = m.begin().await.unwrap();
    assert!(b.claim_obligations(10).await.unwrap().is_empty());
    for (id, prefix) in &got {
        a.record_obligation(*id, prefix, 0, 9).await.unwrap();
        a.mark_done(*id, 9).await.unwrap();
    }
    assert!(m.records().await.unwrap().is_empty());
    assert_eq!(m.pending_obligation_ids().await.unwrap().len(), 2);
    a.commit().await.unwrap();
    assert!(m.pending_obligation_ids().await.unwrap().is_empty());
    assert_eq!(m.records().await.unwrap().len(), 2);
    assert_eq!(m.mark_done_if_pending(1, 10).await.unwrap(), None);
}

#[tokio::test]
async fn settings_are_read_through_the_session_lock() {
    let m = populated().await;
    let s = ScopeSettings {
        agent: Some(Access::Read),
        workspace: None,
    };
    m.upsert_agent("w1", "a2", s).await.unwrap();
    let mut tx = m.begin().await.unwrap();
    let layers = tx
        .lock_session(&key("w1", "a2", "s3"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(layers.agent, s);
    assert!(tx
        .lock_session(&key("w1", "a2", "nope"))
        .await
        .unwrap()
        .is_none());
    assert!(!m.upsert_agent("nope", "a", s).await.unwrap());
}

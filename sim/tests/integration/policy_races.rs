//! Races of part SL that no scenario step can stage, held on both metadata tiers (PostgreSQL
//! with two connections, and the in-memory store):
//!
//! - A count sweep (SPEC SL-2) claims only the sessions past the count: a write to a session it
//!   keeps never waits for it, while one to a session it claimed does.
//! - A create of a subject racing its erasure (SL-4.6) is one decision with the pending check:
//!   it waits for the erasure's request and finds it pending, where a check apart from the
//!   create lets it through.
//! - A cascade's deletion obligations (SC-6, the ids SL-4's proofs meet) are recorded in the
//!   same order on both tiers, by key, however the rows lie on disk.

use std::sync::Arc;
use std::time::Duration;

use tidemark_reference::clock::{ManualClock, DAY_MS};
use tidemark_reference::scoped::metadata::{
    Creation, Entity, MemoryMetadata, Metadata, PostgresMetadata, SessionKey,
};
use tidemark_reference::scoped::{
    Access, ScopeSettings, ScopedConfig, ScopedStore, SweepPause, TurnSpace,
};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::{bucket_name, PgProvider, RealTier, S3Server};

/// Polls `fut` until it finishes or `meta` shows a statement waiting for a lock; `None` when
/// it is waiting (and still pending), `Some` with its output when it finished first.
async fn until_blocked<F: std::future::Future + Unpin>(
    fut: &mut F,
    meta: &dyn Metadata,
) -> Option<F::Output> {
    for _ in 0..400 {
        if let Ok(v) = tokio::time::timeout(Duration::from_millis(5), &mut *fut).await {
            return Some(v);
        }
        if meta.lock_waiters().await.unwrap() > 0 {
            return None;
        }
    }
    panic!("neither finished nor blocked on a lock within two seconds");
}

/// An agent keeping its last session, with an old one past the count and a newer one kept;
/// a sweep paused once its policy pass has claimed, then a write to each of the two.
async fn the_count_claims_only_what_it_sweeps(
    store: ScopedStore,
    clock: ManualClock,
    pause: Arc<SweepPause>,
) {
    let meta = store.metadata().clone();
    store
        .create_workspace("w1", ScopeSettings::default())
        .await
        .unwrap();
    store
        .create_agent("w1", "a1", ScopeSettings::default())
        .await
        .unwrap();
    let old = TurnSpace::new("w1", "a1", "s1").unwrap();
    let kept = TurnSpace::new("w1", "a1", "s2").unwrap();
    store.create_session(&old).await.unwrap();
    store
        .write(&old, "session/a.md", b"old".to_vec())
        .await
        .unwrap();
    store.set_session_count("w1", "a1", Some(1)).await.unwrap();
    clock.advance_ms(DAY_MS);
    store.create_session(&kept).await.unwrap();
    store
        .write(&kept, "session/b.md", b"kept".to_vec())
        .await
        .unwrap();

    let sweeping = store.sweep();
    tokio::pin!(sweeping);
    tokio::select! {
        biased;
        r = &mut sweeping => panic!("the sweep ended before its pause: {r:?}"),
        _ = pause.reached.notified() => {}
    }
    // The kept session's row is not held: the write goes through while the sweep is paused.
    let mut to_kept = Box::pin(store.write(&kept, "session/c.md", b"talking".to_vec()));
    let wrote = until_blocked(&mut to_kept, meta.as_ref()).await;
    assert!(
        matches!(wrote, Some(Ok(_))),
        "a write to the session the count keeps waited for the sweep: {wrote:?}"
    );
    // The claimed one's is: the same write there waits (so the sweep did claim something).
    let mut to_old = Box::pin(store.write(&old, "session/d.md", b"late".to_vec()));
    assert!(
        until_blocked(&mut to_old, meta.as_ref()).await.is_none(),
        "a write to the session past the count did not wait for the sweep that claimed it"
    );
    pause.resume.notify_one();
    let report = sweeping.await.unwrap();
    assert_eq!(report.sessions_swept, 1, "{report:?}");
    to_old.await.unwrap();
}

fn paused(mut config: ScopedConfig) -> (ScopedConfig, Arc<SweepPause>) {
    let pause = Arc::new(SweepPause::default());
    config.policy_pause = Some(pause.clone());
    (config, pause)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_sweep_leaves_the_sessions_it_keeps_unlocked_on_postgresql() {
    let tier = RealTier::start(31).await.expect("real tier starts");
    let clock = ManualClock::starting_at(EPOCH);
    let (config, pause) = paused(ScopedConfig::new("unset"));
    let (store, _db) = tier
        .scoped_store("countlocks", config, Arc::new(clock.clone()))
        .await
        .expect("a scoped store");
    the_count_claims_only_what_it_sweeps(store, clock, pause).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_sweep_leaves_the_sessions_it_keeps_unlocked_in_memory() {
    let clock = ManualClock::starting_at(EPOCH);
    let (s3, _) = S3Server::start_memory(Arc::new(clock.clone()), 31)
        .await
        .expect("the in-memory S3 starts");
    let bucket = bucket_name(1);
    s3.client().create_bucket(&bucket).await.expect("bucket");
    let (config, pause) = paused(ScopedConfig::new(bucket));
    let store = ScopedStore::with_metadata(
        s3.client(),
        Arc::new(MemoryMetadata::new()),
        config,
        Arc::new(clock.clone()),
    )
    .await
    .expect("the store opens");
    the_count_claims_only_what_it_sweeps(store, clock, pause).await;
}

/// The erasure's request holds its transaction open (subject locked, row deleted, obligation
/// recorded) while a create of the same agent, and one of a session under it, run beside it.
async fn a_create_racing_an_erasure_waits_and_finds_it_pending(meta: &dyn Metadata) {
    let rw = ScopeSettings {
        agent: Some(Access::ReadWrite),
        workspace: None,
    };
    assert_eq!(
        meta.create_workspace_checked("w1", ScopeSettings::default(), true)
            .await
            .unwrap(),
        Creation::Done
    );
    assert_eq!(
        meta.create_agent_checked("w1", "a1", rw, true)
            .await
            .unwrap(),
        Creation::Done
    );
    let s = SessionKey::new("w1", "a1", "s1");
    assert!(meta.create_session_checked(&s, 0).await.unwrap());

    let agent = Entity::Agent {
        workspace: "w1".into(),
        agent: "a1".into(),
    };
    let prefixes = ["agents/w1/a1/".to_string(), "sessions/w1/a1/".to_string()];
    let mut erasing = meta.begin().await.unwrap();
    erasing.lock_subject("w1", Some("a1")).await.unwrap();
    assert_eq!(erasing.delete_entity(&agent, 10, true).await.unwrap(), 1);
    erasing
        .record_erasure("w1", Some("a1"), 10, 20, &prefixes)
        .await
        .unwrap();

    // A check apart from the create, as before: nothing pending is committed yet.
    assert!(!meta.erasure_pending("w1", Some("a1")).await.unwrap());
    // The create as one decision waits for the request...
    let mut again = Box::pin(meta.create_agent_checked("w1", "a1", rw, true));
    assert!(
        until_blocked(&mut again, meta).await.is_none(),
        "the create did not wait for the erasure's request"
    );
    erasing.commit().await.unwrap();
    // ...and finds the erasure pending once it commits: nothing is created.
    assert_eq!(again.await.unwrap(), Creation::ErasurePending);
    assert!(meta.erasure_pending("w1", Some("a1")).await.unwrap());
    // The session under it finds its agent gone.
    assert!(!meta
        .create_session_checked(&SessionKey::new("w1", "a1", "s2"), 30)
        .await
        .unwrap());
    // A second erasure of it cannot happen (the row is gone), and the first holds the id.
    assert_eq!(
        meta.create_agent_checked("w1", "a1", rw, true)
            .await
            .unwrap(),
        Creation::ErasurePending
    );
}

/// A workspace whose agents and sessions were written out of key order, and one agent's row
/// rewritten (PostgreSQL moves it to the end of the heap), deleted whole.
async fn a_cascade_is_recorded_by_key(meta: &dyn Metadata) -> Vec<(i64, String)> {
    meta.upsert_workspace("w1", ScopeSettings::default())
        .await
        .unwrap();
    for a in ["a2", "a1", "a3"] {
        assert!(meta
            .upsert_agent("w1", a, ScopeSettings::default())
            .await
            .unwrap());
    }
    for (a, s) in [
        ("a2", "s2"),
        ("a2", "s1"),
        ("a1", "s9"),
        ("a3", "s0"),
        ("a1", "s1"),
    ] {
        assert!(meta
            .insert_session(&SessionKey::new("w1", a, s), 0)
            .await
            .unwrap());
    }
    let read = ScopeSettings {
        agent: Some(Access::Read),
        workspace: None,
    };
    assert!(meta.upsert_agent("w1", "a1", read).await.unwrap());
    let mut tx = meta.begin().await.unwrap();
    tx.delete_entity(&Entity::Workspace("w1".into()), 5, true)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    meta.obligations()
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.id, d.prefix))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_and_cascades_race_erasures_alike_on_postgresql_and_in_memory() {
    let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
    let db = pg.fresh_database("policyraces").await.unwrap();
    let real = PostgresMetadata::new(db.pool.clone());
    real.migrate().await.unwrap();
    a_create_racing_an_erasure_waits_and_finds_it_pending(&real).await;
    a_create_racing_an_erasure_waits_and_finds_it_pending(&MemoryMetadata::new()).await;
    pg.drop_database(db).await.unwrap();

    let db = pg.fresh_database("cascadeorder").await.unwrap();
    let real = PostgresMetadata::new(db.pool.clone());
    real.migrate().await.unwrap();
    let on_pg = a_cascade_is_recorded_by_key(&real).await;
    let in_memory = a_cascade_is_recorded_by_key(&MemoryMetadata::new()).await;
    pg.drop_database(db).await.unwrap();
    let expected: Vec<(i64, String)> = [
        "workspaces/w1/",
        "skills/w1/",
        "agents/w1/a1/",
        "agents/w1/a2/",
        "agents/w1/a3/",
        "sessions/w1/a1/s1/",
        "sessions/w1/a1/s9/",
        "sessions/w1/a2/s1/",
        "sessions/w1/a2/s2/",
        "sessions/w1/a3/s0/",
    ]
    .iter()
    .enumerate()
    .map(|(i, p)| (i as i64 + 1, p.to_string()))
    .collect();
    assert_eq!(in_memory, expected, "the in-memory store's cascade");
    assert_eq!(on_pg, expected, "PostgreSQL's cascade");
}

//! The count policy's sweep (SPEC SL-2) batches across agents and holds only what it sweeps
//! (SL-1.2, SL-1.3, SC-5.6), on both metadata tiers: a thousand agents with one session past
//! their count each cost one list per session and one DeleteObjects per 1,000 keys, not one per
//! agent; a conversation being written is neither waited for nor swept.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tidemark_reference::clock::{ManualClock, DAY_MS};
use tidemark_reference::scoped::metadata::{
    MemoryMetadata, Metadata, PostgresMetadata, SessionKey,
};
use tidemark_reference::scoped::{ScopeSettings, ScopedConfig, ScopedStore};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::{MemoryHandle, PgProvider, S3Server, TestDatabase};

const BUCKET: &str = "counts";

/// The two metadata tiers: in memory, and a fresh PostgreSQL database (kept alive beside it).
async fn tiers(name: &str) -> Vec<(Arc<dyn Metadata>, Option<(PgProvider, TestDatabase)>)> {
    let pg = PgProvider::from_environment().await.expect("PostgreSQL");
    let db = pg.fresh_database(name).await.unwrap();
    let postgres: Arc<dyn Metadata> = Arc::new(PostgresMetadata::new(db.pool.clone()));
    vec![
        (Arc::new(MemoryMetadata::new()), None),
        (postgres, Some((pg, db))),
    ]
}

async fn store(
    meta: Arc<dyn Metadata>,
    clock: &ManualClock,
) -> (S3Server, MemoryHandle, ScopedStore) {
    let (server, mem) = S3Server::start_memory(Arc::new(clock.clone()), 5)
        .await
        .unwrap();
    server
        .client()
        .create_bucket()
        .bucket(BUCKET)
        .send()
        .await
        .unwrap();
    let store = ScopedStore::with_metadata(
        server.client(),
        meta,
        ScopedConfig::new(BUCKET),
        Arc::new(clock.clone()),
    )
    .await
    .unwrap();
    (server, mem, store)
}

/// An agent's session, last active `days_ago` days before `now_ms`, holding a file and its text.
async fn session(
    meta: &dyn Metadata,
    mem: &MemoryHandle,
    key: &SessionKey,
    now_ms: i64,
    days_ago: i64,
) {
    let at = now_ms - days_ago * DAY_MS;
    assert!(meta.insert_session(key, at).await.unwrap());
    for name in ["notes.md", ".tidemark-text/notes.md"] {
        mem.seed(
            BUCKET,
            &format!("{}{name}", key.prefix()),
            b"x".to_vec(),
            BTreeMap::new(),
            at,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_agents_one_session_past_their_count_each_cost_one_delete_objects_per_thousand_keys(
) {
    for (meta, _db) in tiers("countbatches").await {
        let clock = ManualClock::starting_at(EPOCH);
        let now = EPOCH.as_millis() + 10 * DAY_MS;
        clock.set(tidemark_reference::clock::Timestamp::from_millis(now));
        let (_server, mem, store) = store(meta.clone(), &clock).await;
        let agents = 1000;
        for w in 0..10 {
            let ws = format!("w{w}");
            store
                .create_workspace(&ws, ScopeSettings::default())
                .await
                .unwrap();
            for a in 0..agents / 10 {
                let agent = format!("a{a}");
                store
                    .create_agent(&ws, &agent, ScopeSettings::default())
                    .await
                    .unwrap();
                store.set_session_count(&ws, &agent, Some(1)).await.unwrap();
                for (s, days_ago) in [("new", 0), ("old", 1)] {
                    session(
                        &*meta,
                        &mem,
                        &SessionKey::new(&ws, &agent, s),
                        now,
                        days_ago,
                    )
                    .await;
                }
            }
        }
        let before = store.requests();
        let report = store.sweep().await.unwrap();
        let after = store.requests();
        assert_eq!(report.sessions_swept, agents as u64);
        assert_eq!(report.objects_deleted, 2 * agents as u64);
        assert_eq!(mem.object_count(BUCKET), 2 * agents);
        // One list per swept session; 2,000 keys in two DeleteObjects, not one per agent.
        assert_eq!(after.list - before.list, agents as u64);
        assert_eq!(after.delete_batch - before.delete_batch, 2);
        // A second sweep finds nothing to do.
        assert_eq!(store.sweep().await.unwrap().sessions_swept, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_sweep_neither_waits_for_nor_sweeps_a_conversation_being_written() {
    for (meta, _db) in tiers("countholds").await {
        let clock = ManualClock::starting_at(EPOCH);
        let now = EPOCH.as_millis() + 10 * DAY_MS;
        clock.set(tidemark_reference::clock::Timestamp::from_millis(now));
        let (server, mem, store) = store(meta.clone(), &clock).await;
        store
            .create_workspace("w1", ScopeSettings::default())
            .await
            .unwrap();
        store
            .create_agent("w1", "a1", ScopeSettings::default())
            .await
            .unwrap();
        store.set_session_count("w1", "a1", Some(1)).await.unwrap();
        let (newest, middle, oldest) = (
            SessionKey::new("w1", "a1", "s3"),
            SessionKey::new("w1", "a1", "s2"),
            SessionKey::new("w1", "a1", "s1"),
        );
        session(&*meta, &mem, &newest, now, 0).await;
        session(&*meta, &mem, &middle, now, 1).await;
        session(&*meta, &mem, &oldest, now, 2).await;
        // Two writes in progress (uncommitted, holding their rows): one to the conversation the
        // count keeps, one to the middle session, which the count would sweep.
        let mut kept_write = meta.begin().await.unwrap();
        assert!(kept_write.lock_session(&newest).await.unwrap().is_some());
        let mut doomed_write = meta.begin().await.unwrap();
        assert!(doomed_write.lock_session(&middle).await.unwrap().is_some());
        doomed_write
            .touch(&middle, now + DAY_MS / 24)
            .await
            .unwrap();
        let report = tokio::time::timeout(Duration::from_secs(20), store.sweep())
            .await
            .expect("the count sweep waits for no write")
            .unwrap();
        // The oldest is swept; the session being written is passed by, not swept.
        assert_eq!(report.sessions_swept, 1);
        assert_eq!(mem.object_count(BUCKET), 4);
        doomed_write.commit().await.unwrap();
        kept_write.commit().await.unwrap();
        // The middle session is the newest now (its write an hour later): the next sweep takes
        // the one it displaced.
        let report = store.sweep().await.unwrap();
        assert_eq!(report.sessions_swept, 1);
        let listed = server
            .client()
            .list_objects_v2()
            .bucket(BUCKET)
            .send()
            .await
            .unwrap();
        let left: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
        assert_eq!(
            left,
            [
                "sessions/w1/a1/s2/.tidemark-text/notes.md",
                "sessions/w1/a1/s2/notes.md"
            ]
        );
    }
}

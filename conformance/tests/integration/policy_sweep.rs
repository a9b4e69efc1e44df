//! The reference's policy sweep (SPEC SL-1.2) held to its request count, which no scenario can
//! stage at a thousand keys: one DeleteObjects per 1,000 keys across the sessions of a pass, on
//! both sides of the 1,000 boundary, and one pass per `sweep_chunk` sessions. On the simulation
//! tier's stores (the in-memory S3 over loopback HTTP, the in-memory metadata), whose outcomes
//! the suites hold equal to the real tier's.

use std::sync::Arc;

use futures::StreamExt;
use tidemark_reference::clock::{ManualClock, DAY_MS};
use tidemark_reference::scoped::metadata::MemoryMetadata;
use tidemark_reference::scoped::{ScopeSettings, ScopedConfig, ScopedStore, TurnSpace};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::S3Server;

struct Stores {
    s3: S3Server,
    clock: ManualClock,
    store: ScopedStore,
    bucket: String,
}

async fn stores(sweep_chunk: i64) -> Stores {
    let clock = ManualClock::starting_at(EPOCH);
    let (s3, _) = S3Server::start_memory(Arc::new(clock.clone()), 7)
        .await
        .expect("the in-memory S3 starts");
    let bucket = tidemark_sim::real_tier::bucket_name(1);
    s3.client().create_bucket(&bucket).await.expect("bucket");
    let mut config = ScopedConfig::new(bucket.clone());
    config.sweep_chunk = sweep_chunk;
    let store = ScopedStore::with_metadata(
        s3.client(),
        Arc::new(MemoryMetadata::new()),
        config,
        Arc::new(clock.clone()),
    )
    .await
    .expect("the store opens");
    store
        .create_workspace("w1", ScopeSettings::default())
        .await
        .unwrap();
    for agent in ["a1", "a2"] {
        store
            .create_agent("w1", agent, ScopeSettings::default())
            .await
            .unwrap();
    }
    Stores {
        s3,
        clock,
        store,
        bucket,
    }
}

impl Stores {
    /// Makes and closes `session` of `agent`, with `keys` objects under its prefix, put
    /// straight into the bucket (the sweep deletes whatever its prefix holds).
    async fn closed_session(&self, agent: &str, session: &str, keys: usize) {
        let t = TurnSpace::new("w1", agent, session).unwrap();
        self.store.create_session(&t).await.unwrap();
        let client = self.s3.client();
        futures::stream::iter(0..keys)
            .map(|i| {
                let client = client.clone();
                let key = format!("sessions/w1/{agent}/{session}/f{i:04}.txt");
                let bucket = self.bucket.clone();
                async move {
                    client
                        .put_object(&bucket, &key, b"x".to_vec(), &[])
                        .await
                        .expect("put")
                }
            })
            .buffer_unordered(16)
            .collect::<Vec<_>>()
            .await;
        self.store.close_session(&t).await.unwrap();
    }

    async fn keys(&self) -> usize {
        tidemark_conformance::profiles::scoped::process::harness::bucket_keys(
            &self.s3.client(),
            &self.bucket,
            "sessions/",
        )
        .await
        .unwrap()
        .len()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_sweep_sends_one_delete_objects_per_thousand_keys_across_its_sessions() {
    // 1,000 keys in three sessions of two agents: one request (one per agent would be two).
    let s = stores(1000).await;
    s.closed_session("a1", "s1", 400).await;
    s.closed_session("a1", "s2", 400).await;
    s.closed_session("a2", "s3", 200).await;
    s.clock.advance_ms(7 * DAY_MS);
    let report = s.store.sweep().await.unwrap();
    assert_eq!(
        (report.sessions_swept, report.delete_requests),
        (3, 1),
        "{report:?}"
    );
    assert_eq!(s.keys().await, 0);

    // 1,001 keys in three sessions: two requests, the second carrying the one key past the
    // thousand.
    let s = stores(1000).await;
    s.closed_session("a1", "s1", 600).await;
    s.closed_session("a2", "s2", 300).await;
    s.closed_session("a2", "s3", 101).await;
    s.clock.advance_ms(7 * DAY_MS);
    let report = s.store.sweep().await.unwrap();
    assert_eq!(
        (report.sessions_swept, report.delete_requests),
        (3, 2),
        "{report:?}"
    );
    assert_eq!(s.keys().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_sweep_takes_its_sessions_a_chunk_per_pass_and_every_chunk_in_one_sweep() {
    // Five closed sessions, two per pass: three passes, each one DeleteObjects, all in one sweep.
    let s = stores(2).await;
    for (agent, session) in [
        ("a1", "s1"),
        ("a1", "s2"),
        ("a1", "s3"),
        ("a2", "s4"),
        ("a2", "s5"),
    ] {
        s.closed_session(agent, session, 3).await;
    }
    s.clock.advance_ms(7 * DAY_MS);
    let report = s.store.sweep().await.unwrap();
    assert_eq!(
        (report.sessions_swept, report.delete_requests),
        (5, 3),
        "{report:?}"
    );
    assert_eq!(s.keys().await, 0);
    let again = s.store.sweep().await.unwrap();
    assert_eq!(
        (again.sessions_swept, again.delete_requests),
        (0, 0),
        "{again:?}"
    );
}

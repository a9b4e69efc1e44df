//! Two sweepers running at once (two processes over one bucket and one database) delete nothing
//! twice and lose no record: each expired session is swept by exactly one of them, each deletion
//! obligation is met and recorded exactly once, and nothing live is touched.

use std::sync::Arc;

use tidemark_reference::clock::{ManualClock, DAY_MS};
use tidemark_reference::s3_client::ListRequest;
use tidemark_reference::scoped::{ScopeSettings, ScopedConfig, ScopedStore, TurnSpace};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::RealTier;

async fn keys(tier: &RealTier, bucket: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let request = ListRequest {
            prefix: Some(prefix),
            continuation_token: token.as_deref(),
            ..ListRequest::default()
        };
        let page = tier
            .s3
            .client()
            .list_objects_v2(bucket, &request)
            .await
            .expect("a listing");
        out.extend(page.objects.into_iter().map(|o| o.key));
        match page.next_continuation_token {
            Some(t) => token = Some(t),
            None => return out,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sweepers_at_once_delete_nothing_twice_and_lose_no_record() {
    let tier = RealTier::start(7).await.expect("real tier starts");
    let clock = ManualClock::starting_at(EPOCH);
    let (first, _db) = tier
        .scoped_store(
            "twosweepers",
            ScopedConfig::new("unset"),
            Arc::new(clock.clone()),
        )
        .await
        .expect("a scoped store");
    let config = first.config().clone();
    let bucket = config.bucket.clone();
    // A second process over the same bucket and database; small chunks so the two interleave.
    let mut config2 = config.clone();
    config2.sweep_chunk = 2;
    let second = ScopedStore::open(
        tier.s3.client(),
        _db.pool.clone(),
        config2,
        Arc::new(clock.clone()),
    )
    .await
    .expect("a second store");

    // w1: eight sessions that will go idle, one that stays active.
    first
        .create_workspace("w1", ScopeSettings::default())
        .await
        .unwrap();
    first
        .create_agent("w1", "a1", ScopeSettings::default())
        .await
        .unwrap();
    let mut idle = Vec::new();
    for s in 0..8 {
        let t = TurnSpace::new("w1", "a1", &format!("s{s}")).unwrap();
        first.create_session(&t).await.unwrap();
        for f in 0..3 {
            first
                .write(&t, &format!("session/f{f}.txt"), b"idle".to_vec())
                .await
                .unwrap();
        }
        idle.push(t);
    }
    let live = TurnSpace::new("w1", "a1", "live").unwrap();
    first.create_session(&live).await.unwrap();
    first
        .write(&live, "session/keep.txt", b"live".to_vec())
        .await
        .unwrap();
    // w2: deleted whole, so its agents and sessions become obligations.
    first
        .create_workspace("w2", ScopeSettings::default())
        .await
        .unwrap();
    for a in ["b1", "b2", "b3"] {
        first
            .create_agent("w2", a, ScopeSettings::default())
            .await
            .unwrap();
        let t = TurnSpace::new("w2", a, "s").unwrap();
        first.create_session(&t).await.unwrap();
        first
            .write(&t, "session/x.txt", b"gone".to_vec())
            .await
            .unwrap();
        first
            .write(&t, "agent/y.txt", b"gone".to_vec())
            .await
            .unwrap();
    }
    let w2_objects = keys(&tier, &bucket, "sessions/w2/").await.len()
        + keys(&tier, &bucket, "agents/w2/").await.len();
    let idle_objects = keys(&tier, &bucket, "sessions/w1/a1/").await.len()
        - keys(&tier, &bucket, "sessions/w1/a1/live/").await.len();
    first.delete_workspace("w2").await.unwrap();
    let obligations = first.deletion_obligations().await.unwrap().len();
    assert!(
        obligations >= 7,
        "the trigger recorded the workspace, its agents and sessions: {obligations}"
    );

    clock.advance_ms(31 * DAY_MS);
    first.record_activity(&live).await.unwrap();

    let (a, b) = tokio::join!(first.sweep(), second.sweep());
    let (a, b) = (a.expect("the first sweep"), b.expect("the second sweep"));
    eprintln!("first: {a:?}\nsecond: {b:?}");

    assert_eq!(
        a.sessions_swept + b.sessions_swept,
        idle.len() as u64,
        "each idle session is swept once: {a:?} {b:?}"
    );
    assert_eq!(
        (a.obligations_completed + b.obligations_completed) as usize,
        obligations,
        "each obligation is met once: {a:?} {b:?}"
    );
    assert_eq!(
        (a.objects_deleted + b.objects_deleted) as usize,
        idle_objects + w2_objects,
        "no object is deleted twice (or missed): {a:?} {b:?}"
    );
    let records = first.deletion_records().await.unwrap();
    let mut ids: Vec<i64> = records.iter().map(|r| r.deletion_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), records.len(), "no obligation is recorded twice");
    assert_eq!(
        records.len(),
        obligations,
        "every obligation has its record"
    );
    assert!(first
        .deletion_obligations()
        .await
        .unwrap()
        .iter()
        .all(|o| o.done_at_ms.is_some()));
    assert!(keys(&tier, &bucket, "sessions/w2/").await.is_empty());
    assert!(keys(&tier, &bucket, "agents/w2/").await.is_empty());
    for t in &idle {
        assert!(keys(
            &tier,
            &bucket,
            &format!("sessions/w1/a1/{}/", t.session.as_str())
        )
        .await
        .is_empty());
    }
    assert_eq!(
        first.read(&live, "session/keep.txt").await.unwrap(),
        b"live"
    );
}

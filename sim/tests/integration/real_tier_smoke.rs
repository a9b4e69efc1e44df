//! The real tier stands up: the disk S3 store over loopback HTTP answers a real S3 client,
//! faults are injected on demand, and an ephemeral PostgreSQL answers queries in a database of
//! its own.

use tidemark_reference::s3_client::ListRequest;
use tidemark_sim::real_tier::{FaultPlan, RealTier};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_go_through_a_real_s3_client_and_postgres_answers_in_its_own_database() {
    let tier = RealTier::start(7).await.expect("real tier starts");
    tier.create_bucket("smoke").await.unwrap();
    let c = tier.s3.client();

    for i in 0..5 {
        c.put_object(
            "smoke",
            &format!("sessions/w/a/s/f{i}.txt"),
            format!("hello {i}").into_bytes(),
            &[],
        )
        .await
        .unwrap();
    }
    let got = c
        .get_object("smoke", "sessions/w/a/s/f3.txt")
        .await
        .unwrap();
    assert_eq!(&got.body[..], b"hello 3");

    let under = |prefix| ListRequest {
        prefix: Some(prefix),
        ..ListRequest::default()
    };
    let listed = c
        .list_objects_v2("smoke", &under("sessions/w/"))
        .await
        .unwrap();
    let keys: Vec<&str> = listed.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys.len(), 5);

    // A partial DeleteObjects failure: every key fails, nothing is deleted, each is reported.
    tier.s3.faults().set_plan(FaultPlan {
        delete_key_failure_rate: 1.0,
        ..Default::default()
    });
    let out = c.delete_objects("smoke", &keys, true).await.unwrap();
    assert_eq!(out.errors.len(), 5);

    tier.s3.faults().heal();
    let out = c.delete_objects("smoke", &keys, true).await.unwrap();
    assert!(out.errors.is_empty());
    let listed = c
        .list_objects_v2("smoke", &under("sessions/"))
        .await
        .unwrap();
    assert!(listed.objects.is_empty());

    // Down: every request fails.
    tier.s3.faults().set_down(true);
    assert!(c
        .list_objects_v2("smoke", &ListRequest::default())
        .await
        .is_err());
    tier.s3.faults().heal();

    let db = tier.pg.fresh_database("smoke").await.unwrap();
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(one, 1);
    let db2 = tier.pg.fresh_database("smoke").await.unwrap();
    assert_ne!(db.name, db2.name);
    tier.pg.drop_database(db2).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fault_wrapper_stores_and_serves_lifecycle_configuration() {
    use tidemark_reference::s3_client::lifecycle_xml::{
        BucketLifecycle, Expiration, LifecycleRule, RuleFilter,
    };
    let tier = RealTier::start(1).await.expect("real tier starts");
    tier.create_bucket("lifecycle").await.unwrap();
    let c = tier.s3.client();
    let rule = LifecycleRule {
        id: Some("sessions-backstop".into()),
        status: "Enabled".into(),
        filter: Some(RuleFilter {
            prefix: Some("sessions/".into()),
            ..RuleFilter::default()
        }),
        expiration: Some(Expiration {
            days: Some(365),
            ..Expiration::default()
        }),
        ..LifecycleRule::default()
    };
    c.put_bucket_lifecycle("lifecycle", &BucketLifecycle { rules: vec![rule] })
        .await
        .unwrap();
    let got = c.get_bucket_lifecycle("lifecycle").await.unwrap();
    assert_eq!(got.rules.len(), 1);
    assert_eq!(got.rules[0].id.as_deref(), Some("sessions-backstop"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_url_is_used_as_given_and_each_scenario_still_gets_its_own_database() {
    use tidemark_sim::real_tier::{PgProvider, PgSourceKind};
    // Stand up a cluster, then reach it only through a URL, as DATABASE_URL would.
    let ephemeral = PgProvider::from_environment()
        .await
        .expect("a cluster starts");
    let url = ephemeral.database_url("postgres");
    let by_url = PgProvider::from_url(&url).await.expect("the URL answers");
    assert_eq!(by_url.kind(), &PgSourceKind::DatabaseUrl);
    let db = by_url.fresh_database("by url").await.unwrap();
    assert!(db.url.ends_with(&format!("/{}", db.name)), "{}", db.url);
    let n: i64 = sqlx::query_scalar("SELECT 41::bigint + 1")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(n, 42);
    let name = db.name.clone();
    by_url.drop_database(db).await.unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_one(&ephemeral.fresh_database("probe").await.unwrap().pool)
        .await
        .unwrap();
    assert_eq!(left, 0, "the scenario database was left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenarios_bucket_is_named_by_its_server_never_by_the_scenarios_name() {
    use std::sync::Arc;
    use tidemark_reference::clock::ManualClock;
    use tidemark_reference::scoped::ScopedConfig;
    let tier = RealTier::start(2).await.expect("real tier starts");
    let clock = Arc::new(ManualClock::default());
    let long_name = "a-scenario-file-with-a-very-long-name-".repeat(5);
    let (first, _db1) = tier
        .scoped_store(&long_name, ScopedConfig::new("unset"), clock.clone())
        .await
        .expect("a store for a long-named scenario");
    let (second, _db2) = tier
        .scoped_store("x", ScopedConfig::new("unset"), clock)
        .await
        .expect("a store for a short-named scenario");
    assert_eq!(first.config().bucket, "tidemark-1");
    assert_eq!(second.config().bucket, "tidemark-2");
}

/// The store's error classes reach the client as a real S3 sends them: the status, and the code
/// in the error body (a HEAD's error has no body, so only its status).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_error_faults_answer_with_real_s3_statuses_and_codes() {
    use tidemark_sim::real_tier::faults::Throttle;
    let tier = RealTier::start(8).await.expect("real tier starts");
    tier.create_bucket("codes").await.unwrap();
    let c = tier.s3.client();
    let cases = [
        (
            FaultPlan {
                no_such_bucket: true,
                ..Default::default()
            },
            404,
            "NoSuchBucket",
        ),
        (
            FaultPlan {
                access_denied: true,
                ..Default::default()
            },
            403,
            "AccessDenied",
        ),
        (
            FaultPlan {
                throttle: Throttle::Always,
                ..Default::default()
            },
            503,
            "SlowDown",
        ),
    ];
    for (plan, status, code) in cases {
        tier.s3.faults().set_plan(plan);
        let e = c
            .put_object("codes", "k", b"x".to_vec(), &[])
            .await
            .unwrap_err();
        assert_eq!(e.status, Some(status));
        assert_eq!(e.code(), Some(code));
        let e = c.head_object("codes", "k").await.unwrap_err();
        assert_eq!(e.status, Some(status));
    }
    // `throttle N` throttles the next N requests of any operation, then serves.
    tier.s3.faults().set_plan(FaultPlan {
        throttle: Throttle::Next(2),
        ..Default::default()
    });
    let mut answers = Vec::new();
    for _ in 0..3 {
        let r = c.list_objects_v2("codes", &ListRequest::default()).await;
        answers.push(r.err().and_then(|e| e.code));
    }
    assert_eq!(
        answers,
        [Some("SlowDown".into()), Some("SlowDown".into()), None]
    );
}

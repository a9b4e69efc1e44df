//! The lifecycle configuration on a real bucket, and what an age-only rule would have done to a
//! long conversation that the activity-based sweep keeps.

use std::sync::Arc;

use tidemark_reference::clock::{ManualClock, DAY_MS};
use tidemark_reference::scoped::lifecycle::{Filter, LifecycleConfiguration, Rule};
use tidemark_reference::scoped::{ScopeSettings, ScopedConfig, TurnSpace};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::lifecycle::LifecycleExecutor;
use tidemark_sim::real_tier::RealTier;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_profile_puts_three_rules_on_its_bucket_and_refuses_an_invalid_configuration() {
    let tier = RealTier::start(3).await.unwrap();
    let clock = ManualClock::starting_at(EPOCH);
    let (store, _db) = tier
        .scoped_store("lc", ScopedConfig::new("x"), Arc::new(clock))
        .await
        .unwrap();
    let bucket = store.config().bucket.clone();
    store
        .apply_lifecycle(&LifecycleConfiguration::for_profile(365, 7))
        .await
        .unwrap();
    let got = tier
        .s3
        .client()
        .get_bucket_lifecycle(&bucket)
        .await
        .unwrap();
    let read_back = got.to_configuration();
    assert_eq!(read_back, LifecycleConfiguration::for_profile(365, 7));

    // A backstop no longer than the idle TTL would cut conversations the sweep keeps.
    let e = store
        .apply_lifecycle(&LifecycleConfiguration::for_profile(30, 7))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "config");
    // 1,001 rules: refused before anything is sent.
    let too_many = LifecycleConfiguration {
        rules: (0..1001)
            .map(|i| Rule {
                id: format!("agent-{i}"),
                enabled: true,
                filter: Some(Filter::Prefix(format!("sessions/w/a{i}/"))),
                expiration_days: Some(400),
                abort_incomplete_multipart_days: None,
            })
            .collect(),
    };
    assert_eq!(
        store.apply_lifecycle(&too_many).await.unwrap_err().kind(),
        "config"
    );
    let still = tier
        .s3
        .client()
        .get_bucket_lifecycle(&bucket)
        .await
        .unwrap();
    assert_eq!(still.rules.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_age_only_lifecycle_rule_loses_the_uploads_of_a_conversation_the_sweep_keeps() {
    let tier = RealTier::start(5).await.unwrap();
    let clock = ManualClock::starting_at(EPOCH);
    let (store, _db) = tier
        .scoped_store("ageonly", ScopedConfig::new("x"), Arc::new(clock.clone()))
        .await
        .unwrap();
    let bucket = store.config().bucket.clone();
    store
        .create_workspace("w1", ScopeSettings::default())
        .await
        .unwrap();
    store
        .create_agent("w1", "a1", ScopeSettings::default())
        .await
        .unwrap();
    let t = TurnSpace::new("w1", "a1", "s1").unwrap();
    store.create_session(&t).await.unwrap();
    store
        .write(&t, "session/upload.pdf", b"contract".to_vec())
        .await
        .unwrap();

    // Forty days of daily conversation.
    for _ in 0..40 {
        clock.advance_ms(DAY_MS);
        store.record_activity(&t).await.unwrap();
        store.sweep().await.unwrap();
    }
    assert!(
        store.read(&t, "session/upload.pdf").await.is_ok(),
        "the sweep kept it"
    );

    // The rule the source document says was used before: thirty days by age.
    let age_only = LifecycleExecutor::new(LifecycleConfiguration {
        rules: vec![Rule {
            id: "sessions-30d".into(),
            enabled: true,
            filter: Some(Filter::Prefix("sessions/".into())),
            expiration_days: Some(30),
            abort_incomplete_multipart_days: None,
        }],
    })
    .unwrap();
    let deleted = age_only
        .run_on_bucket(
            &tier.s3.client(),
            &bucket,
            tidemark_reference::clock::Clock::now(&clock),
        )
        .await
        .unwrap();
    assert!(
        deleted.contains(&"sessions/w1/a1/s1/upload.pdf".to_string()),
        "age-only rule deleted {deleted:?}"
    );
    let e = store.read(&t, "session/upload.pdf").await.unwrap_err();
    assert_eq!(e.kind(), "not_found", "lost mid-conversation");
}

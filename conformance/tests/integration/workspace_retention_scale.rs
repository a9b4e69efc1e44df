//! Retention per workspace at scale (SPEC SL-5.3, SL-5.4) and the policy sweeper's cost (SL-1.2),
//! held to what `tidemark bench --profile scoped` reports at the issue's scale, here at a tenth
//! of it so the test stays quick: the rule count follows the workspaces shorter than the
//! deployment and stops at the budget, with the configuration accepted by the S3 server; the
//! sweep's S3 requests stay near their lower bound.

use tidemark_conformance::profiles::scoped::bench::retention::{
    lifecycle_rules_at, policy_sweep, Population,
};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn ten_thousand_workspaces_one_percent_shorter_need_a_hundred_and_three_rules_and_the_budget_stops_at_a_thousand(
) {
    let rt = rt();
    let shorter: Vec<i64> = (0..100).map(|i| 1 + i % 29).collect();
    assert_eq!(rt.block_on(lifecycle_rules_at(10_000, &shorter)), Ok(103));
    // A TTL at or above the deployment's 30 days needs no rule.
    let longer: Vec<i64> = (0..100).map(|i| 30 + i).collect();
    assert_eq!(rt.block_on(lifecycle_rules_at(10_000, &longer)), Ok(3));
    // 998 shorter workspaces: the 998th workspace rule would be the 1,001st rule.
    let past: Vec<i64> = (0..998).map(|i| 1 + i % 29).collect();
    assert_eq!(rt.block_on(lifecycle_rules_at(998, &past)), Ok(1000));
    assert_eq!(rt.block_on(lifecycle_rules_at(997, &past[..997])), Ok(1000));
    assert_eq!(rt.block_on(lifecycle_rules_at(996, &past[..996])), Ok(999));
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_policy_sweep_of_ten_thousand_sessions_with_mixed_policies_stays_near_its_lower_bound() {
    let p = Population {
        workspaces: 100,
        ..Population::ISSUE
    };
    let f = rt().block_on(policy_sweep(p)).unwrap();
    println!("{f:?}");
    assert_eq!(f.sessions, 10_000);
    let issued = f.lists + f.delete_objects;
    assert!(
        issued as f64 <= 1.1 * f.lower_bound as f64,
        "{issued} requests against a lower bound of {}",
        f.lower_bound
    );
    assert!(f.writes > 0, "the writer wrote beside the sweep");
    // The steady state: one session past each of 90 counts, its DeleteObjects batched across
    // agents (SL-1.2), so the requests stay near one list per session.
    assert_eq!(f.later_swept, 90);
    assert_eq!(f.later_lists, 90);
    let later = f.later_lists + f.later_delete_objects;
    assert!(
        later as f64 <= 1.1 * 91.0,
        "{later} requests for 90 sessions of 180 keys"
    );
}

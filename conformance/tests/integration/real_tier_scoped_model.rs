//! Random operation sequences against the scoped reference, checked step by step against a
//! small executable model of SPEC part SC (`tidemark_conformance::profiles::scoped::model`, also behind
//! `tidemark explore --profile scoped`). Every sequence comes from one seed; a failure prints
//! the seed, the steps so far and where the store left the model.

use tidemark_conformance::profiles::scoped::model::{
    run_sequence, SequenceError, Tier, DEFAULT_STEPS,
};
use tidemark_reference::scoped::ScopedMutant;
use tidemark_sim::real_tier::{FaultPlan, PgProvider};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
async fn random_sequences_of_writes_reads_waits_sweeps_and_deletions_agree_with_the_model() {
    let pg = PgProvider::from_environment().await.unwrap();
    let mut swept = 0;
    for seed in 0..24 {
        match run_sequence(Tier::Postgres(&pg), seed, DEFAULT_STEPS, None, None).await {
            Ok(r) => swept += r.swept_files,
            Err(e) => panic!(
                "{e}\nreplay: tidemark explore --profile scoped --first-seed {seed} --seeds 1"
            ),
        }
    }
    // The sequences must reach the interesting part: files actually expiring.
    assert!(swept >= 10, "only {swept} files were ever swept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_find_the_age_only_and_waits_ignored_mutants() {
    let pg = PgProvider::from_environment().await.unwrap();
    for m in [ScopedMutant::AgeOnlyExpiry, ScopedMutant::WaitsIgnored] {
        let mut killed = None;
        for seed in 0..24 {
            if let Err(SequenceError::Diverged(_)) =
                run_sequence(Tier::Postgres(&pg), seed, DEFAULT_STEPS, Some(m), None).await
            {
                killed = Some(seed);
                break;
            }
        }
        assert!(
            killed.is_some(),
            "mutant {} survives 24 random sequences",
            m.id()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
async fn under_random_store_faults_nothing_half_done_is_reported_done_and_a_healed_sweep_finishes()
{
    let pg = PgProvider::from_environment().await.unwrap();
    let plan = FaultPlan {
        error_rate: 0.15,
        delete_key_failure_rate: 0.2,
        ..Default::default()
    };
    for seed in 100..116 {
        if let Err(e) = run_sequence(
            Tier::Postgres(&pg),
            seed,
            DEFAULT_STEPS,
            None,
            Some(plan.clone()),
        )
        .await
        {
            panic!("{e}\nreplay: cargo test -p tidemark-conformance --test integration real_tier_scoped_model::under_random");
        }
    }
}

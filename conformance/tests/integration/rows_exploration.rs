//! Rows exploration properties that must hold on every build: a seed replays to a byte-identical
//! trace, the reference survives a bounded random search (faults included), and random search
//! finds the rows mutants unaided. Needs PostgreSQL like every real-tier test.

use tidemark_conformance::explore::engine::Explorer;
use tidemark_conformance::explore::engine::{explore_seeds, Failed, Seeds};
use tidemark_conformance::explore::hunt::{hunt, hunt_report};
use tidemark_conformance::explore::Shard;
use tidemark_conformance::profiles::rows::explore::run::{Databases, RunError, Tier};
use tidemark_conformance::profiles::rows::explore::{run_seed, RowsExplorer};
use tidemark_reference::rows::RowsMutant;
use tidemark_sim::real_tier::PgProvider;

/// Seeds `0..n` of every shard, `jobs` at once.
fn seeds(n: u64, jobs: usize) -> Seeds {
    Seeds {
        first_seed: 0,
        seeds: n,
        shard: Shard::ALL,
        jobs,
    }
}

fn on_postgres<T>(f: impl AsyncFnOnce(Tier<'_>) -> T) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let pg = PgProvider::from_environment().await.expect("PostgreSQL");
        let dbs = Databases::new(&pg);
        let out = f(Tier::Postgres(&dbs)).await;
        dbs.close().await.expect("the databases dropped");
        out
    })
}

#[test]
fn a_seed_run_twice_gives_a_byte_identical_trace() {
    on_postgres(async |tier| {
        for seed in 0..3 {
            let (_, _, a) = run_seed(tier, seed, None).await;
            let (_, _, b) = run_seed(tier, seed, None).await;
            let (a, b) = (a.expect("passes"), b.expect("passes"));
            assert!(a.ticks > 0, "seed {seed} never reaps");
            assert_eq!(a.trace.lines(), b.trace.lines(), "seed {seed}");
        }
    });
}

#[test]
fn the_reference_survives_a_bounded_random_search_with_crashes_and_clock_jumps() {
    on_postgres(async |tier| {
        let run = explore_seeds(&RowsExplorer::on(tier), 100..112, None, 200, 2, &|| {}).await;
        let failures: String = run
            .failures
            .iter()
            .map(|f| RowsExplorer::on(tier).describe(f, None, None))
            .collect();
        assert!(run.failures.is_empty(), "{failures}");
        assert_eq!(run.passed, 12);
        assert!(run.tally.crashes > 0, "no tick crashed in 12 seeds");
    });
}

/// Mutants random search finds within a few seeds, one or two of each family: the streamed
/// events' clock, the expiring stores, the boundary, the snapshots, the rows kept on purpose,
/// the cascade and the tick (with generator version 2).
const REPRESENTATIVE: [RowsMutant; 9] = [
    RowsMutant::WritingEventsStamped,
    RowsMutant::StreamedSweptByAge,
    RowsMutant::ZeroExpiryMeansNever,
    RowsMutant::FiringsKeptADay,
    RowsMutant::CascadeMissesPrompts,
    RowsMutant::HeldRequestSwept,
    RowsMutant::ExpiryBoundaryStrict,
    RowsMutant::RenewalOnlyExtends,
    RowsMutant::TickSkipsBreakerSightings,
];

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn random_search_finds_a_representative_set_of_mutants_within_eight_seeds() {
    on_postgres(async |tier| {
        for m in REPRESENTATIVE {
            let lines = hunt(&RowsExplorer::on(tier), &seeds(8, 1), Some(m), 1).await;
            assert!(
                lines[0].median().is_some(),
                "{}",
                hunt_report(&RowsExplorer::on(tier), &lines, 8)
            );
        }
    });
}

/// The whole catalogue takes about 120 seeds (17 to 25 s in a debug build on a loaded machine): run it with
/// `cargo test --test integration rows_exploration:: -- --ignored`, or `tidemark explore --profile rows --hunt`.
#[test]
#[ignore = "about 20 s; the representative set above runs on every build"]
fn random_search_finds_every_rows_mutant_within_sixty_seeds() {
    on_postgres(async |tier| {
        let lines = hunt(&RowsExplorer::on(tier), &seeds(60, 3), None, 1).await;
        assert_eq!(lines.len(), RowsMutant::ALL.len());
        assert!(
            lines.iter().all(|l| l.median().is_some()),
            "{}",
            hunt_report(&RowsExplorer::on(tier), &lines, 60)
        );
    });
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_shrunk_failure_keeps_only_the_operations_that_matter() {
    on_postgres(async |tier| {
        let run = explore_seeds(
            &RowsExplorer::on(tier),
            17..18,
            Some(RowsMutant::NewestByTimestamp),
            2000,
            1,
            &|| {},
        )
        .await;
        let f = run
            .failures
            .first()
            .expect("seed 17 finds newest-by-timestamp");
        assert!(matches!(f.error, Failed::Diverged(_)));
        assert!(
            f.workload.1.len() <= 8,
            "{}",
            RowsExplorer::on(tier).describe(f, Some(RowsMutant::NewestByTimestamp), None)
        );
        assert!(f.original_len > f.workload.1.len());
    });
}

/// Three sightings expire; the tick, in batches of one, dies after two batches that removed a
/// row (the other sweeps' empty batches do not count), so it removed two, and the restarted
/// tick takes the third. A tick that skips the sightings' sweep is caught at the crash: it
/// removes nothing, so it never dies.
#[test]
fn a_crashed_tick_and_its_restart_are_checked_against_the_batches_and_the_model() {
    use tidemark_conformance::profiles::rows::explore::ops::ExploreOp;
    use tidemark_conformance::profiles::rows::explore::run::run_ops;
    use tidemark_conformance::profiles::rows::script::Action;
    use tidemark_reference::rows::ExpiringStore;
    let mut ops: Vec<ExploreOp> = ["a", "b", "c"]
        .into_iter()
        .map(|id| {
            ExploreOp::Step(Action::Keep {
                store: ExpiringStore::BreakerSightings,
                id: id.into(),
                for_ms: 3_600_000,
            })
        })
        .collect();
    ops.push(ExploreOp::Step(Action::Advance(3_600_000)));
    ops.push(ExploreOp::CrashedReap { after: 2 });
    on_postgres(async |tier| {
        let ok = run_ops(tier, 1, &ops, None)
            .await
            .expect("the reference passes");
        // `removed` counts what completed ticks reported: the restart's one row.
        assert_eq!((ok.crashes, ok.ticks, ok.removed), (1, 2, 1));
        let Err(RunError::Diverged(d)) =
            run_ops(tier, 1, &ops, Some(RowsMutant::TickSkipsBreakerSightings)).await
        else {
            panic!("the mutant passes a crash and restart")
        };
        // The mutant's tick removes nothing, so it never dies: caught at the crash itself.
        assert_eq!(d.step, 4, "{}", d.line());
        assert!(
            d.expected.contains("database_unavailable") && d.actual.contains("reaped 0"),
            "{}",
            d.line()
        );
    });
}

/// A backend with no schema to read is checked by counts, transcripts and snapshot listings:
/// the same seeds pass at that detail, and it still finds a mutant that leaves a row behind.
#[test]
fn read_by_counts_alone_the_reference_still_passes_and_a_leftover_prompt_is_found() {
    use tidemark_conformance::profiles::rows::explore::ops::{generate, DEFAULT_STEPS};
    use tidemark_conformance::profiles::rows::explore::run::run_ops_at;
    use tidemark_conformance::profiles::rows::model::state::Detail;
    on_postgres(async |tier| {
        for seed in 0..3 {
            let (batch, ops) = generate(seed, DEFAULT_STEPS);
            let run = run_ops_at(tier, Detail::Counts, batch, &ops, None).await;
            assert!(run.is_ok(), "seed {seed}: {:?}", run.err());
        }
        let (batch, ops) = generate(0, DEFAULT_STEPS);
        let run = run_ops_at(
            tier,
            Detail::Counts,
            batch,
            &ops,
            Some(RowsMutant::CascadeMissesPrompts),
        )
        .await;
        let Err(RunError::Diverged(d)) = run else {
            panic!("counts miss the prompts a deleted session left behind")
        };
        assert!(d.expected.contains("session_prompts"), "{}", d.line());
    });
}

/// The in-memory backend explores without PostgreSQL: the reference passes, every mutant is
/// found, and a seed gives the trace PostgreSQL gives when both are read as counts.
#[test]
fn the_memory_tier_passes_the_reference_finds_every_mutant_and_matches_postgres() {
    use tidemark_conformance::profiles::rows::explore::run_seed_at;
    use tidemark_conformance::profiles::rows::model::state::Detail;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let memory = RowsExplorer::on(Tier::Memory);
        let run = explore_seeds(&memory, 0..40, None, 0, 1, &|| {}).await;
        assert_eq!((run.passed, run.failures.len()), (40, 0));
        let lines = hunt(&memory, &seeds(80, 1), None, 1).await;
        assert!(
            lines.iter().all(|l| l.median().is_some()),
            "{}",
            hunt_report(&memory, &lines, 80)
        );
    });
    on_postgres(async |pg| {
        for seed in 0..2 {
            let (_, _, m) = run_seed_at(Tier::Memory, Detail::Counts, seed, None).await;
            let (_, _, p) = run_seed_at(pg, Detail::Counts, seed, None).await;
            assert_eq!(
                m.expect("memory passes").trace.lines(),
                p.expect("postgres passes").trace.lines(),
                "seed {seed}"
            );
        }
    });
}

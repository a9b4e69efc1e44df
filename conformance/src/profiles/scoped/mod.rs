//! The scoped profile (SPEC part SC): scoped object storage on S3 and PostgreSQL. Everything
//! the profile owns lives in this folder, in the skeleton every profile has (ARCHITECTURE.md,
//! "The profiles"):
//!
//! - [`script`]: its scenario files (`scenarios/scoped/*.tdm`) and their step vocabulary, with
//!   the paths a scenario names after the implementation chose them (`script/bindings.rs`:
//!   `=> overflowed as OUT`); [`runner`]: a parsed scenario run step by step.
//! - [`contract`]: the operations and outcomes a step speaks ([`ScopedOp`], [`ScopedOutcome`]),
//!   and which side performs each when the implementation is another process.
//! - [`reference`]: the reference implementation in process ([`ScopedDriver`]) on the real tier
//!   (the disk S3 store over loopback HTTP through the S3 client, and a real PostgreSQL) or the
//!   simulation tier.
//! - [`process`] and [`gate`]: an implementation behind the process protocol (the steps the
//!   harness keeps in `process/harness.rs`, the reference adapter's side in
//!   `process/service.rs`), and the one-call Rust gate.
//! - [`mutants`]: the mutant run; [`variants`]: the variants' other choices.
//! - [`ledger`]: the deletion ledger read from the implementation's database; [`erasure`]:
//!   erasure obligations and their proofs, read and judged likewise (SPEC SL-4); [`people`]:
//!   a person's requests over HTTP (SPEC part SF); [`sweeps_at_once`]: a write or a second sweep
//!   raced against a paused sweep; [`text_segment`]: the segment a program's text files go
//!   under; [`uuid_ids`]: the UUIDs every short identifier becomes.
//! - [`model`]: the executable model of part SC, and the operations exploration generates.
//! - [`explore`]: `tidemark explore --profile scoped`, and its saved failures
//!   ([`explore::fixture`]).
//! - [`world`]: the reference as a turmoil host, with concurrent guests and faults.
//! - [`bench`]: `tidemark bench`'s figures.
//!
//! This module is the command line's entry point to them: one PostgreSQL for a run (each
//! scenario gets its own database and its own S3 server, so its faults stay its own) and the
//! suite.

pub mod bench;
pub mod contract;
pub mod erasure;
pub mod explore;
pub mod gate;
pub mod ledger;
pub mod model;
pub mod mutants;
pub mod people;
pub mod process;
pub mod reference;
pub mod runner;
pub mod script;
pub mod sweeps_at_once;
pub mod text_segment;
pub mod uuid_ids;
pub mod variants;
pub mod world;

pub use contract::{ScopedOp, ScopedOutcome, Turn};
pub use reference::ScopedDriver;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tidemark_reference::scoped::ScopedMutant;
use tidemark_sim::real_tier::PgProvider;

/// `scenarios/scoped` under the repository root.
pub fn scenarios_dir() -> PathBuf {
    crate::spec::repo_root().join("scenarios/scoped")
}

/// One PostgreSQL for a run, where it came from, and how long it took to answer.
pub async fn postgres() -> Result<(Arc<PgProvider>, String, Duration), String> {
    let t = Instant::now();
    let pg = PgProvider::from_environment()
        .await
        .map_err(|e| e.to_string())?;
    let source = pg.kind().to_string();
    Ok((Arc::new(pg), source, t.elapsed()))
}

/// The scoped scenarios against the reference in process (or one of its mutants), each on its
/// own S3 server and database, up to `jobs` at once: the same [`CaseReport`]s as through
/// `--impl`, so the table, `--format json` and `--junit` read alike for both paths.
pub async fn check_in_process(
    scripts: &[script::Script],
    jobs: std::num::NonZeroUsize,
    mutant: Option<ScopedMutant>,
    variants: &crate::variants::Declared,
) -> Result<Vec<crate::report::CaseReport>, String> {
    use futures::StreamExt;
    if scripts.is_empty() {
        return Ok(Vec::new());
    }
    let (pg, _, _) = postgres().await?;
    let pg = &pg;
    Ok(futures::stream::iter(scripts)
        .map(|s| async move {
            let mut trace = tidemark_sim::trace::Trace::new();
            // A scenario about another choice of a variant does not apply (SPEC.md's variants).
            if let Some(reason) = s.skip_reason(variants) {
                return self::process::case(s, crate::report::Verdict::Skipped { reason }, &trace);
            }
            let played = s.as_played_by(variants);
            let verdict =
                match play_in_process(pg.clone(), &played, mutant, variants, &mut trace).await {
                    Ok(()) => crate::report::Verdict::Passed,
                    Err(f) => crate::report::Verdict::Failed(f),
                };
            self::process::case(s, verdict, &trace)
        })
        .buffered(jobs.get())
        .collect()
        .await)
}

async fn play_in_process(
    pg: Arc<PgProvider>,
    s: &script::Script,
    mutant: Option<ScopedMutant>,
    variants: &crate::variants::Declared,
    trace: &mut tidemark_sim::trace::Trace,
) -> Result<(), crate::play::Failure> {
    use self::process::setup_failure;
    use tidemark_sim::real_tier::RealTier;
    let name = s
        .file
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tier = RealTier::with_postgres(pg, s.fault_seed())
        .await
        .map_err(|e| setup_failure("a running S3 server", e))?;
    let mut driver = ScopedDriver::start(Arc::new(tier), &name, mutant, variants, &s.knobs)
        .await
        .map_err(|e| setup_failure("a running store", e))?;
    let result = steps_in_process(&mut driver, s, trace).await;
    let cleanup = driver.finish().await;
    result?;
    cleanup.map_err(|e| setup_failure("the scenario's database dropped", e))
}

async fn steps_in_process(
    driver: &mut ScopedDriver,
    s: &script::Script,
    trace: &mut tidemark_sim::trace::Trace,
) -> Result<(), crate::play::Failure> {
    use self::process::{expect_text, outcome_text, rel};
    let mut now = tidemark_sim::clock::EPOCH;
    let mut bindings = script::bindings::Bindings::default();
    for step in &s.steps {
        let step = &bindings.resolve(step);
        let op = match &step.action {
            script::Action::Advance(ms) => {
                now = now.plus_ms(*ms);
                trace.record(rel(now), format!("advance {ms}ms"));
                continue;
            }
            script::Action::Op(op) => op,
        };
        let fail = |actual: String| crate::play::Failure {
            line: step.line,
            step: step.text.clone(),
            expected: expect_text(&step.expect),
            actual,
        };
        let got = driver
            .call(now, op)
            .await
            .map_err(|e| fail(format!("harness error: {e}")))?;
        trace.record(rel(now), format!("{} -> {}", step.text, outcome_text(&got)));
        if !step.expect.matches(&got) {
            return Err(fail(outcome_text(&got)));
        }
        bindings.observe(step, &got);
    }
    Ok(())
}

/// The scoped profile (SPEC part SC) behind the profile interface.
pub struct ScopedProfile;

#[async_trait::async_trait(?Send)]
impl super::Profile for ScopedProfile {
    fn name(&self) -> &'static str {
        "scoped"
    }

    fn vocabulary(&self) -> &'static crate::scenario::header::HeaderVocabulary {
        &script::VOCABULARY
    }

    fn load_errors(
        &self,
        scenarios: &Path,
        spec: &Path,
    ) -> Vec<crate::scenario::ScenarioFileError> {
        match super::spec_rules(spec) {
            Err(e) => vec![e],
            Ok(rules) => script::load_dir_with(scenarios, rules.id_set())
                .err()
                .map(|e| e.0)
                .unwrap_or_default(),
        }
    }

    async fn run(
        &self,
        request: &super::RunRequest<'_>,
        program: Option<&crate::process::ProcessFactory>,
    ) -> Result<Vec<crate::report::CaseReport>, String> {
        // Every profile reads the whole suite, taking the files whose header names it.
        let scripts = process::load(request.scenarios, request.only, request.spec)?;
        if scripts.is_empty() {
            return Ok(Vec::new());
        }
        match program {
            Some(factory) => process::check(factory, &scripts, request.jobs, None).await,
            None => check_in_process(&scripts, request.jobs, None, request.variants).await,
        }
    }

    async fn mutants(
        &self,
        request: &super::MutantsRequest<'_>,
    ) -> Result<super::MutantRows, String> {
        let results = mutants::run(request.scenarios, request.only).await?;
        Ok(super::MutantRows {
            rows: mutants::mutant_table(&results),
            killed: results.iter().filter(|r| r.killed_by.is_some()).count(),
            survived: results.iter().filter(|r| r.killed_by.is_none()).count(),
        })
    }

    fn explore(&self, request: &super::ExploreRequest) -> Result<bool, String> {
        if request.implementation.is_some() {
            return Err(
                "explore --profile scoped runs the reference in process on the real tier: no --impl yet"
                    .into(),
            );
        }
        explore::command(request)
    }

    fn owns_fixture(&self, path: &Path) -> bool {
        explore::fixture::is_scoped(path)
    }

    fn replay(
        &self,
        fixture: Option<&Path>,
        seed: Option<u64>,
        mutant: Option<&str>,
        html: Option<&Path>,
    ) -> Result<crate::explore::cli::ReplayOutcome, String> {
        match (fixture, seed, mutant) {
            (Some(f), None, None) => explore::replay_fixture(f, html),
            _ => Err(
                "a scoped replay takes a saved failure's file, and no --seed or --mutant".into(),
            ),
        }
    }

    fn world(&self, request: &super::WorldRequest) -> Result<bool, String> {
        world::WORLD.command(request)
    }

    fn bench(&self, request: &super::BenchRequest) -> Result<String, String> {
        bench::scoped(request.scoped_seeds, request.jobs)
    }

    fn check_claims(&self, claims: &crate::protocol::InitOk) -> Result<(), String> {
        ledger::LedgerQueries::declared(claims)?;
        erasure::ErasureQueries::declared(claims)?;
        text_segment::declared(claims)?;
        people::declared(claims).map(|_| ())
    }
}

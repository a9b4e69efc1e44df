//! The rows profile (SPEC part SR): database rows an agent service keeps and the reaper that
//! removes the rest, on PostgreSQL or in memory. Everything the profile owns lives in this folder:
//!
//! - [`script`]: its scenario files (`scenarios/rows/*.tdm`), read with the shared header and
//!   lexer, in its own step vocabulary (`scenarios/rows/README.md`); `script/grammar.rs` reads
//!   one step line's action and expectation.
//! - [`contract`]: the operations and outcomes as data, and the endpoint a scenario is played
//!   against; [`reference`](mod@reference): the reference in process behind it; [`runner`] plays each scenario
//!   through it on its own fresh database or in-memory store (`--tier`), the clock handed in
//!   with every step.
//! - [`process`]: the same scenarios against a program through the process protocol, the
//!   database's URL handed over in `init`; [`queries`]: the read-only SQL the harness counts
//!   what remains with, declared by the program or the reference's schema by default.
//! - [`model`]: the executable model of part SR, in memory, which predicts every scenario's
//!   outcomes, and is exploration's oracle and the world's; `model/state.rs`: a deployment's
//!   whole state as lines, the form the model's and an implementation's are compared in.
//! - [`explore`] (`ops.rs` the generator, `run.rs` one sequence beside the model,
//!   `observe.rs` the reference's state read, `fixture.rs` the saved failures):
//!   `tidemark explore --profile rows`, its saved failures and their replay.
//! - [`mutants`]: the mutant run; [`variants`]: the variants; [`bench`](mod@bench) (with `scale.rs`): the
//!   reap at scale.
//! - [`world`]: the turmoil world: the reference in memory as a server, writers and a reaper
//!   on a simulated clock, faults from the seed, safety after every tick and liveness after
//!   the heal.
//!
//! This module is the command line's entry point: one PostgreSQL for a run (or none in
//! memory), the suite, and the profile interface over the parts above.

pub mod bench;
pub mod contract;
pub mod explore;
pub mod model;
pub mod mutants;
pub mod process;
pub mod queries;
pub mod reference;
pub mod runner;
pub mod script;
pub mod variants;
pub mod world;

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::path::Path;

use futures::StreamExt;
use runner::Tier;
use tidemark_reference::rows::RowsMutant;
use tidemark_sim::real_tier::PgProvider;
use tidemark_sim::trace::Trace;

use crate::report::{CaseReport, Verdict};
use script::Script;

/// The rows scenarios under `dir` whose test names are in `only` (all when it is empty),
/// citations checked against `spec`. A name in `only` that names none is an error.
pub fn load(dir: &Path, only: &[String], spec: &Path) -> Result<Vec<Script>, String> {
    let rules = crate::spec::RuleIndex::load(spec)
        .map_err(|e| format!("{}: cannot read SPEC.md: {e}", spec.display()))?;
    load_with(dir, only, rules.id_set())
}

/// [`load`] with the rule ids already read.
pub fn load_with(
    dir: &Path,
    only: &[String],
    rules: &BTreeSet<String>,
) -> Result<Vec<Script>, String> {
    let scripts = script::load_dir_with(dir, rules).map_err(|e| e.to_string())?;
    for name in only {
        if !scripts.iter().any(|s| &s.test_name() == name) {
            return Err(format!(
                "no scenario is named {name:?}; rows test names look like rows::<file stem>"
            ));
        }
    }
    Ok(scripts
        .into_iter()
        .filter(|s| only.is_empty() || only.contains(&s.test_name()))
        .collect())
}

/// One PostgreSQL for a run.
pub async fn postgres() -> Result<PgProvider, String> {
    PgProvider::from_environment()
        .await
        .map_err(|e| e.to_string())
}

/// One scenario as a report case.
pub fn case(script: &Script, verdict: Verdict, trace: &Trace) -> CaseReport {
    let failed = matches!(verdict, Verdict::Failed(_));
    CaseReport {
        test_name: script.test_name(),
        name: script.name.clone(),
        profile: "rows".into(),
        file: crate::report::display_path(&script.file),
        rules: script.rules.clone(),
        verdict,
        trace_tail: if failed {
            trace.tail(crate::report::TRACE_KEPT_LINES).to_vec()
        } else {
            vec![]
        },
    }
}

/// The scenarios against the reference in process (or one of its mutants), each on its own
/// fresh store of `tier`, up to `jobs` at once.
pub async fn check_in_process(
    tier: Tier<'_>,
    scripts: &[Script],
    jobs: NonZeroUsize,
    mutant: Option<RowsMutant>,
    variants: &crate::variants::Declared,
) -> Vec<CaseReport> {
    futures::stream::iter(scripts)
        .map(|s| async move {
            let mut trace = Trace::new();
            // A scenario about another choice of a variant does not apply (SPEC.md's variants).
            if let Some(reason) = s.skip_reason(variants) {
                return case(s, Verdict::Skipped { reason }, &trace);
            }
            let verdict =
                match runner::run_on_taking(tier, s, mutant, variants, &mut trace, &mut Vec::new())
                    .await
                {
                    Ok(()) => Verdict::Passed,
                    Err(f) => Verdict::Failed(f),
                };
            case(s, verdict, &trace)
        })
        .buffered(jobs.get())
        .collect()
        .await
}

/// The rows profile (SPEC part SR) behind the profile interface.
pub struct RowsProfile;

#[async_trait::async_trait(?Send)]
impl super::Profile for RowsProfile {
    fn name(&self) -> &'static str {
        "rows"
    }

    fn vocabulary(&self) -> &'static crate::scenario::header::HeaderVocabulary {
        &script::VOCABULARY
    }

    fn tiers(&self) -> &'static [&'static str] {
        runner::TIERS
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
    ) -> Result<Vec<CaseReport>, String> {
        // Every profile reads the whole suite, taking the files whose header names it.
        let scripts = load(request.scenarios, request.only, request.spec)?;
        if let Some(factory) = program {
            if request.tier == Some("memory") {
                return Err("--tier memory runs the reference in process; a program (--impl) is handed a PostgreSQL database, so leave --tier out".into());
            }
            if scripts.is_empty() {
                return Ok(Vec::new());
            }
            // A program not claiming the profile has its rows scenarios skipped, as any
            // unclaimed profile's are, so a run of every profile through a program still judges
            // the others.
            return process::check(factory, &scripts, request.jobs, None).await;
        }
        if scripts.is_empty() {
            return Ok(Vec::new());
        }
        if request.tier == Some("memory") {
            return Ok(check_in_process(
                Tier::Memory,
                &scripts,
                request.jobs,
                None,
                request.variants,
            )
            .await);
        }
        let pg = postgres().await?;
        Ok(check_in_process(
            Tier::Postgres(&pg),
            &scripts,
            request.jobs,
            None,
            request.variants,
        )
        .await)
    }

    async fn mutants(
        &self,
        request: &super::MutantsRequest<'_>,
    ) -> Result<super::MutantRows, String> {
        if request
            .only
            .is_some_and(|o| RowsMutant::from_id(o).is_none())
        {
            return Ok(super::MutantRows {
                rows: String::new(),
                killed: 0,
                survived: 0,
            });
        }
        let scripts = load(request.scenarios, &[], request.spec)?;
        let jobs = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
        let pg = match request.tier {
            Some("memory") => None,
            _ => Some(postgres().await?),
        };
        let tier = pg.as_ref().map_or(Tier::Memory, Tier::Postgres);
        let results = mutants::run(tier, &scripts, request.only, request.all_killers, jobs).await;
        Ok(super::MutantRows {
            rows: mutants::table(&results),
            killed: results.iter().filter(|r| !r.killed_by.is_empty()).count(),
            survived: results.iter().filter(|r| r.killed_by.is_empty()).count(),
        })
    }

    fn explore(&self, request: &super::ExploreRequest) -> Result<bool, String> {
        if request.implementation.is_some() {
            return Err(
                "explore --profile rows runs the reference in process: no --impl yet (run --impl judges a program on the scenarios)"
                    .into(),
            );
        }
        explore::command(request)
    }

    fn owns_fixture(&self, path: &Path) -> bool {
        explore::fixture::is_rows(path)
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
            _ => Err("a rows replay takes a saved failure's file, and no --seed or --mutant; a seed runs again with tidemark explore --profile rows --first-seed N --seeds 1".into()),
        }
    }

    fn world(&self, request: &super::WorldRequest) -> Result<bool, String> {
        world::WORLD.command(request)
    }

    fn bench(&self, request: &super::BenchRequest) -> Result<String, String> {
        match request.rows {
            0 => Ok(String::new()),
            n => bench::rows(n),
        }
    }

    fn check_claims(&self, claims: &crate::protocol::InitOk) -> Result<(), String> {
        queries::RowsQueries::declared(claims).map(|_| ())
    }
}

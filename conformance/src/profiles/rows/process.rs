//! The rows profile through the process protocol (PROTOCOL.md, "The rows profile"): each
//! `scenarios/rows/*.tdm` scenario against a program started by `tidemark run --impl`.
//!
//! For each scenario the harness makes a fresh PostgreSQL database and hands its URL to the
//! program in `init`. Every operation, the reaper's tick included, is a request carrying the
//! scenario's time; the program answers with the contract's outcomes (`contract.rs`), the ids it
//! makes opaque strings. What remains (`count ...`) is never asked of the program: the harness
//! reads the database itself with the read-only queries the program declared in `init_ok`, else
//! the reference's schema (`queries.rs`). The steps are played by the same runner as in process
//! (`runner::play`), so a scenario means the same thing to both.

use std::num::NonZeroUsize;
use std::path::Path;

use futures::StreamExt;
use tidemark_sim::real_tier::PgProvider;
use tidemark_sim::trace::Trace;

use super::contract::{Observation, RowsEndpoint, RowsOp, RowsOutcome, REAP_BATCHES};
use super::queries::RowsQueries;
use super::runner::{self, setup_failure};
use super::script::{Action, Script};
use crate::play::Failure;
use crate::process::{ProcessFactory, ProcessSession};
use crate::protocol::{Init, INIT_ID, PROTOCOL};
use crate::report::{CaseReport, Verdict};

/// The profile's name in `init` and `init_ok`.
pub const PROFILE: &str = "rows";

/// A program playing one scenario, and the database it was handed.
struct Program {
    session: ProcessSession,
    pool: sqlx::PgPool,
}

#[async_trait::async_trait(?Send)]
impl RowsEndpoint for Program {
    async fn call(&mut self, now_ms: i64, op: &RowsOp) -> Result<RowsOutcome, String> {
        self.session
            .call(now_ms, &op.name(), op)
            .await
            .map_err(|e| e.to_string())
    }

    async fn observe(&mut self, what: &Observation) -> Result<i64, String> {
        // The queries the running program declared, else the reference's schema; the failure
        // says whose they were, since a declared query's error is the program's.
        let declared = self
            .session
            .claims()
            .map(RowsQueries::declared)
            .transpose()
            .map_err(|e| format!("the rows queries declared in init_ok are malformed: {e}"))?
            .flatten();
        let (queries, whose) = match declared {
            Some(declared) => (declared, "the rows queries declared in init_ok"),
            None => (
                RowsQueries::default(),
                "the reference's tidemark_rows schema (declare `rows` in init_ok if your tables are named otherwise)",
            ),
        };
        queries
            .count(&self.pool, what)
            .await
            .map_err(|e| format!("{whose}: {e}"))
    }
}

/// Runs `scripts` against the program (up to `jobs` at once; the report keeps suite order),
/// each in a fresh database of `pg`. A program not claiming the profile has every scenario
/// skipped, as any unclaimed profile's are, and needs no PostgreSQL.
pub async fn check(
    factory: &ProcessFactory,
    scripts: &[Script],
    jobs: NonZeroUsize,
    pg: Option<&PgProvider>,
) -> Result<Vec<CaseReport>, String> {
    if !factory.claims().profiles.iter().any(|p| p == PROFILE) {
        return Ok(scripts
            .iter()
            .map(|s| {
                super::case(
                    s,
                    Verdict::Skipped {
                        reason: format!("the implementation does not claim the {PROFILE} profile"),
                    },
                    &Trace::new(),
                )
            })
            .collect());
    }
    let started;
    let pg = match pg {
        Some(pg) => pg,
        None => {
            started = super::postgres().await?;
            &started
        }
    };
    let declared = factory.claims().declared_variants();
    let declared = &declared;
    Ok(futures::stream::iter(scripts)
        .map(|script| async move {
            let mut trace = Trace::new();
            // A scenario about another choice of a variant does not apply; the others are
            // played with the steps the program's declared variants keep, when it claims the
            // capabilities those steps need.
            if let Some(reason) = script.skip_reason(declared) {
                return super::case(script, Verdict::Skipped { reason }, &trace);
            }
            let played = script.as_played_by(declared);
            let verdict = match missing_capability(&factory.claims().capabilities, &played) {
                Some(reason) => Verdict::Skipped { reason },
                None => match play(factory, pg, &played, &mut trace).await {
                    Ok(()) => Verdict::Passed,
                    Err(f) => Verdict::Failed(f),
                },
            };
            super::case(script, verdict, &trace)
        })
        .buffered(jobs.get())
        .collect()
        .await)
}

/// The first step of `script` needing a capability not in `capabilities`, as a skip reason: a
/// reap with a batch size or a crash needs [`REAP_BATCHES`].
pub fn missing_capability(capabilities: &[String], script: &Script) -> Option<String> {
    if capabilities.iter().any(|c| c == REAP_BATCHES) {
        return None;
    }
    script
        .steps
        .iter()
        .find(|s| matches!(s.action, Action::ReapBatched { .. }))
        .map(|s| {
            format!(
                "line {}: `{}` needs the capability {REAP_BATCHES}, which the implementation does not claim",
                s.line, s.text
            )
        })
}

/// Plays `script` against a fresh process of `factory` on a fresh database of `pg`.
pub async fn play(
    factory: &ProcessFactory,
    pg: &PgProvider,
    script: &Script,
    trace: &mut Trace,
) -> Result<(), Failure> {
    let scratch = tidemark_sim::owner::tempdir("tidemark-")
        .map_err(|e| setup_failure("a temporary directory", e.to_string()))?;
    let (root, workdir) = (scratch.path().join("root"), scratch.path().join("workdir"));
    for d in [&root, &workdir] {
        std::fs::create_dir(d).map_err(|e| setup_failure("a scratch directory", e.to_string()))?;
    }
    let db = pg
        .fresh_database(&format!("rows_{}", runner::stem(script)))
        .await
        .map_err(|e| setup_failure("a fresh PostgreSQL database", e.to_string()))?;
    let init = init(&root, &workdir, &db.url);
    let result = match ProcessSession::start(factory, &workdir, init).await {
        Ok(session) => {
            trace.record(0, "start -> ok");
            let mut program = Program {
                session,
                pool: db.pool.clone(),
            };
            let played = runner::play(&mut program, script, trace, &mut Vec::new()).await;
            program.session.stop().await;
            played
        }
        Err(e) => Err(Failure {
            line: 0,
            step: "(start)".into(),
            expected: "the implementation to start".into(),
            actual: e.to_string(),
        }),
    };
    // Leave a DATABASE_URL server as it was found.
    let dropped = pg.drop_database(db).await;
    result?;
    dropped.map_err(|e| setup_failure("the scenario's database dropped", e.to_string()))
}

/// The init a rows scenario's program gets: the profile and its database. The profile has no
/// knobs.
fn init(root: &Path, workdir: &Path, postgres_url: &str) -> Init {
    Init {
        id: INIT_ID,
        protocol: PROTOCOL.to_string(),
        profile: Some(PROFILE.to_string()),
        root: root.to_string_lossy().into_owned(),
        workdir: workdir.to_string_lossy().into_owned(),
        knobs: Default::default(),
        s3: None,
        postgres_url: Some(postgres_url.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_with_a_batched_reap_is_skipped_for_a_program_not_claiming_reap_batches() {
        let root = crate::spec::repo_root();
        let rules = crate::spec::RuleIndex::load(&root.join("SPEC.md")).unwrap();
        let scripts =
            super::super::script::load_dir_with(&root.join("scenarios/rows"), rules.id_set())
                .unwrap();
        let crash = scripts
            .iter()
            .find(|s| {
                s.steps
                    .iter()
                    .any(|st| matches!(st.action, Action::ReapBatched { .. }))
            })
            .expect("a rows scenario stages a batched reap");
        let why = missing_capability(&[], crash).expect("skipped without the capability");
        assert!(
            why.contains("needs the capability reap_batches") && why.starts_with("line "),
            "{why}"
        );
        assert_eq!(missing_capability(&[REAP_BATCHES.to_string()], crash), None);
        // A scenario with plain reaps only runs against any program of the profile.
        let plain = scripts
            .iter()
            .find(|s| {
                !s.steps
                    .iter()
                    .any(|st| matches!(st.action, Action::ReapBatched { .. }))
            })
            .expect("a rows scenario without a batched reap");
        assert_eq!(missing_capability(&[], plain), None);
    }
}

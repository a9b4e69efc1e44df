//! The rows profile through the process protocol: the reference adapter, with each mutant, fails
//! the scenarios naming it at the same lines as in process (that it passes them all is held by
//! the run `process_protocol_schema` records), the Python example passes them in tables of its own
//! naming, and the read-only queries a program declares are run by the harness itself, so one
//! that writes or has the wrong shape fails with the reason. PostgreSQL comes from
//! `DATABASE_URL` or an ephemeral cluster, as for the real-tier tests.

use std::num::NonZeroUsize;

use super::support::{block_on, verdicts};
use tidemark_conformance::process::{AdapterCommand, ProcessFactory, ProcessOptions};
use tidemark_conformance::profiles::rows::contract::Observation;
use tidemark_conformance::profiles::rows::queries::RowsQueries;
use tidemark_conformance::profiles::rows::script::Script;
use tidemark_conformance::profiles::rows::{process, runner};
use tidemark_conformance::report::{CaseReport, Verdict};
use tidemark_conformance::spec::repo_root;
use tidemark_reference::rows::RowsMutant;
use tidemark_sim::real_tier::PgProvider;
use tidemark_sim::trace::Trace;

const ADAPTER: &str = env!("CARGO_BIN_EXE_tidemark-reference-adapter");
const TIDEMARK: &str = env!("CARGO_BIN_EXE_tidemark");
/// The Python example's interpreter: the venv `.ci/run` sets up for the Python examples.
const PYTHON: &str = "target/py-scoped/bin/python";

fn scripts() -> Vec<Script> {
    tidemark_conformance::profiles::rows::load(
        &repo_root().join("scenarios/rows"),
        &[],
        &repo_root().join("SPEC.md"),
    )
    .expect("the rows suite loads")
}

async fn through(command: &str, pg: &PgProvider, scripts: &[Script]) -> Vec<CaseReport> {
    let command = AdapterCommand::parse(command, &repo_root()).unwrap();
    let factory = ProcessFactory::probe(command, ProcessOptions::default())
        .await
        .expect("the program completes init");
    process::check(&factory, scripts, NonZeroUsize::MIN, Some(pg))
        .await
        .expect("the rows suite runs")
}

/// A variant declared in `init_ok` is followed through the protocol: the adapter taking each
/// other choice, and declaring it, passes the scenarios about it (played with the steps its
/// choice keeps; with the default's, they would fail).
#[test]
fn a_declared_variant_is_followed_through_the_protocol() {
    let about: Vec<Script> = scripts()
        .into_iter()
        .filter(|s| !s.guards.steps.is_empty())
        .collect();
    assert!(about.len() >= 2, "the scenarios about the rows variants");
    block_on(async {
        let pg = PgProvider::from_environment().await.expect("PostgreSQL");
        for variant in [
            "kind_check_order=target_first",
            "unknown_model_drops=refused",
        ] {
            let cases = through(&format!("{ADAPTER} --variant {variant}"), &pg, &about).await;
            let not_passed: Vec<_> = verdicts(&cases)
                .into_iter()
                .filter(|(_, v)| v != "passed")
                .collect();
            assert!(not_passed.is_empty(), "{variant}: {not_passed:#?}");
        }
    });
}

/// Every rows mutant, switched on in the adapter, fails each scenario naming it at the line it
/// fails in process: the protocol path loses none of what the scenarios check.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn every_rows_mutant_behind_the_protocol_fails_its_killers_at_the_same_lines_as_in_process() {
    let scripts = scripts();
    block_on(async {
        let pg = PgProvider::from_environment().await.expect("PostgreSQL");
        for m in RowsMutant::ALL {
            let killers: Vec<Script> = runner::killers(&scripts, m).into_iter().cloned().collect();
            assert!(!killers.is_empty(), "some scenario names {}", m.id());
            let mut in_process = Vec::new();
            for s in &killers {
                let line = runner::run(&pg, s, Some(m), &mut Trace::new())
                    .await
                    .err()
                    .map(|f| f.line);
                in_process.push((s.test_name(), line));
            }
            assert!(
                in_process.iter().any(|(_, line)| line.is_some()),
                "{} is killed in process: {in_process:?}",
                m.id()
            );
            let cases = through(&format!("{ADAPTER} --mutant {}", m.id()), &pg, &killers).await;
            let through: Vec<(String, Option<usize>)> = cases
                .iter()
                .map(|c| {
                    let line = match &c.verdict {
                        Verdict::Failed(f) => Some(f.line),
                        _ => None,
                    };
                    (c.test_name.clone(), line)
                })
                .collect();
            assert_eq!(through, in_process, "{}", m.id());
        }
    });
}

/// A program that does not claim the profile has every rows scenario skipped with the reason,
/// and needs no database for it.
#[test]
fn a_program_not_claiming_rows_has_its_rows_scenarios_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("scratch-only.py");
    std::fs::write(
        &program,
        r#"import json, sys
for line in sys.stdin:
    m = json.loads(line)
    print(json.dumps({"type": "init_ok", "in_reply_to": m["id"], "protocol": "tidemark/1", "profiles": ["scratchpad"]}), flush=True)
"#,
    )
    .unwrap();
    let out = std::process::Command::new(TIDEMARK)
        .args(["run", "--profile", "rows", "--impl"])
        .arg(format!("python3 {}", program.display()))
        .current_dir(repo_root())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("skipped: the implementation does not claim the rows profile")
            && !stdout.contains("PASS")
            && !stdout.contains("FAIL"),
        "{stdout}"
    );
}

/// The declared queries are what the harness reads, in a read-only transaction, their shape
/// checked before a row is read: a query that would delete leaves the rows in place, and a
/// column or a parameter of the wrong type, a table with no query and a query giving two rows
/// are each named.
#[test]
fn declared_rows_queries_are_read_only_and_their_shape_is_checked_first() {
    block_on(async {
        let pg = PgProvider::from_environment().await.expect("PostgreSQL");
        let db = pg.fresh_database("rows-queries").await.expect("a database");
        sqlx::raw_sql(
            "CREATE TABLE convo (name text PRIMARY KEY);
             CREATE TABLE convo_event (seq bigserial, convo text, answer_seq bigint);
             INSERT INTO convo VALUES ('c1'), ('c2');
             INSERT INTO convo_event (convo, answer_seq) VALUES ('c1', 7), ('c1', 7), ('c1', NULL), ('c2', 8);",
        )
        .execute(&db.pool)
        .await
        .expect("the program's own tables");
        let own = RowsQueries {
            tables: [(
                "sessions".to_string(),
                "SELECT count(*) AS n FROM convo".to_string(),
            )]
            .into_iter()
            .collect(),
            streamed_events_of:
                "SELECT count(*) AS n FROM convo_event WHERE 'ans-' || answer_seq::text = $1".into(),
            events_in: "SELECT count(*) AS n FROM convo_event WHERE convo = $1".into(),
        };
        let count = |q: RowsQueries, what: Observation| {
            let pool = db.pool.clone();
            async move { q.count(&pool, &what).await }
        };
        let table = |t: &str| Observation::Table { table: t.into() };
        assert_eq!(count(own.clone(), table("sessions")).await, Ok(2));
        assert_eq!(
            count(
                own.clone(),
                Observation::StreamedOf {
                    reply: "ans-7".into()
                }
            )
            .await,
            Ok(2)
        );
        assert_eq!(
            count(own.clone(), Observation::StreamedOf { reply: "".into() }).await,
            Ok(0)
        );
        assert_eq!(
            count(
                own.clone(),
                Observation::EventsIn {
                    session: "c1".into()
                }
            )
            .await,
            Ok(3)
        );

        let e = count(own.clone(), table("events")).await.unwrap_err();
        assert!(e.contains("no query counts the table \"events\""), "{e}");

        let deleting = RowsQueries {
            tables: [(
                "sessions".to_string(),
                "WITH gone AS (DELETE FROM convo RETURNING name) SELECT count(*) AS n FROM gone"
                    .to_string(),
            )]
            .into_iter()
            .collect(),
            ..own.clone()
        };
        let e = count(deleting, table("sessions")).await.unwrap_err();
        assert!(e.contains("read-only transaction"), "{e}");
        assert_eq!(
            count(own.clone(), table("sessions")).await,
            Ok(2),
            "nothing was deleted"
        );

        let int4 = RowsQueries {
            events_in: "SELECT count(*)::int AS n FROM convo_event WHERE convo = $1".into(),
            ..own.clone()
        };
        let e = count(
            int4,
            Observation::EventsIn {
                session: "c1".into(),
            },
        )
        .await
        .unwrap_err();
        assert!(e.contains("gives `n` as INT4; it must be bigint"), "{e}");

        let bigint_parameter = RowsQueries {
            streamed_events_of: "SELECT count(*) AS n FROM convo_event WHERE answer_seq = $1"
                .into(),
            ..own.clone()
        };
        let e = count(
            bigint_parameter,
            Observation::StreamedOf { reply: "7".into() },
        )
        .await
        .unwrap_err();
        assert!(e.contains("reads $1 as INT8; it must be text"), "{e}");

        let two_rows = RowsQueries {
            events_in: "SELECT count(*) AS n FROM convo_event WHERE convo = $1 GROUP BY seq".into(),
            ..own
        };
        let e = count(
            two_rows,
            Observation::EventsIn {
                session: "c1".into(),
            },
        )
        .await
        .unwrap_err();
        assert!(e.contains("gave 3 rows; it must give exactly one"), "{e}");
        pg.drop_database(db).await.expect("dropped");
    });
}

/// The counts come from the queries the program declares, through the process path: the Python
/// example with its `held_requests` query made to lie fails at the first step counting them,
/// naming the step, where the true query passes.
#[test]
fn a_declared_rows_query_that_lies_fails_the_step_that_counts_with_it() {
    let Some(python) = python_venv() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let liar = dir.path().join("lying-rows.py");
    std::fs::write(
        &liar,
        format!(
            r#"import runpy, sys
sys.path.insert(0, {example:?})
import schema
schema.QUERIES["tables"]["held_requests"] = "SELECT count(*) - count(*) AS n FROM parked_request"
runpy.run_path({example:?} + "/rows.py", run_name="__main__")
"#,
            example = repo_root()
                .join("examples/python-rows")
                .display()
                .to_string()
        ),
    )
    .unwrap();
    let scripts: Vec<Script> = scripts()
        .into_iter()
        .filter(|s| s.test_name() == "rows::a_held_request_outlives_its_conversations_old_events")
        .collect();
    assert_eq!(
        scripts.len(),
        1,
        "the scenario counting held requests exists"
    );
    block_on(async {
        let pg = PgProvider::from_environment().await.expect("PostgreSQL");
        let honest = through(
            &format!("{python} examples/python-rows/rows.py"),
            &pg,
            &scripts,
        )
        .await;
        assert_eq!(verdicts(&honest)[0].1, "passed");
        let lying = through(&format!("{python} {}", liar.display()), &pg, &scripts).await;
        match &lying[0].verdict {
            Verdict::Failed(f) => assert!(
                f.line == 13 && f.step.starts_with("count held_requests") && f.actual == "0",
                "{f:?}"
            ),
            other => panic!("the lying query must fail the count: {other:?}"),
        }
    });
}

/// The Python examples' interpreter, when its venv exists; without it the caller's test says so
/// and passes, except under CI, where it must run.
fn python_venv() -> Option<String> {
    if repo_root().join(PYTHON).exists() {
        return Some(PYTHON.to_string());
    }
    let why = format!(
        "no {PYTHON} (python3 -m venv target/py-scoped && target/py-scoped/bin/pip install -r examples/python-scoped/requirements.txt)"
    );
    if std::env::var_os("CI").is_some() {
        panic!("CI must run the Python rows example, but: {why}");
    }
    eprintln!("skipped: {why}");
    None
}

/// The Python example (`examples/python-rows`), written from SPEC.md part SR and PROTOCOL.md in
/// tables of its own naming, passes every rows scenario through the protocol, the harness
/// counting its rows with the queries it declares. It needs the Python venv `.ci/run` sets up
/// (psycopg 3); without it the test says so and passes, except under CI, where it must run.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_python_rows_example_passes_every_rows_scenario_through_the_protocol() {
    let Some(python) = python_venv() else {
        return;
    };
    let scripts = scripts();
    let command = format!("{python} examples/python-rows/rows.py");
    block_on(async {
        let pg = PgProvider::from_environment().await.expect("PostgreSQL");
        let cases = through(&command, &pg, &scripts).await;
        assert_eq!(cases.len(), scripts.len());
        let not_passed: Vec<_> = verdicts(&cases)
            .into_iter()
            .filter(|(_, v)| v != "passed")
            .collect();
        assert!(not_passed.is_empty(), "{not_passed:#?}");
    });
}

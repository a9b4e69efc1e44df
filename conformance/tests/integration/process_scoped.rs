//! The scoped profile through the process protocol: the reference adapter, with a mutant, fails
//! the same scenarios as the reference does in process (that it passes them all is held by the
//! run `process_protocol_schema` records), and a program that claims the profile but answers wrongly or misbehaves fails with a message
//! a person can act on. PostgreSQL comes from `DATABASE_URL` or an ephemeral cluster, as for the
//! real-tier tests.

use std::num::NonZeroUsize;
use std::sync::Arc;

use super::support::{block_on, tidemark_in_repo, verdicts};

use tidemark_conformance::process::{AdapterCommand, ProcessFactory, ProcessOptions};
use tidemark_conformance::profiles::scoped::process;
use tidemark_conformance::profiles::scoped::runner;
use tidemark_conformance::profiles::scoped::script::{self, Script};
use tidemark_conformance::report::{CaseReport, Verdict};
use tidemark_conformance::spec::repo_root;
use tidemark_reference::scoped::ScopedMutant;
use tidemark_sim::real_tier::PgProvider;

const ADAPTER: &str = env!("CARGO_BIN_EXE_tidemark-reference-adapter");

fn scripts() -> Vec<Script> {
    script::load_dir(&repo_root().join("scenarios/scoped")).expect("the scoped suite loads")
}

async fn through_the_adapter(
    pg: Arc<PgProvider>,
    scripts: &[Script],
    args: &str,
) -> Vec<CaseReport> {
    let command = AdapterCommand::parse(&format!("{ADAPTER} {args}"), &repo_root()).unwrap();
    let factory = ProcessFactory::probe(command, ProcessOptions::default())
        .await
        .expect("the adapter completes init");
    process::check(&factory, scripts, NonZeroUsize::MIN, Some(pg))
        .await
        .expect("the scoped suite runs")
}

/// A variant declared in `init_ok` is followed through the protocol: the adapter taking another
/// choice, and declaring it, passes the scenarios about it (played with the steps its choice
/// keeps; with the default's, they would fail).
#[test]
fn a_declared_variant_is_followed_through_the_protocol() {
    let all = scripts();
    let by_name = |n: &str| all.iter().find(|s| s.test_name() == n).unwrap().clone();
    block_on(async {
        let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
        for (variant, scenario) in [
            (
                "listing_order=any",
                "scoped::a_listing_is_one_list_in_the_byte_order_of_its_guest_paths",
            ),
            (
                "throttles=reported",
                "scoped::a_throttle_within_the_retries_is_not_seen_and_a_lasting_one_is_storage_unavailable",
            ),
        ] {
            let cases = through_the_adapter(
                pg.clone(),
                &[by_name(scenario)],
                &format!("--variant {variant}"),
            )
            .await;
            assert_eq!(
                verdicts(&cases),
                [(scenario.to_string(), "passed".to_string())],
                "{variant}"
            );
        }
    });
}

/// SC-1.4's text area spelled otherwise (one byte longer than the reference's, so the key-limit
/// scenario's filler must shrink too): declared in `init_ok`, every scenario that spells the text
/// area passes; taken but not declared, some fail, so the scenarios do look at the text area and
/// the harness reads them with the declared spelling.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_text_area_spelled_otherwise_passes_when_declared_and_fails_when_not() {
    let spelled: Vec<Script> = scripts()
        .into_iter()
        .filter(|s| {
            std::fs::read_to_string(&s.file)
                .expect("a scenario reads")
                .contains(".tidemark-text")
        })
        .collect();
    assert!(spelled.len() >= 8, "{} scenarios", spelled.len());
    block_on(async {
        let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
        let declared =
            through_the_adapter(pg.clone(), &spelled, "--text-segment .extracted-text").await;
        let not_passed: Vec<_> = verdicts(&declared)
            .into_iter()
            .filter(|(_, v)| v != "passed")
            .collect();
        assert!(not_passed.is_empty(), "{not_passed:#?}");
        let undeclared =
            through_the_adapter(pg, &spelled, "--text-segment-undeclared .extracted-text").await;
        let failed = undeclared
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Failed(_)))
            .count();
        assert!(failed >= 5, "{:#?}", verdicts(&undeclared));
    });
}

/// The scenarios naming a mutant in `kills:` (as `tidemark mutants` runs them: the in-process
/// write-during-sweep race waits for a rendezvous some mutants' sweeps never reach).
#[test]
fn a_scoped_mutant_behind_the_protocol_fails_its_killers_at_the_same_lines_as_in_process() {
    let mutant = ScopedMutant::from_id("age-only-expiry").expect("the mutant exists");
    let killers: Vec<Script> = scripts()
        .into_iter()
        .filter(|s| s.kills.iter().any(|k| k == mutant.id()))
        .collect();
    assert!(!killers.is_empty(), "some scenario names {}", mutant.id());
    block_on(async {
        let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
        let in_process: Vec<(String, Option<usize>)> =
            runner::run_suite(pg.clone(), &killers, Some(mutant))
                .await
                .into_iter()
                .map(|r| (r.test_name, r.failure.map(|f| f.line)))
                .collect();
        let cases = through_the_adapter(pg, &killers, &format!("--mutant {}", mutant.id())).await;
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
        assert!(
            in_process.iter().all(|(_, line)| line.is_some()),
            "{in_process:?}"
        );
        assert_eq!(through, in_process);
    });
}

/// `tidemark run --impl <fixture> --only <two scoped scenarios>` as a person reads it.
fn table_for(mode: &str, timeout_ms: &str) -> String {
    let command = format!("python3 fixtures/adapters/scoped-misbehaving.py {mode}");
    let ran = tidemark_in_repo(&[
        "run",
        "--impl",
        &command,
        "--timeout-ms",
        timeout_ms,
        "--only",
        "scoped::files_live_under_scope_first_keys",
        "--only",
        "scoped::a_crashed_write_leaves_nothing_readable",
    ]);
    format!(
        "$ tidemark run --impl '{command}' --timeout-ms {timeout_ms} --only scoped::files_live_under_scope_first_keys --only scoped::a_crashed_write_leaves_nothing_readable   # exit {}\n{}\n",
        ran.code, ran.stdout
    )
}

/// A program claiming the scoped profile that answers `ok` to a write fails at that step with
/// expected and actual in the scenario's spelling; one that prints garbage, never answers or
/// exits is reported as the scratchpad path reports it; a scenario needing a capability it does
/// not claim is skipped with the reason.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_program_that_claims_scoped_but_answers_wrongly_fails_with_a_readable_message() {
    let tables: String = [
        ("ok", "10000"),
        ("garbage", "10000"),
        ("silent", "400"),
        ("exits", "10000"),
    ]
    .iter()
    .map(|(mode, timeout_ms)| table_for(mode, timeout_ms))
    .collect();
    assert!(
        tables.contains("expected: written session/notes.md") && tables.contains("actual:   ok"),
        "{tables}"
    );
    assert!(
        tables.contains("needs the capability crash_points"),
        "{tables}"
    );
    assert!(
        tables.contains("no answer to request 1 (create_workspace) within 400 ms"),
        "{tables}"
    );
    insta::assert_snapshot!("scoped_misbehaving_adapters_table", tables);
}

/// `tidemark run <args>` from the repository root: exit code and stderr.
fn tidemark_run(args: &[&str]) -> (i32, String) {
    let ran = tidemark_in_repo(&[&["run"], args].concat());
    (ran.code, ran.stderr)
}

#[test]
fn an_only_name_that_names_no_scoped_scenario_is_an_error_not_an_empty_pass() {
    let (code, stderr) = tidemark_run(&["--impl", ADAPTER, "--only", "scoped::no_such_scenario"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no scenario is named \"scoped::no_such_scenario\""),
        "{stderr}"
    );
}

#[test]
fn an_only_name_of_a_profile_that_profile_leaves_out_is_an_error() {
    let (code, stderr) = tidemark_run(&[
        "--impl",
        ADAPTER,
        "--profile",
        "scratchpad",
        "--only",
        "scoped::files_live_under_scope_first_keys",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("names a scoped scenario, but --profile leaves that profile out"),
        "{stderr}"
    );
}

/// Not a check but a measurement, run on demand:
/// `cargo test -p tidemark-conformance --test integration process_scoped:: -- --ignored --nocapture`.
/// Wall time of the scoped suite in process and through the reference adapter on one
/// PostgreSQL (its start-up excluded), after a warm-up, median of several rounds (wall-clock
/// reads here measure; they decide nothing).
#[test]
#[ignore = "a measurement, not a check; run with --ignored --nocapture"]
fn measure_the_overhead_of_the_scoped_process_path() {
    const ROUNDS: usize = 5;
    let scripts = scripts();
    block_on(async {
        let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
        let mut in_process = Vec::new();
        let mut through = Vec::new();
        for round in 0..=ROUNDS {
            let started = std::time::Instant::now();
            let results = runner::run_suite(pg.clone(), &scripts, None).await;
            let a = started.elapsed();
            assert!(results.iter().all(|r| r.failure.is_none()));
            let started = std::time::Instant::now();
            let cases = through_the_adapter(pg.clone(), &scripts, "").await;
            let b = started.elapsed();
            assert!(cases.iter().all(|c| c.verdict == Verdict::Passed));
            if round > 0 {
                in_process.push(a);
                through.push(b);
            }
        }
        in_process.sort();
        through.sort();
        let (a, b) = (in_process[ROUNDS / 2], through[ROUNDS / 2]);
        println!(
            "{} scoped scenarios: in-process {a:?}, through the reference adapter {b:?}, ratio {:.2}x ({:?} per scenario)",
            scripts.len(),
            b.as_secs_f64() / a.as_secs_f64(),
            b.saturating_sub(a) / scripts.len() as u32
        );
    });
}

/// `tidemark run` of the one scenario that reads pending obligations after a crash, through
/// `fixtures/adapters/ledger-declared.py MODE` wrapped around the reference adapter: its stdout.
fn with_declared_ledger(mode: &str) -> (i32, String) {
    let ran = tidemark_in_repo(&[
        "run",
        "--impl",
        &format!("python3 fixtures/adapters/ledger-declared.py {mode} {ADAPTER}"),
        "--only",
        "scoped::an_obligation_survives_a_crash_between_deleting_and_recording",
    ]);
    (ran.code, ran.stdout)
}

/// The ledger is read with the queries the program declares (its own tables, its own SQL), still
/// by the harness and never on the program's word: a declaration that lies is caught by the
/// same step that passes with a true one, and one that writes, has the wrong columns or fails
/// fails the scenario with the reason.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_declared_ledger_query_is_what_the_harness_reads_and_a_bad_one_fails_with_the_reason() {
    let (code, out) = with_declared_ledger("renamed");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 passed, 0 failed"), "{out}");

    let (code, out) = with_declared_ledger("lies");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(".tdm:14: pending deletions") && out.contains("actual:   []"),
        "{out}"
    );

    for (mode, reason) in [
        ("writes", "cannot execute DELETE in a read-only transaction"),
        ("columns", "has no column `pending`; it must yield prefix text, pending boolean (found: prefix TEXT)"),
        ("fails", "relation \"no_such_ledger\" does not exist"),
    ] {
        let (code, out) = with_declared_ledger(mode);
        assert_eq!(code, 1, "{mode}: {out}");
        assert!(
            out.contains("actual:   the ledger declared in init_ok: ") && out.contains(reason),
            "{mode}: {out}"
        );
    }
}

/// Run in a read-only transaction and rolled back: a declared query that would delete the
/// obligations leaves them in place, and a column of the wrong type is named, not decoded.
#[test]
fn a_declared_ledger_query_cannot_change_the_database_and_its_column_types_are_checked() {
    use tidemark_conformance::profiles::scoped::ledger::LedgerQueries;
    block_on(async {
        let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
        let db = pg
            .fresh_database("ledger-queries")
            .await
            .expect("a database");
        sqlx::raw_sql(
            "CREATE TABLE my_ledger (key_prefix text, finished bigint);
             INSERT INTO my_ledger VALUES ('sessions/a/', NULL), ('sessions/b/', 5), ('sessions/a/', NULL);",
        )
        .execute(&db.pool)
        .await
        .expect("the implementation's own table");
        let own = LedgerQueries {
            obligations: "SELECT key_prefix AS prefix, finished IS NULL AS pending FROM my_ledger"
                .into(),
            records: "SELECT key_prefix AS prefix FROM my_ledger WHERE finished IS NOT NULL".into(),
        };
        assert_eq!(
            own.pending_prefixes(&db.pool).await.unwrap(),
            vec!["sessions/a/".to_string()]
        );
        assert_eq!(
            own.record_prefixes(&db.pool).await.unwrap(),
            vec!["sessions/b/".to_string()]
        );

        let deleting = LedgerQueries {
            obligations: "WITH gone AS (DELETE FROM my_ledger RETURNING key_prefix) SELECT key_prefix AS prefix, true AS pending FROM gone".into(),
            ..own.clone()
        };
        let e = deleting.pending_prefixes(&db.pool).await.unwrap_err();
        assert!(e.contains("read-only transaction"), "{e}");
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM my_ledger")
            .fetch_one(&db.pool)
            .await
            .unwrap();
        assert_eq!(left, 3, "nothing was deleted");

        let typed_wrong = LedgerQueries {
            obligations: "SELECT finished AS prefix, true AS pending FROM my_ledger".into(),
            ..own
        };
        let e = typed_wrong.pending_prefixes(&db.pool).await.unwrap_err();
        assert!(e.contains("gives `prefix` as INT8; it must be text"), "{e}");
        pg.drop_database(db).await.expect("dropped");
    });
}

/// The reference scoped service, with a mutant, as a Rust implementation for the in-process gate.
struct ReferenceWith(Option<ScopedMutant>);

struct ReferenceInstance(tidemark_conformance::profiles::scoped::process::service::ScopedService);

impl tidemark_conformance::profiles::scoped::gate::ScopedImplementation for ReferenceWith {
    fn name(&self) -> String {
        "reference".into()
    }

    fn capabilities(&self) -> Vec<String> {
        vec!["crash_points".into(), "write_during_sweep".into()]
    }

    fn start<'a>(
        &'a self,
        init: &'a tidemark_conformance::protocol::Init,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Box<dyn tidemark_conformance::profiles::scoped::gate::ScopedInstance>, String>,
    > {
        Box::pin(async move {
            let s3 = init.s3.as_ref().ok_or("no S3")?;
            let access =
                tidemark_conformance::profiles::scoped::process::service::S3Access::from(s3);
            let url = init.postgres_url.as_deref().ok_or("no PostgreSQL")?;
            let service =
                tidemark_conformance::profiles::scoped::process::service::ScopedService::open(
                    &access,
                    url,
                    &init.knobs,
                    self.0,
                )
                .await?;
            Ok(Box::new(ReferenceInstance(service))
                as Box<
                    dyn tidemark_conformance::profiles::scoped::gate::ScopedInstance,
                >)
        })
    }
}

impl tidemark_conformance::profiles::scoped::gate::ScopedInstance for ReferenceInstance {
    fn call<'a>(
        &'a mut self,
        now_ms: i64,
        op: &'a tidemark_conformance::profiles::scoped::ScopedOp,
    ) -> futures::future::BoxFuture<
        'a,
        Result<tidemark_conformance::profiles::scoped::ScopedOutcome, String>,
    > {
        Box::pin(
            self.0
                .call(tidemark_reference::clock::Timestamp(now_ms), op),
        )
    }
}

/// The in-process gate judges as the protocol does: the reference passes a scenario, and a
/// mutant fails it at the line `tidemark run --impl` reports, with the file and a replay line;
/// a crash restarts the instance over what it persisted.
#[test]
fn the_in_process_scoped_gate_passes_the_reference_and_fails_a_mutant_at_its_line() {
    use tidemark_conformance::profiles::scoped::gate::play;
    let all = scripts();
    let by_name = |n: &str| all.iter().find(|s| s.test_name() == n).unwrap().clone();
    let traversal = by_name("scoped::traversal_is_refused_in_every_spelling");
    let crash = by_name("scoped::an_obligation_survives_a_crash_between_deleting_and_recording");
    block_on(async {
        let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
        play(&ReferenceWith(None), pg.clone(), &traversal)
            .await
            .expect("the reference passes");
        play(&ReferenceWith(None), pg.clone(), &crash)
            .await
            .expect("the reference comes back from its crash");
        let failure = play(
            &ReferenceWith(ScopedMutant::from_id("clamping-resolution")),
            pg,
            &traversal,
        )
        .await
        .expect_err("the clamping mutant fails");
        assert!(
            failure.contains("traversal-is-refused-in-every-spelling.tdm:10:")
                && failure.contains("expected: refused traversal")
                && failure.contains(
                    "replay:   cargo test -- --exact scoped::traversal_is_refused_in_every_spelling"
                ),
            "{failure}"
        );
    });
}

/// `tidemark run --impl scoped-people-misbehaving.py MODE` on one scenario with a person: its
/// exit code and what it printed (stdout, then stderr).
fn people_run(mode: &str) -> (Option<i32>, String) {
    let command = format!("python3 fixtures/adapters/scoped-people-misbehaving.py {mode}");
    let ran = tidemark_in_repo(&[
        "run",
        "--impl",
        &command,
        "--only",
        "scoped::an_upload_over_the_limit_is_too_large_and_writes_nothing",
    ]);
    (Some(ran.code), format!("{}{}", ran.stdout, ran.stderr))
}

/// A people's files API named off loopback fails the handshake naming it: no request is ever
/// sent there. One claimed and not named fails the first person's request; a `person` request
/// refused, or answered without its headers, fails the scenario at the `person` step's line.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_people_api_off_loopback_and_a_refused_or_malformed_credential_fail_at_their_line() {
    let (code, off) = people_run("off-loopback");
    assert_ne!(code, Some(0), "{off}");
    assert!(
        off.contains("did not complete the init exchange")
            && off.contains("192.0.2.1")
            && off.contains("loopback"),
        "{off}"
    );
    let (code, none) = people_run("no-url");
    assert_eq!(code, Some(1), "{none}");
    assert!(
        none.contains("tdm:11: alice upload s1 session/ten.txt")
            && none.contains("names no people_api base URL"),
        "{none}"
    );
    let (code, refused) = people_run("refuses-person");
    assert_eq!(code, Some(1), "{refused}");
    assert!(
        refused.contains("tdm:10: person alice of w1 in s1")
            && refused.contains("answered refused config"),
        "{refused}"
    );
    let (code, malformed) = people_run("malformed-person");
    assert_eq!(code, Some(1), "{malformed}");
    assert!(
        malformed.contains("tdm:10: person alice of w1 in s1")
            && malformed.contains("implementation error"),
        "{malformed}"
    );
}

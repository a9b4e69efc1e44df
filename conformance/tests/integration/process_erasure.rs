//! Erasure obligations and their proofs are read where the program keeps them, with the
//! queries it declares (SPEC SL-4.7, PROTOCOL.md "The erasure ledger"), and never on its word:
//! a declaration spelled its own way is read as the reference's, one that lies is caught by the
//! step that passes with a true one, and one that writes, lacks a column, fails or is missing
//! fails the step with the reason.

use std::sync::Arc;

use super::support::{block_on, tidemark_in_repo};

use tidemark_conformance::profiles::scoped::erasure::ErasureQueries;
use tidemark_sim::real_tier::PgProvider;

const ADAPTER: &str = env!("CARGO_BIN_EXE_tidemark-reference-adapter");

/// The scenario that reads an erasure's state and proof both before and after the sweep that
/// records them.
const SCENARIO: &str =
    "scoped::a_proof_read_after_a_crash_between_deleting_and_recording_names_every_key_the_crashed_sweep_deleted";

/// `tidemark run` of [`SCENARIO`] through `fixtures/adapters/erasure-declared.py MODE` wrapped
/// around the reference adapter: its exit code and stdout.
fn with_declared_erasure(mode: &str) -> (i32, String) {
    let ran = tidemark_in_repo(&[
        "run",
        "--impl",
        &format!("python3 fixtures/adapters/erasure-declared.py {mode} {ADAPTER}"),
        "--only",
        SCENARIO,
    ]);
    (ran.code, ran.stdout)
}

#[test]
fn erasure_queries_spelled_another_way_read_the_same_ledger_and_the_scenario_passes() {
    let (code, out) = with_declared_erasure("renamed");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 passed, 0 failed"), "{out}");
}

/// A lie the scenario's expectations see: an obligation read met while it is pending, a key
/// written down read as deleted.
#[test]
fn erasure_queries_that_lie_fail_the_step_that_reads_them() {
    for (mode, line, actual) in [
        ("lies", ".tdm:18: erasure of w1/a1", "actual:   [met]"),
        ("unproven", ".tdm:19: proof of w1/a1", "actual:   [agents/"),
    ] {
        let (code, out) = with_declared_erasure(mode);
        assert_eq!(code, 1, "{mode}: {out}");
        assert!(out.contains(line) && out.contains(actual), "{mode}: {out}");
    }
}

/// A ledger that cannot be true, a query that writes, lacks a column or fails, and a claim
/// without a declaration each fail the step, naming the reason.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn erasure_queries_that_cannot_be_read_or_cannot_be_true_fail_with_the_reason() {
    for (mode, reason) in [
        ("foreign", "which is not under its subject"),
        ("writes", "cannot execute DELETE in a read-only transaction"),
        (
            "columns",
            "has no column `deadline_ms`; it must yield obligation text, subject text, deadline_ms bigint, done_at_ms bigint",
        ),
        ("fails", "relation \"no_such_erasures\" does not exist"),
        (
            "undeclared",
            "claims erasure_obligations but declares no `erasure` queries in init_ok",
        ),
    ] {
        let (code, out) = with_declared_erasure(mode);
        assert_eq!(code, 1, "{mode}: {out}");
        assert!(out.contains(reason), "{mode}: {out}");
    }
}

/// Run in a read-only transaction and rolled back: a declared query that would delete the
/// proofs leaves them; a null where SL-4.7 wants a value, and a column of the wrong type, are
/// named rather than read.
#[test]
fn declared_erasure_queries_cannot_change_the_database_and_their_nulls_and_types_are_checked() {
    block_on(async {
        let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
        let db = pg
            .fresh_database("erasure-queries")
            .await
            .expect("a database");
        sqlx::raw_sql(
            "CREATE TABLE purges (id int, ws text, due bigint, finished bigint);
             CREATE TABLE purged (purge int, object text, at bigint);
             INSERT INTO purges VALUES (1, 'w', 100, NULL), (2, 'w', 100, 50);
             INSERT INTO purged VALUES (2, 'workspaces/w/a.txt', 40);",
        )
        .execute(&db.pool)
        .await
        .expect("the implementation's own tables");
        let own = ErasureQueries {
            obligations: "SELECT id::text AS obligation, ws AS subject, due AS deadline_ms, finished AS done_at_ms FROM purges".into(),
            proofs: "SELECT purge::text AS obligation, object AS key, at AS deleted_at_ms FROM purged".into(),
        };
        let ledger = own.read(&db.pool).await.unwrap();
        assert_eq!(ledger.states("w", 200).unwrap(), ["met", "overdue 100ms"]);
        assert_eq!(ledger.proof("w", 200).unwrap(), ["workspaces/w/a.txt"]);

        let deleting = ErasureQueries {
            proofs: "WITH gone AS (DELETE FROM purged RETURNING purge, object, at) SELECT purge::text AS obligation, object AS key, at AS deleted_at_ms FROM gone".into(),
            ..own.clone()
        };
        let e = deleting.read(&db.pool).await.unwrap_err();
        assert!(e.contains("read-only transaction"), "{e}");
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM purged")
            .fetch_one(&db.pool)
            .await
            .unwrap();
        assert_eq!(left, 1, "nothing was deleted");

        let null_deadline = ErasureQueries {
            obligations: "SELECT id::text AS obligation, ws AS subject, NULL::bigint AS deadline_ms, finished AS done_at_ms FROM purges".into(),
            ..own.clone()
        };
        let e = null_deadline.read(&db.pool).await.unwrap_err();
        assert!(e.contains("gave a null `deadline_ms`"), "{e}");

        let typed_wrong = ErasureQueries {
            proofs: "SELECT purge::text AS obligation, object AS key, at::int AS deleted_at_ms FROM purged".into(),
            ..own
        };
        let e = typed_wrong.read(&db.pool).await.unwrap_err();
        assert!(
            e.contains("gives `deleted_at_ms` as INT4; it must be bigint"),
            "{e}"
        );
        pg.drop_database(db).await.expect("dropped");
    });
}

//! The pool of migrated databases behind `PgProvider::scoped_database`: a reused database is
//! as good as a new one (no rows, sequences from 1, no other session), one carrying another
//! schema is rebuilt, pooled databases go when a `DATABASE_URL` provider drops, and a role
//! without CREATEDB is told so.

use tidemark_reference::scoped::schema::schema_marker;
use tidemark_sim::real_tier::pg::stale_database_message;
use tidemark_sim::real_tier::PgProvider;

async fn exists(pg: &PgProvider, name: &str) -> bool {
    let mut admin = sqlx::ConnectOptions::connect(&pg.admin_options())
        .await
        .unwrap();
    sqlx::query_scalar::<_, bool>("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(&mut admin)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_database_has_no_rows_no_other_session_and_sequences_from_one() {
    let pg = PgProvider::from_environment().await.unwrap();
    let db = pg.scoped_database("pool").await.unwrap();
    let first_name = db.name.clone();
    sqlx::query("INSERT INTO workspaces (id) VALUES ('w1')")
        .execute(&db.pool)
        .await
        .unwrap();
    let advanced: i64 =
        sqlx::query_scalar("SELECT nextval(pg_get_serial_sequence('storage_deletions', 'id'))")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(advanced, 1);
    // A session the scenario left behind (a killed adapter's, say).
    let mut straggler = sqlx::ConnectOptions::connect(&db.options).await.unwrap();
    pg.drop_database(db).await.unwrap();
    assert_eq!(pg.idle_scoped_count(), 1);

    let db = pg.scoped_database("pool").await.unwrap();
    assert_eq!(db.name, first_name, "the idle database is reused");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM workspaces")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
    let next: i64 =
        sqlx::query_scalar("SELECT nextval(pg_get_serial_sequence('storage_deletions', 'id'))")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(next, 1, "sequences restart as in a new database");
    assert!(
        sqlx::query("SELECT 1")
            .execute(&mut straggler)
            .await
            .is_err(),
        "the straggling session was disconnected"
    );
    pg.drop_database(db).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_database_with_another_schema_is_dropped_and_rebuilt() {
    let pg = PgProvider::from_environment().await.unwrap();
    let db = pg.scoped_database("stale").await.unwrap();
    let stale_name = db.name.clone();
    // As if left by a build with another schema.
    sqlx::query("COMMENT ON TABLE workspaces IS 'tidemark scoped schema 0000000000000000'")
        .execute(&db.pool)
        .await
        .unwrap();
    pg.drop_database(db).await.unwrap();

    let db = pg.scoped_database("stale").await.unwrap();
    assert_ne!(db.name, stale_name, "a new database replaces the stale one");
    assert!(
        !exists(&pg, &stale_name).await,
        "the stale database is dropped"
    );
    let marker: Option<String> =
        sqlx::query_scalar("SELECT obj_description('workspaces'::regclass, 'pg_class')")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(marker, Some(schema_marker()));
    pg.drop_database(db).await.unwrap();
}

#[test]
fn the_stale_database_message_says_what_was_found_and_what_happens() {
    let message = stale_database_message(
        "tdm_42_0_scoped_x",
        Some("tidemark scoped schema 0000000000000000"),
    )
    .replace(&schema_marker(), "<this build's marker>");
    insta::assert_snapshot!(message, @r#"tidemark: pooled database tdm_42_0_scoped_x carries schema marker "tidemark scoped schema 0000000000000000", this build's is "<this build's marker>"; dropping it and building a new one from this build's schema"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_databases_on_a_database_url_server_go_when_the_provider_drops() {
    let server = PgProvider::from_environment().await.unwrap();
    let by_url = PgProvider::from_url(&server.database_url("postgres"))
        .await
        .unwrap();
    let db = by_url.scoped_database("urlpool").await.unwrap();
    let name = db.name.clone();
    by_url.drop_database(db).await.unwrap();
    assert!(exists(&server, &name).await, "idle, it waits in the pool");
    drop(by_url);
    assert!(!exists(&server, &name).await, "dropped with the provider");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_without_createdb_is_told_it_needs_it() {
    let server = PgProvider::from_environment().await.unwrap();
    let mut admin = sqlx::ConnectOptions::connect(&server.admin_options())
        .await
        .unwrap();
    sqlx::raw_sql(
        "DROP ROLE IF EXISTS tdm_nocreatedb; CREATE ROLE tdm_nocreatedb LOGIN NOCREATEDB",
    )
    .execute(&mut admin)
    .await
    .unwrap();
    let url = server
        .database_url("postgres")
        .replace("postgres://postgres@", "postgres://tdm_nocreatedb@");
    let by_url = PgProvider::from_url(&url).await.unwrap();
    let err = match by_url.fresh_database("denied").await {
        Ok(_) => panic!("a role without CREATEDB created a database"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("permission denied"), "{err}");
    assert!(err.contains("CREATEDB privilege"), "{err}");
    println!("{err}");
}

/// The count of rows of every table of the scoped schema, by name.
async fn counts(db: &tidemark_sim::real_tier::TestDatabase) -> Vec<(String, i64)> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let mut out = Vec::new();
    for t in tables {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM public.{}",
            quote(&t)
        )))
        .fetch_one(&db.pool)
        .await
        .unwrap();
        out.push((t, n));
    }
    out
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// A pooled database handed out again is as a new one in every table and every sequence of
/// the schema, however its last holder left it: rows in each table (the test checks it filled
/// them all, so a table added later without rows here fails it), every sequence advanced, a
/// straggling session, and one of the pool's own connections left idle in a transaction
/// holding an advisory lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_database_is_new_in_every_table_and_sequence_and_keeps_no_session() {
    let pg = PgProvider::from_environment().await.unwrap();
    let db = pg.scoped_database("pool_every").await.unwrap();
    for sql in [
        "INSERT INTO workspaces (id) VALUES ('w1')",
        "INSERT INTO agents (workspace_id, id) VALUES ('w1', 'a1')",
        "INSERT INTO sessions (workspace_id, agent_id, id, last_activity_ms) VALUES ('w1', 'a1', 's1', 0)",
        "INSERT INTO session_waits VALUES ('w1', 'a1', 's1', 'queued', 'q1')",
        "INSERT INTO agent_session_counts (workspace_id, agent_id, keep_last) VALUES ('w1', 'a1', 3)",
        "INSERT INTO workspace_retention (workspace_id, session_file_ttl_days) VALUES ('w1', 7)",
        "INSERT INTO lifecycle_applied (session_backstop_days) VALUES (365)",
        "INSERT INTO storage_deletions (prefix, entity_kind, entity_id) VALUES ('sessions/w9/', 'session', 's9')",
        "INSERT INTO storage_deletion_records (deletion_id, prefix, objects_deleted, completed_at_ms)
         SELECT id, prefix, 0, 0 FROM storage_deletions",
        "INSERT INTO erasure_obligations (workspace_id, requested_at_ms, deadline_ms) VALUES ('w9', 0, 1)",
        "INSERT INTO erasure_proofs (erasure_id, key, written_at_ms) VALUES (1, 'sessions/w9/a/s/f', 0)",
    ] {
        sqlx::query(sql).execute(&db.pool).await.unwrap();
    }
    let filled = counts(&db).await;
    assert!(filled.len() >= 6, "the schema's tables: {filled:?}");
    assert!(
        filled.iter().all(|(_, n)| *n > 0),
        "every table holds a row before the reset (fill any table added since): {filled:?}"
    );
    let sequences: Vec<(String, i64)> = sqlx::query_as(
        "SELECT sequencename::text, start_value FROM pg_sequences WHERE schemaname = 'public'
          ORDER BY sequencename",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert!(
        sequences.len() >= 2,
        "the schema's sequences: {sequences:?}"
    );
    for (s, _) in &sequences {
        for _ in 0..3 {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT nextval('public.{}')",
                quote(s)
            )))
            .execute(&db.pool)
            .await
            .unwrap();
        }
    }
    let mut straggler = sqlx::ConnectOptions::connect(&db.options).await.unwrap();
    // One of the pool's own connections, left in a transaction holding a lock.
    let mut leaked = db.pool.acquire().await.unwrap().detach();
    sqlx::query("BEGIN").execute(&mut leaked).await.unwrap();
    sqlx::query("SELECT pg_advisory_lock(4242)")
        .execute(&mut leaked)
        .await
        .unwrap();
    let name = db.name.clone();
    pg.drop_database(db).await.unwrap();

    let db = pg.scoped_database("pool_every").await.unwrap();
    assert_eq!(db.name, name, "the idle database is reused");
    let emptied = counts(&db).await;
    assert_eq!(
        emptied.iter().map(|(t, _)| t).collect::<Vec<_>>(),
        filled.iter().map(|(t, _)| t).collect::<Vec<_>>()
    );
    assert!(
        emptied.iter().all(|(_, n)| *n == 0),
        "every table is empty: {emptied:?}"
    );
    for (s, start) in &sequences {
        let next: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT nextval('public.{}')",
            quote(s)
        )))
        .fetch_one(&db.pool)
        .await
        .unwrap();
        assert_eq!(next, *start, "sequence {s} restarts as in a new database");
    }
    assert!(sqlx::query("SELECT 1")
        .execute(&mut straggler)
        .await
        .is_err());
    assert!(
        sqlx::query("SELECT 1").execute(&mut leaked).await.is_err(),
        "the pool's connection left in a transaction was ended"
    );
    let mut probe = db.pool.acquire().await.unwrap();
    let lock_free: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock(4242)")
        .fetch_one(&mut *probe)
        .await
        .unwrap();
    assert!(lock_free, "no lock of the last holder survives");
    sqlx::query("SELECT pg_advisory_unlock_all()")
        .execute(&mut *probe)
        .await
        .unwrap();
    drop(probe);
    pg.drop_database(db).await.unwrap();
}

/// A pooled connection its last holder left inside a transaction (handed back to the pool, so
/// the pool counts it as idle) is ended by the reset; the next holder never gets it: every
/// statement on the reused pool succeeds, however many connections the pool hands out. (The
/// pool does not test a connection before handing it out, so before the reset reopened a pool
/// whose own connection it had ended, one statement here failed on the closed socket: the
/// "Broken pipe" of a CI run's scoped hunt.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_left_in_a_transaction_never_reaches_the_next_holder() {
    let pg = PgProvider::from_environment().await.unwrap();
    let db = pg.scoped_database("pool_left_open").await.unwrap();
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(db.pool.acquire().await.unwrap());
    }
    // Raw BEGINs, which the pool does not see: back in the pool, idle to it, in a transaction
    // to the server.
    for c in held.iter_mut() {
        sqlx::query("BEGIN").execute(&mut **c).await.unwrap();
    }
    drop(held);
    let name = db.name.clone();
    pg.drop_database(db).await.unwrap();

    let db = pg.scoped_database("pool_left_open").await.unwrap();
    assert_eq!(db.name, name, "the idle database is reused");
    let mut held = Vec::new();
    for i in 0..8 {
        let mut c = db.pool.acquire().await.unwrap();
        let one: i32 = sqlx::query_scalar("SELECT 1")
            .fetch_one(&mut *c)
            .await
            .unwrap_or_else(|e| panic!("statement {i} on the reused pool: {e}"));
        assert_eq!(one, 1);
        held.push(c);
    }
}

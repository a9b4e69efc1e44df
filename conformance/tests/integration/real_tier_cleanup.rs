//! A scoped scenario drops its database when it ends, so a run against a `DATABASE_URL` server
//! leaves that server as it found it.

use std::sync::Arc;

use sqlx::ConnectOptions;
use tidemark_conformance::profiles::scoped::{runner, script};
use tidemark_sim::real_tier::PgProvider;

async fn databases_of_this_process(pg: &PgProvider) -> i64 {
    let mut admin = pg.admin_options().connect().await.unwrap();
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM pg_database WHERE datname LIKE 'tdm\\_{}\\_%'",
        std::process::id()
    )))
    .fetch_one(&mut admin)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_leaves_no_database_behind_whether_it_passes_or_fails() {
    let pg = Arc::new(PgProvider::from_environment().await.unwrap());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/scoped");
    let scripts = script::load_dir(&dir).unwrap();
    let s = scripts
        .iter()
        .find(|s| s.test_name() == "scoped::workspace_is_read_only_by_default")
        .expect("the scenario exists");
    assert_eq!(databases_of_this_process(&pg).await, 0);
    runner::run(pg.clone(), s, None).await.unwrap();
    assert_eq!(databases_of_this_process(&pg).await, 0);
    // The mutant fails the scenario; its database goes all the same.
    let m = tidemark_reference::scoped::ScopedMutant::WorkspaceWritableByDefault;
    assert!(runner::run(pg.clone(), s, Some(m)).await.is_err());
    assert_eq!(databases_of_this_process(&pg).await, 0);
}

//! The ephemeral cluster starts from a cached `initdb` output: the first start makes the
//! template (complete, unmarked, nothing staged left beside it), and a later start uses it and
//! still gets a working, empty cluster. Its own test binary: it points the cache at a
//! temporary directory through the environment.

use tidemark_sim::real_tier::pg_template;
use tidemark_sim::real_tier::PgProvider;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_cluster_starts_from_the_template_the_first_one_cached() {
    if std::env::var("DATABASE_URL").is_ok_and(|u| !u.trim().is_empty()) {
        return; // no ephemeral cluster is started; nothing to cache
    }
    let cache = tempfile::tempdir().unwrap();
    // This binary's only test, so no other test reads the variable while it changes.
    std::env::set_var("TIDEMARK_CACHE_DIR", cache.path());
    let first = PgProvider::from_environment().await.unwrap();
    let entries = |p: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let cached = entries(cache.path());
    assert_eq!(
        cached.len(),
        1,
        "one template and no staging left: {cached:?}"
    );
    let template = cache.path().join(&cached[0]);
    assert!(pg_template::is_ready(&template));
    assert!(
        !template.join(tidemark_sim::owner::OWNER_FILE).exists(),
        "a template is not something a run owns, so no reap removes it"
    );
    drop(first);
    let second = PgProvider::from_environment().await.unwrap();
    assert_eq!(
        entries(cache.path()),
        cached,
        "the template is reused, not remade"
    );
    let db = second.scoped_database("template").await.unwrap();
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM workspaces")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
    second.drop_database(db).await.unwrap();
}

//! The containerised PostgreSQL source (`pg_container`): our Docker API client (`docker_api`,
//! API version 1.41 pinned) against the installed dockerd, errors that name their step, and no container left behind.
//!
//! Needs a Docker daemon and the local image (`scripts/build-pg-image.sh`). Without them each
//! test prints why it is skipped and passes, except under CI (`CI` set), where `.ci/run`
//! provides both and a missing one is a failure.

use std::process::{Command, Stdio};

use sqlx::Row;
use tidemark_sim::owner::Owner;
use tidemark_sim::real_tier::pg_container::{self, PgContainer, Step, OWNER_LABEL};
use tidemark_sim::real_tier::{PgProvider, PgSourceKind};

/// Whether the daemon and the image are here; prints why not (and fails under CI).
fn docker_ready() -> bool {
    let missing = match pg_container::daemon_socket_answers() {
        Err(e) => Some(e),
        Ok(()) => {
            let image = pg_container::DEFAULT_IMAGE;
            let found = Command::new("docker")
                .args(["image", "inspect", image])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            (!found).then(|| format!("no image {image} (scripts/build-pg-image.sh builds it)"))
        }
    };
    match missing {
        None => true,
        Some(why) if std::env::var_os("CI").is_some() => {
            panic!("CI must run the container tests, but: {why}")
        }
        Some(why) => {
            println!("skipped: {why}");
            false
        }
    }
}

/// Container ids carrying `label`, via the docker CLI (independent of the code under test).
fn containers_with(label: &str) -> Vec<String> {
    containers_with_all(&[format!("label={label}")])
}

/// Container ids (running or not) matching every `docker ps` filter.
fn containers_with_all(filters: &[String]) -> Vec<String> {
    let mut cmd = Command::new("docker");
    cmd.args(["ps", "-aq", "--no-trunc"]);
    for f in filters {
        cmd.args(["--filter", f]);
    }
    let out = cmd.output().expect("docker ps");
    assert!(out.status.success(), "docker ps failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pinned_docker_client_runs_the_local_image_on_the_installed_dockerd() {
    if !docker_ready() {
        return;
    }
    // Every call names API 1.41 in its path: the day that is raised past what the installed
    // dockerd 20.10 accepts (at most 1.41), it refuses every call and this start fails.
    let container = PgContainer::start().await.expect("a PostgreSQL container");
    let id = container.id().to_string();
    let own = format!("{OWNER_LABEL}={}", Owner::current().token());
    assert!(
        containers_with(&own).contains(&id),
        "the container carries this run's owner label"
    );
    let mut conn =
        <sqlx::PgConnection as sqlx::Connection>::connect_with(&container.connect_options())
            .await
            .expect("a connection through the published loopback port");
    let version: String = sqlx::query("SELECT version()")
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .get(0);
    assert!(version.starts_with("PostgreSQL 15"), "{version}");
    drop(conn);
    drop(container);
    assert!(
        !containers_with(&own).contains(&id),
        "dropping the handle removes the container"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_on_a_container_gives_independent_scoped_databases_and_removes_it_on_drop() {
    if !docker_ready() {
        return;
    }
    let pg = PgProvider::from_container().await.expect("a provider");
    assert_eq!(
        pg.kind(),
        &PgSourceKind::Container {
            image: pg_container::image_name()
        }
    );
    let a = pg.scoped_database("one").await.unwrap();
    let b = pg.scoped_database("two").await.unwrap();
    assert_ne!(a.name, b.name);
    assert!(
        a.url.starts_with("postgres://postgres@127.0.0.1:"),
        "{}",
        a.url
    );
    let tables: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            .fetch_one(&a.pool)
            .await
            .unwrap();
    assert!(tables > 0, "the scoped schema is migrated");
    pg.drop_database(a).await.unwrap();
    pg.drop_database(b).await.unwrap();
    // By id: other tests of this binary start and remove containers of this run meanwhile.
    let own = format!("{OWNER_LABEL}={}", Owner::current().token());
    let id = pg.container_id().expect("a container source").to_string();
    assert!(
        containers_with(&own).contains(&id),
        "the provider's container runs"
    );
    drop(pg);
    assert!(
        !containers_with(&own).contains(&id),
        "the provider's container went with it"
    );
}

#[tokio::test]
async fn a_missing_image_is_an_error_naming_the_step_and_the_build_script() {
    if !docker_ready() {
        return;
    }
    let err = PgContainer::start_image("tidemark-no-such-image:0")
        .await
        .err()
        .expect("no such image");
    assert_eq!(err.step, Step::FindImage);
    let text = err.to_string();
    assert!(
        text.starts_with("finding the image (image tidemark-no-such-image:0): "),
        "{text}"
    );
    assert!(text.contains("scripts/build-pg-image.sh"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_that_cannot_run_the_image_names_the_start_step_and_leaves_no_container() {
    if !docker_ready() {
        return;
    }
    // An image whose command does not exist: the daemon creates the container, then fails
    // to start it.
    let image = format!("tidemark-test-broken:{}", Owner::current().token());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README"), "no server here\n").unwrap();
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "tar -C {} -c . | docker import --change 'CMD [\"/no/postgres\"]' - {image} >/dev/null",
            dir.path().display()
        ))
        .status()
        .unwrap();
    assert!(status.success(), "docker import of the broken image");
    let result = PgContainer::start_image(&image).await;
    // Created but never started: removed by its start label all the same.
    let left = containers_with_all(&[
        format!("label={OWNER_LABEL}={}", Owner::current().token()),
        format!("ancestor={image}"),
    ]);
    let _ = Command::new("docker")
        .args(["rmi", "-f", &image])
        .stdout(Stdio::null())
        .status();
    assert!(left.is_empty(), "the failed start left {left:?}");
    let err = result.err().expect("the broken image cannot serve");
    assert_eq!(err.step, Step::StartContainer, "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("starting the container (image {image}): ")),
        "{text}"
    );
    assert!(text.contains("/no/postgres"), "the daemon's reason: {text}");
    println!("{text}");
}

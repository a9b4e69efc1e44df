//! With no PostgreSQL to be had, the real tier says so, naming every source it tried and why
//! each failed. (Its own test binary: it changes the process environment.)

use tidemark_sim::real_tier::PgProvider;

#[tokio::test]
async fn without_any_postgresql_the_error_names_all_three_sources_and_a_forced_one_names_its_step()
{
    // SAFETY: this binary runs this one test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::remove_var("DATABASE_URL");
        std::env::set_var("TIDEMARK_PG_BIN", "/nonexistent/postgresql/bin");
        std::env::set_var("DOCKER_HOST", "unix:///nonexistent/docker.sock");
    }
    let err = match PgProvider::from_environment().await {
        Ok(_) => panic!("a PostgreSQL was found with every source disabled"),
        Err(e) => e.to_string(),
    };
    for source in ["DATABASE_URL", "ephemeral cluster", "Docker container"] {
        assert!(err.contains(source), "{source} is not named in:\n{err}");
    }
    assert!(err.contains("no Docker daemon answers"), "{err}");
    println!("{err}");
    // A forced source does not fall through: its own error, naming the failed step.
    for (source, expected) in [
        (
            "container",
            "PostgreSQL: TIDEMARK_PG_SOURCE=container: reaching the Docker daemon (image ",
        ),
        (
            "cluster",
            "PostgreSQL: TIDEMARK_PG_SOURCE=cluster: TIDEMARK_PG_BIN=/nonexistent/postgresql/bin has no initdb",
        ),
        (
            "url",
            "PostgreSQL: TIDEMARK_PG_SOURCE=url: DATABASE_URL is not set",
        ),
    ] {
        // SAFETY: as above.
        unsafe { std::env::set_var("TIDEMARK_PG_SOURCE", source) };
        let err = match PgProvider::from_environment().await {
            Ok(_) => panic!("{source} served with every source disabled"),
            Err(e) => e.to_string(),
        };
        assert!(err.starts_with(expected), "{source}: {err}");
    }
}

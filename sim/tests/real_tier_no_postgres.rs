//! With no PostgreSQL to be had, the real tier says so, naming every source it tried and why
//! each failed. (Its own test binary: it changes the process environment.)

use tidemark_sim::real_tier::PgProvider;

#[tokio::test]
async fn without_any_postgresql_the_error_names_all_three_sources() {
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
    for source in ["DATABASE_URL", "ephemeral cluster", "testcontainers"] {
        assert!(err.contains(source), "{source} is not named in:\n{err}");
    }
    assert!(err.contains("no Docker daemon answers"), "{err}");
    println!("{err}");
}

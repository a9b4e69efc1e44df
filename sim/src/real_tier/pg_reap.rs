//! Databases a run leaves on a shared PostgreSQL server (`DATABASE_URL`), and how a later run
//! tells a dead run's from a live one's.
//!
//! Every database a run creates is named `tdm_<token>_...` ([`crate::owner`]). While the run
//! lives it holds the session advisory lock [`owner::advisory_lock_keys`]`(token)` on a
//! connection it keeps open ([`OwnerLock`]); the server releases it when that connection goes,
//! however the run ends. A database whose owner's lock can be taken is stale and is dropped
//! ([`reap_stale_databases`]). Names without a token (older runs: `tdm_<pid>_...`, digits
//! only) are left alone: nothing says whether their run is alive.

use std::time::Duration;

pub use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection, Row};

use crate::owner;

/// Bounds every statement of a reap or a sweep, so an unreachable server cannot hold a run's
/// start or an interrupted run's exit.
pub const STATEMENT_TIMEOUT_MS: u64 = 5_000;

/// This run's advisory lock on a server, held as long as the value lives.
pub struct OwnerLock {
    // A Mutex only to make the provider that keeps it Sync; the connection is never used again.
    _conn: std::sync::Mutex<PgConnection>,
}

/// Takes this run's advisory lock on the server of `admin` (on its database: advisory locks
/// are per database, and reapers connect to the same one).
pub async fn hold_owner_lock(admin: &PgConnectOptions) -> Result<OwnerLock, String> {
    let mut conn = admin
        .connect()
        .await
        .map_err(|e| format!("connect for the run's advisory lock: {e}"))?;
    let (ns, key) = owner::advisory_lock_keys(owner::Owner::current().token());
    sqlx::query("SELECT pg_advisory_lock($1, $2)")
        .bind(ns)
        .bind(key)
        .execute(&mut conn)
        .await
        .map_err(|e| format!("pg_advisory_lock: {e}"))?;
    Ok(OwnerLock {
        _conn: std::sync::Mutex::new(conn),
    })
}

/// The token in a database name `tdm_<token>_...`, if it carries one.
pub fn token_of_database(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("tdm_")?;
    let token = rest.split('_').next()?;
    owner::is_token(token).then_some(token)
}

/// Drops every `tdm_<token>_...` database whose owner's advisory lock is free (its run is
/// gone), never this run's. Returns the names dropped, sorted.
/// How long a reaper waits for CREATE DATABASE statements still running on the server.
const IN_FLIGHT_WAIT_MS: u64 = 5_000;

pub async fn reap_stale_databases(admin: &PgConnectOptions) -> Result<Vec<String>, String> {
    let bound = Duration::from_millis(STATEMENT_TIMEOUT_MS);
    let work = async {
        let mut conn = admin
            .connect()
            .await
            .map_err(|e| format!("connect to reap stale databases: {e}"))?;
        // A killed run's CREATE DATABASE still completes on the server after its client died:
        // give such statements a bounded moment to finish, or their databases would be listed
        // by no reaper (a live run's creations only cost this wait, never a drop).
        let deadline = tokio::time::Instant::now() + Duration::from_millis(IN_FLIGHT_WAIT_MS);
        loop {
            let creating: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE query LIKE 'CREATE DATABASE \"tdm\\_%' AND state = 'active' \
                 AND pid <> pg_backend_pid()",
            )
            .fetch_one(&mut conn)
            .await
            .map_err(|e| format!("pg_stat_activity: {e}"))?;
            if creating == 0 || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let names = tdm_databases(&mut conn).await?;
        let own = owner::Owner::current().token();
        let mut dropped = Vec::new();
        for name in names {
            let Some(token) = token_of_database(&name) else {
                continue;
            };
            if token == own {
                continue;
            }
            let (ns, key) = owner::advisory_lock_keys(token);
            let free: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
                .bind(ns)
                .bind(key)
                .fetch_one(&mut conn)
                .await
                .map_err(|e| format!("pg_try_advisory_lock: {e}"))?;
            if !free {
                continue;
            }
            // Held while dropping, so a second reaper sees the run as alive and waits its turn.
            let result = drop_database(&mut conn, &name).await;
            let _ = sqlx::query("SELECT pg_advisory_unlock($1, $2)")
                .bind(ns)
                .bind(key)
                .execute(&mut conn)
                .await;
            result?;
            dropped.push(name);
        }
        let _ = conn.close().await;
        Ok(dropped)
    };
    tokio::time::timeout(bound * 4, work).await.map_err(|_| {
        format!(
            "reaping stale databases took over {} ms",
            bound.as_millis() * 4
        )
    })?
}

/// Drops every database of this run (`tdm_<own token>_...`): an interrupted run's cleanup of a
/// shared server. Returns the names dropped.
pub async fn drop_own_databases(admin: &PgConnectOptions) -> Result<Vec<String>, String> {
    let bound = Duration::from_millis(STATEMENT_TIMEOUT_MS);
    let work = async {
        let mut conn = admin
            .connect()
            .await
            .map_err(|e| format!("connect to drop this run's databases: {e}"))?;
        let token = owner::Owner::current().token();
        // A CREATE DATABASE whose client was dropped mid-statement still completes on the
        // server: wait until none of this run's is in flight, or its database would be missed.
        let in_flight = format!("CREATE DATABASE \"tdm\\_{token}\\_%");
        loop {
            let creating: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE $1 AND state = 'active'",
            )
            .bind(&in_flight)
            .fetch_one(&mut conn)
            .await
            .map_err(|e| format!("pg_stat_activity: {e}"))?;
            if creating == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pattern = format!("tdm\\_{token}\\_%");
        let names: Vec<String> =
            sqlx::query("SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY datname")
                .bind(pattern)
                .fetch_all(&mut conn)
                .await
                .map_err(|e| format!("list databases: {e}"))?
                .into_iter()
                .map(|r| r.get::<String, _>(0))
                .collect();
        for name in &names {
            drop_database(&mut conn, name).await?;
        }
        let _ = conn.close().await;
        Ok(names)
    };
    tokio::time::timeout(bound * 4, work).await.map_err(|_| {
        format!(
            "dropping this run's databases took over {} ms",
            bound.as_millis() * 4
        )
    })?
}

/// Names of databases starting `tdm_` on the server of `admin`, sorted: what runs left there.
pub async fn run_databases(admin: &PgConnectOptions) -> Result<Vec<String>, String> {
    let mut conn = admin.connect().await.map_err(|e| format!("connect: {e}"))?;
    let names = tdm_databases(&mut conn).await;
    let _ = conn.close().await;
    names
}

/// Names of databases starting `tdm_` on `conn`'s server, sorted.
async fn tdm_databases(conn: &mut PgConnection) -> Result<Vec<String>, String> {
    Ok(
        sqlx::query(
            "SELECT datname FROM pg_database WHERE datname LIKE 'tdm\\_%' ORDER BY datname",
        )
        .fetch_all(conn)
        .await
        .map_err(|e| format!("list databases: {e}"))?
        .into_iter()
        .map(|r| r.get::<String, _>(0))
        .collect(),
    )
}

/// One line on stderr about a reap at start: what was dropped, or why it could not be.
pub fn report_reaped(result: Result<Vec<String>, String>) {
    match result {
        Ok(names) if names.is_empty() => {}
        Ok(names) => eprintln!(
            "tidemark: dropped {} database(s) left by runs that were killed: {}",
            names.len(),
            names.join(", ")
        ),
        Err(e) => eprintln!("tidemark: could not reap databases of killed runs: {e}"),
    }
}

async fn drop_database(conn: &mut PgConnection, name: &str) -> Result<(), String> {
    // Names come from pg_database and are checked to be tdm_<token>_[a-z0-9_]; quoting with
    // doubled quotes keeps any other byte harmless anyway.
    let quoted = name.replace('"', "\"\"");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{quoted}\" WITH (FORCE)"
    )))
    .execute(conn)
    .await
    .map_err(|e| format!("DROP DATABASE {name}: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::token_of_database;

    #[test]
    fn only_names_with_a_token_are_a_runs() {
        assert_eq!(
            token_of_database("tdm_4711xab12cd_3_x"),
            Some("4711xab12cd")
        );
        assert_eq!(token_of_database("tdm_4711_3_x"), None);
        assert_eq!(token_of_database("postgres"), None);
        assert_eq!(token_of_database("tdm_template_abc"), None);
    }
}

//! PostgreSQL for the real tier, from `DATABASE_URL`, an ephemeral cluster started from local
//! PostgreSQL binaries, or a Docker container (`pg_container`); which one, and
//! in what order they are tried, is decided in `pg_source`. Each scenario gets its own
//! database. An ephemeral cluster is stopped and its directory removed, and a container
//! removed, when the provider is dropped.
//!
//! Scoped scenarios and explored seeds take theirs from a pool of migrated databases
//! ([`PgProvider::scoped_database`]): a database no one holds is reset (other sessions
//! disconnected, every table truncated with `RESTART IDENTITY`) instead of a new one being
//! created and migrated, which cost most of a PostgreSQL seed. A pooled database carrying
//! another schema marker than this build's is dropped and rebuilt, with a message saying so.
//! Pooled databases are dropped with the provider on a `DATABASE_URL` server.
//!
//! The three PostgreSQL sources share the pool of databases and their reset, here; the ephemeral
//! cluster itself is `pg_cluster.rs`, reaping `pg_reap.rs`, the cached cluster `pg_template.rs`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

pub(super) use super::pg_cluster::find_pg_bin;
use super::pg_cluster::EphemeralCluster;
use super::RealTierError;

/// Where the server binaries are looked for when `TIDEMARK_PG_BIN` is not set.
pub const PG_BIN_ROOT: &str = "/usr/lib/postgresql";

/// Where a provider's PostgreSQL came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PgSourceKind {
    DatabaseUrl,
    EphemeralCluster {
        bin_dir: PathBuf,
    },
    /// A container of this local image, through the Docker API.
    Container {
        image: String,
    },
}

/// Where it came from, as a run's report says it.
impl std::fmt::Display for PgSourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PgSourceKind::DatabaseUrl => write!(f, "DATABASE_URL"),
            PgSourceKind::EphemeralCluster { bin_dir } => {
                write!(f, "ephemeral cluster from {}", bin_dir.display())
            }
            PgSourceKind::Container { image } => {
                write!(f, "Docker container of {image}")
            }
        }
    }
}

/// A source of fresh databases.
pub struct PgProvider {
    admin: PgConnectOptions,
    kind: PgSourceKind,
    cluster: Option<EphemeralCluster>,
    /// The container this provider started (the `container` source), removed on drop.
    container: Option<super::pg_container::PgContainer>,
    counter: AtomicU64,
    /// The `DATABASE_URL` this provider came from, if it did.
    source_url: Option<String>,
    /// This run's advisory lock on a `DATABASE_URL` server: while it is held, other runs leave
    /// this run's databases alone (see `pg_reap`).
    _owner_lock: Option<super::pg_reap::OwnerLock>,
    /// Migrated databases no scenario holds, ready for [`scoped_database`](Self::scoped_database),
    /// each with its connection pool left open: reconnecting cost a seed several backend starts
    /// and re-preparing every statement.
    idle_scoped: Mutex<Vec<IdleDatabase>>,
}

impl PgProvider {
    /// A provider on a server this run started (a cluster or a container), which goes as a
    /// whole when the provider drops.
    pub(super) fn local(
        admin: PgConnectOptions,
        kind: PgSourceKind,
        cluster: Option<EphemeralCluster>,
        container: Option<super::pg_container::PgContainer>,
    ) -> PgProvider {
        PgProvider {
            admin,
            kind,
            cluster,
            container,
            counter: AtomicU64::new(0),
            source_url: None,
            _owner_lock: None,
            idle_scoped: Mutex::new(Vec::new()),
        }
    }

    pub async fn from_url(url: &str) -> Result<PgProvider, RealTierError> {
        let admin: PgConnectOptions = url.parse().map_err(|e| RealTierError::Postgres {
            message: format!("DATABASE_URL does not parse: {e}"),
        })?;
        let conn = admin.connect().await.map_err(|e| RealTierError::Postgres {
            message: format!("DATABASE_URL does not answer: {e}"),
        })?;
        let _ = conn.close().await;
        let owner_lock = super::pg_reap::hold_owner_lock(&admin)
            .await
            .map_err(|message| RealTierError::Postgres { message })?;
        super::pg_reap::report_reaped(super::pg_reap::reap_stale_databases(&admin).await);
        Ok(PgProvider {
            admin,
            kind: PgSourceKind::DatabaseUrl,
            cluster: None,
            container: None,
            counter: AtomicU64::new(0),
            source_url: Some(url.to_string()),
            _owner_lock: Some(owner_lock),
            idle_scoped: Mutex::new(Vec::new()),
        })
    }

    /// The URL of database `name` on this provider's server.
    pub fn database_url(&self, name: &str) -> String {
        match (&self.kind, &self.source_url) {
            (PgSourceKind::DatabaseUrl, Some(url)) => with_database(url, name),
            _ => format!(
                "postgres://postgres@127.0.0.1:{}/{name}",
                self.cluster
                    .as_ref()
                    .map(|c| c.port())
                    .or_else(|| self.container.as_ref().map(|c| c.port()))
                    .unwrap_or(5432)
            ),
        }
    }

    pub fn kind(&self) -> &PgSourceKind {
        &self.kind
    }

    /// The id of the container this provider started, if its source is a container.
    pub fn container_id(&self) -> Option<&str> {
        self.container.as_ref().map(|c| c.id())
    }

    /// Connection options of the administrative database (for EXPLAIN and inspection).
    pub fn admin_options(&self) -> PgConnectOptions {
        self.admin.clone()
    }

    /// Creates a new, empty database and returns a pool on it. Names are unique per provider
    /// and process, so parallel scenarios never share one.
    pub async fn fresh_database(&self, hint: &str) -> Result<TestDatabase, RealTierError> {
        let name = self.new_name(hint);
        self.create_database(&name).await?;
        self.open(name, false).await
    }

    /// A database holding the scoped schema and no rows, for one scenario or seed: as
    /// independent as a freshly created and migrated one (no rows, every sequence restarting
    /// at 1, no other session connected), but taken from a pool of this provider's migrated
    /// databases when one is idle. Creating and migrating a database costs PostgreSQL a copy of
    /// its catalog (hundreds of milliseconds on a busy machine); resetting one is a `TRUNCATE`.
    /// Hand it back with [`drop_database`](Self::drop_database), which returns it to the pool.
    pub async fn scoped_database(&self, hint: &str) -> Result<TestDatabase, RealTierError> {
        let idle = self.idle_scoped.lock().expect("pool lock").pop();
        if let Some(IdleDatabase { name, pool }) = idle {
            let kept = self.reopen(name.clone(), pool);
            let (db, reset) = match reset_scoped(&kept).await {
                Ok(reset) => (kept, reset),
                // The kept connections may be unusable (a server restart, a pool made on a
                // runtime that has since stopped): one more try on new connections.
                Err(_) => {
                    kept.pool.close().await;
                    let db = self.open(name, true).await?;
                    let reset = reset_scoped(&db).await?;
                    (db, reset)
                }
            };
            match reset {
                Reset::Done => return Ok(db),
                Reset::OwnConnectionsEnded => {
                    db.pool.close().await;
                    let db = self.open(db.name, true).await?;
                    return match reset_scoped(&db).await? {
                        Reset::Stale { found } => Err(RealTierError::Postgres {
                            message: stale_database_message(&db.name, found.as_deref()),
                        }),
                        _ => Ok(db),
                    };
                }
                Reset::Stale { found } => {
                    eprintln!("{}", stale_database_message(&db.name, found.as_deref()));
                    self.drop_database_now(db).await?;
                }
            }
        }
        let name = self.new_name(&format!("scoped_{hint}"));
        self.create_database(&name).await?;
        let db = self.open(name, true).await?;
        tidemark_reference::scoped::schema::migrate(&db.pool)
            .await
            .map_err(|e| RealTierError::Postgres {
                message: format!("migrating {}: {e}", db.name),
            })?;
        Ok(db)
    }

    fn new_name(&self, hint: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
        let clean: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(30)
            .collect();
        // `tdm_<owner token>_...`: a later run drops it if this run dies before it does.
        format!(
            "tdm_{}_{}_{clean}",
            crate::owner::Owner::current().token(),
            n
        )
    }

    async fn create_database(&self, name: &str) -> Result<(), RealTierError> {
        let mut admin = self
            .admin
            .connect()
            .await
            .map_err(|e| RealTierError::Postgres {
                message: format!("connect for CREATE DATABASE: {e}"),
            })?;
        // The name is built from [a-z0-9_] only, so quoting it is enough.
        let created = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut admin)
            .await;
        let _ = admin.close().await;
        created.map_err(|e| RealTierError::Postgres {
            message: create_database_message(name, &e),
        })?;
        Ok(())
    }

    async fn open(&self, name: String, pooled: bool) -> Result<TestDatabase, RealTierError> {
        let options = self.admin.clone().database(&name);
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            // No ping before every acquire: it doubled the round trips of a seed, whose
            // statements mostly take a connection each. A connection that died (terminated,
            // the server gone) fails its statement instead, the pool drops it, and the next
            // acquire connects anew; the store reports that failure as the database being
            // unavailable, which is what it was.
            .test_before_acquire(false)
            // Tagged, so a reset tells this pool's idle connections (kept) from anyone else's
            // (disconnected); `options` stays untagged for other clients.
            .connect_with(options.clone().application_name(&pool_application_name()))
            .await
            .map_err(|e| RealTierError::Postgres {
                message: format!("connect to {name}: {e}"),
            })?;
        let url = self.database_url(&name);
        Ok(TestDatabase {
            name,
            pool,
            options,
            url,
            pooled,
        })
    }

    /// A pooled database's kept pool, as a [`TestDatabase`].
    fn reopen(&self, name: String, pool: PgPool) -> TestDatabase {
        TestDatabase {
            options: self.admin.clone().database(&name),
            url: self.database_url(&name),
            name,
            pool,
            pooled: true,
        }
    }

    /// Hands back a database from [`fresh_database`](Self::fresh_database) (dropped) or
    /// [`scoped_database`](Self::scoped_database) (returned to the pool with its connections
    /// open, reset when next taken, dropped with the provider). With an ephemeral cluster dropping is optional (the whole cluster goes
    /// on drop); with `DATABASE_URL` it is how a run leaves the server as it found it.
    pub async fn drop_database(&self, db: TestDatabase) -> Result<(), RealTierError> {
        if db.pooled {
            self.idle_scoped
                .lock()
                .expect("pool lock")
                .push(IdleDatabase {
                    name: db.name,
                    pool: db.pool,
                });
            return Ok(());
        }
        self.drop_database_now(db).await
    }

    async fn drop_database_now(&self, db: TestDatabase) -> Result<(), RealTierError> {
        db.pool.close().await;
        drop_named(&self.admin, &db.name).await
    }

    /// Drops the pooled databases no scenario holds (also done when the provider drops).
    pub async fn drop_idle(&self) -> Result<(), RealTierError> {
        let idle = std::mem::take(&mut *self.idle_scoped.lock().expect("pool lock"));
        for IdleDatabase { name, pool } in idle {
            pool.close().await;
            drop_named(&self.admin, &name).await?;
        }
        Ok(())
    }

    /// How many migrated databases wait in the pool.
    pub fn idle_scoped_count(&self) -> usize {
        self.idle_scoped.lock().expect("pool lock").len()
    }

    /// Stops the ephemeral cluster or removes the container now (also done on drop).
    pub fn stop(&mut self) {
        self.cluster.take();
        self.container.take();
    }
}

/// One scenario's database.
pub struct TestDatabase {
    pub name: String,
    pub pool: PgPool,
    pub options: PgConnectOptions,
    /// A connection URL for this database, for an implementation in another process.
    pub url: String,
    /// Whether it came from the pool of migrated databases (and goes back to it).
    pooled: bool,
}

/// A pooled database between two holders, its connections open.
struct IdleDatabase {
    name: String,
    pool: PgPool,
}

/// The `application_name` of this process's pool connections.
fn pool_application_name() -> String {
    format!("tidemark-pool-{}", crate::owner::Owner::current().token())
}

impl Drop for PgProvider {
    fn drop(&mut self) {
        // Dropping a pool closes its sockets; DROP DATABASE ... WITH (FORCE) ends the backends.
        let names: Vec<String> = std::mem::take(&mut *self.idle_scoped.lock().expect("pool lock"))
            .into_iter()
            .map(|idle| idle.name)
            .collect();
        // A cluster or container goes as a whole; a server from DATABASE_URL is left as found.
        if names.is_empty() || self.cluster.is_some() || self.container.is_some() {
            return;
        }
        let admin = self.admin.clone();
        // Drop may run inside a runtime, which cannot be blocked on; a thread with its own can.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                for name in &names {
                    drop_named(&admin, name).await.map_err(|e| e.to_string())?;
                }
                Ok::<(), String>(())
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("tidemark: dropping the pooled databases: {e}");
        }
    }
}

async fn drop_named(admin: &PgConnectOptions, name: &str) -> Result<(), RealTierError> {
    let mut conn = admin.connect().await.map_err(|e| RealTierError::Postgres {
        message: format!("connect for DROP DATABASE: {e}"),
    })?;
    let dropped = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&mut conn)
    .await;
    let _ = conn.close().await;
    dropped.map_err(|e| RealTierError::Postgres {
        message: format!("DROP DATABASE {name}: {e}"),
    })?;
    Ok(())
}

enum Reset {
    Done,
    /// Emptied, but one of the pool's own connections had to be ended: the pool is stale.
    OwnConnectionsEnded,
    /// The database does not carry this build's schema marker.
    Stale {
        found: Option<String>,
    },
}

/// Empties a pooled scoped database as if it were new: no session but this pool's idle ones (a
/// killed adapter's connections are ended), no rows, every sequence back at its start (the
/// differential check compares ids, which must run from 1 as in a fresh database). One round
/// trip: it runs once per explored seed, where each round trip shows.
async fn reset_scoped(db: &TestDatabase) -> Result<Reset, RealTierError> {
    let err = |step: &str| {
        let step = step.to_string();
        let name = db.name.clone();
        move |e: sqlx::Error| RealTierError::Postgres {
            message: format!("resetting pooled database {name} ({step}): {e}"),
        }
    };
    let marker = tidemark_reference::scoped::schema::schema_marker();
    // The marker and the application name are built from [a-z0-9 -] only, so quoting them is
    // enough. A stale database is left as it is: it is dropped next. `TRUNCATE` rather than
    // `DELETE`: the tables start from new, empty files, as in a database just created, and the
    // deletion triggers do not fire.
    let batch = format!(
        "SELECT obj_description(to_regclass('public.workspaces'), 'pg_class');
         DO $reset$
         DECLARE tables text; own integer;
         BEGIN
           PERFORM set_config('tidemark.own_ended', '0', true);
           IF obj_description(to_regclass('public.workspaces'), 'pg_class')
              IS DISTINCT FROM '{marker}' THEN
             RETURN;
           END IF;
           SELECT count(*) FILTER (WHERE application_name = '{app}') INTO own FROM (
             SELECT application_name, pg_terminate_backend(pid) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid()
                AND (application_name IS DISTINCT FROM '{app}' OR state IS DISTINCT FROM 'idle')
           ) ended;
           PERFORM set_config('tidemark.own_ended', own::text, true);
           SELECT string_agg(quote_ident(tablename), ', ' ORDER BY tablename) INTO tables
             FROM pg_tables WHERE schemaname = 'public';
           IF tables IS NOT NULL THEN
             EXECUTE 'TRUNCATE ' || tables || ' RESTART IDENTITY CASCADE';
           END IF;
         END $reset$;
         SELECT current_setting('tidemark.own_ended', true);",
        app = pool_application_name()
    );
    let mut conn = db.pool.acquire().await.map_err(err("connect"))?;
    let rows = sqlx::raw_sql(sqlx::AssertSqlSafe(batch))
        .fetch_all(&mut *conn)
        .await
        .map_err(err(
            "check the schema marker, disconnect other sessions, TRUNCATE",
        ))?;
    let found: Option<String> = match rows.first() {
        Some(row) => sqlx::Row::try_get(row, 0).map_err(err("read the schema marker"))?,
        None => None,
    };
    if found.as_deref() != Some(marker.as_str()) {
        return Ok(Reset::Stale { found });
    }
    // One of this pool's own connections that was not idle (a transaction its last holder
    // left open, a statement still running) was ended above; the pool still counts it as
    // open and, not testing before an acquire, would hand it to the next holder, whose first
    // statement would fail on a closed socket. The caller opens the pool anew instead.
    let own_ended: Option<String> = match rows.get(1) {
        Some(row) => sqlx::Row::try_get(row, 0).map_err(err("read the sessions ended"))?,
        None => None,
    };
    if own_ended.as_deref().is_some_and(|n| n != "0") {
        return Ok(Reset::OwnConnectionsEnded);
    }
    Ok(Reset::Done)
}

/// What is printed when a pooled database carries another schema than this build's.
pub fn stale_database_message(name: &str, found: Option<&str>) -> String {
    format!(
        "tidemark: pooled database {name} carries schema marker {:?}, this build's is {:?}; \
         dropping it and building a new one from this build's schema",
        found.unwrap_or("(none)"),
        tidemark_reference::scoped::schema::schema_marker()
    )
}

/// The error of a failed `CREATE DATABASE`, saying so when the role lacks CREATEDB.
fn create_database_message(name: &str, e: &sqlx::Error) -> String {
    let denied = e
        .as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| c == "42501");
    if denied {
        format!(
            "CREATE DATABASE {name}: permission denied; the role in DATABASE_URL needs the \
             CREATEDB privilege (ALTER ROLE <role> CREATEDB), since every scenario gets its own \
             database"
        )
    } else {
        format!("CREATE DATABASE {name}: {e}")
    }
}

/// `url` with its database (the path) replaced by `name`, query string kept.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let authority_end = base
        .find("://")
        .map(|i| i + 3)
        .and_then(|start| base[start..].find('/').map(|j| start + j))
        .unwrap_or(base.len());
    let mut out = format!("{}/{name}", &base[..authority_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn a_database_url_gets_the_scenarios_database_and_keeps_its_options() {
        assert_eq!(
            with_database("postgres://u:p@h:5/orig?sslmode=disable", "tdm_1"),
            "postgres://u:p@h:5/tdm_1?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
    }
}

//! A sweep's batches (SPEC SR-7.3): every sweep of the reaper's tick (`retention.rs`), each
//! defined beside its rule, deletes through `RowsStore::delete_batches` in bounded batches,
//! each its own statement and so its own transaction, as CockroachDB's row-level TTL does
//! (`ttl_delete_batch_size`, and a rate limit between batches): a writer that touches a row being
//! reaped waits for one batch at most, never for the whole sweep, and the rows a writer holds
//! are skipped (`SKIP LOCKED`) rather than waited on. In memory a batch is one turn of the
//! tables' lock, so the same bound holds there. [`ReapConfig`] says how: the batch size, the
//! pause, and the crash fault counted across a tick's batches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

use super::memory::Tables;
use super::{lock, Backend, RowsError, RowsMutant, RowsStore};
use crate::clock::Timestamp;

/// How the reaper deletes.
#[derive(Clone, Debug)]
pub struct ReapConfig {
    /// Rows per delete statement. 1,000 keeps one batch to a few milliseconds (SR-7.3).
    pub batch: i64,
    /// A pause between two batches of one sweep, so writers get the table between them.
    /// Zero by default; a real sleep, which decides nothing about retention.
    pub pause_between_batches: Duration,
    /// A fault for exploration and the scenarios (`reap batch N crash after K batches`): the
    /// tick stops, as if its process died, once this many delete batches that removed a row
    /// have committed (counted across the tick's sweeps; a batch that found nothing is not
    /// counted, so the count does not depend on how many sweeps had nothing to do). What those
    /// batches removed stays removed; the tick returns `database_unavailable`. Zero: the tick
    /// dies before its first batch. `None` in production.
    pub crash_after_batches: Option<u64>,
    /// Batches that removed a row so far in this tick (the crash fault's count), shared by its
    /// sweeps; the tick resets it.
    pub batches_run: BatchCount,
    /// Where each distinct statement a sweep runs on PostgreSQL is written down, once, in the
    /// order first run, when set: so a test explains the statements a tick really runs rather
    /// than constants that might not be them (the SR-8.1 guard). `None` in production.
    pub statements: Option<StatementLog>,
}

/// The distinct SQL statements the sweeps of the ticks run with a [`ReapConfig`] ran, each with
/// the parameters of its first run, shared by its clones.
#[derive(Clone, Debug, Default)]
pub struct StatementLog(Arc<std::sync::Mutex<Vec<RunStatement>>>);

/// A batch statement as a sweep ran it: `$1` now (ms), `$2` the batch size and, for a keyset
/// statement ([`BatchSql::Keyset`]), `$3`/`$4` the key it read on from (`bigint`, `text`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunStatement {
    pub sql: &'static str,
    pub now_ms: i64,
    pub limit: i64,
    pub after: Option<(i64, String)>,
}

impl StatementLog {
    /// The statements recorded so far, each once (with its first run's parameters), in the
    /// order first run.
    pub fn statements(&self) -> Vec<RunStatement> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn record(&self, run: RunStatement) {
        if let Ok(mut v) = self.0.lock() {
            if !v.iter().any(|r| r.sql == run.sql) {
                v.push(run);
            }
        }
    }
}

/// One batch of a sweep on PostgreSQL.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BatchSql {
    /// `$1` now, `$2` the batch size; deletes at most `$2` rows and counts them (the mutants'
    /// statements, whose cost no one measures).
    Plain(&'static str),
    /// The reference's: `$1` now, `$2` the batch size, and `$3`, `$4` the key (expiry, id as
    /// text) of the last row the previous batch removed, which this batch reads on from, so
    /// no batch walks again the index entries of the rows the batches before it removed (a
    /// reap costs what expired, SR-8.1). `first_id` is the id below every id, for the first
    /// batch. Answers one row: the rows removed, and the last one's expiry and id.
    Keyset {
        sql: &'static str,
        first_id: &'static str,
    },
}

impl BatchSql {
    fn sql(self) -> &'static str {
        match self {
            BatchSql::Plain(sql) | BatchSql::Keyset { sql, .. } => sql,
        }
    }
}

/// A count of committed delete batches, shared by clones of one [`ReapConfig`].
#[derive(Clone, Debug, Default)]
pub struct BatchCount(pub(super) Arc<AtomicU64>);

impl Default for ReapConfig {
    fn default() -> Self {
        ReapConfig {
            batch: 1_000,
            pause_between_batches: Duration::ZERO,
            crash_after_batches: None,
            batches_run: BatchCount::default(),
            statements: None,
        }
    }
}

impl ReapConfig {
    /// The default configuration with the crash fault set: the tick dies after `batches`
    /// committed delete batches.
    pub fn crashing_after(batches: u64) -> ReapConfig {
        ReapConfig {
            crash_after_batches: Some(batches),
            ..ReapConfig::default()
        }
    }

    /// This configuration with `batch` rows per delete statement. (The struct cannot be built
    /// with `..` from outside: its crash count is private.)
    pub fn with_batch(mut self, batch: i64) -> ReapConfig {
        self.batch = batch;
        self
    }

    /// Counts one committed batch that removed `removed` rows; the crash fault's error once the
    /// budget of batches that removed something is spent.
    pub(crate) fn batch_committed(&self, removed: u64) -> Result<(), RowsError> {
        if removed == 0 {
            return Ok(());
        }
        let run = self.batches_run.0.fetch_add(1, Ordering::SeqCst) + 1;
        match self.crash_after_batches {
            Some(budget) if run >= budget => Err(RowsError::Database {
                op: "reap",
                message: format!("the reaper crashed after {run} delete batches (injected)"),
            }),
            _ => Ok(()),
        }
    }

    /// Whether the crash fault has already fired (a tick with a zero budget crashes before
    /// its first batch).
    pub(crate) fn crash_before_start(&self) -> Result<(), RowsError> {
        match self.crash_after_batches {
            Some(0) => Err(RowsError::Database {
                op: "reap",
                message: "the reaper crashed before its first batch (injected)".into(),
            }),
            _ => Ok(()),
        }
    }
}

impl RowsStore {
    /// Runs one sweep until a batch comes back short: on PostgreSQL its batch statement `sql`
    /// (see [`delete_batches_sql`]), in memory `in_memory(tables, now in ms, batch size)`, which
    /// removes at most that many rows and says how many. Each batch counts toward the crash
    /// fault once it has committed, on either backend.
    pub(crate) async fn delete_batches(
        &self,
        sql: BatchSql,
        in_memory: impl Fn(&mut Tables, i64, usize) -> u64,
        now: Timestamp,
        cfg: &ReapConfig,
        op: &'static str,
    ) -> Result<u64, RowsError> {
        let shape = BatchShape::of(self, cfg);
        let m = match self.backend() {
            Backend::Pg(pool) => return delete_batches_sql(pool, sql, now, cfg, shape, op).await,
            Backend::Memory(m) => m,
        };
        // The one-transaction mutant's rollback: the tables as the sweep found them.
        let before = shape.one_transaction.then(|| lock(m).clone());
        let mut total = 0u64;
        loop {
            let removed = in_memory(&mut lock(m), now.as_millis(), shape.limit as usize);
            total += removed;
            if let Err(e) = cfg.batch_committed(removed) {
                if let Some(before) = before {
                    *lock(m) = before;
                }
                return Err(e);
            }
            if removed < shape.limit as u64 || shape.one_batch {
                return Ok(total);
            }
            if !cfg.pause_between_batches.is_zero() {
                tokio::time::sleep(cfg.pause_between_batches).await;
            }
        }
    }
}

/// How a sweep's batches are cut: the reference's (`limit` = the batch size, repeated until
/// one comes back short, each its own transaction), or a mutant's.
#[derive(Clone, Copy)]
pub(crate) struct BatchShape {
    /// Rows per statement.
    limit: i64,
    /// [`RowsMutant::OneBatchPerSweep`]: stop after the first statement.
    one_batch: bool,
    /// [`RowsMutant::SweepInOneTransaction`]: every statement in one transaction.
    one_transaction: bool,
}

impl BatchShape {
    fn of(store: &RowsStore, cfg: &ReapConfig) -> BatchShape {
        BatchShape {
            limit: if store.mutant(RowsMutant::UnboundedDelete) {
                i64::MAX
            } else {
                cfg.batch.max(1)
            },
            one_batch: store.mutant(RowsMutant::OneBatchPerSweep),
            one_transaction: store.mutant(RowsMutant::SweepInOneTransaction),
        }
    }
}

/// Runs one sweep's batch statement until a batch comes back short (see [`BatchSql`]).
async fn delete_batches_sql(
    pool: &PgPool,
    sql: BatchSql,
    now: Timestamp,
    cfg: &ReapConfig,
    shape: BatchShape,
    op: &'static str,
) -> Result<u64, RowsError> {
    if shape.one_transaction {
        return delete_batches_in_one_transaction(pool, sql, now, cfg, shape, op).await;
    }
    let mut total = 0u64;
    let mut after = first_key(sql);
    loop {
        let mut conn = pool.acquire().await.map_err(RowsError::db(op))?;
        let (removed, last) = run_batch(&mut conn, sql, now, shape.limit, &after, cfg, op).await?;
        drop(conn);
        total += removed;
        cfg.batch_committed(removed)?;
        // Short: nothing more expired, or the rest is held by writers; the next tick gets it.
        if removed < shape.limit as u64 || shape.one_batch {
            return Ok(total);
        }
        after = last.or(after);
        if !cfg.pause_between_batches.is_zero() {
            tokio::time::sleep(cfg.pause_between_batches).await;
        }
    }
}

/// The key a keyset sweep's first batch reads on from.
fn first_key(sql: BatchSql) -> Option<(i64, String)> {
    match sql {
        BatchSql::Plain(_) => None,
        BatchSql::Keyset { first_id, .. } => Some((i64::MIN, first_id.to_string())),
    }
}

/// One batch: how many rows it removed, and (a keyset statement's) the key of the last.
async fn run_batch(
    conn: &mut sqlx::PgConnection,
    sql: BatchSql,
    now: Timestamp,
    limit: i64,
    after: &Option<(i64, String)>,
    cfg: &ReapConfig,
    op: &'static str,
) -> Result<(u64, Option<(i64, String)>), RowsError> {
    if let Some(log) = &cfg.statements {
        log.record(RunStatement {
            sql: sql.sql(),
            now_ms: now.as_millis(),
            limit,
            after: after.clone(),
        });
    }
    match (sql, after) {
        (BatchSql::Keyset { sql, .. }, Some((at, id))) => {
            let row: (i64, Option<i64>, Option<String>) = sqlx::query_as(sql)
                .bind(now.as_millis())
                .bind(limit)
                .bind(*at)
                .bind(id)
                .fetch_one(&mut *conn)
                .await
                .map_err(RowsError::db(op))?;
            let last = row.1.zip(row.2);
            Ok((row.0.max(0) as u64, last))
        }
        (sql, _) => {
            let done = sqlx::query(sql.sql())
                .bind(now.as_millis())
                .bind(limit)
                .execute(&mut *conn)
                .await
                .map_err(RowsError::db(op))?;
            Ok((done.rows_affected(), None))
        }
    }
}

/// [`RowsMutant::SweepInOneTransaction`]'s sweep: the same statements in one transaction, so a
/// crash (the fault's error) rolls back every batch the sweep had removed.
async fn delete_batches_in_one_transaction(
    pool: &PgPool,
    sql: BatchSql,
    now: Timestamp,
    cfg: &ReapConfig,
    shape: BatchShape,
    op: &'static str,
) -> Result<u64, RowsError> {
    let mut tx = pool.begin().await.map_err(RowsError::db(op))?;
    let mut total = 0u64;
    let mut after = first_key(sql);
    loop {
        let (removed, last) = run_batch(&mut tx, sql, now, shape.limit, &after, cfg, op).await?;
        total += removed;
        // Dropping the transaction on the fault's error rolls it back.
        cfg.batch_committed(removed)?;
        if removed < shape.limit as u64 {
            tx.commit().await.map_err(RowsError::db(op))?;
            return Ok(total);
        }
        after = last.or(after);
    }
}

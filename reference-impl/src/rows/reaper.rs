//! The reaper's tick (SPEC SR-7): it only calls the sweeps, each defined beside its rule, in a
//! fixed order, and reports what each removed.
//!
//! Every sweep deletes in bounded batches, each its own statement and so its own transaction,
//! as CockroachDB's row-level TTL does (`ttl_delete_batch_size`, and a rate limit between
//! batches): a writer that touches a row being reaped waits for one batch at most, never for the
//! whole sweep, and the rows a writer holds are skipped (`SKIP LOCKED`) rather than waited on.
//! In memory a batch is one turn of the tables' lock, so the same bound holds there.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

use super::memory::Tables;
use super::{lock, Backend, RowsError, RowsMutant, RowsStore};
use crate::clock::{Timestamp, DAY_MS};

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
pub struct BatchCount(Arc<AtomicU64>);

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

/// What one tick removed, per sweep, in the order the tick runs them (SR-7.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReapReport {
    pub streamed_events: u64,
    pub tool_invocations: u64,
    pub trigger_firings: u64,
    pub catalog_snapshots: u64,
    pub live_sessions: u64,
    pub refresh_tokens: u64,
    pub webhook_deliveries: u64,
    pub breaker_sightings: u64,
}

impl ReapReport {
    pub fn total(&self) -> u64 {
        self.streamed_events
            + self.tool_invocations
            + self.trigger_firings
            + self.catalog_snapshots
            + self.live_sessions
            + self.refresh_tokens
            + self.webhook_deliveries
            + self.breaker_sightings
    }
}

impl RowsStore {
    /// One tick of the reaper at `now`. A sweep that fails stops the tick with its error; the
    /// batches it and earlier sweeps committed stay committed (each is its own transaction), and
    /// the next tick picks up the rest, since every rule is a condition on the rows, not a
    /// to-do list (SR-7.4).
    pub async fn reap_tick(
        &self,
        now: Timestamp,
        cfg: &ReapConfig,
    ) -> Result<ReapReport, RowsError> {
        use super::ExpiringStore as S;
        cfg.batches_run.0.store(0, Ordering::SeqCst);
        cfg.crash_before_start()?;
        // The mutant's reaper never lets its clock go back: it sweeps at the latest now it saw.
        let seen = self
            .reaper_clock()
            .fetch_max(now.as_millis(), Ordering::SeqCst);
        let now = if self.mutant(RowsMutant::ReaperClockNeverGoesBack) {
            Timestamp::from_millis(seen.max(now.as_millis()))
        } else {
            now
        };
        self.mutant_sweeps(now).await?;
        if self.mutant(RowsMutant::FailingSweepSkipped) {
            return Ok(self.tick_skipping_failures(now, cfg).await);
        }
        if self.mutant(RowsMutant::OneSweepForEveryStore) {
            let mut report = ReapReport {
                streamed_events: self.forget_streamed(now, cfg).await?,
                tool_invocations: self.forget_expired_invocations(now, cfg).await?,
                trigger_firings: self.forget_old_firings(now, cfg).await?,
                catalog_snapshots: self.forget_old_snapshots(cfg).await?,
                ..ReapReport::default()
            };
            for store in S::ALL {
                report.live_sessions += self.forget_expired(store, now, cfg).await?;
            }
            return Ok(report);
        }
        Ok(ReapReport {
            streamed_events: self.forget_streamed(now, cfg).await?,
            tool_invocations: self.forget_expired_invocations(now, cfg).await?,
            trigger_firings: self.forget_old_firings(now, cfg).await?,
            catalog_snapshots: self.forget_old_snapshots(cfg).await?,
            live_sessions: self.forget_expired(S::LiveSessions, now, cfg).await?,
            refresh_tokens: self.forget_expired(S::RefreshTokens, now, cfg).await?,
            webhook_deliveries: self.forget_expired(S::WebhookDeliveries, now, cfg).await?,
            breaker_sightings: if self.mutant(RowsMutant::TickSkipsBreakerSightings) {
                0
            } else {
                self.forget_expired(S::BreakerSightings, now, cfg).await?
            },
        })
    }

    /// [`RowsMutant::FailingSweepSkipped`]'s tick: a sweep that fails counts nothing and the
    /// tick goes on to the next.
    async fn tick_skipping_failures(&self, now: Timestamp, cfg: &ReapConfig) -> ReapReport {
        use super::ExpiringStore as S;
        ReapReport {
            streamed_events: self.forget_streamed(now, cfg).await.unwrap_or(0),
            tool_invocations: self.forget_expired_invocations(now, cfg).await.unwrap_or(0),
            trigger_firings: self.forget_old_firings(now, cfg).await.unwrap_or(0),
            catalog_snapshots: self.forget_old_snapshots(cfg).await.unwrap_or(0),
            live_sessions: self
                .forget_expired(S::LiveSessions, now, cfg)
                .await
                .unwrap_or(0),
            refresh_tokens: self
                .forget_expired(S::RefreshTokens, now, cfg)
                .await
                .unwrap_or(0),
            webhook_deliveries: self
                .forget_expired(S::WebhookDeliveries, now, cfg)
                .await
                .unwrap_or(0),
            breaker_sightings: self
                .forget_expired(S::BreakerSightings, now, cfg)
                .await
                .unwrap_or(0),
        }
    }

    /// The sweeps only a mutant has: rows SR-6 keeps on purpose, removed by age. They report
    /// nothing, as a sweep that should not exist would not be in the report.
    async fn mutant_sweeps(&self, now: Timestamp) -> Result<(), RowsError> {
        let now_ms = now.as_millis();
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                match self.config().mutant {
                    Some(RowsMutant::HeldRequestSwept) => t
                        .held
                        .retain(|_, h| h.held_at_ms.saturating_add(DAY_MS) > now_ms),
                    Some(RowsMutant::SettledItemsSwept) => {
                        let old: Vec<i64> = t
                            .items
                            .iter()
                            .filter(|(_, i)| {
                                i.settled_at_ms
                                    .is_some_and(|s| s.saturating_add(30 * DAY_MS) <= now_ms)
                            })
                            .map(|(id, _)| *id)
                            .collect();
                        for id in old {
                            t.delete_item(id);
                        }
                    }
                    _ => {}
                }
                return Ok(());
            }
        };
        let sql = match self.config().mutant {
            Some(RowsMutant::HeldRequestSwept) => {
                "DELETE FROM tidemark_rows.held_requests WHERE held_at_ms + $2 <= $1"
            }
            Some(RowsMutant::SettledItemsSwept) => {
                "DELETE FROM tidemark_rows.action_items
                  WHERE settled_at_ms IS NOT NULL AND settled_at_ms + 30 * $2 <= $1"
            }
            _ => return Ok(()),
        };
        sqlx::query(sql)
            .bind(now.as_millis())
            .bind(DAY_MS)
            .execute(pool)
            .await
            .map_err(RowsError::db("mutant sweep"))?;
        Ok(())
    }

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

//! The reap at scale (SPEC SR-7.3, SR-8.1), measured rather than asserted: `rows` streamed
//! events, one reply in `expired_every` finished long ago, reaped beside a writer touching
//! random events one at a time. It reports rows reaped per second and the waits the writer saw,
//! for `tidemark bench` and the ignored scale test. Timings are the wall clock on purpose:
//! they are measurements, never inputs to a decision.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tidemark_reference::clock::{Timestamp, DAY_MS};
use tidemark_reference::rows::ReapConfig;
use tidemark_reference::rows::RowsStore;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::PgProvider;

/// One reap's figures.
#[derive(Clone, Debug)]
pub struct ReapFigures {
    pub rows: i64,
    /// The delete batch; `rows` for one unbounded delete.
    pub batch: i64,
    pub reaped: u64,
    pub reap_time: Duration,
    pub writes: usize,
    pub longest_wait: Duration,
    pub p99_wait: Duration,
}

impl std::fmt::Display for ReapFigures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "batch {}: reaped {} of {} rows in {:.2?} ({:.0} rows/s); writer: {} writes, longest wait {:.2?}, p99 {:.2?}",
            self.batch,
            self.reaped,
            self.rows,
            self.reap_time,
            self.reaped as f64 / self.reap_time.as_secs_f64().max(1e-9),
            self.writes,
            self.longest_wait,
            self.p99_wait
        )
    }
}

/// Seeds a fresh database with `rows` events and reaps the expired half in batches of `batch`
/// while a writer runs. The reap must remove exactly the expired rows.
pub async fn measure_reap(pg: &PgProvider, rows: i64, batch: i64) -> Result<ReapFigures, String> {
    const EXPIRED_EVERY: i64 = 2;
    let db = pg
        .fresh_database("rows_scale")
        .await
        .map_err(|e| e.to_string())?;
    let store = RowsStore::open(db.pool.clone())
        .await
        .map_err(|e| format!("the rows schema: {e}"))?;
    let finished_at = EPOCH.as_millis() + DAY_MS;
    for sql in [
        "INSERT INTO tidemark_rows.workspaces VALUES ('w')",
        "INSERT INTO tidemark_rows.sessions VALUES ('s', 'w')",
        "INSERT INTO tidemark_rows.events (session_id, reply_id, kind, payload, created_at_ms,
                                           forget_after_ms)
         SELECT 's', g / 50, 'chat.delta', 'some streamed text', $2,
                CASE WHEN (g / 50) % $3 = 0 THEN $4 END
           FROM generate_series(1, $1) g",
        "ANALYZE",
    ] {
        let mut q = sqlx::query(sql);
        if sql.contains("$1") {
            q = q
                .bind(rows)
                .bind(EPOCH.as_millis())
                .bind(EXPIRED_EVERY)
                .bind(finished_at);
        }
        q.execute(&db.pool)
            .await
            .map_err(|e| format!("seeding {rows} events: {e}"))?;
    }

    // The writer touches random events (expired or not) one at a time, as a stream or a finish
    // would, and records how long each write took. A fixed xorshift picks them.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let pool = db.pool.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut waits = Vec::new();
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            while !stop.load(Ordering::SeqCst) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let id = (x % rows as u64) as i64 + 1;
                let t = Instant::now();
                sqlx::query(
                    "UPDATE tidemark_rows.events SET payload = payload || '.' WHERE id = $1",
                )
                .bind(id)
                .execute(&pool)
                .await
                .map_err(|e| format!("a write: {e}"))?;
                waits.push(t.elapsed());
            }
            Ok::<_, String>(waits)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cfg = ReapConfig::default().with_batch(batch);
    let t = Instant::now();
    let now = Timestamp::from_millis(finished_at + 2 * DAY_MS);
    let reaped = store.forget_streamed(now, &cfg).await;
    let reap_time = t.elapsed();
    stop.store(true, Ordering::SeqCst);
    let mut waits = writer.await.map_err(|e| e.to_string())??;
    let reaped = reaped.map_err(|e| format!("the reap: {e}"))?;
    waits.sort();
    let remaining = store
        .count("events")
        .await
        .map_err(|e| format!("counting events: {e}"))?;
    if remaining + reaped as i64 != rows {
        return Err(format!(
            "the reap removed {reaped} rows and left {remaining} of {rows}: it removed rows it should have kept"
        ));
    }
    Ok(ReapFigures {
        rows,
        batch,
        reaped,
        reap_time,
        writes: waits.len(),
        longest_wait: waits.last().copied().unwrap_or_default(),
        p99_wait: waits
            .get(waits.len() * 99 / 100)
            .copied()
            .unwrap_or_default(),
    })
}

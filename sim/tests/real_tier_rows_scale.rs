//! The reap at a million rows (SPEC SR-7.3, SR-8.1), measured rather than asserted: rows reaped
//! per second, and the longest wait a concurrent writer saw, with bounded batches and with one
//! unbounded delete for comparison. Ignored by default (it takes a minute and its figures are
//! the machine's); run it with
//! `cargo test -p tidemark-sim --test real_tier_rows_scale -- --ignored --nocapture`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tidemark_reference::clock::{Timestamp, DAY_MS};
use tidemark_reference::rows::reaper::ReapConfig;
use tidemark_reference::rows::RowsStore;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::PgProvider;

const ROWS: i64 = 1_000_000;
/// One event in two belongs to a reply finished long ago; the rest to replies still written.
const EXPIRED_EVERY: i64 = 2;

struct Figures {
    reaped: u64,
    reap_time: Duration,
    writes: usize,
    longest_wait: Duration,
    p99_wait: Duration,
}

async fn measure(batch: i64) -> Figures {
    let pg = PgProvider::from_environment().await.expect("a PostgreSQL");
    let db = pg.fresh_database("rows_scale").await.expect("database");
    let store = RowsStore::open(db.pool.clone()).await.expect("schema");
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
                .bind(ROWS)
                .bind(EPOCH.as_millis())
                .bind(EXPIRED_EVERY)
                .bind(finished_at);
        }
        q.execute(&db.pool).await.expect("seed");
    }

    // The writer: touches random events (expired or not) one at a time, as a stream or a
    // finish would, and records how long each write took. A deterministic generator picks them.
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
                let id = (x % ROWS as u64) as i64 + 1;
                let t = Instant::now();
                sqlx::query(
                    "UPDATE tidemark_rows.events SET payload = payload || '.' WHERE id = $1",
                )
                .bind(id)
                .execute(&pool)
                .await
                .expect("write");
                waits.push(t.elapsed());
            }
            waits
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cfg = ReapConfig {
        batch,
        ..ReapConfig::default()
    };
    let t = Instant::now();
    let now = Timestamp::from_millis(finished_at + 2 * DAY_MS);
    let reaped = store.forget_streamed(now, &cfg).await.expect("reap");
    let reap_time = t.elapsed();
    stop.store(true, Ordering::SeqCst);
    let mut waits = writer.await.expect("writer");
    waits.sort();
    let remaining = store.count("events").await.unwrap();
    assert_eq!(
        remaining + reaped as i64,
        ROWS,
        "the reap removed rows it should have kept"
    );
    Figures {
        reaped,
        reap_time,
        writes: waits.len(),
        longest_wait: *waits.last().unwrap(),
        p99_wait: waits[waits.len() * 99 / 100],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: a million rows, about a minute; run with --ignored --nocapture"]
async fn reaping_half_of_a_million_streamed_events_beside_a_writer() {
    for batch in [1_000, ROWS] {
        let f = measure(batch).await;
        println!(
            "batch {batch}: reaped {} of {ROWS} rows in {:.2?} ({:.0} rows/s); writer: {} writes, \
             longest wait {:.2?}, p99 {:.2?}",
            f.reaped,
            f.reap_time,
            f.reaped as f64 / f.reap_time.as_secs_f64(),
            f.writes,
            f.longest_wait,
            f.p99_wait
        );
    }
}

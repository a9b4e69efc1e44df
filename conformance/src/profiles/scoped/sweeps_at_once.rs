//! Two sweeps at once (SPEC SL-1.3), as the reference stages `concurrent_sweeps`: the first
//! sweep stops once its policy sweep has claimed its sessions, the second runs beside it (until
//! it finishes or is seen blocked on a row lock), then the first goes on. Each claims its rows
//! before it lists them, so the second passes by what the first holds: a session is deleted and
//! recorded once however many sweepers run.
//!
//! A write raced against a paused sweep (`write … during sweep`, SC-5.5) is staged here the
//! same way ([`race_write_against_sweep`]), and both races drive the other side only until it is
//! seen blocked on a row lock ([`race_until_blocked_on`]).

use tidemark_reference::scoped::metadata::{Metadata, PostgresMetadata};
use tidemark_reference::scoped::{ScopedError, ScopedStore, SweepPause, SweepReport};

/// A sweep of `first` (opened with `pause` as its policy sweep's rendezvous) with a sweep of
/// `second` started inside it; answers both reports. A first sweep that never reaches the
/// rendezvous (its policy sweep failed before claiming) finishes first and the second follows
/// it, so the race never hangs. Driving the second only until it is seen blocked keeps the
/// order of S3 requests, and so the faults drawn per request, the same run after run.
pub async fn race(
    first: &ScopedStore,
    pause: &SweepPause,
    second: &ScopedStore,
    meta: &dyn Metadata,
) -> (
    Result<SweepReport, ScopedError>,
    Result<SweepReport, ScopedError>,
) {
    let sweep = first.sweep();
    tokio::pin!(sweep);
    // `biased`: tokio otherwise picks among ready branches at random, from a seed of its own.
    tokio::select! {
        biased;
        swept = &mut sweep => (swept, second.sweep().await),
        _ = pause.reached.notified() => {
            let other = second.sweep();
            tokio::pin!(other);
            let finished = race_until_blocked_on(&mut other, meta).await;
            pause.resume.notify_one();
            match finished {
                Some(report) => (sweep.await, report),
                None => {
                    let swept = sweep.await;
                    (swept, other.await)
                }
            }
        }
    }
}

/// Drives a write raced against a paused sweep until it either lands (the sweep did not hold
/// the session: a bug) or is seen blocked on a row lock in PostgreSQL (the sweep holds it:
/// correct), so the race's outcome does not depend on how loaded the machine is. Gives up
/// waiting after ten seconds.
pub async fn race_until_blocked<F, T>(
    write: &mut std::pin::Pin<&mut F>,
    pool: &sqlx::PgPool,
) -> Option<T>
where
    F: std::future::Future<Output = T>,
{
    race_until_blocked_on(write, &PostgresMetadata::new(pool.clone())).await
}

/// A sweep of `store` (opened with `pause` as its rendezvous) raced by the write `write` makes:
/// the write is issued once the sweep has claimed its candidates and driven until it lands or
/// is seen blocked on a row lock, then the sweep goes on (and a blocked write after it). A sweep that never reaches the
/// rendezvous (a mutant sweeping another way) finishes first and the write follows it, so the
/// race never hangs.
pub async fn race_write_against_sweep<W, T>(
    store: &ScopedStore,
    pause: &SweepPause,
    meta: &dyn Metadata,
    write: impl FnOnce() -> W,
) -> (Result<SweepReport, ScopedError>, T)
where
    W: std::future::Future<Output = T>,
{
    let (swept, written, _) = race_against_sweep(store, pause, meta, write).await;
    (swept, written)
}

/// [`race_write_against_sweep`], also telling whether the write landed while the sweep was
/// paused after claiming its candidates (`true`), rather than after the whole sweep: what the
/// sweep does after that pause (part SL's count policies rank sessions by activity) sees it.
pub async fn race_against_sweep<W, T>(
    store: &ScopedStore,
    pause: &SweepPause,
    meta: &dyn Metadata,
    write: impl FnOnce() -> W,
) -> (Result<SweepReport, ScopedError>, T, bool)
where
    W: std::future::Future<Output = T>,
{
    let sweep = store.sweep();
    tokio::pin!(sweep);
    // `biased`: tokio otherwise picks among ready branches at random, from a seed of its own.
    tokio::select! {
        biased;
        swept = &mut sweep => (swept, write().await, false),
        _ = pause.reached.notified() => {
            let write = write();
            tokio::pin!(write);
            let landed = race_until_blocked_on(&mut write, meta).await;
            pause.resume.notify_one();
            match landed {
                Some(written) => (sweep.await, written, true),
                // Blocked behind the sweep: the sweep finishes first, then the write is driven
                // on. Polling both at once would let the write's S3 requests interleave with
                // the rest of the sweep's by timing, and faults drawn per request would no
                // longer replay by seed.
                None => {
                    let swept = sweep.await;
                    (swept, write.await, false)
                }
            }
        }
    }
}

/// [`race_until_blocked`] over any metadata store: "blocked" is a statement waiting for a row
/// lock ([`Metadata::lock_waiters`]).
pub async fn race_until_blocked_on<F, T>(
    write: &mut std::pin::Pin<&mut F>,
    meta: &dyn Metadata,
) -> Option<T>
where
    F: std::future::Future<Output = T>,
{
    let started = std::time::Instant::now();
    loop {
        tokio::select! {
            r = write.as_mut() => return Some(r),
            _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {
                let blocked = meta.lock_waiters().await.unwrap_or(0);
                if blocked > 0 || started.elapsed() > std::time::Duration::from_secs(10) {
                    return None;
                }
            }
        }
    }
}

//! Two sweeps at once (SPEC SL-1.3), as the reference stages `concurrent_sweeps`: the first
//! sweep stops once its policy sweep has claimed its sessions, the second runs beside it (until
//! it finishes or is seen blocked on a row lock), then the first goes on. Each claims its rows
//! before it lists them, so the second passes by what the first holds: a session is deleted and
//! recorded once however many sweepers run.

use tidemark_reference::scoped::metadata::Metadata;
use tidemark_reference::scoped::{ScopedError, ScopedStore, SweepPause, SweepReport};

use super::driver::race_until_blocked_on;

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

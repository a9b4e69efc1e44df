//! Time is an input. Nothing in the reference implementation asks the operating system what
//! time it is except [`SystemClock`], which exists for production wiring only; the harness hands
//! in a clock it advances explicitly, so thirty days of retention run in milliseconds.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Milliseconds since the Unix epoch, UTC. One unit everywhere, so no conversion is ever guessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }
    pub const fn as_millis(self) -> i64 {
        self.0
    }
    pub fn plus_ms(self, ms: i64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }
    pub fn to_system_time(self) -> std::time::SystemTime {
        let epoch = std::time::UNIX_EPOCH;
        if self.0 >= 0 {
            epoch + std::time::Duration::from_millis(self.0 as u64)
        } else {
            epoch - std::time::Duration::from_millis(self.0.unsigned_abs())
        }
    }
    pub fn from_system_time(t: std::time::SystemTime) -> Self {
        match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => Timestamp(d.as_millis() as i64),
            Err(e) => Timestamp(-(e.duration().as_millis() as i64)),
        }
    }
}

/// The only source of "now" for the reference implementation.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// A clock that moves only when told to. Shared by handle: every clone sees the same time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now_ms: Arc<AtomicI64>,
}

impl ManualClock {
    pub fn starting_at(t: Timestamp) -> Self {
        ManualClock {
            now_ms: Arc::new(AtomicI64::new(t.0)),
        }
    }
    /// Moves time forward (or backward, for clock-jump faults) by `delta_ms`.
    pub fn advance_ms(&self, delta_ms: i64) {
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst);
    }
    pub fn set(&self, t: Timestamp) {
        self.now_ms.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.now_ms.load(Ordering::SeqCst))
    }
}

/// The wall clock, for production deployments only. Never used by the harness.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_system_time(std::time::SystemTime::now())
    }
}

/// The wall-clock time an S3 request is signed at. Wall time, not a handed-in clock: the S3
/// server checks a signature's time against its own wall clock and refuses one too far off, and
/// a simulated clock starts years away from it. No scenario observes this time (it goes into
/// the presigned URL only), so it cannot make two runs differ in anything a trace records.
pub fn s3_signing_time() -> Timestamp {
    SystemClock.now()
}

pub const SECOND_MS: i64 = 1_000;
pub const MINUTE_MS: i64 = 60 * SECOND_MS;
pub const HOUR_MS: i64 = 60 * MINUTE_MS;
pub const DAY_MS: i64 = 24 * HOUR_MS;

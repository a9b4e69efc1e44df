//! The clock a turmoil world's hosts read: the pinned epoch, plus turmoil's elapsed time, plus
//! a jump offset the controller moves between steps. Turmoil ticks a millisecond a step, so
//! days cannot be stepped through; jumping the offset across idle stretches lets a seed cost
//! what its events cost while the network keeps its millisecond ticks.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use tidemark_reference::clock::{Clock, Timestamp};
use tidemark_sim::clock::EPOCH;

/// One world's clock; its clones share the offset, so a jump is seen by every host at once.
#[derive(Clone, Default)]
pub struct WorldClock {
    offset_ms: Arc<AtomicI64>,
}

impl WorldClock {
    /// The time inside a host or guest of the running world (the epoch outside one).
    pub fn now(&self) -> Timestamp {
        let elapsed = turmoil::sim_elapsed().unwrap_or_default().as_millis() as i64;
        EPOCH.plus_ms(elapsed + self.offset_ms.load(Ordering::SeqCst))
    }

    /// Milliseconds from the epoch: the models' time, and the traces'.
    pub fn rel(&self) -> i64 {
        self.now().as_millis() - EPOCH.as_millis()
    }

    /// Moves the clock on by `ms` (back, if negative).
    pub fn jump(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// Milliseconds from the epoch as the controller reads them, outside any host, when the
    /// world has run `elapsed_ms` of turmoil time.
    pub fn rel_at(&self, elapsed_ms: u64) -> i64 {
        elapsed_ms as i64 + self.offset_ms.load(Ordering::SeqCst)
    }

    /// [`WorldClock::rel_at`] the world's elapsed time now.
    pub fn rel_outside(&self, sim: &turmoil::Sim<'_>) -> i64 {
        self.rel_at(sim.elapsed().as_millis() as u64)
    }
}

/// The reference reads the world clock as any clock.
impl Clock for WorldClock {
    fn now(&self) -> Timestamp {
        WorldClock::now(self)
    }
}

//! Simulated time. The harness owns one [`SimClock`] per run, advances it explicitly, and hands
//! it to the implementation as its only source of "now".

pub use tidemark_reference::clock::{
    Clock, ManualClock as SimClock, Timestamp, DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS,
};

/// Every run starts at the same instant, so traces do not depend on when they were made:
/// 2026-01-01T00:00:00Z.
pub const EPOCH: Timestamp = Timestamp(1_767_225_600_000);

/// A fresh simulated clock at [`EPOCH`].
pub fn pinned() -> SimClock {
    SimClock::starting_at(EPOCH)
}

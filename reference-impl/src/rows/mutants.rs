//! Deliberately broken variants of the rows reference (SPEC part SR). Each is a plausible wrong
//! implementation of one rule and must be killed by a named scenario (`scenarios/rows/`). Off
//! unless [`super::RowsConfig`] sets one; the switch is at run time so one build carries every
//! mutant.

/// One broken variant of the rows reference implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowsMutant {
    StreamedSweptByAge,
    WritingEventsStamped,
    InterruptStartsTheDay,
    SealDayFromEvents,
    SealAllKinds,
    DeletedReplyTakesEvents,
    NewestTwoSnapshots,
    NewestByTimestamp,
    NamedSnapshotSwept,
    HeldRequestSwept,
    SettledItemsSwept,
    ExpiryBoundaryStrict,
    FiringsKeptADay,
    CascadeMissesPrompts,
    InvocationsKeptForever,
    RenewalOnlyExtends,
    TickSkipsBreakerSightings,
}

impl RowsMutant {
    pub const ALL: [RowsMutant; 17] = [
        RowsMutant::StreamedSweptByAge,
        RowsMutant::WritingEventsStamped,
        RowsMutant::InterruptStartsTheDay,
        RowsMutant::SealDayFromEvents,
        RowsMutant::SealAllKinds,
        RowsMutant::DeletedReplyTakesEvents,
        RowsMutant::NewestTwoSnapshots,
        RowsMutant::NewestByTimestamp,
        RowsMutant::NamedSnapshotSwept,
        RowsMutant::HeldRequestSwept,
        RowsMutant::SettledItemsSwept,
        RowsMutant::ExpiryBoundaryStrict,
        RowsMutant::FiringsKeptADay,
        RowsMutant::CascadeMissesPrompts,
        RowsMutant::InvocationsKeptForever,
        RowsMutant::RenewalOnlyExtends,
        RowsMutant::TickSkipsBreakerSightings,
    ];

    /// Stable kebab-case id, used on the command line and in scenario files.
    pub fn id(self) -> &'static str {
        match self {
            RowsMutant::StreamedSweptByAge => "streamed-swept-by-age",
            RowsMutant::WritingEventsStamped => "writing-events-stamped",
            RowsMutant::InterruptStartsTheDay => "interrupt-starts-the-day",
            RowsMutant::SealDayFromEvents => "seal-day-from-events",
            RowsMutant::SealAllKinds => "seal-all-kinds",
            RowsMutant::DeletedReplyTakesEvents => "deleted-reply-takes-events",
            RowsMutant::NewestTwoSnapshots => "newest-two-snapshots",
            RowsMutant::NewestByTimestamp => "newest-by-timestamp",
            RowsMutant::NamedSnapshotSwept => "named-snapshot-swept",
            RowsMutant::HeldRequestSwept => "held-request-swept",
            RowsMutant::SettledItemsSwept => "settled-items-swept",
            RowsMutant::ExpiryBoundaryStrict => "expiry-boundary-strict",
            RowsMutant::FiringsKeptADay => "firings-kept-a-day",
            RowsMutant::CascadeMissesPrompts => "cascade-misses-prompts",
            RowsMutant::InvocationsKeptForever => "invocations-kept-forever",
            RowsMutant::RenewalOnlyExtends => "renewal-only-extends",
            RowsMutant::TickSkipsBreakerSightings => "tick-skips-breaker-sightings",
        }
    }

    /// One line saying what is broken.
    pub fn description(self) -> &'static str {
        match self {
            RowsMutant::StreamedSweptByAge => {
                "streamed events are swept a day after they were written, whatever their reply's state: an unfinished reply loses its only record"
            }
            RowsMutant::WritingEventsStamped => {
                "streaming an event starts its day at once, so a reply still being written loses its events to the next day's reap"
            }
            RowsMutant::InterruptStartsTheDay => {
                "interrupting a reply starts its events' day, so a stopped reply that was never sealed is swept"
            }
            RowsMutant::SealDayFromEvents => {
                "sealing stamps the events a day from the last one written, not from the seal, so an old interrupted reply's events go at the first reap after sealing"
            }
            RowsMutant::SealAllKinds => {
                "sealing concatenates every streamed kind, so reasoning and tool output end up in the reply's text"
            }
            RowsMutant::DeletedReplyTakesEvents => {
                "deleting a reply deletes its streamed events at once, so a poll cursor reading it loses them before their day"
            }
            RowsMutant::NewestTwoSnapshots => {
                "the newest-three snapshot rule is off by one: only the newest two are kept"
            }
            RowsMutant::NewestByTimestamp => {
                "newest is by the snapshot's timestamp, so after a backwards clock jump the latest snapshot looks oldest and is swept"
            }
            RowsMutant::NamedSnapshotSwept => {
                "the snapshot sweep ignores models and removes the models naming what it sweeps, so a snapshot a model names is swept"
            }
            RowsMutant::HeldRequestSwept => {
                "held requests are swept a day after they were held, while their conversation lives"
            }
            RowsMutant::SettledItemsSwept => {
                "settled action items are swept thirty days after settling, with the requests held for them"
            }
            RowsMutant::ExpiryBoundaryStrict => {
                "an expires_at row is swept only when expires_at < now, so a row whose expiry equals now is kept a tick too long"
            }
            RowsMutant::FiringsKeptADay => {
                "trigger firings are written with the tool invocations' day instead of thirty days"
            }
            RowsMutant::CascadeMissesPrompts => {
                "session prompts have no cascade from their session, so deleting a session leaves its prompts behind"
            }
            RowsMutant::InvocationsKeptForever => {
                "tool invocations are written with no expiry, so they are kept for ever"
            }
            RowsMutant::RenewalOnlyExtends => {
                "writing an expiring row again keeps the later expiry, so a revoked token lives out its old life"
            }
            RowsMutant::TickSkipsBreakerSightings => {
                "the reaper tick never calls the breaker sightings' sweep"
            }
        }
    }

    pub fn from_id(id: &str) -> Option<RowsMutant> {
        RowsMutant::ALL.iter().copied().find(|m| m.id() == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mutant_has_a_unique_kebab_case_id_that_round_trips() {
        let mut seen = std::collections::BTreeSet::new();
        for m in RowsMutant::ALL {
            assert!(seen.insert(m.id()));
            assert!(m.id().chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            assert_eq!(RowsMutant::from_id(m.id()), Some(m));
            assert!(!m.description().is_empty());
        }
    }
}

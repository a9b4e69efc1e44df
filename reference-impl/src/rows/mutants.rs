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
    ReaperClockNeverGoesBack,
    CreateIsIdempotent,
    ChatPrefixIsStreamed,
    StoppedReplyStillWriting,
    FinishDayFromStart,
    FinishDayFromEachEvent,
    DeletionRestartsTheDay,
    TranscriptReplaysFinishedReplies,
    ChatEventsSweptWithReplies,
    InvocationsOutliveTheirSession,
    ExpiredIdLeavesEveryStore,
    OneSweepForEveryStore,
    ZeroExpiryMeansNever,
    NewestThreeUnnamed,
    DroppedModelStillNames,
    ItemsOutliveTheirWorkspace,
    SettlingReleasesHeldRequests,
    SessionDeletionTakesItems,
    OneBatchPerSweep,
    UnboundedDelete,
    SweepInOneTransaction,
    FailingSweepSkipped,
    SettlingAnUnknownItemSucceeds,
}

impl RowsMutant {
    pub const ALL: [RowsMutant; 40] = [
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
        RowsMutant::ReaperClockNeverGoesBack,
        RowsMutant::CreateIsIdempotent,
        RowsMutant::ChatPrefixIsStreamed,
        RowsMutant::StoppedReplyStillWriting,
        RowsMutant::FinishDayFromStart,
        RowsMutant::FinishDayFromEachEvent,
        RowsMutant::DeletionRestartsTheDay,
        RowsMutant::TranscriptReplaysFinishedReplies,
        RowsMutant::ChatEventsSweptWithReplies,
        RowsMutant::InvocationsOutliveTheirSession,
        RowsMutant::ExpiredIdLeavesEveryStore,
        RowsMutant::OneSweepForEveryStore,
        RowsMutant::ZeroExpiryMeansNever,
        RowsMutant::NewestThreeUnnamed,
        RowsMutant::DroppedModelStillNames,
        RowsMutant::ItemsOutliveTheirWorkspace,
        RowsMutant::SettlingReleasesHeldRequests,
        RowsMutant::SessionDeletionTakesItems,
        RowsMutant::OneBatchPerSweep,
        RowsMutant::UnboundedDelete,
        RowsMutant::SweepInOneTransaction,
        RowsMutant::FailingSweepSkipped,
        RowsMutant::SettlingAnUnknownItemSucceeds,
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
            RowsMutant::ReaperClockNeverGoesBack => "reaper-clock-never-goes-back",
            RowsMutant::CreateIsIdempotent => "create-is-idempotent",
            RowsMutant::ChatPrefixIsStreamed => "chat-prefix-is-streamed",
            RowsMutant::StoppedReplyStillWriting => "stopped-reply-still-writing",
            RowsMutant::FinishDayFromStart => "finish-day-from-start",
            RowsMutant::FinishDayFromEachEvent => "finish-day-from-each-event",
            RowsMutant::DeletionRestartsTheDay => "deletion-restarts-the-day",
            RowsMutant::TranscriptReplaysFinishedReplies => "transcript-replays-finished-replies",
            RowsMutant::ChatEventsSweptWithReplies => "chat-events-swept-with-replies",
            RowsMutant::InvocationsOutliveTheirSession => "invocations-outlive-their-session",
            RowsMutant::ExpiredIdLeavesEveryStore => "expired-id-leaves-every-store",
            RowsMutant::OneSweepForEveryStore => "one-sweep-for-every-store",
            RowsMutant::ZeroExpiryMeansNever => "zero-expiry-means-never",
            RowsMutant::NewestThreeUnnamed => "newest-three-unnamed",
            RowsMutant::DroppedModelStillNames => "dropped-model-still-names",
            RowsMutant::ItemsOutliveTheirWorkspace => "items-outlive-their-workspace",
            RowsMutant::SettlingReleasesHeldRequests => "settling-releases-held-requests",
            RowsMutant::SessionDeletionTakesItems => "session-deletion-takes-items",
            RowsMutant::OneBatchPerSweep => "one-batch-per-sweep",
            RowsMutant::UnboundedDelete => "unbounded-delete",
            RowsMutant::SweepInOneTransaction => "sweep-in-one-transaction",
            RowsMutant::FailingSweepSkipped => "failing-sweep-skipped",
            RowsMutant::SettlingAnUnknownItemSucceeds => "settling-an-unknown-item-succeeds",
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
            RowsMutant::ReaperClockNeverGoesBack => {
                "the reaper never lets its clock go back: after a backwards jump it sweeps at the latest time it has seen, so a row written since is removed before its period has run"
            }
            RowsMutant::CreateIsIdempotent => {
                "creating a workspace or a session whose name is taken answers ok and changes nothing, so a caller believes it has a new conversation that is someone else's"
            }
            RowsMutant::ChatPrefixIsStreamed => {
                "a kind is streamed when it starts `chat.`, so a conversation event such as chat.title is refused and a look-alike streams into a reply"
            }
            RowsMutant::StoppedReplyStillWriting => {
                "only a finished reply refuses: a stopped reply takes more streamed events and can be finished or interrupted again"
            }
            RowsMutant::FinishDayFromStart => {
                "a finished reply's events are kept a day from when the reply started, not from when it finished, so a long reply's events go before a poll cursor reads its end"
            }
            RowsMutant::FinishDayFromEachEvent => {
                "a finished reply's events are each kept a day from when they were streamed, so a reply streamed for hours loses its first events early"
            }
            RowsMutant::DeletionRestartsTheDay => {
                "deleting a finished reply starts its events' day again from the deletion, so they are kept past the day from its finishing"
            }
            RowsMutant::TranscriptReplaysFinishedReplies => {
                "the transcript replays every reply from its chat.delta events, a finished one too, so a finished reply's text is not its row's and vanishes when its events are swept"
            }
            RowsMutant::ChatEventsSweptWithReplies => {
                "the streamed sweep takes a conversation event whose kind starts `chat.` a day after it was written, as if it were a finished reply's"
            }
            RowsMutant::InvocationsOutliveTheirSession => {
                "tool invocations have no cascade from their session, so a deleted conversation's invocations wait out their day"
            }
            RowsMutant::ExpiredIdLeavesEveryStore => {
                "when a row of one expiring store expires, the rows of the same id in the other stores go with it, whatever their own expiry"
            }
            RowsMutant::OneSweepForEveryStore => {
                "one sweep removes the four expiring stores' rows and reports them all as live sessions"
            }
            RowsMutant::ZeroExpiryMeansNever => {
                "an expiring row written with an expiry at or before now is kept for ever (a zero time to live read as no expiry), so a revoked token lives on"
            }
            RowsMutant::NewestThreeUnnamed => {
                "the three newest snapshots are counted among the unnamed ones only, so a named snapshot among the newest keeps an older one alive"
            }
            RowsMutant::DroppedModelStillNames => {
                "dropping a model does nothing, so the snapshot it named is kept for ever"
            }
            RowsMutant::ItemsOutliveTheirWorkspace => {
                "action items have no cascade from their workspace, so a deleted workspace's settled items (and the requests held for them) stay"
            }
            RowsMutant::SettlingReleasesHeldRequests => {
                "settling an action item deletes the requests held for it while their conversation lives"
            }
            RowsMutant::SessionDeletionTakesItems => {
                "deleting a session deletes the action items its requests were held for, settled or not, though their workspace lives"
            }
            RowsMutant::OneBatchPerSweep => {
                "a sweep runs one batch a tick and leaves the rest for later ticks, so a tick removes at most one batch of each rule's expired rows"
            }
            RowsMutant::UnboundedDelete => {
                "a sweep ignores its batch size and deletes everything expired in one statement, holding every row it takes until it commits"
            }
            RowsMutant::SweepInOneTransaction => {
                "a sweep's batches share one transaction, so a reaper that dies mid-sweep loses every batch it had removed"
            }
            RowsMutant::FailingSweepSkipped => {
                "a sweep that fails is passed over and the tick goes on and reports success, so a failing reaper looks healthy"
            }
            RowsMutant::SettlingAnUnknownItemSucceeds => {
                "settling an item that does not exist answers ok, so a caller believes an audit record was written"
            }
        }
    }

    /// The rules of SPEC part SR this mutant breaks: each is cited by a scenario that kills it
    /// (`conformance/tests/suites/rows_scenarios.rs` checks both).
    pub fn rules(self) -> &'static [&'static str] {
        match self {
            RowsMutant::StreamedSweptByAge => &["SR-2.3", "SR-2.8"],
            RowsMutant::WritingEventsStamped => &["SR-2.3"],
            RowsMutant::InterruptStartsTheDay => &["SR-2.3"],
            RowsMutant::SealDayFromEvents => &["SR-2.5"],
            RowsMutant::SealAllKinds => &["SR-2.5"],
            RowsMutant::DeletedReplyTakesEvents => &["SR-2.4"],
            RowsMutant::NewestTwoSnapshots => &["SR-5.1"],
            RowsMutant::NewestByTimestamp => &["SR-5.2"],
            RowsMutant::NamedSnapshotSwept => &["SR-5.1", "SR-5.4"],
            RowsMutant::HeldRequestSwept => &["SR-6.2", "SR-6.4"],
            RowsMutant::SettledItemsSwept => &["SR-6.1", "SR-6.4"],
            RowsMutant::ExpiryBoundaryStrict => &["SR-1.3"],
            RowsMutant::FiringsKeptADay => &["SR-3.2"],
            RowsMutant::CascadeMissesPrompts => &["SR-6.3"],
            RowsMutant::InvocationsKeptForever => &["SR-3.1"],
            RowsMutant::RenewalOnlyExtends => &["SR-4.2"],
            RowsMutant::TickSkipsBreakerSightings => &["SR-4.3"],
            RowsMutant::ReaperClockNeverGoesBack => &["SR-1.2"],
            RowsMutant::CreateIsIdempotent => &["SR-1.5"],
            RowsMutant::ChatPrefixIsStreamed => &["SR-2.1"],
            RowsMutant::StoppedReplyStillWriting => &["SR-2.2"],
            RowsMutant::FinishDayFromStart => &["SR-2.3"],
            RowsMutant::FinishDayFromEachEvent => &["SR-2.3", "SR-2.8"],
            RowsMutant::DeletionRestartsTheDay => &["SR-2.4"],
            RowsMutant::TranscriptReplaysFinishedReplies => &["SR-2.6"],
            RowsMutant::ChatEventsSweptWithReplies => &["SR-1.1", "SR-2.7", "SR-2.8"],
            RowsMutant::InvocationsOutliveTheirSession => &["SR-3.1"],
            RowsMutant::ExpiredIdLeavesEveryStore => &["SR-4.1", "SR-4.3"],
            RowsMutant::OneSweepForEveryStore => &["SR-4.3", "SR-7.5"],
            RowsMutant::ZeroExpiryMeansNever => &["SR-4.1"],
            RowsMutant::NewestThreeUnnamed => &["SR-5.3"],
            RowsMutant::DroppedModelStillNames => &["SR-5.4"],
            RowsMutant::ItemsOutliveTheirWorkspace => &["SR-6.1", "SR-2.7"],
            RowsMutant::SettlingReleasesHeldRequests => &["SR-6.2"],
            RowsMutant::SessionDeletionTakesItems => &["SR-6.1", "SR-6.2"],
            RowsMutant::OneBatchPerSweep => &["SR-7.3"],
            RowsMutant::UnboundedDelete => &["SR-7.3"],
            RowsMutant::SweepInOneTransaction => &["SR-7.3", "SR-7.4"],
            RowsMutant::FailingSweepSkipped => &["SR-7.5"],
            RowsMutant::SettlingAnUnknownItemSucceeds => &["SR-9.1"],
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

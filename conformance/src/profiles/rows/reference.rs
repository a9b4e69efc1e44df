//! The reference (`reference-impl/src/rows/`) behind the rows contract, in process: each
//! operation one call on its [`RowsStore`] ([`answer`], the mapping the reference adapter and the
//! world's server serve too), each observation read with the default queries on PostgreSQL
//! (`queries.rs`) or with the in-memory store's own counts.

use tidemark_reference::clock::Timestamp;
use tidemark_reference::rows::ReapConfig;
use tidemark_reference::rows::{ExpiringStore, ReplyState, RowsError, RowsStore};

use super::contract::{Observation, RowsEndpoint, RowsOp, RowsOutcome, TranscriptEntry};
use super::queries::RowsQueries;

/// The reference (`reference-impl/src/rows/`) as an endpoint: each operation is one call on its
/// [`RowsStore`], the tick run with the default batches.
pub struct ReferenceRows {
    pub store: RowsStore,
    pub reap: ReapConfig,
}

impl ReferenceRows {
    pub fn new(store: RowsStore) -> ReferenceRows {
        ReferenceRows {
            store,
            reap: ReapConfig::default(),
        }
    }

    /// Answers one operation (the same mapping the reference adapter serves).
    pub async fn answer(&self, now: Timestamp, op: &RowsOp) -> RowsOutcome {
        answer(&self.store, &self.reap, now, op).await
    }
}

#[async_trait::async_trait(?Send)]
impl RowsEndpoint for ReferenceRows {
    async fn call(&mut self, now_ms: i64, op: &RowsOp) -> Result<RowsOutcome, String> {
        Ok(self.answer(Timestamp::from_millis(now_ms), op).await)
    }

    /// Read with the default queries, the same a program that declares none is read with; in
    /// memory, with the store's own counts of the same rows.
    async fn observe(&mut self, what: &Observation) -> Result<i64, String> {
        let Some(pool) = self.store.pg_pool() else {
            return observe_in_memory(&self.store, what).await;
        };
        RowsQueries::default().count(pool, what).await
    }
}

/// An [`Observation`] of the in-memory backend, which has no SQL to run: the store's counts,
/// which `conformance/tests/suites/rows_tiers.rs` holds equal to the database's.
pub async fn observe_in_memory(store: &RowsStore, what: &Observation) -> Result<i64, String> {
    match what {
        Observation::Table { table } => store.count(table).await,
        Observation::StreamedOf { reply } => store.count_events_of_reply(number(reply)).await,
        Observation::EventsIn { session } => store.count_events_in_session(session).await,
    }
    .map_err(|e| e.to_string())
}

/// An id the reference made, or one it never made: every reference id is a positive number,
/// so anything else (the [`UNMADE`](super::contract::UNMADE) id, a stranger's spelling) is `-1`, which no row has and the
/// reference answers as unknown.
fn number(id: &str) -> i64 {
    id.parse::<i64>().ok().filter(|n| *n > 0).unwrap_or(-1)
}

fn refused(e: RowsError) -> RowsOutcome {
    RowsOutcome::Refused {
        reason: e.code().to_string(),
        message: e.to_string(),
    }
}

/// The tick's configuration: `cfg`, with the batch and the crash a request asks for.
fn reap_config(cfg: &ReapConfig, batch: Option<i64>, crash_after: Option<u64>) -> ReapConfig {
    let mut c = cfg.clone();
    if let Some(b) = batch {
        c = c.with_batch(b);
    }
    if crash_after.is_some() {
        c.crash_after_batches = crash_after;
    }
    c
}

fn store_named(name: &str) -> Option<ExpiringStore> {
    ExpiringStore::ALL.into_iter().find(|s| s.table() == name)
}

/// One operation against the reference store.
pub async fn answer(
    store: &RowsStore,
    cfg: &ReapConfig,
    now: Timestamp,
    op: &RowsOp,
) -> RowsOutcome {
    let done = |r: Result<(), RowsError>| match r {
        Ok(()) => RowsOutcome::Ok,
        Err(e) => refused(e),
    };
    let ok = |r: Result<i64, RowsError>| match r {
        Ok(_) => RowsOutcome::Ok,
        Err(e) => refused(e),
    };
    let made = |r: Result<i64, RowsError>| match r {
        Ok(id) => RowsOutcome::Made { id: id.to_string() },
        Err(e) => refused(e),
    };
    match op {
        RowsOp::CreateWorkspace { workspace } => done(store.create_workspace(workspace).await),
        RowsOp::CreateSession { session, workspace } => {
            done(store.create_session(workspace, session).await)
        }
        RowsOp::DeleteSession { session } => done(store.delete_session(session).await),
        RowsOp::DeleteWorkspace { workspace } => done(store.delete_workspace(workspace).await),
        RowsOp::StartReply { session } => made(store.start_reply(session, now).await),
        RowsOp::Stream {
            reply,
            kind,
            payload,
        } => ok(store.stream(number(reply), kind, payload, now).await),
        RowsOp::FinishReply { reply, text } => {
            done(store.finish_reply(number(reply), text, now).await)
        }
        RowsOp::InterruptReply { reply } => done(store.interrupt_reply(number(reply)).await),
        RowsOp::SealReply { reply } => done(store.seal_reply(number(reply), now).await),
        RowsOp::DeleteReply { reply } => done(store.delete_reply(number(reply), now).await),
        RowsOp::RecordEvent {
            session,
            kind,
            payload,
        } => ok(store.record_event(session, kind, payload, now).await),
        RowsOp::AddPrompt { session, body } => ok(store.add_session_prompt(session, body).await),
        RowsOp::RecordInvocation { session } => ok(store.record_invocation(session, now).await),
        RowsOp::FireTrigger { trigger } => ok(store.fire_trigger(trigger, now).await),
        RowsOp::Keep {
            store: name,
            id,
            for_ms,
        } => match store_named(name) {
            Some(s) => done(store.put_expiring(s, id, now.plus_ms(*for_ms), now).await),
            None => RowsOutcome::Refused {
                reason: "unknown_kind".into(),
                message: format!(
                    "no store {name:?}; the stores are live_sessions, refresh_tokens, webhook_deliveries and breaker_sightings"
                ),
            },
        },
        RowsOp::TakeSnapshot => made(store.take_snapshot(now).await),
        RowsOp::NameSnapshot { model, snapshot } => {
            done(store.name_snapshot(model, number(snapshot)).await)
        }
        RowsOp::DropModel { model } => done(store.drop_model(model).await),
        RowsOp::OpenItem { workspace } => made(store.open_item(workspace).await),
        RowsOp::SettleItem { item } => done(store.settle_item(number(item), now).await),
        RowsOp::HoldRequest { session, item } => made(
            store
                .hold_request(session, item.as_deref().map(number), now)
                .await,
        ),
        RowsOp::Reap {
            batch,
            crash_after_batches,
        } => match store
            .reap_tick(now, &reap_config(cfg, *batch, *crash_after_batches))
            .await
        {
            Ok(report) => RowsOutcome::Reaped {
                swept: report.into(),
            },
            Err(e) => refused(e),
        },
        RowsOp::Transcript { session } => match store.transcript(session).await {
            Ok(replies) => RowsOutcome::Transcript {
                replies: replies
                    .into_iter()
                    .map(|r| TranscriptEntry {
                        reply: r.id.to_string(),
                        state: match (r.state, r.sealed) {
                            (ReplyState::Finished, true) => "sealed".into(),
                            (state, _) => state.as_str().into(),
                        },
                        text: r.text,
                    })
                    .collect(),
            },
            Err(e) => refused(e),
        },
        RowsOp::Snapshots => match store.snapshots().await {
            Ok(ids) => RowsOutcome::Snapshots {
                snapshots: ids.into_iter().map(|i| i.to_string()).collect(),
            },
            Err(e) => refused(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_the_reference_never_made_is_read_as_one_no_row_has() {
        assert_eq!(number("12"), 12);
        assert_eq!(number(super::super::contract::UNMADE), -1);
        assert_eq!(number("0"), -1);
        assert_eq!(number("2b8e-uuid"), -1);
    }
}

//! Replies and their streamed events (SPEC SR-2), and the sweep that forgets them.
//!
//! While a reply is unfinished its row holds no text: the streamed events are its only record.
//! The transcript read replays them, and sealing an interrupted reply writes its text from them.
//! So an event's expiry starts only when its reply is finished (or sealed, or deleted): until
//! then `forget_after_ms` is NULL and no age can make it expire.
//!
//! Why this file passes 800 lines: it has one reason, SR-2, and every operation on a reply keeps
//! its PostgreSQL statement and its in-memory half side by side (as every rule's file does,
//! `memory.rs`), so the rule reads once and changes in one place; split by backend, a change
//! to SR-2 would be two edits that must agree.

use sqlx::Row;

use super::alternatives::Alternative;
use super::batch::{BatchSql, ReapConfig};
use super::memory::{self, delete_batch, Tables};
use super::schema::ReplyState;
use super::{lock, sqlstate, Backend, RowsError, RowsMutant, RowsStore, FOREIGN_KEY_VIOLATION};
use crate::clock::{Timestamp, DAY_MS};

/// The kinds that stream into a reply (SR-2.1). Any other kind is a conversation event, kept
/// with its session.
pub const STREAMED_KINDS: &[&str] = &[
    "chat.delta",
    "chat.reasoning",
    "chat.writing",
    "chat.tool",
    "chat.tool_result",
    "chat.steer",
];

/// The state streaming, finishing and interrupting apply to (SR-2.2).
const WRITING: &[ReplyState] = &[ReplyState::Writing];

/// The kind whose payloads, in order, are a reply's text (SR-2.5).
pub const TEXT_KIND: &str = "chat.delta";

/// How long streamed events outlive their reply's end: a poll cursor from a tab left open
/// overnight still finds them (SR-2.3).
pub const STREAMED_GRACE_MS: i64 = DAY_MS;

/// One reply as the transcript read shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranscriptReply {
    pub id: i64,
    pub state: ReplyState,
    pub sealed: bool,
    /// The row's text once finished; otherwise its `chat.delta` events replayed in order.
    pub text: String,
}

/// Checks an event kind's spelling: `area.name`, lowercase letters, digits and `_` (SR-2.1).
pub fn check_kind(kind: &str) -> Result<(), RowsError> {
    let ok = kind.len() <= 64
        && kind.split('.').count() >= 2
        && kind.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        });
    if ok {
        Ok(())
    } else {
        Err(RowsError::UnknownKind(
            kind.into(),
            "a kind is dot-separated lowercase words, such as chat.delta",
        ))
    }
}

impl RowsStore {
    /// Whether `kind` streams into a reply (SR-2.1): one of [`STREAMED_KINDS`], exactly; the
    /// mutant takes every `chat.` kind for one.
    fn is_streamed(&self, kind: &str) -> bool {
        if self.mutant(RowsMutant::ChatPrefixIsStreamed) {
            return kind.starts_with("chat.");
        }
        STREAMED_KINDS.contains(&kind)
    }

    /// The states `op` applies to (SR-2.2); the mutant refuses only a finished reply.
    fn states_for(&self, from: &'static [ReplyState]) -> &'static [ReplyState] {
        if self.mutant(RowsMutant::StoppedReplyStillWriting) {
            &[ReplyState::Writing, ReplyState::Stopped]
        } else {
            from
        }
    }

    pub async fn start_reply(&self, session: &str, now: Timestamp) -> Result<i64, RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let id = memory::next(&mut t.seq.replies);
                if !t.sessions.contains_key(session) {
                    return Err(RowsError::UnknownSession(session.into()));
                }
                let reply = memory::Reply {
                    session: session.into(),
                    state: ReplyState::Writing,
                    sealed: false,
                    content: None,
                    started_at_ms: now.as_millis(),
                    finished_at_ms: None,
                };
                t.replies.insert(id, reply);
                return Ok(id);
            }
        };
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.replies (session_id, state, started_at_ms)
             VALUES ($1, 'writing', $2) RETURNING id",
        )
        .bind(session)
        .bind(now.as_millis())
        .fetch_one(pool)
        .await
        .map_err(|e| match sqlstate(&e).as_deref() {
            Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownSession(session.into()),
            _ => RowsError::db("start reply")(e),
        })
    }

    /// Streams one event of a streamed kind into a reply that is still being written.
    pub async fn stream(
        &self,
        reply: i64,
        kind: &str,
        payload: &str,
        now: Timestamp,
    ) -> Result<i64, RowsError> {
        let check = || {
            check_kind(kind)?;
            if !self.is_streamed(kind) {
                return Err(RowsError::UnknownKind(
                    kind.into(),
                    "not a streamed kind; record it as a conversation event",
                ));
            }
            Ok(())
        };
        // The kind first (SR-2.1), unless this store takes `kind_check_order=target_first`:
        // then the reply and its state are checked first and the kind after them.
        let target_first = self.config().takes(Alternative::TargetBeforeKind);
        if !target_first {
            check()?;
        }
        // The mutant starts each event's day as it is written, whatever its reply's state.
        let forget_after = self
            .mutant(RowsMutant::WritingEventsStamped)
            .then(|| now.as_millis().saturating_add(STREAMED_GRACE_MS));
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let r = t
                    .replies
                    .get(&reply)
                    .ok_or(RowsError::UnknownReply(reply))?;
                check_state(reply, r.state, self.states_for(WRITING), "stream")?;
                if target_first {
                    check()?;
                }
                let event = memory::Event {
                    session: r.session.clone(),
                    reply: Some(reply),
                    kind: kind.into(),
                    payload: payload.into(),
                    created_at_ms: now.as_millis(),
                    forget_after_ms: forget_after,
                };
                let id = memory::next(&mut t.seq.events);
                t.events.insert(id, event);
                return Ok(id);
            }
        };
        let mut tx = pool.begin().await.map_err(RowsError::db("stream"))?;
        // The reply's row is locked so a finish or seal cannot slip between the check and the
        // insert and leave an unstamped event behind a finished reply.
        let row = sqlx::query(
            "SELECT session_id, state FROM tidemark_rows.replies WHERE id = $1 FOR UPDATE",
        )
        .bind(reply)
        .fetch_optional(&mut *tx)
        .await
        .map_err(RowsError::db("stream"))?
        .ok_or(RowsError::UnknownReply(reply))?;
        let state = ReplyState::parse(row.get::<&str, _>("state"));
        check_state(reply, state, self.states_for(WRITING), "stream")?;
        if target_first {
            check()?;
        }
        let session: String = row.get("session_id");
        let id = sqlx::query_scalar(
            "INSERT INTO tidemark_rows.events
                    (session_id, reply_id, kind, payload, created_at_ms, forget_after_ms)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(&session)
        .bind(reply)
        .bind(kind)
        .bind(payload)
        .bind(now.as_millis())
        .bind(forget_after)
        .fetch_one(&mut *tx)
        .await
        .map_err(RowsError::db("stream"))?;
        tx.commit().await.map_err(RowsError::db("stream"))?;
        Ok(id)
    }

    /// Records a conversation event (any kind that is not streamed). Kept with its session.
    pub async fn record_event(
        &self,
        session: &str,
        kind: &str,
        payload: &str,
        now: Timestamp,
    ) -> Result<i64, RowsError> {
        let check = || {
            check_kind(kind)?;
            if self.is_streamed(kind) {
                return Err(RowsError::UnknownKind(
                    kind.into(),
                    "a streamed kind names a reply; stream it into one",
                ));
            }
            Ok(())
        };
        // The kind first (SR-2.1); under `kind_check_order=target_first` the session is looked
        // up first (a lookup, so no id is spent on a refusal either way).
        if self.config().takes(Alternative::TargetBeforeKind) {
            let exists = match self.backend() {
                Backend::Pg(pool) => sqlx::query_scalar::<_, bool>(
                    "SELECT EXISTS (SELECT 1 FROM tidemark_rows.sessions WHERE id = $1)",
                )
                .bind(session)
                .fetch_one(pool)
                .await
                .map_err(RowsError::db("record event"))?,
                Backend::Memory(m) => lock(m).sessions.contains_key(session),
            };
            if !exists {
                return Err(RowsError::UnknownSession(session.into()));
            }
        }
        check()?;
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let id = memory::next(&mut t.seq.events);
                if !t.sessions.contains_key(session) {
                    return Err(RowsError::UnknownSession(session.into()));
                }
                let event = memory::Event {
                    session: session.into(),
                    reply: None,
                    kind: kind.into(),
                    payload: payload.into(),
                    created_at_ms: now.as_millis(),
                    forget_after_ms: None,
                };
                t.events.insert(id, event);
                return Ok(id);
            }
        };
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.events (session_id, kind, payload, created_at_ms)
             VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(session)
        .bind(kind)
        .bind(payload)
        .bind(now.as_millis())
        .fetch_one(pool)
        .await
        .map_err(|e| match sqlstate(&e).as_deref() {
            Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownSession(session.into()),
            _ => RowsError::db("record event")(e),
        })
    }

    /// Finishes a reply being written with its final text; its events start their day.
    pub async fn finish_reply(
        &self,
        reply: i64,
        content: &str,
        now: Timestamp,
    ) -> Result<(), RowsError> {
        self.end(
            reply,
            Some(content),
            now,
            self.states_for(WRITING),
            "finish",
        )
        .await
    }

    /// Interrupts a reply being written. It keeps its events, however long, until sealed.
    pub async fn interrupt_reply(&self, reply: i64) -> Result<(), RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let r = t
                    .replies
                    .get_mut(&reply)
                    .ok_or(RowsError::UnknownReply(reply))?;
                check_state(reply, r.state, self.states_for(WRITING), "interrupt")?;
                r.state = ReplyState::Stopped;
                if self.mutant(RowsMutant::InterruptStartsTheDay) {
                    for e in t.events.values_mut().filter(|e| e.reply == Some(reply)) {
                        e.forget_after_ms = Some(e.created_at_ms.saturating_add(STREAMED_GRACE_MS));
                    }
                }
                return Ok(());
            }
        };
        let mut tx = pool.begin().await.map_err(RowsError::db("interrupt"))?;
        lock_state(&mut tx, reply, self.states_for(WRITING), "interrupt").await?;
        sqlx::query("UPDATE tidemark_rows.replies SET state = 'stopped' WHERE id = $1")
            .bind(reply)
            .execute(&mut *tx)
            .await
            .map_err(RowsError::db("interrupt"))?;
        if self.mutant(RowsMutant::InterruptStartsTheDay) {
            // The mutant treats an interruption as an end: each event's day from its writing.
            sqlx::query(
                "UPDATE tidemark_rows.events SET forget_after_ms = created_at_ms + $2
                  WHERE reply_id = $1",
            )
            .bind(reply)
            .bind(STREAMED_GRACE_MS)
            .execute(&mut *tx)
            .await
            .map_err(RowsError::db("interrupt"))?;
        }
        tx.commit().await.map_err(RowsError::db("interrupt"))
    }

    /// Seals an unfinished reply (writing or stopped) from its events: its text becomes its
    /// `chat.delta` payloads in order, it is finished, and its events start their day (SR-2.5).
    pub async fn seal_reply(&self, reply: i64, now: Timestamp) -> Result<(), RowsError> {
        self.end(
            reply,
            None,
            now,
            &[ReplyState::Writing, ReplyState::Stopped],
            "seal",
        )
        .await
    }

    /// Deletes a reply (a regenerated or withdrawn one). Its streamed events are "gone"-stamped:
    /// kept a day from now, then swept (SR-2.4); its conversation events are not its own.
    pub async fn delete_reply(&self, reply: i64, now: Timestamp) -> Result<(), RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                if t.replies.remove(&reply).is_none() {
                    return Err(RowsError::UnknownReply(reply));
                }
                if self.mutant(RowsMutant::DeletedReplyTakesEvents) {
                    t.events.retain(|_, e| e.reply != Some(reply));
                } else {
                    let keep_earlier = !self.mutant(RowsMutant::DeletionRestartsTheDay);
                    stamp_in_memory(&mut t, reply, now, keep_earlier);
                }
                return Ok(());
            }
        };
        let mut tx = pool.begin().await.map_err(RowsError::db("delete reply"))?;
        let gone = sqlx::query("DELETE FROM tidemark_rows.replies WHERE id = $1")
            .bind(reply)
            .execute(&mut *tx)
            .await
            .map_err(RowsError::db("delete reply"))?;
        if gone.rows_affected() == 0 {
            return Err(RowsError::UnknownReply(reply));
        }
        if self.mutant(RowsMutant::DeletedReplyTakesEvents) {
            sqlx::query("DELETE FROM tidemark_rows.events WHERE reply_id = $1")
                .bind(reply)
                .execute(&mut *tx)
                .await
                .map_err(RowsError::db("delete reply"))?;
        } else {
            let keep_earlier = !self.mutant(RowsMutant::DeletionRestartsTheDay);
            stamp_events(&mut tx, reply, now, keep_earlier).await?;
        }
        tx.commit().await.map_err(RowsError::db("delete reply"))
    }

    async fn end(
        &self,
        reply: i64,
        content: Option<&str>,
        now: Timestamp,
        from: &[ReplyState],
        op: &'static str,
    ) -> Result<(), RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let r = t
                    .replies
                    .get(&reply)
                    .ok_or(RowsError::UnknownReply(reply))?;
                check_state(reply, r.state, from, op)?;
                let text = match content {
                    Some(c) => c.to_string(),
                    None if self.mutant(RowsMutant::SealAllKinds) => {
                        replay_in_memory(&t, reply, None)
                    }
                    None => replay_in_memory(&t, reply, Some(TEXT_KIND)),
                };
                let r = t.replies.get_mut(&reply).expect("checked above");
                r.state = ReplyState::Finished;
                r.content = Some(text);
                r.finished_at_ms = Some(now.as_millis());
                r.sealed = content.is_none();
                let started = r.started_at_ms;
                if content.is_some() && self.mutant(RowsMutant::FinishDayFromStart) {
                    let at = started.saturating_add(STREAMED_GRACE_MS);
                    for e in t.events.values_mut().filter(|e| e.reply == Some(reply)) {
                        e.forget_after_ms = Some(at);
                    }
                } else if content.is_some() && self.mutant(RowsMutant::FinishDayFromEachEvent) {
                    for e in t.events.values_mut().filter(|e| e.reply == Some(reply)) {
                        e.forget_after_ms = Some(e.created_at_ms.saturating_add(STREAMED_GRACE_MS));
                    }
                } else if content.is_none() && self.mutant(RowsMutant::SealDayFromEvents) {
                    let last = t
                        .events
                        .values()
                        .filter(|e| e.reply == Some(reply))
                        .map(|e| e.created_at_ms)
                        .max();
                    for e in t.events.values_mut().filter(|e| e.reply == Some(reply)) {
                        e.forget_after_ms = last.map(|l| l.saturating_add(STREAMED_GRACE_MS));
                    }
                } else {
                    stamp_in_memory(&mut t, reply, now, false);
                }
                return Ok(());
            }
        };
        let mut tx = pool.begin().await.map_err(RowsError::db(op))?;
        lock_state(&mut tx, reply, from, op).await?;
        let text = match content {
            Some(c) => c.to_string(),
            None if self.mutant(RowsMutant::SealAllKinds) => sqlx::query_scalar(
                "SELECT coalesce(string_agg(payload, '' ORDER BY id), '')
                       FROM tidemark_rows.events WHERE reply_id = $1",
            )
            .bind(reply)
            .fetch_one(&mut *tx)
            .await
            .map_err(RowsError::db(op))?,
            None => replay(&mut *tx, reply).await?,
        };
        sqlx::query(
            "UPDATE tidemark_rows.replies
                SET state = 'finished', content = $2, finished_at_ms = $3, sealed = $4
              WHERE id = $1",
        )
        .bind(reply)
        .bind(&text)
        .bind(now.as_millis())
        .bind(content.is_none())
        .execute(&mut *tx)
        .await
        .map_err(RowsError::db(op))?;
        if content.is_some() && self.mutant(RowsMutant::FinishDayFromStart) {
            // The mutant dates the day from the reply's start.
            sqlx::query(
                "UPDATE tidemark_rows.events SET forget_after_ms =
                        (SELECT started_at_ms FROM tidemark_rows.replies WHERE id = $1) + $2
                  WHERE reply_id = $1",
            )
            .bind(reply)
            .bind(STREAMED_GRACE_MS)
            .execute(&mut *tx)
            .await
            .map_err(RowsError::db(op))?;
        } else if content.is_some() && self.mutant(RowsMutant::FinishDayFromEachEvent) {
            // The mutant dates each event's day from its own writing.
            sqlx::query(
                "UPDATE tidemark_rows.events SET forget_after_ms = created_at_ms + $2
                  WHERE reply_id = $1",
            )
            .bind(reply)
            .bind(STREAMED_GRACE_MS)
            .execute(&mut *tx)
            .await
            .map_err(RowsError::db(op))?;
        } else if content.is_none() && self.mutant(RowsMutant::SealDayFromEvents) {
            // The mutant dates the day from the last event written, not from the seal.
            sqlx::query(
                "UPDATE tidemark_rows.events SET forget_after_ms =
                        (SELECT max(created_at_ms) FROM tidemark_rows.events WHERE reply_id = $1)
                        + $2
                  WHERE reply_id = $1",
            )
            .bind(reply)
            .bind(STREAMED_GRACE_MS)
            .execute(&mut *tx)
            .await
            .map_err(RowsError::db(op))?;
        } else {
            stamp_events(&mut tx, reply, now, false).await?;
        }
        tx.commit().await.map_err(RowsError::db(op))
    }

    /// The transcript of a session: every reply in order, each with its text.
    pub async fn transcript(&self, session: &str) -> Result<Vec<TranscriptReply>, RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let t = lock(m);
                if !t.sessions.contains_key(session) {
                    return Err(RowsError::UnknownSession(session.into()));
                }
                return Ok(t
                    .replies
                    .iter()
                    .filter(|(_, r)| r.session == session)
                    .map(|(id, r)| TranscriptReply {
                        id: *id,
                        state: r.state,
                        sealed: r.sealed,
                        text: match &r.content {
                            Some(c)
                                if !self.mutant(RowsMutant::TranscriptReplaysFinishedReplies) =>
                            {
                                c.clone()
                            }
                            _ => replay_in_memory(&t, *id, Some(TEXT_KIND)),
                        },
                    })
                    .collect());
            }
        };
        let exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM tidemark_rows.sessions WHERE id = $1)",
        )
        .bind(session)
        .fetch_one(pool)
        .await
        .map_err(RowsError::db("transcript"))?;
        if !exists {
            return Err(RowsError::UnknownSession(session.into()));
        }
        let rows = sqlx::query(
            "SELECT id, state, sealed, content FROM tidemark_rows.replies
              WHERE session_id = $1 ORDER BY id",
        )
        .bind(session)
        .fetch_all(pool)
        .await
        .map_err(RowsError::db("transcript"))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let id: i64 = row.get("id");
            let state = ReplyState::parse(row.get::<&str, _>("state"));
            let text = match row.get::<Option<String>, _>("content") {
                Some(text) if !self.mutant(RowsMutant::TranscriptReplaysFinishedReplies) => text,
                _ => replay(pool, id).await?,
            };
            out.push(TranscriptReply {
                id,
                state,
                sealed: row.get("sealed"),
                text,
            });
        }
        Ok(out)
    }

    /// How many events name `reply` (its streamed events, until they are swept); for tests and
    /// the harness's observation, on either backend.
    pub async fn count_events_of_reply(&self, reply: i64) -> Result<i64, RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let t = lock(m);
                return Ok(t.events.values().filter(|e| e.reply == Some(reply)).count() as i64);
            }
        };
        sqlx::query_scalar("SELECT count(*) FROM tidemark_rows.events WHERE reply_id = $1")
            .bind(reply)
            .fetch_one(pool)
            .await
            .map_err(RowsError::db("count"))
    }

    /// How many events (streamed or not) `session` has; for tests and the harness.
    pub async fn count_events_in_session(&self, session: &str) -> Result<i64, RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let t = lock(m);
                return Ok(t.events.values().filter(|e| e.session == session).count() as i64);
            }
        };
        sqlx::query_scalar("SELECT count(*) FROM tidemark_rows.events WHERE session_id = $1")
            .bind(session)
            .fetch_one(pool)
            .await
            .map_err(RowsError::db("count"))
    }

    /// The sweep of SR-2: removes streamed events whose reply was finished, sealed or deleted at
    /// least a day ago, in batches. Returns how many it removed.
    pub async fn forget_streamed(
        &self,
        now: Timestamp,
        cfg: &ReapConfig,
    ) -> Result<u64, RowsError> {
        if self.mutant(RowsMutant::StreamedSweptByAge) {
            return self
                .delete_batches(
                    BatchSql::Plain(MUTANT_STREAMED_BY_AGE_SQL),
                    |t, now, n| {
                        let expired = |e: &memory::Event| {
                            e.reply.is_some() && e.created_at_ms.saturating_add(DAY_MS) <= now
                        };
                        delete_batch(&mut t.events, n, |_, e| expired(e), |id, _| *id)
                    },
                    now,
                    cfg,
                    "forget streamed",
                )
                .await;
        }
        if self.mutant(RowsMutant::ChatEventsSweptWithReplies) {
            return self
                .delete_batches(
                    BatchSql::Plain(MUTANT_CHAT_EVENTS_SQL),
                    |t, now, n| {
                        let expired = |e: &memory::Event| match e.forget_after_ms {
                            Some(f) => f <= now,
                            None => {
                                e.reply.is_none()
                                    && e.kind.starts_with("chat.")
                                    && e.created_at_ms.saturating_add(DAY_MS) <= now
                            }
                        };
                        delete_batch(&mut t.events, n, |_, e| expired(e), |id, _| *id)
                    },
                    now,
                    cfg,
                    "forget streamed",
                )
                .await;
        }
        self.delete_batches(
            BatchSql::Keyset {
                sql: FORGET_STREAMED_SQL,
                first_id: "-9223372036854775808",
            },
            forget_streamed_batch,
            now,
            cfg,
            "forget streamed",
        )
        .await
    }
}

/// [`FORGET_STREAMED_SQL`] in memory: stamped events whose day is over, earliest first.
fn forget_streamed_batch(t: &mut Tables, now: i64, limit: usize) -> u64 {
    delete_batch(
        &mut t.events,
        limit,
        |_, e| e.forget_after_ms.is_some_and(|f| f <= now),
        |id, e| (e.forget_after_ms, *id),
    )
}

/// One batch of [`RowsStore::forget_streamed`] (a keyset batch, `batch::BatchSql::Keyset`):
/// `$1` is now, `$2` the batch size, `$3`/`$4` the key of the last event the previous batch
/// removed. Only stamped events are in the partial index `(forget_after_ms, id)`, read in its
/// own order from where the last batch stopped, so unfinished replies' events and removed rows
/// cost nothing to pass over and no batch sorts. `SKIP LOCKED`: a row a writer holds is left
/// for a later tick rather than waited on. Ties are broken by id so a tick that dies between
/// batches removed the same rows on every run (and on the in-memory backend).
pub const FORGET_STREAMED_SQL: &str = "WITH gone AS (
  DELETE FROM tidemark_rows.events WHERE id = ANY (ARRAY (
    SELECT id FROM tidemark_rows.events
     WHERE forget_after_ms IS NOT NULL AND forget_after_ms <= $1
       AND (forget_after_ms, id) > ($3, $4::bigint)
     ORDER BY forget_after_ms, id LIMIT $2 FOR UPDATE SKIP LOCKED))
  RETURNING forget_after_ms AS at, id),
last AS (SELECT max(at) AS at FROM gone)
SELECT (SELECT count(*) FROM gone), (SELECT at FROM last),
       (SELECT max(id) FROM gone WHERE at = (SELECT at FROM last))::text";

/// [`RowsMutant::StreamedSweptByAge`]'s batch: streamed events a day after they were written.
const MUTANT_STREAMED_BY_AGE_SQL: &str = "DELETE FROM tidemark_rows.events WHERE id = ANY (ARRAY (
    SELECT id FROM tidemark_rows.events
     WHERE reply_id IS NOT NULL AND created_at_ms + 86400000 <= $1
     ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED))";

/// [`RowsMutant::ChatEventsSweptWithReplies`]'s batch: stamped events whose day is over, and
/// conversation events of a `chat.` kind a day after they were written.
const MUTANT_CHAT_EVENTS_SQL: &str = "DELETE FROM tidemark_rows.events WHERE id = ANY (ARRAY (
    SELECT id FROM tidemark_rows.events
     WHERE forget_after_ms <= $1
        OR (reply_id IS NULL AND kind LIKE 'chat.%' AND created_at_ms + 86400000 <= $1)
     ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED))";

async fn lock_state(
    tx: &mut sqlx::PgConnection,
    reply: i64,
    from: &[ReplyState],
    op: &'static str,
) -> Result<(), RowsError> {
    let state: String =
        sqlx::query_scalar("SELECT state FROM tidemark_rows.replies WHERE id = $1 FOR UPDATE")
            .bind(reply)
            .fetch_optional(&mut *tx)
            .await
            .map_err(RowsError::db(op))?
            .ok_or(RowsError::UnknownReply(reply))?;
    check_state(reply, ReplyState::parse(&state), from, op)
}

/// Whether a reply in `state` may undergo `op`; the refusal names what it wanted.
fn check_state(
    reply: i64,
    state: ReplyState,
    from: &[ReplyState],
    op: &'static str,
) -> Result<(), RowsError> {
    if from.contains(&state) {
        return Ok(());
    }
    Err(RowsError::ReplyState {
        id: reply,
        state: state.as_str(),
        wanted: match op {
            "stream" => "only a reply being written takes streamed events",
            "finish" | "interrupt" => "only a reply being written can be",
            _ => "only an unfinished reply can be sealed",
        },
    })
}

/// Starts the day of a reply's streamed events. `keep_earlier`: a deleted reply's events that
/// were already stamped (it had been finished) keep their earlier time.
async fn stamp_events(
    tx: &mut sqlx::PgConnection,
    reply: i64,
    now: Timestamp,
    keep_earlier: bool,
) -> Result<(), RowsError> {
    let sql = if keep_earlier {
        "UPDATE tidemark_rows.events SET forget_after_ms = coalesce(forget_after_ms, $2)
          WHERE reply_id = $1"
    } else {
        "UPDATE tidemark_rows.events SET forget_after_ms = $2 WHERE reply_id = $1"
    };
    sqlx::query(sql)
        .bind(reply)
        .bind(now.as_millis().saturating_add(STREAMED_GRACE_MS))
        .execute(&mut *tx)
        .await
        .map_err(RowsError::db("stamp events"))?;
    Ok(())
}

/// A reply's text from its events: its `chat.delta` payloads in the order they were streamed.
async fn replay(conn: impl sqlx::PgExecutor<'_>, reply: i64) -> Result<String, RowsError> {
    sqlx::query_scalar(
        "SELECT coalesce(string_agg(payload, '' ORDER BY id), '') FROM tidemark_rows.events
          WHERE reply_id = $1 AND kind = $2",
    )
    .bind(reply)
    .bind(TEXT_KIND)
    .fetch_one(conn)
    .await
    .map_err(RowsError::db("replay"))
}

/// [`stamp_events`] in memory.
fn stamp_in_memory(t: &mut Tables, reply: i64, now: Timestamp, keep_earlier: bool) {
    let at = now.as_millis().saturating_add(STREAMED_GRACE_MS);
    for e in t.events.values_mut().filter(|e| e.reply == Some(reply)) {
        if !(keep_earlier && e.forget_after_ms.is_some()) {
            e.forget_after_ms = Some(at);
        }
    }
}

/// [`replay`] in memory: the payloads of a reply's events of `kind` (every kind if `None`)
/// in the order they were streamed.
fn replay_in_memory(t: &Tables, reply: i64, kind: Option<&str>) -> String {
    t.events
        .values()
        .filter(|e| e.reply == Some(reply) && kind.is_none_or(|k| e.kind == k))
        .map(|e| e.payload.as_str())
        .collect()
}

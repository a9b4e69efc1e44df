//! The PostgreSQL schema of the rows profile (SPEC.md part SR), embedded so a fresh database is
//! brought up by [`migrate`] with no external tool. Every statement is idempotent, so running it
//! on every start is safe.
//!
//! Everything lives in its own PostgreSQL schema, `tidemark_rows`, so it can share a database
//! with the scoped profile (which has its own `sessions` and `workspaces`) without a clash.
//!
//! Decisions recorded here (SPEC part SR):
//! - Every expiring row carries the instant it stops being kept (`expires_at_ms`, or for
//!   streamed events `forget_after_ms`), written when the rule's clock starts. A sweep is then
//!   one range scan of a partial index up to "now": it reads what expired, not what exists (SR-8).
//! - A streamed event's `forget_after_ms` is NULL while its reply is unfinished, so no age makes
//!   it expire; finishing, sealing or deleting the reply stamps it (SR-2).
//! - Kept-on-purpose rows (settled items, held requests, session prompts) have no expiry column
//!   at all: nothing can sweep them by mistake, only a cascade removes them (SR-6).
//!
//! The values its columns name are here too, for every file that reads or writes them: the four
//! stores kept until they expire ([`ExpiringStore`]; each one's sweep is in `expiring.rs`) and a
//! reply's states ([`ReplyState`]).

use sqlx::PgPool;

use super::RowsError;

pub const SCHEMA_SQL: &str = r#"
CREATE SCHEMA IF NOT EXISTS tidemark_rows;

CREATE TABLE IF NOT EXISTS tidemark_rows.workspaces (
    id text PRIMARY KEY
);

-- A session is a conversation: its events, replies, prompts and held requests go with it.
CREATE TABLE IF NOT EXISTS tidemark_rows.sessions (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL REFERENCES tidemark_rows.workspaces (id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS sessions_workspace ON tidemark_rows.sessions (workspace_id);

CREATE TABLE IF NOT EXISTS tidemark_rows.session_prompts (
    id         bigserial PRIMARY KEY,
    session_id text NOT NULL REFERENCES tidemark_rows.sessions (id) ON DELETE CASCADE,
    body       text NOT NULL
);
CREATE INDEX IF NOT EXISTS session_prompts_session ON tidemark_rows.session_prompts (session_id);

-- state: 'writing' (streaming), 'stopped' (interrupted, not yet sealed), 'finished' (finished
-- or sealed; content holds its text). content is NULL until then: the streamed events are the
-- reply's only record meanwhile.
CREATE TABLE IF NOT EXISTS tidemark_rows.replies (
    id             bigserial PRIMARY KEY,
    session_id     text   NOT NULL REFERENCES tidemark_rows.sessions (id) ON DELETE CASCADE,
    state          text   NOT NULL CHECK (state IN ('writing', 'stopped', 'finished')),
    sealed         boolean NOT NULL DEFAULT false,
    content        text   NULL,
    started_at_ms  bigint NOT NULL,
    finished_at_ms bigint NULL,
    CHECK ((state = 'finished') = (content IS NOT NULL AND finished_at_ms IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS replies_session ON tidemark_rows.replies (session_id);

-- reply_id has no foreign key: a streamed event outlives its reply's deletion by a day (SR-2.4),
-- and deleting a reply stamps its events rather than cascading to them.
CREATE TABLE IF NOT EXISTS tidemark_rows.events (
    id              bigserial PRIMARY KEY,
    session_id      text   NOT NULL REFERENCES tidemark_rows.sessions (id) ON DELETE CASCADE,
    reply_id        bigint NULL,
    kind            text   NOT NULL,
    payload         text   NOT NULL,
    created_at_ms   bigint NOT NULL,
    forget_after_ms bigint NULL,
    CHECK (forget_after_ms IS NULL OR reply_id IS NOT NULL)
);
-- The session's cascade finds a session's events without reading the table.
CREATE INDEX IF NOT EXISTS events_session ON tidemark_rows.events (session_id);
-- Finishing a reply stamps its events; the transcript replays them in order.
CREATE INDEX IF NOT EXISTS events_reply ON tidemark_rows.events (reply_id, id)
    WHERE reply_id IS NOT NULL;
-- The sweep of streamed events: only stamped rows are in it, in the order a batch takes them
-- (when they go, then id: a batch breaks ties by id). Without id in the key every batch would
-- sort all the rows expiring at one instant again, and a reap would cost what expired squared
-- (SR-8.1); the index on forget_after_ms alone that did so is dropped.
CREATE INDEX IF NOT EXISTS events_forget_after_id ON tidemark_rows.events (forget_after_ms, id)
    WHERE forget_after_ms IS NOT NULL;
DROP INDEX IF EXISTS tidemark_rows.events_forget_after;

CREATE TABLE IF NOT EXISTS tidemark_rows.tool_invocations (
    id            bigserial PRIMARY KEY,
    session_id    text   NOT NULL REFERENCES tidemark_rows.sessions (id) ON DELETE CASCADE,
    created_at_ms bigint NOT NULL,
    expires_at_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_invocations_expiry_id ON tidemark_rows.tool_invocations (expires_at_ms, id);
DROP INDEX IF EXISTS tidemark_rows.tool_invocations_expiry;
CREATE INDEX IF NOT EXISTS tool_invocations_session ON tidemark_rows.tool_invocations (session_id);

CREATE TABLE IF NOT EXISTS tidemark_rows.trigger_firings (
    id            bigserial PRIMARY KEY,
    trigger_name  text   NOT NULL,
    fired_at_ms   bigint NOT NULL,
    expires_at_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS trigger_firings_expiry_id ON tidemark_rows.trigger_firings (expires_at_ms, id);
DROP INDEX IF EXISTS tidemark_rows.trigger_firings_expiry;

-- Newest is by id (the order snapshots were taken), never by a clock that can jump (SR-5.2).
CREATE TABLE IF NOT EXISTS tidemark_rows.catalog_snapshots (
    id          bigserial PRIMARY KEY,
    taken_at_ms bigint NOT NULL
);

-- A model names the snapshot it was configured from. RESTRICT: a named snapshot cannot be
-- deleted under it, whatever the sweep believes.
CREATE TABLE IF NOT EXISTS tidemark_rows.models (
    id          text PRIMARY KEY,
    snapshot_id bigint NOT NULL REFERENCES tidemark_rows.catalog_snapshots (id) ON DELETE RESTRICT
);
CREATE INDEX IF NOT EXISTS models_snapshot ON tidemark_rows.models (snapshot_id);

-- The four stores kept until they expire (SR-4.3). One shape each, each its own table and index,
-- keyed (expires_at_ms, id) in the order a batch takes its rows, as the events' is.
CREATE TABLE IF NOT EXISTS tidemark_rows.live_sessions (
    id text PRIMARY KEY, expires_at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS live_sessions_expiry_id
    ON tidemark_rows.live_sessions (expires_at_ms, id);
DROP INDEX IF EXISTS tidemark_rows.live_sessions_expiry;
CREATE TABLE IF NOT EXISTS tidemark_rows.refresh_tokens (
    id text PRIMARY KEY, expires_at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS refresh_tokens_expiry_id
    ON tidemark_rows.refresh_tokens (expires_at_ms, id);
DROP INDEX IF EXISTS tidemark_rows.refresh_tokens_expiry;
CREATE TABLE IF NOT EXISTS tidemark_rows.webhook_deliveries (
    id text PRIMARY KEY, expires_at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS webhook_deliveries_expiry_id
    ON tidemark_rows.webhook_deliveries (expires_at_ms, id);
DROP INDEX IF EXISTS tidemark_rows.webhook_deliveries_expiry;
CREATE TABLE IF NOT EXISTS tidemark_rows.breaker_sightings (
    id text PRIMARY KEY, expires_at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS breaker_sightings_expiry_id
    ON tidemark_rows.breaker_sightings (expires_at_ms, id);
DROP INDEX IF EXISTS tidemark_rows.breaker_sightings_expiry;

-- Kept on purpose (SR-6): no expiry column, no sweep.
CREATE TABLE IF NOT EXISTS tidemark_rows.action_items (
    id            bigserial PRIMARY KEY,
    workspace_id  text   NOT NULL REFERENCES tidemark_rows.workspaces (id) ON DELETE CASCADE,
    settled_at_ms bigint NULL
);
CREATE INDEX IF NOT EXISTS action_items_workspace ON tidemark_rows.action_items (workspace_id);

CREATE TABLE IF NOT EXISTS tidemark_rows.held_requests (
    id         bigserial PRIMARY KEY,
    session_id text   NOT NULL REFERENCES tidemark_rows.sessions (id) ON DELETE CASCADE,
    item_id    bigint NULL REFERENCES tidemark_rows.action_items (id) ON DELETE CASCADE,
    held_at_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS held_requests_session ON tidemark_rows.held_requests (session_id);
CREATE INDEX IF NOT EXISTS held_requests_item ON tidemark_rows.held_requests (item_id)
    WHERE item_id IS NOT NULL;
"#;

/// Brings a database up to the schema. Idempotent; serialised with an advisory lock so two
/// processes starting together do not race on `CREATE ... IF NOT EXISTS` (which is not safe
/// against a concurrent creator in PostgreSQL).
pub async fn migrate(pool: &PgPool) -> Result<(), RowsError> {
    let mut tx = pool.begin().await.map_err(RowsError::db("migrate"))?;
    sqlx::query("SELECT pg_advisory_xact_lock(7461647)")
        .execute(&mut *tx)
        .await
        .map_err(RowsError::db("migrate"))?;
    sqlx::raw_sql(SCHEMA_SQL)
        .execute(&mut *tx)
        .await
        .map_err(RowsError::db("migrate"))?;
    tx.commit().await.map_err(RowsError::db("migrate"))?;
    Ok(())
}

/// The stores whose rows carry their own expiry (SR-4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExpiringStore {
    LiveSessions,
    RefreshTokens,
    WebhookDeliveries,
    BreakerSightings,
}

impl ExpiringStore {
    pub const ALL: [ExpiringStore; 4] = [
        ExpiringStore::LiveSessions,
        ExpiringStore::RefreshTokens,
        ExpiringStore::WebhookDeliveries,
        ExpiringStore::BreakerSightings,
    ];

    pub fn table(self) -> &'static str {
        match self {
            ExpiringStore::LiveSessions => "live_sessions",
            ExpiringStore::RefreshTokens => "refresh_tokens",
            ExpiringStore::WebhookDeliveries => "webhook_deliveries",
            ExpiringStore::BreakerSightings => "breaker_sightings",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyState {
    /// Streaming; the text is its `chat.delta` events.
    Writing,
    /// Interrupted and not yet sealed; the text is still its events.
    Stopped,
    /// Finished or sealed; the text is the row's.
    Finished,
}

impl ReplyState {
    pub(crate) fn parse(s: &str) -> ReplyState {
        match s {
            "writing" => ReplyState::Writing,
            "stopped" => ReplyState::Stopped,
            _ => ReplyState::Finished,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            ReplyState::Writing => "writing",
            ReplyState::Stopped => "stopped",
            ReplyState::Finished => "finished",
        }
    }
}

//! The PostgreSQL schema of the scoped profile, embedded so a fresh database is brought up by
//! [`migrate`] with no external tool. Every statement is idempotent (`IF NOT EXISTS`,
//! `CREATE OR REPLACE`), so running it on every start is safe.
//!
//! Decisions recorded here (SPEC part SC):
//! - "Nothing queued, parked or waiting" is data: one row in `session_waits` per queued message,
//!   parked turn or scheduled wake. A session with any row is never swept, however idle.
//! - Time is handed in. The deletion trigger cannot call our clock, so the deleting transaction
//!   sets `tidemark.now_ms` (`SET LOCAL`) and the trigger reads it.
//! - `storage_deletions` is written ONLY by triggers, so a cascade (workspace -> agents ->
//!   sessions) records every prefix. `storage_deletion_records` is the proof an obligation was
//!   met: it is written in the same transaction that marks the obligation done, after the objects
//!   are gone, so a crash in between leaves the obligation pending and a re-run completes both.

use sqlx::PgPool;

use super::error::ScopedError;

pub const SCHEMA_SQL: &str = r#"
CREATE TABLE IF NOT EXISTS workspaces (
    id               text PRIMARY KEY,
    agent_access     text NULL CHECK (agent_access IN ('none', 'read', 'read-write')),
    workspace_access text NULL CHECK (workspace_access IN ('none', 'read', 'read-write'))
);

CREATE TABLE IF NOT EXISTS agents (
    workspace_id     text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id               text NOT NULL,
    agent_access     text NULL CHECK (agent_access IN ('none', 'read', 'read-write')),
    workspace_access text NULL CHECK (workspace_access IN ('none', 'read', 'read-write')),
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE IF NOT EXISTS sessions (
    workspace_id      text   NOT NULL,
    agent_id          text   NOT NULL,
    id                text   NOT NULL,
    last_activity_ms  bigint NOT NULL,
    -- Set when the sweep emptied the session's files; cleared by any later activity, so a
    -- session is examined once per idle stretch, not on every sweep forever.
    files_swept_at_ms bigint NULL,
    -- Set when a sweep deleted some of the session's files and failed on others. Until the
    -- next sweep finishes the job, the session's next operation deletes the rest first, so
    -- activity arriving between the two never brings expired files back (SC-5.5).
    sweep_unfinished_at_ms bigint NULL,
    PRIMARY KEY (workspace_id, agent_id, id),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, id) ON DELETE CASCADE
);

-- The sweep's candidate scan: only sessions not yet swept, ordered by last activity, so its
-- cost follows what has expired rather than how many sessions exist.
-- Databases made before the column existed.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS sweep_unfinished_at_ms bigint NULL;
-- When the session was created: read only by the count-by-creation mutant (SPEC SL-2.2 counts
-- by last activity).
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS created_at_ms bigint NULL;

-- When the host closed the session (SPEC SL-3): the policy sweep takes it close_grace_days
-- after, unless activity reopened it first (activity clears it); a repeated close keeps it.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS closed_at_ms bigint NULL;
-- The close sweep's candidate scan: closed sessions not yet swept, by close time, so its cost
-- follows what is closed rather than how many sessions exist.
CREATE INDEX IF NOT EXISTS sessions_close_candidates
    ON sessions (closed_at_ms)
    WHERE closed_at_ms IS NOT NULL AND files_swept_at_ms IS NULL;

-- Count policies (SPEC SL-2): an agent keeps its last `keep_last` sessions' files.
CREATE TABLE IF NOT EXISTS agent_session_counts (
    workspace_id text    NOT NULL,
    agent_id     text    NOT NULL,
    keep_last    integer NOT NULL CHECK (keep_last >= 1),
    PRIMARY KEY (workspace_id, agent_id),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, id) ON DELETE CASCADE
);

-- A workspace's own idle TTL (SPEC SL-5.1), replacing the deployment's for its sessions; gone
-- with its workspace.
CREATE TABLE IF NOT EXISTS workspace_retention (
    workspace_id          text    PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    session_file_ttl_days integer NOT NULL CHECK (session_file_ttl_days BETWEEN 1 AND 36500)
);

-- The session backstop of the lifecycle configuration last put on the bucket: a workspace's TTL
-- must stay shorter than it (SPEC SL-5.2). One row at most.
CREATE TABLE IF NOT EXISTS lifecycle_applied (
    singleton             boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    session_backstop_days integer NOT NULL
);

CREATE INDEX IF NOT EXISTS sessions_sweep_candidates
    ON sessions (last_activity_ms)
    WHERE files_swept_at_ms IS NULL;

-- Sessions a sweep left unfinished (SC-5.5): few, and every sweep finishes them first whatever
-- swept them (SPEC SL-2.4), so that scan reads only them.
CREATE INDEX IF NOT EXISTS sessions_sweep_unfinished
    ON sessions (workspace_id, agent_id, id)
    WHERE sweep_unfinished_at_ms IS NOT NULL;

CREATE TABLE IF NOT EXISTS session_waits (
    workspace_id text NOT NULL,
    agent_id     text NOT NULL,
    session_id   text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('queued', 'parked', 'waiting')),
    wait_id      text NOT NULL,
    PRIMARY KEY (workspace_id, agent_id, session_id, kind, wait_id),
    FOREIGN KEY (workspace_id, agent_id, session_id)
        REFERENCES sessions (workspace_id, agent_id, id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS storage_deletions (
    id              bigserial PRIMARY KEY,
    prefix          text   NOT NULL,
    entity_kind     text   NOT NULL CHECK (entity_kind IN ('session', 'agent', 'workspace')),
    entity_id       text   NOT NULL,
    requested_at_ms bigint NULL,
    done_at_ms      bigint NULL
);

CREATE INDEX IF NOT EXISTS storage_deletions_pending
    ON storage_deletions (id)
    WHERE done_at_ms IS NULL;

CREATE TABLE IF NOT EXISTS storage_deletion_records (
    id              bigserial PRIMARY KEY,
    deletion_id     bigint NOT NULL REFERENCES storage_deletions (id),
    prefix          text   NOT NULL,
    objects_deleted bigint NOT NULL,
    completed_at_ms bigint NOT NULL
);

CREATE INDEX IF NOT EXISTS storage_deletion_records_prefix
    ON storage_deletion_records (prefix);

CREATE OR REPLACE FUNCTION tidemark_now_ms() RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT NULLIF(current_setting('tidemark.now_ms', true), '')::bigint
$$;

-- Harness hook for the app-recorded-deletions mutant only: when the deleting transaction sets
-- tidemark.app_records = 'on', the triggers stand down and application code records instead.
CREATE OR REPLACE FUNCTION tidemark_triggers_off() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('tidemark.app_records', true), '') = 'on'
$$;

-- The deletion triggers are statement-level, reading the rows a statement (and every cascade it
-- sets off) removed from its transition table, so each table's rows are recorded in a stated
-- order, their key's by bytes, whatever order the rows lie in on disk: row-level triggers fire
-- in the scan's (physical) order, so a cascade's obligation ids would follow where updates had
-- moved the rows, and differ from the in-memory store's (SPEC SL-4's proofs name them). One
-- statement's cascade fires each table's trigger once: the workspace's rows first, then its
-- agents', then their sessions'.
CREATE OR REPLACE FUNCTION tidemark_record_session_deletion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF tidemark_triggers_off() THEN RETURN NULL; END IF;
    INSERT INTO storage_deletions (prefix, entity_kind, entity_id, requested_at_ms)
    SELECT 'sessions/' || o.workspace_id || '/' || o.agent_id || '/' || o.id || '/',
           'session', o.id, tidemark_now_ms()
      FROM gone_sessions o
     ORDER BY o.workspace_id COLLATE "C", o.agent_id COLLATE "C", o.id COLLATE "C";
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION tidemark_record_agent_deletion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF tidemark_triggers_off() THEN RETURN NULL; END IF;
    INSERT INTO storage_deletions (prefix, entity_kind, entity_id, requested_at_ms)
    SELECT 'agents/' || o.workspace_id || '/' || o.id || '/', 'agent', o.id, tidemark_now_ms()
      FROM gone_agents o
     ORDER BY o.workspace_id COLLATE "C", o.id COLLATE "C";
    RETURN NULL;
END $$;

-- A workspace's deletion also removes its skill versions: "delete everything for this
-- customer" is an obligation, and skills are immutable, not immortal (SPEC SC decision).
CREATE OR REPLACE FUNCTION tidemark_record_workspace_deletion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF tidemark_triggers_off() THEN RETURN NULL; END IF;
    INSERT INTO storage_deletions (prefix, entity_kind, entity_id, requested_at_ms)
    SELECT p.prefix, 'workspace', o.id, tidemark_now_ms()
      FROM gone_workspaces o,
           LATERAL (VALUES (1, 'workspaces/' || o.id || '/'), (2, 'skills/' || o.id || '/'))
               AS p (n, prefix)
     ORDER BY o.id COLLATE "C", p.n;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS sessions_record_deletion ON sessions;
CREATE TRIGGER sessions_record_deletion AFTER DELETE ON sessions
    REFERENCING OLD TABLE AS gone_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION tidemark_record_session_deletion();
DROP TRIGGER IF EXISTS agents_record_deletion ON agents;
CREATE TRIGGER agents_record_deletion AFTER DELETE ON agents
    REFERENCING OLD TABLE AS gone_agents
    FOR EACH STATEMENT EXECUTE FUNCTION tidemark_record_agent_deletion();
DROP TRIGGER IF EXISTS workspaces_record_deletion ON workspaces;
CREATE TRIGGER workspaces_record_deletion AFTER DELETE ON workspaces
    REFERENCING OLD TABLE AS gone_workspaces
    FOR EACH STATEMENT EXECUTE FUNCTION tidemark_record_workspace_deletion();

-- Erasure obligations (SPEC SL-4): the subject (a workspace, or an agent of one: agent_id),
-- when it was requested, its deadline, and when it was met (null while pending). Recorded in
-- the transaction that deletes the subject's row.
CREATE TABLE IF NOT EXISTS erasure_obligations (
    id              bigserial PRIMARY KEY,
    workspace_id    text   NOT NULL,
    agent_id        text   NULL,
    requested_at_ms bigint NOT NULL,
    deadline_ms     bigint NOT NULL,
    done_at_ms      bigint NULL
);

CREATE INDEX IF NOT EXISTS erasure_obligations_pending
    ON erasure_obligations (id)
    WHERE done_at_ms IS NULL;

-- The proof (SL-4.3): every key an erasure's sweep deletes is written down here (committed)
-- before the deletion, and marked deleted, with the obligation met, in one transaction after.
-- No foreign key: a sweep writes keys down while it holds its obligation's row, and the key
-- share lock a foreign key check takes would wait for it.
CREATE TABLE IF NOT EXISTS erasure_proofs (
    erasure_id    bigint NOT NULL,
    key           text   NOT NULL,
    written_at_ms bigint NOT NULL,
    deleted_at_ms bigint NULL,
    PRIMARY KEY (erasure_id, key)
);

-- The deletion obligations (SC-6) an erasure meets with itself: SC-6's sweep passes them by.
ALTER TABLE storage_deletions ADD COLUMN IF NOT EXISTS erasure_id bigint NULL;
"#;

/// The comment `migrate` leaves on the `workspaces` table: the schema this database was brought
/// up to. A database carrying this build's marker is up to date, so [`migrate`] skips the DDL
/// (re-running it costs tens of milliseconds, per scenario and per explored seed); a harness
/// reusing databases compares it to tell a database left by another version.
pub fn schema_marker() -> String {
    // FNV-1a: stable across builds and platforms, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in SCHEMA_SQL.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("tidemark scoped schema {h:016x}")
}

/// The schema marker a database carries (`None` before the first [`migrate`]).
pub async fn schema_marker_of(
    conn: impl sqlx::PgExecutor<'_>,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT obj_description(to_regclass('public.workspaces'), 'pg_class')")
        .fetch_one(conn)
        .await
}

/// Brings a database up to the schema. Idempotent; a database already carrying this build's
/// [`schema_marker`] is left alone. Serialised with an advisory lock so two processes starting
/// together do not race on `CREATE OR REPLACE`.
pub async fn migrate(pool: &PgPool) -> Result<(), ScopedError> {
    let mut tx = pool.begin().await.map_err(ScopedError::db("migrate"))?;
    sqlx::query("SELECT pg_advisory_xact_lock(7461646)")
        .execute(&mut *tx)
        .await
        .map_err(ScopedError::db("migrate"))?;
    let marker = schema_marker();
    let found = schema_marker_of(&mut *tx)
        .await
        .map_err(ScopedError::db("migrate"))?;
    if found.as_deref() == Some(marker.as_str()) {
        tx.commit().await.map_err(ScopedError::db("migrate"))?;
        return Ok(());
    }
    sqlx::raw_sql(SCHEMA_SQL)
        .execute(&mut *tx)
        .await
        .map_err(ScopedError::db("migrate"))?;
    // The marker is built from hex digits and fixed words only, so quoting it is enough.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "COMMENT ON TABLE workspaces IS '{marker}'"
    )))
    .execute(&mut *tx)
    .await
    .map_err(ScopedError::db("migrate"))?;
    tx.commit().await.map_err(ScopedError::db("migrate"))?;
    Ok(())
}

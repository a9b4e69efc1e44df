"""This implementation's PostgreSQL schema, and the read-only ledger queries it declares in
`init_ok` (SPEC.md SC-6.6, PROTOCOL.md "The ledger").

The names are this implementation's own, deliberately not SC-6.6's defaults
(`storage_deletions`, `storage_deletion_records`), so a run proves the harness reads the ledger
through the declaration: obligations are `erasure_orders` (pending while `erased_ms` is null),
records are `erasure_receipts`. The erasure obligations of part SL (SL-4.7, which has no
default) are `subject_erasures` and their proofs `subject_erasure_keys`, read through `ERASURE`.
"""

import layout

# Read by the harness, never by this program's logic: one row per obligation and per record.
LEDGER = {
    "obligations": "SELECT key_prefix AS prefix, erased_ms IS NULL AS pending FROM erasure_orders",
    "records": "SELECT key_prefix AS prefix FROM erasure_receipts",
}

# SL-4.7: the erasure ledger, read by the harness through these (there is no default). A proof row
# is a key recorded deleted; one only written down (SL-4.3) is no part of it.
ERASURE = {
    "obligations": "SELECT erasure_id::text AS obligation, subject, deadline_ms, done_ms AS done_at_ms"
                   " FROM subject_erasures",
    "proofs": "SELECT erasure_id::text AS obligation, object_key AS key, deleted_ms AS deleted_at_ms"
              " FROM subject_erasure_keys WHERE deleted_ms IS NOT NULL",
}

# The harness's clock reaches the AFTER DELETE triggers through this transaction-local setting,
# so an obligation's time is the request's now_ms, never the database server's clock.
NOW_SETTING = "pyscoped.now_ms"

TABLES = """
CREATE TABLE IF NOT EXISTS tenant_workspaces (
    ws_key           text PRIMARY KEY,
    agent_access     text CHECK (agent_access IN ('none', 'read', 'read-write')),
    workspace_access text CHECK (workspace_access IN ('none', 'read', 'read-write'))
);
CREATE TABLE IF NOT EXISTS tenant_agents (
    ws_key           text NOT NULL REFERENCES tenant_workspaces ON DELETE CASCADE,
    agent_key        text NOT NULL,
    agent_access     text CHECK (agent_access IN ('none', 'read', 'read-write')),
    workspace_access text CHECK (workspace_access IN ('none', 'read', 'read-write')),
    PRIMARY KEY (ws_key, agent_key)
);
-- SC-5.1, SC-5.4, SC-5.5: last activity, the swept mark, and the unfinished-sweep mark.
CREATE TABLE IF NOT EXISTS chat_sessions (
    ws_key              text NOT NULL,
    agent_key           text NOT NULL,
    chat_key            text NOT NULL,
    active_ms           bigint NOT NULL,
    files_cleared_ms    bigint,
    clear_unfinished_ms bigint,
    closed_ms           bigint,  -- SL-3: the host's first close since the last activity
    PRIMARY KEY (ws_key, agent_key, chat_key),
    FOREIGN KEY (ws_key, agent_key) REFERENCES tenant_agents ON DELETE CASCADE
);
-- SC-5.4: the sweep's candidates come through this partial index, so swept sessions cost nothing.
CREATE INDEX IF NOT EXISTS chat_sessions_idle ON chat_sessions (active_ms)
    WHERE files_cleared_ms IS NULL;
-- SL-3.1: closed sessions still holding files, so the sweep finds the closes it owes cheaply.
CREATE INDEX IF NOT EXISTS chat_sessions_closed ON chat_sessions (closed_ms)
    WHERE files_cleared_ms IS NULL AND closed_ms IS NOT NULL;
-- SC-5.2: something queued, parked or waiting keeps a session from the sweep.
CREATE TABLE IF NOT EXISTS chat_holds (
    ws_key    text NOT NULL,
    agent_key text NOT NULL,
    chat_key  text NOT NULL,
    hold_kind text NOT NULL CHECK (hold_kind IN ('queued', 'parked', 'waiting')),
    hold_id   text NOT NULL,
    PRIMARY KEY (ws_key, agent_key, chat_key, hold_kind, hold_id),
    FOREIGN KEY (ws_key, agent_key, chat_key) REFERENCES chat_sessions ON DELETE CASCADE
);
-- SL-2: an agent's count policy, keep the files of its last N sessions by last activity. Its own
-- table, not a column of tenant_agents: creating the agent again replaces its settings (SC-3.2)
-- and keeps its policy; deleting the agent ends it.
CREATE TABLE IF NOT EXISTS agent_keep_counts (
    ws_key    text NOT NULL,
    agent_key text NOT NULL,
    keep_last integer NOT NULL CHECK (keep_last BETWEEN 1 AND 100000),
    PRIMARY KEY (ws_key, agent_key),
    FOREIGN KEY (ws_key, agent_key) REFERENCES tenant_agents ON DELETE CASCADE
);
-- SL-2.2: the count ranks an agent's sessions that still keep files by last activity.
CREATE INDEX IF NOT EXISTS chat_sessions_ranked ON chat_sessions (ws_key, agent_key, active_ms DESC)
    WHERE files_cleared_ms IS NULL AND clear_unfinished_ms IS NULL;
-- SL-5.1: a workspace's own idle TTL, the host's request apart from the workspace's settings, so
-- creating the workspace again (SC-3.2) keeps it and deleting the workspace removes it.
CREATE TABLE IF NOT EXISTS workspace_retention (
    ws_key   text PRIMARY KEY REFERENCES tenant_workspaces ON DELETE CASCADE,
    ttl_days integer NOT NULL CHECK (ttl_days BETWEEN 1 AND 36500)
);
-- SL-5.2: the session backstop of the last lifecycle configuration put on the bucket (null: none
-- yet, SC-7.1's default). One row, locked by whoever reads the bound or changes it.
CREATE TABLE IF NOT EXISTS bucket_lifecycle (
    only_row              boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    session_backstop_days integer
);
INSERT INTO bucket_lifecycle DEFAULT VALUES ON CONFLICT DO NOTHING;
-- SL-4: erasure obligations (done while done_ms is set) and their proofs: each key written down
-- before it is deleted (listed_ms), recorded deleted after (deleted_ms). agent_key is null for a
-- workspace's erasure; subject is SL-4.7's spelling, <ws> or <ws>/<agent>.
CREATE TABLE IF NOT EXISTS subject_erasures (
    erasure_id   bigserial PRIMARY KEY,
    subject      text NOT NULL,
    ws_key       text NOT NULL,
    agent_key    text,
    requested_ms bigint NOT NULL,
    deadline_ms  bigint NOT NULL,
    done_ms      bigint
);
CREATE INDEX IF NOT EXISTS subject_erasures_pending ON subject_erasures (ws_key, agent_key)
    WHERE done_ms IS NULL;
CREATE TABLE IF NOT EXISTS subject_erasure_keys (
    erasure_id bigint NOT NULL REFERENCES subject_erasures,
    object_key text NOT NULL,
    listed_ms  bigint NOT NULL,
    deleted_ms bigint,
    PRIMARY KEY (erasure_id, object_key)
);
-- SC-6.1 to SC-6.5: deletion obligations, kept once done as the record of what was asked. One an
-- erasure holds (erasure_id, SL-4.2) is met by that erasure, never by SC-6's own sweep.
CREATE TABLE IF NOT EXISTS erasure_orders (
    order_id   bigserial PRIMARY KEY,
    key_prefix text NOT NULL,
    ordered_ms bigint NOT NULL,
    erased_ms  bigint,
    erasure_id bigint REFERENCES subject_erasures
);
CREATE INDEX IF NOT EXISTS erasure_orders_pending ON erasure_orders (order_id)
    WHERE erased_ms IS NULL AND erasure_id IS NULL;
CREATE INDEX IF NOT EXISTS erasure_orders_held ON erasure_orders (erasure_id)
    WHERE erased_ms IS NULL AND erasure_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS erasure_receipts (
    receipt_id     bigserial PRIMARY KEY,
    order_id       bigint NOT NULL REFERENCES erasure_orders,
    key_prefix     text NOT NULL,
    objects_erased bigint NOT NULL,
    erased_ms      bigint NOT NULL
);
"""


def _trigger(kind, table):
    """SC-6.1: a deleted row records its prefixes itself, so rows removed by ON DELETE CASCADE are
    recorded too and application code never records them."""
    values = ",\n            ".join(
        f"({expr}, current_setting('{NOW_SETTING}')::bigint)" for expr in layout.sql_prefixes(kind, "OLD")
    )
    function = f"pyscoped_{kind}_erased"
    return f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO erasure_orders (key_prefix, ordered_ms) VALUES
            {values};
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER {function} AFTER DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {function}();
"""


def install(conn):
    """Create the schema, or find it after a restart. An advisory lock serialises two processes
    that start on one empty database."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(5301)")
        conn.execute(TABLES)
        for kind, table in (("session", "chat_sessions"), ("agent", "tenant_agents"),
                            ("workspace", "tenant_workspaces")):
            conn.execute(_trigger(kind, table))

"""The tables of the rows example, and the read-only queries it declares in init_ok so the
harness can count what remains (PROTOCOL.md, "The rows profile": "What the harness reads
itself"). None of the reference's names is used: the harness can only count these tables through
the declared queries.

Every rule of SPEC part SR is either a column written when its clock starts (SR-1.2: an
expiry is stored, never recomputed) or a foreign key's ON DELETE CASCADE (SR-2.7, SR-6).
"""

DDL = """
CREATE TABLE IF NOT EXISTS tenant (
    name text PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS convo (
    name text PRIMARY KEY,
    tenant text NOT NULL REFERENCES tenant ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS convo_tenant ON convo (tenant);
CREATE TABLE IF NOT EXISTS convo_prompt (
    id bigserial PRIMARY KEY,
    convo text NOT NULL REFERENCES convo ON DELETE CASCADE,
    body text NOT NULL
);
CREATE INDEX IF NOT EXISTS convo_prompt_convo ON convo_prompt (convo);

-- A reply. `final_text` is null until it is finished or sealed (SR-2.3).
CREATE TABLE IF NOT EXISTS answer (
    seq bigserial PRIMARY KEY,
    convo text NOT NULL REFERENCES convo ON DELETE CASCADE,
    phase text NOT NULL CHECK (phase IN ('writing', 'stopped', 'finished')),
    final_text text,
    by_seal boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS answer_convo ON answer (convo);

-- Streamed and conversation events together. `answer_seq` names the reply of a streamed event;
-- it is deliberately not a foreign key: a deleted reply's events outlive it by a day (SR-2.4).
-- `forget_at_ms` is null while no rule lets the event go (SR-2.3) and is the end of its day
-- once its reply ended; only the sweep reads it, through the partial index.
CREATE TABLE IF NOT EXISTS convo_event (
    seq bigserial PRIMARY KEY,
    convo text NOT NULL REFERENCES convo ON DELETE CASCADE,
    answer_seq bigint,
    kind text NOT NULL,
    payload text NOT NULL,
    at_ms bigint NOT NULL,
    forget_at_ms bigint
);
CREATE INDEX IF NOT EXISTS convo_event_convo ON convo_event (convo);
CREATE INDEX IF NOT EXISTS convo_event_answer ON convo_event (answer_seq) WHERE answer_seq IS NOT NULL;
CREATE INDEX IF NOT EXISTS convo_event_forget ON convo_event (forget_at_ms) WHERE forget_at_ms IS NOT NULL;

CREATE TABLE IF NOT EXISTS tool_call (
    seq bigserial PRIMARY KEY,
    convo text NOT NULL REFERENCES convo ON DELETE CASCADE,
    gone_at_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_call_convo ON tool_call (convo);
CREATE INDEX IF NOT EXISTS tool_call_gone ON tool_call (gone_at_ms);

CREATE TABLE IF NOT EXISTS trigger_fire (
    seq bigserial PRIMARY KEY,
    trigger_name text NOT NULL,
    gone_at_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS trigger_fire_gone ON trigger_fire (gone_at_ms);

-- Snapshots: newest by `seq` (taking order, SR-5.2), never by `taken_ms`.
CREATE TABLE IF NOT EXISTS catalog_snap (
    seq bigserial PRIMARY KEY,
    taken_ms bigint NOT NULL
);
-- No cascade: a named snapshot is never deleted (SR-5.4); the sweep leaves it out.
CREATE TABLE IF NOT EXISTS model_pin (
    model text PRIMARY KEY,
    snap_seq bigint NOT NULL REFERENCES catalog_snap
);
CREATE INDEX IF NOT EXISTS model_pin_snap ON model_pin (snap_seq);

CREATE TABLE IF NOT EXISTS todo_item (
    seq bigserial PRIMARY KEY,
    tenant text NOT NULL REFERENCES tenant ON DELETE CASCADE,
    settled_ms bigint
);
CREATE INDEX IF NOT EXISTS todo_item_tenant ON todo_item (tenant);
CREATE TABLE IF NOT EXISTS parked_request (
    seq bigserial PRIMARY KEY,
    convo text NOT NULL REFERENCES convo ON DELETE CASCADE,
    item_seq bigint REFERENCES todo_item ON DELETE CASCADE,
    parked_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS parked_request_convo ON parked_request (convo);
CREATE INDEX IF NOT EXISTS parked_request_item ON parked_request (item_seq);
"""

# SR-4: the four stores, each its own table (and its own sweep, SR-4.3), by the protocol's
# store names.
STORES = {
    "live_sessions": "kv_live_login",
    "refresh_tokens": "kv_refresh",
    "webhook_deliveries": "kv_hook_delivery",
    "breaker_sightings": "kv_breaker_seen",
}

for _table in STORES.values():
    DDL += f"""
CREATE TABLE IF NOT EXISTS {_table} (
    key text PRIMARY KEY,
    gone_at_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS {_table}_gone ON {_table} (gone_at_ms);
"""

# The ids this program makes, as the protocol carries them: a prefix and the row's sequence
# number. The harness never looks inside them.
PREFIX = {"answer": "ans-", "catalog_snap": "snap-", "todo_item": "todo-", "parked_request": "park-"}

# What the harness counts with (declared in init_ok as `rows`), by the protocol's table names.
_OWN = {
    "workspaces": "tenant",
    "sessions": "convo",
    "session_prompts": "convo_prompt",
    "replies": "answer",
    "events": "convo_event",
    "tool_invocations": "tool_call",
    "trigger_firings": "trigger_fire",
    "catalog_snapshots": "catalog_snap",
    "models": "model_pin",
    "action_items": "todo_item",
    "held_requests": "parked_request",
    **STORES,
}
QUERIES = {
    "tables": {name: f"SELECT count(*) AS n FROM {table}" for name, table in _OWN.items()},
    # $1 is the reply's id exactly as this program made it ("ans-7"), compared as text.
    "streamed_events_of": f"SELECT count(*) AS n FROM convo_event WHERE '{PREFIX['answer']}' || answer_seq::text = $1",
    "events_in": "SELECT count(*) AS n FROM convo_event WHERE convo = $1",
}


def install(conn):
    with conn.transaction():
        conn.execute(DDL)

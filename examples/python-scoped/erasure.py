"""Erasure obligations (SPEC.md SL-4, capability `erasure_obligations`): "delete everything for
this customer", with a deadline and a proof a person can read afterwards.

A request deletes the subject's row (a workspace, or one agent) as SC-6 does, so the triggers
record its prefixes, and records the obligation in the same transaction (SL-4.1); every deletion
obligation pending under the subject's prefixes then belongs to the erasure (SL-4.2), which
meets it itself and SC-6's sweep passes it by. The sweep works in two transactions per chunk of
erasures (SL-4.3): the keys it found are written down and committed, then deleted, then recorded
deleted (with the erasure and its deletion obligations marked done once nothing is left) in one
transaction. A crash between the two leaves the keys written down and the obligation pending;
the next sweep deletes them again (deleting a missing key succeeds) and records them.

The claim on an erasure has to outlive the first transaction, so it is a session-level advisory
lock (`pg_try_advisory_lock`) rather than a row lock: a second sweep passes by an erasure another
holds (SL-1.3), and a crashed process's claim goes with its connection.
"""

import layout
import schema
from layout import Refused
from store import delete_many

CLAIM_CHUNK = 100
# The advisory lock of erasure N is (LOCK_SPACE << 32) + N, apart from schema.install's own.
LOCK_SPACE = 5302
# Creating a subject and erasing it take this transaction lock on the workspace id, so a create
# never lands between an erasure's check and its commit (SL-4.6).
SUBJECT_LOCK = "SELECT pg_advisory_xact_lock(5303, hashtext(%s))"


def subject_of(ws, agent):
    """SL-4.7's spelling: `<ws>` for a workspace, `<ws>/<agent>` for an agent."""
    return ws if agent is None else f"{ws}/{agent}"


def refuse_if_pending(conn, ws, agent=None):
    """SL-4.6: creating a workspace or an agent whose erasure is pending is `erasure_pending`.
    Runs inside the creating transaction, after SUBJECT_LOCK."""
    conn.execute(SUBJECT_LOCK, (ws,))
    if agent is None:
        pending = conn.execute("SELECT 1 FROM subject_erasures WHERE ws_key = %s AND agent_key IS NULL"
                               " AND done_ms IS NULL LIMIT 1", (ws,)).fetchone()
    else:
        pending = conn.execute("SELECT 1 FROM subject_erasures WHERE ws_key = %s AND agent_key = %s"
                               " AND done_ms IS NULL LIMIT 1", (ws, agent)).fetchone()
    if pending is not None:
        raise Refused("erasure_pending", f"{subject_of(ws, agent)} is being erased; its id is free once the "
                      "erasure is met")


def deadline_of(body, now_ms):
    """SL-1.4, SL-4.4: a deadline is milliseconds since the epoch, at or after the request's now."""
    deadline = body.get("deadline_ms")
    if isinstance(deadline, bool) or not isinstance(deadline, int):
        raise Refused("invalid_policy", f"an erasure's deadline is milliseconds since the epoch, got {deadline!r}")
    if deadline < now_ms:
        raise Refused("invalid_policy", f"the deadline {deadline} is before now ({now_ms}): it would be missed "
                      "before it was asked for")
    return deadline


def request(service, body):
    """PROTOCOL.md `request_erasure`: the subject's rows go and the obligation is recorded, in one
    transaction (SL-4.1). Refused, it changes nothing (SL-1.4): `invalid_id`, then a deadline
    already past (`invalid_policy`), then a subject that does not exist (`unknown_entity`)."""
    ws = layout.check_id("workspace", body.get("workspace"))
    agent = body.get("agent")
    if agent is not None:
        agent = layout.check_id("agent", agent)
    deadline = deadline_of(body, service.now_ms)
    conn = service.db()
    with conn.transaction():
        conn.execute(SUBJECT_LOCK, (ws,))
        conn.execute("SELECT set_config(%s, %s, true)", (schema.NOW_SETTING, str(service.now_ms)))
        if agent is None:
            gone = conn.execute("DELETE FROM tenant_workspaces WHERE ws_key = %s", (ws,)).rowcount
        else:
            gone = conn.execute("DELETE FROM tenant_agents WHERE ws_key = %s AND agent_key = %s",
                                (ws, agent)).rowcount
        if gone == 0:
            raise Refused("unknown_entity", f"no {'workspace' if agent is None else 'agent'} "
                          f"{subject_of(ws, agent)} to erase")
        erasure_id = conn.execute(
            "INSERT INTO subject_erasures (subject, ws_key, agent_key, requested_ms, deadline_ms)"
            " VALUES (%s, %s, %s, %s, %s) RETURNING erasure_id",
            (subject_of(ws, agent), ws, agent, service.now_ms, deadline)).fetchone()[0]
        # SL-4.2: the deletion obligations the triggers just wrote, and any still pending under
        # the subject, are the erasure's.
        conn.execute(
            "UPDATE erasure_orders SET erasure_id = %s"
            " WHERE erased_ms IS NULL AND erasure_id IS NULL AND key_prefix ^@ ANY(%s::text[])",
            (erasure_id, layout.erasure_prefixes(ws, agent)))
    return {"outcome": "ok"}


def sweep(service):
    """Meet the pending erasures (SL-4.2, SL-4.3). Returns the deletion obligations they met
    (PROTOCOL.md: a sweep's `obligations` counts them)."""
    conn = service.conn
    met, after = 0, 0
    while True:
        rows = conn.execute(
            "SELECT erasure_id FROM subject_erasures WHERE done_ms IS NULL AND erasure_id > %s"
            " ORDER BY erasure_id LIMIT %s", (after, CLAIM_CHUNK)).fetchall()
        if not rows:
            return met
        claimed = [eid for (eid,) in rows
                   if conn.execute("SELECT pg_try_advisory_lock(%s)", (_lock(eid),)).fetchone()[0]]
        try:
            met += _settle(service, claimed)
        finally:
            for eid in claimed:
                if not (conn.closed or conn.broken):
                    conn.execute("SELECT pg_advisory_unlock(%s)", (_lock(eid),))
        if len(rows) < CLAIM_CHUNK:
            return met
        after = rows[-1][0]


def _lock(erasure_id):
    return (LOCK_SPACE << 32) + erasure_id


def _settle(service, claimed):
    conn, store, now = service.conn, service.store, service.now_ms
    # Claimed now; another sweep may have met one between the read and the claim.
    subjects = {eid: layout.erasure_prefixes(ws, agent) for eid, ws, agent in conn.execute(
        "SELECT erasure_id, ws_key, agent_key FROM subject_erasures WHERE erasure_id = ANY(%s)"
        " AND done_ms IS NULL", (claimed,)).fetchall()}
    if not subjects:
        return 0
    # 1. Write down every key found under each subject, committed before anything is deleted.
    unlisted = set()
    with conn.transaction():
        for eid, prefixes in subjects.items():
            try:
                found = [key for prefix in prefixes for key in store.keys(prefix)]
            except Refused:
                unlisted.add(eid)  # not done this sweep; what is written down is deleted still
                continue
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO subject_erasure_keys (erasure_id, object_key, listed_ms)"
                                " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", [(eid, k, now) for k in found])
    # 2. Delete what is written down and not recorded (an earlier crashed sweep's keys too),
    # batched across the chunk's erasures.
    owners = {}
    for eid, key in conn.execute("SELECT erasure_id, object_key FROM subject_erasure_keys"
                                 " WHERE erasure_id = ANY(%s) AND deleted_ms IS NULL",
                                 (list(subjects),)).fetchall():
        owners.setdefault(key, []).append(eid)
    refused = delete_many(store, list(owners))
    service.reach("after_obligation_objects_deleted")
    # 3. Record what went; an erasure none of whose keys failed, with its prefixes found empty,
    # is met, with the deletion obligations it holds, in the same transaction.
    failed = {eid for key in refused for eid in owners[key]} | unlisted
    met = 0
    with conn.transaction():
        went = [(now, eid, key) for key, eids in owners.items() if key not in refused for eid in eids]
        with conn.cursor() as cur:
            cur.executemany("UPDATE subject_erasure_keys SET deleted_ms = %s"
                            " WHERE erasure_id = %s AND object_key = %s AND deleted_ms IS NULL", went)
        for eid, prefixes in subjects.items():
            if eid in failed or not _empty(store, prefixes):
                continue
            conn.execute("UPDATE subject_erasures SET done_ms = %s WHERE erasure_id = %s", (now, eid))
            held = conn.execute(
                "UPDATE erasure_orders SET erased_ms = %s WHERE erasure_id = %s AND erased_ms IS NULL"
                " RETURNING order_id, key_prefix", (now, eid)).fetchall()
            for order_id, prefix in held:
                # SC-6.3's record; its count is the keys this erasure recorded under the prefix.
                conn.execute(
                    "INSERT INTO erasure_receipts (order_id, key_prefix, objects_erased, erased_ms)"
                    " SELECT %s, %s, count(*), %s FROM subject_erasure_keys"
                    "  WHERE erasure_id = %s AND deleted_ms IS NOT NULL AND starts_with(object_key, %s)", (order_id, prefix, now, eid, prefix))
            met += len(held)
    return met


def _empty(store, prefixes):
    """SL-4.2: done only when nothing is left under any of the subject's prefixes."""
    try:
        return not any(store.keys(prefix, limit=1) for prefix in prefixes)
    except Refused:
        return False

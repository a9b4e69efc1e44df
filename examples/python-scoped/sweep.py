"""The sweep (SPEC.md SC-5.3 to SC-6.5 and part SL's policy sweep, SL-1): which sessions lose
their files, the deletion obligations met, and the erasures (erasure.py) in between.

One `sweep` request runs, in this order: the sessions, claimed in chunks and emptied with
DeleteObjects batched across every session a chunk takes, whichever rule takes it (the idle TTL,
its workspace's own TTL, a close, a count); then the erasure obligations (SL-4); then SC-6's
deletion obligations that no erasure holds. Every claim is `FOR UPDATE SKIP LOCKED` (an erasure's
a session-level advisory lock, erasure.py), so two sweeps at once never take one row (SL-1.3).
"""

import sys

import erasure
import layout
import policies
from layout import Refused
from store import delete_many

DAY_MS = 24 * 60 * 60 * 1000
CLAIM_CHUNK = 500  # sessions or obligations claimed (and locked) per transaction
LOWEST_KEY = ("", "", "")

# The sessions whose files go whatever a count says, claimed with their locks (SC-5.6):
#  - idle for their TTL (SC-5.3): the workspace's own (SL-5.1) where it set one, else the
#    deployment's; the first bound (the shortest TTL in force) compares last activity with one
#    value, as the partial index on it is read, and the second decides;
#  - closed, their grace ended (SL-3.1: `now - closed >= grace`);
#  - left unfinished by an earlier sweep (SC-5.5), whatever expired them (SL-2.4);
# and never one that something waits in (SC-5.2, SL-3.1). A swept session is not examined again
# until new activity lifts its mark (SC-5.4). Ranked by key after a cursor, like the count's.
EXPIRED = """
SELECT s.ws_key, s.agent_key, s.chat_key
  FROM chat_sessions s LEFT JOIN workspace_retention r USING (ws_key)
 WHERE s.files_cleared_ms IS NULL
   AND ((s.active_ms <= %(now)s - LEAST(%(ttl)s, (SELECT min(ttl_days)::bigint FROM workspace_retention) * %(day)s)
         AND s.active_ms <= %(now)s - COALESCE(r.ttl_days::bigint * %(day)s, %(ttl)s))
        OR s.closed_ms <= %(now)s - %(grace)s
        OR s.clear_unfinished_ms IS NOT NULL)
   AND NOT EXISTS (SELECT 1 FROM chat_holds h WHERE h.ws_key = s.ws_key
                   AND h.agent_key = s.agent_key AND h.chat_key = s.chat_key)
   AND (s.ws_key, s.agent_key, s.chat_key) > (%(a)s, %(b)s, %(c)s)
 ORDER BY s.ws_key, s.agent_key, s.chat_key
 LIMIT %(limit)s
   FOR UPDATE OF s SKIP LOCKED
"""


def log(*parts):
    print("sweep.py:", *parts, file=sys.stderr, flush=True)


def erase(store, prefixes):
    """List each owner's prefix and delete its keys, batched across owners. Returns (owners any of
    whose keys failed, or whose listing failed; keys deleted per owner)."""
    failed, owners = set(), {}
    for owner, prefix in prefixes.items():
        try:
            for key in store.keys(prefix):
                owners.setdefault(key, []).append(owner)
        except Refused as e:
            log(f"listing {prefix} failed: {e.message}")
            failed.add(owner)
    keys = [k for k, who in owners.items() if not failed.intersection(who)]
    refused = delete_many(store, keys)
    deleted = {owner: 0 for owner in prefixes}
    for key in keys:
        if key in refused:
            failed.update(owners[key])
        else:
            for owner in owners[key]:
                deleted[owner] += 1
    return failed, deleted


def run(service, hook=None):
    """One sweep at the request's time. `hook` runs once, in the first chunk, after every claim
    and before anything is deleted (the races of race.py)."""
    service.db()
    sessions = sweep_sessions(service, hook)
    obligations = erasure.sweep(service) + sweep_obligations(service)
    return {"outcome": "swept", "sessions": sessions, "obligations": obligations}


def sweep_sessions(service, hook):
    """SC-5.3 to SC-5.6, SL-1.2, SL-2 to SL-3, SL-5.1: the sessions whose files go, claimed in
    chunks, emptied with DeleteObjects batched across them all, and marked in the claiming
    transaction. Two claims fill a chunk: the expired (EXPIRED above: idle, closed, unfinished)
    and the count's (policies.py); a session both take is deleted and counted once (SL-1.2)."""
    conn = service.conn
    swept, after_expired, after_count = 0, LOWEST_KEY, LOWEST_KEY
    expired_left = count_left = True
    taken = set()
    while expired_left or count_left:
        with conn.transaction():
            expired = conn.execute(EXPIRED, {
                "now": service.now_ms, "ttl": service.ttl_ms, "day": DAY_MS, "grace": service.grace_ms,
                "a": after_expired[0], "b": after_expired[1], "c": after_expired[2], "limit": CLAIM_CHUNK,
            }).fetchall() if expired_left else []
            counted = policies.count_candidates(conn, after_count, CLAIM_CHUNK) if count_left else []
            if hook is not None:
                hook()  # the claims are made, nothing is deleted yet
                hook = None
            expired_left, count_left = len(expired) == CLAIM_CHUNK, len(counted) == CLAIM_CHUNK
            after_expired = expired[-1] if expired else after_expired
            after_count = counted[-1] if counted else after_count
            # A session this sweep already took (a count's whose keys failed is unfinished now,
            # and the expired claim takes unfinished ones) waits for the next sweep.
            rows = sorted(set(map(tuple, expired + counted)) - taken)
            taken.update(rows)
            if not rows:
                continue
            failed, _ = erase(service.store, {row: layout.session_prefix(*row) for row in rows})
            service.reach("after_session_objects_deleted")
            for row in rows:
                if row in failed:
                    # SC-5.5: expired all the same; the next operation finishes the job.
                    conn.execute(
                        "UPDATE chat_sessions SET clear_unfinished_ms = %s"
                        " WHERE ws_key = %s AND agent_key = %s AND chat_key = %s", (service.now_ms, *row))
                else:
                    conn.execute(
                        "UPDATE chat_sessions SET files_cleared_ms = %s, clear_unfinished_ms = NULL"
                        " WHERE ws_key = %s AND agent_key = %s AND chat_key = %s", (service.now_ms, *row))
                    swept += 1
    return swept


def sweep_obligations(service):
    """SC-6.3 to SC-6.5: pending obligations claimed in chunks through the partial index; a
    prefix is recorded and marked done in one transaction, only once it is empty. An obligation
    an erasure holds (SL-4.2) is the erasure's to meet, and passed by here."""
    conn, store = service.conn, service.store
    done, after = 0, 0
    while True:
        with conn.transaction():
            rows = conn.execute(
                "SELECT order_id, key_prefix FROM erasure_orders"
                " WHERE erased_ms IS NULL AND erasure_id IS NULL AND order_id > %s"
                " ORDER BY order_id LIMIT %s FOR UPDATE SKIP LOCKED", (after, CLAIM_CHUNK)).fetchall()
            if not rows:
                return done
            failed, deleted = erase(store, dict(rows))
            service.reach("after_obligation_objects_deleted")
            for order_id, prefix in rows:
                if order_id in failed:
                    continue  # SC-6.4: stays pending
                try:
                    if store.keys(prefix, limit=1):
                        continue  # something landed meanwhile: not empty, not done
                except Refused:
                    continue
                conn.execute(
                    "INSERT INTO erasure_receipts (order_id, key_prefix, objects_erased, erased_ms)"
                    " VALUES (%s, %s, %s, %s)", (order_id, prefix, deleted[order_id], service.now_ms))
                conn.execute("UPDATE erasure_orders SET erased_ms = %s WHERE order_id = %s",
                             (service.now_ms, order_id))
                done += 1
        if len(rows) < CLAIM_CHUNK:
            return done
        after = rows[-1][0]

"""Retention policies (SPEC.md part SL), the three this example builds: an agent's count policy
(SL-2), promotion of a session file (SL-6) and tool-output overflow (SL-7). Written from SPEC.md
and PROTOCOL.md alone, like the rest of the example; it claims the capability
`retention_policies`.

What lives here is each policy's own decision: which sessions a count expires (the sweep in
scoped.py claims, empties and marks them with the idle ones, SL-1.2), what a promotion copies and
where a tool result overflows to. The writes themselves go through `Scoped.store_file`, so text
first (SC-4.1), the session's lock (SC-5.6), an interrupted sweep finished first (SC-5.5) and
activity on success (SC-4.3) come from the one place every write of this example uses.
"""

import hashlib

import layout
from layout import Refused

KEEP_LAST_RANGE = (1, 100_000)  # SL-1.4: a count outside it is invalid_policy
DEFAULT_TOOL_OUTPUT_LIMIT = 65536  # SL-7.1, bytes
# SL-7.1 leaves the overflow's path to the implementation: a folder of session scope, so it is
# listed, read and deleted as any session file is (SL-7.2), and swept with its session.
OVERFLOW_FOLDER = "tool-outputs"
# How many names an overflow tries before it gives up: a name is taken only when a file that is
# not this very result already holds it (a guest wrote there), so one more is nearly never needed.
OVERFLOW_NAMES = 16

# SL-2.1 to SL-2.3: the sessions a count policy expires now. An agent's sessions whose files are
# still kept are ranked by last activity, newest first (SL-2.2: never by creation); those past
# its N lose their files, unless something waits in them (SL-2.3: a waiting session holds its
# place among the N and is never swept by the count). A session a sweep already emptied, or is
# emptying (an unfinished sweep, SC-5.5), holds nothing to keep and is not ranked. Claimed
# FOR UPDATE SKIP LOCKED in key order after a cursor, like the idle sweep's claim (SL-1.3); the
# claim re-checks the row's own activity, so a session that became the newest while the ranking
# was read is passed by.
COUNT_CANDIDATES = """
SELECT s.ws_key, s.agent_key, s.chat_key
  FROM chat_sessions s
  JOIN (SELECT c.ws_key, c.agent_key, c.chat_key, c.active_ms, k.keep_last,
               row_number() OVER (PARTITION BY c.ws_key, c.agent_key
                                  ORDER BY c.active_ms DESC, c.chat_key) AS place
          FROM chat_sessions c JOIN agent_keep_counts k USING (ws_key, agent_key)
         WHERE c.files_cleared_ms IS NULL AND c.clear_unfinished_ms IS NULL) ranked
    USING (ws_key, agent_key, chat_key)
 WHERE ranked.place > ranked.keep_last
   AND s.active_ms = ranked.active_ms
   AND s.files_cleared_ms IS NULL AND s.clear_unfinished_ms IS NULL
   AND NOT EXISTS (SELECT 1 FROM chat_holds h WHERE h.ws_key = s.ws_key
                   AND h.agent_key = s.agent_key AND h.chat_key = s.chat_key)
   AND (s.ws_key, s.agent_key, s.chat_key) > (%s, %s, %s)
 ORDER BY s.ws_key, s.agent_key, s.chat_key
 LIMIT %s
   FOR UPDATE OF s SKIP LOCKED
"""


def count_candidates(conn, after, limit):
    """The next `limit` sessions, after the key `after`, that a count policy sweeps (claimed)."""
    return conn.execute(COUNT_CANDIDATES, (*after, limit)).fetchall()


def keep_last_of(body):
    """SL-1.4: `keep_last` is a whole number from 1 to 100,000, or null (the policy removed)."""
    keep = body.get("keep_last")
    if keep is None:
        return None
    low, high = KEEP_LAST_RANGE
    if isinstance(keep, bool) or not isinstance(keep, int) or not low <= keep <= high:
        raise Refused("invalid_policy", f"keep the last N sessions needs N from {low} to {high}, got {keep!r}")
    return keep


def set_session_count(conn, body):
    """SL-2 (PROTOCOL.md `set_session_count`): set, replace or remove an agent's count policy. It
    takes effect at the next sweep (SL-2.4); setting it is no activity of any session. A refused
    request changes nothing (SL-1.4)."""
    ws = layout.check_id("workspace", body.get("workspace"))
    agent = layout.check_id("agent", body.get("agent"))
    keep = keep_last_of(body)
    with conn.transaction():
        # Holding the agent row keeps a concurrent delete_agent from leaving a policy behind.
        if conn.execute("SELECT 1 FROM tenant_agents WHERE ws_key = %s AND agent_key = %s FOR KEY SHARE",
                        (ws, agent)).fetchone() is None:
            raise Refused("unknown_entity", f"no agent {agent} in workspace {ws}")
        if keep is None:
            conn.execute("DELETE FROM agent_keep_counts WHERE ws_key = %s AND agent_key = %s", (ws, agent))
        else:
            conn.execute("INSERT INTO agent_keep_counts VALUES (%s, %s, %s) ON CONFLICT (ws_key, agent_key)"
                         " DO UPDATE SET keep_last = EXCLUDED.keep_last", (ws, agent, keep))
    return {"outcome": "ok"}


def promote(service, turn, source, destination):
    """SL-6: copy a session file to agent or workspace scope; the session file stays (SL-6.1).

    The order is SC-3.5's (SL-6.2): the turn's identifiers; both paths' shapes (SC-2, the skill
    table, the key length) and which scopes they name (`invalid_policy`); the session row; the
    destination's permission (`permission_denied`, `read_only` for a skill); the source in the
    store (`not_found`). The copy is a write of the destination (text first, SL-6.3), under the
    session's lock, and activity of the session (SC-4.3)."""
    ids = service.turn_ids(turn)
    skills = turn.get("skills")
    src = layout.resolve(source, for_listing=False)
    dst = layout.resolve(destination, for_listing=False)
    if src.scope != "session":
        raise Refused("invalid_policy", f"only a session file is promoted; {source!r} is in {src.scope} scope")
    if dst.scope == "session":
        raise Refused("invalid_policy", f"a promotion goes to agent or workspace scope; {destination!r} "
                      "is in session scope and would be swept with the session")
    src_prefix = service.scope_prefix(src, ids, skills)
    dst_prefix = service.scope_prefix(dst, ids, skills)
    layout.check_key_length(src_prefix, src.rel)
    layout.check_key_length(dst_prefix, dst.rel)

    def plan(access):
        service.need(access, dst.scope, write=True)
        got = service.store.get(src_prefix + src.rel)
        if got is None:
            raise Refused("not_found", f"no file {source}")
        return dst, dst_prefix, got[0]

    return service.store_file(ids, plan)


def tool_output(service, turn, content, limit):
    """SL-7: a result at or under `limit` bytes (its UTF-8) is answered inline and changes
    nothing; a larger one is written to a session file whose guest path is answered instead."""
    ids = service.turn_ids(turn)
    body = content.encode("utf-8", "surrogatepass")
    if len(body) <= limit:
        return {"outcome": "content", "content": content}
    digest = hashlib.sha256(body).hexdigest()
    prefix = layout.session_prefix(*ids)

    def plan(_access):
        # Named by the request's time and the result's hash, so no earlier overflow's answer is
        # made to name another result; a name holding some other file (a guest wrote there) is
        # passed by, never overwritten.
        for attempt in range(1, OVERFLOW_NAMES + 1):
            suffix = "" if attempt == 1 else f"-{attempt}"
            rel = f"{OVERFLOW_FOLDER}/{service.now_ms}-{digest[:16]}{suffix}.txt"
            layout.check_key_length(prefix, rel)
            stamp = service.store.head(prefix + rel)
            if stamp is None or stamp == digest:
                return layout.Target("session", rel, False), prefix, body
        raise Refused("storage_unavailable", "no free name for the tool output's overflow file")

    return service.store_file(ids, plan)


def close_session(service, turn):
    """SL-3 (PROTOCOL.md `close_session`, capability `session_close`): the host closes a session.
    A closed session is swept a grace after its close unless its idle TTL comes first (the sweep's
    claim, sweep.py); closing is no activity (its last activity and swept mark stay), a repeated
    close keeps the first close time, and activity clears the close (Scoped.touch, SL-3.2)."""
    ids = service.turn_ids(turn)
    closed = service.db().execute(
        "UPDATE chat_sessions SET closed_ms = COALESCE(closed_ms, %s)"
        " WHERE ws_key = %s AND agent_key = %s AND chat_key = %s RETURNING closed_ms",
        (service.now_ms, *ids)).fetchone()
    if closed is None:
        raise Refused("unknown_entity", "no such session to close")
    return {"outcome": "ok"}

#!/usr/bin/env python3
"""Database rows and the reaper (SPEC.md part SR), written against SPEC.md part SR and
conformance/PROTOCOL.md, speaking tidemark/1 on stdin/stdout, on PostgreSQL (psycopg 3).

    target/py-scoped/bin/python examples/python-rows/rows.py

schema.py holds the tables and the queries declared in init_ok; this file the operations, the
reaper and the protocol loop. Time is an input: every timestamp is the request's now_ms, and
nothing reads the database server's clock. Logs go to stderr; stdout carries only protocol lines.
"""

import json
import re
import sys

import psycopg

import schema

PROTOCOL = "tidemark/1"
DAY_MS = 24 * 60 * 60 * 1000
INVOCATION_MS = DAY_MS  # SR-3.1
FIRING_MS = 30 * DAY_MS  # SR-3.2
STREAMED_GRACE_MS = DAY_MS  # SR-2.3, SR-2.4
KEEP_NEWEST = 3  # SR-5.1
BATCH = 1000  # SR-7.3
STREAMED = ("chat.delta", "chat.reasoning", "chat.writing", "chat.tool", "chat.tool_result", "chat.steer")
TEXT_KIND = "chat.delta"  # SR-2.5: the only streamed kind that is text
KIND = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")


def log(*parts):
    print("rows.py:", *parts, file=sys.stderr, flush=True)


class Crashed(Exception):
    """The harness's crash fault: the tick dies as if its process did (PROTOCOL.md, `reap`)."""


class Refused(Exception):
    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason
        self.message = message


def check_kind(kind):
    """SR-2.1: dot-separated words of [a-z0-9_], at least two, at most 64 bytes."""
    if len(kind.encode()) > 64 or not KIND.fullmatch(kind):
        raise Refused("unknown_kind", f"{kind!r} is not a kind: dot-separated words of [a-z0-9_], at least two, at most 64 bytes")


def made(table, seq):
    return {"outcome": "made", "id": f"{schema.PREFIX[table]}{seq}"}


def seq_of(table, wire_id):
    """The row number inside an id this program made; None for any other string (the harness
    sends "" for a name whose making was refused), which then names no row."""
    prefix = schema.PREFIX[table]
    if wire_id.startswith(prefix) and wire_id[len(prefix):].isdigit():
        return int(wire_id[len(prefix):])
    return None


class Rows:
    def __init__(self, url):
        # A lock wait is bounded well inside the harness's answer timeout.
        self.conn = psycopg.connect(url, autocommit=True, options="-c lock_timeout=5000")
        schema.install(self.conn)
        self.now = 0
        # The current tick's batch size and crash budget (SR-7.3; PROTOCOL.md, `reap`).
        self.batch = BATCH
        self.crash_left = None

    def q(self, sql, params=()):
        return self.conn.execute(sql, params)

    # --- Workspaces, sessions, and what goes with them (SR-2.7, SR-6) -------------------------

    def create_workspace(self, workspace):
        if self.q("INSERT INTO tenant VALUES (%s) ON CONFLICT DO NOTHING", (workspace,)).rowcount == 0:
            raise Refused("already_exists", f"workspace {workspace!r} exists")
        return {"outcome": "ok"}

    def create_session(self, session, workspace):
        with self.conn.transaction():
            if self.q("SELECT 1 FROM tenant WHERE name = %s FOR SHARE", (workspace,)).fetchone() is None:
                raise Refused("unknown_workspace", f"no workspace {workspace!r}")
            if self.q("INSERT INTO convo VALUES (%s, %s) ON CONFLICT DO NOTHING", (session, workspace)).rowcount == 0:
                raise Refused("already_exists", f"session {session!r} exists")
        return {"outcome": "ok"}

    def delete_session(self, session):
        # The cascades take its prompts, replies, events (streamed too), invocations and held
        # requests (SR-2.7).
        if self.q("DELETE FROM convo WHERE name = %s", (session,)).rowcount == 0:
            raise Refused("unknown_session", f"no session {session!r}")
        return {"outcome": "ok"}

    def delete_workspace(self, workspace):
        if self.q("DELETE FROM tenant WHERE name = %s", (workspace,)).rowcount == 0:
            raise Refused("unknown_workspace", f"no workspace {workspace!r}")
        return {"outcome": "ok"}

    def need_session(self, session, lock=False):
        row = self.q("SELECT 1 FROM convo WHERE name = %s" + (" FOR SHARE" if lock else ""), (session,)).fetchone()
        if row is None:
            raise Refused("unknown_session", f"no session {session!r}")

    def add_prompt(self, session, body):
        with self.conn.transaction():
            self.need_session(session, lock=True)
            self.q("INSERT INTO convo_prompt (convo, body) VALUES (%s, %s)", (session, body))
        return {"outcome": "ok"}

    # --- Replies and their events (SR-2) ------------------------------------------------------

    def start_reply(self, session):
        with self.conn.transaction():
            self.need_session(session, lock=True)
            seq = self.q("INSERT INTO answer (convo, phase) VALUES (%s, 'writing') RETURNING seq",
                         (session,)).fetchone()[0]
        return made("answer", seq)

    def lock_reply(self, reply, allowed, doing):
        """The reply's row, locked, if it is in one of the `allowed` phases (SR-2.2)."""
        seq = seq_of("answer", reply)
        row = None if seq is None else self.q(
            "SELECT seq, convo, phase FROM answer WHERE seq = %s FOR UPDATE", (seq,)).fetchone()
        if row is None:
            raise Refused("unknown_reply", f"no reply {reply!r}")
        if row[2] not in allowed:
            raise Refused("reply_state", f"reply {reply} is {row[2]}; only a {' or '.join(allowed)} reply can be {doing}")
        return row

    def stream(self, reply, kind, payload):
        check_kind(kind)
        if kind not in STREAMED:
            raise Refused("unknown_kind", f"{kind} is a conversation event's kind, not a streamed one")
        with self.conn.transaction():
            seq, convo, _ = self.lock_reply(reply, ("writing",), "streamed into")
            self.q("INSERT INTO convo_event (convo, answer_seq, kind, payload, at_ms) VALUES (%s, %s, %s, %s, %s)",
                   (convo, seq, kind, payload, self.now))
        return {"outcome": "ok"}

    def record_event(self, session, kind, payload):
        check_kind(kind)
        if kind in STREAMED:
            raise Refused("unknown_kind", f"{kind} is streamed: it names a reply")
        with self.conn.transaction():
            self.need_session(session, lock=True)
            self.q("INSERT INTO convo_event (convo, kind, payload, at_ms) VALUES (%s, %s, %s, %s)",
                   (session, kind, payload, self.now))
        return {"outcome": "ok"}

    def replayed(self, seq):
        """SR-2.5, SR-2.6: the chat.delta payloads in the order they were streamed."""
        rows = self.q("SELECT payload FROM convo_event WHERE answer_seq = %s AND kind = %s ORDER BY seq",
                      (seq, TEXT_KIND)).fetchall()
        return "".join(r[0] for r in rows)

    def end(self, seq, text, by_seal):
        """The reply is finished now: its row holds its text and its events' day starts (SR-2.3)."""
        self.q("UPDATE answer SET phase = 'finished', final_text = %s, by_seal = %s WHERE seq = %s",
               (text, by_seal, seq))
        self.q("UPDATE convo_event SET forget_at_ms = %s WHERE answer_seq = %s",
               (self.now + STREAMED_GRACE_MS, seq))

    def finish_reply(self, reply, text):
        with self.conn.transaction():
            seq, _, _ = self.lock_reply(reply, ("writing",), "finished")
            self.end(seq, text, False)
        return {"outcome": "ok"}

    def interrupt_reply(self, reply):
        # Not an end: the events stay the reply's only record, with no day running (SR-2.3).
        with self.conn.transaction():
            seq, _, _ = self.lock_reply(reply, ("writing",), "interrupted")
            self.q("UPDATE answer SET phase = 'stopped' WHERE seq = %s", (seq,))
        return {"outcome": "ok"}

    def seal_reply(self, reply):
        with self.conn.transaction():
            seq, _, _ = self.lock_reply(reply, ("writing", "stopped"), "sealed")
            self.end(seq, self.replayed(seq), True)
        return {"outcome": "ok"}

    def delete_reply(self, reply):
        # SR-2.4: a day from the deletion, or from the finishing if that came first.
        with self.conn.transaction():
            seq, _, _ = self.lock_reply(reply, ("writing", "stopped", "finished"), "deleted")
            self.q("DELETE FROM answer WHERE seq = %s", (seq,))
            self.q("UPDATE convo_event SET forget_at_ms = LEAST(COALESCE(forget_at_ms, %(end)s), %(end)s)"
                   " WHERE answer_seq = %(seq)s", {"end": self.now + STREAMED_GRACE_MS, "seq": seq})
        return {"outcome": "ok"}

    def transcript(self, session):
        self.need_session(session)
        replies = []
        for seq, phase, text, by_seal in self.q(
                "SELECT seq, phase, final_text, by_seal FROM answer WHERE convo = %s ORDER BY seq",
                (session,)).fetchall():
            state = "sealed" if phase == "finished" and by_seal else phase
            replies.append({"reply": f"{schema.PREFIX['answer']}{seq}", "state": state,
                            "text": text if phase == "finished" else self.replayed(seq)})
        return {"outcome": "transcript", "replies": replies}

    # --- Invocations, firings, the expiring stores (SR-3, SR-4) --------------------------------

    def record_invocation(self, session):
        with self.conn.transaction():
            self.need_session(session, lock=True)
            self.q("INSERT INTO tool_call (convo, gone_at_ms) VALUES (%s, %s)", (session, self.now + INVOCATION_MS))
        return {"outcome": "ok"}

    def fire_trigger(self, trigger):
        self.q("INSERT INTO trigger_fire (trigger_name, gone_at_ms) VALUES (%s, %s)", (trigger, self.now + FIRING_MS))
        return {"outcome": "ok"}

    def keep(self, store, key, for_ms):
        table = schema.STORES.get(store)
        if table is None:
            raise Refused("unknown_kind", f"no store {store!r}")
        # SR-4.2: the latest write wins, earlier or later.
        self.q(f"INSERT INTO {table} (key, gone_at_ms) VALUES (%s, %s)"
               f" ON CONFLICT (key) DO UPDATE SET gone_at_ms = excluded.gone_at_ms", (key, self.now + for_ms))
        return {"outcome": "ok"}

    # --- Catalog snapshots (SR-5) ---------------------------------------------------------------

    def take_snapshot(self):
        seq = self.q("INSERT INTO catalog_snap (taken_ms) VALUES (%s) RETURNING seq", (self.now,)).fetchone()[0]
        return made("catalog_snap", seq)

    def name_snapshot(self, model, snapshot):
        seq = seq_of("catalog_snap", snapshot)
        with self.conn.transaction():
            # The snapshot's row is locked (FOR KEY SHARE, as the foreign key would): a sweep
            # deleting it either finished first (no row: unknown) or waits for this naming and
            # then finds it named (SR-5.4).
            if seq is None or self.q("SELECT 1 FROM catalog_snap WHERE seq = %s FOR KEY SHARE", (seq,)).fetchone() is None:
                raise Refused("unknown_snapshot", f"no snapshot {snapshot!r}")
            self.q("INSERT INTO model_pin VALUES (%s, %s) ON CONFLICT (model) DO UPDATE SET snap_seq = excluded.snap_seq",
                   (model, seq))
        return {"outcome": "ok"}

    def drop_model(self, model):
        self.q("DELETE FROM model_pin WHERE model = %s", (model,))
        return {"outcome": "ok"}

    def snapshots(self):
        rows = self.q("SELECT seq FROM catalog_snap ORDER BY seq").fetchall()
        return {"outcome": "snapshots", "snapshots": [f"{schema.PREFIX['catalog_snap']}{r[0]}" for r in rows]}

    # --- Rows kept on purpose (SR-6) ------------------------------------------------------------

    def open_item(self, workspace):
        with self.conn.transaction():
            if self.q("SELECT 1 FROM tenant WHERE name = %s FOR SHARE", (workspace,)).fetchone() is None:
                raise Refused("unknown_workspace", f"no workspace {workspace!r}")
            seq = self.q("INSERT INTO todo_item (tenant) VALUES (%s) RETURNING seq", (workspace,)).fetchone()[0]
        return made("todo_item", seq)

    def settle_item(self, item):
        seq = seq_of("todo_item", item)
        # SR-6.1: settling again keeps the first settlement's time.
        done = 0 if seq is None else self.q(
            "UPDATE todo_item SET settled_ms = COALESCE(settled_ms, %s) WHERE seq = %s", (self.now, seq)).rowcount
        if done == 0:
            raise Refused("unknown_item", f"no action item {item!r}")
        return {"outcome": "ok"}

    def hold_request(self, session, item=None):
        with self.conn.transaction():
            self.need_session(session, lock=True)
            item_seq = None
            if item is not None:
                item_seq = seq_of("todo_item", item)
                if item_seq is None or self.q("SELECT 1 FROM todo_item WHERE seq = %s FOR SHARE",
                                              (item_seq,)).fetchone() is None:
                    raise Refused("unknown_item", f"no action item {item!r}")
            seq = self.q("INSERT INTO parked_request (convo, item_seq, parked_ms) VALUES (%s, %s, %s) RETURNING seq",
                         (session, item_seq, self.now)).fetchone()[0]
        return made("parked_request", seq)

    # --- The reaper (SR-7) ----------------------------------------------------------------------

    def committed(self, n):
        """One batch committed: the crash fault strikes once its budget of batches that removed
        a row is spent."""
        if n > 0 and self.crash_left is not None:
            self.crash_left -= 1
            if self.crash_left <= 0:
                raise Crashed()

    def batches(self, select_sql, params, table):
        """Deletes what `select_sql` picks, at most self.batch rows a statement, each statement
        its own transaction, until one comes back short; rows a writer holds are skipped (SR-7.3)."""
        removed = 0
        while True:
            n = self.q(f"DELETE FROM {table} WHERE seq = ANY (ARRAY ({select_sql} LIMIT {self.batch} FOR UPDATE SKIP LOCKED))",
                       params).rowcount
            removed += n
            self.committed(n)
            if n < self.batch:
                return removed

    def expired(self, table, key="seq"):
        removed = 0
        while True:
            n = self.q(f"DELETE FROM {table} WHERE {key} = ANY (ARRAY (SELECT {key} FROM {table}"
                       f" WHERE gone_at_ms <= %s ORDER BY gone_at_ms LIMIT {self.batch} FOR UPDATE SKIP LOCKED))",
                       (self.now,)).rowcount
            removed += n
            self.committed(n)
            if n < self.batch:
                return removed

    def reap(self, batch=None, crash_after_batches=None):
        self.batch = int(batch) if batch is not None else BATCH
        self.crash_left = crash_after_batches
        try:
            return self.tick()
        except Crashed:
            return {"outcome": "refused", "reason": "database_unavailable",
                    "message": "the reaper crashed (the harness's fault)"}
        finally:
            self.batch, self.crash_left = BATCH, None

    def tick(self):
        if self.crash_left == 0:
            raise Crashed()
        # One now for the whole tick, the sweeps in SR-7.2's order.
        swept = {
            # SR-2.8: streamed events whose reply ended (finished, sealed or deleted) a day ago.
            "streamed_events": self.batches(
                "SELECT seq FROM convo_event WHERE forget_at_ms IS NOT NULL AND forget_at_ms <= %s ORDER BY forget_at_ms",
                (self.now,), "convo_event"),
            "tool_invocations": self.expired("tool_call"),
            "trigger_firings": self.expired("trigger_fire"),
            # SR-5.1, SR-5.3: all but the newest three by taking order, unless a model names one.
            "catalog_snapshots": self.batches(
                "SELECT s.seq FROM catalog_snap s"
                f" WHERE s.seq < COALESCE((SELECT min(seq) FROM (SELECT seq FROM catalog_snap ORDER BY seq DESC LIMIT {KEEP_NEWEST}) AS newest), 0)"
                " AND NOT EXISTS (SELECT 1 FROM model_pin m WHERE m.snap_seq = s.seq) ORDER BY s.seq",
                (), "catalog_snap"),
        }
        for store, table in schema.STORES.items():
            swept[store] = self.expired(table, key="key")
        return {"outcome": "reaped", "swept": swept}

    # --- The protocol ---------------------------------------------------------------------------

    def handle(self, body):
        op = body["op"]
        args = {k: v for k, v in body.items() if k != "op"}
        if op == "keep":
            return self.keep(args["store"], args["id"], args["for_ms"])
        handler = getattr(self, op, None) if op in OPS else None
        if handler is None:
            raise ValueError(f"unknown op {op!r}")
        return handler(**args)


OPS = {
    "create_workspace", "create_session", "delete_session", "delete_workspace", "start_reply", "stream",
    "finish_reply", "interrupt_reply", "seal_reply", "delete_reply", "record_event", "add_prompt",
    "record_invocation", "fire_trigger", "keep", "take_snapshot", "name_snapshot", "drop_model", "open_item",
    "settle_item", "hold_request", "reap", "transcript", "snapshots",
}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    rows = None
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "init":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error", "in_reply_to": msg["id"], "message": f"I speak {PROTOCOL} only"})
                continue
            try:
                if msg.get("profile") == "rows":
                    rows = Rows(msg["postgres_url"])
            except Exception as e:
                log(f"init failed: {e!r}")
                send({"type": "error", "in_reply_to": msg["id"], "message": f"init failed: {e!r}"})
                continue
            send({"type": "init_ok", "in_reply_to": msg["id"], "protocol": PROTOCOL,
                  "implementation": "python-rows example 1.0", "profiles": ["rows"],
                  "capabilities": ["reap_batches"], "rows": schema.QUERIES})
            continue
        if msg["type"] != "request":
            log(f"ignoring a message of type {msg['type']!r}")
            continue
        try:
            if rows is None:
                raise RuntimeError("a request arrived before an init naming the rows profile")
            rows.now = msg["now_ms"]
            try:
                body = rows.handle(msg["body"])
            except Refused as r:
                body = {"outcome": "refused", "reason": r.reason, "message": r.message}
            except psycopg.OperationalError as e:
                body = {"outcome": "refused", "reason": "database_unavailable", "message": str(e)}
            send({"type": "reply", "in_reply_to": msg["id"], "body": body})
        except Exception as e:  # a bug: report it, keep serving
            log(f"request {msg['id']} failed: {e!r}")
            send({"type": "error", "in_reply_to": msg["id"], "message": repr(e)})


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Scoped object storage (SPEC.md part SC), written from SPEC.md and conformance/PROTOCOL.md
alone, speaking tidemark/1 on stdin/stdout. Files live in S3 (boto3), sessions and deletion
obligations in PostgreSQL (psycopg 3).

    target/py-scoped/bin/python examples/python-scoped/scoped.py

Modules: layout.py (the only place keys and guest paths are known, SC-1.2), store.py (S3),
schema.py (tables, triggers and the ledger queries declared in init_ok), sweep.py (the sweep),
lifecycle.py (SC-7), part SL's policies.py (the count, a close, promotion, tool-output overflow),
retention.py (a workspace's own TTL and rules) and erasure.py (erasure obligations and proofs),
people.py (the people's API over HTTP), race.py (the races only the program can stage), this
file (the operations and the protocol). Time is an input: every timestamp comes from the request's now_ms.
Logs go to stderr; stdout carries only protocol lines.
"""

import hashlib
import json
import os
import sys
import threading
import urllib.parse

import psycopg

import erasure
import layout
import lifecycle
import people
import policies
import race
import retention
import schema
import sweep
from layout import Refused
from store import DELETE_BATCH, Store

PROTOCOL = "tidemark/1"
DAY_MS = sweep.DAY_MS
DEFAULT_TTL_DAYS = 30  # SC-5.3
DEFAULT_CLOSE_GRACE_DAYS = 7  # SL-3.1
DEFAULT_MAX_UPLOAD = 26214400  # SF-4.3: 25 MiB
ACCESS = ("none", "read", "read-write")
DEFAULT_ACCESS = {"agent": "read-write", "workspace": "read"}  # SC-3.2: the deployment layer
CRASH_POINTS = ("after_text_written", "after_session_objects_deleted", "after_obligation_objects_deleted")


def log(*parts):
    print("scoped.py:", *parts, file=sys.stderr, flush=True)


class Crash(Exception):
    """An injected crash (capability crash_points): unwinds without committing anything."""

    def __init__(self, point):
        super().__init__(point)
        self.point = point


def extract_text(body):
    """SC-4.1: a file's text is its bytes when they are UTF-8 with no NUL; else it has none."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def as_text(body):
    """A read's content as a JSON string (PROTOCOL.md: scoped contents are strings). Bytes this
    program did not write and that are not UTF-8 are shown with U+FFFD, as SP-7.7 allows."""
    try:
        return body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return body.decode("utf-8", "replace")


def access_of(value):
    if value is not None and value not in ACCESS:
        raise Refused("config", f"an access is none, read or read-write, got {value!r}")
    return value


class Scoped:
    def __init__(self, init):
        self.init = init
        knobs = init.get("knobs", {})
        self.ttl_ms = int(knobs.get("session_file_ttl_days", DEFAULT_TTL_DAYS)) * DAY_MS
        self.tool_output_limit = int(knobs.get("tool_output_limit_bytes", policies.DEFAULT_TOOL_OUTPUT_LIMIT))
        self.grace_ms = int(knobs.get("close_grace_days", DEFAULT_CLOSE_GRACE_DAYS)) * DAY_MS
        self.rule_limit = int(knobs.get("lifecycle_rule_limit", retention.DEFAULT_RULE_LIMIT))
        self.store = Store(init["s3"])
        self.conn = None
        self.now_ms = 0
        self.armed = None  # the crash point the next operation reaching it dies at
        self.connect()
        schema.install(self.conn)

    def connect(self):
        try:
            # A lock wait is bounded well inside the harness's answer timeout.
            self.conn = psycopg.connect(self.init["postgres_url"], autocommit=True,
                                        options="-c lock_timeout=5000")
        except psycopg.OperationalError as e:
            raise Refused("database_unavailable", f"cannot reach the database: {e}") from e

    def db(self):
        if self.conn is None or self.conn.closed or self.conn.broken:
            self.connect()
        return self.conn

    def reach(self, point):
        if self.armed == point:
            self.armed = None
            raise Crash(point)

    # --- Sessions, settings and permissions --------------------------------------------------

    def lock_session(self, ids):
        """SC-5.6: a file operation holds its session row's lock for its whole S3 call. Returns
        the row's settings; a turn naming no session is unknown_entity."""
        row = self.conn.execute(
            "SELECT s.clear_unfinished_ms, w.agent_access, w.workspace_access,"
            "       a.agent_access, a.workspace_access"
            "  FROM chat_sessions s JOIN tenant_agents a USING (ws_key, agent_key)"
            "  JOIN tenant_workspaces w USING (ws_key)"
            " WHERE s.ws_key = %s AND s.agent_key = %s AND s.chat_key = %s FOR UPDATE OF s", ids).fetchone()
        if row is None:
            raise Refused("unknown_entity", "no such session (or its agent or workspace was deleted)")
        unfinished, ws_agent, ws_workspace, ag_agent, ag_workspace = row
        if unfinished is not None:
            self.finish_unfinished_sweep(ids)
        # SC-3.2: deployment < workspace settings < agent settings, each overriding what it sets.
        return {
            "agent": ag_agent or ws_agent or DEFAULT_ACCESS["agent"],
            "workspace": ag_workspace or ws_workspace or DEFAULT_ACCESS["workspace"],
        }

    def finish_unfinished_sweep(self, ids):
        """SC-5.5: a sweep that claimed this session but could not delete everything expired it
        all the same; what is left goes before the session counts as active again."""
        prefix = layout.session_prefix(*ids)
        keys = self.store.keys(prefix)
        for start in range(0, len(keys), DELETE_BATCH):
            if self.store.delete_batch(keys[start:start + DELETE_BATCH]):
                raise Refused("storage_unavailable", "the files of an expired session could not all be deleted")

    def touch(self, ids):
        """SC-5.1: activity never moves backwards; new activity also lifts the swept mark (SC-5.4)
        and the unfinished mark (its leftovers were just deleted, SC-5.5), and reopens a closed
        session (SL-3.2)."""
        self.conn.execute(
            "UPDATE chat_sessions SET active_ms = GREATEST(active_ms, %s), files_cleared_ms = NULL,"
            "       clear_unfinished_ms = NULL, closed_ms = NULL"
            " WHERE ws_key = %s AND agent_key = %s AND chat_key = %s",
            (self.now_ms, *ids))

    def file_op(self, ids, op, activity=True):
        """One file operation: lock the session, run `op(access)`, count it as activity (SC-4.3;
        a person's listing and download are not, SF-4.2). A refusal or failure rolls the
        transaction back, so it changes nothing, activity included."""
        self.db()
        with self.conn.transaction():
            access = self.lock_session(ids)
            result = op(access)
            if activity:
                self.touch(ids)
        return result

    @staticmethod
    def need(access, scope, write):
        """SC-3.1, SC-3.3: session is always read-write, skills always read; write implies read."""
        if scope == "session":
            return
        if scope == layout.SKILL:
            if write:
                raise Refused("read_only", "skill files are read-only")
            return
        level = access[scope]
        if level == "none" or (write and level != "read-write"):
            raise Refused("permission_denied", f"{scope} scope is {level} for this agent")

    # --- Resolution --------------------------------------------------------------------------

    @staticmethod
    def turn_ids(turn):
        return (layout.check_id("workspace", turn.get("workspace")),
                layout.check_id("agent", turn.get("agent")),
                layout.check_id("session", turn.get("session")))

    @staticmethod
    def scope_prefix(target, ids, skills):
        ws, agent, session = ids
        if target.scope == "session":
            return layout.session_prefix(ws, agent, session)
        if target.scope == "agent":
            return layout.agent_prefix(ws, agent)
        if target.scope == "workspace":
            return layout.workspace_prefix(ws)
        # SC-2.6: through the turn's skill table, in the turn's own workspace.
        sha = (skills or {}).get(target.slug)
        if sha is None:
            raise Refused("unknown_skill", f"no skill {target.slug!r} in this turn's skill table")
        if not isinstance(sha, str) or not layout.SHA256_SHAPE.fullmatch(sha):
            raise Refused("invalid_id", f"the skill table's entry for {target.slug!r} is not a sha256")
        return layout.skill_prefix(ws, sha)

    def resolve_file(self, turn, path):
        ids = self.turn_ids(turn)
        target = layout.resolve(path, for_listing=False)
        prefix = self.scope_prefix(target, ids, turn.get("skills"))
        layout.check_key_length(prefix, target.rel)
        return ids, target, prefix

    # --- File operations ---------------------------------------------------------------------

    def write(self, turn, path, content):
        ids, target, prefix = self.resolve_file(turn, path)
        body = content.encode("utf-8", "surrogatepass")

        def plan(access):
            self.need(access, target.scope, write=True)
            return target, prefix, body

        return self.store_file(ids, plan)

    def store_file(self, ids, plan):
        """A write of part SC through any door (SC-4.1, SF-4.1), and the writes of part SL (a
        promotion, an overflowing tool result). `plan(access)` runs under the session's lock once
        any interrupted sweep is finished: it makes the door's own checks (SF-2.4, SL-6.2) and
        answers what to store, (target, scope prefix, bytes), so a promotion reads its source and
        an overflow picks its name under the same lock its write holds (SC-5.6, SL-6.4)."""
        tried_text = []

        def op(access):
            target, prefix, body = plan(access)
            digest = hashlib.sha256(body).hexdigest()
            text = extract_text(body)
            # SC-4.1: the text first, then the file, so a file is never visible without its text.
            text_key = layout.text_key(prefix, target.rel)
            if text is None:
                self.store.delete(text_key)
            else:
                tried_text.append(text_key)
                self.store.put(text_key, text.encode("utf-8"), self.now_ms, digest)
            self.reach("after_text_written")
            self.store.put(prefix + target.rel, body, self.now_ms, digest)
            return {"outcome": "written", "path": target.guest(target.rel)}

        try:
            return self.file_op(ids, op)
        except Refused:
            if tried_text:
                # SC-5.4: a text may have been stored without its file; lift the swept mark so
                # the next sweep examines the session again (outside the rolled-back transaction).
                self.conn.execute(
                    "UPDATE chat_sessions SET files_cleared_ms = NULL"
                    " WHERE ws_key = %s AND agent_key = %s AND chat_key = %s", ids)
            raise

    def read(self, turn, path):
        ids, target, prefix = self.resolve_file(turn, path)

        def op(access):
            self.need(access, target.scope, write=False)
            got = self.store.get(prefix + target.rel)
            if got is None:
                raise Refused("not_found", f"no file {path}")
            return {"outcome": "content", "content": as_text(got[0])}

        return self.file_op(ids, op)

    def read_text(self, turn, path):
        ids, target, prefix = self.resolve_file(turn, path)

        def op(access):
            self.need(access, target.scope, write=False)
            # SC-4.2: the file must exist; a text whose stamp is not the file's is never served.
            stamp = self.store.head(prefix + target.rel)
            if stamp is None:
                raise Refused("not_found", f"no file {path}")
            got = self.store.get(layout.text_key(prefix, target.rel))
            if got is not None and got[1] == stamp and stamp:
                return {"outcome": "text", "text": got[0].decode("utf-8")}
            got = self.store.get(prefix + target.rel)
            if got is None:
                raise Refused("not_found", f"no file {path}")
            return {"outcome": "text", "text": extract_text(got[0])}

        return self.file_op(ids, op)

    def delete(self, turn, path):
        ids, target, prefix = self.resolve_file(turn, path)

        def op(access):
            self.need(access, target.scope, write=True)
            if self.store.head(prefix + target.rel) is None:
                raise Refused("not_found", f"no file {path}")
            # SC-4.2: text first, so a crash between leaves a file without text, never the reverse.
            self.store.delete(layout.text_key(prefix, target.rel))
            self.store.delete(prefix + target.rel)
            return {"outcome": "ok"}

        return self.file_op(ids, op)

    def list(self, turn, prefix):
        ids = self.turn_ids(turn)
        if prefix is None:
            # SC-3.4: every scope the agent may read; a scope set to none is left out.
            targets, explicit = [layout.Target(s, "", True) for s in layout.SCOPES], False
        else:
            targets, explicit = [layout.resolve(prefix, for_listing=True)], True
        bases = [self.scope_prefix(t, ids, turn.get("skills")) for t in targets]
        for target, base in zip(targets, bases):
            layout.check_key_length(base, target.rel)

        def op(access):
            paths = []
            for target, base in zip(targets, bases):
                try:
                    self.need(access, target.scope, write=False)
                except Refused:
                    if explicit:
                        raise
                    continue
                # SC-2.7: a listing prefix names a folder, never a string prefix.
                folder = base + (target.rel + "/" if target.rel else "")
                for key in self.store.keys(folder):
                    rel = key[len(base):]
                    if not layout.is_text_or_marker(rel):
                        paths.append(target.guest(rel))
            return {"outcome": "listing", "paths": sorted(paths)}

        return self.file_op(ids, op)

    # --- Workspaces, agents, sessions, waits, skills -----------------------------------------

    def create_workspace(self, body):
        ws = layout.check_id("workspace", body.get("workspace"))
        levels = (access_of(body.get("agent_access")), access_of(body.get("workspace_access")))
        with self.db().transaction():
            erasure.refuse_if_pending(self.conn, ws)  # SL-4.6
            self.conn.execute(
                "INSERT INTO tenant_workspaces VALUES (%s, %s, %s) ON CONFLICT (ws_key) DO UPDATE"
                " SET agent_access = EXCLUDED.agent_access, workspace_access = EXCLUDED.workspace_access",
                (ws, *levels))
        return {"outcome": "ok"}

    def create_agent(self, body):
        ws = layout.check_id("workspace", body.get("workspace"))
        agent = layout.check_id("agent", body.get("agent"))
        levels = (access_of(body.get("agent_access")), access_of(body.get("workspace_access")))
        try:
            with self.db().transaction():
                erasure.refuse_if_pending(self.conn, ws, agent)  # SL-4.6
                self.conn.execute(
                    "INSERT INTO tenant_agents VALUES (%s, %s, %s, %s) ON CONFLICT (ws_key, agent_key) DO UPDATE"
                    " SET agent_access = EXCLUDED.agent_access, workspace_access = EXCLUDED.workspace_access",
                    (ws, agent, *levels))
        except psycopg.errors.ForeignKeyViolation as e:
            raise Refused("unknown_entity", f"no workspace {ws}") from e
        return {"outcome": "ok"}

    def create_session(self, turn):
        ids = self.turn_ids(turn)
        try:
            # Creating a session that exists changes nothing (its activity is its own).
            self.db().execute(
                "INSERT INTO chat_sessions (ws_key, agent_key, chat_key, active_ms)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING", (*ids, self.now_ms))
        except psycopg.errors.ForeignKeyViolation as e:
            raise Refused("unknown_entity", f"no agent {ids[1]} in workspace {ids[0]}") from e
        return {"outcome": "ok"}

    def activity(self, turn):
        return self.file_op(self.turn_ids(turn), lambda access: {"outcome": "ok"})

    def delete_rows(self, table, where, keys, what):
        """SC-6.1: the row goes; its AFTER DELETE trigger (and those of the rows its cascade
        removes) records the prefixes, stamped with this request's now_ms."""
        with self.db().transaction():
            self.conn.execute("SELECT set_config(%s, %s, true)", (schema.NOW_SETTING, str(self.now_ms)))
            gone = self.conn.execute(f"DELETE FROM {table} WHERE {where}", keys).rowcount
        if gone == 0:
            raise Refused("unknown_entity", f"no {what} {'/'.join(keys)}")
        return {"outcome": "ok"}

    def wait(self, turn, kind, hold_id, add):
        ids = self.turn_ids(turn)
        if kind not in ("queued", "parked", "waiting"):
            raise Refused("config", f"a wait is queued, parked or waiting, got {kind!r}")
        with self.db().transaction():
            if self.conn.execute("SELECT 1 FROM chat_sessions WHERE ws_key = %s AND agent_key = %s"
                                 " AND chat_key = %s FOR KEY SHARE", ids).fetchone() is None:
                raise Refused("unknown_entity", "no such session")
            # SC-5.2: a wait is data. Adding or removing one is not activity.
            if add:
                self.conn.execute("INSERT INTO chat_holds VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                                  (*ids, kind, hold_id))
            else:
                self.conn.execute("DELETE FROM chat_holds WHERE ws_key = %s AND agent_key = %s AND chat_key = %s"
                                  " AND hold_kind = %s AND hold_id = %s", (*ids, kind, hold_id))
        return {"outcome": "ok"}

    def publish_skill(self, body):
        ws = layout.check_id("workspace", body.get("workspace"))
        files = sorted((layout.check_skill_file(p), c.encode("utf-8", "surrogatepass"))
                       for p, c in body.get("files", {}).items())
        if not files:
            raise Refused("empty_path", "a skill version needs at least one file")
        # A version's hash covers every path and its bytes, length-prefixed so no two differ.
        version = hashlib.sha256()
        for path, content in files:
            raw = path.encode("utf-8", "surrogatepass")
            version.update(b"%d:%s%d:%s" % (len(raw), raw, len(content), content))
        sha = version.hexdigest()
        prefix = layout.skill_prefix(ws, sha)
        for path, _ in files:
            layout.check_key_length(prefix, path)
        with self.db().transaction():
            # Holding the workspace row keeps a delete_workspace from missing this version.
            if self.conn.execute("SELECT 1 FROM tenant_workspaces WHERE ws_key = %s FOR KEY SHARE",
                                 (ws,)).fetchone() is None:
                raise Refused("unknown_entity", f"no workspace {ws}")
            for path, content in files:
                digest = hashlib.sha256(content).hexdigest()
                text = extract_text(content)
                if text is not None:
                    self.store.put(layout.text_key(prefix, path), content, self.now_ms, digest)
                self.store.put(prefix + path, content, self.now_ms, digest)
        return {"outcome": "published", "sha256": sha}

    # --- The sweep (sweep.py) ---------------------------------------------------------------

    def sweep(self, hook=None):
        return sweep.run(self, hook)

    # --- Dispatch ----------------------------------------------------------------------------

    def handle(self, body):
        op = body.get("op")
        if op == "write":
            return self.write(body["turn"], body["path"], body["content"])
        if op == "read":
            return self.read(body["turn"], body["path"])
        if op == "read_text":
            return self.read_text(body["turn"], body["path"])
        if op == "list":
            return self.list(body["turn"], body.get("prefix"))
        if op == "delete":
            return self.delete(body["turn"], body["path"])
        if op == "create_workspace":
            return self.create_workspace(body)
        if op == "create_agent":
            return self.create_agent(body)
        if op == "create_session":
            return self.create_session(body["turn"])
        if op == "activity":
            return self.activity(body["turn"])
        if op in ("add_wait", "remove_wait"):
            return self.wait(body["turn"], body.get("kind"), body.get("id"), op == "add_wait")
        if op == "delete_session":
            ids = self.turn_ids(body["turn"])
            return self.delete_rows("chat_sessions", "ws_key = %s AND agent_key = %s AND chat_key = %s", ids,
                                    "session")
        if op == "delete_agent":
            ids = (layout.check_id("workspace", body.get("workspace")), layout.check_id("agent", body.get("agent")))
            return self.delete_rows("tenant_agents", "ws_key = %s AND agent_key = %s", ids, "agent")
        if op == "delete_workspace":
            ids = (layout.check_id("workspace", body.get("workspace")),)
            return self.delete_rows("tenant_workspaces", "ws_key = %s", ids, "workspace")
        if op == "publish_skill":
            return self.publish_skill(body)
        if op == "sweep":
            return self.sweep()
        if op == "apply_lifecycle":
            return lifecycle.apply(self.db(), self.store, body["session_backstop_days"], self.ttl_ms // DAY_MS,
                                   self.rule_limit)
        if op == "crash_at":
            if body.get("point") not in CRASH_POINTS:
                raise ValueError(f"unknown crash point {body.get('point')!r}")
            self.armed = body["point"]
            return {"outcome": "ok"}
        if op == "write_during_sweep":
            return race.write_during_sweep(self, body["turn"], body["path"], body["content"])
        if op == "person":
            return {"outcome": "credentials", "headers": self.people.tokens.mint(body)}
        # Part SL (capability retention_policies): policies.py.
        if op == "set_session_count":
            return policies.set_session_count(self.db(), body)
        if op == "promote":
            return policies.promote(self, body["turn"], body["from"], body["to"])
        if op == "tool_output":
            return policies.tool_output(self, body["turn"], body["content"], self.tool_output_limit)
        if op == "close_session":  # capability session_close
            return policies.close_session(self, body["turn"])
        if op == "concurrent_sweeps":  # capability concurrent_sweeps
            return race.concurrent_sweeps(self)
        if op == "request_erasure":  # capability erasure_obligations: erasure.py
            return erasure.request(self, body)
        if op == "set_workspace_retention":  # capability workspace_retention: retention.py
            return retention.set_workspace_retention(self.db(), body)
        raise ValueError(f"unknown op {op!r}")


class PeopleApi:
    """The people's door (SPEC.md part SF) onto the same files as the agent's: each HTTP request
    becomes one operation of `Scoped`, with a person's authorities in place of the agent's
    settings (SF-2.4). people.py speaks HTTP, decodes URLs and checks tokens; this class decides."""

    def __init__(self, service, max_upload_bytes):
        self.service = service
        self.tokens = people.Tokens()
        self.max_upload_bytes = max_upload_bytes

    def handle(self, method, target, claims, now_ms, read_body):
        try:
            if claims is None:  # SF-2.1: before anything else is looked at
                raise Refused("unauthenticated", "no credentials, or credentials this service did not mint")
            if now_ms is not None:
                self.service.now_ms = now_ms
            return self.route(method, target, claims, read_body)
        except Refused as r:
            return people.refusal(r)
        except psycopg.OperationalError as e:
            return people.refusal(Refused("database_unavailable", str(e)))
        except Crash as c:
            # capability crash_points, reached by a person's request: die as a crash does.
            log(f"crashed at {c.point} during {method} {target}")
            os._exit(137)

    def route(self, method, target, claims, read_body):
        upload = None
        if method == "PUT":
            # SF-4.3 before the body is read, so an oversized one is never held in memory.
            upload = read_body(self.max_upload_bytes)
            if upload is None:
                raise Refused("too_large", f"an upload is at most {self.max_upload_bytes} bytes")
        parts = people.split_target(target)
        if parts is None:
            raise Refused("not_found", "no such route; the API is /v1/agent-sessions/{id}/files[/{scope}/{path}]")
        raw_id, raw_scope, raw_path = parts
        # SF-2.5: the session, in the caller's workspace only (SF-2.2), then the scope, then the path.
        session_id = people.decode_name(raw_id)
        ids = self.find_session(claims, session_id)
        if raw_scope is None:
            if method != "GET":
                raise Refused("not_found", f"{method} is not an operation on a session's files listing")
            return self.listing(claims, ids)
        scope = people.decode_name(raw_scope)
        if scope not in people.SCOPES:
            raise Refused("unknown_scope", f"{raw_scope.decode('latin-1')!r} is not session, agent or workspace")
        if method not in ("GET", "PUT", "DELETE"):
            raise Refused("not_found", f"{method} is not an operation on a file")
        guest = people.decode_path(scope, raw_path)
        target_ = layout.resolve(guest, for_listing=False)
        prefix = Scoped.scope_prefix(target_, ids, None)
        layout.check_key_length(prefix, target_.rel)
        level = people.access_of(claims, session_id, scope)

        def check(write):
            def run(_agent_access):
                if not people.may(level, write):
                    raise Refused("permission_denied", f"your access to {scope} scope is {level}")
            return run

        s = self.service
        if method == "PUT":
            def plan(access):
                check(True)(access)
                return target_, prefix, upload

            written = s.store_file(ids, plan)
            return people.json_answer(201, {"path": written["path"], "scope": scope, "size": len(upload)})
        if method == "GET":
            def fetch(access):
                check(False)(access)
                got = s.store.get(prefix + target_.rel)
                if got is None:
                    raise Refused("not_found", f"no file {guest}")
                return got[0]

            body = s.file_op(ids, fetch, activity=False)
            name = target_.rel.rsplit("/", 1)[-1]
            return people.Answer(200, body, {
                "Content-Type": "application/octet-stream",
                "Content-Disposition": "attachment; filename*=UTF-8''" + urllib.parse.quote(name, safe=""),
                "X-Content-Type-Options": "nosniff",
            })

        def remove(access):
            check(True)(access)  # SF-4.4: a removal needs write
            if s.store.head(prefix + target_.rel) is None:
                raise Refused("not_found", f"no file {guest}")
            s.store.delete(layout.text_key(prefix, target_.rel))
            s.store.delete(prefix + target_.rel)

        s.file_op(ids, remove)
        return people.Answer(204)

    def find_session(self, claims, session_id):
        """(workspace, agent, session) of the session with this id in the caller's workspace.
        Another workspace's session is looked for nowhere, so it is answered as a missing one."""
        ws = claims["ws"]
        layout.check_id("session", session_id if session_id is not None else "")
        row = self.service.db().execute(
            "SELECT agent_key FROM chat_sessions WHERE ws_key = %s AND chat_key = %s ORDER BY agent_key LIMIT 1",
            (ws, session_id)).fetchone()
        if row is None:
            raise Refused("unknown_entity", "no such session")
        return ws, row[0], session_id

    def listing(self, claims, ids):
        """SF-1.2, SF-2.6, SF-2.7: every file of every scope the person may read, in byte order of
        its guest path (SC-4.4); the scopes they may not read are left out, never refused."""
        s = self.service
        readable = [sc for sc in people.SCOPES if people.may(people.access_of(claims, ids[2], sc), False)]

        def op(_agent_access):
            files = []
            for scope in readable:
                target = layout.Target(scope, "", True)
                base = Scoped.scope_prefix(target, ids, None)
                for key, size in s.store.objects(base):
                    rel = key[len(base):]
                    if not layout.is_text_or_marker(rel):
                        files.append({"path": target.guest(rel), "scope": scope, "size": size})
            files.sort(key=lambda f: f["path"].encode("utf-8", "surrogatepass"))
            return files

        files = s.file_op(ids, op, activity=False)
        writable = [sc for sc in people.SCOPES if people.may(people.access_of(claims, ids[2], sc), True)]
        return people.json_answer(200, {"files": files, "writable": writable})


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    service = None
    lock = threading.Lock()  # one operation at a time, from the pipe or from HTTP
    api_url = None
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "init":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error", "in_reply_to": msg["id"], "message": f"I speak {PROTOCOL} only"})
                continue
            try:
                if msg.get("profile") == "scoped":
                    service = Scoped(msg)
                    knobs = msg.get("knobs", {})
                    service.people = PeopleApi(service, int(knobs.get("max_upload_bytes", DEFAULT_MAX_UPLOAD)))
                    api_url = people.serve(service.people, lock)
            except Exception as e:
                log(f"init failed: {e!r}")
                send({"type": "error", "in_reply_to": msg["id"], "message": f"init failed: {e!r}"})
                continue
            init_ok = {"type": "init_ok", "in_reply_to": msg["id"], "protocol": PROTOCOL,
                       "implementation": "python-scoped example 1.2", "profiles": ["scoped"],
                       "capabilities": ["crash_points", "write_during_sweep", "written_at_stamp", "people_api",
                                        "retention_policies", "session_close", "concurrent_sweeps",
                                        "erasure_obligations", "workspace_retention"],
                       "ledger": schema.LEDGER, "erasure": schema.ERASURE}
            if api_url is not None:
                init_ok["people_api"] = api_url
            send(init_ok)
            continue
        if msg["type"] != "request":
            log(f"ignoring a message of type {msg['type']!r}")
            continue
        try:
            if service is None:
                raise RuntimeError("a request arrived before an init naming the scoped profile")
            try:
                with lock:
                    service.now_ms = msg["now_ms"]
                    body = service.handle(msg["body"])
            except Refused as r:
                body = {"outcome": "refused", "reason": r.reason, "message": r.message}
            except psycopg.OperationalError as e:
                body = {"outcome": "refused", "reason": "database_unavailable", "message": str(e)}
            send({"type": "reply", "in_reply_to": msg["id"], "body": body})
        except Crash as c:
            # Nothing uncommitted survives: the transaction was rolled back as the crash unwound;
            # close the connection before answering so no lock outlives this process's answer.
            service.conn.close()
            send({"type": "reply", "in_reply_to": msg["id"], "body": {"outcome": "crashed", "point": c.point}})
            log(f"crashed at {c.point}; waiting to be killed")
            for _ in sys.stdin:  # the harness kills this process; answer nothing more
                pass
            return
        except Exception as e:  # a bug: report it, keep serving
            log(f"request {msg['id']} failed: {e!r}")
            send({"type": "error", "in_reply_to": msg["id"], "message": repr(e)})


if __name__ == "__main__":
    main()

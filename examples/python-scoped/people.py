"""The people's files API (SPEC.md part SF) over Python's own http.server, beside the agent's door.

Three things live here, each on its own:

- `decode_path`: how a URL's path becomes a guest path (SF-3): split on `/`, each segment
  percent-decoded exactly once, here and nowhere else (http.server hands the request target over
  undecoded, so there is no router that decodes first).
- `Tokens`: this implementation's credentials: HMAC-SHA256-signed claims (workspace, authorities,
  conversations) under a key drawn when the process starts, sent in the header
  `x-pyscoped-person`. Nothing is stored; a restart draws a new key, and the harness asks for
  credentials again after every restart (PROTOCOL.md, "Credentials are yours").
- `serve`: a threading HTTP server on 127.0.0.1 whose handler turns each request into one call on
  the scoped service, under the lock the protocol loop holds too, so the pipe and HTTP never run
  an operation at the same time (they share one database connection).

Statuses follow SF-1.5's table; where SF-1.2 lets us choose, an upload answers 201 and a removal
204 (with no body).
"""

import base64
import hashlib
import hmac
import http.server
import json
import os
import re
import sys
import threading

from layout import Refused

PREFIX = "/v1/agent-sessions/"
TOKEN_HEADER = "x-pyscoped-person"
NOW_HEADER = "tidemark-now-ms"
ACCESS = ("none", "read", "read-write")
SCOPES = ("session", "agent", "workspace")  # the order of `writable` (SF-2.7)

STATUS = {  # SF-1.5
    "empty_path": 400, "traversal": 400, "absolute_path": 400, "empty_segment": 400,
    "directory_path": 400, "control_character": 400, "surrounding_whitespace": 400,
    "key_too_long": 400, "reserved_path": 400, "invalid_id": 400, "invalid_encoding": 400,
    "unauthenticated": 401,
    "permission_denied": 403,
    "not_found": 404, "unknown_entity": 404, "unknown_scope": 404,
    "too_large": 413,
    "storage_unavailable": 503, "database_unavailable": 503, "no_such_bucket": 503,
    "config": 500,
}

_HEX = re.compile(rb"%([0-9A-Fa-f]{2})")


# --- From a URL to a guest path (SF-3) -----------------------------------------------------------


def decode_segment(raw):
    """Percent-decode one URL path segment exactly once (SF-3.1). `raw` is the segment's bytes as
    sent. A `%` not followed by two hex digits stays as it is; the decoded bytes must be UTF-8
    (`invalid_encoding`, SF-3.2) and must not hold a `/` (an encoded slash, `traversal`)."""
    decoded = _HEX.sub(lambda m: bytes([int(m.group(1), 16)]), raw)
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("invalid_encoding", "a path segment does not decode to UTF-8") from None
    if "/" in text:
        raise Refused("traversal", "a percent-encoded slash inside a segment is refused (%2F)")
    return text


def split_target(target):
    """The request target as http.server hands it over (a str of the raw bytes, latin-1) ->
    (session id, scope, raw segments after the scope), each still as sent; the scope is None for
    the listing. Returns None for a URL that is not one of SF-1.1's routes. The query string is
    not part of the path (SF-3.1)."""
    raw = target.encode("latin-1").split(b"?", 1)[0]
    if not raw.startswith(PREFIX.encode()):
        return None
    parts = raw[len(PREFIX):].split(b"/")
    if len(parts) < 2 or parts[1] != b"files":
        return None
    if len(parts) == 2:
        return parts[0], None, None
    return parts[0], parts[2], parts[3:]


def decode_name(raw):
    """The id or the scope segment, decoded once as every segment is; a segment that does not
    decode to one segment of UTF-8 is None (no id, no scope can be spelled so)."""
    try:
        return decode_segment(raw)
    except Refused:
        return None


def decode_path(scope, raw_segments):
    """The guest path `{scope}/{path}` from the segments after the scope (SF-3.1), each decoded
    once and joined with `/`; SC-2 judges the result. No segment after the scope is the bare
    scope (`session`), which SC-2 answers `empty_path`."""
    if not raw_segments:
        return scope
    return scope + "/" + "/".join(decode_segment(seg) for seg in raw_segments)


# --- Credentials ---------------------------------------------------------------------------------


class Tokens:
    """HMAC-signed claims: `<base64url(json claims)>.<hex hmac-sha256>`. The claims are exactly
    the `person` request's workspace, authorities and conversations."""

    def __init__(self, key=None):
        self.key = key if key is not None else os.urandom(32)

    def mint(self, body):
        claims = {
            "ws": body["workspace"],
            "agent": body.get("agent_files") or "none",
            "workspace": body.get("workspace_files") or "none",
            "sessions": sorted(set(body.get("sessions") or [])),
        }
        for scope in ("agent", "workspace"):
            if claims[scope] not in ACCESS:
                raise Refused("config", f"an authority is none, read or read-write, got {claims[scope]!r}")
        payload = base64.urlsafe_b64encode(json.dumps(claims, sort_keys=True).encode()).decode().rstrip("=")
        return {TOKEN_HEADER: f"{payload}.{self._sign(payload)}"}

    def _sign(self, payload):
        return hmac.new(self.key, payload.encode(), hashlib.sha256).hexdigest()

    def check(self, header):
        """The claims of a token this process signed, or None (`unauthenticated`, SF-2.1)."""
        if not header or header.count(".") != 1:
            return None
        payload, signature = header.split(".")
        if not hmac.compare_digest(signature, self._sign(payload)):
            return None
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def access_of(claims, session_id, scope):
    """SF-2.3: session scope is read-write to a person in the conversation and none to anyone
    else; the longer-lived scopes are the person's storage authorities, never the agent's
    settings (SF-2.4)."""
    if scope == "session":
        return "read-write" if session_id in claims["sessions"] else "none"
    return claims[scope]


def may(level, write):
    return level == "read-write" or (level == "read" and not write)


# --- HTTP ----------------------------------------------------------------------------------------


class Answer:
    def __init__(self, status, body=b"", headers=None):
        self.status = status
        self.body = body
        self.headers = headers or {}


def json_answer(status, value):
    return Answer(status, json.dumps(value).encode(), {"Content-Type": "application/json"})


def refusal(r):
    return json_answer(STATUS.get(r.reason, 500), {"error": {"reason": r.reason, "message": r.message}})


def serve(api, lock):
    """Start the API on an ephemeral loopback port in a daemon thread; returns its base URL.
    `api` answers (method, target, claims, now_ms, read_body) with an Answer."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # stderr only, as the protocol asks
            print("people.py:", fmt % args, file=sys.stderr, flush=True)

        def answer(self, a):
            self.send_response(a.status)
            for name, value in a.headers.items():
                self.send_header(name, value)
            if self.close_connection:
                # Said out loud, so the client opens a new connection for its next request.
                self.send_header("Connection", "close")
            self.send_header("Content-Length", str(len(a.body)))
            self.end_headers()
            self.wfile.write(a.body)

        def read_body(self, limit):
            """The request body, or None when it is longer than `limit` (the connection is then
            closed rather than drained)."""
            self.body_read = True
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                chunks, size = [], 0
                while True:
                    length = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if length == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    size += length
                    if size > limit:
                        self.close_connection = True
                        return None
                    chunks.append(self.rfile.read(length))
                    self.rfile.readline()
                return b"".join(chunks)
            length = int(self.headers.get("Content-Length") or 0)
            if length > limit:
                self.close_connection = True
                return None
            return self.rfile.read(length)

        def handle_one(self):
            self.body_read = False
            claims = api.tokens.check(self.headers.get(TOKEN_HEADER))
            now = self.headers.get(NOW_HEADER)
            try:
                with lock:
                    a = api.handle(self.command, self.path, claims, int(now) if now else None, self.read_body)
            except Exception as e:  # a bug: say so (no reason of SF-1.5 fits, so a harness fails the step)
                print(f"people.py: {self.command} {self.path} failed: {e!r}", file=sys.stderr, flush=True)
                a = json_answer(500, {"error": {"reason": "internal", "message": repr(e)}})
                self.close_connection = True
            if not self.body_read and (self.headers.get("Content-Length", "0") != "0"
                                       or "Transfer-Encoding" in self.headers):
                # A body refused unread (unauthenticated, too large) must never be read as the
                # next request: this connection ends with this answer.
                self.close_connection = True
            self.answer(a)

        do_GET = do_PUT = do_DELETE = do_POST = do_PATCH = handle_one

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="people-api", daemon=True).start()
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"

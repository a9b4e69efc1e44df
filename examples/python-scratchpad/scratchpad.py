#!/usr/bin/env python3
"""A scratchpad session workspace (SPEC.md part SP), written from the spec alone, speaking the
tidemark/1 protocol (conformance/PROTOCOL.md) on stdin/stdout. Python 3.11, standard library only.

    tidemark run --impl 'python3 examples/python-scratchpad/scratchpad.py'

Layout: <root>/<t-|c-><session-hash>/<requester-hash>/<path>. Time is an input: every request
carries now_ms, and every timestamp this program writes or compares comes from it, never from
the machine's clock. Logs go to stderr; stdout carries only protocol lines.
"""

import hashlib
import json
import os
import re
import shutil
import stat
import sys

PROTOCOL = "tidemark/1"

MIB = 1024 * 1024
MINUTE_MS = 60 * 1000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS

# SP-5.6: every number is a knob with this default.
DEFAULT_KNOBS = {
    "session_cap_bytes": 1 * MIB,
    "requester_ceiling_bytes": 4 * MIB,
    "max_file_bytes": 1 * MIB,
    "thread_quiet_ms": 7 * DAY_MS,
    "pairing_idle_ms": 1 * HOUR_MS,
    "sweep_interval_ms": 5 * MINUTE_MS,
    "max_depth": 16,
    "max_path_bytes": 1024,
}

# SP-5.4: the only directory names the scheme writes under the root.
SESSION_DIR = re.compile(r"^[tc]-[0-9a-f]{16}$")


def log(*parts):
    print("scratchpad.py:", *parts, file=sys.stderr, flush=True)


class Refused(Exception):
    """A refusal (SP-6.1): a reason code and a message a person can act on. Nothing changed."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason
        self.message = message


# SP-1.2: identifiers never reach a path; directory names are these hashes.
def digest(tag, *parts):
    h = hashlib.sha256(tag.encode())
    for part in parts:
        h.update(b"\0" + part.encode())
    return h.hexdigest()[:16]


def session_dir_name(caller):
    # SP-1.1: inside a thread the session is the thread; outside, the channel-and-requester pair.
    if caller.get("thread") is not None:
        return "t-" + digest("thread", caller["channel"], caller["thread"])
    return "c-" + digest("pairing", caller["channel"], caller["requester"])


def requester_dir_name(caller):
    return digest("requester", caller["requester"])


def ms_to_ns(ms):
    return ms * 1_000_000


def mtime_ms(st):
    return st.st_mtime_ns // 1_000_000


class Scratchpad:
    def __init__(self, root, knobs):
        self.root = root
        self.knobs = dict(DEFAULT_KNOBS)
        for name, value in knobs.items():
            if name not in DEFAULT_KNOBS:
                raise ValueError(f"unknown knob {name!r}")
            self.knobs[name] = value
        self.now_ms = 0
        self.next_sweep_ms = None
        # SP-4.5: running byte counts per (session dir, requester dir), rebuilt from disk at start.
        self.usage = {}

    # ---- SP-1.3: the root -------------------------------------------------------------------

    def mounted(self):
        # The empty path is never resolved to anything: it is not ".", it is unmounted.
        return self.root != "" and os.path.isdir(self.root)

    def require_mounted(self):
        if not self.mounted():
            raise Refused("unmounted", "the scratchpad is not mounted; nothing was read or written")

    # ---- SP-2: guest paths, checked as bytes, refused rather than repaired ---------------------

    def check_path(self, raw):
        k = self.knobs
        if raw == b"":
            raise Refused("empty_path", "name a file: the path is empty")
        if b"\0" in raw:
            raise Refused("nul_byte", "the path contains a NUL byte")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("not_utf8", "the path is not valid UTF-8")
        if len(raw) > k["max_path_bytes"]:
            raise Refused("path_too_long", f"the path is longer than {k['max_path_bytes']} bytes")
        if text.startswith("/"):
            raise Refused("absolute_path", "use a path relative to your scratchpad, not an absolute one")
        if "\\" in text:
            raise Refused("backslash", "use '/' to separate directories; a backslash is not allowed")
        components = text.split("/")
        # Left to right: the first offending component names the refusal (SP-6.2).
        for c in components:
            if c == "..":
                raise Refused("traversal", "'..' is not allowed in a path; paths never climb")
            if c in ("", "."):
                raise Refused("non_canonical", "write the path without empty or '.' components")
        if len(components) > k["max_depth"]:
            raise Refused("too_deep", f"the path has more than {k['max_depth']} components")
        return components

    # ---- resolution on disk ---------------------------------------------------------------------

    def probe(self, parts):
        """Walks `parts` below the root without following links. Returns (kind, stat) with kind
        one of "file", "dir", "missing", "not_a_dir"; a link anywhere is refused (SP-2.7)."""
        path = self.root
        st = None
        for i, part in enumerate(parts):
            path = os.path.join(path, part)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                return "missing", None
            except NotADirectoryError:
                return "not_a_dir", None
            if stat.S_ISLNK(st.st_mode):
                raise Refused("symlink_escape", "the path meets a symbolic link; links are never followed")
            if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
                return "not_a_dir", None
        if stat.S_ISREG(st.st_mode):
            return "file", st
        if stat.S_ISDIR(st.st_mode):
            return "dir", st
        return "missing", None

    def abspath(self, parts):
        return os.path.join(self.root, *parts)

    def touch(self, path):
        """SP-3.5: every timestamp comes from the handed-in clock."""
        os.utime(path, ns=(ms_to_ns(self.now_ms), ms_to_ns(self.now_ms)), follow_symlinks=False)

    def files_below(self, parts):
        """Every regular file below the directory `parts` (links skipped), as
        (parts relative to the root, size, mtime_ms)."""
        out = []
        top = self.abspath(parts)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                if stat.S_ISREG(st.st_mode):
                    rel = os.path.relpath(p, self.root).split(os.sep)
                    out.append((rel, st.st_size, mtime_ms(st)))
        return out

    # ---- operations -----------------------------------------------------------------------------

    def write(self, caller, raw_path, content):
        self.require_mounted()
        components = self.check_path(raw_path)
        k = self.knobs
        if len(content) > k["max_file_bytes"]:
            raise Refused("too_large", f"the file is larger than {k['max_file_bytes']} bytes and can never fit")
        session, me = session_dir_name(caller), requester_dir_name(caller)
        target = [session, me] + components
        kind, st = self.probe(target)
        if kind == "dir":
            raise Refused("is_a_directory", f"{'/'.join(components)} is a directory")
        if kind == "not_a_dir":
            raise Refused("not_a_directory", f"a parent of {'/'.join(components)} is a file")
        old = st.st_size if kind == "file" else 0
        new = len(content)

        # SP-4.1: the ceiling, summed across all the requester's sessions, refuses first.
        mine = sum(b for (s, r), b in self.usage.items() if r == me)
        if mine - old + new > k["requester_ceiling_bytes"]:
            raise Refused(
                "ceiling_exceeded",
                f"this write would take you over your {k['requester_ceiling_bytes']}-byte ceiling; remove some files",
            )

        # SP-4.2: the session cap evicts oldest-first, inside this session only.
        evicted = []
        in_session = sum(b for (s, r), b in self.usage.items() if s == session)
        overflow = in_session - old + new - k["session_cap_bytes"]
        if overflow > 0:
            candidates = [
                (mtime, "/".join(rel[1:]), rel, size)
                for rel, size, mtime in self.files_below([session])
                if rel != target
            ]
            candidates.sort(key=lambda c: (c[0], c[1]))
            for _, listing, rel, size in candidates:
                if overflow <= 0:
                    break
                os.unlink(self.abspath(rel))
                self.touch(self.abspath(rel[:-1]))
                self.add_usage(session, rel[1], -size)
                overflow -= size
                evicted.append(listing)

        # SP-3.1: the write lands in the caller's own subtree; parents are created as needed.
        for depth in range(1, len(target)):
            d = self.abspath(target[:depth])
            if not os.path.isdir(d):
                os.mkdir(d)
                self.touch(d)
                if depth > 1:
                    self.touch(self.abspath(target[: depth - 1]))
        path = self.abspath(target)
        with open(path, "wb") as f:
            f.write(content)
        self.touch(path)
        if kind == "missing":
            self.touch(self.abspath(target[:-1]))
        self.add_usage(session, me, new - old)
        return {"outcome": "written", "path": "/".join([me] + components), "evicted": evicted}

    def resolve_read(self, caller, components):
        """SP-3.2: own path first, then the path as the session listing shows it."""
        session, me = session_dir_name(caller), requester_dir_name(caller)
        saw_dir = None
        for parts in ([session, me] + components, [session] + components):
            kind, _ = self.probe(parts)
            if kind == "file":
                return "file", parts
            if kind == "dir" and saw_dir is None:
                saw_dir = parts
        if saw_dir is not None:
            return "dir", saw_dir
        return "missing", None

    def read(self, caller, raw_path):
        self.require_mounted()
        components = self.check_path(raw_path)
        kind, parts = self.resolve_read(caller, components)
        if kind == "dir":
            raise Refused("is_a_directory", f"{'/'.join(components)} is a directory; list it instead")
        if kind == "missing":
            raise Refused("not_found", f"no file {'/'.join(components)} in this session")
        with open(self.abspath(parts), "rb") as f:
            return {"outcome": "content", "content": f.read().hex()}

    def list(self, caller, raw_path):
        self.require_mounted()
        session = session_dir_name(caller)
        if raw_path is None:
            kind, parts = self.probe([session])[0], [session]
            if kind != "dir":
                return {"outcome": "listing", "entries": []}
        else:
            components = self.check_path(raw_path)
            kind, parts = self.resolve_read(caller, components)
            if kind == "missing":
                raise Refused("not_found", f"nothing at {'/'.join(components)} in this session")
        if kind == "file":
            files = [(parts, os.lstat(self.abspath(parts)).st_size, None)]
        else:
            files = self.files_below(parts)
        entries = [{"path": "/".join(rel[1:]), "size": size} for rel, size, _ in files]
        entries.sort(key=lambda e: e["path"])
        return {"outcome": "listing", "entries": entries}

    def remove(self, caller, raw_path):
        self.require_mounted()
        components = self.check_path(raw_path)
        session, me = session_dir_name(caller), requester_dir_name(caller)
        target = [session, me] + components
        kind, st = self.probe(target)
        if kind == "dir":
            raise Refused("is_a_directory", f"{'/'.join(components)} is a directory")
        if kind != "file":
            raise Refused("not_found", f"you have no file {'/'.join(components)}")
        os.unlink(self.abspath(target))
        self.touch(self.abspath(target[:-1]))
        self.add_usage(session, me, -st.st_size)
        return {"outcome": "removed"}

    def add_usage(self, session, requester, delta):
        key = (session, requester)
        total = self.usage.get(key, 0) + delta
        if total > 0:
            self.usage[key] = total
        else:
            self.usage.pop(key, None)

    # ---- SP-5: retention ------------------------------------------------------------------------

    def rebuild_usage(self):
        self.usage = {}
        for session in sorted(os.listdir(self.root)):
            if not os.path.isdir(os.path.join(self.root, session)) or os.path.islink(os.path.join(self.root, session)):
                continue
            for rel, size, _ in self.files_below([session]):
                if len(rel) > 2:
                    self.add_usage(session, rel[1], size)

    def sweep(self):
        if not self.mounted():
            return []
        swept = []
        for name in sorted(os.listdir(self.root)):
            path = os.path.join(self.root, name)
            if not SESSION_DIR.match(name) or os.path.islink(path) or not os.path.isdir(path):
                continue  # SP-5.4: not ours
            files = self.files_below([name])
            # SP-5.1: age from the newest file; SP-5.3: an empty session falls back to its directory.
            newest = max((m for _, _, m in files), default=mtime_ms(os.lstat(path)))
            timer = self.knobs["thread_quiet_ms"] if name.startswith("t-") else self.knobs["pairing_idle_ms"]
            if self.now_ms - newest >= timer:  # SP-5.2: the boundary is inclusive
                shutil.rmtree(path)
                for key in [k for k in self.usage if k[0] == name]:
                    del self.usage[key]
                swept.append(name)
        if swept:
            log("swept", ", ".join(swept))
        return swept

    def start(self):
        # SP-5.5: sweep once at startup, then every sweep_interval_ms after the previous sweep.
        if self.mounted():
            self.rebuild_usage()
        self.next_sweep_ms = self.now_ms + self.knobs["sweep_interval_ms"]
        return {"outcome": "swept", "swept": self.sweep()}

    def tick(self):
        if self.now_ms < self.next_sweep_ms:
            return {"outcome": "swept", "swept": []}
        self.next_sweep_ms = self.now_ms + self.knobs["sweep_interval_ms"]
        return {"outcome": "swept", "swept": self.sweep()}

    def handle(self, body):
        op = body["op"]
        if op == "names":
            # SP-1.2: how this implementation names the caller's directories; touches nothing.
            caller = body["caller"]
            return {"outcome": "names", "session": session_dir_name(caller),
                    "requester": requester_dir_name(caller)}
        if op == "start":
            return self.start()
        if self.next_sweep_ms is None:
            raise RuntimeError(f"a {op} request arrived before start")
        if op == "tick":
            return self.tick()
        caller = body["caller"]
        try:
            if op == "write":
                return self.write(caller, bytes.fromhex(body["path"]), bytes.fromhex(body["content"]))
            if op == "read":
                return self.read(caller, bytes.fromhex(body["path"]))
            if op == "list":
                path = body.get("path")
                return self.list(caller, None if path is None else bytes.fromhex(path))
            if op == "remove":
                return self.remove(caller, bytes.fromhex(body["path"]))
        except Refused as r:
            return {"outcome": "refused", "reason": r.reason, "message": r.message}
        raise RuntimeError(f"unknown op {op!r}")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    pad = None
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "init":
            if msg.get("profile") is not None:
                pad = Scratchpad(msg["root"], msg.get("knobs", {}))
            send({
                "type": "init_ok",
                "in_reply_to": msg["id"],
                "protocol": PROTOCOL,
                "implementation": "python-scratchpad example 1.0",
                "profiles": ["scratchpad"],
                # It names directories with SP-1.2's recommended digest and stores any bytes.
                "capabilities": ["sp12_digest", "binary_content"],
            })
        elif msg["type"] == "request":
            try:
                if pad is None:
                    raise RuntimeError("a request arrived before an init naming a profile")
                pad.now_ms = msg["now_ms"]
                send({"type": "reply", "in_reply_to": msg["id"], "body": pad.handle(msg["body"])})
            except Exception as e:  # a bug or a disk error: report it, keep serving
                log(f"request {msg['id']} failed: {e!r}")
                send({"type": "error", "in_reply_to": msg["id"], "message": repr(e)})
        else:
            log(f"ignoring a message of type {msg['type']!r}")


if __name__ == "__main__":
    main()

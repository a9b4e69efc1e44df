"""The races only a program can stage, because they need a hook inside its own sweep (PROTOCOL.md):
`write_during_sweep`, a write sent while a sweep holds the sessions it claimed (SPEC.md SC-5.6),
and `concurrent_sweeps`, a second sweep started while the first holds its claims (SL-1.3). Each
runs the other party on a connection of its own, as another process would, and lets the first
sweep go on once the other party is seen waiting for a row lock or has finished. They live apart
from the operations because no deployment runs them."""

import threading
import time

import psycopg

from layout import Refused

# How long the first sweep waits for the other party to block or finish before it goes on.
PATIENCE_S = 5


def _race(service, other):
    """Run `service.sweep` with a hook that starts `other(racer)` on a second Scoped (its own
    connection) once the sweep's claims are made, then waits until the racer's backend waits on
    a lock or the racer is done. Returns what `other` returned; re-raises what it raised."""
    racer = type(service)(service.init)
    racer.now_ms = service.now_ms
    pid = racer.conn.info.backend_pid
    outcome = {}

    def run():
        try:
            outcome["value"] = other(racer)
        except Exception as e:  # handed to the caller below
            outcome["error"] = e

    thread = threading.Thread(target=run)

    def hook():
        thread.start()
        with psycopg.connect(service.init["postgres_url"], autocommit=True) as watch:
            deadline = time.monotonic() + PATIENCE_S
            while thread.is_alive() and time.monotonic() < deadline:
                row = watch.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                                    (pid,)).fetchone()
                if row and row[0] == "Lock":
                    return
                time.sleep(0.01)

    try:
        first = service.sweep(hook)
    finally:
        if thread.ident is not None:
            thread.join()
        racer.conn.close()
    if "error" in outcome:
        raise outcome["error"]
    return first, outcome["value"]


def write_during_sweep(service, turn, path, content):
    """Capability write_during_sweep: the write runs on its own connection once the sweep has
    claimed its sessions, and the sweep goes on only when the write is seen waiting for a row
    lock (or has finished, when its session was not claimed). Answers the write's outcome."""

    def write(racer):
        try:
            return racer.write(turn, path, content)
        except Refused as r:
            return {"outcome": "refused", "reason": r.reason, "message": r.message}

    return _race(service, write)[1]


def concurrent_sweeps(service):
    """Capability concurrent_sweeps (SL-1.3): a second sweep, as a second process would run it,
    starts once the first has claimed the sessions its policies sweep and before it deletes
    anything; the first goes on once the second has finished (it passes by every row the first
    holds, SKIP LOCKED) or waits on a lock. Answers what both swept together."""
    first, second = _race(service, lambda racer: racer.sweep())
    return {"outcome": "swept", "sessions": first["sessions"] + second["sessions"],
            "obligations": first["obligations"] + second["obligations"]}

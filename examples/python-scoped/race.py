"""The race of the capability `write_during_sweep` (PROTOCOL.md): a write sent while a sweep holds
the sessions it claimed (SPEC.md SC-5.6). Only the program can stage it, because the race needs a
hook inside its own sweep; it lives apart from the operations because no deployment runs it."""

import threading
import time

import psycopg

from layout import Refused


def write_during_sweep(service, turn, path, content):
    """Capability write_during_sweep: the write runs on its own connection once the sweep has
    claimed its sessions, and the sweep goes on only when the write is seen waiting for a row
    lock (or has finished, when its session was not claimed)."""
    racer = type(service)(service.init)
    racer.now_ms = service.now_ms
    pid = racer.conn.info.backend_pid
    outcome = {}

    def run():
        try:
            outcome["reply"] = racer.write(turn, path, content)
        except Refused as r:
            outcome["reply"] = {"outcome": "refused", "reason": r.reason, "message": r.message}
        except Exception as e:  # reported below as an error answer
            outcome["error"] = e

    thread = threading.Thread(target=run)

    def hook():
        thread.start()
        with psycopg.connect(service.init["postgres_url"], autocommit=True) as watch:
            deadline = time.monotonic() + 5
            while thread.is_alive() and time.monotonic() < deadline:
                row = watch.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                                    (pid,)).fetchone()
                if row and row[0] == "Lock":
                    return
                time.sleep(0.01)

    try:
        service.sweep(hook)
    finally:
        if thread.ident is not None:
            thread.join()
        racer.conn.close()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["reply"]

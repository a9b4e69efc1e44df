"""Unit tests of the sweep's part SL beyond the count (sweep.py, erasure.py, retention.py, race.py):
closes (SPEC.md SL-3), a workspace's own TTL (SL-5), erasure obligations and their proofs (SL-4)
and two sweeps at once (SL-1.3), each on a throwaway PostgreSQL (pgcluster.py) with an in-memory
store in place of S3, so a test can fail a key or count how often one was deleted.

    target/py-scoped/bin/python -m unittest discover -s examples/python-scoped
"""

import unittest

import layout
import pgcluster
import race
import scoped
from layout import Refused
from test_policies import MemoryStore

DAY_MS = scoped.DAY_MS
START_MS = 1767225600000  # 2026-01-01T00:00:00Z, where the scenarios start


class CountingStore(MemoryStore):
    """MemoryStore, counting each key's successful deletions and keeping the lifecycle rules."""

    def __init__(self):
        super().__init__()
        self.deletions = {}
        self.rules = None

    def delete_batch(self, keys):
        refused = super().delete_batch(keys)
        for key in keys:
            if key not in refused:
                self.deletions[key] = self.deletions.get(key, 0) + 1
        return refused

    def put_lifecycle(self, rules):
        self.rules = rules


class MemoryScoped(scoped.Scoped):
    """Scoped over the test's shared store, so a second sweep (race.py makes one of this type)
    sees the same bucket as the first."""

    def __init__(self, init):
        super().__init__(init)
        self.store = init["memory"]


CLUSTER = None


def setUpModule():
    global CLUSTER
    CLUSTER = pgcluster.Cluster()


def tearDownModule():
    if CLUSTER is not None:
        CLUSTER.stop()


class OnARealDatabase(unittest.TestCase):
    KNOBS = {"session_file_ttl_days": 30, "close_grace_days": 7}

    def setUp(self):
        if CLUSTER.base_url is None:
            self.skipTest(CLUSTER.why_not)
        self.store = CountingStore()
        self.init = {"postgres_url": CLUSTER.fresh_database(), "knobs": dict(self.KNOBS), "memory": self.store,
                     "s3": {"endpoint_url": "http://127.0.0.1:9", "region": "us-east-1", "bucket": "unused",
                            "access_key_id": "k", "secret_access_key": "s"}}
        self.service = self.start()
        self.now = START_MS
        self.op("create_workspace", workspace="w1", workspace_access="read-write")
        self.op("create_agent", workspace="w1", agent="a1")

    def start(self):
        service = MemoryScoped(self.init)
        self.addCleanup(service.conn.close)
        return service

    def op(self, name, **fields):
        self.service.now_ms = self.now
        return self.service.handle({"op": name, **fields})

    def refusal(self, name, **fields):
        try:
            self.op(name, **fields)
        except Refused as r:
            return r.reason
        return None

    def advance(self, days):
        self.now += int(days * DAY_MS)

    def session(self, session, ws="w1", agent="a1", path="session/f.txt"):
        turn = {"workspace": ws, "agent": agent, "session": session}
        self.op("create_session", turn=turn)
        self.op("write", turn=turn, path=path, content=session)
        return turn

    def files(self, session, ws="w1", agent="a1"):
        return self.store.keys(layout.session_prefix(ws, agent, session))

    def sweep(self):
        answer = self.op("sweep")
        return answer["sessions"], answer["obligations"]

    def sql(self, query, *args):
        return self.service.conn.execute(query, args).fetchall()


class AClosedSessionGoesAGraceAfterItsFirstClose(OnARealDatabase):
    def test_it_goes_on_the_day_its_grace_ends_and_not_a_minute_before(self):
        s1 = self.session("s1")
        self.session("s2")
        self.op("close_session", turn=s1)
        self.advance(7 - 1 / 1440)
        self.assertEqual(self.sweep(), (0, 0))
        self.advance(1 / 1440)
        self.assertEqual(self.sweep(), (1, 0))
        self.assertEqual((self.files("s1"), bool(self.files("s2"))), ([], True))

    def test_closing_is_no_activity_a_repeated_close_keeps_the_first_and_activity_reopens(self):
        s1, s2 = self.session("s1"), self.session("s2")
        active = self.sql("SELECT chat_key, active_ms FROM chat_sessions ORDER BY chat_key")
        self.op("close_session", turn=s1)
        self.op("close_session", turn=s2)
        self.advance(3)
        self.op("close_session", turn=s1)  # keeps the first close's time
        self.op("activity", turn=s2)  # reopens s2
        self.assertEqual(self.sql("SELECT closed_ms FROM chat_sessions ORDER BY chat_key"), [(START_MS,), (None,)])
        self.assertEqual(self.sql("SELECT chat_key, active_ms FROM chat_sessions WHERE chat_key = 's1'"),
                         [active[0]])
        self.advance(4)
        self.assertEqual(self.sweep(), (1, 0))
        self.assertEqual(self.files("s1"), [])
        self.assertNotEqual(self.files("s2"), [])

    def test_a_wait_holds_a_closed_session_and_a_missing_one_is_unknown(self):
        s1 = self.session("s1")
        self.op("close_session", turn=s1)
        self.op("add_wait", turn=s1, kind="waiting", id="wake")
        self.advance(8)
        self.assertEqual(self.sweep(), (0, 0))
        self.op("remove_wait", turn=s1, kind="waiting", id="wake")
        self.assertEqual(self.sweep(), (1, 0))
        self.assertEqual(self.refusal("close_session", turn={"workspace": "w1", "agent": "a1", "session": "s9"}),
                         "unknown_entity")
        self.assertEqual(self.sql("SELECT count(*) FROM chat_sessions"), [(1,)])


class TwoSweepsAtOnceTakeEachSessionOnce(OnARealDatabase):
    def test_the_second_sweep_passes_by_what_the_first_claimed_and_every_key_is_deleted_once(self):
        for name in ("s1", "s2", "s3"):
            self.op("close_session", turn=self.session(name))
        keep = self.session("s4")
        self.advance(7)
        self.op("activity", turn=keep)
        self.service.now_ms = self.now
        first, second = race._race(self.service, lambda racer: racer.sweep())
        # The second ran while the first held its claims: it found every closed session taken.
        self.assertEqual((first["sessions"], second["sessions"]), (3, 0))
        self.assertEqual(set(self.store.deletions.values()), {1})
        self.assertEqual(len(self.store.deletions), 6)  # three files and their texts
        self.assertEqual(self.op("concurrent_sweeps"), {"outcome": "swept", "sessions": 0, "obligations": 0})
        self.assertNotEqual(self.files("s4"), [])


class AWorkspacesOwnTtlDecidesForItsSessions(OnARealDatabase):
    def test_a_shorter_ttl_sweeps_sooner_a_longer_one_keeps_longer_and_a_put_replaces_it_whole(self):
        self.op("create_workspace", workspace="w2")
        self.op("create_agent", workspace="w2", agent="a1")
        self.op("set_workspace_retention", workspace="w1", session_file_ttl_days=60)
        self.op("set_workspace_retention", workspace="w1", session_file_ttl_days=2)
        self.op("set_workspace_retention", workspace="w2", session_file_ttl_days=60)
        self.session("s1")
        self.session("s1", ws="w2")
        self.advance(2)
        self.assertEqual(self.sweep(), (1, 0))
        self.assertEqual(self.files("s1"), [])
        self.advance(29)
        self.assertEqual(self.sweep(), (0, 0))
        self.op("set_workspace_retention", workspace="w2", session_file_ttl_days=None)  # the deployment's 30
        self.assertEqual(self.sweep(), (1, 0))

    def test_a_ttl_is_bounded_by_the_last_backstop_put_and_a_backstop_by_every_ttl(self):
        self.assertEqual(self.refusal("set_workspace_retention", workspace="w1", session_file_ttl_days=365),
                         "invalid_policy")
        self.assertEqual(self.refusal("set_workspace_retention", workspace="w9", session_file_ttl_days=7),
                         "unknown_entity")
        self.op("set_workspace_retention", workspace="w1", session_file_ttl_days=10)
        self.op("apply_lifecycle", session_backstop_days=100)
        self.assertEqual([r["Expiration"]["Days"] for r in self.store.rules if "Expiration" in r], [100, 80])
        self.assertEqual(self.refusal("set_workspace_retention", workspace="w1", session_file_ttl_days=100),
                         "invalid_policy")
        self.op("set_workspace_retention", workspace="w1", session_file_ttl_days=99)
        put = self.store.rules
        self.assertEqual(self.refusal("apply_lifecycle", session_backstop_days=99), "config")
        self.assertIs(self.store.rules, put, "a refused configuration is never sent")
        # The bound stays the last configuration put, 100 days, not the refused 99.
        self.assertEqual(self.refusal("set_workspace_retention", workspace="w1", session_file_ttl_days=99), None)

    def test_creating_the_workspace_again_keeps_it_and_deleting_the_workspace_ends_it(self):
        self.op("set_workspace_retention", workspace="w1", session_file_ttl_days=2)
        self.op("create_workspace", workspace="w1", workspace_access="read")
        self.assertEqual(self.sql("SELECT ttl_days FROM workspace_retention"), [(2,)])
        self.op("delete_workspace", workspace="w1")
        self.assertEqual(self.sql("SELECT ttl_days FROM workspace_retention"), [])


class AnErasureProvesWhatItsSweepsDeleted(OnARealDatabase):
    def erase(self, agent="a1", within_days=1, ws="w1"):
        return self.op("request_erasure", workspace=ws, agent=agent, deadline_ms=self.now + int(within_days * DAY_MS))

    def obligations(self):
        return self.sql("SELECT subject, deadline_ms - requested_ms, done_ms FROM subject_erasures ORDER BY erasure_id")

    def proof(self, recorded=True):
        condition = "IS NOT NULL" if recorded else "IS NULL"
        return sorted(k for (k,) in self.sql(f"SELECT object_key FROM subject_erasure_keys WHERE deleted_ms {condition}"))

    def test_its_keys_are_written_down_before_they_go_and_a_crash_between_leaves_them_to_the_next_sweep(self):
        turn = self.session("s1")
        self.op("write", turn=turn, path="agent/b.txt", content="b")
        every = sorted(self.store.data)
        self.erase()
        self.service.armed = "after_obligation_objects_deleted"
        with self.assertRaises(scoped.Crash):
            self.op("sweep")
        self.service.conn.close()
        self.service = self.start()  # the process again, from what was persisted
        self.assertEqual(self.store.data, {})
        self.assertEqual((self.proof(recorded=False), self.proof()), (every, []))
        self.assertEqual(self.obligations(), [("w1/a1", DAY_MS, None)])
        self.advance(1 / 24)
        self.assertEqual(self.sweep(), (0, 2))
        self.assertEqual((self.proof(), self.proof(recorded=False)), (every, []))
        self.assertEqual(self.obligations(), [("w1/a1", DAY_MS, self.now)])
        self.assertEqual(self.sql("SELECT key_prefix, erased_ms FROM erasure_orders ORDER BY key_prefix"),
                         [("agents/w1/a1/", self.now), ("sessions/w1/a1/s1/", self.now)])

    def test_a_key_that_fails_keeps_it_pending_and_only_the_keys_that_went_are_recorded(self):
        self.session("s1")
        self.session("s2")
        went, failing = self.files("s1"), self.files("s2")
        self.store.failing = set(failing)
        self.erase()
        self.assertEqual(self.sweep(), (0, 0))
        self.assertEqual(self.proof(), went)
        self.assertEqual(sorted(self.store.data), failing)
        self.assertEqual(self.proof(recorded=False), failing)
        self.assertNotIn(failing[0], self.proof())
        self.assertIsNone(self.obligations()[0][2])
        self.store.failing = set()
        self.advance(2)
        self.assertEqual(self.sweep(), (0, 3))  # the agent and its two sessions
        self.assertEqual(len(self.proof()), 4)
        self.assertEqual(self.obligations()[0][2], self.now)

    def test_its_id_is_refused_while_pending_and_names_a_new_subject_once_met(self):
        self.session("s1", path="workspace/old.txt")
        self.op("request_erasure", workspace="w1", agent=None, deadline_ms=self.now)
        self.assertEqual(self.refusal("create_workspace", workspace="w1"), "erasure_pending")
        self.assertEqual(self.refusal("create_agent", workspace="w1", agent="a1"), "unknown_entity")
        self.assertEqual(self.sweep(), (0, 4))
        self.op("create_workspace", workspace="w1", workspace_access="read-write")
        self.op("create_agent", workspace="w1", agent="a1")
        self.session("s1", path="workspace/new.txt")
        self.assertEqual(self.sweep(), (0, 0))
        self.assertIn("workspaces/w1/new.txt", self.store.data)

    def test_a_deletion_obligation_pending_under_the_subject_is_the_erasures_and_sc6_passes_it_by(self):
        old = self.session("old")
        self.store.failing = set(self.files("old"))
        self.op("delete_session", turn=old)
        self.assertEqual(self.sweep(), (0, 0))  # SC-6's obligation stays pending: its keys failed
        self.session("s1")
        self.store.failing = set(self.files("s1"))  # the erasure cannot finish yet
        self.erase()
        self.store.failing -= set(self.files("old"))
        self.assertEqual(self.sweep(), (0, 0))
        # SC-6's sweep left the old session's obligation to the erasure, whose sweep deleted and
        # recorded its keys though the erasure is not met.
        self.assertEqual(self.files("old"), [])
        self.assertEqual(self.sql("SELECT count(*) FROM erasure_orders WHERE erasure_id IS NOT NULL"
                                  " AND erased_ms IS NULL"), [(3,)])
        self.store.failing = set()
        self.assertEqual(self.sweep(), (0, 3))

    def test_a_deadline_before_now_or_a_missing_subject_is_refused_and_erases_nothing(self):
        self.session("s1")
        self.assertEqual(self.refusal("request_erasure", workspace="w1", agent="a1", deadline_ms=self.now - 1),
                         "invalid_policy")
        self.assertEqual(self.refusal("request_erasure", workspace="w1", agent="a9", deadline_ms=self.now),
                         "unknown_entity")
        self.assertEqual(self.refusal("request_erasure", workspace="w/1", agent=None, deadline_ms=self.now),
                         "invalid_id")
        self.assertEqual((self.obligations(), self.sql("SELECT count(*) FROM erasure_orders")), ([], [(0,)]))
        self.assertNotEqual(self.files("s1"), [])


if __name__ == "__main__":
    unittest.main()

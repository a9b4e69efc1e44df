"""Unit tests of part SL as this example builds it (policies.py and the sweep in scoped.py): the
count policy (SL-2), promotion (SL-6) and tool-output overflow (SL-7).

    target/py-scoped/bin/python -m unittest discover -s examples/python-scoped

The checks of a promotion and an overflow run against an in-memory store; the count runs its
real SQL and the real sweep on a throwaway PostgreSQL (pgcluster.py), with the same in-memory
store in place of S3, so a test can fail a DeleteObjects key on purpose.
"""

import hashlib
import unittest

import layout
import pgcluster
import policies
import scoped
from layout import Refused

DAY_MS = scoped.DAY_MS
START_MS = 1767225600000  # 2026-01-01T00:00:00Z, where the scenarios start


class MemoryStore:
    """The few calls of store.Store the tests reach, over a dict key -> (bytes, stamp). Keys in
    `failing` are refused by DeleteObjects, as the harness's `faults delete-failure` does."""

    def __init__(self):
        self.data = {}
        self.failing = set()

    def put(self, key, body, now_ms, digest):
        self.data[key] = (body, digest)

    def get(self, key):
        return self.data.get(key)

    def head(self, key):
        got = self.data.get(key)
        return None if got is None else got[1]

    def delete(self, key):
        self.data.pop(key, None)

    def keys(self, prefix, limit=None):
        found = sorted(k for k in self.data if k.startswith(prefix))
        return found[:limit] if limit else found

    def delete_batch(self, keys):
        assert len(keys) <= 1000
        refused = {k for k in keys if k in self.failing}
        for key in keys:
            if key not in refused:
                self.data.pop(key, None)
        return refused


def sha(body):
    return hashlib.sha256(body).hexdigest()


class LockedService:
    """Scoped's own checks (turn ids, scope prefixes, permissions) with a store_file that runs
    the plan as the real one does under the session's lock, counting how often it was reached."""

    turn_ids = staticmethod(scoped.Scoped.turn_ids)
    scope_prefix = staticmethod(scoped.Scoped.scope_prefix)
    need = staticmethod(scoped.Scoped.need)

    def __init__(self, access=None):
        self.store = MemoryStore()
        self.access = access or dict(scoped.DEFAULT_ACCESS)
        self.now_ms = START_MS
        self.locked = 0

    def store_file(self, ids, plan):
        self.locked += 1
        target, prefix, body = plan(self.access)
        self.store.put(prefix + target.rel, body, self.now_ms, sha(body))
        return {"outcome": "written", "path": target.guest(target.rel)}


TURN = {"workspace": "w1", "agent": "a1", "session": "s1"}
SESSION = layout.session_prefix("w1", "a1", "s1")


def reason(call):
    try:
        call()
    except Refused as r:
        return r.reason
    return None


class APromotionIsCheckedInSc35sOrderAndCopies(unittest.TestCase):
    def test_paths_and_their_scopes_are_refused_before_the_session_is_reached(self):
        service = LockedService()
        cases = {
            ("session/../agent/x.md", "agent/x.md"): "traversal",
            ("session/notes.md", "agent/../workspace/x.md"): "traversal",
            ("session/notes.md", "notes.md"): "missing_scope",
            ("workspace/pricing.csv", "agent/pricing.csv"): "invalid_policy",  # SL-6.2: from session only
            ("session/notes.md", "session/copy.md"): "invalid_policy",  # swept with the session: no promotion
            ("session/notes.md", "skill/nope/x.md"): "unknown_skill",  # SC-2.6, before the session row
            ("session/dir/", "agent/x.md"): "directory_path",
        }
        got = {pair: reason(lambda: policies.promote(service, TURN, *pair)) for pair in cases}
        self.assertEqual(got, cases)
        self.assertEqual(service.locked, 0, "a path refused for its shape never reaches the session")

    def test_the_destination_needs_write_and_a_missing_source_is_not_found_and_nothing_is_written(self):
        service = LockedService(access={"agent": "read-write", "workspace": "read"})
        service.store.put(SESSION + "notes.md", b"mine", START_MS, sha(b"mine"))
        before = dict(service.store.data)
        self.assertEqual(reason(lambda: policies.promote(service, TURN, "session/notes.md", "workspace/x.md")),
                         "permission_denied")
        skills = dict(TURN, skills={"guide": "a" * 64})
        self.assertEqual(reason(lambda: policies.promote(service, skills, "session/notes.md", "skill/guide/x.md")),
                         "read_only")
        self.assertEqual(reason(lambda: policies.promote(service, TURN, "session/missing.md", "agent/x.md")),
                         "not_found")
        self.assertEqual(service.store.data, before)

    def test_a_promotion_copies_the_bytes_and_leaves_the_session_file(self):
        service = LockedService()
        service.store.put(SESSION + "draft.md", b"the plan", START_MS, sha(b"the plan"))
        answer = policies.promote(service, TURN, "session/draft.md", "agent/plans/plan.md")
        self.assertEqual(answer, {"outcome": "written", "path": "agent/plans/plan.md"})
        self.assertEqual(service.store.get(layout.agent_prefix("w1", "a1") + "plans/plan.md")[0], b"the plan")
        self.assertEqual(service.store.get(SESSION + "draft.md")[0], b"the plan")


class AToolResultOverTheLimitOverflowsIntoSessionScope(unittest.TestCase):
    def test_a_result_at_the_limit_is_answered_inline_and_writes_nothing(self):
        service = LockedService()
        self.assertEqual(policies.tool_output(service, TURN, "ten bytes!", 10),
                         {"outcome": "content", "content": "ten bytes!"})
        self.assertEqual((service.locked, service.store.data), (0, {}))

    def test_the_limit_counts_utf8_bytes_not_characters(self):
        service = LockedService()
        self.assertEqual(policies.tool_output(service, TURN, "é" * 5, 10)["outcome"], "content")
        self.assertEqual(policies.tool_output(service, TURN, "é" * 6, 10)["outcome"], "written")

    def test_an_overflow_is_a_session_file_holding_the_result(self):
        service = LockedService()
        answer = policies.tool_output(service, TURN, "eleven bytes", 10)
        self.assertEqual(answer["outcome"], "written")
        path = answer["path"]
        self.assertTrue(path.startswith("session/" + policies.OVERFLOW_FOLDER + "/"), path)
        target = layout.resolve(path, for_listing=False)  # a path a guest can name again
        self.assertEqual(service.store.get(SESSION + target.rel)[0], b"eleven bytes")
        self.assertEqual(list(service.store.data), [SESSION + target.rel])

    def test_an_overflow_never_replaces_a_file_holding_something_else(self):
        service = LockedService()
        first = policies.tool_output(service, TURN, "eleven bytes", 10)["path"]
        # The guest edits the overflow file in place; the same result overflowing again at the
        # same moment takes another name, and the same one that holds this very result is reused.
        rel = layout.resolve(first, for_listing=False).rel
        service.store.put(SESSION + rel, b"edited", START_MS, sha(b"edited"))
        second = policies.tool_output(service, TURN, "eleven bytes", 10)["path"]
        self.assertNotEqual(second, first)
        self.assertEqual(service.store.get(SESSION + rel)[0], b"edited")
        self.assertEqual(policies.tool_output(service, TURN, "eleven bytes", 10)["path"], second)


class ACountPolicyIsAWholeNumberFromOneTo100000(unittest.TestCase):
    def test_each_value_outside_the_range_is_invalid_policy_and_null_removes(self):
        for bad in (0, -3, 100001, 2.5, "2", True):
            self.assertEqual(reason(lambda: policies.keep_last_of({"keep_last": bad})), "invalid_policy", bad)
        self.assertEqual([policies.keep_last_of({"keep_last": n}) for n in (1, 100000, None)], [1, 100000, None])
        self.assertIsNone(policies.keep_last_of({}))


CLUSTER = None


def setUpModule():
    global CLUSTER
    CLUSTER = pgcluster.Cluster()


def tearDownModule():
    if CLUSTER is not None:
        CLUSTER.stop()


class TheCountSweepOnARealDatabase(unittest.TestCase):
    """The count's SQL (policies.COUNT_CANDIDATES) and the sweep that claims, empties and marks."""

    def setUp(self):
        if CLUSTER.base_url is None:
            self.skipTest(CLUSTER.why_not)
        init = {"postgres_url": CLUSTER.fresh_database(), "knobs": {"session_file_ttl_days": 7},
                "s3": {"endpoint_url": "http://127.0.0.1:9", "region": "us-east-1", "bucket": "unused",
                       "access_key_id": "k", "secret_access_key": "s"}}
        self.service = scoped.Scoped(init)
        self.service.store = MemoryStore()
        self.addCleanup(self.service.conn.close)
        self.now = START_MS
        self.op("create_workspace", workspace="w1")
        self.op("create_agent", workspace="w1", agent="a1")
        self.op("create_agent", workspace="w1", agent="a2")

    def op(self, name, **fields):
        self.service.now_ms = self.now
        return self.service.handle({"op": name, **fields})

    def session(self, agent, session, days_later=0):
        self.now += int(days_later * DAY_MS)
        turn = {"workspace": "w1", "agent": agent, "session": session}
        self.op("create_session", turn=turn)
        self.op("write", turn=turn, path="session/f.txt", content=session)
        return turn

    def files(self, agent, session):
        return self.service.store.keys(layout.session_prefix("w1", agent, session))

    def sweep(self):
        return self.op("sweep")["sessions"]

    def test_the_last_n_by_last_activity_per_agent_keep_their_files_and_waiting_sessions_hold_their_place(self):
        s1 = self.session("a1", "s1")
        self.session("a2", "s9")  # older than every a1 session but a1's first
        self.session("a1", "s4", days_later=0.25)
        self.session("a1", "s2", days_later=0.25)
        self.session("a1", "s3", days_later=1)
        self.now += DAY_MS
        self.op("activity", turn=s1)  # created first, in use today: the newest (SL-2.2)
        self.op("add_wait", turn={"workspace": "w1", "agent": "a1", "session": "s4"}, kind="queued", id="m1")
        self.op("set_session_count", workspace="w1", agent="a1", keep_last=2)
        self.op("set_session_count", workspace="w1", agent="a2", keep_last=1)
        # Ranked s1, s3, s2, s4: s1 and s3 keep; s4 waits (SL-2.3); s2 goes. a2's one session is
        # its last one (counted per agent, SL-2.1: ranked in the workspace it would be fifth).
        self.assertEqual(self.sweep(), 1)
        self.assertEqual(self.files("a1", "s2"), [])
        for agent, session in (("a1", "s1"), ("a1", "s3"), ("a1", "s4"), ("a2", "s9")):
            self.assertNotEqual(self.files(agent, session), [], session)

    def test_a_session_already_emptied_holds_no_place_among_the_n(self):
        self.session("a1", "old")
        newer = self.session("a1", "newer", days_later=1)
        # Its files already swept (as a close would leave it, SL-3), yet newer than `old`.
        self.service.conn.execute("UPDATE chat_sessions SET files_cleared_ms = %s WHERE chat_key = 'newer'",
                                  (self.now,))
        self.service.store.data = {k: v for k, v in self.service.store.data.items()
                                      if not k.startswith(layout.session_prefix(*self.service.turn_ids(newer)))}
        self.op("set_session_count", workspace="w1", agent="a1", keep_last=1)
        self.assertEqual(self.sweep(), 0)
        self.assertNotEqual(self.files("a1", "old"), [])

    def test_a_count_swept_session_whose_keys_failed_is_finished_by_the_next_sweep_whatever_the_count_says(self):
        self.session("a1", "s1")
        s2 = self.session("a1", "s2", days_later=1)
        self.op("set_session_count", workspace="w1", agent="a1", keep_last=1)
        self.service.store.failing = set(self.files("a1", "s1"))
        self.assertEqual(self.sweep(), 0)
        self.assertNotEqual(self.files("a1", "s1"), [])
        # The newer session goes: s1 is the agent's only one now, but its sweep expired it (SC-5.5).
        self.service.store.failing = set()
        self.op("delete_session", turn=s2)
        self.assertEqual(self.sweep(), 1)
        self.assertEqual(self.files("a1", "s1"), [])

    def test_a_session_the_ttl_and_the_count_both_expire_is_swept_once(self):
        self.session("a1", "s1")
        self.session("a1", "s2", days_later=8)
        self.op("set_session_count", workspace="w1", agent="a1", keep_last=1)
        self.assertEqual(self.sweep(), 1)
        self.assertEqual(self.sweep(), 0)

    def test_a_refused_count_changes_nothing_a_repeated_create_keeps_it_and_deleting_the_agent_ends_it(self):
        self.session("a1", "s1")
        self.session("a1", "s2", days_later=1)
        self.op("set_session_count", workspace="w1", agent="a1", keep_last=2)
        with self.assertRaises(Refused) as caught:
            self.op("set_session_count", workspace="w1", agent="a1", keep_last=0)
        self.assertEqual(caught.exception.reason, "invalid_policy")
        with self.assertRaises(Refused) as caught:
            self.op("set_session_count", workspace="w1", agent="nobody", keep_last=1)
        self.assertEqual(caught.exception.reason, "unknown_entity")
        self.assertEqual(self.sweep(), 0)
        self.op("set_session_count", workspace="w1", agent="a1", keep_last=1)
        self.op("create_agent", workspace="w1", agent="a1", agent_access="read")  # settings, not the count
        self.assertEqual(self.sweep(), 1)
        self.op("delete_agent", workspace="w1", agent="a1")
        self.op("create_agent", workspace="w1", agent="a1")
        self.session("a1", "s5")
        self.session("a1", "s6", days_later=1)
        self.assertEqual(self.sweep(), 0)
        self.assertNotEqual(self.files("a1", "s5"), [])


if __name__ == "__main__":
    unittest.main()

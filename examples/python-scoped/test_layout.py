"""Unit tests of guest-path resolution (layout.py): the check order this implementation chose
where SPEC.md part SC names no order (README.md, "Questions for SPEC", 1 to 4).

    target/py-scoped/bin/python -m unittest discover -s examples/python-scoped
"""

import unittest

import layout
from layout import Refused


def refusal(path, for_listing=False):
    try:
        layout.resolve(path, for_listing)
    except Refused as r:
        return r.reason
    return None


class PathsAreRefusedInTheChosenOrder(unittest.TestCase):
    def test_each_ambiguous_spelling_gets_the_reason_of_the_first_check_that_fails(self):
        cases = {
            "\\x": "absolute_path",  # absolute before the backslash rule
            "/../x": "absolute_path",
            "session/x\t": "control_character",  # a tab is Cc and White_Space
            " ../x": "surrounding_whitespace",  # segments left to right
            "session/../ x": "traversal",
            "session/a//..": "empty_segment",
            "session/%2e/": "traversal",  # encodings before a trailing slash
            "session/a%25252eb": "traversal",  # any depth of re-encoding
            "session/a%20b": None,  # other encodings are literal names
            "notes/": "directory_path",  # the corrected path's own refusal
            ".tidemark-text/x": "reserved_path",
            "Skills/x": "unknown_scope",
            "skill": "empty_path",
        }
        got = {path: refusal(path) for path in cases}
        self.assertEqual(got, cases)

    def test_a_listing_accepts_a_bare_scope_and_a_folder_but_not_a_bare_skill(self):
        self.assertIsNone(refusal("session", for_listing=True))
        self.assertIsNone(refusal("session/reports/", for_listing=True))
        self.assertEqual(refusal("skill/", for_listing=True), "empty_path")

    def test_the_key_limit_counts_the_text_key(self):
        prefix = layout.session_prefix("w", "a", "s")
        room = layout.MAX_KEY_BYTES - len(layout.text_key(prefix, ""))
        layout.check_key_length(prefix, "x" * room)
        with self.assertRaises(Refused) as caught:
            layout.check_key_length(prefix, "x" * (room + 1))
        self.assertEqual(caught.exception.reason, "key_too_long")


if __name__ == "__main__":
    unittest.main()

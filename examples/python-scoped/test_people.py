"""Unit tests of the people's door's own parts (people.py): how a URL becomes a guest path, each
segment decoded exactly once (SPEC.md SF-3), and the signed tokens (SF-2.1).

    target/py-scoped/bin/python -m unittest discover -s examples/python-scoped
"""

import unittest

import layout
import people
from layout import Refused


def guest_of(url_after_files):
    """The guest path a URL names, as the API builds it: split, scope, then one decoding each."""
    raw = ("/v1/agent-sessions/s1/files/" + url_after_files).encode("utf-8").decode("latin-1")
    _, scope, rest = people.split_target(raw)
    return people.decode_path(people.decode_name(scope), rest)


def answer(url_after_files):
    """SF-3.3's third column: the reason SC-2 (or SF-3.2) refuses the URL's path with, or None."""
    try:
        layout.resolve(guest_of(url_after_files), for_listing=False)
    except Refused as r:
        return r.reason
    return None


class EachSegmentIsDecodedExactlyOnce(unittest.TestCase):
    def test_an_encoded_percent_stays_a_percent_and_never_decodes_again(self):
        self.assertEqual(guest_of("session/50%2541.md"), "session/50%41.md")
        self.assertEqual(guest_of("session/%252e%252e/x.md"), "session/%2e%2e/x.md")

    def test_an_encoded_dot_dot_is_a_dot_dot_once_decoded(self):
        self.assertEqual(guest_of("session/%2e%2e/x.md"), "session/../x.md")
        self.assertEqual(guest_of("session/%2E%2E/x.md"), "session/../x.md")

    def test_a_percent_not_followed_by_two_hex_digits_is_kept(self):
        self.assertEqual(guest_of("session/100%.md"), "session/100%.md")
        self.assertEqual(guest_of("session/100%25.md"), "session/100%.md")
        self.assertEqual(guest_of("session/a%zz%4"), "session/a%zz%4")

    def test_an_encoded_space_and_utf8_are_decoded(self):
        self.assertEqual(guest_of("session/my%20notes.md"), "session/my notes.md")
        self.assertEqual(guest_of("session/caf%C3%A9.md"), "session/café.md")
        self.assertEqual(guest_of("session/café.md"), "session/café.md")  # raw UTF-8 in the URL

    def test_a_plus_is_a_plus_sign_never_a_space(self):
        self.assertEqual(guest_of("session/a+b.md"), "session/a+b.md")
        self.assertEqual(guest_of("session/a%2Bb.md"), "session/a+b.md")

    def test_an_encoded_slash_inside_a_segment_is_traversal_never_a_separator(self):
        for url in ("session/a%2Fb.md", "session/a%2fb.md"):
            with self.assertRaises(Refused) as caught:
                guest_of(url)
            self.assertEqual(caught.exception.reason, "traversal", url)

    def test_bytes_that_are_not_utf8_are_invalid_encoding(self):
        with self.assertRaises(Refused) as caught:
            guest_of("session/a%FF.md")
        self.assertEqual(caught.exception.reason, "invalid_encoding")

    def test_the_query_string_is_not_part_of_the_path(self):
        self.assertEqual(guest_of("session/x.md?download=1"), "session/x.md")

    def test_every_spelling_of_the_sf_3_3_table_reaches_sc_2_as_it_judges_it(self):
        table = {
            "session/%2e%2e/x.md": "traversal",
            "session/../x.md": "traversal",
            "session/%252e%252e/x.md": "traversal",
            "session/a%5Cb.md": "traversal",
            "session/dir/": "directory_path",
            "session/a//b.md": "empty_segment",
            "session/%20notes.md": "surrounding_whitespace",
            "session/a%09.md": "control_character",
            "session/my%20notes.md": None,
            "session/100%25.md": None,
            "session/100%.md": None,
            "session/.tidemark-text/x": "reserved_path",
            "session": "empty_path",
            "session/": "empty_path",
        }
        self.assertEqual({url: answer(url) for url in table}, table)


class RoutesAreRecognisedBeforeAnythingIsDecoded(unittest.TestCase):
    def test_the_listing_a_file_and_a_foreign_url(self):
        self.assertEqual(people.split_target("/v1/agent-sessions/s1/files"), (b"s1", None, None))
        self.assertEqual(people.split_target("/v1/agent-sessions/s1/files/agent/a/b.md"),
                         (b"s1", b"agent", [b"a", b"b.md"]))
        self.assertIsNone(people.split_target("/v1/agent-sessions/s1/other"))
        self.assertIsNone(people.split_target("/v2/agent-sessions/s1/files"))

    def test_a_scope_that_does_not_decode_to_one_segment_is_no_scope(self):
        self.assertEqual(people.decode_name(b"%73ession"), "session")
        self.assertIsNone(people.decode_name(b"sess%2Fion"))
        self.assertIsNone(people.decode_name(b"%FF"))


class TokensAreSignedClaims(unittest.TestCase):
    def setUp(self):
        self.tokens = people.Tokens(key=b"k" * 32)
        self.header = self.tokens.mint({"workspace": "w1", "agent_files": "read", "sessions": ["s2", "s1"]})
        self.token = self.header[people.TOKEN_HEADER]

    def test_a_minted_token_carries_its_claims_with_absent_authorities_as_none(self):
        claims = self.tokens.check(self.token)
        self.assertEqual(claims, {"ws": "w1", "agent": "read", "workspace": "none", "sessions": ["s1", "s2"]})

    def test_a_token_of_another_key_or_with_changed_claims_is_refused(self):
        self.assertIsNone(people.Tokens(key=b"x" * 32).check(self.token))
        payload, signature = self.token.split(".")
        forged = self.tokens.mint({"workspace": "w2"})[people.TOKEN_HEADER].split(".")[0]
        self.assertIsNone(self.tokens.check(f"{forged}.{signature}"))
        self.assertIsNone(self.tokens.check(payload))
        self.assertIsNone(self.tokens.check(None))

    def test_session_scope_is_the_conversation_and_the_others_the_authorities(self):
        claims = self.tokens.check(self.token)
        self.assertEqual(people.access_of(claims, "s1", "session"), "read-write")
        self.assertEqual(people.access_of(claims, "s3", "session"), "none")
        self.assertEqual(people.access_of(claims, "s3", "agent"), "read")
        self.assertFalse(people.may(people.access_of(claims, "s1", "agent"), write=True))


if __name__ == "__main__":
    unittest.main()

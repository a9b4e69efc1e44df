"""The one module that knows the bucket's layout (SPEC.md SC-1.2): it checks identifiers and guest
paths, builds every key and prefix, and hands the database triggers the SQL that builds the same
prefixes, so no other module (and no SQL written elsewhere) spells a key.

Keys (SC-1.1), retention class first so one lifecycle rule per class matches by prefix:

    workspaces/<ws>/<path>
    agents/<ws>/<agent>/<path>
    sessions/<ws>/<agent>/<session>/<path>
    skills/<ws>/<sha256>/<path>

and the text extracted from `<prefix><path>` lives at `<prefix>.tidemark-text/<path>` (SC-1.4).
"""

import re
import unicodedata

MAX_KEY_BYTES = 1024  # SC-2.3
TEXT_DIR = ".tidemark-text"  # SC-1.4
SCOPES = ("session", "agent", "workspace")  # the order of a correction (SC-2.4)
SKILL = "skill"

ID_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,64}")  # SC-1.3
SHA256_SHAPE = re.compile(r"[0-9a-f]{64}")  # SC-2.6

# SC-2.2: a segment made only of these is a dot segment in some spelling.
DOT_LIKE = frozenset(".\uff0e\u2024\u2025\u2026\ufe52")
# SC-2.2: a percent-encoded dot, slash or backslash, however many times the `%` was encoded again.
ENCODED_SEPARATOR = re.compile(r"%(?:25)*(?:2e|2f|5c)", re.IGNORECASE)
# SC-2.3: Unicode's White_Space property (Python's str.isspace is a different set).
WHITE_SPACE = frozenset(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


class Refused(Exception):
    """A typed refusal (SC-8.1): a reason code and a message a person or a model can act on."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason
        self.message = message


def check_id(kind, value):
    """SC-1.3: identifiers reach keys, so they are held to an alphabet with no separator or dot."""
    if not isinstance(value, str) or not ID_SHAPE.fullmatch(value):
        raise Refused("invalid_id", f"a {kind} id is 1-64 characters of A-Z a-z 0-9 _ -, got {value!r}")
    return value


# --- Prefixes -------------------------------------------------------------------------------


def workspace_prefix(ws):
    return f"workspaces/{ws}/"


def agent_prefix(ws, agent):
    return f"agents/{ws}/{agent}/"


def session_prefix(ws, agent, session):
    return f"sessions/{ws}/{agent}/{session}/"


def skill_prefix(ws, sha256):
    return f"skills/{ws}/{sha256}/"


def skills_prefix(ws):
    return f"skills/{ws}/"


def workspace_sessions_prefix(ws):
    """Every session of a workspace: the prefix of its own lifecycle rule (SL-5.3)."""
    return f"sessions/{ws}/"


def erasure_prefixes(ws, agent=None):
    """SL-4.2: an erasure's subject is its whole classes, so what an earlier deletion left
    unswept is erased too: a workspace's four class prefixes, an agent's two."""
    if agent is None:
        return [workspace_prefix(ws), skills_prefix(ws), f"agents/{ws}/", workspace_sessions_prefix(ws)]
    return [agent_prefix(ws, agent), f"sessions/{ws}/{agent}/"]


def text_key(prefix, rel):
    return f"{prefix}{TEXT_DIR}/{rel}"


def is_text_or_marker(rel):
    """A key below a scope prefix that is not a file: extracted text, or a directory marker
    another tool made (SC-2.5)."""
    return rel.split("/", 1)[0] == TEXT_DIR or rel.endswith("/") or rel == ""


def sql_prefixes(kind, row):
    """The SQL expressions (over a trigger's `row`, e.g. OLD) of the prefixes a deleted row leaves
    as deletion obligations (SC-6.2). Built here so the trigger and the files API share one layout."""

    def concat(*parts):
        return " || ".join(parts)

    ws, agent, session = f"{row}.ws_key", f"{row}.agent_key", f"{row}.chat_key"
    if kind == "session":
        return [concat("'sessions/'", ws, "'/'", agent, "'/'", session, "'/'")]
    if kind == "agent":
        return [concat("'agents/'", ws, "'/'", agent, "'/'")]
    if kind == "workspace":
        return [concat("'workspaces/'", ws, "'/'"), concat("'skills/'", ws, "'/'")]
    raise ValueError(kind)


# --- Guest paths ------------------------------------------------------------------------------


class Target:
    """A resolved guest path: its scope, the slug for a skill, the path below the scope (`rel`,
    empty for a scope's root) and whether it named a folder (a trailing `/`)."""

    def __init__(self, scope, rel, folder, slug=None):
        self.scope = scope
        self.rel = rel
        self.folder = folder
        self.slug = slug

    def guest(self, rel):
        """The guest path of the file at `rel` below this target's scope."""
        head = f"skill/{self.slug}" if self.scope == SKILL else self.scope
        return f"{head}/{rel}"


def _shape(path):
    """The checks of SC-2.2 and SC-2.3 that need no scope, in a fixed order: empty, absolute,
    control character, encoded or backslashed traversal, then each segment left to right (empty,
    surrounding whitespace, dot-like). Returns the segments and whether the path ends in `/`."""
    if path == "":
        raise Refused("empty_path", "the path is empty; name a file such as session/notes.md")
    if path[0] in "/\\":
        raise Refused("absolute_path", f"{path!r} is absolute; paths start with a scope: session/...")
    for ch in path:
        if unicodedata.category(ch) == "Cc":
            raise Refused("control_character", f"the path contains the control character U+{ord(ch):04X}")
    if "\\" in path:
        raise Refused("traversal", "a backslash is refused in a path (it separates folders elsewhere)")
    if ENCODED_SEPARATOR.search(path):
        raise Refused("traversal", "a percent-encoded dot, slash or backslash is refused; write the path literally")
    folder = path.endswith("/")
    segments = (path[:-1] if folder else path).split("/")
    for seg in segments:
        if seg == "":
            raise Refused("empty_segment", f"{path!r} has an empty segment (//)")
        if seg[0] in WHITE_SPACE or seg[-1] in WHITE_SPACE:
            raise Refused("surrounding_whitespace", f"the segment {seg!r} begins or ends with whitespace")
        if all(ch in DOT_LIKE for ch in seg):
            raise Refused("traversal", f"the segment {seg!r} is a dot segment; paths are never normalised")
    return segments, folder


def _is_scope_variant(first):
    lowered = first.lower()
    return any(lowered in (name, name + "s") for name in SCOPES + (SKILL,))


def resolve(path, for_listing):
    """Resolve a guest path (SC-2). A file operation needs a file below a scope; a listing
    (`for_listing`) accepts a bare scope and a trailing `/` (SC-2.5, SC-2.7)."""
    segments, folder = _shape(path)
    first, rest = segments[0], segments[1:]
    if first == SKILL:
        if len(rest) == 0:
            raise Refused("empty_path", "name a skill and a file: skill/<slug>/<path>")
        slug, rest = rest[0], rest[1:]
    elif first in SCOPES:
        slug = None
    else:
        return _correction(path, first, for_listing)
    if not rest and not for_listing:
        raise Refused("empty_path", f"{path!r} names a scope, not a file; add a file name after it")
    if folder and not for_listing:
        raise Refused("directory_path", f"{path!r} ends in / and names a folder, not a file")
    if rest and rest[0] == TEXT_DIR:
        raise Refused("reserved_path", f"{TEXT_DIR} is reserved for extracted text")
    return Target(first, "/".join(rest), folder or not rest, slug)


def _correction(path, first, for_listing):
    """SC-2.4: a path without a scope gets the same path under each scope, offered only when that
    path would itself be valid (else the refusal the corrected path would get)."""
    offers = [f"{scope}/{path}" for scope in SCOPES]
    resolve(offers[0], for_listing)  # raises the corrected path's own refusal
    reason = "unknown_scope" if _is_scope_variant(first) else "missing_scope"
    return_msg = f"{first!r} is not a scope; did you mean {', '.join(offers)}?"
    raise Refused(reason, return_msg)


def check_key_length(prefix, rel):
    """SC-2.3: the longer of a file's two keys, its text key, fits in 1,024 bytes."""
    if len(text_key(prefix, rel).encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise Refused("key_too_long", f"the path is too long: its storage key would exceed {MAX_KEY_BYTES} bytes")


def check_skill_file(path):
    """A path inside a published skill version: the segment checks of a guest path, no scope."""
    segments, folder = _shape(path)
    if folder:
        raise Refused("directory_path", f"skill file {path!r} ends in / and names a folder")
    if segments[0] == TEXT_DIR:
        raise Refused("reserved_path", f"{TEXT_DIR} is reserved for extracted text")
    return "/".join(segments)

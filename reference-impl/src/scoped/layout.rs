//! The bucket layout and guest-path resolution: the ONLY place that knows the shape of keys.
//!
//! Keys are scope-first so that one lifecycle rule per retention class can match by prefix
//! (S3 prefix matching has no wildcards, and a bucket holds at most 1,000 rules):
//!
//! ```text
//! workspaces/<ws>/<path>                      kept until the workspace is deleted
//! agents/<ws>/<agent>/<path>                  kept while the agent exists
//! sessions/<ws>/<agent>/<session>/<path>      swept after the session goes idle
//! skills/<ws>/<sha256>/<path>                 immutable skill versions, never swept
//! ```
//!
//! A guest never sees these keys. It names files as `session/<path>`, `agent/<path>`,
//! `workspace/<path>` or `skill/<slug>/<path>`, and [`resolve`] maps that onto the turn's space.
//! Anything that tries to climb out is refused, never clamped: a clamped traversal reads the
//! wrong file and reports success (SPEC SC-2.x). If retention moved into a sweeper of our own, the
//! hierarchical layout could come back and only this file would change.
//!
//! Why this file passes 800 lines: its code is about 600 lines; the rest is its tests, kept
//! beside the rules they check. Being the only place that knows key shapes is the point of
//! the file, so it is not split.

use std::collections::BTreeMap;
use std::fmt;

use super::error::PathError;
use super::mutants::ScopedMutant;
use super::permissions::{PersonGrant, Scope};

/// S3's hard limit on key length, in bytes of UTF-8.
pub const MAX_KEY_BYTES: usize = 1024;

/// Identifiers (workspace, agent, session) are at most this long; they are ours, not the
/// guest's, but they still reach a key, so they are held to a strict alphabet.
pub const MAX_ID_BYTES: usize = 64;

/// The first path segment, under a scope's prefix, that holds the text extracted from files.
/// A guest may not name it (refused as reserved), and listings never show it. It lives under
/// the same scope prefix as the file so every prefix deletion and sweep takes it too.
pub const TEXT_DIR: &str = ".tidemark-text";

/// A validated identifier: 1..=64 bytes of `[A-Za-z0-9_-]`. Validation here (rather than in
/// callers) means no identifier can smuggle a `/` or `..` into a key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id(String);

impl Id {
    pub fn new(s: impl Into<String>) -> Result<Id, PathError> {
        Id::checked(s, None)
    }

    /// [`Id::new`] with a mutant switched on (`dotted-ids-accepted` lets a dot through).
    pub fn checked(s: impl Into<String>, mutant: Option<ScopedMutant>) -> Result<Id, PathError> {
        let s = s.into();
        let dots = mutant == Some(ScopedMutant::DottedIdsAccepted);
        let ok = !s.is_empty()
            && s.len() <= MAX_ID_BYTES
            && s.bytes().all(|b| {
                b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (dots && b == b'.')
            });
        if ok {
            Ok(Id(s))
        } else {
            Err(PathError::InvalidId { id: s })
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The space a turn runs in. The guest is never told these values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnSpace {
    pub workspace: Id,
    pub agent: Id,
    pub session: Id,
    /// The skill table the turn was sent: slug -> sha256 of the version.
    pub skills: BTreeMap<String, String>,
    /// A person calling through the people's files API (SPEC part SF) rather than the agent's
    /// turn: their grant replaces the settings cascade, and only a change is activity.
    pub person: Option<PersonGrant>,
}

impl TurnSpace {
    pub fn new(workspace: &str, agent: &str, session: &str) -> Result<TurnSpace, PathError> {
        TurnSpace::checked(workspace, agent, session, None)
    }

    /// [`TurnSpace::new`], its identifiers checked with a mutant switched on.
    pub fn checked(
        workspace: &str,
        agent: &str,
        session: &str,
        mutant: Option<ScopedMutant>,
    ) -> Result<TurnSpace, PathError> {
        Ok(TurnSpace {
            workspace: Id::checked(workspace, mutant)?,
            agent: Id::checked(agent, mutant)?,
            session: Id::checked(session, mutant)?,
            skills: BTreeMap::new(),
            person: None,
        })
    }

    /// The same space, called by a person holding `grant` (SPEC SF-2.3).
    pub fn for_person(mut self, grant: PersonGrant) -> Self {
        self.person = Some(grant);
        self
    }

    pub fn with_skill(mut self, slug: &str, sha256: &str) -> Self {
        self.skills.insert(slug.to_string(), sha256.to_string());
        self
    }

    /// The key prefix of a scope for this turn, always ending in `/`.
    pub fn scope_prefix(&self, scope: Scope) -> String {
        match scope {
            Scope::Session => session_prefix(&self.workspace, &self.agent, &self.session),
            Scope::Agent => agent_prefix(&self.workspace, &self.agent),
            Scope::Workspace => workspace_prefix(&self.workspace),
            Scope::Skill => skills_prefix(&self.workspace),
        }
    }
}

pub fn workspace_prefix(ws: &Id) -> String {
    format!("workspaces/{ws}/")
}
pub fn agent_prefix(ws: &Id, agent: &Id) -> String {
    format!("agents/{ws}/{agent}/")
}
/// All sessions of one workspace: `sessions/<ws>/`, the prefix of a workspace's own backstop
/// lifecycle rule (SPEC SL-5.3).
pub fn workspace_sessions_prefix(ws: &Id) -> String {
    format!("sessions/{ws}/")
}
/// All sessions of one agent: `sessions/<ws>/<agent>/`.
pub fn agent_sessions_prefix(ws: &Id, agent: &Id) -> String {
    format!("sessions/{ws}/{agent}/")
}
pub fn session_prefix(ws: &Id, agent: &Id, session: &Id) -> String {
    format!("sessions/{ws}/{agent}/{session}/")
}
/// Every skill version of one workspace.
pub fn skills_prefix(ws: &Id) -> String {
    format!("skills/{ws}/")
}
pub fn skill_version_prefix(ws: &Id, sha256: &str) -> String {
    format!("skills/{ws}/{sha256}/")
}

/// Every prefix an erasure's subject keeps keys under (SPEC SL-4.2): a workspace's four class
/// prefixes (its agents' and sessions' whole, so a row deleted earlier and not swept yet is
/// the erasure's too), or an agent's own files and its sessions'.
pub fn subject_prefixes(ws: &Id, agent: Option<&Id>) -> Vec<String> {
    match agent {
        None => vec![
            workspace_prefix(ws),
            skills_prefix(ws),
            format!("agents/{ws}/"),
            format!("sessions/{ws}/"),
        ],
        Some(agent) => vec![agent_prefix(ws, agent), agent_sessions_prefix(ws, agent)],
    }
}

/// The top-level class prefixes lifecycle rules match on.
pub const SESSIONS_CLASS_PREFIX: &str = "sessions/";
pub const AGENTS_CLASS_PREFIX: &str = "agents/";
pub const WORKSPACES_CLASS_PREFIX: &str = "workspaces/";
pub const SKILLS_CLASS_PREFIX: &str = "skills/";

/// What a guest path resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub scope: Scope,
    /// The path inside the scope, as the guest will see it back (no scope segment).
    pub relative: String,
    /// The object key in the bucket.
    pub key: String,
    /// The scope's prefix (the key starts with it).
    pub prefix: String,
}

impl Resolved {
    /// The guest-facing name, `scope/relative`.
    pub fn guest_path(&self) -> String {
        format!("{}/{}", self.scope, self.relative)
    }
}

/// The key holding the text extracted from `key`, which must be a file key under `prefix`.
pub fn text_key(prefix: &str, key: &str) -> String {
    text_key_in(prefix, key, TEXT_DIR)
}

/// [`text_key`] with the text area spelled `segment`.
pub fn text_key_in(prefix: &str, key: &str, segment: &str) -> String {
    let relative = key.strip_prefix(prefix).unwrap_or(key);
    format!("{prefix}{segment}/{relative}")
}

/// Whether a key (under `prefix`) belongs to the extracted-text area rather than a file.
pub fn is_text_key(prefix: &str, key: &str) -> bool {
    is_text_key_in(prefix, key, TEXT_DIR)
}

/// [`is_text_key`] with the text area spelled `segment`.
pub fn is_text_key_in(prefix: &str, key: &str, segment: &str) -> bool {
    key.strip_prefix(prefix)
        .map(|rel| rel.starts_with(&format!("{segment}/")))
        .unwrap_or(false)
}

/// How a store reads guest paths: its mutant (if any), how it spells the extracted-text area
/// (SC-1.4: the spelling is the implementation's own), and whether it tidies empty and `.`
/// segments away (SC-2.3's variant `empty_and_dot_segments=tidied`) rather than refusing them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathRules<'a> {
    pub mutant: Option<ScopedMutant>,
    pub text_segment: &'a str,
    pub tidy: bool,
}

impl PathRules<'static> {
    /// The reference's own rules, with `mutant` switched on.
    pub fn with_mutant(mutant: Option<ScopedMutant>) -> PathRules<'static> {
        PathRules {
            mutant,
            text_segment: TEXT_DIR,
            tidy: false,
        }
    }
}

/// What a path is resolved for: reading/writing a file names a file; listing names a directory
/// (a trailing `/` and a bare scope are fine there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    File,
    List,
}

/// Characters that render as a dot. A segment made only of these is refused: `.`, `..` and
/// lookalikes that some normaliser (NFKC, a display layer) could turn into `..` later.
fn is_dot_like(c: char) -> bool {
    matches!(
        c,
        '.' | '\u{2024}' | '\u{2025}' | '\u{2026}' | '\u{FE52}' | '\u{FF0E}'
    )
}

/// Percent-encodings of `.`, `/` and `\`: refused anywhere, because the layer that decodes a
/// guest path (an HTTP router, a shell) is not this one and must not be able to turn a harmless
/// literal into a traversal after the check. Any depth of `%25` layering counts (SPEC SC-2.2):
/// each layer is one more decoder, and stopping at two would let a third one through.
fn has_encoded_separator_or_dot(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    lower.match_indices('%').any(|(i, _)| {
        let mut rest = &lower[i + 1..];
        while let Some(r) = rest.strip_prefix("25") {
            rest = r;
        }
        ["2e", "2f", "5c"].iter().any(|e| rest.starts_with(e))
    })
}

/// Validates the path inside a scope and returns its segments. `purpose` decides whether an
/// empty or `/`-terminated path is acceptable.
fn check_relative(
    full: &str,
    relative: &str,
    purpose: Purpose,
    rules: &PathRules,
) -> Result<Vec<String>, PathError> {
    let mutant = rules.mutant;
    let mut rel = relative;
    if purpose == Purpose::List {
        // A listing names a directory: `session/` and `session/reports/` are the same as
        // `session` and `session/reports`.
        rel = rel.strip_suffix('/').unwrap_or(rel);
        if rel.is_empty() {
            return Ok(Vec::new());
        }
    } else if rel.is_empty() {
        return Err(PathError::Empty {
            path: full.to_string(),
        });
    } else if rel.ends_with('/') && mutant == Some(ScopedMutant::TrailingSlashTrimmed) {
        // The mutant repairs a directory path into the file it does not name.
        rel = rel.trim_end_matches('/');
    } else if rel.ends_with('/') {
        return Err(PathError::DirectoryPath {
            path: full.to_string(),
        });
    }
    if rel.starts_with('/') {
        // The path itself starts with its scope (`session//b.md`): what follows the scope's
        // separator is an empty segment, not an absolute path (SC-2.3).
        return Err(PathError::EmptySegment {
            path: full.to_string(),
        });
    }
    let encoded = has_encoded_separator_or_dot(rel);
    if encoded && mutant != Some(ScopedMutant::EncodedTraversalAccepted) {
        return Err(PathError::Traversal {
            path: full.to_string(),
            spelling: "percent-encoded dot or separator",
        });
    }
    let rel_owned;
    let rel = if encoded {
        // The mutant decodes after the check, which is exactly the bug the refusal prevents.
        rel_owned = rel
            .replace("%2e", ".")
            .replace("%2E", ".")
            .replace("%2f", "/")
            .replace("%2F", "/");
        rel_owned.as_str()
    } else {
        rel
    };
    let backslash_refused = if mutant == Some(ScopedMutant::BackslashAccepted) {
        // The bug: a backslash is only feared next to `..`.
        rel.contains("..\\") || rel.contains("\\..")
    } else {
        rel.contains('\\')
    };
    if backslash_refused {
        return Err(PathError::Traversal {
            path: full.to_string(),
            spelling: "backslash",
        });
    }
    let mut out: Vec<String> = Vec::new();
    for seg in rel.split('/') {
        if seg.is_empty() {
            return Err(PathError::EmptySegment {
                path: full.to_string(),
            });
        }
        let dot_segment = if mutant == Some(ScopedMutant::LookalikeDotsAccepted) {
            seg.chars().all(|c| c == '.')
        } else {
            seg.chars().all(is_dot_like)
        };
        if dot_segment {
            let clamping = mutant == Some(ScopedMutant::ClampingResolution)
                || mutant == Some(ScopedMutant::EncodedTraversalAccepted);
            if clamping {
                // The bug the source document names: climb, but never above the scope root.
                if seg == ".." {
                    out.pop();
                }
                continue;
            }
            return Err(PathError::Traversal {
                path: full.to_string(),
                spelling: if seg == ".." {
                    "parent segment"
                } else {
                    "dot segment"
                },
            });
        }
        if out.is_empty() && seg == rules.text_segment {
            return Err(PathError::Reserved {
                path: full.to_string(),
            });
        }
        out.push(seg.to_string());
    }
    if out.is_empty() && purpose == Purpose::File {
        return Err(PathError::Empty {
            path: full.to_string(),
        });
    }
    Ok(out)
}

/// Resolves a guest path (`session/notes.md`, `skill/pricing/README.md`, ...) onto a key in the
/// turn's space, or refuses it with a typed error. Never clamps.
pub fn resolve(
    path: &str,
    turn: &TurnSpace,
    purpose: Purpose,
    mutant: Option<ScopedMutant>,
) -> Result<Resolved, PathError> {
    resolve_with(path, turn, purpose, &PathRules::with_mutant(mutant))
}

/// [`resolve`] by a store's own [`PathRules`].
pub fn resolve_with(
    path: &str,
    turn: &TurnSpace,
    purpose: Purpose,
    rules: &PathRules,
) -> Result<Resolved, PathError> {
    let mutant = rules.mutant;
    if path.is_empty() {
        return Err(PathError::Empty {
            path: String::new(),
        });
    }
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return Err(PathError::ControlCharacter {
            path: path.escape_default().to_string(),
            codepoint: c as u32,
        });
    }
    // Before anything reads the first segment as a scope: `  session/x.txt  ` is neither
    // `session/x.txt` (trimming repairs a path, SC-2.1) nor a path without a scope to correct.
    if path
        .split('/')
        .any(|seg| seg.starts_with(char::is_whitespace) || seg.ends_with(char::is_whitespace))
    {
        return Err(PathError::SurroundingWhitespace {
            path: path.to_string(),
        });
    }
    if path.starts_with('/') || path.starts_with('\\') {
        return Err(PathError::Absolute {
            path: path.to_string(),
        });
    }
    // The variant `empty_and_dot_segments=tidied` (SC-2.3): empty and `.` segments name
    // nothing, so they are dropped; what is left is read as the guest's path.
    let tidied;
    let path = if rules.tidy {
        tidied = path
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect::<Vec<_>>()
            .join("/");
        if tidied.is_empty() {
            return Err(PathError::Empty {
                path: path.to_string(),
            });
        }
        tidied.as_str()
    } else {
        path
    };
    let (first, rest) = match path.split_once('/') {
        Some((f, r)) => (f, r),
        None => (path, ""),
    };
    let scope = match Scope::from_guest_name(first) {
        Some(s) => s,
        None => {
            // Guard the correction itself: offer it only for a path that would be valid.
            let candidate = check_relative(path, path, Purpose::File, rules);
            if mutant == Some(ScopedMutant::ScopeGuessed) && candidate.is_ok() {
                return resolve_with(&format!("session/{path}"), turn, purpose, rules);
            }
            candidate?;
            let corrections = Scope::FILE_SCOPES
                .iter()
                .map(|s| format!("{s}/{path}"))
                .collect();
            let lower = first.to_ascii_lowercase();
            let near_miss = Scope::FILE_SCOPES
                .iter()
                .chain(std::iter::once(&Scope::Skill))
                .any(|s| lower == s.guest_name() || lower == format!("{}s", s.guest_name()));
            return Err(if near_miss {
                PathError::UnknownScope {
                    scope: first.to_string(),
                    path: path.to_string(),
                    corrections,
                }
            } else {
                PathError::MissingScope {
                    path: path.to_string(),
                    corrections,
                }
            });
        }
    };
    if scope == Scope::Skill {
        return resolve_skill(path, rest, turn, purpose, rules);
    }
    let segments = check_relative(path, rest, purpose, rules)?;
    let relative = segments.join("/");
    let prefix = if scope == Scope::Session && mutant == Some(ScopedMutant::SessionsUnderTheirAgent)
    {
        format!(
            "{}sessions/{}/",
            agent_prefix(&turn.workspace, &turn.agent),
            turn.session
        )
    } else {
        turn.scope_prefix(scope)
    };
    // A listing's key ends in `/`: the folder, never a string prefix (SC-2.7); the mutant's
    // does not.
    let key = if purpose == Purpose::List
        && !relative.is_empty()
        && mutant != Some(ScopedMutant::ListingStringPrefix)
    {
        format!("{prefix}{relative}/")
    } else {
        format!("{prefix}{relative}")
    };
    finish(path, scope, relative, key, prefix, rules)
}

fn resolve_skill(
    path: &str,
    rest: &str,
    turn: &TurnSpace,
    purpose: Purpose,
    rules: &PathRules,
) -> Result<Resolved, PathError> {
    let segments = check_relative(path, rest, Purpose::List, rules)?;
    let Some((slug, inner)) = segments.split_first() else {
        return Err(PathError::Empty {
            path: path.to_string(),
        });
    };
    let sha = turn
        .skills
        .get(slug)
        .ok_or_else(|| PathError::UnknownSkill {
            slug: slug.clone(),
            path: path.to_string(),
        })?;
    // The skill table comes from the host, but its values still reach a key: only a sha256
    // in lowercase hex may.
    if sha.len() != 64
        || !sha
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(PathError::InvalidId { id: sha.clone() });
    }
    if inner.first().map(String::as_str) == Some(rules.text_segment) {
        return Err(PathError::Reserved {
            path: path.to_string(),
        });
    }
    let prefix = skill_version_prefix(&turn.workspace, sha);
    let inner = inner.join("/");
    if purpose == Purpose::File && (inner.is_empty() || rest.ends_with('/')) {
        return Err(PathError::DirectoryPath {
            path: path.to_string(),
        });
    }
    let key = if purpose == Purpose::List && !inner.is_empty() {
        format!("{prefix}{inner}/")
    } else {
        format!("{prefix}{inner}")
    };
    let relative = format!("{slug}/{inner}").trim_end_matches('/').to_string();
    let mut r = finish(path, Scope::Skill, relative, key, prefix, rules)?;
    // The skill view's "prefix" for mapping keys back is the version prefix; relative names
    // carry the slug so a listing shows `skill/<slug>/<path>`.
    r.prefix = skill_version_prefix(&turn.workspace, sha);
    Ok(r)
}

fn finish(
    path: &str,
    scope: Scope,
    relative: String,
    key: String,
    prefix: String,
    rules: &PathRules,
) -> Result<Resolved, PathError> {
    // The longest text key is the file key plus the text directory; refuse up front so a file
    // is never written whose extracted text cannot be.
    let longest = if rules.mutant == Some(ScopedMutant::TextKeyUncounted) {
        key.len()
    } else {
        key.len() + rules.text_segment.len() + 1
    };
    if longest > MAX_KEY_BYTES {
        return Err(PathError::KeyTooLong {
            path: path.to_string(),
            bytes: longest,
            max: MAX_KEY_BYTES,
        });
    }
    debug_assert!(key.starts_with(&prefix));
    Ok(Resolved {
        scope,
        relative,
        key,
        prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn() -> TurnSpace {
        TurnSpace::new("w1", "a1", "s1").unwrap().with_skill(
            "pricing",
            "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12",
        )
    }

    fn file(p: &str) -> Result<Resolved, PathError> {
        resolve(p, &turn(), Purpose::File, None)
    }

    #[test]
    fn each_scope_maps_onto_its_own_prefix() {
        assert_eq!(
            file("session/notes.md").unwrap().key,
            "sessions/w1/a1/s1/notes.md"
        );
        assert_eq!(
            file("agent/procedures.md").unwrap().key,
            "agents/w1/a1/procedures.md"
        );
        assert_eq!(
            file("workspace/reference/pricing.csv").unwrap().key,
            "workspaces/w1/reference/pricing.csv"
        );
    }

    #[test]
    fn a_skill_reads_through_the_turns_skill_table() {
        let r = file("skill/pricing/README.md").unwrap();
        assert!(r.key.starts_with("skills/w1/ab12"));
        assert!(r.key.ends_with("/README.md"));
        assert!(matches!(
            file("skill/unknown/README.md"),
            Err(PathError::UnknownSkill { .. })
        ));
        let bad = TurnSpace::new("w1", "a1", "s1")
            .unwrap()
            .with_skill("evil", "../../workspaces/w2");
        assert!(matches!(
            resolve("skill/evil/x", &bad, Purpose::File, None),
            Err(PathError::InvalidId { .. })
        ));
    }

    #[test]
    fn a_path_without_a_scope_is_answered_with_all_three_corrections() {
        match file("notes.md") {
            Err(PathError::MissingScope { corrections, .. }) => assert_eq!(
                corrections,
                vec!["session/notes.md", "agent/notes.md", "workspace/notes.md"]
            ),
            other => panic!("expected a correction, got {other:?}"),
        }
    }

    #[test]
    fn a_misspelt_scope_is_an_unknown_scope_with_corrections() {
        assert!(matches!(
            file("sessions/notes.md"),
            Err(PathError::UnknownScope { .. })
        ));
    }

    #[test]
    fn traversal_is_refused_in_every_spelling() {
        for p in [
            "session/../agent/x",
            "session/a/../../x",
            "session/./x",
            "session/a/./../x",
            "session/%2e%2e/x",
            "session/%2E%2E/x",
            "session/a%2f..%2fb",
            "session/%252e%252e/x",
            "session/%25252E%2525252e/x",
            "session/file%2525255ctxt",
            "session/..\\x",
            "session\\..\\x",
            "session/a\\b",
            "session/\u{FF0E}\u{FF0E}/x",
            "session/.../x",
            "session/..",
        ] {
            let r = file(p);
            assert!(
                matches!(r, Err(PathError::Traversal { .. })),
                "{p:?} gave {r:?}"
            );
        }
    }

    #[test]
    fn a_percent_sign_that_encodes_no_dot_or_separator_at_any_depth_is_only_a_character() {
        for p in [
            "session/100%.md",
            "session/%25.md",
            "session/%252525x.md",
            "session/%2",
        ] {
            assert!(file(p).is_ok(), "{p:?} gave {:?}", file(p));
        }
    }

    #[test]
    fn whitespace_around_a_path_or_a_segment_is_refused_never_trimmed_or_corrected() {
        for p in [
            "  session/x.txt  ",
            " session/x.txt",
            "session/x.txt ",
            "session/ x.txt",
            "session/dir /x.txt",
            "session/x.txt\u{a0}",
        ] {
            assert!(
                matches!(file(p), Err(PathError::SurroundingWhitespace { .. })),
                "{p:?}: {:?}",
                file(p)
            );
        }
        // Whitespace inside a name is a name.
        assert_eq!(
            file("session/my notes.md").unwrap().key,
            "sessions/w1/a1/s1/my notes.md"
        );
    }

    #[test]
    fn absolute_empty_and_control_paths_are_refused() {
        assert!(matches!(
            file("/session/x"),
            Err(PathError::Absolute { .. })
        ));
        assert!(matches!(
            file("session//x"),
            Err(PathError::EmptySegment { .. })
        ));
        assert!(matches!(
            file("session/a//x"),
            Err(PathError::EmptySegment { .. })
        ));
        assert!(matches!(file(""), Err(PathError::Empty { .. })));
        assert!(matches!(file("session/"), Err(PathError::Empty { .. })));
        assert!(matches!(file("session"), Err(PathError::Empty { .. })));
        assert!(matches!(
            file("session/a/"),
            Err(PathError::DirectoryPath { .. })
        ));
        assert!(matches!(
            file("session/a\u{0}b"),
            Err(PathError::ControlCharacter { .. })
        ));
        assert!(matches!(
            file("session/a\nb"),
            Err(PathError::ControlCharacter { .. })
        ));
        assert!(matches!(
            file("session/.tidemark-text/x"),
            Err(PathError::Reserved { .. })
        ));
    }

    #[test]
    fn an_over_long_key_is_refused_before_anything_is_written() {
        let long = format!("session/{}", "x".repeat(1100));
        assert!(matches!(file(&long), Err(PathError::KeyTooLong { .. })));
    }

    #[test]
    fn listing_accepts_a_bare_scope_and_a_trailing_slash() {
        let t = turn();
        let r = resolve("session", &t, Purpose::List, None).unwrap();
        assert_eq!(r.key, "sessions/w1/a1/s1/");
        let r = resolve("workspace/reference/", &t, Purpose::List, None).unwrap();
        assert_eq!(r.key, "workspaces/w1/reference/");
    }

    #[test]
    fn the_clamping_mutant_reads_the_wrong_file_and_reports_success() {
        let r = resolve(
            "session/a/../../b",
            &turn(),
            Purpose::File,
            Some(ScopedMutant::ClampingResolution),
        )
        .unwrap();
        assert_eq!(r.key, "sessions/w1/a1/s1/b");
    }

    #[test]
    fn identifiers_cannot_carry_separators() {
        assert!(Id::new("a/b").is_err());
        assert!(Id::new("..").is_err());
        assert!(Id::new("").is_err());
        assert!(Id::new("x".repeat(65)).is_err());
        assert!(Id::new("ws_1-A").is_ok());
    }

    #[test]
    fn text_keys_sit_under_the_same_scope_prefix() {
        let r = file("session/dir/notes.md").unwrap();
        let t = text_key(&r.prefix, &r.key);
        assert_eq!(t, "sessions/w1/a1/s1/.tidemark-text/dir/notes.md");
        assert!(is_text_key(&r.prefix, &t));
        assert!(!is_text_key(&r.prefix, &r.key));
    }
}

//! The URLs a person's request spells a file with in a model sequence (SPEC SF-3), each with what
//! SPEC makes of it: a refusal with its reason, or the session file it names once decoded. Two
//! sources, one index space: SF-3.3's own table and the spellings the API's own mistakes need
//! (an encoded name, a `+`, a `%25`, a look-alike scope), then every hostile spelling of
//! `model/hostile.rs` in session scope, each segment percent-encoded once as a client builds a
//! URL (so the one decoding SF-3.1 asks for gives the store exactly the hostile guest path, and
//! SC-2's verdict on it).

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use super::hostile::{Fit, Verdict, SPELLINGS};

/// What SPEC makes of a URL's file part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// Refused with this reason (SF-1.5's table gives its status).
    Refused(&'static str),
    /// The session file of this name (the part after `session/`).
    Name(&'static str),
    /// SC-2.3's variant `empty_and_dot_segments`: refused with `refused`, or, tidied, the
    /// session file `tidied`.
    Tidy {
        refused: &'static str,
        tidied: &'static str,
    },
}

/// One spelling written out: the part of the URL after `/files/`, what it is, the rule that
/// decides it, and SPEC's verdict.
pub struct UrlSpelling {
    pub url: &'static str,
    pub what: &'static str,
    pub rule: &'static str,
    pub judged: Judged,
}

const fn spelled(
    url: &'static str,
    what: &'static str,
    rule: &'static str,
    judged: Judged,
) -> UrlSpelling {
    UrlSpelling {
        url,
        what,
        rule,
        judged,
    }
}

use Judged::{Name, Refused, Tidy};

/// SF-3.3's table and the spellings that tell each decoding mistake from the rule: a name only
/// one decoding gives (`50%2541.md`), a `+`, an encoded slash, an encoded name whose stored path
/// differs from the URL, a scope segment that is almost a scope, and a traversal out of a scope
/// the person may not read (the path's shape is judged before the permission, SF-2.5).
pub const SF_URLS: &[UrlSpelling] = &[
    spelled(
        "session/%2e%2e/notes.md",
        "encoded dots",
        "SF-3.3",
        Refused("traversal"),
    ),
    spelled(
        "session/../notes.md",
        "a dot-dot segment",
        "SF-3.3",
        Refused("traversal"),
    ),
    spelled(
        "session/%252e%252e/notes.md",
        "dots encoded twice",
        "SF-3.1",
        Refused("traversal"),
    ),
    spelled(
        "session/a%2Fb.md",
        "an encoded slash inside a segment",
        "SF-3.2",
        Refused("traversal"),
    ),
    spelled(
        "session/dir%2fdata.csv",
        "a lower-case encoded slash inside a segment",
        "SF-3.2",
        Refused("traversal"),
    ),
    spelled(
        "session/2026%2F03%2Freport.md",
        "encoded slashes in a dated name",
        "SF-3.2",
        Refused("traversal"),
    ),
    spelled(
        "session/a%5Cb.md",
        "an encoded backslash",
        "SF-3.3",
        Refused("traversal"),
    ),
    spelled(
        "session/dir/",
        "a trailing slash",
        "SF-3.3",
        Tidy {
            refused: "directory_path",
            tidied: "dir",
        },
    ),
    spelled(
        "session/upload.pdf/",
        "a file's name with a trailing slash",
        "SF-3.3",
        Tidy {
            refused: "directory_path",
            tidied: "upload.pdf",
        },
    ),
    spelled(
        "session/a//b.md",
        "a doubled slash",
        "SF-3.3",
        Tidy {
            refused: "empty_segment",
            tidied: "a/b.md",
        },
    ),
    spelled(
        "session/%20notes.md",
        "an encoded leading space",
        "SF-3.3",
        Refused("surrounding_whitespace"),
    ),
    spelled(
        "session/notes.md%20",
        "an encoded trailing space",
        "SF-3.3",
        Refused("surrounding_whitespace"),
    ),
    spelled(
        "session/a%09.md",
        "an encoded tab",
        "SF-3.3",
        Refused("control_character"),
    ),
    spelled(
        "session/%FF.md",
        "an encoding that is not UTF-8",
        "SF-3.2",
        Refused("invalid_encoding"),
    ),
    spelled(
        "session/.tidemark-text/notes.md",
        "the text area",
        "SF-3.3",
        Refused("reserved_path"),
    ),
    spelled("session", "a bare scope", "SF-3.3", Refused("empty_path")),
    spelled(
        "session/",
        "a bare scope and a slash",
        "SF-3.3",
        Refused("empty_path"),
    ),
    spelled(
        "session/my%20notes.md",
        "an encoded space inside a name",
        "SF-1.3",
        Name("my notes.md"),
    ),
    spelled(
        "session/100%25.md",
        "an encoded percent sign",
        "SF-1.3",
        Name("100%.md"),
    ),
    spelled(
        "session/100%.md",
        "a percent sign that encodes nothing",
        "SF-3.1",
        Name("100%.md"),
    ),
    spelled(
        "session/%E3%83%AC%E3%83%9D%E3%83%BC%E3%83%88.md",
        "an encoded name in another script",
        "SF-1.3",
        Name("レポート.md"),
    ),
    spelled(
        "session/50%2541.md",
        "a name only one decoding gives",
        "SF-3.1",
        Name("50%41.md"),
    ),
    spelled(
        "session/r%2532d.md",
        "another name only one decoding gives",
        "SF-3.1",
        Name("r%32d.md"),
    ),
    spelled(
        "session/%2541%2542.md",
        "a third name only one decoding gives",
        "SF-3.1",
        Name("%41%42.md"),
    ),
    spelled("session/1+1=2.md", "a sum", "SF-3.1", Name("1+1=2.md")),
    spelled("session/a+b.md", "a plus sign", "SF-3.1", Name("a+b.md")),
    spelled(
        "session/c++%20notes.md",
        "plus signs beside an encoded space",
        "SF-3.1",
        Name("c++ notes.md"),
    ),
    spelled(
        "Session/notes.md",
        "a capitalised scope",
        "SF-1.1",
        Refused("unknown_scope"),
    ),
    spelled(
        "SESSION/upload.pdf",
        "an upper-case scope",
        "SF-1.1",
        Refused("unknown_scope"),
    ),
    spelled(
        "Agent/notes.md",
        "a capitalised agent scope",
        "SF-1.1",
        Refused("unknown_scope"),
    ),
    spelled(
        "sessions/notes.md",
        "a plural scope",
        "SF-1.1",
        Refused("unknown_scope"),
    ),
    spelled(
        "skill/kit/README.md",
        "the skill scope",
        "SF-1.1",
        Refused("unknown_scope"),
    ),
    spelled(
        "workspace/%2e%2e/session/notes.md",
        "a climb out of workspace scope",
        "SF-2.5",
        Refused("traversal"),
    ),
    spelled(
        "agent/../session/notes.md",
        "a climb out of agent scope",
        "SF-2.5",
        Refused("traversal"),
    ),
];

/// What a client escapes in a path segment: controls, space, the characters a URL gives a
/// meaning (`"#<>?`{}`), `%` (so a literal percent sign survives the one decoding), `/` and
/// `\` (so a name holding one stays one segment), and every byte outside ASCII.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'%')
    .add(b'/')
    .add(b'\\')
    .add(b'+');

/// The hostile spellings a URL can carry under `session/`: those whose guest path starts in
/// session scope (one that starts elsewhere, a leading slash or a space before the scope, is a
/// scope segment the API answers for itself, SF-1.1), less those whose URL SF-3.3's table
/// already spells (`my%20notes.md`), so no URL is drawn twice as often as another. Chosen once:
/// every operation's line and every draw asks.
fn hostile_in_session() -> impl Iterator<Item = &'static super::hostile::Spelling> {
    static CHOSEN: std::sync::OnceLock<Vec<&'static super::hostile::Spelling>> =
        std::sync::OnceLock::new();
    CHOSEN
        .get_or_init(|| {
            let probe = Fit { prefix_bytes: 0 };
            SPELLINGS
                .iter()
                .filter(|s| {
                    let guest = s.guest_path(&probe);
                    guest.starts_with("session/")
                        && !SF_URLS.iter().any(|u| u.url == encoded(&guest))
                })
                .collect()
        })
        .iter()
        .copied()
}

/// A guest path as a client puts it in a URL: each segment percent-encoded once.
fn encoded(guest: &str) -> String {
    guest
        .split('/')
        .map(|segment| utf8_percent_encode(segment, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// How many spellings there are: [`SF_URLS`], then the hostile ones in session scope.
pub fn count() -> usize {
    SF_URLS.len() + hostile_in_session().count()
}

/// A spelling as a request sends it: the URL after `/files/`, what it is and its rule, and what
/// SPEC makes of it for an implementation that refuses empty and `.` segments (`tidy` false)
/// or tidies them: `Ok(name)`, the session file it names, or `Err(reason)`.
pub struct Sent {
    pub url: String,
    pub what: &'static str,
    pub rule: &'static str,
    pub judged: Result<String, &'static str>,
}

/// Spelling `i` (any index is valid) for a session whose key prefix is `fit.prefix_bytes` long.
pub fn sent(i: u8, fit: &Fit, tidy: bool) -> Sent {
    let i = i as usize % count();
    if let Some(s) = SF_URLS.get(i) {
        let judged = match (s.judged, tidy) {
            (Refused(r), _) | (Tidy { refused: r, .. }, false) => Err(r),
            (Name(n), _) | (Tidy { tidied: n, .. }, true) => Ok(n.to_string()),
        };
        return Sent {
            url: s.url.to_string(),
            what: s.what,
            rule: s.rule,
            judged,
        };
    }
    let s = hostile_in_session()
        .nth(i - SF_URLS.len())
        .expect("the index is below count()");
    let guest = s.guest_path(fit);
    let url = encoded(&guest);
    let judged = match s.judged(fit, tidy) {
        (Verdict::Name, Some(name)) => Ok(name),
        (Verdict::Refused(r), _) => Err(r),
        (Verdict::Name, None) => unreachable!("a valid spelling has a file name"),
    };
    Sent {
        url,
        what: s.what,
        rule: s.rule,
        judged,
    }
}

/// Spelling `i`'s words and rule, without building it.
fn described(i: u8) -> (&'static str, &'static str) {
    let i = i as usize % count();
    match SF_URLS.get(i) {
        Some(s) => (s.what, s.rule),
        None => {
            let s = hostile_in_session()
                .nth(i - SF_URLS.len())
                .expect("the index is below count()");
            (s.what, s.rule)
        }
    }
}

/// Whether spelling `i` names a file (under either choice of SC-2.3's variant), rather than
/// being refused.
pub fn names_a_file(i: u8) -> bool {
    let probe = Fit { prefix_bytes: 140 };
    sent(i, &probe, false).judged.is_ok() || sent(i, &probe, true).judged.is_ok()
}

/// What a spelling is, in words (an operation's line).
pub fn what(i: u8) -> &'static str {
    described(i).0
}

/// The rule deciding a spelling: a divergence's signature and what `--coverage` counts.
pub fn rule(i: u8) -> &'static str {
    described(i).1
}

/// A spelling as an operation's line shows it: SF-3's own as the URL is written, a hostile one
/// by what it is (its URL may be a thousand bytes long).
pub fn shown(i: u8) -> String {
    match SF_URLS.get(i as usize % count()) {
        Some(s) => format!("`{}` ({})", s.url, s.what),
        None => format!("a hostile path encoded once ({})", what(i)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_reference::scoped::people::url::{target, Target};

    /// The reference's URL reader (the one decoding of SF-3.1) gives every spelling the guest
    /// path its verdict was written for: a hostile spelling its own guest path, a name the file
    /// it names, a refusal of SF-3.2 its refusal. (The reference is checked here only as the
    /// reader of what the table says a URL decodes to; the verdicts are SPEC's.)
    #[test]
    fn each_url_decodes_once_into_the_guest_path_its_verdict_judges() {
        let fit = Fit { prefix_bytes: 140 };
        let probe = Fit { prefix_bytes: 0 };
        let hostile: Vec<_> = hostile_in_session().collect();
        for i in 0..count() {
            let s = sent(i as u8, &fit, false);
            let raw = format!("/v1/agent-sessions/s1/files/{}", s.url);
            let Some(Ok(Target::File { path, .. })) = target(&raw, false) else {
                panic!("{} is a file's URL", s.url);
            };
            match (i.checked_sub(SF_URLS.len()), &s.judged, path) {
                (Some(h), _, path) => {
                    assert_eq!(path.unwrap(), hostile[h].guest_path(&fit), "{}", s.what)
                }
                (None, Ok(name), path) => {
                    assert_eq!(path.unwrap(), format!("session/{name}"), "{}", s.what)
                }
                (None, Err(reason), Err(e)) => assert_eq!(e.reason, *reason, "{}", s.what),
                (None, Err(_), Ok(_)) => {}
            }
        }
        assert!(hostile.len() > 10 && hostile.iter().all(|s| !s.guest_path(&probe).is_empty()));
    }

    #[test]
    fn every_spelling_is_distinct_and_tidying_changes_only_what_sc_2_3_tidies() {
        let fit = Fit { prefix_bytes: 140 };
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..count() {
            let (refused, tidied) = (sent(i as u8, &fit, false), sent(i as u8, &fit, true));
            assert!(seen.insert(refused.url.clone()), "{}", refused.what);
            assert_eq!(what(i as u8), refused.what);
            if refused.judged != tidied.judged {
                assert!(
                    matches!(refused.judged, Err("empty_segment" | "directory_path")),
                    "{}",
                    refused.what
                );
            }
        }
    }
}

//! Hostile spellings of a guest path, each with what SPEC SC-2 makes of it: a refusal with its
//! SC-8 reason, or a plain file name that only looks dangerous. Exploration and the scoped world
//! both draw from this one table, so random search meets every spelling SPEC names, and an
//! implementation that refuses too much (a look-alike inside a name) is caught as surely as one
//! that refuses too little.
//!
//! Each spelling produces exactly one refusal reason: SPEC SC-2.8 lets a path that breaks two
//! rules (a leading backslash is both absolute and a backslash) be refused with either reason,
//! and promises that no harness judges one, this table included.

use tidemark_reference::scoped::layout::{MAX_KEY_BYTES, TEXT_DIR};

/// What SPEC makes of a spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Refused with this SC-8 reason, before anything is read or written (SC-2.3).
    Refused(&'static str),
    /// A valid session file (the name after `session/`): written, read and listed as any other.
    Name,
}

/// One spelling: what it is, the rule that decides it, and how it is built.
pub struct Spelling {
    pub what: &'static str,
    pub rule: &'static str,
    pub verdict: Verdict,
    build: fn(&Fit) -> String,
}

/// What a spelling needs to know to sit at the key-length limit: the byte length of the
/// session's key prefix (`sessions/<ws>/<agent>/<session>/`).
pub struct Fit {
    pub prefix_bytes: usize,
}

impl Spelling {
    /// The guest path, e.g. `session/dir\notes.md`.
    pub fn guest_path(&self, fit: &Fit) -> String {
        (self.build)(fit)
    }

    /// What SPEC makes of this spelling, and its file name when it names one, for an
    /// implementation that refuses empty and `.` segments (`tidy` false, the default) or drops
    /// them (SC-2.3's variant `empty_and_dot_segments=tidied`): tidied, an empty segment names
    /// the file its other segments name.
    pub fn judged(&self, fit: &Fit, tidy: bool) -> (Verdict, Option<String>) {
        if tidy && self.verdict == Verdict::Refused("empty_segment") {
            let tidied = self
                .guest_path(fit)
                .split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .collect::<Vec<_>>()
                .join("/");
            let name = tidied
                .strip_prefix("session/")
                .expect("a tidied spelling names a session file")
                .to_string();
            return (Verdict::Name, Some(name));
        }
        (self.verdict, self.file_name(fit))
    }

    /// The file name inside the session scope, for a [`Verdict::Name`] spelling.
    pub fn file_name(&self, fit: &Fit) -> Option<String> {
        match self.verdict {
            Verdict::Name => Some(
                self.guest_path(fit)
                    .strip_prefix("session/")
                    .expect("a valid spelling names a session file")
                    .to_string(),
            ),
            Verdict::Refused(_) => None,
        }
    }
}

/// A name of `total` bytes for a file whose key is `prefix_bytes + total` long: `k…k.md`.
fn padded(total: usize) -> String {
    format!("{}.md", "k".repeat(total.saturating_sub(3).max(1)))
}

/// The longest file key SC-2.3 allows: its text key (`<prefix>.tidemark-text/<path>`) must fit
/// in [`MAX_KEY_BYTES`] too.
fn longest_file_key() -> usize {
    MAX_KEY_BYTES - TEXT_DIR.len() - 1
}

/// Every hostile spelling, in a fixed order (a model operation picks one by index).
pub const SPELLINGS: &[Spelling] = &[
    Spelling {
        what: "a backslash inside a name, no dot-dot",
        rule: "SC-2.2",
        verdict: Verdict::Refused("traversal"),
        build: |_| r"session/dir\notes.md".into(),
    },
    Spelling {
        what: "a backslash after the scope",
        rule: "SC-2.2",
        verdict: Verdict::Refused("traversal"),
        build: |_| r"session\notes.md".into(),
    },
    Spelling {
        what: "a percent-encoded backslash",
        rule: "SC-2.2",
        verdict: Verdict::Refused("traversal"),
        build: |_| "session/%5Cnotes.md".into(),
    },
    Spelling {
        what: "a percent-encoded slash",
        rule: "SC-2.2",
        verdict: Verdict::Refused("traversal"),
        build: |_| "session/dir%2fnotes.md".into(),
    },
    Spelling {
        what: "double-encoded dots",
        rule: "SC-2.2",
        verdict: Verdict::Refused("traversal"),
        build: |_| "session/%252E%252E/notes.md".into(),
    },
    Spelling {
        what: "a segment of fullwidth full stops",
        rule: "SC-2.2",
        verdict: Verdict::Refused("traversal"),
        build: |_| "session/\u{FF0E}\u{FF0E}/notes.md".into(),
    },
    Spelling {
        what: "a segment that is a two-dot leader",
        rule: "SC-2.2",
        verdict: Verdict::Refused("traversal"),
        build: |_| "session/\u{2025}/notes.md".into(),
    },
    Spelling {
        what: "a segment of small full stops",
        rule: "SC-2.2",
        verdict: Verdict::Refused("traversal"),
        build: |_| "session/\u{FE52}\u{FE52}/notes.md".into(),
    },
    Spelling {
        what: "an escape character inside a name",
        rule: "SC-2.3",
        verdict: Verdict::Refused("control_character"),
        build: |_| "session/no\u{1B}tes.md".into(),
    },
    Spelling {
        what: "a next-line control inside a name",
        rule: "SC-2.3",
        verdict: Verdict::Refused("control_character"),
        build: |_| "session/no\u{85}tes.md".into(),
    },
    Spelling {
        what: "a space at the start of a name",
        rule: "SC-2.3",
        verdict: Verdict::Refused("surrounding_whitespace"),
        build: |_| "session/ notes.md".into(),
    },
    Spelling {
        what: "an ideographic space at the end of a name",
        rule: "SC-2.3",
        verdict: Verdict::Refused("surrounding_whitespace"),
        build: |_| "session/notes.md\u{3000}".into(),
    },
    Spelling {
        what: "a no-break space before the scope",
        rule: "SC-2.3",
        verdict: Verdict::Refused("surrounding_whitespace"),
        build: |_| "\u{A0}session/notes.md".into(),
    },
    Spelling {
        what: "a leading slash",
        rule: "SC-2.3",
        verdict: Verdict::Refused("absolute_path"),
        build: |_| "/session/notes.md".into(),
    },
    Spelling {
        what: "an empty segment",
        rule: "SC-2.3",
        verdict: Verdict::Refused("empty_segment"),
        build: |_| "session/dir//notes.md".into(),
    },
    Spelling {
        what: "an empty segment right after the scope",
        rule: "SC-2.3",
        verdict: Verdict::Refused("empty_segment"),
        build: |_| "session//notes.md".into(),
    },
    Spelling {
        what: "a key one byte over the limit once its text key is counted",
        rule: "SC-2.3",
        verdict: Verdict::Refused("key_too_long"),
        build: |fit| {
            format!(
                "session/{}",
                padded(longest_file_key() + 1 - fit.prefix_bytes)
            )
        },
    },
    Spelling {
        what: "a key exactly at the limit once its text key is counted",
        rule: "SC-2.3",
        verdict: Verdict::Name,
        build: |fit| format!("session/{}", padded(longest_file_key() - fit.prefix_bytes)),
    },
    Spelling {
        what: "a fullwidth full stop inside a name",
        rule: "SC-2.2",
        verdict: Verdict::Name,
        build: |_| "session/notes\u{FF0E}md".into(),
    },
    Spelling {
        what: "an ellipsis inside a name",
        rule: "SC-2.2",
        verdict: Verdict::Name,
        build: |_| "session/draft\u{2026}v2.md".into(),
    },
    Spelling {
        what: "spaces inside a name",
        rule: "SC-2.3",
        verdict: Verdict::Name,
        build: |_| "session/my notes.md".into(),
    },
    Spelling {
        what: "a percent sign that encodes nothing",
        rule: "SC-2.2",
        verdict: Verdict::Name,
        build: |_| "session/100%.md".into(),
    },
    Spelling {
        what: "a name in another script",
        rule: "SC-2.1",
        verdict: Verdict::Name,
        build: |_| "session/レポート.md".into(),
    },
];

/// The spelling an operation's index picks (any index is valid).
pub fn spelling(i: u8) -> &'static Spelling {
    &SPELLINGS[i as usize % SPELLINGS.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_spellings_sit_on_either_side_of_the_text_key_limit() {
        let fit = Fit { prefix_bytes: 120 };
        let at = SPELLINGS
            .iter()
            .find(|s| s.what.starts_with("a key exactly"))
            .unwrap();
        let over = SPELLINGS
            .iter()
            .find(|s| s.what.starts_with("a key one byte over"))
            .unwrap();
        let key = |s: &Spelling| fit.prefix_bytes + s.guest_path(&fit).len() - "session/".len();
        assert_eq!(key(at) + TEXT_DIR.len() + 1, MAX_KEY_BYTES);
        assert_eq!(key(over) + TEXT_DIR.len() + 1, MAX_KEY_BYTES + 1);
    }

    #[test]
    fn every_spelling_is_distinct_and_valid_ones_name_a_session_file() {
        let fit = Fit { prefix_bytes: 18 };
        let mut seen = std::collections::BTreeSet::new();
        for s in SPELLINGS {
            assert!(seen.insert(s.guest_path(&fit)), "{}", s.what);
            if s.verdict == Verdict::Name {
                assert!(s.file_name(&fit).is_some_and(|n| !n.is_empty()));
            }
        }
    }
}

//! Guest path validation (SP-2). A path is checked as bytes, before anything touches the disk,
//! and refused rather than repaired: a repaired path reads or writes the wrong file and reports
//! success, and the caller never learns its path was wrong.

use super::error::{Refusal, ScratchError};
use super::mutants::ScratchpadMutant;

/// A validated relative path: one or more non-empty components, none of them `.` or `..`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GuestPath {
    components: Vec<String>,
}

pub struct Limits {
    pub max_depth: usize,
    pub max_path_bytes: usize,
    /// The mutant switched on, if it is one of the path checks'.
    pub mutant: Option<ScratchpadMutant>,
    /// SPEC.md's variant `non_canonical_paths=tidy`: drop empty and `.` components rather than
    /// refuse them (depth is then counted on what remains).
    pub tidy: bool,
}

impl Limits {
    fn is(&self, m: ScratchpadMutant) -> bool {
        self.mutant == Some(m)
    }
}

impl GuestPath {
    pub fn components(&self) -> &[String] {
        &self.components
    }
    pub fn as_string(&self) -> String {
        self.components.join("/")
    }

    pub fn parse(raw: &[u8], limits: &Limits) -> Result<GuestPath, ScratchError> {
        // The mutants that repair a path instead of refusing it.
        let repaired: Vec<u8>;
        let raw = if limits.is(ScratchpadMutant::NulTruncatesThePath) && raw.contains(&0) {
            &raw[..raw.iter().position(|b| *b == 0).unwrap_or(raw.len())]
        } else if limits.is(ScratchpadMutant::NonUtf8Replaced) {
            repaired = String::from_utf8_lossy(raw).into_owned().into_bytes();
            &repaired
        } else if limits.is(ScratchpadMutant::AbsolutePathMadeRelative) {
            let start = raw.iter().position(|b| *b != b'/').unwrap_or(raw.len());
            &raw[start..]
        } else {
            raw
        };
        if raw.is_empty() && limits.is(ScratchpadMutant::EmptyPathNamesTheRoot) {
            return Ok(GuestPath {
                components: Vec::new(),
            });
        }
        // The limits are inclusive (a path exactly at one is accepted); the mutant's are not.
        let over = |n: usize, limit: usize| {
            if limits.is(ScratchpadMutant::LimitsExclusive) {
                n >= limit
            } else {
                n > limit
            }
        };
        if raw.is_empty() {
            return Err(ScratchError::new(
                Refusal::EmptyPath,
                "the path is empty; name a file",
            ));
        }
        if raw.contains(&0) {
            return Err(ScratchError::new(
                Refusal::NulByte,
                "the path contains a NUL byte",
            ));
        }
        let text = std::str::from_utf8(raw).map_err(|e| {
            ScratchError::new(
                Refusal::NotUtf8,
                format!(
                    "the path is not valid UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                ),
            )
        })?;
        if over(raw.len(), limits.max_path_bytes) {
            return Err(ScratchError::new(
                Refusal::PathTooLong,
                format!(
                    "the path is {} bytes; at most {} are allowed",
                    raw.len(),
                    limits.max_path_bytes
                ),
            ));
        }
        if text.starts_with('/') {
            return Err(ScratchError::new(
                Refusal::AbsolutePath,
                format!(
                    "{text:?} is absolute; name it relative to your scratchpad, e.g. {:?}",
                    text.trim_start_matches('/')
                ),
            ));
        }
        if text.contains('\\') {
            return Err(ScratchError::new(
                Refusal::Backslash,
                format!("{text:?} contains a backslash; separate directories with '/'"),
            ));
        }
        let mut components: Vec<String> = Vec::new();
        for c in text.split('/') {
            match c {
                ".." if limits.is(ScratchpadMutant::DotDotNormalised) => {
                    components.pop();
                }
                ".." => {
                    return Err(ScratchError::new(
                        Refusal::Traversal,
                        format!(
                            "{text:?} contains '..'; paths may not climb, and are never clamped"
                        ),
                    ))
                }
                "" | "." if limits.tidy => {}
                "" | "." => {
                    return Err(ScratchError::new(
                        Refusal::NonCanonical,
                        format!("{text:?} has an empty or '.' component; write each path one way"),
                    ))
                }
                c => components.push(c.to_string()),
            }
        }
        if components.is_empty() {
            return Err(ScratchError::new(
                Refusal::EmptyPath,
                "the path names no file",
            ));
        }
        if over(components.len(), limits.max_depth) {
            return Err(ScratchError::new(
                Refusal::TooDeep,
                format!(
                    "the path has {} components; at most {} are allowed",
                    components.len(),
                    limits.max_depth
                ),
            ));
        }
        Ok(GuestPath { components })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LIMITS: Limits = Limits {
        max_depth: 16,
        max_path_bytes: 1024,
        mutant: None,
        tidy: false,
    };

    fn refusal(p: &[u8]) -> Option<Refusal> {
        GuestPath::parse(p, &LIMITS).err().map(|e| e.refusal)
    }

    #[test]
    fn traversal_is_refused_in_every_spelling() {
        for p in ["..", "../x", "a/../b", "a/..", "a/b/../../c"] {
            assert_eq!(refusal(p.as_bytes()), Some(Refusal::Traversal), "{p}");
        }
        assert_eq!(refusal(b"..\\x"), Some(Refusal::Backslash));
        assert_eq!(refusal(b"/etc/passwd"), Some(Refusal::AbsolutePath));
        assert_eq!(refusal(b"./x"), Some(Refusal::NonCanonical));
        assert_eq!(refusal(b"a//b"), Some(Refusal::NonCanonical));
        assert_eq!(refusal(b"a\0b"), Some(Refusal::NulByte));
        assert_eq!(refusal(b"a\xffb"), Some(Refusal::NotUtf8));
    }

    proptest! {
        #[test]
        fn an_accepted_path_never_has_a_component_that_climbs(bytes in proptest::collection::vec(
            prop_oneof![Just(b'.'), Just(b'/'), Just(b'a'), Just(b'\\'), Just(0u8), any::<u8>()], 0..24)) {
            if let Ok(p) = GuestPath::parse(&bytes, &LIMITS) {
                for c in p.components() {
                    prop_assert!(c != ".." && c != "." && !c.is_empty() && !c.contains('/'));
                }
            }
        }
    }
}

//! What kind of difference a failing seed showed, so "94 failed" reads as "3 distinct
//! differences": a [`Signature`] is the SPEC rule a divergence is about and what differed, in
//! words that do not depend on the seed (no paths, names, sizes or times), so every seed that
//! fails for one reason has the same one. Each profile computes its own
//! (`engine::Explorer::signature`, a table from the step and the outcome); the engine groups
//! failures by it, shrinks one seed per group, and treats the signatures an expectations file
//! lists (`crate::expectations`) as known differences.

use std::collections::BTreeMap;
use std::fmt;

/// The rule a difference is about (`SP-3.6`, or `PROTOCOL.md` for a program that broke the
/// protocol) and what differed (`disk: a directory the model never had`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Signature {
    pub rule: String,
    pub what: String,
}

impl Signature {
    pub fn new(rule: impl Into<String>, what: impl Into<String>) -> Signature {
        Signature {
            rule: rule.into(),
            what: what.into(),
        }
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.rule, self.what)
    }
}

/// The differences an expectations file declares known for one profile, each with where it is
/// listed (`file:line`) and why: exploration does not fail on them.
#[derive(Clone, Debug, Default)]
pub struct KnownDifferences {
    /// The expectations file, as messages name it.
    pub file: String,
    /// By the signature as printed, in the file's order.
    pub entries: Vec<KnownEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownEntry {
    pub signature: String,
    pub line: usize,
    pub reason: String,
}

impl KnownDifferences {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry listing `signature`, if any.
    pub fn get(&self, signature: &Signature) -> Option<&KnownEntry> {
        let printed = signature.to_string();
        self.entries.iter().find(|e| e.signature == printed)
    }

    pub fn contains(&self, signature: &Signature) -> bool {
        self.get(signature).is_some()
    }
}

/// A free-text outcome with what varies from seed to seed masked, for profiles whose model
/// words its expectations as text: each quoted string becomes `"…"`, each `{…}` or `[…]` group
/// its brackets, each run of digits `N`, whitespace one space; cut at 100 characters.
pub fn shape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    let mut depth: Vec<char> = Vec::new();
    while let Some(c) = chars.next() {
        if let Some(&close) = depth.last() {
            match c {
                '{' => depth.push('}'),
                '[' => depth.push(']'),
                '"' => skip_quoted(&mut chars),
                c if c == close => {
                    depth.pop();
                    if depth.is_empty() {
                        out.push('…');
                        out.push(close);
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            '{' | '[' => {
                out.push(c);
                depth.push(if c == '{' { '}' } else { ']' });
            }
            '"' => {
                skip_quoted(&mut chars);
                out.push_str("\"…\"");
            }
            c if c.is_ascii_digit() => {
                while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                    chars.next();
                }
                out.push('N');
            }
            c if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    let out = out.trim().to_string();
    match out.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &out[..cut]),
        None => out,
    }
}

/// What differed in operation `op`, from a free-text expectation and outcome: both shapes, or
/// one, when they have the same shape and only what it masks differs.
pub fn text_difference(op: &str, expected: &str, actual: &str) -> String {
    let (e, a) = (shape(expected), shape(actual));
    if e == a {
        format!("{op}: {a}, other than the model's")
    } else {
        format!("{op}: {a} where the model says {e}")
    }
}

/// Skips a quoted string's rest, escapes included.
fn skip_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '"' => return,
            _ => {}
        }
    }
}

/// Seeds by signature, in the order each signature first appeared (the seeds come in seed
/// order, so the first group is the lowest seed's), each with its seeds in order.
pub struct Groups<T> {
    pub groups: Vec<(Signature, Vec<T>)>,
}

impl<T> Groups<T> {
    pub fn of(items: impl IntoIterator<Item = (Signature, T)>) -> Groups<T> {
        let mut index: BTreeMap<Signature, usize> = BTreeMap::new();
        let mut groups: Vec<(Signature, Vec<T>)> = Vec::new();
        for (sig, item) in items {
            match index.get(&sig) {
                Some(&i) => groups[i].1.push(item),
                None => {
                    index.insert(sig.clone(), groups.len());
                    groups.push((sig, vec![item]));
                }
            }
        }
        Groups { groups }
    }
}

/// `N distinct difference(s)`.
pub fn distinct(n: usize) -> String {
    if n == 1 {
        "1 distinct difference".into()
    } else {
        format!("{n} distinct differences")
    }
}

/// Seeds as a summary line lists them: the first ten, then how many more.
pub fn seed_list(seeds: &[u64]) -> String {
    const SHOWN: usize = 10;
    let mut s: Vec<String> = seeds.iter().take(SHOWN).map(u64::to_string).collect();
    if seeds.len() > SHOWN {
        s.push(format!("and {} more", seeds.len() - SHOWN));
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keep_the_order_signatures_first_appear_in_and_their_seeds_in_order() {
        let a = Signature::new("SP-3.6", "disk: a directory the model never had");
        let b = Signature::new("SP-4.1", "write: written where the model says refused");
        let g = Groups::of([
            (b.clone(), 3u64),
            (a.clone(), 4),
            (b.clone(), 7),
            (a.clone(), 9),
        ]);
        assert_eq!(g.groups, vec![(b, vec![3, 7]), (a, vec![4, 9])]);
        assert_eq!(distinct(1), "1 distinct difference");
        assert_eq!(
            seed_list(&(0..12).collect::<Vec<_>>()),
            "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, and 2 more"
        );
    }

    #[test]
    fn a_shape_masks_what_varies_between_seeds() {
        assert_eq!(
            shape("after the sweep a1/s2 holds {\"dir/data.csv\", \"upload.pdf\"}"),
            "after the sweep aN/sN holds {…}"
        );
        assert_eq!(
            shape("read: Err(NotFound { path: \"a \\\" b\" })"),
            "read: Err(NotFound {…})"
        );
        assert_eq!(
            shape("events: 3 rows;  missing: [\"x\"]"),
            "events: N rows; missing: […]"
        );
    }

    #[test]
    fn a_known_difference_is_found_by_its_printed_signature() {
        let known = KnownDifferences {
            file: "x.toml".into(),
            entries: vec![KnownEntry {
                signature: "SP-3.6 disk: a directory the model never had".into(),
                line: 4,
                reason: "we create it".into(),
            }],
        };
        assert!(known.contains(&Signature::new(
            "SP-3.6",
            "disk: a directory the model never had"
        )));
        assert!(!known.contains(&Signature::new(
            "SP-3.6",
            "disk: a directory the model has is gone"
        )));
    }
}

//! The rule ids SPEC.md defines. A scenario citing a rule that does not exist is malformed: a
//! citation is a promise that the rule is checked, and a typo would break it silently.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default)]
pub struct RuleIndex {
    ids: BTreeSet<String>,
}

impl RuleIndex {
    /// A rule is defined by a line starting `**XX-n.m**` (optionally after `- `).
    pub fn parse(spec: &str) -> RuleIndex {
        let mut ids = BTreeSet::new();
        for line in spec.lines() {
            let l = line.trim_start().trim_start_matches("- ");
            if let Some(rest) = l.strip_prefix("**") {
                if let Some(end) = rest.find("**") {
                    let id = &rest[..end];
                    if is_rule_id(id) {
                        ids.insert(id.to_string());
                    }
                }
            }
        }
        RuleIndex { ids }
    }

    pub fn load(path: &Path) -> std::io::Result<RuleIndex> {
        Ok(RuleIndex::parse(&std::fs::read_to_string(path)?))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    pub fn ids(&self) -> impl Iterator<Item = &String> {
        self.ids.iter()
    }
}

/// `SP-1`, `SP-1.2`, `SC-3.4.1`: two capital letters, a dash, dot-separated numbers.
pub fn is_rule_id(id: &str) -> bool {
    let Some((prefix, nums)) = id.split_once('-') else {
        return false;
    };
    prefix.len() == 2
        && prefix.bytes().all(|b| b.is_ascii_uppercase())
        && !nums.is_empty()
        && nums
            .split('.')
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The repository root, found from this crate's manifest directory.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("conformance/ has a parent")
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_read_from_bold_ids_at_the_start_of_a_line() {
        let idx = RuleIndex::parse(
            "**SP-1.1** A rule.\n- **SP-2** Another.\nSee **SP-9** inline? no: `x **SP-3**`.",
        );
        assert!(idx.contains("SP-1.1"));
        assert!(idx.contains("SP-2"));
        assert!(!idx.contains("SP-3"));
    }
}

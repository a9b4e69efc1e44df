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
        RuleIndex {
            ids: tidemark_sim::spec_rules::rule_ids(spec),
        }
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

    /// Every id, for the scoped grammar's parser (in `tidemark_sim`).
    pub fn id_set(&self) -> &BTreeSet<String> {
        &self.ids
    }
}

pub use tidemark_sim::spec_rules::is_rule_id;

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

//! The rule ids SPEC.md defines. A scenario citing a rule that does not exist is malformed: a
//! citation is a promise that the rule is checked, and a typo would break it silently.

use std::collections::{BTreeMap, BTreeSet};
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

/// Each rule's text as SPEC.md states it, for reports that show a rule beside a failure: the
/// paragraph that starts with `**XX-n.m**` (optionally after `- `), up to the next blank line,
/// heading or rule, its lines joined by spaces.
pub fn rule_texts(spec: &str) -> BTreeMap<String, String> {
    let mut texts = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in spec.lines() {
        let l = line.trim_start().trim_start_matches("- ");
        let starts = l
            .strip_prefix("**")
            .and_then(|rest| rest.find("**").map(|end| &rest[..end]))
            .filter(|id| is_rule_id(id));
        if let Some(id) = starts {
            if let Some((id, text)) = current.take() {
                texts.insert(id, text);
            }
            current = Some((id.to_string(), l.to_string()));
            continue;
        }
        let ends = line.trim().is_empty() || line.starts_with('#');
        match (&mut current, ends) {
            (Some(_), true) => {
                let (id, text) = current.take().expect("a rule in progress");
                texts.insert(id, text);
            }
            (Some((_, text)), false) => {
                text.push(' ');
                text.push_str(line.trim());
            }
            (None, _) => {}
        }
    }
    if let Some((id, text)) = current {
        texts.insert(id, text);
    }
    texts
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

    #[test]
    fn a_rules_text_is_its_paragraph_up_to_the_next_rule_or_blank_line() {
        let texts = rule_texts(
            "# H\n**SP-1.1** First line\ngoes on.\n**SP-1.2** Next.\n\nNot a rule.\n- **SP-2** Listed.\n## Later",
        );
        assert_eq!(texts["SP-1.1"], "**SP-1.1** First line goes on.");
        assert_eq!(texts["SP-1.2"], "**SP-1.2** Next.");
        assert_eq!(texts["SP-2"], "**SP-2** Listed.");
        assert_eq!(texts.len(), 3);
    }
}

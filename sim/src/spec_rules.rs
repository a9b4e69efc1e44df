//! The rule ids SPEC.md defines, read the same way for both scenario grammars. A scenario citing
//! a rule that does not exist is malformed: a citation is a promise that the rule is checked,
//! and a typo would break it silently.

use std::collections::BTreeSet;

/// A rule is defined by a line starting `**XX-n.m**` (optionally after `- `).
pub fn rule_ids(spec: &str) -> BTreeSet<String> {
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
    ids
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

/// SPEC.md of this repository (beside the `sim/` crate).
pub fn repo_spec_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../SPEC.md")
}

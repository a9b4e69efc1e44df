//! The scoped profile's variants (SPEC.md part SC, the table of variants): the decisions where
//! reasonable stores differ and no user is hurt. Each is named here once, with the rule that
//! states its choices; the reference can take every choice, so `tidemark run --variant` shows
//! that the suite judges each choice's behaviour, not only the default's.

use std::collections::BTreeSet;

use tidemark_reference::scoped::Alternative;

use crate::variants::{Declared, Variant};

/// Every scoped variant, in SPEC.md's order.
pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "empty_and_dot_segments",
        rule: "SC-2.3",
        choices: &["refused", "tidied"],
    },
    Variant {
        name: "unknown_skill_writes",
        rule: "SC-2.6",
        choices: &["unknown_skill", "read_only"],
    },
    Variant {
        name: "empty_skill_versions",
        rule: "SC-2.6",
        choices: &["refused", "published"],
    },
    Variant {
        name: "bare_skill_listings",
        rule: "SC-2.7",
        choices: &["refused", "every_skill"],
    },
    Variant {
        name: "file_prefix_listings",
        rule: "SC-2.7",
        choices: &["nothing", "the_file"],
    },
    Variant {
        name: "path_check_order",
        rule: "SC-3.5",
        choices: &["shape_first", "session_first"],
    },
    Variant {
        name: "listing_order",
        rule: "SC-4.4",
        choices: &["byte_order", "any"],
    },
    Variant {
        name: "throttles",
        rule: "SC-8.4",
        choices: &["retried", "reported"],
    },
    Variant {
        name: "server_errors",
        rule: "SC-8.4",
        choices: &["reported", "retried"],
    },
];

/// The variant called `name` (one of [`VARIANTS`]).
pub fn variant(name: &str) -> &'static Variant {
    VARIANTS
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no scoped variant {name}"))
}

/// Each non-default choice, as the reference's [`Alternative`].
const ALTERNATIVES: &[(&str, &str, Alternative)] = &[
    (
        "empty_and_dot_segments",
        "tidied",
        Alternative::SegmentsTidied,
    ),
    (
        "unknown_skill_writes",
        "read_only",
        Alternative::SkillWritesReadOnly,
    ),
    (
        "empty_skill_versions",
        "published",
        Alternative::EmptySkillVersionsPublished,
    ),
    (
        "bare_skill_listings",
        "every_skill",
        Alternative::BareSkillListsEverySkill,
    ),
    (
        "file_prefix_listings",
        "the_file",
        Alternative::FilePrefixListsTheFile,
    ),
    (
        "path_check_order",
        "session_first",
        Alternative::SessionBeforeShape,
    ),
    ("listing_order", "any", Alternative::ListingsByScope),
    ("throttles", "reported", Alternative::ThrottlesReported),
    ("server_errors", "retried", Alternative::ServerErrorsRetried),
];

/// The alternatives that behave as `declared` says: what the reference is configured with, and
/// what the model follows.
pub fn alternatives(declared: &Declared) -> BTreeSet<Alternative> {
    ALTERNATIVES
        .iter()
        .filter(|(name, choice, _)| declared.takes(variant(name), choice))
        .map(|(_, _, a)| *a)
        .collect()
}

/// Every declaration of one non-default choice: what `cargo test` plays the suite under, one
/// at a time.
pub fn each_alternative() -> Vec<Declared> {
    ALTERNATIVES
        .iter()
        .map(|(name, choice, _)| Declared::defaults().with(variant(name), choice))
        .collect()
}

/// Whether `declared` takes the choice `variant=choice` (both scoped names).
pub fn takes(declared: &Declared, variant_name: &str, choice: &str) -> bool {
    declared.takes(variant(variant_name), choice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::scoped::model::{run_ops_taking, IdStyle, ModelOp, SequenceError, Tier};

    /// Exploration runs the reference taking the declared choice and the model following it: a
    /// malformed path in a deleted session is `unknown_entity` under `session_first` and
    /// `traversal` by default, and each run passes only if the reference answers as the model
    /// predicts for its choice.
    #[test]
    fn exploration_takes_the_declared_choice_in_the_reference_and_the_model() {
        let ops = [
            ModelOp::DeleteSession { session: 0 },
            ModelOp::Traversal {
                session: 0,
                path: 0,
                encoded: false,
            },
        ];
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let run = |declared: &Declared| {
            rt.block_on(run_ops_taking(
                Tier::Memory,
                7,
                &ops,
                None,
                None,
                IdStyle::Uuid,
                declared,
            ))
        };
        let session_first = Declared::defaults().with(variant("path_check_order"), "session_first");
        for declared in [Declared::defaults(), session_first] {
            if let Err(e) = run(&declared) {
                let what = match e {
                    SequenceError::Diverged(d) => format!("{}: {}", d.expected, d.actual),
                    SequenceError::Setup(e) => e,
                };
                panic!("taking {declared}: {what}");
            }
        }
    }

    #[test]
    fn every_alternative_names_a_non_default_choice_of_a_scoped_variant() {
        for (name, choice, _) in ALTERNATIVES {
            let v = variant(name);
            assert!(v.choices[1..].contains(choice), "{name}={choice}");
        }
        assert_eq!(ALTERNATIVES.len(), Alternative::ALL.len());
        // Every non-default choice of every variant is one the reference can take.
        let choices: usize = VARIANTS.iter().map(|v| v.choices.len() - 1).sum();
        assert_eq!(choices, ALTERNATIVES.len());
    }
}

//! The scoped profile's variants (SPEC.md part SC, the table of variants): the decisions where
//! reasonable stores differ and no user is hurt. Each is named here once, with the rule that
//! states its choices; the reference can take every choice, so `tidemark run --variant` shows
//! that the suite judges each choice's behaviour, not only the default's.

use std::collections::BTreeSet;

use tidemark_reference::scoped::Alternative;

use crate::variants::{Alternatives, Declared, Variant};

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

/// The scoped variants beside the reference's way of taking each non-default choice.
pub const ALTERNATIVES: Alternatives<Alternative> = Alternatives {
    profile: "scoped",
    variants: VARIANTS,
    alternatives: &[
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
    ],
};

/// The variant called `name` (one of [`VARIANTS`]).
pub fn variant(name: &str) -> &'static Variant {
    ALTERNATIVES.variant(name)
}

/// The alternatives that behave as `declared` says: what the reference is configured with, and
/// what the model follows.
pub fn alternatives(declared: &Declared) -> BTreeSet<Alternative> {
    ALTERNATIVES.taken(declared).collect()
}

/// Whether `declared` takes the choice `variant=choice` (both scoped names).
pub fn takes(declared: &Declared, variant_name: &str, choice: &str) -> bool {
    ALTERNATIVES.takes(declared, variant_name, choice)
}

/// Every declaration of one non-default choice the reference can take: what `cargo test`
/// plays the suite under, one at a time.
pub fn each_alternative() -> Vec<Declared> {
    ALTERNATIVES.each_alternative()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::scoped::model::{run_ops_taking, ModelOp, SequenceError, Tier, GENERATOR};

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
                GENERATOR,
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
        // Every non-default choice of every variant is one the reference can take.
        assert_eq!(ALTERNATIVES.untaken_choices(), Ok(0));
        assert_eq!(ALTERNATIVES.alternatives.len(), Alternative::ALL.len());
    }
}

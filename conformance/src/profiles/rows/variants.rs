//! The rows profile's variants (SPEC.md part SR, the table of variants): the decisions where
//! reasonable stores differ and no user is hurt. The reference can take every choice, so
//! `tidemark run --profile rows --variant` shows the suite judges each choice's behaviour.

use tidemark_reference::rows::{Alternative, RowsConfig};

use crate::variants::{Alternatives, Declared, Variant};

/// Every rows variant, in SPEC.md's order.
pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "kind_check_order",
        rule: "SR-2.1",
        choices: &["kind_first", "target_first"],
    },
    Variant {
        name: "unknown_model_drops",
        rule: "SR-5.1",
        choices: &["ignored", "refused"],
    },
];

/// The rows variants beside the reference's way of taking each non-default choice.
pub const ALTERNATIVES: Alternatives<Alternative> = Alternatives {
    profile: "rows",
    variants: VARIANTS,
    alternatives: &[
        (
            "kind_check_order",
            "target_first",
            Alternative::TargetBeforeKind,
        ),
        (
            "unknown_model_drops",
            "refused",
            Alternative::UnknownModelDropRefused,
        ),
    ],
};

/// The variant called `name` (one of [`VARIANTS`]).
pub fn variant(name: &str) -> &'static Variant {
    ALTERNATIVES.variant(name)
}

/// `config` taking what `declared` says: the reference as an implementation declaring it.
pub fn configured(config: RowsConfig, declared: &Declared) -> RowsConfig {
    ALTERNATIVES
        .taken(declared)
        .fold(config, |c, a| c.taking(a))
}

/// Whether `declared` takes `variant=choice` (rows names).
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
    use crate::profiles::rows::explore::ops::ExploreOp;
    use crate::profiles::rows::explore::run::{run_ops_taking, RunError, Tier};
    use crate::profiles::rows::script::Action;

    /// Exploration runs the reference taking the declared choice and the model following it:
    /// a second drop of one model is `ok` by default and `unknown_model` under `refused`, and
    /// each run passes only if the reference answers as the model predicts for its choice.
    #[test]
    fn exploration_takes_the_declared_choice_in_the_reference_and_the_model() {
        let ops: Vec<ExploreOp> = [
            Action::Snapshot("s1".into()),
            Action::NameSnapshot {
                snapshot: "s1".into(),
                model: "m".into(),
            },
            Action::DropModel("m".into()),
            Action::DropModel("m".into()),
        ]
        .into_iter()
        .map(ExploreOp::Step)
        .collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let refused = Declared::defaults().with(variant("unknown_model_drops"), "refused");
        for declared in [Declared::defaults(), refused] {
            let run = rt.block_on(run_ops_taking(
                Tier::Memory,
                Tier::Memory.detail(),
                2,
                &ops,
                None,
                &declared,
            ));
            match run {
                Ok(_) => {}
                Err(RunError::Diverged(d)) => panic!("taking {declared}: {}", d.line()),
                Err(RunError::Setup(e)) => panic!("taking {declared}: {e}"),
            }
        }
    }

    #[test]
    fn every_alternative_names_a_non_default_choice_of_a_rows_variant() {
        assert_eq!(ALTERNATIVES.untaken_choices(), Ok(0));
        assert_eq!(ALTERNATIVES.alternatives.len(), Alternative::ALL.len());
    }
}

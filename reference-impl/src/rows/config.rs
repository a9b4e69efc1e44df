//! How a deployment of the rows reference behaves: the mutant switched on, if any, and the
//! variants it takes the other way.

use super::alternatives::Alternative;
use super::mutants::RowsMutant;

/// How a deployment of the rows reference behaves: the correct design unless a mutant is set
/// (conformance's mutant runs switch one on at run time), taking the default of every SPEC.md
/// variant unless `alternatives` names its other choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowsConfig {
    pub mutant: Option<RowsMutant>,
    /// The variants this store takes the other way; the defaults when both are false.
    pub target_before_kind: bool,
    pub unknown_model_drop_refused: bool,
}

impl RowsConfig {
    /// The reference with `mutant` switched on (or none), every variant at its default.
    pub fn with_mutant(mutant: Option<RowsMutant>) -> RowsConfig {
        RowsConfig {
            mutant,
            ..RowsConfig::default()
        }
    }

    /// These settings taking `a` too.
    pub fn taking(mut self, a: Alternative) -> RowsConfig {
        match a {
            Alternative::TargetBeforeKind => self.target_before_kind = true,
            Alternative::UnknownModelDropRefused => self.unknown_model_drop_refused = true,
        }
        self
    }

    /// Whether these settings take `a`.
    pub fn takes(&self, a: Alternative) -> bool {
        match a {
            Alternative::TargetBeforeKind => self.target_before_kind,
            Alternative::UnknownModelDropRefused => self.unknown_model_drop_refused,
        }
    }
}

//! The choices SPEC.md part SR leaves to an implementation (its variants), where this store can
//! take the other one. The defaults are what it ships with; each alternative is another correct
//! store, so the conformance suite can show it judges every variant's behaviour, not only the
//! default's (`tidemark run --profile rows --variant ...`). Unlike a mutant, an alternative is
//! not a bug: an implementation that declares it is judged by it.

/// The non-default choice of one variant (SPEC.md's table names them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Alternative {
    /// `kind_check_order=target_first`: an event's session, or a streamed event's reply and
    /// its state, is checked before its kind (SR-2.1).
    TargetBeforeKind,
    /// `unknown_model_drops=refused`: dropping a model that does not exist is refused
    /// `unknown_model` (SR-5.1).
    UnknownModelDropRefused,
}

impl Alternative {
    pub const ALL: &'static [Alternative] = &[
        Alternative::TargetBeforeKind,
        Alternative::UnknownModelDropRefused,
    ];
}

//! Playing a scenario's steps, for every profile: the first step whose outcome is not the one
//! expected ends the scenario as a [`Failure`], with its line.

/// Why a scenario failed: the step, what it expected and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Line of the failing step; 0 when the scenario failed before any step.
    pub line: usize,
    pub step: String,
    pub expected: String,
    pub actual: String,
}

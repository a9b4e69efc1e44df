//! Playing a scenario's steps, for every profile: perform each step, record what it observed,
//! compare it with the step's expectation, and stop at the first mismatch as a [`Failure`]
//! with the step's line. A profile says how to do one step ([`StepPlayer`]); the loop
//! ([`play`]) is written once.

use std::fmt;

/// Why a scenario failed: the step, what it expected and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Line of the failing step; 0 when the scenario failed before any step.
    pub line: usize,
    pub step: String,
    pub expected: String,
    pub actual: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {}\n  expected: {}\n  actual:   {}",
            self.line, self.step, self.expected, self.actual
        )
    }
}

/// A step that did not go as its line says: what was expected and what happened. [`play`] adds
/// the step's line and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub expected: String,
    pub actual: String,
}

impl Mismatch {
    pub fn new(expected: impl Into<String>, actual: impl Into<String>) -> Mismatch {
        Mismatch {
            expected: expected.into(),
            actual: actual.into(),
        }
    }
}

/// A scenario step as the loop needs it: where it stands in its file.
pub trait Located {
    /// The 1-based line of the step in its scenario file.
    fn line(&self) -> usize;
    /// The step as written, for reports.
    fn text(&self) -> &str;
}

/// How one profile plays one step: the vocabulary is the profile's, the loop is [`play`].
// The trait is implemented and called only inside this crate, with concrete types, so whether
// a future is `Send` is read from each implementation; the lint's worry (callers unable to
// require `Send` of a generic future) does not arise.
#[allow(async_fn_in_trait)]
pub trait StepPlayer {
    type Step: Located;
    /// What a step observed, to record and to compare.
    type Outcome;

    /// Performs one step. `None`: a step with nothing to compare (the harness moved the clock,
    /// stopped the implementation, acted on a disk). An `Err` ends the scenario at this step
    /// (the implementation failed, or the step cannot be performed at all).
    async fn perform(&mut self, step: &Self::Step) -> Result<Option<Self::Outcome>, Mismatch>;

    /// Records what the step observed (a trace line, a recorded outcome), before it is
    /// compared, so a failing step's outcome is in the record too.
    fn observe(&mut self, step: &Self::Step, outcome: &Self::Outcome);

    /// Whether the outcome is the one the step expects.
    fn compare(&self, step: &Self::Step, outcome: &Self::Outcome) -> Result<(), Mismatch>;
}

/// Plays `steps` in order through `player`; the first mismatch ends the scenario with its line.
pub async fn play<P: StepPlayer>(player: &mut P, steps: &[P::Step]) -> Result<(), Failure> {
    for step in steps {
        let at = |m: Mismatch| Failure {
            line: step.line(),
            step: step.text().to_string(),
            expected: m.expected,
            actual: m.actual,
        };
        if let Some(outcome) = player.perform(step).await.map_err(at)? {
            player.observe(step, &outcome);
            player.compare(step, &outcome).map_err(at)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Step(usize, &'static str, i64);

    impl Located for Step {
        fn line(&self) -> usize {
            self.0
        }
        fn text(&self) -> &str {
            self.1
        }
    }

    /// Doubles each number; a step expects its number doubled, 0 is a step with nothing to
    /// compare, and a negative number cannot be performed.
    #[derive(Default)]
    struct Doubler {
        seen: Vec<i64>,
    }

    impl StepPlayer for Doubler {
        type Step = Step;
        type Outcome = i64;
        async fn perform(&mut self, step: &Step) -> Result<Option<i64>, Mismatch> {
            if step.2 < 0 {
                return Err(Mismatch::new("a number to double", "a negative one"));
            }
            Ok((step.2 != 0).then_some(step.2 * 2))
        }
        fn observe(&mut self, _: &Step, outcome: &i64) {
            self.seen.push(*outcome);
        }
        fn compare(&self, step: &Step, outcome: &i64) -> Result<(), Mismatch> {
            // The step of 3 is written wrongly: it expects 7.
            let want = if step.2 == 3 { 7 } else { step.2 * 2 };
            if *outcome == want {
                Ok(())
            } else {
                Err(Mismatch::new(want.to_string(), outcome.to_string()))
            }
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(f)
    }

    #[test]
    fn the_first_mismatch_ends_the_scenario_with_its_line_and_its_outcome_is_recorded() {
        let mut player = Doubler::default();
        let steps = [
            Step(3, "two", 2),
            Step(4, "nothing", 0),
            Step(7, "three", 3),
            Step(9, "one", 1),
        ];
        let failure = block_on(play(&mut player, &steps)).unwrap_err();
        assert_eq!(
            failure,
            Failure {
                line: 7,
                step: "three".into(),
                expected: "7".into(),
                actual: "6".into()
            }
        );
        assert_eq!(
            player.seen,
            vec![4, 6],
            "the failing step's outcome is recorded, no later one"
        );
    }

    #[test]
    fn a_step_that_cannot_be_performed_fails_at_its_line_without_an_outcome() {
        let mut player = Doubler::default();
        let steps = [Step(2, "two", 2), Step(5, "minus one", -1)];
        let failure = block_on(play(&mut player, &steps)).unwrap_err();
        assert_eq!((failure.line, failure.step.as_str()), (5, "minus one"));
        assert_eq!(failure.actual, "a negative one");
        assert_eq!(player.seen, vec![4]);
        let mut fine = Doubler::default();
        assert_eq!(block_on(play(&mut fine, &[Step(1, "two", 2)])), Ok(()));
    }
}

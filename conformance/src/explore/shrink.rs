//! A proptest value tree for an operation sequence that shrinks the way failures in stateful
//! systems need: first by deleting chunks of steps (halves, then quarters, …, then single
//! steps; deleting the tail after a divergence is the first candidate tried), then by simplifying
//! each remaining step with its own value tree (towards `Nop`, then towards simpler variants).
//!
//! proptest's own `vec` strategy deletes one element at a time and only down to its minimum
//! length, which for a fixed-length workload means never; this keeps the workload's length fixed
//! when generating and lets shrinking reach a handful of steps in a few hundred runs.

use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use std::fmt;

pub struct OpsStrategy<T: fmt::Debug> {
    element: BoxedStrategy<T>,
    len: usize,
}

impl<T: fmt::Debug> fmt::Debug for OpsStrategy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OpsStrategy(len {})", self.len)
    }
}

/// Exactly `len` elements when generated; any subsequence when shrunk.
pub fn sequence<T: fmt::Debug + Clone + 'static>(
    element: BoxedStrategy<T>,
    len: usize,
) -> OpsStrategy<T> {
    OpsStrategy { element, len }
}

impl<T: fmt::Debug + Clone + 'static> Strategy for OpsStrategy<T> {
    type Tree = OpsTree<T>;
    type Value = Vec<T>;

    fn new_tree(&self, runner: &mut TestRunner) -> proptest::strategy::NewTree<Self> {
        let mut trees = Vec::with_capacity(self.len);
        for _ in 0..self.len {
            trees.push(self.element.new_tree(runner)?);
        }
        let n = trees.len();
        Ok(OpsTree {
            trees,
            included: vec![true; n],
            phase: Phase::Chunks {
                size: n.div_ceil(2).max(1),
                start: n / 2,
            },
            last: None,
        })
    }
}

impl<T: fmt::Debug + Clone + 'static> OpsTree<T> {
    /// A tree over fixed values: shrinks by deleting chunks of steps only. For sequences that
    /// come from a generator of their own (the scoped model's seed), not from a strategy.
    pub fn of_values(values: Vec<T>) -> OpsTree<T> {
        let n = values.len();
        OpsTree {
            trees: values
                .into_iter()
                .map(|v| Box::new(proptest::strategy::Just(v)) as Box<dyn ValueTree<Value = T>>)
                .collect(),
            included: vec![true; n],
            phase: Phase::Chunks {
                size: n.div_ceil(2).max(1),
                start: n / 2,
            },
            last: None,
        }
    }
}

/// Operations beside a value the seed fixes for the whole run (the rows profile's batch size):
/// only the operations shrink.
#[derive(Debug)]
pub struct Beside<A, T: fmt::Debug> {
    pub fixed: A,
    pub ops: OpsTree<T>,
}

impl<A: Clone + fmt::Debug, T: fmt::Debug + Clone> ValueTree for Beside<A, T> {
    type Value = (A, Vec<T>);

    fn current(&self) -> (A, Vec<T>) {
        (self.fixed.clone(), self.ops.current())
    }

    fn simplify(&mut self) -> bool {
        self.ops.simplify()
    }

    fn complicate(&mut self) -> bool {
        self.ops.complicate()
    }
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Try deleting `size` consecutive included elements from position `start` (in the
    /// included-only numbering).
    Chunks {
        size: usize,
        start: usize,
    },
    Elements {
        ix: usize,
    },
    Done,
}

#[derive(Clone, Debug)]
enum Change {
    Removed(Vec<usize>),
    Element(usize),
}

pub struct OpsTree<T: fmt::Debug> {
    trees: Vec<Box<dyn ValueTree<Value = T>>>,
    included: Vec<bool>,
    phase: Phase,
    last: Option<Change>,
}

impl<T: fmt::Debug> fmt::Debug for OpsTree<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "OpsTree({} of {} kept, {:?})",
            self.included.iter().filter(|k| **k).count(),
            self.trees.len(),
            self.phase
        )
    }
}

impl<T: fmt::Debug + Clone> OpsTree<T> {
    fn kept(&self) -> Vec<usize> {
        (0..self.included.len())
            .filter(|&i| self.included[i])
            .collect()
    }

    /// Applies the next simplification candidate; false when none is left.
    fn next_candidate(&mut self) -> bool {
        loop {
            match self.phase {
                Phase::Done => return false,
                Phase::Chunks { size, start } => {
                    let kept = self.kept();
                    if start >= kept.len() || kept.len() <= 1 {
                        self.phase = if size <= 1 || kept.len() <= 1 {
                            Phase::Elements { ix: 0 }
                        } else {
                            Phase::Chunks {
                                size: size / 2,
                                start: 0,
                            }
                        };
                        continue;
                    }
                    let end = (start + size).min(kept.len());
                    if end - start == kept.len() {
                        // Never delete everything: an empty sequence proves nothing.
                        self.phase = Phase::Chunks { size, start: end };
                        continue;
                    }
                    let removed: Vec<usize> = kept[start..end].to_vec();
                    for &i in &removed {
                        self.included[i] = false;
                    }
                    self.last = Some(Change::Removed(removed));
                    return true;
                }
                Phase::Elements { ix } => {
                    if ix >= self.trees.len() {
                        self.phase = Phase::Done;
                        continue;
                    }
                    if self.included[ix] && self.trees[ix].simplify() {
                        self.last = Some(Change::Element(ix));
                        return true;
                    }
                    self.phase = Phase::Elements { ix: ix + 1 };
                }
            }
        }
    }
}

impl<T: fmt::Debug + Clone> ValueTree for OpsTree<T> {
    type Value = Vec<T>;

    fn current(&self) -> Vec<T> {
        self.kept()
            .into_iter()
            .map(|i| self.trees[i].current())
            .collect()
    }

    /// The last candidate still failed: keep it, and try the next one from here.
    fn simplify(&mut self) -> bool {
        self.last = None;
        self.next_candidate()
    }

    /// The last candidate passed: undo it and move on to the next candidate.
    fn complicate(&mut self) -> bool {
        match self.last.take() {
            Some(Change::Removed(idx)) => {
                let count = idx.len();
                for i in idx {
                    self.included[i] = true;
                }
                if let Phase::Chunks { size, start } = self.phase {
                    self.phase = Phase::Chunks {
                        size,
                        start: start + count.max(1),
                    };
                }
                self.next_candidate()
            }
            Some(Change::Element(ix)) => {
                if self.trees[ix].complicate() {
                    self.last = Some(Change::Element(ix));
                    true
                } else {
                    self.phase = Phase::Elements { ix: ix + 1 };
                    self.next_candidate()
                }
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestError};

    #[test]
    fn a_tree_over_fixed_values_deletes_steps_down_to_the_ones_that_fail() {
        let values: Vec<u8> = (0..80).map(|i| (i * 7 % 10) as u8).collect();
        let fails = |v: &[u8]| {
            let first7 = v.iter().position(|&x| x == 7);
            let last3 = v.iter().rposition(|&x| x == 3);
            matches!((first7, last3), (Some(a), Some(b)) if a < b)
        };
        assert!(fails(&values));
        let mut tree = OpsTree::of_values(values);
        let mut best = tree.current();
        let mut more = tree.simplify();
        while more {
            let c = tree.current();
            more = if fails(&c) {
                best = c;
                tree.simplify()
            } else {
                tree.complicate()
            };
        }
        assert_eq!(best, vec![7, 3]);
    }

    #[test]
    fn a_value_beside_the_operations_stays_as_the_seed_fixed_it_while_they_shrink() {
        let mut tree = Beside {
            fixed: 3i64,
            ops: OpsTree::of_values(vec![1u8, 7, 2]),
        };
        assert_eq!(tree.current(), (3, vec![1, 7, 2]));
        let mut best = tree.current();
        let mut more = tree.simplify();
        while more {
            let c = tree.current();
            more = if c.1.contains(&7) {
                best = c;
                tree.simplify()
            } else {
                tree.complicate()
            };
        }
        assert_eq!(best, (3, vec![7]));
    }

    #[test]
    fn a_failure_needing_two_elements_shrinks_to_those_two() {
        let config = Config {
            cases: 64,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let strategy = sequence((0u8..10).boxed(), 200);
        // Fails whenever a 7 comes somewhere before a 3.
        let result = runner.run(&strategy, |v| {
            let first7 = v.iter().position(|&x| x == 7);
            let last3 = v.iter().rposition(|&x| x == 3);
            match (first7, last3) {
                (Some(a), Some(b)) if a < b => Err(TestCaseError::fail("7 before 3")),
                _ => Ok(()),
            }
        });
        match result {
            Err(TestError::Fail(_, v)) => assert_eq!(v, vec![7, 3]),
            other => panic!("expected a shrunk failure, got {other:?}"),
        }
    }
}

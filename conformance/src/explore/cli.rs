//! What the `explore` and `replay` commands show for every profile: the progress bar over seeds
//! and a replay's outcome with its exit status.

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar over `n` seeds, prefixed with what is explored.
pub fn progress(n: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(n);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} seeds {per_sec} eta {eta}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar
}

/// What `tidemark replay` found, each with its own exit status so a script can tell them apart
/// (2 stays a usage or load error, as for every command).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayOutcome {
    /// The saved failure happens again with a byte-identical trace (for `--seed`: the seed
    /// diverges). Exit 1: the failure is still there.
    Reproduced,
    /// It still fails, but its trace differs from the saved one. Exit 3.
    FailsDifferently,
    /// The run passes: the saved failure no longer happens (for `--seed`: no divergence).
    /// Exit 0.
    NoLongerFails,
}

impl ReplayOutcome {
    /// From whether the replay diverged and whether its trace equals the saved one.
    pub fn of(diverged: bool, identical_trace: bool) -> ReplayOutcome {
        match (diverged, identical_trace) {
            (false, _) => ReplayOutcome::NoLongerFails,
            (true, true) => ReplayOutcome::Reproduced,
            (true, false) => ReplayOutcome::FailsDifferently,
        }
    }

    pub fn exit_code(self) -> u8 {
        match self {
            ReplayOutcome::NoLongerFails => 0,
            ReplayOutcome::Reproduced => 1,
            ReplayOutcome::FailsDifferently => 3,
        }
    }

    /// The closing line of a replay, naming the outcome and its exit status.
    pub fn verdict_line(self) -> String {
        let what = match self {
            ReplayOutcome::NoLongerFails => "the saved failure no longer happens",
            ReplayOutcome::Reproduced => "the saved failure reproduces identically",
            ReplayOutcome::FailsDifferently => "it still fails, but differently from the saved run",
        };
        format!("outcome:   {what} (exit {})", self.exit_code())
    }
}

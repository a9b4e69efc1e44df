//! A failure's text and the command that runs a seed again, written once for every profile:
//! the profile supplies the pieces ([`FailureText`]), the engine lays them out
//! (`engine::Explorer::describe` and `replay_command` build them from the explorer).

use std::fmt::Write;
use std::path::Path;

/// How a seed is run again from the command line when no program is explored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rerun {
    /// `tidemark explore --profile <profile> --first-seed S --seeds 1 [--mutant M]`, then the
    /// setting's options.
    Explore,
    /// `tidemark replay --seed S [--mutant M]`: the scratchpad's, whose replay runs a seed.
    ReplaySeed,
}

/// How a failure's text is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Numbered operations, the trace's last 12 lines, then where it diverged; `saved:` and
    /// `replay:` lines (rows, scoped).
    Numbered,
    /// Where it diverged first, then the operations and the trace's last 10 lines; only a
    /// `replay:` line (the scratchpad's, older).
    Compact,
}

/// What a profile says about how its failures read and replay.
#[derive(Clone, Copy, Debug)]
pub struct TextStyle {
    pub layout: Layout,
    pub rerun: Rerun,
    /// Whether the heading names the profile: `against the rows mutant x`.
    pub profile_in_heading: bool,
}

impl TextStyle {
    pub const NUMBERED: TextStyle = TextStyle {
        layout: Layout::Numbered,
        rerun: Rerun::Explore,
        profile_in_heading: false,
    };
}

/// Where a run diverged, as a profile's divergence says it.
pub struct DivergenceText<'a> {
    /// The whole trace; the layout shows its tail.
    pub trace: &'a [String],
    /// Where: `operation 4 (advance 1d)`, `operation 4, the last one`, or the operation.
    pub at: String,
    pub expected: &'a str,
    pub actual: &'a str,
    /// The model's state at the divergence (`crate::html::bounded_lines`), for the page.
    pub model_state: &'a [String],
}

/// One failure's pieces, laid out by [`FailureText::render`].
pub struct FailureText<'a> {
    pub layout: Layout,
    pub seed: u64,
    /// Who ran: `the reference`, `the rows mutant x`, a program's command.
    pub against: String,
    /// After the heading: ` (reaps in batches of 3)`, ` (unmounted root)`, or nothing.
    pub detail: String,
    /// The (shrunk) operations, one line each.
    pub ops: Vec<String>,
    /// Operations the seed generated before shrinking.
    pub original_len: usize,
    /// The divergence, or the set-up error that stopped the run.
    pub error: Result<DivergenceText<'a>, &'a str>,
    /// The file the failure was saved to.
    pub saved: Option<&'a Path>,
    /// The command that runs the seed again, when it was not saved.
    pub replay: String,
}

impl FailureText<'_> {
    /// The failure the way a person needs it: seed, operations, trace tail, expected beside
    /// actual, and the command that replays it.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "FAIL  seed {} against {}{}",
            self.seed, self.against, self.detail
        );
        match self.layout {
            Layout::Numbered => self.numbered(&mut s),
            Layout::Compact => self.compact(&mut s),
        }
        match (self.saved, self.layout) {
            (Some(p), Layout::Numbered) => {
                let _ = writeln!(s, "  saved:  {}", p.display());
                let _ = writeln!(s, "  replay: tidemark replay {}", p.display());
            }
            (Some(p), Layout::Compact) => {
                let _ = writeln!(s, "  replay: tidemark replay {}", p.display());
            }
            (None, _) => {
                let _ = writeln!(s, "  replay: {}", self.replay);
            }
        }
        s
    }

    fn numbered(&self, s: &mut String) {
        match &self.error {
            Ok(d) => {
                let _ = writeln!(
                    s,
                    "  operations ({} of the seed's {}, shrunk):",
                    self.ops.len(),
                    self.original_len
                );
                for (i, op) in self.ops.iter().enumerate() {
                    let _ = writeln!(s, "    {i:>3}  {op}");
                }
                let _ = writeln!(s, "  trace tail:");
                for line in tail(d.trace, 12) {
                    let _ = writeln!(s, "    {line}");
                }
                let _ = writeln!(s, "  diverged at {}:", d.at);
                let _ = writeln!(s, "    expected {}", d.expected);
                let _ = writeln!(s, "    actual   {}", d.actual);
            }
            Err(why) => {
                let _ = writeln!(s, "  could not set up: {why}");
            }
        }
    }

    fn compact(&self, s: &mut String) {
        let d = match &self.error {
            Ok(d) => d,
            Err(why) => {
                let _ = writeln!(s, "  could not set up: {why}");
                return;
            }
        };
        let _ = writeln!(s, "  diverged at: {}", d.at);
        let _ = writeln!(s, "  expected:    {}", d.expected);
        let _ = writeln!(s, "  actual:      {}", d.actual);
        let _ = writeln!(
            s,
            "  shrunk from {} to {} operations:",
            self.original_len,
            self.ops.len()
        );
        for op in &self.ops {
            let _ = writeln!(s, "    {op}");
        }
        let _ = writeln!(s, "  trace tail:");
        for line in tail(d.trace, 10) {
            let _ = writeln!(s, "    {line}");
        }
    }
}

fn tail(lines: &[String], n: usize) -> &[String] {
    &lines[lines.len().saturating_sub(n)..]
}

/// The command that runs one seed again: a program's exploration (`program`), or the
/// profile's by `rerun`; `options` (each with its leading space) select the setting.
pub fn replay_command(
    rerun: Rerun,
    profile: &str,
    program: Option<&str>,
    seed: u64,
    mutant: Option<&str>,
    options: &str,
) -> String {
    let m = mutant.map(|m| format!(" --mutant {m}")).unwrap_or_default();
    match (program, rerun) {
        (Some(cmd), _) => format!(
            "tidemark explore --impl {} --first-seed {seed} --seeds 1{m}{options}",
            shlex::try_quote(cmd).unwrap_or_else(|_| cmd.into())
        ),
        (None, Rerun::ReplaySeed) => format!("tidemark replay --seed {seed}{m}"),
        (None, Rerun::Explore) => {
            format!(
                "tidemark explore --profile {profile} --first-seed {seed} --seeds 1{m}{options}"
            )
        }
    }
}

/// The command that runs a whole exploration again: `n` seeds from `first`, every shard.
pub fn run_command(
    profile: &str,
    program: Option<&str>,
    first: u64,
    n: u64,
    mutant: Option<&str>,
    options: &str,
) -> String {
    let m = mutant.map(|m| format!(" --mutant {m}")).unwrap_or_default();
    let who = match program {
        Some(cmd) => format!(
            " --impl {}",
            shlex::try_quote(cmd).unwrap_or_else(|_| cmd.into())
        ),
        None => String::new(),
    };
    format!(
        "tidemark explore --profile {profile}{who} --first-seed {first} --seeds {n}{m}{options}"
    )
}

/// ` --tier <tier>`, or nothing for `postgres`, the tiered profiles' default.
pub fn tier_option(tier: &str) -> String {
    if tier == "postgres" {
        String::new()
    } else {
        format!(" --tier {tier}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(layout: Layout, saved: Option<&Path>) -> String {
        let trace: Vec<String> = (0..14).map(|i| format!("line {i}")).collect();
        FailureText {
            layout,
            seed: 7,
            against: "the mutant m".into(),
            detail: " (detail)".into(),
            ops: vec!["a".into(), "b".into()],
            original_len: 9,
            error: Ok(DivergenceText {
                trace: &trace,
                at: "operation 1 (b)".into(),
                expected: "x",
                actual: "y",
                model_state: &[],
            }),
            saved,
            replay: "tidemark replay --seed 7 --mutant m".into(),
        }
        .render()
    }

    #[test]
    fn each_layout_shows_the_pieces_in_its_order() {
        let numbered = failure(Layout::Numbered, Some(Path::new("f.json")));
        assert!(numbered.starts_with(
            "FAIL  seed 7 against the mutant m (detail)\n  operations (2 of the seed's 9, shrunk):\n      0  a\n"
        ), "{numbered}");
        assert!(
            numbered.contains("  trace tail:\n    line 2\n"),
            "{numbered}"
        );
        assert!(numbered.ends_with(
            "  diverged at operation 1 (b):\n    expected x\n    actual   y\n  saved:  f.json\n  replay: tidemark replay f.json\n"
        ), "{numbered}");
        let compact = failure(Layout::Compact, None);
        assert!(compact.starts_with(
            "FAIL  seed 7 against the mutant m (detail)\n  diverged at: operation 1 (b)\n  expected:    x\n  actual:      y\n  shrunk from 9 to 2 operations:\n    a\n"
        ), "{compact}");
        assert!(compact.contains("  trace tail:\n    line 4\n"), "{compact}");
        assert!(
            compact.ends_with("  replay: tidemark replay --seed 7 --mutant m\n"),
            "{compact}"
        );
    }

    #[test]
    fn a_replay_command_leaves_the_defaults_out() {
        let rows =
            |options: &str| replay_command(Rerun::Explore, "rows", None, 3, Some("m"), options);
        assert_eq!(
            rows(&tier_option("memory")),
            "tidemark explore --profile rows --first-seed 3 --seeds 1 --mutant m --tier memory"
        );
        assert_eq!(
            rows(&tier_option("postgres")),
            "tidemark explore --profile rows --first-seed 3 --seeds 1 --mutant m"
        );
        assert_eq!(
            replay_command(Rerun::ReplaySeed, "scratchpad", None, 3, None, ""),
            "tidemark replay --seed 3"
        );
        assert_eq!(
            replay_command(
                Rerun::ReplaySeed,
                "scratchpad",
                Some("python3 a.py"),
                3,
                None,
                " --max-shrink-iters 5"
            ),
            "tidemark explore --impl 'python3 a.py' --first-seed 3 --seeds 1 --max-shrink-iters 5"
        );
    }
}

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

/// What a replay of a saved failure found, for [`print_replay`]; each profile fills it from its
/// own fixture and run, and the lines a person reads are written once.
pub struct ReplayReport<'a> {
    pub fixture: &'a std::path::Path,
    /// `mutant X`, `the scoped reference`, ...: what the operations ran against.
    pub against: String,
    /// The heading over the operations (`operations (seed 7):`).
    pub operations_heading: String,
    pub ops: Vec<String>,
    /// The replay's divergence, if it diverged.
    pub divergence: Option<String>,
    pub trace_hash: Option<String>,
    /// Whether the trace is identical to the saved run's.
    pub identical: bool,
    /// For a mutant's fixture: whether the reference passes the same operations.
    pub reference_passes: Option<bool>,
    /// The replay's divergence in pieces, for the HTML page.
    pub shown: Option<ReplayDivergence>,
    /// `--html FILE`: the replay's page.
    pub html: Option<&'a std::path::Path>,
}

/// A replay's divergence as the HTML page shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayDivergence {
    pub at: String,
    pub expected: String,
    pub actual: String,
    pub trace: Vec<String>,
    /// The SPEC rule of the difference's signature.
    pub rule: Option<String>,
    /// The model's state at the divergence (`crate::html::bounded_lines`).
    pub model_state: Vec<String>,
}

/// A replay as a page: the saved failure as it ran again, its timeline and rule.
pub fn replay_page(r: &ReplayReport<'_>, outcome: ReplayOutcome) -> crate::html::Page {
    let fixture = r.fixture.display().to_string();
    let failures = r
        .shown
        .iter()
        .map(|d| crate::html::FailureView {
            title: format!("{fixture} against {}", r.against),
            profile: String::new(),
            what: outcome.verdict_line(),
            at: d.at.clone(),
            expected: d.expected.clone(),
            actual: d.actual.clone(),
            rules: d.rule.iter().cloned().collect(),
            replay: format!("tidemark replay {fixture}"),
            operations: r.ops.clone(),
            trace: d.trace.clone(),
            model_state: d.model_state.clone(),
            ..Default::default()
        })
        .collect();
    let failed = usize::from(r.divergence.is_some());
    crate::html::Page {
        title: "tidemark replay".into(),
        command: format!("tidemark replay {fixture}"),
        implementation: r.against.clone(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        seeds: None,
        profiles: vec![crate::html::ProfileSummary {
            name: r.operations_heading.trim_end_matches(':').to_string(),
            passed: 1 - failed,
            failed,
            ..Default::default()
        }],
        failures,
        notes: vec![
            outcome.verdict_line(),
            format!(
                "trace {} ({})",
                r.trace_hash.as_deref().unwrap_or("-"),
                if r.identical {
                    "identical to the saved run"
                } else {
                    "differs from the saved run"
                }
            ),
        ],
        coverage: None,
    }
}

/// Prints a replay the same way for every profile and returns its outcome.
pub fn print_replay(r: &ReplayReport<'_>) -> ReplayOutcome {
    println!("fixture:   {}", r.fixture.display());
    println!("against:   {}", r.against);
    println!("{}", r.operations_heading);
    for op in &r.ops {
        println!("  {op}");
    }
    match &r.divergence {
        Some(d) => println!("diverged:  {d}"),
        None => println!("diverged:  no (the run passes)"),
    }
    println!(
        "trace:     {} ({})",
        r.trace_hash.as_deref().unwrap_or("-"),
        if r.identical {
            "identical to the saved run"
        } else {
            "DIFFERS from the saved run"
        }
    );
    if let Some(passes) = r.reference_passes {
        println!(
            "reference: {}",
            if passes {
                "passes the same operations"
            } else {
                "FAILS the same operations"
            }
        );
    }
    let outcome = ReplayOutcome::of(r.divergence.is_some(), r.identical);
    println!("{}", outcome.verdict_line());
    if let Some(path) = r.html {
        let spec = crate::default_spec_path();
        let page = replay_page(r, outcome);
        if let Err(e) = crate::html::write(path, &page, &crate::html::rule_texts(&spec)) {
            eprintln!("tidemark: {e}");
        }
    }
    outcome
}

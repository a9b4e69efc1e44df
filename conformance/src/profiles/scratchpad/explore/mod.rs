//! The scratchpad's exploration: random operation sequences from seeds (`ops.rs`), run beside
//! the oracle (`run.rs`, with the implementation's names learnt in `names.rs`), shrunk by
//! proptest when they fail, saved under `fixtures/explore/scratchpad/` (`fixture.rs`) so
//! `cargo test` replays them for ever; `cli.rs` is `tidemark explore|replay --profile
//! scratchpad`. A divergence's signature is `signature.rs`'s table; past a known difference the
//! model is re-derived from the disk (`observe.rs`). The seed's generator, shards and the loop
//! itself ([`ScratchpadExplorer`] on `crate::explore::engine`) are the engine's.

pub mod cli;
pub mod fixture;
pub mod names;
pub mod observe;
pub mod ops;
pub mod run;
pub mod signature;

use super::contract::DriverFactory;
use super::ReferenceScratchpad;
use crate::explore::engine::{self, Explorer, Failed, Failure, Outcome};
use crate::explore::rng_for;
use crate::explore::signature::{KnownDifferences, Signature};
use crate::explore::text::{DivergenceText, Layout, Rerun, TextStyle};
use ops::{workload, SimOp};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use run::{run_ops, run_ops_past, RunResult};
use std::path::{Path, PathBuf};
use tidemark_reference::scratchpad::ScratchpadMutant;

/// The workload a seed generates under the current generator, before any shrinking.
pub fn generate(seed: u64) -> (bool, Vec<SimOp>) {
    generate_version(ops::GENERATOR_VERSION, seed)
}

/// The workload a seed generates under generator `version` (see [`ops`]).
pub fn generate_version(version: u32, seed: u64) -> (bool, Vec<SimOp>) {
    let mut runner = TestRunner::new_with_rng(Config::default(), rng_for(seed));
    ops::workload_version(version)
        .new_tree(&mut runner)
        .expect("the workload strategy always generates")
        .current()
}

/// A failing seed, shrunk.
#[derive(Clone, Debug)]
pub struct Found {
    pub seed: u64,
    pub unmounted: bool,
    /// The shrunk operations, `Nop`s removed.
    pub ops: Vec<SimOp>,
    /// The run of the shrunk operations.
    pub run: RunResult,
    /// Operations the seed generated.
    pub original_len: usize,
}

/// Why exploration and the world never meet `missing-root-created`: they run unmounted with an
/// empty root, never with the path of a missing one. A scenario (`knob root missing`) kills it.
pub const MISSING_ROOT_OUT_OF_REACH: &str =
    "an unmounted run is handed an empty root, never the path of a missing one; the scenario a-missing-root-is-unmounted-and-never-created kills it";

impl Found {
    /// Its text as `tidemark explore` prints it against the reference, or `mutant`.
    pub fn describe(&self, mutant: Option<ScratchpadMutant>) -> String {
        let explorer = ScratchpadExplorer {
            factory: &ReferenceScratchpad::default(),
            implementation: None,
            max_shrink_iters: 0,
            known: KnownDifferences::default(),
        };
        let failure = Failure {
            seed: self.seed,
            workload: (self.unmounted, self.ops.clone()),
            original_len: self.original_len,
            error: Failed::Diverged(self.run.clone()),
        };
        explorer.describe(&failure, mutant, None)
    }

    fn of(f: Failure<(bool, Vec<SimOp>), RunResult>) -> Found {
        let run = match f.error {
            Failed::Diverged(run) => run,
            // The scratchpad's runs set themselves up; a driver that cannot be made is a
            // divergence at `create`.
            Failed::Setup(why) => unreachable!("a scratchpad run reported a set-up error: {why}"),
        };
        Found {
            seed: f.seed,
            unmounted: f.workload.0,
            ops: f.workload.1,
            run,
            original_len: f.original_len,
        }
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Runs one seed without shrinking.
pub fn run_seed(seed: u64, factory: &dyn DriverFactory) -> RunResult {
    let (unmounted, ops) = generate(seed);
    block_on(run_ops(&ops, unmounted, factory))
}

/// Runs one seed; on failure shrinks it (the engine's shrinker over the seed's proptest value
/// tree) and returns the minimal failing sequence.
pub fn explore_seed(
    seed: u64,
    factory: &dyn DriverFactory,
    max_shrink_iters: u32,
) -> Option<Found> {
    let explorer = ScratchpadExplorer {
        factory,
        implementation: None,
        max_shrink_iters,
        known: KnownDifferences::default(),
    };
    block_on(engine::explore_seed(
        &explorer,
        seed,
        None,
        max_shrink_iters,
    ))
    .map(Found::of)
}

/// The scratchpad on the engine's exploration loop: a seed's workload is its proptest value
/// tree (an unmounted root or not, and its operations), run by [`run_ops`] beside the oracle
/// against `factory` (the reference, or a program through the protocol), or against the
/// reference with a mutant switched on.
pub struct ScratchpadExplorer<'a> {
    pub factory: &'a dyn DriverFactory,
    /// The program explored (`--impl`); `None`: the reference in process.
    pub implementation: Option<&'a str>,
    /// For the command that replays a program's failure.
    pub max_shrink_iters: u32,
    /// Differences a run goes on past (`--expect`).
    pub known: KnownDifferences,
}

/// Scratchpad mutants the exploration generator never reaches, and why; the scenarios kill
/// each of them (`tidemark mutants`). Reaching them needs hostile paths, bytes that are not
/// UTF-8 and clock steps finer than a second among the generated operations: a new generator
/// version.
pub const OUT_OF_REACH: &[(&str, &str)] = &[
    ("missing-root-created", MISSING_ROOT_OUT_OF_REACH),
    (
        "empty-path-names-the-root",
        "the generator's paths are a fixed table of well-formed paths and one climb; a path refused for its shape is the scenarios' (one file per spelling)",
    ),
    (
        "absolute-path-made-relative",
        "the generator's paths are a fixed table of well-formed paths and one climb; none starts with `/`",
    ),
    (
        "nul-truncates-the-path",
        "the generator's paths are a fixed table of well-formed paths and one climb; none holds a NUL",
    ),
    (
        "non-utf8-replaced",
        "the generator's paths are a fixed table of UTF-8 paths",
    ),
    (
        "limits-exclusive",
        "the generator's paths are at most three components and a few bytes, far inside the limits",
    ),
    (
        "max-depth-knob-ignored",
        "exploration runs with the default depth limit, where the mutant's constant is the knob's value",
    ),
    (
        "content-as-text",
        "the generator writes ASCII filler, so that every implementation it explores through the protocol can take it (bytes that are not UTF-8 need the binary_content capability)",
    ),
    (
        "times-rounded-to-seconds",
        "the generator's clock moves in whole seconds from a whole-second epoch, so no time it stamps has a millisecond part to lose",
    ),
];

#[async_trait::async_trait(?Send)]
impl Explorer for ScratchpadExplorer<'_> {
    type Workload = (bool, Vec<SimOp>);
    type Passed = RunResult;
    type Divergence = RunResult;
    type Mutant = ScratchpadMutant;
    type Tally = ();

    fn profile(&self) -> &'static str {
        fixture::PROFILE
    }

    fn tree(&self, seed: u64) -> Box<dyn ValueTree<Value = Self::Workload>> {
        let mut runner = TestRunner::new_with_rng(Config::default(), rng_for(seed));
        Box::new(
            workload()
                .new_tree(&mut runner)
                .expect("the workload strategy always generates"),
        )
    }

    fn len(&self, workload: &Self::Workload) -> usize {
        workload.1.len()
    }

    async fn run(
        &self,
        _seed: u64,
        (unmounted, ops): &Self::Workload,
        mutant: Option<ScratchpadMutant>,
    ) -> Outcome<RunResult, RunResult> {
        let r = match mutant {
            Some(m) => {
                let mutated = ReferenceScratchpad {
                    mutant: Some(m),
                    variants: self.factory.variants(),
                };
                run_ops_past(ops, *unmounted, &mutated, &self.known).await
            }
            None => run_ops_past(ops, *unmounted, self.factory, &self.known).await,
        };
        if r.divergence.is_some() {
            Outcome::Diverged(r)
        } else {
            Outcome::Passed(r)
        }
    }

    fn pass_hash(&self, passed: &RunResult) -> String {
        passed.trace.hash()
    }

    fn divergence_hash(&self, divergence: &RunResult) -> String {
        divergence.trace.hash()
    }

    fn simulated_ms(&self, passed: &RunResult) -> i64 {
        passed.simulated_ms
    }

    fn tidy(&self, (unmounted, ops): &Self::Workload) -> Option<Self::Workload> {
        ops.contains(&SimOp::Nop).then(|| {
            (
                *unmounted,
                ops.iter().filter(|o| **o != SimOp::Nop).cloned().collect(),
            )
        })
    }

    /// The reference runs synchronously in process: one seed at a time.
    fn jobs(&self, _asked: usize) -> usize {
        1
    }

    fn mutants(&self) -> Vec<ScratchpadMutant> {
        ScratchpadMutant::ALL.to_vec()
    }

    fn out_of_reach(&self, mutant: ScratchpadMutant) -> Option<&'static str> {
        OUT_OF_REACH
            .iter()
            .find(|(id, _)| *id == mutant.id())
            .map(|(_, why)| *why)
    }

    fn mutant_id(&self, mutant: ScratchpadMutant) -> &'static str {
        mutant.id()
    }

    fn setting(&self) -> String {
        match self.implementation {
            Some(cmd) => cmd.to_string(),
            None => "the reference".into(),
        }
    }

    const TEXT: TextStyle = TextStyle {
        layout: Layout::Compact,
        rerun: Rerun::ReplaySeed,
        profile_in_heading: false,
    };

    fn program(&self) -> Option<&str> {
        self.implementation
    }

    /// A program's seed runs again through `explore --impl`, shrunk as far as it was; the
    /// reference's with the variants it took; both past the same known differences.
    fn setting_options(&self) -> String {
        let mut options = match self.implementation {
            Some(_) => format!(" --max-shrink-iters {}", self.max_shrink_iters),
            None => self
                .factory
                .variants()
                .non_defaults()
                .iter()
                .map(|v| format!(" --variant {v}"))
                .collect(),
        };
        if !self.known.is_empty() {
            let file = shlex::try_quote(&self.known.file)
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| self.known.file.clone());
            options.push_str(&format!(" --expect {file}"));
        }
        options
    }

    /// `tidemark replay --seed` stops at the first difference: past known ones, a seed of the
    /// reference runs again through `explore --expect`.
    fn replay_command(&self, seed: u64, mutant: Option<ScratchpadMutant>) -> String {
        let rerun = if self.known.is_empty() {
            Self::TEXT.rerun
        } else {
            crate::explore::text::Rerun::Explore
        };
        crate::explore::text::replay_command(
            rerun,
            self.profile(),
            self.program(),
            seed,
            mutant.map(|m| m.id()),
            &self.setting_options(),
        )
    }

    fn heading_detail(&self, (unmounted, _): &Self::Workload) -> String {
        if *unmounted {
            " (unmounted root)".into()
        } else {
            String::new()
        }
    }

    fn op_lines(&self, (_, ops): &Self::Workload) -> Vec<String> {
        ops.iter().map(ToString::to_string).collect()
    }

    fn signature(&self, _workload: &Self::Workload, run: &RunResult) -> Signature {
        run.divergence
            .as_ref()
            .expect("a diverged scratchpad run names its divergence")
            .signature
            .as_ref()
            .clone()
    }

    fn continues_past_known(&self) -> bool {
        true
    }

    fn rules_decided(
        &self,
        _workload: &Self::Workload,
        run: &RunResult,
    ) -> Option<Vec<(&'static str, u64)>> {
        Some(run.rules.iter().map(|(r, n)| (*r, *n)).collect())
    }

    fn rules_counting(&self) -> &'static str {
        "every call of a passing seed, counted by the SPEC rule that decided the outcome the model predicted (a refusal's reason's rule, an evicting write SP-4.2, else the operation's rule: signature::deciding_rule)"
    }

    fn known_in_pass(&self, run: &RunResult) -> Vec<Signature> {
        run.known.iter().map(|d| *d.signature.clone()).collect()
    }

    fn known_in_divergence(&self, run: &RunResult) -> Vec<Signature> {
        self.known_in_pass(run)
    }

    fn divergence_text<'d>(&self, run: &'d RunResult) -> DivergenceText<'d> {
        let d = run
            .divergence
            .as_ref()
            .expect("a diverged scratchpad run names its divergence");
        DivergenceText {
            trace: run.trace.lines(),
            at: d.op.clone(),
            expected: &d.expected,
            actual: &d.actual,
            model_state: &run.model_state,
        }
    }

    /// Saved failures replay against the reference; a program's are printed, not saved, and so
    /// is a failure found past known differences (a saved failure replays without them).
    fn save(
        &self,
        failure: &Failure<Self::Workload, RunResult>,
        divergence: &RunResult,
        mutant: Option<ScratchpadMutant>,
        dir: &Path,
    ) -> Result<Option<PathBuf>, String> {
        if self.implementation.is_some() || !self.known.is_empty() {
            return Ok(None);
        }
        let f = crate::profiles::scratchpad::explore::fixture::Fixture {
            version: crate::explore::saved::FORMAT_VERSION,
            profile: crate::profiles::scratchpad::explore::fixture::PROFILE.into(),
            seed: failure.seed,
            generator: ops::GENERATOR_VERSION,
            mutant: mutant.map(|m| m.id().to_string()),
            setting: crate::profiles::scratchpad::explore::fixture::ScratchpadSetting {
                unmounted: failure.workload.0,
                variants: self.factory.variants().to_map(),
            },
            ops: failure.workload.1.clone(),
            divergence: divergence
                .divergence
                .as_ref()
                .map(|d| format!("{}: expected {}, got {}", d.op, d.expected, d.actual))
                .unwrap_or_default(),
            trace_hash: divergence.trace.hash(),
        };
        f.save(dir)
            .map(Some)
            .map_err(|e| format!("saving the fixture under {}: {e}", dir.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn a_seed_always_generates_the_same_workload() {
        assert_eq!(generate(42), generate(42));
        assert_ne!(generate(42).1, generate(43).1);
    }

    /// Version 1 still generates exactly what it generated before version 2 existed (the hash
    /// was taken from the generator as it stood then), so an old seed number keeps its meaning.
    #[test]
    fn generator_version_1_is_unchanged() {
        let mut h = Sha256::new();
        for seed in 0..20u64 {
            h.update(format!("{:?}", generate_version(1, seed)).as_bytes());
        }
        assert_eq!(
            hex::encode(h.finalize()),
            "b9b8dd335d2ad1780cddd68aa4c90153bd672c8327d00c51c4947946ee4f7796"
        );
    }
}

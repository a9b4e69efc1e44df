//! `tidemark explore --profile scoped`: seeded random operation sequences against the scoped
//! reference on the real tier (in-memory S3 over HTTP, a real PostgreSQL), checked step by step
//! by the model of SPEC part SC in `crate::profiles::scoped::model`. One PostgreSQL for the whole
//! run; each seed gets its own database and its own S3 server.
//!
//! A failing seed is shrunk by deleting chunks of its operations (the proptest value tree of
//! `shrink.rs`, over the seed's fixed operations), printed with its trace, and saved under
//! `fixtures/explore/scoped/`, where `cargo test` replays it for ever: [`fixture`] is that
//! saved form and its replay.

pub mod fixture;

use std::path::{Path, PathBuf};

use crate::explore::compare;
use crate::explore::engine::{Explorer, Failure, Outcome};
use crate::explore::shrink::OpsTree;
use crate::explore::signature::{text_difference, Signature};
use crate::explore::text::{tier_option, DivergenceText};
use crate::profiles::scoped::model::Tier;
use crate::profiles::scoped::model::{
    generate, run_ops_taking, Divergence, ModelOp, SequenceError, SequenceRun, DEFAULT_STEPS,
    GENERATOR,
};
use crate::profiles::ExploreRequest;
use crate::variants::Declared;
use fixture::{divergence_hash, ScopedFixture};
use proptest::strategy::ValueTree;
use tidemark_reference::scoped::ScopedMutant;

/// The mutant an id names, or an error listing every scoped id.
pub fn mutant_arg(id: Option<&str>) -> Result<Option<ScopedMutant>, String> {
    match id {
        None => Ok(None),
        Some(id) => ScopedMutant::from_id(id).map(Some).ok_or_else(|| {
            format!(
                "unknown scoped mutant {id:?}; expected one of {}",
                ScopedMutant::ALL.map(|m| m.id()).join(", ")
            )
        }),
    }
}

/// A scoped failure as the engine reports it: the operations (shrunk when it diverged).
pub type ScopedFailure = Failure<Vec<ModelOp>, Divergence>;

/// The scoped profile on the engine's exploration loop: each seed's [`generate`]d operations
/// on its own metadata on `tier` and its own in-memory S3 (whose faults the seed also draws),
/// shrunk by deleting chunks of operations.
#[derive(Clone)]
pub struct ScopedExplorer<'a> {
    pub tier: Tier<'a>,
    /// The SPEC.md variants the reference takes and the model follows (`--variant`).
    pub variants: Declared,
}

#[async_trait::async_trait(?Send)]
impl Explorer for ScopedExplorer<'_> {
    type Workload = Vec<ModelOp>;
    type Passed = SequenceRun;
    type Divergence = Divergence;
    type Mutant = ScopedMutant;
    /// Files the model's sweeps removed.
    type Tally = usize;

    /// A search runs on a fresh database per seed: one per mutant unless asked.
    const HUNT_TRIALS: u64 = 1;

    fn profile(&self) -> &'static str {
        fixture::PROFILE
    }

    fn tree(&self, seed: u64) -> Box<dyn ValueTree<Value = Vec<ModelOp>>> {
        Box::new(OpsTree::of_values(generate(seed, DEFAULT_STEPS)))
    }

    fn generate(&self, seed: u64) -> Vec<ModelOp> {
        generate(seed, DEFAULT_STEPS)
    }

    fn len(&self, ops: &Vec<ModelOp>) -> usize {
        ops.len()
    }

    async fn run(
        &self,
        seed: u64,
        ops: &Vec<ModelOp>,
        mutant: Option<ScopedMutant>,
    ) -> Outcome<SequenceRun, Divergence> {
        match run_ops_taking(
            self.tier,
            seed,
            ops,
            mutant,
            None,
            GENERATOR,
            &self.variants,
        )
        .await
        {
            Ok(r) => Outcome::Passed(r),
            Err(SequenceError::Diverged(d)) => Outcome::Diverged(d),
            Err(SequenceError::Setup(e)) => Outcome::Setup(e),
        }
    }

    fn pass_hash(&self, passed: &SequenceRun) -> String {
        passed.trace_hash()
    }

    fn divergence_hash(&self, divergence: &Divergence) -> String {
        divergence_hash(divergence)
    }

    fn simulated_ms(&self, passed: &SequenceRun) -> i64 {
        passed.simulated_ms
    }

    fn tally(&self, swept: &mut usize, passed: &SequenceRun) {
        *swept += passed.swept_files;
    }

    fn tally_line(&self, swept: &usize) -> Option<String> {
        Some(format!(
            "{DEFAULT_STEPS} steps each; the model's sweeps removed {swept} files"
        ))
    }

    fn mutants(&self) -> Vec<ScopedMutant> {
        ScopedMutant::ALL.to_vec()
    }

    fn mutant_id(&self, mutant: ScopedMutant) -> &'static str {
        mutant.id()
    }

    fn out_of_reach(&self, mutant: ScopedMutant) -> Option<&'static str> {
        OUT_OF_REACH
            .iter()
            .find(|(id, _)| *id == mutant.id())
            .map(|(_, why)| *why)
    }

    fn setting(&self) -> String {
        self.tier.name().into()
    }

    fn setting_options(&self) -> String {
        let variants: String = self
            .variants
            .non_defaults()
            .iter()
            .map(|v| format!(" --variant {v}"))
            .collect();
        format!("{}{variants}", tier_option(self.tier.name()))
    }

    fn op_lines(&self, ops: &Vec<ModelOp>) -> Vec<String> {
        ops.iter().map(ToString::to_string).collect()
    }

    fn signature(&self, ops: &Vec<ModelOp>, d: &Divergence) -> Signature {
        signature(ops.get(d.step), d)
    }

    fn rules_decided(
        &self,
        ops: &Vec<ModelOp>,
        _passed: &SequenceRun,
    ) -> Option<Vec<(&'static str, u64)>> {
        Some(
            ops.iter()
                .flat_map(|op| {
                    let also: Vec<&'static str> = match op {
                        ModelOp::People(r) => r.also_decides().into_iter().collect(),
                        // Generator 7's operations judged by more than their own rule.
                        ModelOp::Close {
                            again_after_hours: 1..,
                            ..
                        } => vec!["SL-3.2"],
                        ModelOp::SetRetention { .. } => vec!["SL-5.2", "SL-1.4"],
                        ModelOp::ApplyLifecycle { .. } => vec!["SL-5.4", "SL-5.2", "SC-7.5"],
                        _ => Vec::new(),
                    };
                    std::iter::once((operation(Some(op)).1, 1))
                        .chain(also.into_iter().map(|rule| (rule, 1)))
                })
                .collect(),
        )
    }

    fn rules_counting(&self) -> &'static str {
        "every operation of a passing seed, counted by its operation's rule as the signature table names it, a person's request for a file of their own session also by SF-2.3, which decides its access, a repeated close also by SL-3.2, a workspace's retention also by SL-5.2 and SL-1.4 (its bound and range), and a lifecycle configuration also by SL-5.4, SL-5.2 and SC-7.5 (the budget, the bound, the configuration put whole) (the model does not record a finer deciding rule per outcome)"
    }

    fn divergence_text<'d>(&self, d: &'d Divergence) -> DivergenceText<'d> {
        DivergenceText {
            trace: &d.ops,
            at: format!("operation {}, the last one", d.step),
            expected: &d.expected,
            actual: &d.actual,
            model_state: &d.model_state,
        }
    }

    fn save(
        &self,
        failure: &ScopedFailure,
        divergence: &Divergence,
        mutant: Option<ScopedMutant>,
        dir: &Path,
    ) -> Result<Option<PathBuf>, String> {
        ScopedFixture::new(
            failure.seed,
            mutant,
            self.tier,
            &self.variants,
            failure.workload.clone(),
            divergence,
        )
        .save(dir)
        .map(Some)
        .map_err(|e| format!("saving a fixture in {}: {e}", dir.display()))
    }
}

/// A scoped divergence's signature: the operation's rule (a table), and the model's expectation
/// beside what the store did, with ids, paths, sets and counts masked ([`shape`]). The model words
/// its expectations as text, so the kind is their shape rather than a closed list.
pub fn signature(op: Option<&ModelOp>, d: &Divergence) -> Signature {
    let (name, rule) = operation(op);
    Signature::new(rule, text_difference(name, &d.expected, &d.actual))
}

/// An operation's name and its rule: a signature's rule for an outcome that differs, and what
/// `--coverage` counts per operation.
pub fn operation(op: Option<&ModelOp>) -> (&'static str, &'static str) {
    match op {
        Some(ModelOp::Write { .. }) => ("write", "SC-4.1"),
        Some(ModelOp::Read { .. }) => ("read", "SC-4.2"),
        Some(ModelOp::Activity { .. }) => ("activity", "SC-5.1"),
        Some(ModelOp::Wait { .. }) => ("wait", "SC-5.2"),
        Some(ModelOp::Advance { .. }) => ("advance", "SC-5.3"),
        Some(ModelOp::Sweep) => ("sweep", "SC-5.3"),
        Some(ModelOp::List { .. }) => ("list", "SC-4.4"),
        Some(ModelOp::Text { .. }) => ("text", "SC-1.4"),
        Some(ModelOp::Traversal { .. }) => ("traversal", "SC-2.2"),
        Some(ModelOp::MissingScope { .. }) => ("missing scope", "SC-2.4"),
        Some(ModelOp::Delete { .. }) => ("delete", "SC-4.2"),
        Some(ModelOp::WorkspaceWrite { .. }) => ("workspace write", "SC-3.2"),
        Some(ModelOp::SetAgentAccess { .. }) => ("agent access", "SC-3.1"),
        Some(ModelOp::ReadSkill { .. }) => ("skill read", "SC-2.6"),
        Some(ModelOp::FaultySweep { .. }) => ("sweep under key failures", "SC-6.4"),
        Some(ModelOp::CrashSweep { .. }) => ("crashed sweep", "SC-6.4"),
        Some(ModelOp::WriteDuringSweep { .. }) => ("write during a sweep", "SC-5.6"),
        Some(ModelOp::DeleteSession { .. }) => ("delete session", "SC-6.1"),
        Some(ModelOp::DeleteAgent { .. }) => ("delete agent", "SC-6.1"),
        Some(ModelOp::WorkspaceBeside) => ("delete a workspace beside another's skills", "SC-6.2"),
        Some(ModelOp::StoreFaults { .. }) => ("store faults", "SC-8.3"),
        Some(ModelOp::Heal) => ("heal", "SC-8.3"),
        Some(ModelOp::JumpBack { .. }) => ("clock jump back", "SC-5.1"),
        Some(ModelOp::Hostile { .. }) => ("hostile spelling", "SC-2.2"),
        Some(ModelOp::Person { .. }) => ("a person's request", "SF-2.3"),
        Some(ModelOp::People(r)) => r.operation(),
        Some(ModelOp::SetCount { .. }) => ("count policy", "SL-2.1"),
        Some(ModelOp::SetWorkspaceAccess { .. }) => ("agent workspace access", "SC-3.2"),
        Some(ModelOp::Promote { .. }) => ("promotion", "SL-6.2"),
        Some(ModelOp::PromoteDuringSweep { .. }) => ("promotion during a sweep", "SL-6.4"),
        Some(ModelOp::ToolOutput { .. }) => ("tool output", "SL-7.1"),
        Some(ModelOp::Close { .. }) => ("close", "SL-3.1"),
        Some(ModelOp::SetRetention { .. }) => ("workspace retention", "SL-5.1"),
        Some(ModelOp::ApplyLifecycle { .. }) => ("lifecycle configuration", "SL-5.3"),
        Some(ModelOp::OverflowAgain { .. }) => ("a tool result handed in again", "SL-7.1"),
        Some(ModelOp::Erase { .. }) => ("erasure", "SL-4.1"),
        Some(ModelOp::ErasureTouch { .. }) => ("erasure subject", "SL-4.6"),
        Some(ModelOp::SweepsAtOnce { .. }) => ("two sweeps at once", "SL-1.3"),
        Some(ModelOp::EmptiedThenCount { .. }) => ("a count after an emptied session", "SL-2.1"),
        None => ("the end", "SC-5.3"),
    }
}

/// Scoped mutants the exploration generator never reaches, and why; the scenarios kill each
/// of them (`tidemark mutants --profile scoped`). Reaching them needs the store's error classes
/// and lifecycle configurations among the generated operations: a new generator version.
pub const OUT_OF_REACH: &[(&str, &str)] = &[
    (
        "missing-bucket-unavailable",
        "the generator's store faults are errors, partial batches and a store down, never a missing bucket",
    ),
    (
        "store-denied-as-permission",
        "the generator's store faults never answer AccessDenied",
    ),
    (
        "throttle-not-retried",
        "the generator's store down lasts until heal, longer than any retry",
    ),
    (
        "backstop-checked-against-default-ttl",
        "the generator never puts a lifecycle configuration on the bucket",
    ),
    (
        "no-written-at-stamp",
        "the generator never runs an age-only lifecycle rule over the bucket, the one reader of the stamp",
    ),
    (
        "skills-writable",
        "the generator only reads skill files, never writes one",
    ),
    (
        "listing-string-prefix",
        "the generator lists only with no prefix",
    ),
    (
        "repeated-create-is-activity",
        "the generator creates each session once, at setup",
    ),
];

/// The command: explore (or hunt, or check determinism, or compare the tiers) on the engine's
/// loop, print, and say whether everything passed. The tier is `postgres` unless `memory` is
/// asked.
pub fn command(request: &ExploreRequest) -> Result<bool, String> {
    let mutant = mutant_arg(request.mutant.as_deref())?;
    let memory = request.tier.as_deref() == Some("memory");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))?;
    rt.block_on(async {
        let pg = if memory && !request.differential {
            println!(
                "scoped explore: metadata in memory (the simulation tier), S3 in memory over HTTP"
            );
            None
        } else {
            let (pg, source, ready) = crate::profiles::scoped::postgres().await?;
            println!("scoped explore: PostgreSQL from {source} (ready in {ready:.2?})");
            Some(pg)
        };
        let tier = match &pg {
            Some(pg) if !memory => Tier::Postgres(pg),
            _ => Tier::Memory,
        };
        if request.differential {
            let pg = pg
                .as_deref()
                .expect("the differential check has PostgreSQL");
            let memory = ScopedExplorer {
                tier: Tier::Memory,
                variants: request.variants.clone(),
            };
            let postgres = ScopedExplorer {
                tier: Tier::Postgres(pg),
                variants: request.variants.clone(),
            };
            return compare::compare(&memory, &postgres, &request.seeds(), mutant).await;
        }
        request
            .run_on(
                &ScopedExplorer {
                    tier,
                    variants: request.variants.clone(),
                },
                mutant,
                fixture::default_dir,
            )
            .await
    })
}

/// `tidemark replay` of a scoped fixture: prints what happened and whether it recurred.
pub fn replay_fixture(
    path: &Path,
    html: Option<&Path>,
) -> Result<crate::explore::cli::ReplayOutcome, String> {
    let f = ScopedFixture::load(path)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))?;
    let r = rt.block_on(async {
        if f.setting.tier == "memory" {
            fixture::replay(Tier::Memory, &f).await
        } else {
            let (pg, _, _) = crate::profiles::scoped::postgres().await?;
            fixture::replay(Tier::Postgres(&pg), &f).await
        }
    })?;
    Ok(crate::explore::cli::print_replay(
        &crate::explore::cli::ReplayReport {
            fixture: path,
            against: f
                .mutant
                .as_deref()
                .map(|m| format!("scoped mutant {m}"))
                .unwrap_or_else(|| "the scoped reference".into()),
            operations_heading: format!("operations (seed {}):", f.seed),
            ops: f.ops.iter().map(|op| op.to_string()).collect(),
            divergence: r.divergence.as_ref().map(|d| d.to_string()),
            trace_hash: r.trace_hash.clone(),
            identical: r.reproduced,
            reference_passes: f.mutant.as_ref().map(|_| r.reference_passes),
            shown: r.shown.clone(),
            html,
        },
    ))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_scoped_signature_is_the_operations_rule_and_the_outcomes_shape() {
        let d = |expected: &str, actual: &str| Divergence {
            seed: 4,
            step: 0,
            ops: vec![],
            expected: expected.into(),
            actual: actual.into(),
            model_state: vec![],
        };
        let sweep = signature(
            Some(&ModelOp::Sweep),
            &d(
                "after the sweep a1/s2 holds {}",
                "after the sweep a1/s2 holds {\"notes.md\"}",
            ),
        );
        assert_eq!(
            sweep.to_string(),
            "SC-5.3 sweep: after the sweep aN/sN holds {…}, other than the model's"
        );
        let read = signature(
            Some(&ModelOp::Traversal {
                session: 0,
                path: 1,
                encoded: false,
            }),
            &d(
                "read: refused as Traversal, never clamped",
                "read: Err(NotFound { path: \"session/dir/../../agent/x\" })",
            ),
        );
        assert_eq!(
            read.to_string(),
            "SC-2.2 traversal: read: Err(NotFound {…}) where the model says read: refused as Traversal, never clamped"
        );
    }

    use super::*;
    use crate::explore::engine::{self, Seeds};
    use crate::explore::hunt;
    use crate::explore::Shard;

    /// Needs PostgreSQL like every real-tier test (DATABASE_URL or an ephemeral cluster).
    #[test]
    #[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
    fn the_reference_passes_a_few_seeds_and_random_search_finds_age_only_expiry() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (pg, _, _) = crate::profiles::scoped::postgres().await.unwrap();
            let explorer = ScopedExplorer {
                tier: Tier::Postgres(&pg),
                variants: Declared::defaults(),
            };
            let run = engine::explore_seeds(&explorer, 0..3, None, 0, 2, &|| {}).await;
            assert!(
                run.failures.is_empty(),
                "{}",
                run.failures
                    .iter()
                    .map(|f| explorer.describe(f, None, None))
                    .collect::<String>()
            );
            assert_eq!(run.passed, 3);
            let seeds = Seeds {
                first_seed: 0,
                seeds: 24,
                shard: Shard::ALL,
                jobs: 1,
            };
            let lines = hunt::hunt(&explorer, &seeds, Some(ScopedMutant::AgeOnlyExpiry), 1).await;
            assert_eq!(lines.len(), 1);
            assert!(
                lines[0].median().is_some(),
                "{}",
                hunt::hunt_report(&explorer, &lines, 24)
            );
        });
    }

    /// Each out-of-reach mutant is a scoped mutant, listed as skipped with its reason by the
    /// hunt, never searched and never counted as found.
    #[test]
    fn out_of_reach_mutants_are_skipped_with_their_reason_never_found() {
        let explorer = ScopedExplorer {
            tier: Tier::Memory,
            variants: Declared::defaults(),
        };
        let seeds = Seeds {
            first_seed: 0,
            seeds: 3,
            shard: Shard::ALL,
            jobs: 1,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for (id, why) in OUT_OF_REACH {
            let m = ScopedMutant::from_id(id).expect("a scoped mutant");
            let lines = rt.block_on(hunt::hunt(&explorer, &seeds, Some(m), 2));
            assert_eq!((lines[0].tried, lines[0].median()), (0, None));
            let report = hunt::hunt_report(&explorer, &lines, 3);
            assert!(
                report.contains(&format!("SKIPPED    {id}  {why}")),
                "{report}"
            );
            assert!(
                report.ends_with("0 passed, 0 failed, 1 skipped\n"),
                "{report}"
            );
        }
    }

    /// Needs nothing but memory: random search on the simulation tier finds every mutant of
    /// part SL in its reach within the 80 seeds `tidemark explore --hunt --seeds 80` gives it, with
    /// generator 7 (its closes, workspace retention and erasures together; the seeds each mutant
    /// needs are measured in the closing notes and ARCHITECTURE.md).
    #[test]
    #[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
    fn random_search_finds_every_mutant_of_part_sl_within_a_few_seeds() {
        let explorer = ScopedExplorer {
            tier: Tier::Memory,
            variants: crate::variants::Declared::defaults(),
        };
        let seeds = Seeds {
            first_seed: 0,
            seeds: 80,
            shard: Shard::ALL,
            jobs: 1,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let in_reach = |m: &ScopedMutant| OUT_OF_REACH.iter().all(|(id, _)| *id != m.id());
        for m in ScopedMutant::ALL
            .into_iter()
            .filter(|m| m.rules().iter().any(|r| r.starts_with("SL-")))
            .filter(in_reach)
        {
            let lines = rt.block_on(hunt::hunt(&explorer, &seeds, Some(m), 1));
            assert!(
                lines[0].median().is_some(),
                "{} survives 80 seeds of generator {}",
                m.id(),
                crate::profiles::scoped::model::GENERATOR
            );
        }
    }
}

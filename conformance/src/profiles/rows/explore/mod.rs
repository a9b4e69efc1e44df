//! `tidemark explore --profile rows`: seeded operation sequences ([`ops`]) against
//! the rows reference on PostgreSQL or its in-memory backend, checked at every step by the
//! executable model of SPEC part SR ([`run`]), on the engine's exploration loop
//! (`crate::explore::engine`) as [`RowsExplorer`]. One PostgreSQL for the run; each seed in
//! flight has a database of its own, reused from seed to seed.
//!
//! A failing seed is shrunk by deleting chunks of its operations (its batch size stays as the
//! seed fixed it), printed with its trace tail, and saved under `fixtures/explore/rows/`
//! ([`fixture`]), where `cargo test --test suites rows_fixture` replays it for ever. `--hunt`,
//! `--check-determinism` and `--differential` (each seed on both tiers, read as counts) are the
//! engine's.

pub mod fixture;
pub mod observe;
pub mod ops;
pub mod run;

use std::path::{Path, PathBuf};
use std::time::Instant;

use proptest::strategy::ValueTree;
use tidemark_reference::rows::RowsMutant;

use crate::explore::compare;
use crate::explore::engine::{Explorer, Failure, Outcome};
use crate::explore::shrink::{Beside, OpsTree};
use crate::explore::signature::{text_difference, Signature};
use crate::explore::text::{tier_option, DivergenceText, TextStyle};
use crate::profiles::rows::model::state::Detail;
use crate::profiles::ExploreRequest;
use crate::variants::Declared;
use fixture::{mutant_arg, new_fixture};
use ops::{generate, ExploreOp, DEFAULT_STEPS};
use run::{run_ops_at, run_ops_taking, Databases, Divergence, RunError, RunOk, Tier};

/// A seed's workload: the batch size its reaps use, and its operations.
pub type RowsWorkload = (i64, Vec<ExploreOp>);

/// One explored seed that failed, as the engine reports it.
pub type RowsFailure = Failure<RowsWorkload, Divergence>;

/// What the summary adds up over passing seeds.
#[derive(Clone, Debug, Default)]
pub struct RowsTally {
    pub ticks: u64,
    pub crashes: u64,
    pub removed: u64,
}

/// The rows profile on the engine's loop: a seed's sequence on `tier`, its state read at
/// `detail` (PostgreSQL's rows, or counts where a backend has no schema to read).
#[derive(Clone)]
pub struct RowsExplorer<'a> {
    pub tier: Tier<'a>,
    pub detail: Detail,
    /// The SPEC.md variants the reference takes and the model follows (`--variant`).
    pub variants: Declared,
}

impl<'a> RowsExplorer<'a> {
    /// The tier read at its own detail, every variant at its default.
    pub fn on(tier: Tier<'a>) -> Self {
        RowsExplorer {
            tier,
            detail: tier.detail(),
            variants: Declared::defaults(),
        }
    }

    /// This explorer with the reference taking `variants`, and the model following them.
    pub fn taking(self, variants: &Declared) -> Self {
        RowsExplorer {
            variants: variants.clone(),
            ..self
        }
    }
}

#[async_trait::async_trait(?Send)]
impl Explorer for RowsExplorer<'_> {
    type Workload = RowsWorkload;
    type Passed = RunOk;
    type Divergence = Divergence;
    type Mutant = RowsMutant;
    type Tally = RowsTally;

    /// A search on PostgreSQL runs a database per seed: one per mutant unless asked.
    const HUNT_TRIALS: u64 = 1;

    fn profile(&self) -> &'static str {
        fixture::PROFILE
    }

    fn tree(&self, seed: u64) -> Box<dyn ValueTree<Value = RowsWorkload>> {
        let (batch, ops) = generate(seed, DEFAULT_STEPS);
        Box::new(Beside {
            fixed: batch,
            ops: OpsTree::of_values(ops),
        })
    }

    fn generate(&self, seed: u64) -> RowsWorkload {
        generate(seed, DEFAULT_STEPS)
    }

    fn len(&self, workload: &RowsWorkload) -> usize {
        workload.1.len()
    }

    async fn run(
        &self,
        _seed: u64,
        (batch, ops): &RowsWorkload,
        mutant: Option<RowsMutant>,
    ) -> Outcome<RunOk, Divergence> {
        match run_ops_taking(self.tier, self.detail, *batch, ops, mutant, &self.variants).await {
            Ok(r) => Outcome::Passed(r),
            Err(RunError::Diverged(d)) => Outcome::Diverged(d),
            Err(RunError::Setup(e)) => Outcome::Setup(e),
        }
    }

    fn pass_hash(&self, passed: &RunOk) -> String {
        passed.trace.hash()
    }

    fn divergence_hash(&self, divergence: &Divergence) -> String {
        divergence.hash()
    }

    fn simulated_ms(&self, passed: &RunOk) -> i64 {
        passed.simulated_ms
    }

    fn tally(&self, t: &mut RowsTally, r: &RunOk) {
        t.ticks += r.ticks;
        t.crashes += r.crashes;
        t.removed += r.removed;
    }

    fn tally_line(&self, t: &RowsTally) -> Option<String> {
        Some(format!(
            "{DEFAULT_STEPS} operations each; {} ticks ({} crashed and restarted) removed {} rows",
            t.ticks, t.crashes, t.removed
        ))
    }

    fn mutants(&self) -> Vec<RowsMutant> {
        RowsMutant::ALL.to_vec()
    }

    fn mutant_id(&self, mutant: RowsMutant) -> &'static str {
        mutant.id()
    }

    fn setting(&self) -> String {
        self.tier.name().into()
    }

    const TEXT: TextStyle = TextStyle {
        profile_in_heading: true,
        ..TextStyle::NUMBERED
    };

    fn setting_options(&self) -> String {
        let variants: String = self
            .variants
            .non_defaults()
            .iter()
            .map(|v| format!(" --variant {v}"))
            .collect();
        format!("{}{variants}", tier_option(self.tier.name()))
    }

    fn heading_detail(&self, (batch, _): &RowsWorkload) -> String {
        format!(" (reaps in batches of {batch})")
    }

    fn op_lines(&self, (_, ops): &RowsWorkload) -> Vec<String> {
        ops.iter().map(ToString::to_string).collect()
    }

    fn signature(&self, (_, ops): &RowsWorkload, d: &Divergence) -> Signature {
        signature(ops.get(d.step), d)
    }

    fn rules_decided(
        &self,
        (_, ops): &RowsWorkload,
        _passed: &RunOk,
    ) -> Option<Vec<(&'static str, u64)>> {
        Some(ops.iter().map(|op| (operation(Some(op)).1, 1)).collect())
    }

    fn rules_counting(&self) -> &'static str {
        "every operation of a passing seed, counted by its operation's rule as the signature table names it (the model does not record a finer deciding rule per outcome)"
    }

    fn divergence_text<'d>(&self, d: &'d Divergence) -> DivergenceText<'d> {
        DivergenceText {
            trace: d.trace.lines(),
            at: format!("operation {} ({})", d.step, d.op),
            expected: &d.expected,
            actual: &d.actual,
            model_state: &d.model_state,
        }
    }

    fn save(
        &self,
        failure: &RowsFailure,
        divergence: &Divergence,
        mutant: Option<RowsMutant>,
        dir: &Path,
    ) -> Result<Option<PathBuf>, String> {
        let (batch, ops) = &failure.workload;
        new_fixture(
            failure.seed,
            mutant,
            self.tier.name(),
            &self.variants,
            *batch,
            ops.clone(),
            divergence,
        )
        .save(dir)
        .map(Some)
        .map_err(|e| format!("saving a fixture in {}: {e}", dir.display()))
    }
}

/// Runs one seed's generated sequence on `tier`, read at its own detail.
pub async fn run_seed(
    tier: Tier<'_>,
    seed: u64,
    mutant: Option<RowsMutant>,
) -> (i64, Vec<ExploreOp>, Result<RunOk, RunError>) {
    run_seed_at(tier, tier.detail(), seed, mutant).await
}

/// [`run_seed`] with the state read at `detail`.
pub async fn run_seed_at(
    tier: Tier<'_>,
    detail: Detail,
    seed: u64,
    mutant: Option<RowsMutant>,
) -> (i64, Vec<ExploreOp>, Result<RunOk, RunError>) {
    let (batch, ops) = generate(seed, DEFAULT_STEPS);
    let r = run_ops_at(tier, detail, batch, &ops, mutant).await;
    (batch, ops, r)
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))
}

/// The command: explore (or hunt, or check determinism, or compare the tiers) on the engine's
/// loop, print, and say whether all passed. The tier is `postgres` unless asked.
pub fn command(request: &ExploreRequest) -> Result<bool, String> {
    let mutant = mutant_arg(request.mutant.as_deref())?;
    let tier = request.tier.as_deref().unwrap_or("postgres");
    if !super::runner::TIERS.contains(&tier) {
        return Err(format!(
            "unknown rows tier {tier:?}; expected {}",
            super::runner::TIERS.join(" or ")
        ));
    }
    let rt = runtime()?;
    rt.block_on(async {
        if tier == "memory" && !request.differential {
            println!("rows explore: the reference's in-memory backend, no PostgreSQL");
            return request
                .run_on(
                    &RowsExplorer::on(Tier::Memory).taking(&request.variants),
                    mutant,
                    fixture::default_dir,
                )
                .await;
        }
        let ready = Instant::now();
        let pg = super::postgres().await?;
        println!("rows explore: PostgreSQL ready in {:.2?}", ready.elapsed());
        let dbs = Databases::new(&pg);
        let result = if request.differential {
            let on = |tier| RowsExplorer {
                tier,
                detail: Detail::Counts,
                variants: request.variants.clone(),
            };
            compare::compare(
                &on(Tier::Memory),
                &on(Tier::Postgres(&dbs)),
                &request.seeds(),
                mutant,
            )
            .await
        } else {
            request
                .run_on(
                    &RowsExplorer::on(Tier::Postgres(&dbs)).taking(&request.variants),
                    mutant,
                    fixture::default_dir,
                )
                .await
        };
        let closed = dbs.close().await;
        let ok = result?;
        closed?;
        Ok(ok)
    })
}

/// `tidemark replay` of a rows fixture: prints what happened and whether it recurred.
pub fn replay_fixture(
    path: &Path,
    html: Option<&Path>,
) -> Result<crate::explore::cli::ReplayOutcome, String> {
    let f = fixture::load(path)?;
    let rt = runtime()?;
    let r = rt.block_on(async {
        if f.setting.tier == "memory" {
            return fixture::replay(Tier::Memory, &f).await;
        }
        let pg = super::postgres().await?;
        let dbs = Databases::new(&pg);
        let r = fixture::replay(Tier::Postgres(&dbs), &f).await;
        dbs.close().await?;
        r
    })?;
    Ok(crate::explore::cli::print_replay(
        &crate::explore::cli::ReplayReport {
            fixture: path,
            against: f
                .mutant
                .as_deref()
                .map(|m| format!("rows mutant {m}"))
                .unwrap_or_else(|| "the rows reference".into()),
            operations_heading: format!(
                "operations (seed {}, on {}, reaps in batches of {}):",
                f.seed, f.setting.tier, f.setting.batch
            ),
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

/// A rows divergence's signature. A table that differs after a step names its rule (the table's,
/// SR-2 to SR-6) and which way it differs; an outcome that differs names the operation's rule and
/// the two outcomes' shapes ([`shape`]: ids, payloads and counts masked).
pub fn signature(op: Option<&ExploreOp>, d: &Divergence) -> Signature {
    if let Some(rest) = d.expected.strip_prefix("after ") {
        if let Some((when, table_part)) = rest.split_once(", ") {
            let table = table_part.split(':').next().unwrap_or("").to_string();
            let rule = match table.as_str() {
                "events" | "replies" => "SR-2.8",
                "tool_invocations" => "SR-3.1",
                "trigger_firings" => "SR-3.2",
                "live_sessions" | "refresh_tokens" | "webhook_deliveries" | "breaker_sightings" => {
                    "SR-4.1"
                }
                "catalog_snapshots" => "SR-5.1",
                "action_items" | "held_requests" | "session_prompts" => "SR-6.4",
                _ => "SR-7.2",
            };
            // Rows read whole name what is missing and extra; read as counts (a backend with no
            // schema to read), only the counts differ.
            let count = |text: &str| {
                text.split(": ")
                    .nth(1)
                    .and_then(|c| c.split(' ').next())
                    .and_then(|n| n.parse::<u64>().ok())
            };
            let (e, a) = (count(rest), d.actual.strip_prefix("after ").and_then(count));
            let missing = !d.expected.ends_with("missing from the reference: []")
                || matches!((e, a), (Some(e), Some(a)) if a < e);
            let extra = !d.actual.ends_with("not in the model: []")
                || matches!((e, a), (Some(e), Some(a)) if a > e);
            let which = match (missing, extra) {
                (true, false) => "rows the model has are missing",
                (false, true) => "rows the model does not have",
                _ => "other rows than the model's",
            };
            return Signature::new(rule, format!("state after {when}: {table}: {which}"));
        }
    }
    let (name, rule) = operation(op);
    Signature::new(rule, text_difference(name, &d.expected, &d.actual))
}

/// An operation's name and the rule that governs it when nothing finer applies: a signature's
/// rule for an outcome that differs, and what `--coverage` counts per operation.
pub fn operation(op: Option<&ExploreOp>) -> (&'static str, &'static str) {
    use super::script::Action;
    match op {
        Some(ExploreOp::CrashedReap { .. }) => ("crashed reap", "SR-7.4"),
        Some(ExploreOp::Step(a)) => match a {
            Action::Reap => ("reap", "SR-7.5"),
            Action::ReapBatched { .. } => ("batched reap", "SR-7.3"),
            Action::Advance(_) => ("advance", "SR-1.3"),
            Action::Workspace(_) | Action::Session { .. } => ("create", "SR-1.5"),
            Action::DeleteSession(_) | Action::DeleteWorkspace(_) => ("delete", "SR-6.3"),
            Action::StartReply { .. }
            | Action::Stream { .. }
            | Action::Finish { .. }
            | Action::Interrupt(_)
            | Action::Seal(_)
            | Action::DeleteReply(_)
            | Action::Event { .. }
            | Action::Transcript(_) => ("reply", "SR-2.2"),
            Action::Prompt { .. } => ("prompt", "SR-6.3"),
            Action::Invoke { .. } => ("invoke", "SR-3.1"),
            Action::Fire { .. } => ("fire", "SR-3.2"),
            Action::Snapshot(_)
            | Action::NameSnapshot { .. }
            | Action::DropModel(_)
            | Action::Snapshots => ("snapshot", "SR-5.1"),
            Action::Item { .. } | Action::Settle(_) | Action::Hold { .. } => ("keep", "SR-6.1"),
            Action::Keep { .. } => ("store", "SR-4.2"),
            Action::Count(_) => ("count", "SR-7.5"),
        },
        None => ("the end", "SR-7.2"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_sim::trace::Trace;

    fn diverged(expected: &str, actual: &str) -> Divergence {
        Divergence {
            step: 7,
            op: "reap".into(),
            expected: expected.into(),
            actual: actual.into(),
            trace: Trace::new(),
            model_state: vec![],
        }
    }

    #[test]
    fn a_table_that_differs_names_its_rule_and_which_way_whether_read_whole_or_counted() {
        let reap = ExploreOp::Step(super::super::script::Action::Reap);
        let whole = diverged(
            "after the tick, action_items: 1 rows; missing from the reference: [\"i1 w1\"]",
            "after the tick, action_items: 0 rows; not in the model: []",
        );
        let counted = diverged(
            "after the tick, action_items: 2 rows; missing from the reference: []",
            "after the tick, action_items: 1 rows; not in the model: []",
        );
        for d in [whole, counted] {
            assert_eq!(
                signature(Some(&reap), &d).to_string(),
                "SR-6.4 state after the tick: action_items: rows the model has are missing"
            );
        }
        let extra = diverged(
            "after the tick, events: 0 rows; missing from the reference: []",
            "after the tick, events: 3 rows; not in the model: [\"e1\", \"e2\", \"e3\"]",
        );
        assert_eq!(
            signature(Some(&reap), &extra).to_string(),
            "SR-2.8 state after the tick: events: rows the model does not have"
        );
        let outcome = diverged("reaped 3 4 0 0 0 0 0 0", "reaped 3 5 0 0 0 0 0 0");
        assert_eq!(
            signature(Some(&reap), &outcome).to_string(),
            "SR-7.5 reap: reaped N N N N N N N N, other than the model's"
        );
    }
}

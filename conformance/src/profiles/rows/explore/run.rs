//! One explored sequence against the rows reference and the executable model, compared at every
//! step: each operation's outcome, and after every reap the whole state (every table's rows and
//! every transcript, [`crate::profiles::rows::model::state`]).
//!
//! The reaper's crash ([`ExploreOp::CrashedReap`]) is checked by what SR fixes rather than by rows
//! whose order in a batch is the database's: the tick answers `database_unavailable` exactly
//! when its committed batches ran out before its work did (the model counts the batches each
//! sweep needs at the run's batch size), it removed only rows SR lets go and exactly as many as
//! its batches took, and the restarted reaper's full tick at the same `now` removes the rest and
//! leaves precisely the model's state (SR-7.4).

use std::sync::Mutex;

use tidemark_reference::clock::Timestamp;
use tidemark_reference::rows::{ReapConfig, ReapReport};
use tidemark_reference::rows::{RowsConfig, RowsMutant, RowsStore, TABLES};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::{PgProvider, TestDatabase};
use tidemark_sim::trace::Trace;

use super::observe::{self, outcome_line};
use super::ops::ExploreOp;
use crate::profiles::rows::contract::Swept;
use crate::profiles::rows::model::state::{self, check_crashed, first_difference, Detail};
use crate::profiles::rows::model::Model;
use crate::profiles::rows::reference::ReferenceRows;
use crate::profiles::rows::runner::{perform, same, Learnt, Outcome};
use crate::profiles::rows::script::Action;
use crate::variants::Declared;

/// Databases for explored sequences, reused: a seed's store starts from an emptied schema
/// (`TRUNCATE ... RESTART IDENTITY`, every sequence restarting at 1), which costs PostgreSQL far
/// less than a new database for every seed and every shrinking candidate. A database whose
/// schema a mutant altered (`cascade-misses-prompts` drops a foreign key) has its schema dropped
/// and migrated again before anyone else gets it.
pub struct Databases<'a> {
    pg: &'a PgProvider,
    idle: Mutex<Vec<(TestDatabase, Option<RowsMutant>)>>,
}

impl<'a> Databases<'a> {
    pub fn new(pg: &'a PgProvider) -> Databases<'a> {
        Databases {
            pg,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// A database with the rows schema as `mutant`'s store migrates it, and no rows.
    async fn take(&self, mutant: Option<RowsMutant>) -> Result<TestDatabase, String> {
        let idle = self.idle.lock().expect("the idle list").pop();
        let Some((db, last)) = idle else {
            return self
                .pg
                .fresh_database("rows_explore")
                .await
                .map_err(|e| e.to_string());
        };
        let altered = |m: Option<RowsMutant>| m == Some(RowsMutant::CascadeMissesPrompts);
        let sql = if altered(last) != altered(mutant) {
            "DROP SCHEMA IF EXISTS tidemark_rows CASCADE".to_string()
        } else {
            format!(
                "TRUNCATE {} RESTART IDENTITY CASCADE",
                TABLES
                    .iter()
                    .map(|t| format!("tidemark_rows.{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        match sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&db.pool)
            .await
        {
            Ok(_) => Ok(db),
            Err(e) => {
                // A database that could not be emptied is not handed out again.
                let _ = self.pg.drop_database(db).await;
                Err(format!("emptying the rows schema: {e}"))
            }
        }
    }

    fn give_back(&self, db: TestDatabase, mutant: Option<RowsMutant>) {
        self.idle.lock().expect("the idle list").push((db, mutant));
    }

    /// Drops every database this run made.
    pub async fn close(self) -> Result<(), String> {
        let dbs = std::mem::take(&mut *self.idle.lock().expect("the idle list"));
        for (db, _) in dbs {
            self.pg.drop_database(db).await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Where an explored sequence's rows live.
#[derive(Clone, Copy)]
pub enum Tier<'a> {
    /// The reference on a real PostgreSQL, a reused database of its own per sequence.
    Postgres(&'a Databases<'a>),
    /// The reference's in-memory backend (`RowsStore::in_memory`), a fresh store per sequence:
    /// no PostgreSQL, trusted because `explore --differential` and `tests/suites/rows_tiers.rs` find
    /// it giving PostgreSQL's answers.
    Memory,
}

impl Tier<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            Tier::Postgres(_) => "postgres",
            Tier::Memory => "memory",
        }
    }

    /// How much of the state the harness reads after every reap on this tier: every row where
    /// there is a schema to read, the counts where there is none.
    pub fn detail(&self) -> Detail {
        match self {
            Tier::Postgres(_) => Detail::Rows,
            Tier::Memory => Detail::Counts,
        }
    }

    /// A store with no rows, configured by `config` (a mutant switched on, the variants it
    /// takes), and what hands its database back.
    async fn open(&self, config: RowsConfig) -> Result<Opened<'_>, String> {
        let mutant = config.mutant;
        match self {
            Tier::Memory => Ok(Opened {
                endpoint: ReferenceRows::new(RowsStore::in_memory(config)),
                db: None,
            }),
            Tier::Postgres(dbs) => {
                let db = dbs.take(mutant).await?;
                match RowsStore::open_with(db.pool.clone(), config).await {
                    Ok(store) => Ok(Opened {
                        endpoint: ReferenceRows::new(store),
                        db: Some((dbs, db, mutant)),
                    }),
                    Err(e) => {
                        let _ = dbs.pg.drop_database(db).await;
                        Err(format!("the rows schema: {e}"))
                    }
                }
            }
        }
    }
}

/// The reference behind the contract's endpoint (`reference.rs`): every explored step reaches it
/// as the scenarios' steps do, the reaper's batches (and its crash) set on the endpoint.
struct Opened<'a> {
    endpoint: ReferenceRows,
    db: Option<(&'a Databases<'a>, TestDatabase, Option<RowsMutant>)>,
}

impl Opened<'_> {
    fn close(mut self) {
        if let Some((dbs, db, mutant)) = self.db.take() {
            dbs.give_back(db, mutant);
        }
    }
}

/// Where a sequence left the model: the operation, what the model predicted, what the
/// reference did, and the trace up to it.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// Index of the operation in the sequence.
    pub step: usize,
    pub op: String,
    pub expected: String,
    pub actual: String,
    pub trace: Trace,
    /// The model's rows at the divergence (`Model::state_lines`, bounded).
    pub model_state: Vec<String>,
}

impl Divergence {
    /// The hash a divergence is known by: its trace, then what was expected and what happened.
    pub fn hash(&self) -> String {
        let mut t = self.trace.clone();
        t.record(0, format!("expected {}", self.expected));
        t.record(0, format!("actual {}", self.actual));
        t.hash()
    }

    /// One line: the operation, the expectation and the reference's answer.
    pub fn line(&self) -> String {
        format!(
            "operation {} ({}): expected {}, got {}",
            self.step, self.op, self.expected, self.actual
        )
    }
}

/// Why a sequence did not pass.
#[derive(Clone, Debug)]
pub enum RunError {
    Diverged(Divergence),
    /// The harness could not set up or observe (database, schema, a state read): not a verdict.
    Setup(String),
}

/// A sequence that agreed with the model throughout.
#[derive(Clone, Debug, Default)]
pub struct RunOk {
    pub trace: Trace,
    /// Ticks run (a crashed tick and its restart count as two).
    pub ticks: u64,
    pub crashes: u64,
    /// Rows the ticks removed.
    pub removed: u64,
    pub simulated_ms: i64,
}

/// Each sweep's count, in the tick's order (SR-7.2).
fn counts(r: &ReapReport) -> [u64; 8] {
    Swept::from(r.clone()).counts()
}

fn report(c: [u64; 8]) -> ReapReport {
    ReapReport {
        streamed_events: c[0],
        tool_invocations: c[1],
        trigger_firings: c[2],
        catalog_snapshots: c[3],
        live_sessions: c[4],
        refresh_tokens: c[5],
        webhook_deliveries: c[6],
        breaker_sightings: c[7],
    }
}

/// What a tick crashing after `after` committed batches that removed a row removes, sweep by
/// sweep, when a full tick would remove `full`: each sweep runs batches of `batch` until one
/// comes back short (SR-7.3), in the tick's order; a batch that found nothing does not count.
/// `None`: the tick's batches end before the budget does, and it completes.
pub fn crashed_removal(full: &ReapReport, batch: i64, after: u64) -> Option<[u64; 8]> {
    let mut removed = [0u64; 8];
    if after == 0 {
        return Some(removed);
    }
    let batch = batch.max(1) as u64;
    let mut committed = 0u64;
    for (i, n) in counts(full).into_iter().enumerate() {
        let mut left = n;
        loop {
            let take = left.min(batch);
            left -= take;
            removed[i] += take;
            if take > 0 {
                committed += 1;
                if committed >= after {
                    return Some(removed);
                }
            }
            if take < batch {
                break;
            }
        }
    }
    None
}

fn reap_config(batch: i64, crash_after: Option<u64>) -> ReapConfig {
    let base = match crash_after {
        Some(n) => ReapConfig::crashing_after(n),
        None => ReapConfig::default(),
    };
    ReapConfig { batch, ..base }
}

/// Runs `ops` on a fresh store on `tier` with `mutant` switched on (or the reference), every
/// reap in batches of `batch`.
pub async fn run_ops(
    tier: Tier<'_>,
    batch: i64,
    ops: &[ExploreOp],
    mutant: Option<RowsMutant>,
) -> Result<RunOk, RunError> {
    run_ops_at(tier, tier.detail(), batch, ops, mutant).await
}

/// [`run_ops`], the state read at `detail` rather than the tier's own (counts on PostgreSQL
/// check the reading a backend without a schema gets).
pub async fn run_ops_at(
    tier: Tier<'_>,
    detail: Detail,
    batch: i64,
    ops: &[ExploreOp],
    mutant: Option<RowsMutant>,
) -> Result<RunOk, RunError> {
    run_ops_taking(tier, detail, batch, ops, mutant, &Declared::defaults()).await
}

/// [`run_ops_at`], the reference taking the SPEC.md variants `variants` declares and the model
/// following them (`tidemark explore --profile rows --variant`).
pub async fn run_ops_taking(
    tier: Tier<'_>,
    detail: Detail,
    batch: i64,
    ops: &[ExploreOp],
    mutant: Option<RowsMutant>,
    variants: &Declared,
) -> Result<RunOk, RunError> {
    let config =
        crate::profiles::rows::variants::configured(RowsConfig::with_mutant(mutant), variants);
    let mut opened = tier.open(config).await.map_err(RunError::Setup)?;
    let result = Run {
        endpoint: &mut opened.endpoint,
        detail,
        batch,
        model: Model::taking(variants),
        learnt: Learnt::default(),
        now: EPOCH,
        ok: RunOk::default(),
    }
    .play(ops)
    .await;
    opened.close();
    result
}

struct Run<'a> {
    endpoint: &'a mut ReferenceRows,
    detail: Detail,
    batch: i64,
    model: Model,
    learnt: Learnt,
    now: Timestamp,
    ok: RunOk,
}

enum Stop {
    Diverged(String, String),
    Harness(String),
}

impl Run<'_> {
    fn rel(&self) -> i64 {
        self.now.as_millis() - EPOCH.as_millis()
    }

    async fn play(mut self, ops: &[ExploreOp]) -> Result<RunOk, RunError> {
        for (i, op) in ops.iter().enumerate() {
            let text = op.to_string();
            if let Err(stop) = self.step(op, &text).await {
                return Err(self.stopped(i, Some(op), text, stop));
            }
        }
        // The state at the end is the model's too, reap or no reap.
        if let Err(stop) = self.check_state("the last operation").await {
            return Err(self.stopped(ops.len(), None, "(the end of the sequence)".into(), stop));
        }
        self.ok.simulated_ms = self.rel();
        Ok(self.ok)
    }

    fn stopped(self, step: usize, at: Option<&ExploreOp>, op: String, stop: Stop) -> RunError {
        let rel = self.rel();
        match stop {
            Stop::Harness(e) => RunError::Setup(format!("operation {step} ({op}): {e}")),
            Stop::Diverged(expected, actual) => RunError::Diverged(Divergence {
                step,
                op,
                expected,
                actual,
                trace: self.ok.trace,
                model_state: crate::html::bounded_lines(
                    std::iter::once(format!("at {}", crate::html::timeline::clock(rel))).chain(
                        self.model.state_lines(match at {
                            Some(ExploreOp::Step(a)) => Some(a),
                            _ => None,
                        }),
                    ),
                ),
            }),
        }
    }

    fn record(&mut self, line: String) {
        let at = self.rel();
        self.ok.trace.record(at, line);
    }

    fn compare(&mut self, text: &str, expected: &Outcome, got: &Outcome) -> Result<(), Stop> {
        self.record(format!("{text} -> {}", outcome_line(got)));
        if same(expected, got) {
            Ok(())
        } else {
            Err(Stop::Diverged(outcome_line(expected), outcome_line(got)))
        }
    }

    /// One tick through the endpoint, in the run's batches, crashing after `crash_after` of them.
    async fn tick(&mut self, crash_after: Option<u64>) -> Result<Outcome, Stop> {
        self.ok.ticks += 1;
        self.endpoint.reap = reap_config(self.batch, crash_after);
        let got = perform(
            &mut *self.endpoint,
            &Action::Reap,
            self.now,
            &mut self.learnt,
        )
        .await;
        self.endpoint.reap = reap_config(self.batch, None);
        let got = got.map_err(Stop::Harness)?;
        if let Outcome::Reaped(r) = &got {
            self.ok.removed += r.total();
        }
        Ok(got)
    }

    async fn read_state(&mut self) -> Result<state::State, Stop> {
        let sessions = self.model.sessions();
        observe::read(
            &mut *self.endpoint,
            self.now,
            &mut self.learnt,
            self.detail,
            &sessions,
        )
        .await
        .map_err(Stop::Harness)
    }

    /// The reference's whole state against the model's.
    async fn check_state(&mut self, when: &str) -> Result<(), Stop> {
        let actual = self.read_state().await?;
        let expected = self.model.rows().at(self.detail);
        self.record(format!("  state after {when}: {}", actual.hash()));
        match first_difference(&expected, &actual) {
            None => Ok(()),
            Some((e, a)) => Err(Stop::Diverged(
                format!("after {when}, {e}"),
                format!("after {when}, {a}"),
            )),
        }
    }

    async fn step(&mut self, op: &ExploreOp, text: &str) -> Result<(), Stop> {
        let rel = self.rel();
        match op {
            ExploreOp::Step(Action::Advance(ms)) => {
                self.now = self.now.plus_ms(*ms);
                self.record(text.to_string());
                Ok(())
            }
            ExploreOp::Step(Action::Reap) => {
                let expected = self.model.apply(&Action::Reap, rel);
                let got = self.tick(None).await?;
                self.compare(text, &expected, &got)?;
                self.check_state("the tick").await
            }
            ExploreOp::Step(action) => {
                let expected = self.model.apply(action, rel);
                let got = perform(&mut *self.endpoint, action, self.now, &mut self.learnt)
                    .await
                    .map_err(Stop::Harness)?;
                self.compare(text, &expected, &got)
            }
            ExploreOp::CrashedReap { after } => self.crashed_reap(*after, text).await,
        }
    }

    async fn crashed_reap(&mut self, after: u64, text: &str) -> Result<(), Stop> {
        let rel = self.rel();
        let before = self.model.rows().at(self.detail);
        let mut full = self.model.clone();
        let Outcome::Reaped(whole) = full.apply(&Action::Reap, rel) else {
            unreachable!("the model's tick always reports")
        };
        let removed = crashed_removal(&whole, self.batch, after);
        let expected = match removed {
            Some(_) => Outcome::Refused {
                reason: "database_unavailable".into(),
                message: "(the model: the reaper crashed)".into(),
            },
            None => Outcome::Reaped(whole.clone()),
        };
        let got = self.tick(Some(after)).await?;
        self.compare(text, &expected, &got)?;
        if let Some(removed) = removed {
            self.ok.crashes += 1;
            let after_full = full.rows().at(self.detail);
            let actual = self.read_state().await?;
            check_crashed(&before, &after_full, &actual, &removed).map_err(|(e, a)| {
                Stop::Diverged(
                    format!("after the crashed tick, {e}"),
                    format!("after the crashed tick, {a}"),
                )
            })?;
            // The restarted reaper's tick takes the rest.
            let rest: Vec<u64> = counts(&whole)
                .iter()
                .zip(removed)
                .map(|(w, r)| w - r)
                .collect();
            let rest = report(rest.try_into().expect("eight sweeps"));
            let got = self.tick(None).await?;
            self.compare(
                "  the restarted reaper's tick",
                &Outcome::Reaped(rest),
                &got,
            )?;
        }
        self.model = full;
        self.check_state("the crash and restart").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(c: [u64; 8]) -> ReapReport {
        report(c)
    }

    #[test]
    fn a_crash_budget_is_spent_sweep_by_sweep_in_batches_that_end_short() {
        // Events 5 at batch 2: batches of 2, 2, 1 (short). Invocations 0: one empty batch.
        let r = full([5, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(crashed_removal(&r, 2, 0), Some([0; 8]));
        assert_eq!(crashed_removal(&r, 2, 1), Some([2, 0, 0, 0, 0, 0, 0, 0]));
        // The third batch, the short one, is the last to remove a row: a budget of three is
        // spent as it commits, and a larger one never is (the empty batches of the seven other
        // sweeps do not count).
        assert_eq!(crashed_removal(&r, 2, 3), Some([5, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(crashed_removal(&r, 2, 4), None);
        // A full batch is followed by another, which comes back empty and is not counted.
        let r = full([2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(crashed_removal(&r, 2, 1), Some([2, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(crashed_removal(&r, 2, 2), Some([2, 1, 0, 0, 0, 0, 0, 0]));
        assert_eq!(crashed_removal(&r, 2, 3), None);
    }
}

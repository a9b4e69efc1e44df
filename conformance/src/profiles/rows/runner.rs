//! Plays a rows scenario against a [`RowsEndpoint`]: the reference (`reference-impl/src/rows/`)
//! in process on a fresh PostgreSQL database or a fresh in-memory store ([`Tier`]), or a program
//! through the protocol (`process.rs`). The scenario's clock starts at the pinned epoch, moves only on `advance`, and
//! is handed to every operation. Each step becomes a contract operation (`contract.rs`), its
//! names replaced by the ids the implementation made, or an observation the harness reads; its
//! outcome is traced and compared with its expectation; the first mismatch ends the scenario
//! with its line. The loop over steps is the engine's (`crate::play`); `RowsPlayer` performs
//! one step.

use tidemark_reference::clock::Timestamp;
use tidemark_reference::rows::ReapReport;
use tidemark_reference::rows::{RowsConfig, RowsMutant, RowsStore};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::PgProvider;
use tidemark_sim::trace::Trace;

use super::contract::{Observation, RowsEndpoint, RowsOp, RowsOutcome, UNMADE};
use super::reference::ReferenceRows;
use super::script::{transcript_text, Action, Counted, Entry, Expect, Ids, Script, Step, SWEEPS};
use crate::play::{Failure, Located, Mismatch, StepPlayer};
use crate::variants::Declared;

/// What a step answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Refused { reason: String, message: String },
    Reaped(ReapReport),
    Count(i64),
    Snapshots(Vec<String>),
    Transcript(Vec<Entry>),
}

/// Each sweep that removed something, with its count, in the tick's order.
pub fn nonzero(r: &ReapReport) -> Vec<(String, u64)> {
    let counts = [
        r.streamed_events,
        r.tool_invocations,
        r.trigger_firings,
        r.catalog_snapshots,
        r.live_sessions,
        r.refresh_tokens,
        r.webhook_deliveries,
        r.breaker_sightings,
    ];
    SWEEPS
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| (s.to_string(), n))
        .collect()
}

/// A tick's total, `None` when its counts (an implementation's answer: any numbers) add up to
/// more than `u64` holds; never wrapped round to a small one.
pub fn total(r: &ReapReport) -> Option<u64> {
    nonzero(r)
        .iter()
        .try_fold(0u64, |sum, (_, n)| sum.checked_add(*n))
}

impl Outcome {
    pub fn text(&self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::Refused { reason, message } => format!("refused {reason} ({message})"),
            Outcome::Reaped(r) => {
                let swept = nonzero(r);
                if swept.is_empty() {
                    "reaped 0".into()
                } else {
                    format!(
                        "reaped {} ({})",
                        total(r)
                            .map_or_else(|| format!("more than {}", u64::MAX), |t| t.to_string()),
                        swept
                            .iter()
                            .map(|(s, n)| format!("{s} {n}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            }
            Outcome::Count(n) => n.to_string(),
            Outcome::Snapshots(names) => format!("[{}]", names.join(", ")),
            Outcome::Transcript(entries) => transcript_text(entries),
        }
    }
}

/// Whether two outcomes are the same, refusals by their reason (messages are free text).
pub fn same(a: &Outcome, b: &Outcome) -> bool {
    match (a, b) {
        (Outcome::Refused { reason: x, .. }, Outcome::Refused { reason: y, .. }) => x == y,
        _ => a == b,
    }
}

/// Whether `got` is what `expect` states.
pub fn matches(expect: &Expect, got: &Outcome) -> bool {
    match (expect, got) {
        (Expect::Ok, Outcome::Ok) => true,
        (Expect::Refused(r), Outcome::Refused { reason, .. }) => r == reason,
        (Expect::Reaped { total: Some(n), .. }, Outcome::Reaped(r)) => total(r) == Some(*n),
        (Expect::Reaped { sweeps, .. }, Outcome::Reaped(r)) => *sweeps == nonzero(r),
        (Expect::Count(n), Outcome::Count(m)) => n == m,
        (Expect::Snapshots(a), Outcome::Snapshots(b)) => {
            let (mut a, mut b) = (a.clone(), b.clone());
            a.sort();
            b.sort();
            a == b
        }
        (Expect::Transcript(a), Outcome::Transcript(b)) => a == b,
        _ => false,
    }
}

/// The identifiers the implementation handed out, by the scenario's names.
#[derive(Default)]
pub(super) struct Learnt {
    pub(super) replies: Ids,
    pub(super) snapshots: Ids,
    pub(super) items: Ids,
    requests: Ids,
}

impl Learnt {
    pub(super) fn name_of(ids: &Ids, id: &str) -> String {
        ids.iter()
            .find(|(_, v)| v.as_str() == id)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| format!("#{id}"))
    }
}

fn id(ids: &Ids, name: &str) -> String {
    // Every name was checked at load to be made before it is used; one whose making was
    // refused has no id, and is sent as the id no implementation makes.
    ids.get(name).cloned().unwrap_or_else(|| UNMADE.to_string())
}

/// Where a scenario's rows live: a fresh database of a PostgreSQL (the real tier), or a fresh
/// in-memory store with the database's semantics (the memory tier, which a turmoil world uses).
#[derive(Clone, Copy)]
pub enum Tier<'a> {
    Postgres(&'a PgProvider),
    Memory,
}

impl Tier<'_> {
    /// `postgres` or `memory`, as `--tier` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Tier::Postgres(_) => "postgres",
            Tier::Memory => "memory",
        }
    }
}

/// The tiers `--tier` names, the default first.
pub const TIERS: &[&str] = &["postgres", "memory"];

/// Runs `script` on a fresh database of `pg` with `mutant` switched on (or none).
pub async fn run(
    pg: &PgProvider,
    script: &Script,
    mutant: Option<RowsMutant>,
    trace: &mut Trace,
) -> Result<(), Failure> {
    run_on(Tier::Postgres(pg), script, mutant, trace, &mut Vec::new()).await
}

/// A failure before the first step (or after the last).
pub(crate) fn setup_failure(expected: &str, actual: String) -> Failure {
    Failure {
        line: 0,
        step: "(setup)".into(),
        expected: expected.into(),
        actual,
    }
}

/// The scenario's file stem, for its database's name.
pub(crate) fn stem(script: &Script) -> String {
    script
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// [`run`], recording each step's outcome with its line (up to the first mismatch), for the
/// comparison with the model.
pub async fn run_recorded(
    pg: &PgProvider,
    script: &Script,
    mutant: Option<RowsMutant>,
    trace: &mut Trace,
    outcomes: &mut Vec<(usize, Outcome)>,
) -> Result<(), Failure> {
    run_on(Tier::Postgres(pg), script, mutant, trace, outcomes).await
}

/// [`run_recorded`] on either tier.
pub async fn run_on(
    tier: Tier<'_>,
    script: &Script,
    mutant: Option<RowsMutant>,
    trace: &mut Trace,
    outcomes: &mut Vec<(usize, Outcome)>,
) -> Result<(), Failure> {
    run_on_taking(tier, script, mutant, &Declared::defaults(), trace, outcomes).await
}

/// [`run_on`] with the reference taking the SPEC.md variants `variants` declares, the scenario
/// played as an implementation declaring them plays it (its guarded steps kept or dropped). A
/// scenario whose `variant:` line does not hold is the caller's to skip.
pub async fn run_on_taking(
    tier: Tier<'_>,
    script: &Script,
    mutant: Option<RowsMutant>,
    variants: &Declared,
    trace: &mut Trace,
    outcomes: &mut Vec<(usize, Outcome)>,
) -> Result<(), Failure> {
    run_on_declaring(tier, script, mutant, variants, variants, trace, outcomes).await
}

/// [`run_on_taking`] with the reference taking `takes` while the scenario is played as for an
/// implementation declaring `declares`: what an implementation whose declaration is wrong
/// looks like to the suite.
pub async fn run_on_declaring(
    tier: Tier<'_>,
    script: &Script,
    mutant: Option<RowsMutant>,
    takes: &Declared,
    declares: &Declared,
    trace: &mut Trace,
    outcomes: &mut Vec<(usize, Outcome)>,
) -> Result<(), Failure> {
    let config = super::variants::configured(RowsConfig::with_mutant(mutant), takes);
    let script = &script.as_played_by(declares);
    let pg = match tier {
        Tier::Memory => {
            let mut reference = ReferenceRows::new(RowsStore::in_memory(config));
            return play(&mut reference, script, trace, outcomes).await;
        }
        Tier::Postgres(pg) => pg,
    };
    let db = pg
        .fresh_database(&format!("rows_{}", stem(script)))
        .await
        .map_err(|e| setup_failure("a fresh PostgreSQL database", e.to_string()))?;
    let result = match RowsStore::open_with(db.pool.clone(), config).await {
        Ok(store) => play(&mut ReferenceRows::new(store), script, trace, outcomes).await,
        Err(e) => Err(setup_failure("the rows schema", e.to_string())),
    };
    let dropped = pg.drop_database(db).await;
    result?;
    dropped.map_err(|e| setup_failure("the scenario's database dropped", e.to_string()))
}

/// Plays `script` against `endpoint` from the pinned epoch, recording each step's outcome.
pub async fn play(
    endpoint: &mut dyn RowsEndpoint,
    script: &Script,
    trace: &mut Trace,
    outcomes: &mut Vec<(usize, Outcome)>,
) -> Result<(), Failure> {
    let mut player = RowsPlayer {
        endpoint,
        now: EPOCH,
        learnt: Learnt::default(),
        trace,
        outcomes,
    };
    crate::play::play(&mut player, &script.steps).await
}

impl Located for Step {
    fn line(&self) -> usize {
        self.line
    }
    fn text(&self) -> &str {
        &self.text
    }
}

/// The rows profile's step for the engine's loop: the scenario's clock and the ids learnt so
/// far, and where outcomes are traced and recorded.
struct RowsPlayer<'a> {
    endpoint: &'a mut dyn RowsEndpoint,
    now: Timestamp,
    learnt: Learnt,
    trace: &'a mut Trace,
    outcomes: &'a mut Vec<(usize, Outcome)>,
}

impl StepPlayer for RowsPlayer<'_> {
    type Step = Step;
    type Outcome = Outcome;

    async fn perform(&mut self, step: &Step) -> Result<Option<Outcome>, Mismatch> {
        if let Action::Advance(ms) = step.action {
            self.now = self.now.plus_ms(ms);
            self.trace.record(rel(self.now), format!("advance {ms}ms"));
            return Ok(None);
        }
        // A step that cannot be performed states its expectation as a mismatch does.
        perform(
            &mut *self.endpoint,
            &step.action,
            self.now,
            &mut self.learnt,
        )
        .await
        .map(Some)
        .map_err(|actual| Mismatch::new(step.expect.text(), actual))
    }

    fn observe(&mut self, step: &Step, got: &Outcome) {
        self.trace
            .record(rel(self.now), format!("{} -> {}", step.text, got.text()));
        self.outcomes.push((step.line, got.clone()));
    }

    fn compare(&self, step: &Step, got: &Outcome) -> Result<(), Mismatch> {
        if matches(&step.expect, got) {
            Ok(())
        } else {
            Err(Mismatch::new(step.expect.text(), got.text()))
        }
    }
}

fn rel(now: Timestamp) -> i64 {
    now.as_millis() - EPOCH.as_millis()
}

/// What a step asks: an operation of the implementation, or a count the harness reads.
enum Ask {
    Op(RowsOp),
    Observe(Observation),
}

/// A step as the contract's operation, the scenario's names replaced by the ids learnt.
fn ask(action: &Action, learnt: &Learnt) -> Ask {
    let reply = |r: &str| id(&learnt.replies, r);
    Ask::Op(match action {
        Action::Advance(_) => unreachable!("advance moves the scenario's clock, it asks nothing"),
        Action::Workspace(w) => RowsOp::CreateWorkspace {
            workspace: w.clone(),
        },
        Action::Session { session, workspace } => RowsOp::CreateSession {
            session: session.clone(),
            workspace: workspace.clone(),
        },
        Action::DeleteSession(s) => RowsOp::DeleteSession { session: s.clone() },
        Action::DeleteWorkspace(w) => RowsOp::DeleteWorkspace {
            workspace: w.clone(),
        },
        Action::StartReply { session, .. } => RowsOp::StartReply {
            session: session.clone(),
        },
        Action::Stream {
            reply: r,
            kind,
            payload,
        } => RowsOp::Stream {
            reply: reply(r),
            kind: kind.clone(),
            payload: payload.clone(),
        },
        Action::Finish { reply: r, text } => RowsOp::FinishReply {
            reply: reply(r),
            text: text.clone(),
        },
        Action::Interrupt(r) => RowsOp::InterruptReply { reply: reply(r) },
        Action::Seal(r) => RowsOp::SealReply { reply: reply(r) },
        Action::DeleteReply(r) => RowsOp::DeleteReply { reply: reply(r) },
        Action::Event {
            session,
            kind,
            payload,
        } => RowsOp::RecordEvent {
            session: session.clone(),
            kind: kind.clone(),
            payload: payload.clone(),
        },
        Action::Prompt { session, body } => RowsOp::AddPrompt {
            session: session.clone(),
            body: body.clone(),
        },
        Action::Invoke { session } => RowsOp::RecordInvocation {
            session: session.clone(),
        },
        Action::Fire { trigger } => RowsOp::FireTrigger {
            trigger: trigger.clone(),
        },
        Action::Snapshot(_) => RowsOp::TakeSnapshot,
        Action::NameSnapshot { snapshot, model } => RowsOp::NameSnapshot {
            model: model.clone(),
            snapshot: id(&learnt.snapshots, snapshot),
        },
        Action::DropModel(m) => RowsOp::DropModel { model: m.clone() },
        Action::Item { workspace, .. } => RowsOp::OpenItem {
            workspace: workspace.clone(),
        },
        Action::Settle(i) => RowsOp::SettleItem {
            item: id(&learnt.items, i),
        },
        Action::Hold { session, item, .. } => RowsOp::HoldRequest {
            session: session.clone(),
            item: item.as_deref().map(|i| id(&learnt.items, i)),
        },
        Action::Keep { store, id, for_ms } => RowsOp::Keep {
            store: store.table().to_string(),
            id: id.clone(),
            for_ms: *for_ms,
        },
        Action::Reap => RowsOp::Reap {
            batch: None,
            crash_after_batches: None,
        },
        Action::ReapBatched { batch, crash_after } => RowsOp::Reap {
            batch: Some(*batch),
            crash_after_batches: *crash_after,
        },
        Action::Transcript(s) => RowsOp::Transcript { session: s.clone() },
        Action::Snapshots => RowsOp::Snapshots,
        Action::Count(c) => {
            return Ask::Observe(match c {
                Counted::Table(t) => Observation::Table { table: t.clone() },
                Counted::StreamedOf(r) => Observation::StreamedOf { reply: reply(r) },
                Counted::EventsIn(s) => Observation::EventsIn { session: s.clone() },
            })
        }
    })
}

/// Where the id a making step answers is learnt, by the name the scenario gives it.
fn made_into<'a>(action: &'a Action, learnt: &'a mut Learnt) -> Option<(&'a mut Ids, &'a str)> {
    match action {
        Action::StartReply { reply, .. } => Some((&mut learnt.replies, reply)),
        Action::Snapshot(s) => Some((&mut learnt.snapshots, s)),
        Action::Item { item, .. } => Some((&mut learnt.items, item)),
        Action::Hold { request, .. } => Some((&mut learnt.requests, request)),
        _ => None,
    }
}

/// One step against the endpoint. `Err` is the step's failure as the report states it: the
/// implementation failing, answering out of contract, or an observation that did not run.
/// Refusals are outcomes.
pub(super) async fn perform(
    endpoint: &mut dyn RowsEndpoint,
    action: &Action,
    now: Timestamp,
    learnt: &mut Learnt,
) -> Result<Outcome, String> {
    let op = match ask(action, learnt) {
        Ask::Observe(what) => {
            return endpoint
                .observe(&what)
                .await
                .map(Outcome::Count)
                .map_err(|e| format!("observation error: {e}"))
        }
        Ask::Op(op) => op,
    };
    let got = endpoint
        .call(now.as_millis(), &op)
        .await
        .map_err(|e| format!("implementation error: {e}"))?;
    let out_of_contract = |got: &RowsOutcome| {
        format!(
            "implementation error: {} answered {}, which it never answers",
            op.name(),
            serde_json::to_string(got).unwrap_or_default()
        )
    };
    Ok(match got {
        RowsOutcome::Refused { reason, message } => Outcome::Refused { reason, message },
        // An empty id is the one the harness sends for a name never made: no program makes it.
        RowsOutcome::Made { id } if op.makes() && id != UNMADE => {
            if let Some((ids, name)) = made_into(action, learnt) {
                ids.insert(name.to_string(), id);
            }
            Outcome::Ok
        }
        RowsOutcome::Ok if !op.makes() && !is_read(&op) => Outcome::Ok,
        RowsOutcome::Reaped { swept } if matches!(op, RowsOp::Reap { .. }) => {
            Outcome::Reaped(swept.into())
        }
        RowsOutcome::Transcript { replies } if matches!(op, RowsOp::Transcript { .. }) => {
            Outcome::Transcript(
                replies
                    .into_iter()
                    .map(|r| Entry {
                        reply: Learnt::name_of(&learnt.replies, &r.reply),
                        state: r.state,
                        text: r.text,
                    })
                    .collect(),
            )
        }
        RowsOutcome::Snapshots { snapshots } if matches!(op, RowsOp::Snapshots) => {
            Outcome::Snapshots(
                snapshots
                    .iter()
                    .map(|i| Learnt::name_of(&learnt.snapshots, i))
                    .collect(),
            )
        }
        other => return Err(out_of_contract(&other)),
    })
}

/// The operations that answer with what they read rather than `ok`.
fn is_read(op: &RowsOp) -> bool {
    matches!(
        op,
        RowsOp::Reap { .. } | RowsOp::Transcript { .. } | RowsOp::Snapshots
    )
}

/// The scenarios of `scripts` naming mutant `m` in `kills:`.
pub fn killers(scripts: &[Script], m: RowsMutant) -> Vec<&Script> {
    scripts
        .iter()
        .filter(|s| s.kills.iter().any(|k| k == m.id()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::Path;

    /// A program answering `made` (one answer) to the operations that make something, `other`
    /// to every other but creating workspaces and sessions (`ok`), and 1 to every count;
    /// recording what it was sent.
    struct Answers {
        made: RowsOutcome,
        other: RowsOutcome,
        sent: Vec<RowsOp>,
    }

    #[async_trait::async_trait(?Send)]
    impl RowsEndpoint for Answers {
        async fn call(&mut self, _now_ms: i64, op: &RowsOp) -> Result<RowsOutcome, String> {
            self.sent.push(op.clone());
            Ok(match op {
                RowsOp::CreateWorkspace { .. } | RowsOp::CreateSession { .. } => RowsOutcome::Ok,
                op if op.makes() => self.made.clone(),
                _ => self.other.clone(),
            })
        }
        async fn observe(&mut self, _what: &Observation) -> Result<i64, String> {
            Ok(1)
        }
    }

    fn script(steps: &str) -> Script {
        let rules: BTreeSet<String> = ["SR-2.3".to_string()].into_iter().collect();
        super::super::script::parse_with(
            Path::new("x.tdm"),
            &format!("scenario: s\nprofile: rows\nrules: SR-2.3\n\n{steps}"),
            &rules,
        )
        .unwrap()
    }

    async fn play_against(
        made: RowsOutcome,
        other: RowsOutcome,
        steps: &str,
    ) -> (Result<(), Failure>, Vec<RowsOp>) {
        let mut program = Answers {
            made,
            other,
            sent: Vec::new(),
        };
        let played = play(
            &mut program,
            &script(steps),
            &mut Trace::new(),
            &mut Vec::new(),
        )
        .await;
        (played, program.sent)
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_mismatch_fails_at_its_line_with_its_outcome_traced_and_recorded_and_nothing_after() {
        let mut program = Answers {
            made: RowsOutcome::Made { id: "x".into() },
            other: RowsOutcome::Ok,
            sent: Vec::new(),
        };
        let (mut trace, mut outcomes) = (Trace::new(), Vec::new());
        let played = block_on(play(
            &mut program,
            &script("workspace w1\nadvance 5s\ncount tool_invocations => 2\nworkspace w2\n"),
            &mut trace,
            &mut outcomes,
        ));
        let f = played.expect_err("the count answers 1, the step expects 2");
        assert_eq!(
            (
                f.line,
                f.step.as_str(),
                f.expected.as_str(),
                f.actual.as_str()
            ),
            (7, "count tool_invocations => 2", "2", "1")
        );
        assert_eq!(
            trace.lines().len(),
            3,
            "the workspace, the advance and the failing count are traced: {:?}",
            trace.lines()
        );
        assert!(
            trace.lines()[1].contains("advance 5000ms"),
            "{:?}",
            trace.lines()
        );
        assert_eq!(outcomes, vec![(5, Outcome::Ok), (7, Outcome::Count(1))]);
        assert_eq!(program.sent.len(), 1, "no step after the mismatch is sent");
    }

    #[test]
    fn a_making_step_answered_ok_or_with_an_empty_id_fails_as_out_of_contract() {
        for answer in [RowsOutcome::Ok, RowsOutcome::Made { id: UNMADE.into() }] {
            let (played, _) = block_on(play_against(
                answer.clone(),
                RowsOutcome::Ok,
                "workspace w1\nsession c1 in w1\nstart reply r1 in c1\n",
            ));
            let f = played.expect_err("start_reply must answer made with an id");
            assert!(
                f.line == 7
                    && f.actual.contains("start_reply answered")
                    && f.actual.contains("never answers"),
                "{answer:?}: {f:?}"
            );
        }
    }

    #[test]
    fn the_id_a_program_made_is_sent_back_unchanged_and_an_unmade_name_as_the_empty_id() {
        let (played, sent) = block_on(play_against(
            RowsOutcome::Made {
                id: "9f1c-uuid".into(),
            },
            RowsOutcome::Ok,
            "snapshot s1\nname snapshot s1 for model m\n",
        ));
        played.unwrap();
        assert_eq!(
            sent,
            vec![
                RowsOp::TakeSnapshot,
                RowsOp::NameSnapshot {
                    model: "m".into(),
                    snapshot: "9f1c-uuid".into()
                }
            ]
        );

        let refused = RowsOutcome::Refused {
            reason: "unknown_session".into(),
            message: "no".into(),
        };
        let (played, sent) = block_on(play_against(
            refused.clone(),
            refused,
            "workspace w1\nsession c1 in w1\nstart reply r1 in c1 => refused unknown_session\nseal reply r1 => refused unknown_session\n",
        ));
        played.unwrap();
        assert_eq!(
            sent[3],
            RowsOp::SealReply {
                reply: UNMADE.into()
            }
        );
    }
}

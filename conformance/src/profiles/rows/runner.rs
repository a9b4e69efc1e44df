//! Plays a rows scenario against the reference (`reference-impl/src/rows/`) on a fresh
//! PostgreSQL database or a fresh in-memory store ([`Tier`]): the scenario's clock starts at
//! the pinned epoch, moves only on `advance`, and is handed to every operation. Each step's
//! outcome is traced and compared with its expectation; the first mismatch ends the scenario
//! with its line.

use tidemark_reference::clock::Timestamp;
use tidemark_reference::rows::reaper::{ReapConfig, ReapReport};
use tidemark_reference::rows::{ReplyState, RowsConfig, RowsError, RowsMutant, RowsStore};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::PgProvider;
use tidemark_sim::trace::Trace;

use super::script::{transcript_text, Action, Counted, Entry, Expect, Ids, Script, SWEEPS};
use crate::runner::Failure;

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
                        r.total(),
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
        (Expect::Reaped { total: Some(n), .. }, Outcome::Reaped(r)) => r.total() == *n,
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

/// The identifiers the reference handed out, by the scenario's names.
#[derive(Default)]
struct Learnt {
    replies: Ids,
    snapshots: Ids,
    items: Ids,
}

impl Learnt {
    fn name_of(ids: &Ids, id: i64) -> String {
        ids.iter()
            .find(|(_, v)| **v == id)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| format!("#{id}"))
    }
}

fn id(ids: &Ids, name: &str) -> i64 {
    // Every name was checked at load to be made before it is used; one whose making was
    // refused has no id, and an id no row has makes the reference answer "unknown".
    ids.get(name).copied().unwrap_or(-1)
}

fn refused(e: RowsError) -> Outcome {
    Outcome::Refused {
        reason: e.code().to_string(),
        message: e.to_string(),
    }
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

/// The tiers `--tier` names.
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
    let config = RowsConfig { mutant };
    let pg = match tier {
        Tier::Memory => return play(&RowsStore::in_memory(config), script, trace, outcomes).await,
        Tier::Postgres(pg) => pg,
    };
    let setup = |expected: &str, actual: String| Failure {
        line: 0,
        step: "(setup)".into(),
        expected: expected.into(),
        actual,
    };
    let stem = script
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let db = pg
        .fresh_database(&format!("rows_{stem}"))
        .await
        .map_err(|e| setup("a fresh PostgreSQL database", e.to_string()))?;
    let result = match RowsStore::open_with(db.pool.clone(), config).await {
        Ok(store) => play(&store, script, trace, outcomes).await,
        Err(e) => Err(setup("the rows schema", e.to_string())),
    };
    let dropped = pg.drop_database(db).await;
    result?;
    dropped.map_err(|e| setup("the scenario's database dropped", e.to_string()))
}

async fn play(
    store: &RowsStore,
    script: &Script,
    trace: &mut Trace,
    outcomes: &mut Vec<(usize, Outcome)>,
) -> Result<(), Failure> {
    let mut now = EPOCH;
    let mut learnt = Learnt::default();
    for step in &script.steps {
        if let Action::Advance(ms) = step.action {
            now = now.plus_ms(ms);
            trace.record(rel(now), format!("advance {ms}ms"));
            continue;
        }
        let fail = |actual: String| Failure {
            line: step.line,
            step: step.text.clone(),
            expected: step.expect.text(),
            actual,
        };
        let got = perform(store, &step.action, now, &mut learnt)
            .await
            .map_err(|e| fail(format!("harness error: {e}")))?;
        trace.record(rel(now), format!("{} -> {}", step.text, got.text()));
        outcomes.push((step.line, got.clone()));
        if !matches(&step.expect, &got) {
            return Err(fail(got.text()));
        }
    }
    Ok(())
}

fn rel(now: Timestamp) -> i64 {
    now.as_millis() - EPOCH.as_millis()
}

/// One step against the reference. `Err` is the harness's own failure (an observation query
/// that did not run); the reference's refusals are outcomes.
async fn perform(
    store: &RowsStore,
    action: &Action,
    now: Timestamp,
    learnt: &mut Learnt,
) -> Result<Outcome, String> {
    let done = |r: Result<(), RowsError>| match r {
        Ok(()) => Outcome::Ok,
        Err(e) => refused(e),
    };
    let made = |ids: &mut Ids, name: &str, r: Result<i64, RowsError>| match r {
        Ok(id) => {
            ids.insert(name.to_string(), id);
            Outcome::Ok
        }
        Err(e) => refused(e),
    };
    Ok(match action {
        Action::Advance(_) => Outcome::Ok,
        Action::Workspace(w) => done(store.create_workspace(w).await),
        Action::Session { session, workspace } => {
            done(store.create_session(workspace, session).await)
        }
        Action::DeleteSession(s) => done(store.delete_session(s).await),
        Action::DeleteWorkspace(w) => done(store.delete_workspace(w).await),
        Action::StartReply { reply, session } => made(
            &mut learnt.replies,
            reply,
            store.start_reply(session, now).await,
        ),
        Action::Stream {
            reply,
            kind,
            payload,
        } => match store
            .stream(id(&learnt.replies, reply), kind, payload, now)
            .await
        {
            Ok(_) => Outcome::Ok,
            Err(e) => refused(e),
        },
        Action::Finish { reply, text } => done(
            store
                .finish_reply(id(&learnt.replies, reply), text, now)
                .await,
        ),
        Action::Interrupt(r) => done(store.interrupt_reply(id(&learnt.replies, r)).await),
        Action::Seal(r) => done(store.seal_reply(id(&learnt.replies, r), now).await),
        Action::DeleteReply(r) => done(store.delete_reply(id(&learnt.replies, r), now).await),
        Action::Event {
            session,
            kind,
            payload,
        } => match store.record_event(session, kind, payload, now).await {
            Ok(_) => Outcome::Ok,
            Err(e) => refused(e),
        },
        Action::Prompt { session, body } => match store.add_session_prompt(session, body).await {
            Ok(_) => Outcome::Ok,
            Err(e) => refused(e),
        },
        Action::Invoke { session } => match store.record_invocation(session, now).await {
            Ok(_) => Outcome::Ok,
            Err(e) => refused(e),
        },
        Action::Fire { trigger } => match store.fire_trigger(trigger, now).await {
            Ok(_) => Outcome::Ok,
            Err(e) => refused(e),
        },
        Action::Snapshot(s) => made(&mut learnt.snapshots, s, store.take_snapshot(now).await),
        Action::NameSnapshot { snapshot, model } => done(
            store
                .name_snapshot(model, id(&learnt.snapshots, snapshot))
                .await,
        ),
        Action::DropModel(m) => done(store.drop_model(m).await),
        Action::Item { item, workspace } => {
            made(&mut learnt.items, item, store.open_item(workspace).await)
        }
        Action::Settle(i) => done(store.settle_item(id(&learnt.items, i), now).await),
        Action::Hold { session, item, .. } => {
            let item = item.as_deref().map(|i| id(&learnt.items, i));
            match store.hold_request(session, item, now).await {
                Ok(_) => Outcome::Ok,
                Err(e) => refused(e),
            }
        }
        Action::Keep {
            store: s,
            id,
            for_ms,
        } => done(store.put_expiring(*s, id, now.plus_ms(*for_ms)).await),
        Action::Reap => match store.reap_tick(now, &ReapConfig::default()).await {
            Ok(report) => Outcome::Reaped(report),
            Err(e) => refused(e),
        },
        Action::Transcript(s) => match store.transcript(s).await {
            Ok(replies) => Outcome::Transcript(
                replies
                    .into_iter()
                    .map(|r| Entry {
                        reply: Learnt::name_of(&learnt.replies, r.id),
                        state: match (r.state, r.sealed) {
                            (ReplyState::Finished, true) => "sealed".into(),
                            (state, _) => state.as_str().into(),
                        },
                        text: r.text,
                    })
                    .collect(),
            ),
            Err(e) => refused(e),
        },
        Action::Snapshots => match store.snapshots().await {
            Ok(ids) => Outcome::Snapshots(
                ids.into_iter()
                    .map(|i| Learnt::name_of(&learnt.snapshots, i))
                    .collect(),
            ),
            Err(e) => refused(e),
        },
        Action::Count(c) => Outcome::Count(count(store, c, learnt).await?),
    })
}

/// A count read from the reference's tables (SR-1.4: what remains is observed through
/// read-only queries, defaulting to the reference's own tables), on either tier.
async fn count(store: &RowsStore, c: &Counted, learnt: &Learnt) -> Result<i64, String> {
    match c {
        Counted::Table(t) => store.count(t).await,
        Counted::StreamedOf(r) => store.count_events_of_reply(id(&learnt.replies, r)).await,
        Counted::EventsIn(s) => store.count_events_in_session(s).await,
    }
    .map_err(|e| e.to_string())
}

/// The scenarios of `scripts` naming mutant `m` in `kills:`.
pub fn killers(scripts: &[Script], m: RowsMutant) -> Vec<&Script> {
    scripts
        .iter()
        .filter(|s| s.kills.iter().any(|k| k == m.id()))
        .collect()
}

//! A turmoil world for the rows profile (SPEC part SR): the reference on its in-memory backend,
//! writers and a reaper racing on a simulated clock, faults from the seed, and an oracle.
//!
//! - The database is the in-memory [`RowsStore`], created outside every host: it outlives a
//!   crash of any of them, as a database outlives the processes using it.
//! - Host `server` serves the guests' [`RowsOp`]s (the rows contract, `contract.rs`) as JSON
//!   lines on port 7100, each at the world clock's now, through the one mapping the reference
//!   adapter uses (`reference::answer`).
//! - Host `reaper` ticks on the world clock: once when it boots and then every world hour, in
//!   small batches with a pause between them (so writers land between two batches of one
//!   sweep), some ticks with the reaper's crash fault (`ReapConfig::crashing_after`).
//! - Guests `g0`..`g2` each own a workspace with two conversations: they start, stream into,
//!   finish, interrupt, seal and delete replies, record events and prompts, invoke tools, fire
//!   triggers, keep (and re-keep) rows of the expiring stores, take and name snapshots, open and
//!   settle items, hold requests and delete and re-create a conversation, all from the seed.
//! - Messages are lost on half the seeds (turmoil's fail rate: a lost message breaks its
//!   connection, so a request may be applied and its answer never arrive).
//! - The controller applies faults between steps: clock jumps of hours and days (and back, and
//!   a quiet month), partitions between a guest and the server, the reaper crashed (at a random
//!   moment, or mid-sweep: at the first step it is seen between two batches of a tick) and
//!   restarted, and the reaper down for a week.
//!
//! The oracle is the executable model of part SR (`model/`), fed by the server with every
//! operation the reference accepted, in the order it accepted them (a memory statement never
//! yields, so the two cannot interleave). Safety, after every tick, crashed or not: with `high`
//! the latest time any tick reaped at, everything the model still keeps after a reap at `high`
//! is still there (every table's count and every reply's events at least the model's, every
//! transcript and the snapshots the model keeps): a tick may not have run yet, but no tick may
//! remove what SR keeps. The server also checks that the model accepts what the reference
//! accepted. Liveness, after the heal (partitions repaired, the reaper up, no crash fault, the
//! clock an hour past anything it has shown): the first whole tick leaves exactly what the model
//! keeps, every count, reply, transcript and snapshot.
//!
//! The trace is what the server applied and what each tick did, in order, refusals by reason;
//! a seed replays it byte for byte.
//!
//! This file holds the hosts, the faults and the run; [`guests`] the writers, [`oracle`] the
//! safety and liveness checks.

mod guests;
mod oracle;

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, RngCore};
use tidemark_reference::clock::{DAY_MS, HOUR_MS, MINUTE_MS};
use tidemark_reference::rows::ReapConfig;
use tidemark_reference::rows::{ExpiringStore, RowsConfig, RowsMutant, RowsStore};

use super::contract::{RowsOp, RowsOutcome};
use super::model::Model;
use super::reference::answer;
use super::runner::Outcome;
use super::script::Action;
use crate::world::clock::WorldClock;
use crate::world::lock;
use crate::world::net::{serve_lines, Envelope};
use crate::world::WorldRun;
use guests::guest;
use oracle::{liveness, safety};
use tidemark_sim::seed::MasterSeed;
use tidemark_sim::trace::Trace;

const SERVER: &str = "server";
const REAPER: &str = "reaper";
const PORT: u16 = 7100;
const GUESTS: usize = 3;
const OPS_PER_GUEST: usize = 45;
/// How often the reaper looks at the world clock, in turmoil time.
const REAPER_POLL: Duration = Duration::from_millis(100);
const REAP_EVERY_MS: i64 = HOUR_MS;
/// The pause between two batches of one sweep, in turmoil time: writers land in it.
const BATCH_PAUSE: Duration = Duration::from_millis(2);
/// Far longer than any answer takes (1 to 3 ms a message), short enough that a lost one costs
/// the world little time.
const CALL_TIMEOUT: Duration = Duration::from_millis(300);
const STORE_IDS: [&str; 2] = ["t1", "t2"];

/// Everything the hosts, the guests and the controller share. Nothing here survives the world.
struct World {
    store: RowsStore,
    clock: WorldClock,
    /// What SR keeps, fed with every operation the reference accepted.
    model: Mutex<Model>,
    /// Every reply id the reference handed out (a deleted one's events are still checked).
    replies: Mutex<BTreeSet<String>>,
    log: Mutex<Vec<(i64, String)>>,
    violations: Mutex<Vec<String>>,
    /// The model's rows at the first violation (or at the liveness verdict).
    model_state: Mutex<Vec<String>>,
    /// The latest time any tick reaped at (model time).
    high: AtomicI64,
    ticks: AtomicU64,
    /// A tick is between its first and last batch (the controller crashes the reaper there).
    ticking: AtomicBool,
    healed: AtomicBool,
    heal_at: AtomicI64,
    /// The liveness verdict, once a whole tick has run after the heal.
    audit: Mutex<Option<Result<(), String>>>,
    seed: MasterSeed,
}

impl World {
    /// A line at the world's now, from inside a host.
    fn log(&self, line: String) {
        self.log_at(self.clock.rel(), line);
    }

    fn log_at(&self, at: i64, line: String) {
        lock(&self.log).push((at, line));
    }

    fn violation(&self, what: String) {
        self.log(format!("VIOLATION {what}"));
        let mut violations = lock(&self.violations);
        if violations.is_empty() {
            self.keep_model_state(self.clock.rel(), &what);
        }
        violations.push(what);
    }

    /// The model's rows at `at` (the world's time) of the tables `what` names (every table if
    /// it names none), kept for the page: only at a failure.
    fn keep_model_state(&self, at: i64, what: &str) {
        let at = format!("at {}", crate::html::timeline::clock(at));
        let named: Vec<&str> = tidemark_reference::rows::TABLES
            .iter()
            .copied()
            .filter(|t| {
                what.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|w| w == *t)
            })
            .collect();
        let rows = lock(&self.model).rows_of(&named);
        *lock(&self.model_state) = crate::html::bounded_lines(std::iter::once(at).chain(rows));
    }
}

/// The conversations every guest owns, in its own workspace.
fn sessions_of(guest: usize) -> [String; 2] {
    [format!("g{guest}a"), format!("g{guest}b")]
}

fn all_sessions() -> Vec<String> {
    (0..GUESTS).flat_map(sessions_of).collect()
}

/// The model's step for an operation the reference accepted, with the id it made, if any.
fn action_of(op: &RowsOp, made: Option<&str>) -> Option<Action> {
    let made = || made.unwrap_or_default().to_string();
    Some(match op.clone() {
        RowsOp::CreateWorkspace { workspace } => Action::Workspace(workspace),
        RowsOp::CreateSession { session, workspace } => Action::Session { session, workspace },
        RowsOp::DeleteSession { session } => Action::DeleteSession(session),
        RowsOp::DeleteWorkspace { workspace } => Action::DeleteWorkspace(workspace),
        RowsOp::StartReply { session } => Action::StartReply {
            reply: made(),
            session,
        },
        RowsOp::Stream {
            reply,
            kind,
            payload,
        } => Action::Stream {
            reply,
            kind,
            payload,
        },
        RowsOp::FinishReply { reply, text } => Action::Finish { reply, text },
        RowsOp::InterruptReply { reply } => Action::Interrupt(reply),
        RowsOp::SealReply { reply } => Action::Seal(reply),
        RowsOp::DeleteReply { reply } => Action::DeleteReply(reply),
        RowsOp::RecordEvent {
            session,
            kind,
            payload,
        } => Action::Event {
            session,
            kind,
            payload,
        },
        RowsOp::AddPrompt { session, body } => Action::Prompt { session, body },
        RowsOp::RecordInvocation { session } => Action::Invoke { session },
        RowsOp::FireTrigger { trigger } => Action::Fire { trigger },
        RowsOp::Keep { store, id, for_ms } => Action::Keep {
            store: ExpiringStore::ALL
                .into_iter()
                .find(|s| s.table() == store)?,
            id,
            for_ms,
        },
        RowsOp::TakeSnapshot => Action::Snapshot(made()),
        RowsOp::NameSnapshot { model, snapshot } => Action::NameSnapshot { snapshot, model },
        RowsOp::DropModel { model } => Action::DropModel(model),
        RowsOp::OpenItem { workspace } => Action::Item {
            item: made(),
            workspace,
        },
        RowsOp::SettleItem { item } => Action::Settle(item),
        RowsOp::HoldRequest { session, item } => Action::Hold {
            request: made(),
            session,
            item,
        },
        RowsOp::Reap { .. } | RowsOp::Transcript { .. } | RowsOp::Snapshots => return None,
    })
}

/// One outcome as the trace shows it: refusals by reason only.
fn summary(o: &RowsOutcome) -> String {
    match o {
        RowsOutcome::Refused { reason, .. } => format!("refused {reason}"),
        RowsOutcome::Made { id } => format!("made {id}"),
        o => serde_json::to_string(o).unwrap_or_default(),
    }
}

/// The `server` host: each connection one request, answered at the world's now, the model fed
/// with what was accepted before anything else runs.
async fn serve(world: Arc<World>) -> turmoil::Result {
    world.log("server starts".into());
    serve_lines(PORT, move |env: Envelope<RowsOp>| {
        let world = world.clone();
        async move { Some(apply(&world, &env).await) }
    })
    .await
}

async fn apply(world: &World, env: &Envelope<RowsOp>) -> RowsOutcome {
    if matches!(env.op, RowsOp::Reap { .. }) {
        return RowsOutcome::Refused {
            reason: "unknown_kind".into(),
            message: "the world's reaper is its own host".into(),
        };
    }
    let now = world.clock.now();
    let rel = world.clock.rel();
    // In memory no statement yields, so nothing runs between the answer and the model's step.
    let outcome = answer(&world.store, &ReapConfig::default(), now, &env.op).await;
    let made = match &outcome {
        RowsOutcome::Made { id } => Some(id.as_str()),
        _ => None,
    };
    if matches!(env.op, RowsOp::StartReply { .. }) {
        if let Some(id) = made {
            lock(&world.replies).insert(id.to_string());
        }
    }
    let accepted = !matches!(outcome, RowsOutcome::Refused { .. });
    let op_text = serde_json::to_string(&env.op).unwrap_or_default();
    world.log(format!(
        "g{} #{} {op_text} => {}",
        env.client,
        env.seq,
        summary(&outcome)
    ));
    if let (true, Some(action)) = (accepted, action_of(&env.op, made)) {
        let predicted = lock(&world.model).apply(&action, rel);
        if let Outcome::Refused { reason, .. } = predicted {
            world.violation(format!(
                "the reference accepted {op_text} at {rel}, which SR refuses ({reason})"
            ));
        }
    }
    outcome
}

// ----- the reaper --------------------------------------------------------------------------

/// The `reaper` host: a tick at boot, then every world hour. Each tick's batch size and crash
/// fault come from the seed and the tick's number, so a restart does not replay the same ones.
async fn reap_forever(world: Arc<World>) -> turmoil::Result {
    world.log("reaper starts".into());
    loop {
        let started = world.clock.rel();
        tick(&world).await;
        let next = started + REAP_EVERY_MS;
        while world.clock.rel() < next {
            tokio::time::sleep(REAPER_POLL).await;
        }
    }
}

async fn tick(world: &World) {
    let n = world.ticks.fetch_add(1, Ordering::SeqCst);
    let mut rng = world.seed.stream(&format!("rows-world-tick-{n}"));
    let healed = world.healed.load(Ordering::SeqCst);
    let batch = rng.gen_range(1..5);
    let crash = (!healed && rng.gen_bool(0.25)).then(|| rng.gen_range(0..6));
    let mut cfg = match crash {
        Some(k) => ReapConfig::crashing_after(k),
        None => ReapConfig::default(),
    }
    .with_batch(batch);
    cfg.pause_between_batches = BATCH_PAUSE;
    let now = world.clock.now();
    let at = world.clock.rel();
    world.high.fetch_max(at, Ordering::SeqCst);
    world.log(format!(
        "tick {n} reaps at {at} in batches of {batch}{}",
        crash
            .map(|k| format!(", dying after {k}"))
            .unwrap_or_default()
    ));
    world.ticking.store(true, Ordering::SeqCst);
    let result = world.store.reap_tick(now, &cfg).await;
    world.ticking.store(false, Ordering::SeqCst);
    match &result {
        Ok(r) => world.log(format!("tick {n} removed {}: {r:?}", r.total())),
        Err(e) => world.log(format!("tick {n} failed: {}", e.code())),
    }
    let high = world.high.load(Ordering::SeqCst);
    for v in safety(world, high).await {
        world.violation(format!("after tick {n} (high {high}): {v}"));
    }
    let after_heal = healed && at >= world.heal_at.load(Ordering::SeqCst);
    if after_heal && result.is_ok() && lock(&world.audit).is_none() {
        let verdict = liveness(world, at).await;
        world.log(format!("liveness at {at}: {verdict:?}"));
        *lock(&world.audit) = Some(verdict);
    }
}

/// What the model keeps after a reap at `at`.
// ----- the faults and the run --------------------------------------------------------------

#[derive(Clone, Debug)]
enum Fault {
    Jump(i64),
    Partition(usize),
    Repair(usize),
    ReaperCrash,
    /// The reaper dies at the first step it is seen between two batches of a tick.
    ReaperCrashMidSweep,
    ReaperRestart,
}

/// The fault schedule of a seed, in turmoil milliseconds.
fn faults(master: MasterSeed) -> Vec<(u64, Fault)> {
    let mut rng = master.stream("rows-world-faults");
    let mut out = Vec::new();
    for _ in 0..rng.gen_range(8..16) {
        let days = rng.gen_range(0..4) * DAY_MS + rng.gen_range(1..24) * HOUR_MS;
        out.push((rng.gen_range(100..3_500), Fault::Jump(days)));
    }
    for _ in 0..rng.gen_range(0..3) {
        let back = [2 * HOUR_MS, DAY_MS][rng.gen_range(0..2)];
        out.push((rng.gen_range(100..3_500), Fault::Jump(-back)));
    }
    for _ in 0..rng.gen_range(0..4) {
        let (at, g) = (rng.gen_range(100..3_500), rng.gen_range(0..GUESTS));
        out.push((at, Fault::Partition(g)));
        out.push((at + rng.gen_range(50..800), Fault::Repair(g)));
    }
    for _ in 0..rng.gen_range(0..3) {
        let at = rng.gen_range(100..3_500);
        out.push((at, Fault::ReaperCrash));
        out.push((at + rng.gen_range(20..400), Fault::ReaperRestart));
    }
    for _ in 0..rng.gen_range(1..3) {
        let at = rng.gen_range(100..3_500);
        out.push((at, Fault::ReaperCrashMidSweep));
        out.push((at + rng.gen_range(100..600), Fault::ReaperRestart));
    }
    // The reaper down for a week (or more): it comes back to everything that expired meanwhile.
    if rng.gen_bool(0.4) {
        let at = rng.gen_range(100..3_000);
        out.push((at, Fault::ReaperCrash));
        out.push((
            at + 1,
            Fault::Jump(7 * DAY_MS + rng.gen_range(0..3) * DAY_MS),
        ));
        out.push((at + rng.gen_range(50..300), Fault::ReaperRestart));
    }
    // A quiet month: items settled early are past their thirty days, firings past theirs.
    if rng.gen_bool(0.4) {
        let days = 30 + rng.gen_range(0..5);
        out.push((rng.gen_range(1_500..3_500), Fault::Jump(days * DAY_MS)));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

/// Runs one seed's rows world (the reference, or a mutant): safety after every tick, liveness
/// after the heal.
pub fn run_rows_world(seed: u64, mutant: Option<RowsMutant>) -> WorldRun {
    let master = MasterSeed(seed);
    let world = Arc::new(World {
        store: RowsStore::in_memory(RowsConfig::with_mutant(mutant)),
        clock: WorldClock::default(),
        model: Mutex::default(),
        replies: Mutex::default(),
        log: Mutex::default(),
        violations: Mutex::default(),
        model_state: Mutex::default(),
        high: AtomicI64::new(i64::MIN),
        ticks: AtomicU64::new(0),
        ticking: AtomicBool::new(false),
        healed: AtomicBool::new(false),
        heal_at: AtomicI64::new(i64::MAX),
        audit: Mutex::default(),
        seed: master,
    });
    let left = Arc::new(AtomicUsize::new(GUESTS));
    // Message loss on half the seeds: a lost message breaks its connection, so a request may
    // be applied and its answer never arrive.
    let loss = {
        let mut rng = master.stream("rows-world-loss");
        if rng.gen_bool(0.5) {
            rng.gen_range(0.005..0.03)
        } else {
            0.0
        }
    };
    let mut sim = crate::world::builder(
        master.stream("rows-world-turmoil").next_u64(),
        Duration::from_millis(3),
    )
    .fail_rate(loss)
    .repair_rate(0.5)
    .build();
    {
        let world = world.clone();
        sim.host(SERVER, move || serve(world.clone()));
    }
    {
        let world = world.clone();
        sim.host(REAPER, move || reap_forever(world.clone()));
    }
    for g in 0..GUESTS {
        let (world, left) = (world.clone(), left.clone());
        sim.client(format!("g{g}"), guest(world, g, left));
    }
    {
        // Keeps the world running until the heal's whole tick has given its verdict (or a
        // minute of network time has passed without one).
        let world = world.clone();
        sim.client("auditor", async move {
            for _ in 0..6_000 {
                if lock(&world.audit).is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(())
        });
    }

    let schedule = faults(master);
    let mut next_fault = 0;
    let mut reaper_down = false;
    let mut crash_mid_sweep = false;
    let mut partitioned = BTreeSet::new();
    // How far the clock stands behind the latest time it has shown.
    let mut rewound_ms = 0i64;
    let mut nudge_at = u64::MAX;
    let mut steps = 0u64;
    let mut failure = None;
    loop {
        let elapsed_ms = sim.elapsed().as_millis() as u64;
        let healed = world.healed.load(Ordering::SeqCst);
        while !healed && next_fault < schedule.len() && schedule[next_fault].0 <= elapsed_ms {
            let (_, f) = &schedule[next_fault];
            match f {
                Fault::Jump(ms) => {
                    world.clock.jump(*ms);
                    rewound_ms = (rewound_ms - ms).max(0);
                }
                Fault::Partition(g) => {
                    sim.partition(format!("g{g}"), SERVER);
                    partitioned.insert(*g);
                }
                Fault::Repair(g) => {
                    sim.repair(format!("g{g}"), SERVER);
                    partitioned.remove(g);
                }
                Fault::ReaperCrash if !reaper_down => {
                    sim.crash(REAPER);
                    reaper_down = true;
                }
                Fault::ReaperCrashMidSweep => crash_mid_sweep = true,
                Fault::ReaperRestart if reaper_down => {
                    sim.bounce(REAPER);
                    reaper_down = false;
                }
                // A mid-sweep crash still waiting for a tick is called off with its restart.
                Fault::ReaperRestart => crash_mid_sweep = false,
                Fault::ReaperCrash => {}
            }
            world.log_at(world.clock.rel_outside(&sim), format!("fault {f:?}"));
            next_fault += 1;
        }
        if !healed && crash_mid_sweep && !reaper_down && world.ticking.load(Ordering::SeqCst) {
            sim.crash(REAPER);
            reaper_down = true;
            crash_mid_sweep = false;
            world.ticking.store(false, Ordering::SeqCst);
            world.log_at(
                world.clock.rel_outside(&sim),
                "the reaper dies mid-sweep".into(),
            );
        }
        if !healed && left.load(Ordering::SeqCst) == 0 {
            for g in std::mem::take(&mut partitioned) {
                sim.repair(format!("g{g}"), SERVER);
            }
            if reaper_down {
                sim.bounce(REAPER);
                reaper_down = false;
            }
            crash_mid_sweep = false;
            // An hour (and a minute) past the latest time the clock has shown: the reaper's
            // next tick is due even after a backwards jump, and reaps at the latest time.
            world.clock.jump(REAP_EVERY_MS + MINUTE_MS + rewound_ms);
            let at = world.clock.rel_outside(&sim);
            world.heal_at.store(at, Ordering::SeqCst);
            world.log_at(at, "heal".into());
            world.healed.store(true, Ordering::SeqCst);
            nudge_at = elapsed_ms + 2_000;
        }
        if lock(&world.audit).is_some() {
            break;
        }
        if healed && elapsed_ms >= nudge_at {
            // A tick caught in the faults finished after the heal and set its next an hour on.
            world.clock.jump(REAP_EVERY_MS);
            world.log_at(world.clock.rel_outside(&sim), "an hour passes".into());
            nudge_at = elapsed_ms + 2_000;
        }
        if let ControlFlow::Break(end) = crate::world::step(&mut sim, &mut steps) {
            failure = end;
            break;
        }
    }
    let simulated_ms = world.clock.rel_outside(&sim);
    drop(sim);
    let mut trace = Trace::new();
    for (at, line) in lock(&world.log).iter() {
        trace.record(*at, line);
    }
    if failure.is_none() {
        failure = lock(&world.violations)
            .first()
            .map(|v| format!("safety: {v}"));
    }
    if failure.is_none() {
        failure = match lock(&world.audit).clone() {
            Some(Ok(())) => None,
            Some(Err(e)) => Some(format!("liveness: {e}")),
            None => Some("liveness: no whole tick ran after the heal".into()),
        };
        if failure.is_some() {
            world.keep_model_state(simulated_ms, failure.as_deref().unwrap_or(""));
        }
    }
    let model_state = std::mem::take(&mut *lock(&world.model_state));
    WorldRun {
        trace,
        failure,
        simulated_ms,
        steps,
        model_state,
    }
}

/// Rows mutants the world cannot reach, and why; the scenarios kill each of them
/// (`tidemark mutants --profile rows`). The world judges what remains (safety after every
/// tick, liveness after the heal), not a refusal's reason, a tick's report or how many
/// statements removed what it removed.
pub const OUT_OF_REACH: &[(&str, &str)] = &[
    (
        "reaper-clock-never-goes-back",
        "the world's safety check allows a reap at up to the latest time any tick reaped at (its ticks straddle backwards jumps), which is the time this mutant reaps at",
    ),
    (
        "chat-prefix-is-streamed",
        "a conversation event the mutant refuses is one the world's model never holds: the world does not judge refusals",
    ),
    (
        "deletion-restarts-the-day",
        "it keeps events longer, never shorter: only the liveness check sees it, and only when the heal falls between the day from a reply's end and the day from its later deletion",
    ),
    (
        "one-sweep-for-every-store",
        "it removes what the four sweeps would and only reports it under another name; the world does not judge a tick's report",
    ),
    (
        "items-outlive-their-workspace",
        "the world's guests never delete their workspace: each keeps its own for the whole run",
    ),
    (
        "unbounded-delete",
        "one unbounded statement removes exactly what the batches would; the world judges what remains, not how many statements removed it",
    ),
    (
        "sweep-in-one-transaction",
        "a crashed tick's rolled-back rows are removed by the next tick, and no tick crashes after the heal, when liveness is judged",
    ),
    (
        "failing-sweep-skipped",
        "a tick that passes over a failing sweep removes nothing it should keep and the next tick removes the rest; the world does not judge a tick's report",
    ),
    (
        "settling-an-unknown-item-succeeds",
        "the world does not judge refusals, and settling what does not exist changes no row",
    ),
    (
    "expiry-boundary-strict",
    "the mutant differs only when a tick reaps at exactly a row's expiry, to the millisecond; the world's ticks fall on turmoil's milliseconds after jumps of whole hours, and an expiry an operation wrote meets one only by coincidence (the scenario sets the tick on the expiry)",
)];

/// `tidemark world --profile rows`: the rows world as the engine plays and hunts it.
pub const WORLD: crate::world::WorldProfile<RowsMutant> = crate::world::WorldProfile {
    label: "rows world",
    replay: "tidemark world --profile rows",
    profile: "rows",
    mutants: &RowsMutant::ALL,
    id: RowsMutant::id,
    from_id: RowsMutant::from_id,
    out_of_reach: OUT_OF_REACH,
    // The rows world's reference takes the defaults; it models no variant yet.
    run: |seed, mutant, _variants| run_rows_world(seed, mutant),
};

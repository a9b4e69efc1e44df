//! A turmoil world for the scratchpad profile: the reference scratchpad runs as a host serving
//! the contract over turmoil's simulated network, with its sweeper on its own timer; three
//! clients issue operations concurrently; the world's verbs (`bounce`, `crash`, `partition`,
//! `repair`, clock jumps) are applied between steps from the seed. Afterwards the server's log,
//! which is the order the requests were really applied in, is replayed through the oracle.
//!
//! Time: the scratchpad reads the engine's world clock (`world::clock`), which the controller
//! jumps across idle stretches (days) while the network keeps its millisecond ticks. The wire,
//! the clock and the seed loop are the engine's (`world/`); this file holds the host, the
//! clients, the faults and the oracle's replay.

use crate::profiles::scratchpad::contract::{Caller, Outcome, Request};
use crate::profiles::scratchpad::explore::ops::{caller, SimOp, PATHS, PLACES, SIZES, WHO};
use crate::profiles::scratchpad::model::{ModelKnobs, ScratchpadModel};
use crate::profiles::scratchpad::script::parse::context_of;
use crate::variants::Declared;
use crate::world::clock::WorldClock;
use crate::world::lock;
use crate::world::net::{call, serve_lines, Envelope};
use rand::{Rng, RngCore};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tidemark_reference::clock::{DAY_MS, HOUR_MS, MINUTE_MS};
use tidemark_reference::scratchpad::{names_for, Scratchpad, ScratchpadConfig, ScratchpadMutant};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::owner::scratch_base;
use tidemark_sim::seed::MasterSeed;
use tidemark_sim::trace::Trace;

const PAD: &str = "pad";
const PORT: u16 = 7000;
const CLIENTS: usize = 3;
const OPS_PER_CLIENT: usize = 40;
/// How often the server's sweeper looks at its timer, in simulated (turmoil) time.
const SWEEPER_POLL: Duration = Duration::from_secs(1);
const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// One line of the server's log, in the order things were applied.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Applied {
    Start {
        at_ms: i64,
        swept: Vec<String>,
    },
    Sweep {
        at_ms: i64,
        swept: Vec<String>,
    },
    Call {
        at_ms: i64,
        client: usize,
        seq: usize,
        request: Request,
        outcome: Outcome,
    },
    /// The harness planted a symbolic link (a fault: someone else's link in a subtree).
    Plant {
        at_ms: i64,
        caller: Caller,
        path: Vec<String>,
    },
}

type Log = Arc<Mutex<Vec<Applied>>>;

/// The scratchpad host: opens from disk, sweeps at startup, serves, and sweeps on its timer.
async fn serve(cfg: ScratchpadConfig, clock: WorldClock, log: Log) -> turmoil::Result {
    let mut pad = Scratchpad::open(cfg, Arc::new(clock.clone()))?;
    let report = pad.start()?;
    lock(&log).push(Applied::Start {
        at_ms: clock.rel(),
        swept: report.collected,
    });
    let pad = Arc::new(Mutex::new(pad));
    {
        let (pad, log, clock) = (pad.clone(), log.clone(), clock.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SWEEPER_POLL).await;
                let mut p = lock(&pad);
                if let Ok(Some(r)) = p.tick() {
                    lock(&log).push(Applied::Sweep {
                        at_ms: clock.rel(),
                        swept: r.collected,
                    });
                }
            }
        });
    }
    serve_lines(PORT, move |env: Envelope<Request>| {
        let (pad, log, clock) = (pad.clone(), log.clone(), clock.clone());
        async move {
            let mut p = lock(&pad);
            let outcome = match env.op {
                Request::Start | Request::Tick => return None, // only the host itself starts and ticks
                ref call => crate::profiles::scratchpad::reference::apply_call(&mut p, call),
            };
            lock(&log).push(Applied::Call {
                at_ms: clock.rel(),
                client: env.client,
                seq: env.seq,
                request: env.op,
                outcome: outcome.clone(),
            });
            Some(outcome)
        }
    })
    .await
}

/// What a client saw for one request: the outcome, or nothing (timeout, refused connection).
type Seen = Arc<Mutex<Vec<(usize, usize, Option<Outcome>)>>>;

/// A fault the controller applies between steps.
#[derive(Clone, Debug)]
enum Fault {
    Jump(i64),
    Bounce,
    Crash,
    Partition(usize),
    Repair(usize),
    PlantLink { who: u8, place: u8, path: u8 },
}

pub type WorldResult = crate::world::WorldRun;

fn client_ops(seed: MasterSeed, client: usize) -> Vec<(u64, SimOp)> {
    let mut rng = seed.stream(&format!("world-client-{client}"));
    (0..OPS_PER_CLIENT)
        .map(|_| {
            let pause_ms = rng.gen_range(0..60);
            let place = rng.gen_range(0..PLACES.len() as u8);
            let who = if rng.gen_bool(0.7) {
                client as u8
            } else {
                rng.gen_range(0..WHO.len() as u8)
            };
            let p = if rng.gen_bool(0.45) {
                [0u8, 7, 8][rng.gen_range(0..3)]
            } else {
                rng.gen_range(0..PATHS.len() as u8)
            };
            let op = match rng.gen_range(0..100) {
                0..=44 => SimOp::Write {
                    who,
                    place,
                    path: p,
                    size: rng.gen_range(0..SIZES.len() as u8),
                },
                45..=69 => SimOp::Read {
                    who,
                    place,
                    path: p,
                },
                70..=87 => SimOp::List { who, place },
                _ => SimOp::Remove {
                    who,
                    place,
                    path: p,
                },
            };
            (pause_ms, op)
        })
        .collect()
}

fn faults(seed: MasterSeed) -> Vec<(u64, Fault)> {
    let mut rng = seed.stream("world-faults");
    let mut out = Vec::new();
    // Clock jumps spread over the run: about a month in all.
    for _ in 0..24 {
        let at = rng.gen_range(0..2_400u64);
        let jump = [
            5 * MINUTE_MS,
            HOUR_MS,
            6 * HOUR_MS,
            DAY_MS,
            DAY_MS,
            2 * DAY_MS,
            3 * DAY_MS,
        ][rng.gen_range(0..7)];
        out.push((at, Fault::Jump(jump)));
    }
    if rng.gen_bool(0.3) {
        out.push((rng.gen_range(0..2_400), Fault::Jump(-HOUR_MS)));
    }
    for _ in 0..rng.gen_range(0..3) {
        out.push((rng.gen_range(0..2_400), Fault::Bounce));
    }
    if rng.gen_bool(0.3) {
        let at = rng.gen_range(0..2_000);
        out.push((at, Fault::Crash));
        // Down across a jump longer than a pairing's hour: the startup sweep must catch up.
        out.push((at + 1, Fault::Jump(2 * HOUR_MS)));
        out.push((at + rng.gen_range(50..400), Fault::Bounce));
    }
    for _ in 0..rng.gen_range(0..3) {
        let (who, place, path) = (
            rng.gen_range(0..WHO.len() as u8),
            rng.gen_range(0..PLACES.len() as u8),
            rng.gen_range(0..2),
        );
        out.push((
            rng.gen_range(0..1_500),
            Fault::PlantLink { who, place, path },
        ));
    }
    for _ in 0..rng.gen_range(0..3) {
        let c = rng.gen_range(0..CLIENTS);
        let at = rng.gen_range(0..2_000);
        out.push((at, Fault::Partition(c)));
        out.push((at + rng.gen_range(100..800), Fault::Repair(c)));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

fn knobs(unmounted: bool) -> ModelKnobs {
    crate::profiles::scratchpad::explore::run::knobs(unmounted).1
}

/// Runs one seed's world against the reference (or a mutant) and checks it with the oracle.
pub fn run_world(seed: u64, mutant: Option<ScratchpadMutant>) -> WorldResult {
    run_world_taking(seed, mutant, &Declared::defaults())
}

/// As [`run_world`], the reference taking `variants` and the oracle following them.
pub fn run_world_taking(
    seed: u64,
    mutant: Option<ScratchpadMutant>,
    variants: &Declared,
) -> WorldResult {
    let alternatives = crate::profiles::scratchpad::variants::alternatives(variants);
    let master = MasterSeed(seed);
    let tmp = tidemark_sim::owner::tempdir_in(&scratch_base(), "tidemark-world-")
        .expect("a temporary directory");
    let handed_root =
        tidemark_sim::confine::Handed::make(tmp.path(), "root", "root").expect("a scratch root");
    let handed_workdir =
        tidemark_sim::confine::Handed::make(tmp.path(), "workdir", "working directory")
            .expect("a working directory");
    let (root, workdir) = (
        handed_root.path().to_path_buf(),
        handed_workdir.path().to_path_buf(),
    );
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).expect("a scratch directory");
    std::fs::write(outside.join("secret.txt"), "outside the root").expect("the outside file");
    crate::profiles::scratchpad::explore::run::plant_foreign(&root);
    // One world in ten runs unmounted (SP-1.3).
    let unmounted = master.stream("world-mount").gen_bool(0.1);
    let mk = knobs(unmounted);
    let mut cfg = ScratchpadConfig::with_root(if unmounted {
        std::path::PathBuf::new()
    } else {
        root.clone()
    });
    cfg.working_dir = workdir.clone();
    cfg.session_cap_bytes = mk.session_cap_bytes;
    cfg.requester_ceiling_bytes = mk.requester_ceiling_bytes;
    cfg.max_file_bytes = mk.max_file_bytes;
    cfg.mutant = mutant;
    cfg.alternatives = alternatives.clone();

    let clock = WorldClock::default();
    let log: Log = Arc::default();
    let seen: Seen = Arc::default();
    let workers_left = Arc::new(AtomicUsize::new(CLIENTS));
    let heal = Arc::new(AtomicBool::new(false));

    let mut sim = crate::world::builder(
        master.stream("turmoil").next_u64(),
        Duration::from_millis(15),
    )
    .build();
    {
        let (cfg, clock, log) = (cfg.clone(), clock.clone(), log.clone());
        sim.host(PAD, move || serve(cfg.clone(), clock.clone(), log.clone()));
    }
    for c in 0..CLIENTS {
        let ops = client_ops(master, c);
        let (seen, left) = (seen.clone(), workers_left.clone());
        sim.client(format!("c{c}"), async move {
            for (seq, (pause_ms, op)) in ops.into_iter().enumerate() {
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                let request = op.request(c * 1000 + seq).expect("a call");
                let got = tokio::time::timeout(CALL_TIMEOUT, call(PAD, PORT, c, seq, request))
                    .await
                    .ok()
                    .and_then(Result::ok);
                lock(&seen).push((c, seq, got));
            }
            left.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        });
    }
    {
        // The auditor waits for healing, lets the sweeper's timer run, then lists every session.
        let (seen, heal) = (seen.clone(), heal.clone());
        sim.client("auditor", async move {
            while !heal.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(SWEEPER_POLL * 3).await;
            let mut seq = 0;
            for who in 0..WHO.len() as u8 {
                for place in 0..PLACES.len() as u8 {
                    let request = Request::List {
                        caller: caller(who, place),
                        path: None,
                    };
                    let got = tokio::time::timeout(CALL_TIMEOUT, call(PAD, PORT, 99, seq, request))
                        .await
                        .ok()
                        .and_then(Result::ok);
                    lock(&seen).push((99, seq, got));
                    seq += 1;
                }
            }
            Ok(())
        });
    }

    let schedule = faults(master);
    let mut next_fault = 0;
    let mut crashed = false;
    let mut healed = false;
    let mut steps = 0u64;
    let mut trace = Trace::new();
    let mut failure = loop {
        let elapsed_ms = sim.elapsed().as_millis() as u64;
        while !healed && next_fault < schedule.len() && schedule[next_fault].0 <= elapsed_ms {
            let (_, f) = &schedule[next_fault];
            match f {
                Fault::Jump(ms) => clock.jump(*ms),
                Fault::Bounce => {
                    sim.bounce(PAD);
                    crashed = false;
                }
                Fault::Crash => {
                    sim.crash(PAD);
                    crashed = true;
                }
                Fault::Partition(c) => sim.partition(format!("c{c}"), PAD),
                Fault::Repair(c) => sim.repair(format!("c{c}"), PAD),
                Fault::PlantLink { who, place, path } => {
                    let c = caller(*who, *place);
                    let rel: Vec<String> = crate::profiles::scratchpad::explore::ops::LINK_PATHS
                        [*path as usize]
                        .split('/')
                        .map(String::from)
                        .collect();
                    if !unmounted && can_plant(&root, &names_for(&cfg, &context_of(&c)), &rel) {
                        let now = EPOCH.plus_ms(clock.rel_at(elapsed_ms));
                        let ctx = context_of(&c);
                        // The world's host is the reference in process: its root is the
                        // harness's own, opened here without following a link all the same.
                        // What stands in the way is the implementation's divergence, which the
                        // oracle sees at the next read; the link is then not planted.
                        let (session, requester) = names_for(&cfg, &ctx);
                        let planted = tidemark_sim::confine::Dir::open(&root).and_then(|root| {
                            crate::profiles::scratchpad::explore::run::plant_link_on_disk(
                                &root,
                                &outside,
                                (&session, &requester),
                                &rel,
                                now,
                            )
                        });
                        if let Err(e) = planted {
                            trace.record(clock.rel_at(elapsed_ms), format!("no link planted: {e}"));
                            continue;
                        }
                        lock(&log).push(Applied::Plant {
                            at_ms: now.as_millis() - EPOCH.as_millis(),
                            caller: c,
                            path: rel,
                        });
                    }
                }
            }
            trace.record(clock.rel_at(elapsed_ms), format!("fault {f:?}"));
            next_fault += 1;
        }
        if !healed && workers_left.load(Ordering::SeqCst) == 0 {
            // Everything heals: links repaired, the host up, and time past the longest timer.
            for c in 0..CLIENTS {
                sim.repair(format!("c{c}"), PAD);
            }
            if crashed {
                sim.bounce(PAD);
            }
            clock.jump(mk.thread_quiet_ms + mk.sweep_interval_ms);
            trace.record(clock.rel_at(elapsed_ms), "heal");
            healed = true;
            heal.store(true, Ordering::SeqCst);
        }
        if let ControlFlow::Break(end) = crate::world::step(&mut sim, &mut steps) {
            break end;
        }
    };
    let simulated_ms = clock.rel_outside(&sim);
    drop(sim);
    let mut model_state = Vec::new();
    if failure.is_none() {
        let mut model = ScratchpadModel::new(ModelKnobs {
            alternatives: alternatives.clone(),
            ..knobs(unmounted)
        });
        let mut focus = Focus::default();
        failure = check(&mut model, &mut focus, &log, &seen, &mut trace).err();
        if failure.is_some() {
            model_state = crate::html::bounded_lines(
                model.state_lines(focus.caller.as_ref(), EPOCH.as_millis() + focus.at_ms),
            );
        }
    }
    if failure.is_none() {
        failure =
            crate::profiles::scratchpad::explore::run::check_disk(&handed_root, &handed_workdir)
                .err()
                .map(|d| format!("{}: expected {}, got {}", d.op, d.expected, d.actual));
    }
    WorldResult {
        trace,
        failure,
        simulated_ms,
        steps,
        model_state,
    }
}

/// The entry of the log the oracle was judging: its caller, if a call, and its time.
#[derive(Default)]
struct Focus {
    caller: Option<Caller>,
    at_ms: i64,
}

/// Replays the server's log through the oracle; checks what clients saw against it; checks
/// liveness at the end.
fn check(
    model: &mut ScratchpadModel,
    focus: &mut Focus,
    log: &Log,
    seen: &Seen,
    trace: &mut Trace,
) -> Result<(), String> {
    let log = lock(log).clone();
    let mut last_at = 0;
    for entry in &log {
        *focus = match entry {
            Applied::Call { at_ms, request, .. } => Focus {
                caller: request.caller().cloned(),
                at_ms: *at_ms,
            },
            Applied::Plant { at_ms, caller, .. } => Focus {
                caller: Some(caller.clone()),
                at_ms: *at_ms,
            },
            Applied::Start { at_ms, .. } | Applied::Sweep { at_ms, .. } => Focus {
                caller: None,
                at_ms: *at_ms,
            },
        };
        match entry {
            Applied::Start { at_ms, swept } => {
                model.stop();
                let expected = model.apply(EPOCH.as_millis() + at_ms, &Request::Start);
                trace.record(*at_ms, format!("start -> swept [{}]", swept.join(", ")));
                if expected
                    != (Outcome::Swept {
                        swept: swept.clone(),
                    })
                {
                    return Err(format!(
                        "startup sweep at +{at_ms}ms: expected {}, got swept [{}]",
                        expected.summary(),
                        swept.join(", ")
                    ));
                }
                last_at = *at_ms;
            }
            Applied::Sweep { at_ms, swept } => {
                let expected = model.sweep(EPOCH.as_millis() + at_ms);
                trace.record(*at_ms, format!("sweep -> [{}]", swept.join(", ")));
                if &expected != swept {
                    return Err(format!(
                        "timed sweep at +{at_ms}ms: expected [{}], got [{}]",
                        expected.join(", "),
                        swept.join(", ")
                    ));
                }
                last_at = *at_ms;
            }
            Applied::Plant {
                at_ms,
                caller,
                path,
            } => {
                model.plant_link(caller, path, EPOCH.as_millis() + at_ms);
                trace.record(
                    *at_ms,
                    format!("plant link {}:{}", caller.display(), path.join("/")),
                );
            }
            Applied::Call {
                at_ms,
                client,
                seq,
                request,
                outcome,
            } => {
                // The answer settles what the variants leave open (eviction ties).
                let expected = model.apply_seen(EPOCH.as_millis() + at_ms, request, outcome);
                let same = match (&expected, outcome) {
                    (Outcome::Refused { reason: a, .. }, Outcome::Refused { reason: b, .. }) => {
                        a == b
                    }
                    (a, b) => a == b,
                };
                trace.record(
                    *at_ms,
                    format!(
                        "c{client}#{seq} {} -> {}",
                        request.op_name(),
                        outcome.summary()
                    ),
                );
                if !same {
                    return Err(format!(
                        "client {client} request {seq} ({}) at +{at_ms}ms: expected {}, got {}",
                        request.op_name(),
                        expected.summary(),
                        outcome.summary()
                    ));
                }
                last_at = *at_ms;
            }
        }
    }
    // What a client received is what the server applied.
    for (client, seq, got) in lock(seen).iter() {
        if let Some(got) = got {
            let applied = log.iter().find_map(|e| match e {
                Applied::Call {
                    client: c,
                    seq: s,
                    outcome,
                    ..
                } if c == client && s == seq => Some(outcome),
                _ => None,
            });
            if applied != Some(got) {
                return Err(format!(
                    "client {client} request {seq} received {} but the server applied {:?}",
                    got.summary(),
                    applied.map(Outcome::summary)
                ));
            }
        }
    }
    // Liveness: after healing and several sweeper polls, nothing the model expired remains.
    *focus = Focus {
        caller: None,
        at_ms: last_at,
    };
    let leftover = model.expired(EPOCH.as_millis() + last_at);
    if !leftover.is_empty() {
        return Err(format!(
            "liveness: sessions [{}] expired by +{last_at}ms but were never collected",
            leftover.join(", ")
        ));
    }
    let audited = lock(seen)
        .iter()
        .filter(|(c, _, got)| *c == 99 && got.is_some())
        .count();
    if audited == 0 {
        return Err("liveness: the auditor reached the healed server for no listing".into());
    }
    Ok(())
}

/// Whether a link can be planted at `rel` in `c`'s subtree: nothing there yet and no file on
/// the way (the same condition the oracle's `can_plant_link` states).
/// Whether a link can be planted at `rel` in the member directory `(session, requester)`.
fn can_plant(
    root: &std::path::Path,
    (session, requester): &(String, String),
    rel: &[String],
) -> bool {
    let mut p = root.join(session).join(requester);
    for (i, comp) in rel.iter().enumerate() {
        p.push(comp);
        match std::fs::symlink_metadata(&p) {
            Err(_) => return true,
            Ok(m) if i + 1 < rel.len() && m.is_dir() => continue,
            Ok(_) => return false,
        }
    }
    false
}

/// Mutants the world's workload cannot reach by construction (or seldom does), each with the
/// reason. The hunt reports them as skipped rather than searching in vain; each is killed by a
/// named scenario (test: `world.rs`), and those exploration reaches are found by `tidemark
/// explore --hunt`.
pub const OUT_OF_REACH: &[(&str, &str)] = &[
    (
        "empty-path-names-the-root",
        "the world's clients name files from a fixed table of well-formed paths",
    ),
    (
        "absolute-path-made-relative",
        "the world's clients name files from a fixed table of well-formed paths",
    ),
    (
        "nul-truncates-the-path",
        "the world's clients name files from a fixed table of well-formed paths",
    ),
    (
        "non-utf8-replaced",
        "the world's clients name files from a fixed table of well-formed paths",
    ),
    (
        "limits-exclusive",
        "the world's paths are far inside the depth and length limits",
    ),
    (
        "max-depth-knob-ignored",
        "the world runs with the default depth limit, where the mutant's constant is the knob's value",
    ),
    (
        "content-as-text",
        "the world's clients write ASCII",
    ),
    (
        "refused-write-leaves-its-directories",
        "seldom in the world's reach: only a write the ceiling refuses into directories that do not exist yet shows it, and the world's writes seldom meet the ceiling; exploration, whose ceiling is small, finds it",
    ),
    (
        "write-restamps-its-directories",
        "seldom in the world's reach: it moves only an emptied session's time, after an overwrite in it; exploration finds it",
    ),
    (
        "list-of-a-file-is-empty",
        "the world's clients list whole sessions, never one path",
    ),
    (
        "equal-times-by-write-order",
        "world time moves at least a millisecond between two requests, so no two files share a modification time",
    ),
    (
        "missing-root-created",
        crate::profiles::scratchpad::explore::MISSING_ROOT_OUT_OF_REACH,
    ),
    (
        "sweep-on-fixed-period",
        "the host's sweeper is polled each second of world time while clock jumps move minutes to days, so the two schedules collect the same sessions",
    ),
];

/// `tidemark world`: the scratchpad's world as the engine plays and hunts it.
pub const WORLD: crate::world::WorldProfile<ScratchpadMutant> = crate::world::WorldProfile {
    label: "world",
    replay: "tidemark world",
    profile: "scratchpad",
    mutants: &ScratchpadMutant::ALL,
    id: ScratchpadMutant::id,
    from_id: ScratchpadMutant::from_id,
    out_of_reach: OUT_OF_REACH,
    run: run_world_taking,
};

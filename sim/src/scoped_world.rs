//! A turmoil world for the scoped profile: the simulation tier proper.
//!
//! - Host `s3`: the in-memory S3 ([`crate::turmoil_s3`]) behind the fault wrapper, served over
//!   turmoil's network. Its contents live outside the host, so they survive a bounce.
//! - Host `app`: the scoped reference ([`ScopedStore`]) over the in-memory metadata store
//!   ([`MemoryMetadata`], committed state shared across restarts; open transactions die with
//!   the host) and an aws-sdk-s3 client reaching `s3` through turmoil. It sweeps once on start
//!   and then hourly (world time), and serves [`ScopedOp`]s as JSON lines on port 7000.
//! - Clients: three guests (sessions, files in three scopes, waits, activity) and one person
//!   deleting and re-creating sessions, agents and workspaces, all from the seed.
//! - The controller applies faults between steps from the seed: S3 errors, partly failed
//!   delete batches, the store down, `app`-`s3` partitions, `app` crashes and restarts, clock
//!   jumps of hours or days (and back). Then everything heals, time moves one sweep interval
//!   on, and liveness is checked: every obligation is done and recorded and its prefix is empty
//!   (unless its entity lives again), nothing expired without a wait keeps a file, and no row is
//!   left locked.
//!
//! The world clock is the epoch + turmoil's elapsed time + a jump offset (as in the scratchpad
//! world), so days pass in one step while the network keeps millisecond ticks. The trace is the
//! server's log in the order things were applied, with refusals by reason only (messages carry
//! transport details such as HTTP dates), so it is byte-identical for a seed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use tidemark_reference::clock::{Clock, Timestamp, DAY_MS, HOUR_MS, MINUTE_MS};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, SessionKey};
use tidemark_reference::scoped::{
    Access, ScopeSettings, ScopedConfig, ScopedError, ScopedMutant, ScopedStore, TurnSpace,
    WaitKind,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::clock::EPOCH;
use crate::real_tier::memory_s3::MemoryHandle;
use crate::real_tier::scoped_driver::{ScopedOp, ScopedOutcome, Turn, WaitKindName};
use crate::real_tier::{FaultHandle, FaultPlan};
use crate::seed::MasterSeed;
use crate::trace::Trace;
use crate::turmoil_s3::{endpoint, faulty_memory_service, serve, sim_s3_client, S3_PORT};

const APP: &str = "app";
const STORE: &str = "s3";
const PORT: u16 = 7000;
const BUCKET: &str = "tidemark";
const GUESTS: usize = 3;
const OPS_PER_CLIENT: usize = 30;
const TTL_DAYS: u32 = 7;
/// How often the sweeper looks at the world clock, in turmoil time.
const SWEEPER_POLL: Duration = Duration::from_millis(500);
const SWEEP_INTERVAL_MS: i64 = HOUR_MS;
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
const S3_TIMEOUT: Duration = Duration::from_secs(2);
const WORKSPACES: [&str; 2] = ["w1", "w2"];
const AGENTS: [&str; 2] = ["a1", "a2"];

type Log = Arc<Mutex<Vec<(i64, String)>>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The clock the app reads: epoch + turmoil elapsed + jumps.
#[derive(Clone)]
struct WorldClock {
    offset_ms: Arc<AtomicI64>,
}

impl Clock for WorldClock {
    fn now(&self) -> Timestamp {
        let elapsed = turmoil::sim_elapsed().unwrap_or_default().as_millis() as i64;
        EPOCH.plus_ms(elapsed + self.offset_ms.load(Ordering::SeqCst))
    }
}

fn rel(c: &WorldClock) -> i64 {
    c.now().as_millis() - EPOCH.as_millis()
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    client: usize,
    seq: usize,
    op: ScopedOp,
}

/// One outcome as the trace shows it: refusals by reason only.
fn summary(o: &ScopedOutcome) -> String {
    match o {
        ScopedOutcome::Refused { reason, .. } => format!("refused {reason}"),
        o => format!("{o:?}"),
    }
}

fn space(t: &Turn) -> Result<TurnSpace, ScopedError> {
    Ok(TurnSpace::new(&t.workspace, &t.agent, &t.session)?)
}

fn wait_kind(k: &WaitKindName) -> WaitKind {
    match k.0.as_str() {
        "parked" => WaitKind::Parked,
        "waiting" => WaitKind::Waiting,
        _ => WaitKind::Queued,
    }
}

/// Performs one client operation on the store.
async fn apply(store: &ScopedStore, op: &ScopedOp) -> Result<ScopedOutcome, ScopedError> {
    let settings = |agent, workspace| ScopeSettings { agent, workspace };
    Ok(match op {
        ScopedOp::CreateWorkspace {
            workspace,
            agent_access,
            workspace_access,
        } => {
            store
                .create_workspace(workspace, settings(*agent_access, *workspace_access))
                .await?;
            ScopedOutcome::Ok
        }
        ScopedOp::CreateAgent {
            workspace,
            agent,
            agent_access,
            workspace_access,
        } => {
            store
                .create_agent(workspace, agent, settings(*agent_access, *workspace_access))
                .await?;
            ScopedOutcome::Ok
        }
        ScopedOp::CreateSession { turn } => {
            store.create_session(&space(turn)?).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::Activity { turn } => {
            store.record_activity(&space(turn)?).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::AddWait { turn, kind, id } => {
            store.add_wait(&space(turn)?, wait_kind(kind), id).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::RemoveWait { turn, kind, id } => {
            store
                .remove_wait(&space(turn)?, wait_kind(kind), id)
                .await?;
            ScopedOutcome::Ok
        }
        ScopedOp::Write {
            turn,
            path,
            content,
        } => ScopedOutcome::Written {
            path: store
                .write(&space(turn)?, path, content.as_bytes().to_vec())
                .await?
                .guest_path(),
        },
        ScopedOp::Read { turn, path } => ScopedOutcome::Content {
            content: String::from_utf8_lossy(&store.read(&space(turn)?, path).await?).into(),
        },
        ScopedOp::ReadText { turn, path } => ScopedOutcome::Text {
            text: store.read_text(&space(turn)?, path).await?,
        },
        ScopedOp::List { turn, prefix } => ScopedOutcome::Listing {
            paths: store
                .list(&space(turn)?, prefix.as_deref())
                .await?
                .into_iter()
                .map(|f| f.path)
                .collect(),
        },
        ScopedOp::Delete { turn, path } => {
            store.delete(&space(turn)?, path).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::DeleteSession { turn } => {
            store.delete_session(&space(turn)?).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::DeleteAgent { workspace, agent } => {
            store.delete_agent(workspace, agent).await?;
            ScopedOutcome::Ok
        }
        ScopedOp::DeleteWorkspace { workspace } => {
            store.delete_workspace(workspace).await?;
            ScopedOutcome::Ok
        }
        other => {
            return Err(ScopedError::Config(format!(
                "the world does not serve {other:?}"
            )))
        }
    })
}

/// The `app` host: a store over the shared metadata, a startup sweep, the hourly sweeper, and
/// the JSON-lines server.
async fn serve_app(
    meta: MemoryMetadata,
    cfg: ScopedConfig,
    clock: WorldClock,
    log: Log,
) -> turmoil::Result {
    let s3 = sim_s3_client(&endpoint(STORE, S3_PORT), S3_TIMEOUT);
    // The bucket exists after the first boot; a later boot's attempt is refused and ignored.
    let _ = s3.create_bucket().bucket(BUCKET).send().await;
    let meta: Arc<dyn Metadata> = Arc::new(meta);
    let store = Arc::new(
        ScopedStore::with_metadata(s3, meta, cfg, Arc::new(clock.clone()))
            .await
            .map_err(|e| e.to_string())?,
    );
    let sweep = {
        let (store, log, clock) = (store.clone(), log.clone(), clock.clone());
        async move |what: &str| {
            let started = rel(&clock);
            let line = match store.sweep().await {
                Ok(r) => format!(
                    "{what} from {started}: {} sessions, {} obligations, {} retried",
                    r.sessions_swept,
                    r.obligations_completed,
                    r.sessions_retried_later + r.obligations_retried_later
                ),
                Err(e) => format!("{what} from {started}: refused {}", e.kind()),
            };
            lock(&log).push((rel(&clock), line));
        }
    };
    lock(&log).push((rel(&clock), "app starts".into()));
    sweep("startup sweep").await;
    {
        let clock = clock.clone();
        tokio::spawn(async move {
            let mut next = rel(&clock) + SWEEP_INTERVAL_MS;
            loop {
                tokio::time::sleep(SWEEPER_POLL).await;
                if rel(&clock) >= next {
                    sweep("sweep").await;
                    next = rel(&clock) + SWEEP_INTERVAL_MS;
                }
            }
        });
    }
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let (store, log, clock) = (store.clone(), log.clone(), clock.clone());
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            if reader.read_line(&mut line).await.is_err() {
                return;
            }
            let Ok(env) = serde_json::from_str::<Envelope>(&line) else {
                return;
            };
            let outcome = match apply(&store, &env.op).await {
                Ok(o) => o,
                Err(e) => ScopedOutcome::Refused {
                    reason: e.kind().to_string(),
                    message: String::new(),
                },
            };
            lock(&log).push((
                rel(&clock),
                format!(
                    "c{} #{} {} => {}",
                    env.client,
                    env.seq,
                    serde_json::to_string(&env.op).unwrap_or_default(),
                    summary(&outcome)
                ),
            ));
            let mut out = serde_json::to_string(&outcome).unwrap_or_default();
            out.push('\n');
            let _ = reader.get_mut().write_all(out.as_bytes()).await;
        });
    }
}

async fn call(client: usize, seq: usize, op: ScopedOp) -> std::io::Result<ScopedOutcome> {
    let mut stream = turmoil::net::TcpStream::connect((APP, PORT)).await?;
    let mut line = serde_json::to_string(&Envelope { client, seq, op })?;
    line.push('\n');
    stream.write_all(line.as_bytes()).await?;
    let mut reader = BufReader::new(stream);
    let mut answer = String::new();
    reader.read_line(&mut answer).await?;
    serde_json::from_str(&answer)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

fn turn(ws: &str, agent: &str, session: &str) -> Turn {
    Turn::new(ws, agent, session)
}

/// Guest `c`'s session `j` lives in a fixed workspace and agent.
fn guest_turn(c: usize, j: usize) -> Turn {
    turn(
        WORKSPACES[(c + j) % WORKSPACES.len()],
        AGENTS[j % AGENTS.len()],
        &format!("s{c}{j}"),
    )
}

const SESSIONS_PER_GUEST: usize = 3;

/// A guest's operations: `(pause in ms, op)`. It opens its sessions first.
fn guest_ops(master: MasterSeed, c: usize) -> Vec<(u64, ScopedOp)> {
    let mut rng = master.stream(&format!("scoped-world-guest-{c}"));
    let paths = [
        "session/notes.md",
        "session/upload.pdf",
        "agent/memory.md",
        "workspace/ref.md",
    ];
    let mut out: Vec<(u64, ScopedOp)> = (0..SESSIONS_PER_GUEST)
        .map(|j| {
            (
                5,
                ScopedOp::CreateSession {
                    turn: guest_turn(c, j),
                },
            )
        })
        .collect();
    for n in 0..OPS_PER_CLIENT {
        let t = guest_turn(c, rng.gen_range(0..SESSIONS_PER_GUEST));
        let path = paths[rng.gen_range(0..paths.len())].to_string();
        let op = match rng.gen_range(0..13) {
            0 => ScopedOp::CreateSession { turn: t },
            1..=4 => ScopedOp::Write {
                turn: t,
                path,
                content: format!("c{c} n{n}"),
            },
            5 => ScopedOp::Read { turn: t, path },
            6 => ScopedOp::ReadText { turn: t, path },
            7 => ScopedOp::List {
                turn: t,
                prefix: None,
            },
            8 => ScopedOp::Delete { turn: t, path },
            9 => ScopedOp::Activity { turn: t },
            10 => ScopedOp::AddWait {
                turn: t,
                kind: WaitKindName("queued".into()),
                id: format!("m{}", rng.gen_range(0..2)),
            },
            _ => ScopedOp::RemoveWait {
                turn: t,
                kind: WaitKindName("queued".into()),
                id: format!("m{}", rng.gen_range(0..2)),
            },
        };
        out.push((rng.gen_range(5..200), op));
    }
    out
}

/// The person deleting (and re-creating) sessions, agents and workspaces.
fn admin_ops(master: MasterSeed) -> Vec<(u64, ScopedOp)> {
    let mut rng = master.stream("scoped-world-admin");
    let mut out = Vec::new();
    for _ in 0..OPS_PER_CLIENT / 3 {
        let ws = WORKSPACES[rng.gen_range(0..WORKSPACES.len())].to_string();
        let agent = AGENTS[rng.gen_range(0..AGENTS.len())].to_string();
        let op = match rng.gen_range(0..8) {
            0 | 1 => ScopedOp::DeleteSession {
                turn: guest_turn(
                    rng.gen_range(0..GUESTS),
                    rng.gen_range(0..SESSIONS_PER_GUEST),
                ),
            },
            2 => ScopedOp::DeleteAgent {
                workspace: ws,
                agent,
            },
            3 => ScopedOp::DeleteWorkspace { workspace: ws },
            4 | 5 => ScopedOp::CreateWorkspace {
                workspace: ws,
                agent_access: None,
                workspace_access: Some(Access::ReadWrite),
            },
            _ => ScopedOp::CreateAgent {
                workspace: ws,
                agent,
                agent_access: None,
                workspace_access: None,
            },
        };
        out.push((rng.gen_range(50..600), op));
    }
    out
}

#[derive(Clone, Debug)]
enum Fault {
    Jump(i64),
    S3(FaultPlan),
    S3Heal,
    Partition,
    Repair,
    Crash,
    Restart,
}

/// The fault schedule of a seed, in turmoil milliseconds.
fn faults(master: MasterSeed) -> Vec<(u64, Fault)> {
    let mut rng = master.stream("scoped-world-faults");
    let mut out = Vec::new();
    let plan = |error_rate: f64, delete_key_failure_rate: f64, down: bool| FaultPlan {
        down,
        error_rate,
        delete_key_failure_rate,
        latency: Duration::ZERO,
        fail_requests: Vec::new(),
    };
    for _ in 0..rng.gen_range(6..14) {
        let at = rng.gen_range(200..5_000);
        let days = rng.gen_range(1..4) * DAY_MS + rng.gen_range(0..24) * HOUR_MS;
        out.push((at, Fault::Jump(days)));
    }
    if rng.gen_bool(0.3) {
        out.push((rng.gen_range(200..5_000), Fault::Jump(-2 * HOUR_MS)));
    }
    for _ in 0..rng.gen_range(1..4) {
        let at = rng.gen_range(200..4_500);
        let f = match rng.gen_range(0..3) {
            0 => plan(0.2, 0.0, false),
            1 => plan(0.0, 0.3, false),
            _ => plan(0.0, 0.0, true),
        };
        out.push((at, Fault::S3(f)));
        out.push((at + rng.gen_range(100..1_000), Fault::S3Heal));
    }
    for _ in 0..rng.gen_range(0..3) {
        let at = rng.gen_range(200..4_500);
        out.push((at, Fault::Partition));
        out.push((at + rng.gen_range(100..1_500), Fault::Repair));
    }
    for _ in 0..rng.gen_range(0..3) {
        let at = rng.gen_range(200..4_500);
        out.push((at, Fault::Crash));
        out.push((at + rng.gen_range(50..800), Fault::Restart));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

/// What one seed's world did.
pub struct ScopedWorldResult {
    pub trace: Trace,
    pub failure: Option<String>,
    pub simulated_ms: i64,
    pub steps: u64,
}

/// Runs one seed's scoped world (the reference, or a mutant) and checks liveness after heal.
pub fn run_scoped_world(seed: u64, mutant: Option<ScopedMutant>) -> ScopedWorldResult {
    let master = MasterSeed(seed);
    let offset = Arc::new(AtomicI64::new(0));
    let clock = WorldClock {
        offset_ms: offset.clone(),
    };
    let log: Log = Arc::default();
    let meta = MemoryMetadata::new();
    let mut cfg = ScopedConfig::new(BUCKET);
    cfg.session_file_ttl_days = TTL_DAYS;
    cfg.mutant = mutant;
    // LastModified is not what the scoped profile measures age by; a fixed clock keeps the
    // store's answers independent of the world's jumps.
    let s3_clock = Arc::new(tidemark_reference::clock::ManualClock::starting_at(EPOCH));
    let (service, objects, s3_faults): (_, MemoryHandle, FaultHandle) =
        faulty_memory_service(s3_clock, master.stream("scoped-world-s3").next_u64());
    let clients_left = Arc::new(AtomicUsize::new(GUESTS + 1));
    let healed = Arc::new(AtomicBool::new(false));
    let audited = Arc::new(AtomicBool::new(false));
    let heal_at = Arc::new(AtomicI64::new(i64::MAX));

    let mut sim = turmoil::Builder::new()
        .epoch(EPOCH.to_system_time())
        .rng_seed(master.stream("scoped-world-turmoil").next_u64())
        .simulation_duration(Duration::from_secs(600))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(10))
        .build();
    sim.host(STORE, move || serve(service.clone(), S3_PORT));
    {
        let (meta, cfg, clock, log) = (meta.clone(), cfg.clone(), clock.clone(), log.clone());
        sim.host(APP, move || {
            serve_app(meta.clone(), cfg.clone(), clock.clone(), log.clone())
        });
    }
    // Setup, before any guest: both workspaces (workspace scope writable) and their agents.
    let setup: Vec<ScopedOp> = WORKSPACES
        .iter()
        .flat_map(|ws| {
            std::iter::once(ScopedOp::CreateWorkspace {
                workspace: ws.to_string(),
                agent_access: None,
                workspace_access: Some(Access::ReadWrite),
            })
            .chain(AGENTS.iter().map(|a| ScopedOp::CreateAgent {
                workspace: ws.to_string(),
                agent: a.to_string(),
                agent_access: None,
                workspace_access: None,
            }))
        })
        .collect();
    let set_up = Arc::new(AtomicBool::new(false));
    let mut clients: Vec<(String, Vec<(u64, ScopedOp)>)> = (0..GUESTS)
        .map(|c| (format!("g{c}"), guest_ops(master, c)))
        .collect();
    clients.push(("admin".into(), admin_ops(master)));
    for (c, (name, ops)) in clients.into_iter().enumerate() {
        let (left, set_up, setup) = (clients_left.clone(), set_up.clone(), setup.clone());
        sim.client(name, async move {
            if c == 0 {
                // The app is still starting: each setup call is retried until it is answered.
                for (seq, op) in setup.into_iter().enumerate() {
                    while !matches!(
                        tokio::time::timeout(CALL_TIMEOUT, call(99, seq, op.clone())).await,
                        Ok(Ok(_))
                    ) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                set_up.store(true, Ordering::SeqCst);
            }
            while !set_up.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            for (seq, (pause_ms, op)) in ops.into_iter().enumerate() {
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                let _ = tokio::time::timeout(CALL_TIMEOUT, call(c, seq, op)).await;
            }
            left.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        });
    }
    {
        // Waits for the heal, then for the sweeper's next pass (one interval of world time,
        // which the controller jumps, plus its poll).
        let (healed, audited, heal_at, log) = (
            healed.clone(),
            audited.clone(),
            heal_at.clone(),
            log.clone(),
        );
        sim.client("auditor", async move {
            while !healed.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            // Until a sweep that started after the heal has finished (a sweep caught in the
            // faults may finish first), or a minute of network time.
            for _ in 0..600 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let at = heal_at.load(Ordering::SeqCst);
                if lock(&log)
                    .iter()
                    .any(|(_, l)| sweep_started(l).is_some_and(|s| s >= at))
                {
                    break;
                }
            }
            audited.store(true, Ordering::SeqCst);
            Ok(())
        });
    }

    let schedule = faults(master);
    let mut next_fault = 0;
    let mut crashed = false;
    // How far the clock stands behind the latest time it has shown.
    let mut rewound_ms = 0i64;
    let mut nudge_at = u64::MAX;
    let mut steps = 0u64;
    let mut trace = Trace::new();
    let mut failure = None;
    loop {
        let elapsed_ms = sim.elapsed().as_millis() as u64;
        let now = |offset: &AtomicI64| elapsed_ms as i64 + offset.load(Ordering::SeqCst);
        while !healed.load(Ordering::SeqCst)
            && next_fault < schedule.len()
            && schedule[next_fault].0 <= elapsed_ms
        {
            let (_, f) = &schedule[next_fault];
            match f {
                Fault::Jump(ms) => {
                    offset.fetch_add(*ms, Ordering::SeqCst);
                    rewound_ms = (rewound_ms - ms).max(0);
                }
                Fault::S3(plan) => s3_faults.set_plan(plan.clone()),
                Fault::S3Heal => s3_faults.heal(),
                Fault::Partition => sim.partition(APP, STORE),
                Fault::Repair => sim.repair(APP, STORE),
                Fault::Crash => {
                    if !crashed {
                        sim.crash(APP);
                        crashed = true;
                    }
                }
                Fault::Restart => {
                    if crashed {
                        sim.bounce(APP);
                        crashed = false;
                    }
                }
            }
            lock(&log).push((now(&offset), format!("fault {f:?}")));
            next_fault += 1;
        }
        if !healed.load(Ordering::SeqCst) && clients_left.load(Ordering::SeqCst) == 0 {
            s3_faults.heal();
            sim.repair(APP, STORE);
            if crashed {
                sim.bounce(APP);
                crashed = false;
            }
            // One sweep interval (and a minute) past the latest time the clock has shown: the
            // sweeper's next pass is due even after a backwards jump.
            offset.fetch_add(SWEEP_INTERVAL_MS + MINUTE_MS + rewound_ms, Ordering::SeqCst);
            lock(&log).push((now(&offset), "heal".into()));
            heal_at.store(now(&offset), Ordering::SeqCst);
            nudge_at = elapsed_ms + 3_000;
            healed.store(true, Ordering::SeqCst);
        }
        if healed.load(Ordering::SeqCst)
            && elapsed_ms >= nudge_at
            && !lock(&log)
                .iter()
                .any(|(_, l)| sweep_started(l).is_some_and(|s| s >= heal_at.load(Ordering::SeqCst)))
        {
            // A sweep caught in the faults finished after the heal and set the timer an hour
            // on from then: let that hour pass too.
            offset.fetch_add(SWEEP_INTERVAL_MS, Ordering::SeqCst);
            lock(&log).push((now(&offset), "an hour passes".into()));
            nudge_at = elapsed_ms + 3_000;
        }
        if audited.load(Ordering::SeqCst) {
            break;
        }
        steps += 1;
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                failure = Some(format!("the world failed: {e}"));
                break;
            }
        }
    }
    let simulated_ms = sim.elapsed().as_millis() as i64 + offset.load(Ordering::SeqCst);
    // Dropping the world drops the hosts, and with them any transaction still open.
    drop(sim);
    let log = lock(&log).clone();
    for (at, line) in &log {
        trace.record(*at, line);
    }
    if failure.is_none() {
        failure = liveness(&meta, &objects, &log, heal_at.load(Ordering::SeqCst)).err();
    }
    ScopedWorldResult {
        trace,
        failure,
        simulated_ms,
        steps,
    }
}

/// When a sweep line's sweep started (world ms), if it is a sweep line.
fn sweep_started(line: &str) -> Option<i64> {
    let rest = line
        .strip_prefix("sweep from ")
        .or_else(|| line.strip_prefix("startup sweep from "))?;
    rest.split(':').next()?.parse().ok()
}

/// After heal and one sweep: every obligation done, recorded and emptied (unless its entity
/// lives again), nothing expired without a wait keeps a file, nothing left locked.
fn liveness(
    meta: &MemoryMetadata,
    objects: &MemoryHandle,
    log: &[(i64, String)],
    heal_at: i64,
) -> Result<(), String> {
    let after: Vec<(i64, &String)> = log
        .iter()
        .filter_map(|(_, l)| sweep_started(l).filter(|s| *s >= heal_at).map(|s| (s, l)))
        .collect();
    let Some((swept_at, _)) = after.first() else {
        return Err("no sweep started after the heal".into());
    };
    let swept_at = *swept_at;
    if let Some((_, l)) = after.iter().find(|(_, l)| l.contains("refused")) {
        return Err(format!("a sweep after the heal failed: {l}"));
    }
    if meta.locked_rows() != 0 {
        return Err(format!(
            "{} rows are still locked once every host is gone",
            meta.locked_rows()
        ));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let (obligations, records) = rt.block_on(async {
        (
            meta.obligations().await.unwrap_or_default(),
            meta.records().await.unwrap_or_default(),
        )
    });
    let sessions: BTreeMap<SessionKey, (i64, Option<i64>)> = meta
        .sessions()
        .into_iter()
        .map(|(k, last, swept)| (k, (last, swept)))
        .collect();
    let recorded: std::collections::BTreeSet<i64> = records.iter().map(|r| r.deletion_id).collect();
    for o in &obligations {
        if o.done_at_ms.is_none() {
            return Err(format!(
                "obligation {} ({}) is still pending",
                o.id, o.prefix
            ));
        }
        if !recorded.contains(&o.id) {
            return Err(format!(
                "obligation {} ({}) is done without a record",
                o.id, o.prefix
            ));
        }
        let lives_again = match o.entity_kind.as_str() {
            "session" => sessions.keys().any(|k| o.prefix == k.prefix()),
            "agent" => {
                let mut parts = o.prefix.split('/').skip(1);
                match (parts.next(), parts.next()) {
                    (Some(ws), Some(a)) => meta.agent_row_exists(ws, a),
                    _ => false,
                }
            }
            _ => meta.workspace_row_exists(&o.entity_id),
        };
        let left = objects.keys(BUCKET, &o.prefix);
        if !lives_again && !left.is_empty() {
            return Err(format!(
                "obligation {} ({}) is recorded done but {} objects remain: {:?}",
                o.id,
                o.prefix,
                left.len(),
                &left[..left.len().min(3)]
            ));
        }
    }
    let cutoff = EPOCH.as_millis() + swept_at - i64::from(TTL_DAYS) * DAY_MS;
    for (k, (last, _)) in &sessions {
        if *last <= cutoff && !meta.has_wait(k) {
            let left = objects.keys(BUCKET, &k.prefix());
            if !left.is_empty() {
                return Err(format!(
                    "session {} expired (last activity {}) but keeps {:?}",
                    k.prefix(),
                    last - EPOCH.as_millis(),
                    left
                ));
            }
        }
    }
    // Every object belongs to a live row: what a deleted row (or its cascade) owned must have
    // been recorded as an obligation and swept.
    for key in objects.keys(BUCKET, "") {
        let parts: Vec<&str> = key.split('/').collect();
        let live = match parts.as_slice() {
            ["sessions", ws, a, s, ..] => sessions.contains_key(&SessionKey::new(ws, a, s)),
            ["agents", ws, a, ..] => meta.agent_row_exists(ws, a),
            ["workspaces", ws, ..] | ["skills", ws, ..] => meta.workspace_row_exists(ws),
            _ => false,
        };
        if !live {
            return Err(format!(
                "{key} outlives its row, and no obligation removed it"
            ));
        }
    }
    Ok(())
}

/// `tidemark world --profile scoped`: seeds through the scoped world, optionally twice each to
/// compare trace hashes. Returns whether every seed passed.
pub fn command(
    seeds: u64,
    first_seed: u64,
    mutant: Option<ScopedMutant>,
    check_determinism: bool,
) -> bool {
    let started = std::time::Instant::now();
    let mut failed = 0u64;
    let mut identical = 0u64;
    let mut simulated_ms = 0i64;
    let mut steps = 0u64;
    for seed in first_seed..first_seed + seeds {
        let r = run_scoped_world(seed, mutant);
        simulated_ms += r.simulated_ms;
        steps += r.steps;
        if check_determinism {
            let again = run_scoped_world(seed, mutant);
            if again.trace.hash() == r.trace.hash() {
                identical += 1;
            } else {
                failed += 1;
                println!(
                    "NONDETERMINISTIC  scoped world seed {seed}: {} vs {}",
                    r.trace.hash(),
                    again.trace.hash()
                );
                continue;
            }
        }
        if let Some(f) = &r.failure {
            failed += 1;
            let m = mutant
                .map(|m| format!(" --mutant {}", m.id()))
                .unwrap_or_default();
            println!("FAIL  scoped world seed {seed}: {f}");
            for l in r.trace.tail(8) {
                println!("    {l}");
            }
            println!("  replay: tidemark world --profile scoped --first-seed {seed} --seeds 1{m}");
        }
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    println!(
        "{seeds} scoped world seeds in {secs:.2}s: {} turmoil steps, {:.0} simulated days",
        steps,
        simulated_ms as f64 / DAY_MS as f64
    );
    if check_determinism {
        println!("{identical}/{seeds} scoped world seeds replay byte-identically");
    }
    println!("{} passed, {} failed", seeds - failed, failed);
    failed == 0
}

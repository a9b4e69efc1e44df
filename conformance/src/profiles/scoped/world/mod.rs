//! A turmoil world for the scoped profile: the simulation tier proper.
//!
//! - Host `s3`: the in-memory S3 ([`tidemark_sim::turmoil_s3`]) behind the fault wrapper, served over
//!   turmoil's network. Its contents live outside the host, so they survive a bounce.
//! - Host `app`: the scoped reference ([`ScopedStore`]) over the in-memory metadata store
//!   ([`MemoryMetadata`], committed state shared across restarts; open transactions die with
//!   the host) and the S3 client (rusty-s3 over hyper) reaching `s3` through turmoil. It sweeps once on start
//!   and then hourly (world time), serves [`ScopedOp`]s as JSON lines on port 7000, and the
//!   reference's people's files API (SPEC part SF: its axum routes, [`PeopleRoutes`]) over
//!   HTTP on port 8080, on the same store and so on the world clock. Its tokens live in the
//!   process, minted with a secret of each boot's: a restart forgets them.
//! - Clients: three guests and one person deleting and re-creating sessions, agents and the
//!   exposed workspace, all from the seed. Each guest solely owns a kept session (a wait from
//!   the start, idle until the end), an active one and its agent, a shut session (its agent's
//!   access to agent and workspace scope is `none`) in the home workspace nobody deletes from,
//!   and an exposed session the deleter may remove. It keeps an exact model of what it wrote
//!   and checks every answer against it as it arrives: the safety oracle (`Guest::observe`).
//! - Host `people`: a person per guest ([`people`]), in the conversation of its guest's home
//!   sessions, with agent-files and workspace-files authorities from the seed, sending
//!   uploads, downloads, removals and listings over turmoil's network with hyper, with
//!   credentials `app` mints (asked for again after a restart): URL spellings of SF-3 and the
//!   hostile table, look-alike scopes, bodies at and past `max_upload_bytes`, agent and
//!   workspace scope as their authorities allow or refuse, and requests that must learn
//!   nothing (without credentials, as another workspace's person, to no session). A person
//!   shares its guest's model ([`person_oracle`]): what it uploads is what the agent lists and
//!   reads by the same name and bytes, and the agent's files are what it downloads and lists;
//!   each read takes what a concurrent writer may have sent meanwhile ([`paths`]).
//! - The admin also erases the exposed workspace or one of its agents now and then
//!   ([`erasures`], SPEC SL-4): an accepted erasure must have deleted its subject's row, a
//!   create of that subject is refused while its erasure is pending, and after the heal every
//!   erasure is met and proved (its proof naming each key once, under its subject, none left).
//! - The controller applies faults between steps from the seed: S3 errors, partly failed
//!   delete batches, the store down, `app`-`s3` and `app`-`people` partitions, `app` crashes
//!   and restarts, clock jumps of hours or days (and back), a slow store, a week passing while
//!   the store fails deletions. Then everything heals, time moves one sweep interval on, and
//!   liveness is checked ([`liveness`]): every obligation is done and recorded and its prefix
//!   is empty (unless its entity lives again), nothing expired without a wait keeps a file
//!   (people's uploads are swept with their session), no row is left locked, and every file
//!   the models still promise (an upload counts as activity) is in the bucket.
//! - Where the oracle knows a sweep claimed a session ([`claims`]: it ran to its end while the
//!   session was certainly idle for the TTL), that session's earlier files are gone for every
//!   later request, an interrupted sweep's leftovers included (SC-5.5, SF-4.1).
//!
//! The world clock, the JSON-lines wire and the seed loop are the engine's (`world/`): days pass
//! in one step while the network keeps millisecond ticks. The trace is the
//! server's log in the order things were applied, with refusals by reason only (messages carry
//! transport details such as HTTP dates), and each person's request as its answer arrived (its
//! URL and the answer's shape: no header, port or date), so it is byte-identical for a seed.
//!
//! This file holds the world's constants, the hosts and the run; [`faults`] the controller's
//! faults, [`guests`] the guests' and the deleter's plans, [`oracle`] the safety model in every
//! guest, [`out_of_reach`] the mutants the world cannot reach. What the plans and the oracle
//! all name sits below them, so each file uses the others one way: [`session`] (a guest's
//! sessions and the model of one), [`names`] (what files are called and hold) and [`paths`].

mod claims;
mod erasures;
mod faults;
mod guests;
mod liveness;
mod names;
mod oracle;
mod out_of_reach;
mod paths;
mod people;
mod person_oracle;
mod person_plan;
mod session;

pub use out_of_reach::OUT_OF_REACH;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rand::RngCore;
use tidemark_reference::clock::{HOUR_MS, MINUTE_MS};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata};
use tidemark_reference::scoped::people::PeopleRoutes;
use tidemark_reference::scoped::{Access, ScopedConfig, ScopedError, ScopedMutant, ScopedStore};

use crate::profiles::scoped::contract::{ScopedOp, ScopedOutcome, Turn};
use crate::world::clock::WorldClock;
use crate::world::lock;
use crate::world::net::{serve_lines, Envelope};
use faults::{faults, Fault};
use guests::{admin_ops, guest_plan};
use liveness::{kept, liveness};
use names::content_for;
use oracle::{Curated, Guest};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::memory_s3::MemoryHandle;
use tidemark_sim::real_tier::FaultHandle;
use tidemark_sim::seed::MasterSeed;
use tidemark_sim::trace::Trace;
use tidemark_sim::turmoil_s3::{endpoint, faulty_memory_service, serve, sim_s3_client, S3_PORT};

const APP: &str = "app";
const STORE: &str = "s3";
const PORT: u16 = 7000;
const BUCKET: &str = "tidemark";
const GUESTS: usize = 3;
/// One person guest per agent guest, all on one host (their browsers behind one network:
/// a host more costs every step of the world).
const PEOPLE: usize = GUESTS;
const PEOPLE_HOST: &str = "people";
const OPS_PER_CLIENT: usize = 30;
const TTL_DAYS: u32 = 7;
/// The world's `tool_output_limit_bytes` (SPEC SL-7.1): small, so guests' results fall on both
/// sides of it cheaply.
const TOOL_OUTPUT_LIMIT_BYTES: u64 = 64;
/// The world's `max_upload_bytes` (SF-4.3's knob): small, so a body past it is cheap to send.
const MAX_UPLOAD_BYTES: u64 = 2048;
/// How often the sweeper looks at the world clock, in turmoil time.
const SWEEPER_POLL: Duration = Duration::from_millis(500);
const SWEEP_INTERVAL_MS: i64 = HOUR_MS;
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
const S3_TIMEOUT: Duration = Duration::from_secs(2);
const AGENTS: [&str; 2] = ["a1", "a2"];
/// The workspace every guest's checked sessions live in; nobody deletes anything in it.
const HOME: &str = "w1";
/// The workspace the deleter works on; guests' exposed sessions live here.
const EXPOSED: &str = "w2";
const EDITOR: &str = "editor";
const REF_PATH: &str = "workspace/ref.md";
const SKILL_NAME: &str = "tools";
const SKILL_PATH: &str = "skill/tools/README.md";
const SKILL_CONTENT: &str = "tools v1: immutable";

type Log = Arc<Mutex<Vec<(i64, String)>>>;

/// One outcome as the trace shows it: refusals by reason only.
fn summary(o: &ScopedOutcome) -> String {
    match o {
        ScopedOutcome::Refused { reason, .. } => format!("refused {reason}"),
        // Tokens are the API's own business, not the trace's.
        ScopedOutcome::Credentials { .. } => "credentials".into(),
        o => format!("{o:?}"),
    }
}

/// Skill versions by the name they were published under (the host's registry: it outlives a
/// restart, as the deployment's configuration would).
type Skills = Arc<Mutex<BTreeMap<String, String>>>;

/// Performs one client operation on the store, through the one mapping from an operation to the
/// store the process protocol's implementation side uses (`super::process::service::apply_to_store`). Clients
/// name things short (`w1`, `g0`); the store is given a UUID for each, as a real system's
/// identifiers are (the log keeps the short names, so a seed's trace does not depend on the
/// mapping), and a turn's skill names become the hashes they were published under.
async fn apply(
    store: &ScopedStore,
    skills: &Skills,
    op: &ScopedOp,
) -> Result<ScopedOutcome, ScopedError> {
    let serves = super::process::service::is_store_operation(op)
        && !matches!(op, ScopedOp::Sweep | ScopedOp::ApplyLifecycle { .. });
    if !serves {
        return Err(ScopedError::Config(format!(
            "the world does not serve {op:?}"
        )));
    }
    let op = crate::profiles::scoped::uuid_ids::op_with_uuid_ids(op, "scoped-world");
    let op = super::contract::with_skill_hashes(&op, &lock(skills));
    let outcome = super::process::service::apply_to_store(store, &op).await?;
    if let (ScopedOp::PublishSkill { name, .. }, ScopedOutcome::Published { sha256 }) =
        (&op, &outcome)
    {
        lock(skills).insert(name.clone(), sha256.clone());
    }
    Ok(outcome)
}

/// The `app` host: a store over the shared metadata, a startup sweep, the hourly sweeper, the
/// JSON-lines server, and the people's files API over the same store (its clock the world's,
/// its tokens minted with this boot's secret).
async fn serve_app(
    meta: MemoryMetadata,
    cfg: ScopedConfig,
    clock: WorldClock,
    log: Log,
    skills: Skills,
    (seed, boots, sweeps): (u64, Arc<AtomicUsize>, claims::Sweeps),
) -> turmoil::Result {
    let boot = boots.fetch_add(1, Ordering::SeqCst) + 1;
    let s3 = sim_s3_client(&endpoint(STORE, S3_PORT), S3_TIMEOUT);
    // The bucket exists after the first boot; a later boot's attempt is refused and ignored.
    let _ = s3.create_bucket(BUCKET).await;
    let meta: Arc<dyn Metadata> = Arc::new(meta);
    let store = Arc::new(
        ScopedStore::with_metadata(s3, meta, cfg, Arc::new(clock.clone()))
            .await
            .map_err(|e| e.to_string())?,
    );
    let sweep = {
        let (store, log, clock) = (store.clone(), log.clone(), clock.clone());
        // The sweeps that ran to their end, for the oracle (`claims`): not the trace's.
        let sweeps = sweeps.clone();
        async move |what: &str| {
            let started = clock.rel();
            let net_start = paths::net_ms();
            let swept = store.sweep().await;
            lock(&sweeps).push(claims::SweepRecord {
                started,
                net_start,
                net_end: paths::net_ms(),
                refused: swept.is_err(),
            });
            let line = match swept {
                Ok(r) => format!(
                    "{what} from {started}: {} sessions, {} obligations, {} retried",
                    r.sessions_swept,
                    r.obligations_completed,
                    r.sessions_retried_later + r.obligations_retried_later
                ),
                Err(e) => format!("{what} from {started}: refused {}", e.kind()),
            };
            lock(&log).push((clock.rel(), line));
        }
    };
    let routes = PeopleRoutes::new(
        Arc::new(RwLock::new(store.clone())),
        None,
        people::secret(seed, boot).as_bytes(),
    );
    tokio::spawn(people::serve_people(routes.clone()));
    lock(&log).push((clock.rel(), "app starts".into()));
    sweep("startup sweep").await;
    {
        let clock = clock.clone();
        tokio::spawn(async move {
            let mut next = clock.rel() + SWEEP_INTERVAL_MS;
            loop {
                tokio::time::sleep(SWEEPER_POLL).await;
                if clock.rel() >= next {
                    sweep("sweep").await;
                    next = clock.rel() + SWEEP_INTERVAL_MS;
                }
            }
        });
    }
    serve_lines(PORT, move |env: Envelope<ScopedOp>| {
        let (store, log, clock, skills, routes) = (
            store.clone(),
            log.clone(),
            clock.clone(),
            skills.clone(),
            routes.clone(),
        );
        async move {
            let outcome = match &env.op {
                ScopedOp::Person { .. } => people::mint(&routes, &env.op),
                op => match apply(&store, &skills, op).await {
                    Ok(o) => o,
                    Err(e) => ScopedOutcome::Refused {
                        reason: e.kind().to_string(),
                        message: String::new(),
                    },
                },
            };
            lock(&log).push((
                clock.rel(),
                format!(
                    "c{} #{} {} => {}",
                    env.client,
                    env.seq,
                    serde_json::to_string(&env.op).unwrap_or_default(),
                    summary(&outcome)
                ),
            ));
            Some(outcome)
        }
    })
    .await
}

async fn call(client: usize, seq: usize, op: ScopedOp) -> std::io::Result<ScopedOutcome> {
    crate::world::net::call(APP, PORT, client, seq, op).await
}

/// [`call`], setting `connected` once the connection is open: a request whose connection
/// never opened never reached `app`, so the oracle knows it did nothing.
async fn call_tracked(
    client: usize,
    seq: usize,
    op: ScopedOp,
    connected: &AtomicBool,
) -> std::io::Result<ScopedOutcome> {
    let stream = turmoil::net::TcpStream::connect((APP, PORT)).await?;
    connected.store(true, Ordering::SeqCst);
    crate::world::net::call_over(stream, client, seq, op).await
}

fn turn(ws: &str, agent: &str, session: &str) -> Turn {
    Turn::new(ws, agent, session)
}

/// What one seed's world did.
pub type ScopedWorldResult = crate::world::WorldRun;

/// Runs one seed's scoped world (the reference, or a mutant) and checks liveness after heal.
pub fn run_scoped_world(seed: u64, mutant: Option<ScopedMutant>) -> ScopedWorldResult {
    let master = MasterSeed(seed);
    let clock = WorldClock::default();
    let log: Log = Arc::default();
    let meta = MemoryMetadata::new();
    let mut cfg = ScopedConfig::new(BUCKET);
    cfg.session_file_ttl_days = TTL_DAYS;
    cfg.max_upload_bytes = MAX_UPLOAD_BYTES;
    cfg.tool_output_limit_bytes = TOOL_OUTPUT_LIMIT_BYTES;
    cfg.mutant = mutant;
    // LastModified is not what the scoped profile measures age by; a fixed clock keeps the
    // store's answers independent of the world's jumps.
    let s3_clock = Arc::new(tidemark_reference::clock::ManualClock::starting_at(EPOCH));
    let (service, objects, s3_faults): (_, MemoryHandle, FaultHandle) =
        faulty_memory_service(s3_clock, master.stream("scoped-world-s3").next_u64());
    let clients_left = Arc::new(AtomicUsize::new(GUESTS + PEOPLE + 1));
    let boots = Arc::new(AtomicUsize::new(0));
    let sweeps: claims::Sweeps = Arc::default();
    let healed = Arc::new(AtomicBool::new(false));
    let audited = Arc::new(AtomicBool::new(false));
    let heal_at = Arc::new(AtomicI64::new(i64::MAX));

    let mut sim = crate::world::builder(
        master.stream("scoped-world-turmoil").next_u64(),
        Duration::from_millis(1),
    )
    .build();
    sim.host(STORE, move || serve(service.clone(), S3_PORT));
    let skills: Skills = Arc::default();
    {
        let (meta, cfg, clock, log, skills, boots, sweeps) = (
            meta.clone(),
            cfg.clone(),
            clock.clone(),
            log.clone(),
            skills.clone(),
            boots.clone(),
            sweeps.clone(),
        );
        sim.host(APP, move || {
            serve_app(
                meta.clone(),
                cfg.clone(),
                clock.clone(),
                log.clone(),
                skills.clone(),
                (seed, boots.clone(), sweeps.clone()),
            )
        });
    }
    // Setup, before any guest. Home: default settings (workspace scope read-only), an editor
    // that may write the workspace scope and writes its reference file, each guest's agent, and
    // each guest's shut agent (agent and workspace access none); a skill version. Exposed:
    // workspace scope writable, two agents the guests share.
    let editor = turn(HOME, EDITOR, "e");
    let reference = content_for(&editor, REF_PATH, "setup");
    let mut setup: Vec<ScopedOp> = vec![
        ScopedOp::CreateWorkspace {
            workspace: HOME.into(),
            agent_access: None,
            workspace_access: None,
        },
        ScopedOp::CreateAgent {
            workspace: HOME.into(),
            agent: EDITOR.into(),
            agent_access: None,
            workspace_access: Some(Access::ReadWrite),
        },
    ];
    for c in 0..GUESTS {
        setup.push(ScopedOp::CreateAgent {
            workspace: HOME.into(),
            agent: format!("g{c}"),
            agent_access: None,
            workspace_access: None,
        });
        setup.push(ScopedOp::CreateAgent {
            workspace: HOME.into(),
            agent: format!("n{c}"),
            agent_access: Some(Access::None),
            workspace_access: Some(Access::None),
        });
    }
    setup.push(ScopedOp::CreateWorkspace {
        workspace: EXPOSED.into(),
        agent_access: None,
        workspace_access: Some(Access::ReadWrite),
    });
    for a in AGENTS {
        setup.push(ScopedOp::CreateAgent {
            workspace: EXPOSED.into(),
            agent: a.into(),
            agent_access: None,
            workspace_access: None,
        });
    }
    setup.push(ScopedOp::CreateSession {
        turn: editor.clone(),
    });
    setup.push(ScopedOp::Write {
        turn: editor,
        path: REF_PATH.into(),
        content: reference.clone(),
    });
    setup.push(ScopedOp::PublishSkill {
        workspace: HOME.into(),
        name: SKILL_NAME.into(),
        files: BTreeMap::from([("README.md".to_string(), SKILL_CONTENT.to_string())]),
    });
    // What setup confirmed: the reference file written, the skill published.
    let set_up: Arc<Mutex<Option<(bool, bool)>>> = Arc::default();
    let violations: Arc<Mutex<Vec<String>>> = Arc::default();
    // Each guest's model, shared with its person; the home workspace's curated files, with
    // every guest.
    let curated: Curated = Arc::default();
    let models: Vec<Arc<Mutex<Guest>>> = (0..GUESTS)
        .map(|c| Arc::new(Mutex::new(Guest::new(c, curated.clone(), sweeps.clone()))))
        .collect();
    for (c, model) in models.iter().enumerate() {
        let (left, set_up, setup, clock, log, violations, reference, model) = (
            clients_left.clone(),
            set_up.clone(),
            setup.clone(),
            clock.clone(),
            log.clone(),
            violations.clone(),
            reference.clone(),
            model.clone(),
        );
        sim.client(format!("g{c}"), async move {
            if c == 0 {
                // The app is still starting: each setup call is retried until it succeeds.
                let mut confirmed = (false, false);
                for (seq, op) in setup.into_iter().enumerate() {
                    for _ in 0..200 {
                        match tokio::time::timeout(CALL_TIMEOUT, call(99, seq, op.clone())).await {
                            Ok(Ok(ScopedOutcome::Refused { .. })) | Ok(Err(_)) | Err(_) => {
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            Ok(Ok(_)) => {
                                match op {
                                    ScopedOp::Write { .. } => confirmed.0 = true,
                                    ScopedOp::PublishSkill { .. } => confirmed.1 = true,
                                    _ => {}
                                }
                                break;
                            }
                        }
                    }
                }
                *lock(&set_up) = Some(confirmed);
            }
            let (ref_ok, skill_ok) = loop {
                if let Some(s) = *lock(&set_up) {
                    break s;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            let plan = {
                let mut guest = lock(&model);
                guest.reference = ref_ok.then_some(reference);
                guest.skill_published = skill_ok;
                guest_plan(master, &guest)
            };
            let mut seq = 0;
            for (pause_ms, sess, op, retry) in plan {
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                for _ in 0..if retry { 50 } else { 1 } {
                    seq += 1;
                    let ticket = lock(&model).begin(sess, &op);
                    let sent = clock.rel();
                    let connected = AtomicBool::new(false);
                    let answer = tokio::time::timeout(
                        CALL_TIMEOUT,
                        call_tracked(c, seq, op.clone(), &connected),
                    )
                    .await;
                    let replied = clock.rel();
                    let (done, found) = {
                        let mut guest = lock(&model);
                        let done = match answer {
                            Ok(Ok(out)) => {
                                guest.observe(sess, &op, &ticket, (sent, replied), &out);
                                !matches!(out, ScopedOutcome::Refused { .. })
                            }
                            _ if !connected.load(Ordering::SeqCst) => {
                                guest.unsent(sess, &op, &ticket);
                                false
                            }
                            _ => {
                                guest.unknown(sess, &op, &ticket);
                                false
                            }
                        };
                        let found: Vec<String> = guest.violations.drain(..).collect();
                        (done, found)
                    };
                    for v in found {
                        lock(&log).push((replied, format!("VIOLATION {v}")));
                        lock(&violations).push(v);
                    }
                    if done {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            left.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        });
    }
    {
        let people: Vec<people::PersonCtx> = (models.iter().enumerate())
            .map(|(c, model)| people::PersonCtx {
                c,
                master,
                guest: model.clone(),
                grant: person_plan::grant(master, c),
                boots: boots.clone(),
                clock: clock.clone(),
                log: log.clone(),
                violations: violations.clone(),
            })
            .collect();
        let (left, set_up) = (clients_left.clone(), set_up.clone());
        sim.client(PEOPLE_HOST, async move {
            while lock(&set_up).is_none() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let persons: Vec<_> = people
                .into_iter()
                .map(|p| tokio::spawn(people::person(p)))
                .collect();
            for p in persons {
                p.await?;
                left.fetch_sub(1, Ordering::SeqCst);
            }
            Ok(())
        });
    }
    {
        let (left, set_up) = (clients_left.clone(), set_up.clone());
        let (meta, clock, log, violations) =
            (meta.clone(), clock.clone(), log.clone(), violations.clone());
        let ops = admin_ops(master);
        sim.client("admin", async move {
            while lock(&set_up).is_none() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            for (seq, (pause_ms, op)) in ops.into_iter().enumerate() {
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                let op = erasures::at_send(op, clock.now().as_millis());
                let answer =
                    tokio::time::timeout(CALL_TIMEOUT, call(GUESTS, seq, op.clone())).await;
                if let Ok(Ok(out)) = answer {
                    let found = match erasures::rows_kept(&meta, &op, &out) {
                        Some(v) => Some(v),
                        None => erasures::created_under_pending(&meta, &op, &out).await,
                    };
                    if let Some(v) = found {
                        lock(&log).push((clock.rel(), format!("VIOLATION {v}")));
                        lock(&violations).push(v);
                    }
                }
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
        while !healed.load(Ordering::SeqCst)
            && next_fault < schedule.len()
            && schedule[next_fault].0 <= elapsed_ms
        {
            let (_, f) = &schedule[next_fault];
            match f {
                Fault::Jump(ms) => {
                    clock.jump(*ms);
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
                Fault::PartitionPeople => sim.partition(APP, PEOPLE_HOST),
                Fault::RepairPeople => sim.repair(APP, PEOPLE_HOST),
            }
            lock(&log).push((clock.rel_at(elapsed_ms), format!("fault {f:?}")));
            next_fault += 1;
        }
        if !healed.load(Ordering::SeqCst) && clients_left.load(Ordering::SeqCst) == 0 {
            s3_faults.heal();
            sim.repair(APP, STORE);
            sim.repair(APP, PEOPLE_HOST);
            if crashed {
                sim.bounce(APP);
                crashed = false;
            }
            // One sweep interval (and a minute) past the latest time the clock has shown: the
            // sweeper's next pass is due even after a backwards jump.
            clock.jump(SWEEP_INTERVAL_MS + MINUTE_MS + rewound_ms);
            lock(&log).push((clock.rel_at(elapsed_ms), "heal".into()));
            heal_at.store(clock.rel_at(elapsed_ms), Ordering::SeqCst);
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
            clock.jump(SWEEP_INTERVAL_MS);
            lock(&log).push((clock.rel_at(elapsed_ms), "an hour passes".into()));
            nudge_at = elapsed_ms + 3_000;
        }
        if audited.load(Ordering::SeqCst) {
            break;
        }
        if let ControlFlow::Break(end) = crate::world::step(&mut sim, &mut steps) {
            failure = end;
            break;
        }
    }
    let simulated_ms = clock.rel_outside(&sim);
    // Dropping the world drops the hosts, and with them any transaction still open.
    drop(sim);
    let log = lock(&log).clone();
    for (at, line) in &log {
        trace.record(*at, line);
    }
    if failure.is_none() {
        failure = lock(&violations).first().map(|v| format!("safety: {v}"));
    }
    if failure.is_none() {
        failure = liveness(&meta, &objects, &log, heal_at.load(Ordering::SeqCst)).err();
    }
    if failure.is_none() {
        failure = kept(&models, &objects, &log, heal_at.load(Ordering::SeqCst)).err();
    }
    if failure.is_none() {
        failure = erasures::liveness(&meta, &objects, &log).err();
    }
    ScopedWorldResult {
        trace,
        failure,
        simulated_ms,
        steps,
        // Its oracle holds each guest's model of what it wrote, not a model of the store.
        model_state: Vec::new(),
    }
}

/// When a sweep line's sweep started (world ms), if it is a sweep line.
fn sweep_started(line: &str) -> Option<i64> {
    let rest = line
        .strip_prefix("sweep from ")
        .or_else(|| line.strip_prefix("startup sweep from "))?;
    rest.split(':').next()?.parse().ok()
}

/// `tidemark world --profile scoped`: the scoped world as the engine plays and hunts it.
pub const WORLD: crate::world::WorldProfile<ScopedMutant> = crate::world::WorldProfile {
    label: "scoped world",
    replay: "tidemark world --profile scoped",
    profile: "scoped",
    mutants: &ScopedMutant::ALL,
    id: ScopedMutant::id,
    from_id: ScopedMutant::from_id,
    out_of_reach: OUT_OF_REACH,
    // The scoped world's reference takes the defaults; it models no variant yet.
    run: |seed, mutant, _variants| run_scoped_world(seed, mutant),
};

//! A turmoil world for the scoped profile: the simulation tier proper.
//!
//! - Host `s3`: the in-memory S3 ([`tidemark_sim::turmoil_s3`]) behind the fault wrapper, served over
//!   turmoil's network. Its contents live outside the host, so they survive a bounce.
//! - Host `app`: the scoped reference ([`ScopedStore`]) over the in-memory metadata store
//!   ([`MemoryMetadata`], committed state shared across restarts; open transactions die with
//!   the host) and an aws-sdk-s3 client reaching `s3` through turmoil. It sweeps once on start
//!   and then hourly (world time), and serves [`ScopedOp`]s as JSON lines on port 7000.
//! - Clients: three guests and one person deleting and re-creating sessions, agents and the
//!   exposed workspace, all from the seed. Each guest solely owns a kept session (a wait from
//!   the start, idle until the end), an active one and its agent, a shut session (its agent's
//!   access to agent and workspace scope is `none`) in the home workspace nobody deletes from,
//!   and an exposed session the deleter may remove. It keeps an exact model of what it wrote
//!   and checks every answer against it as it arrives: the safety oracle (`Guest::observe`).
//! - The controller applies faults between steps from the seed: S3 errors, partly failed
//!   delete batches, the store down, `app`-`s3` partitions, `app` crashes and restarts, clock
//!   jumps of hours or days (and back), a slow store. Then everything heals, time moves one
//!   sweep interval on, and liveness is checked: every obligation is done and recorded and its
//!   prefix is empty (unless its entity lives again), nothing expired without a wait keeps a
//!   file, and no row is left locked.
//!
//! The world clock, the JSON-lines wire and the seed loop are the engine's (`world/`): days pass
//! in one step while the network keeps millisecond ticks. The trace is the
//! server's log in the order things were applied, with refusals by reason only (messages carry
//! transport details such as HTTP dates), so it is byte-identical for a seed.
//!
//! Why one file of this length: the hosts, the guests' safety oracle and the fault controller
//! share one world's types and clock, and a seed's trace is read top to bottom here; splitting
//! it is open work (ARCHITECTURE.md, "Open work on the one engine").

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, RngCore};
use tidemark_reference::clock::{DAY_MS, HOUR_MS, MINUTE_MS};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, SessionKey};
use tidemark_reference::scoped::{Access, ScopedConfig, ScopedError, ScopedMutant, ScopedStore};

use crate::profiles::scoped::driver::{ScopedOp, ScopedOutcome, Turn, WaitKindName};
use crate::world::clock::WorldClock;
use crate::world::lock;
use crate::world::net::{serve_lines, Envelope};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::memory_s3::MemoryHandle;
use tidemark_sim::real_tier::{FaultHandle, FaultPlan};
use tidemark_sim::seed::MasterSeed;
use tidemark_sim::trace::Trace;
use tidemark_sim::turmoil_s3::{endpoint, faulty_memory_service, serve, sim_s3_client, S3_PORT};

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
const AGENTS: [&str; 2] = ["a1", "a2"];

type Log = Arc<Mutex<Vec<(i64, String)>>>;

/// One outcome as the trace shows it: refusals by reason only.
fn summary(o: &ScopedOutcome) -> String {
    match o {
        ScopedOutcome::Refused { reason, .. } => format!("refused {reason}"),
        o => format!("{o:?}"),
    }
}

/// Skill versions by the name they were published under (the host's registry: it outlives a
/// restart, as the deployment's configuration would).
type Skills = Arc<Mutex<BTreeMap<String, String>>>;

/// Performs one client operation on the store, through the one mapping from an operation to the
/// store the process protocol's implementation side uses (`super::remote::apply_to_store`). Clients
/// name things short (`w1`, `g0`); the store is given a UUID for each, as a real system's
/// identifiers are (the log keeps the short names, so a seed's trace does not depend on the
/// mapping), and a turn's skill names become the hashes they were published under.
async fn apply(
    store: &ScopedStore,
    skills: &Skills,
    op: &ScopedOp,
) -> Result<ScopedOutcome, ScopedError> {
    let serves = super::remote::is_store_operation(op)
        && !matches!(op, ScopedOp::Sweep | ScopedOp::ApplyLifecycle { .. });
    if !serves {
        return Err(ScopedError::Config(format!(
            "the world does not serve {op:?}"
        )));
    }
    let op = crate::profiles::scoped::uuid_ids::op_with_uuid_ids(op, "scoped-world");
    let op = super::remote::with_skill_hashes(&op, &lock(skills));
    let outcome = super::remote::apply_to_store(store, &op).await?;
    if let (ScopedOp::PublishSkill { name, .. }, ScopedOutcome::Published { sha256 }) =
        (&op, &outcome)
    {
        lock(skills).insert(name.clone(), sha256.clone());
    }
    Ok(outcome)
}

/// The `app` host: a store over the shared metadata, a startup sweep, the hourly sweeper, and
/// the JSON-lines server.
async fn serve_app(
    meta: MemoryMetadata,
    cfg: ScopedConfig,
    clock: WorldClock,
    log: Log,
    skills: Skills,
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
            let started = clock.rel();
            let line = match store.sweep().await {
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
        let (store, log, clock, skills) =
            (store.clone(), log.clone(), clock.clone(), skills.clone());
        async move {
            let outcome = match apply(&store, &skills, &env.op).await {
                Ok(o) => o,
                Err(e) => ScopedOutcome::Refused {
                    reason: e.kind().to_string(),
                    message: String::new(),
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

fn turn(ws: &str, agent: &str, session: &str) -> Turn {
    Turn::new(ws, agent, session)
}

// ----- the guests and the safety oracle ----------------------------------------------------

/// How close to the TTL a session's idle time may come before the oracle stops promising its
/// files. The server stamps activity when it handles a request (after the guest sent it) and the
/// clock may jump back by up to two hours, so a sweep can see a session idle for up to two hours
/// longer than the guest measured from its own send times; a day covers that with room to
/// spare. The cost is only that a session idle between six and seven days is not checked.
const EXPIRY_MARGIN_MS: i64 = DAY_MS;
const TTL_MS: i64 = TTL_DAYS as i64 * DAY_MS;
/// The workspace every guest's checked sessions live in; nobody deletes anything in it.
const HOME: &str = "w1";
/// The workspace the deleter works on; guests' exposed sessions live here.
const EXPOSED: &str = "w2";
const EDITOR: &str = "editor";
const REF_PATH: &str = "workspace/ref.md";
const SKILL_NAME: &str = "tools";
const SKILL_PATH: &str = "skill/tools/README.md";
const SKILL_CONTENT: &str = "tools v1: immutable";
/// Spellings of traversal every implementation must refuse (SC-2.2), whatever it stores.
const TRAVERSALS: [&str; 4] = [
    "session/sub/../notes.md",
    "session/%2e%2e/notes.md",
    "agent/../session/notes.md",
    "session/./notes.md",
];

/// Paths every implementation must refuse, whatever it stores, with the reason and rule: the
/// traversals above and the hostile spellings SPEC refuses (`model::hostile`), the key-length
/// one fitted to `t`'s session.
fn refused_spellings(t: &Turn) -> Vec<(String, &'static str, &'static str)> {
    use crate::profiles::scoped::model::hostile::{Fit, Verdict, SPELLINGS};
    // The store sees the UUIDs the host gives it (`apply`), not the clients' short names.
    let id = |short: &str| crate::profiles::scoped::uuid_ids::uuid_for("scoped-world", short);
    let fit = Fit {
        prefix_bytes: format!(
            "sessions/{}/{}/{}/",
            id(&t.workspace),
            id(&t.agent),
            id(&t.session)
        )
        .len(),
    };
    TRAVERSALS
        .iter()
        .map(|p| (p.to_string(), "traversal", "SC-2.2"))
        .chain(SPELLINGS.iter().filter_map(|s| match s.verdict {
            Verdict::Refused(reason) => Some((s.guest_path(&fit), reason, s.rule)),
            Verdict::Name => None,
        }))
        .collect()
}

/// A path to refuse: the guest's own stream picks a traversal as it always has; then, half the
/// time, the hostile stream swaps it for a spelling from [`refused_spellings`].
fn refused_pick(rng: &mut impl Rng, hostile: &mut impl Rng, t: &Turn) -> String {
    let traversal = TRAVERSALS[rng.gen_range(0..TRAVERSALS.len())];
    let refused = refused_spellings(t);
    if hostile.gen_bool(0.5) {
        refused[hostile.gen_range(TRAVERSALS.len()..refused.len())]
            .0
            .clone()
    } else {
        traversal.to_string()
    }
}

/// Who wrote a file, and what: a read returning anything else saw another workspace, agent,
/// session or path.
fn content_for(t: &Turn, path: &str, tag: &str) -> String {
    format!("{}/{}/{}/{path}#{tag}", t.workspace, t.agent, t.session)
}

/// Whether `content` may be read at `path` from turn `t`: session files must carry the
/// session's identity, agent files the agent's, workspace files the workspace's.
fn identity_ok(t: &Turn, path: &str, content: &str) -> bool {
    let owner = match path.split('/').next() {
        Some("session") => format!("{}/{}/{}/", t.workspace, t.agent, t.session),
        Some("agent") => format!("{}/{}/", t.workspace, t.agent),
        Some("workspace") => format!("{}/", t.workspace),
        Some("skill") => return content == SKILL_CONTENT,
        _ => return false,
    };
    content.starts_with(&owner) && content.contains(&format!("/{path}#"))
}

/// What a reply may be for one path: `None` is "not found".
#[derive(Clone, Debug, Default)]
struct PathModel {
    allowed: BTreeSet<Option<String>>,
    /// A write or delete whose outcome the guest never learned: it may land at any time, so
    /// from then on any content the guest wrote there (or none) is acceptable.
    haunted: bool,
    written: BTreeSet<String>,
}

impl PathModel {
    fn absent() -> PathModel {
        PathModel {
            allowed: BTreeSet::from([None]),
            ..PathModel::default()
        }
    }

    fn accepts(&self, v: &Option<String>) -> bool {
        if self.haunted {
            v.as_ref().is_none_or(|c| self.written.contains(c))
        } else {
            self.allowed.contains(v)
        }
    }

    fn set(&mut self, v: Option<String>) {
        if let Some(c) = &v {
            self.written.insert(c.clone());
        }
        self.allowed = BTreeSet::from([v]);
    }

    fn must_exist(&self) -> bool {
        !self.haunted && !self.allowed.contains(&None)
    }

    fn must_not_exist(&self) -> bool {
        !self.haunted && self.allowed.len() == 1 && self.allowed.contains(&None)
    }
}

/// Which of a guest's sessions an operation goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sess {
    /// Holds a wait from the start and idles until the end.
    Kept,
    /// The busy one.
    Active,
    /// Its agent's access to agent and workspace scope is `none`.
    Shut,
    /// In the workspace the deleter works on: identity checks only.
    Exposed,
}

struct SessionModel {
    turn: Turn,
    /// World ms the guest sent the first request that may have created the session, and then
    /// each later operation that succeeded (its own operations are its only activity).
    last_activity: Option<i64>,
    wait_confirmed: bool,
    /// The wait is known to have been in place before the session could have expired.
    protected: bool,
    paths: BTreeMap<String, PathModel>,
}

impl SessionModel {
    fn new(turn: Turn) -> SessionModel {
        SessionModel {
            turn,
            last_activity: None,
            wait_confirmed: false,
            protected: false,
            paths: BTreeMap::new(),
        }
    }

    /// Whether a sweep may have found the session idle for the TTL by `at`.
    fn expirable(&self, at: i64) -> bool {
        !self.protected
            && self
                .last_activity
                .is_some_and(|last| at - last >= TTL_MS - EXPIRY_MARGIN_MS)
    }
}

/// One guest's exact model of what it wrote, and the verdicts on what it was told.
struct Guest {
    c: usize,
    sessions: Vec<(Sess, SessionModel)>,
    /// Agent-scope files of the guest's own agent (written through Kept and Active).
    agent_paths: BTreeMap<String, PathModel>,
    /// What setup put in the home workspace, if setup confirmed it.
    reference: Option<String>,
    skill_published: bool,
    violations: Vec<String>,
}

fn is_infra(reason: &str) -> bool {
    matches!(reason, "storage_unavailable" | "database_unavailable")
}

/// Operations that count as the session's activity when they succeed (SC-4.3, SC-5.1).
fn touches(op: &ScopedOp) -> bool {
    matches!(
        op,
        ScopedOp::Activity { .. }
            | ScopedOp::Write { .. }
            | ScopedOp::Read { .. }
            | ScopedOp::ReadText { .. }
            | ScopedOp::List { .. }
            | ScopedOp::Delete { .. }
    )
}

fn home_turn(agent: &str, session: &str) -> Turn {
    let mut t = turn(HOME, agent, session);
    t.skills
        .insert(SKILL_NAME.to_string(), SKILL_NAME.to_string());
    t
}

impl Guest {
    fn new(c: usize) -> Guest {
        let sessions = vec![
            (
                Sess::Kept,
                SessionModel::new(home_turn(&format!("g{c}"), &format!("k{c}"))),
            ),
            (
                Sess::Active,
                SessionModel::new(home_turn(&format!("g{c}"), &format!("s{c}"))),
            ),
            (
                Sess::Shut,
                SessionModel::new(home_turn(&format!("n{c}"), &format!("n{c}"))),
            ),
            (
                Sess::Exposed,
                SessionModel::new(turn(EXPOSED, AGENTS[c % AGENTS.len()], &format!("x{c}"))),
            ),
        ];
        Guest {
            c,
            sessions,
            agent_paths: BTreeMap::new(),
            reference: None,
            skill_published: false,
            violations: Vec::new(),
        }
    }

    fn turn(&self, s: Sess) -> Turn {
        self.session(s).turn.clone()
    }

    fn session(&self, s: Sess) -> &SessionModel {
        &self
            .sessions
            .iter()
            .find(|(k, _)| *k == s)
            .expect("every session kind")
            .1
    }

    fn session_mut(&mut self, s: Sess) -> &mut SessionModel {
        &mut self
            .sessions
            .iter_mut()
            .find(|(k, _)| *k == s)
            .expect("every session kind")
            .1
    }

    fn violation(&mut self, at: i64, what: String) {
        self.violations.push(format!("g{} at {at}: {what}", self.c));
    }

    /// The model of a session- or agent-scope path of a checked session.
    fn path_model(&mut self, s: Sess, path: &str) -> Option<&mut PathModel> {
        if path.starts_with("session/") {
            Some(
                self.session_mut(s)
                    .paths
                    .entry(path.to_string())
                    .or_insert_with(PathModel::absent),
            )
        } else if path.starts_with("agent/") && matches!(s, Sess::Kept | Sess::Active) {
            Some(
                self.agent_paths
                    .entry(path.to_string())
                    .or_insert_with(PathModel::absent),
            )
        } else {
            None
        }
    }

    /// An operation whose answer never came (timeout, connection lost): it may have happened.
    fn unknown(&mut self, s: Sess, op: &ScopedOp) {
        let (path, v) = match op {
            ScopedOp::Write { path, content, .. } => (path, Some(content.clone())),
            ScopedOp::Delete { path, .. } => (path, None),
            _ => return,
        };
        if s == Sess::Exposed {
            if let Some(c) = &v {
                self.session_mut(s)
                    .paths
                    .entry(path.clone())
                    .or_default()
                    .written
                    .insert(c.clone());
            }
            return;
        }
        if let Some(m) = self.path_model(s, path) {
            m.haunted = true;
            if let Some(c) = v {
                m.written.insert(c);
            }
        }
    }

    /// Checks one answered operation against the model, then applies its effect.
    fn observe(&mut self, s: Sess, op: &ScopedOp, sent: i64, replied: i64, out: &ScopedOutcome) {
        let refused = match out {
            ScopedOutcome::Refused { reason, .. } => Some(reason.as_str()),
            _ => None,
        };
        let t = self.turn(s);
        let name = format!("{}/{}/{}", t.workspace, t.agent, t.session);
        // Checks that hold in every session, whatever was deleted: resolution refuses before
        // anything is read or written.
        let probe = match op {
            ScopedOp::Write { path, .. }
            | ScopedOp::Read { path, .. }
            | ScopedOp::ReadText { path, .. }
            | ScopedOp::Delete { path, .. } => Some(path.as_str()),
            _ => None,
        };
        if let Some(path) = probe {
            if let Some((_, reason, rule)) =
                refused_spellings(&t).into_iter().find(|(p, ..)| p == path)
            {
                if refused != Some(reason) {
                    self.violation(
                        replied,
                        format!(
                            "{name}: the path {path:?} was answered {}, not refused {reason} ({rule})",
                            summary(out)
                        ),
                    );
                }
                return;
            }
            if path == "notes.md" {
                if refused != Some("missing_scope") {
                    self.violation(
                        replied,
                        format!(
                            "{name}: the scopeless path {path:?} was answered {} (SC-2.4)",
                            summary(out)
                        ),
                    );
                }
                return;
            }
        }
        // Anything read must be what its scope's owner wrote there.
        let read_back = match out {
            ScopedOutcome::Content { content } => Some(content.clone()),
            ScopedOutcome::Text { text: Some(t) } => Some(t.clone()),
            _ => None,
        };
        if let (Some(path), Some(c)) = (probe, &read_back) {
            if !identity_ok(&t, path, c) {
                self.violation(
                    replied,
                    format!("{name}: reading {path} returned {c:?}, which is not this turn's (another workspace, agent or session)"),
                );
                return;
            }
        }
        if s == Sess::Exposed {
            // Someone may delete this session at any time: only identity, and that session
            // content is this guest's own.
            if let (ScopedOp::Read { path, .. } | ScopedOp::ReadText { path, .. }, Some(c)) =
                (op, &read_back)
            {
                if path.starts_with("session/")
                    && !self
                        .session(s)
                        .paths
                        .get(path)
                        .is_some_and(|m| m.written.contains(c))
                {
                    self.violation(
                        replied,
                        format!("{name}: {path} returned {c:?}, never written by its only writer"),
                    );
                }
            }
            if let (ScopedOp::Write { path, content, .. }, ScopedOutcome::Written { .. }) =
                (op, out)
            {
                self.session_mut(s)
                    .paths
                    .entry(path.clone())
                    .or_default()
                    .written
                    .insert(content.clone());
            }
            return;
        }
        if refused == Some("unknown_entity") && self.session(s).last_activity.is_some() {
            if !matches!(op, ScopedOp::CreateSession { .. }) {
                self.violation(
                    replied,
                    format!(
                        "{name}: the session is unknown, though nobody deletes anything in {HOME}"
                    ),
                );
            }
            return;
        }
        let ok = refused.is_none();
        if let ScopedOp::CreateSession { .. } = op {
            if ok && self.session(s).last_activity.is_none() {
                self.session_mut(s).last_activity = Some(sent);
            }
            return;
        }
        if self.session(s).last_activity.is_none() {
            // Never confirmed to exist: nothing to promise.
            return;
        }
        // A sweep may have taken the session's files since its last confirmed activity, before
        // this operation arrived (whether it succeeded or not).
        if self.session(s).expirable(replied) {
            for m in self.session_mut(s).paths.values_mut() {
                m.allowed.insert(None);
            }
        }
        match op {
            ScopedOp::AddWait { .. } if ok => {
                let expirable = self.session(s).expirable(replied);
                let m = self.session_mut(s);
                m.wait_confirmed = true;
                m.protected = !expirable;
            }
            ScopedOp::Write { path, content, .. } => {
                self.check_write(s, &name, path, content, replied, out)
            }
            ScopedOp::Read { path, .. } | ScopedOp::ReadText { path, .. } => {
                self.check_read(s, &name, path, replied, out)
            }
            ScopedOp::Delete { path, .. } => {
                if let Some(m) = self.path_model(s, path) {
                    match refused {
                        None => m.set(None),
                        Some("not_found") => {
                            if !m.accepts(&None) {
                                let w = format!(
                                    "{name}: deleting {path} found nothing, but it holds {:?}",
                                    m.allowed
                                );
                                self.violation(replied, w);
                            } else if !m.haunted {
                                m.set(None);
                            }
                        }
                        _ => {}
                    }
                }
            }
            ScopedOp::List { prefix: None, .. } => self.check_listing(s, &name, replied, out),
            _ => {}
        }
        if ok && touches(op) {
            let m = self.session_mut(s);
            m.last_activity = Some(sent);
            if m.wait_confirmed {
                m.protected = true;
            }
        }
    }

    fn check_write(
        &mut self,
        s: Sess,
        name: &str,
        path: &str,
        content: &str,
        at: i64,
        out: &ScopedOutcome,
    ) {
        let refused = match out {
            ScopedOutcome::Refused { reason, .. } => Some(reason.clone()),
            _ => None,
        };
        let may_write =
            path.starts_with("session/") || (path.starts_with("agent/") && s != Sess::Shut);
        if !may_write {
            // Workspace scope is read-only by default (SC-3.2), and the shut agent has none.
            if !refused
                .as_deref()
                .is_some_and(|r| r == "permission_denied" || is_infra(r))
            {
                self.violation(
                    at,
                    format!(
                        "{name}: writing {path} without write access was answered {} (SC-3.3)",
                        summary(out)
                    ),
                );
            }
            return;
        }
        let Some(m) = self.path_model(s, path) else {
            return;
        };
        match refused.as_deref() {
            None => {
                if m.haunted {
                    m.written.insert(content.to_string());
                } else {
                    m.set(Some(content.to_string()));
                }
            }
            Some(r) if is_infra(r) => {}
            Some(r) => {
                let w = format!(
                    "{name}: writing {path} was refused {r}, though the guest may write it"
                );
                self.violation(at, w);
            }
        }
    }

    fn check_read(&mut self, s: Sess, name: &str, path: &str, at: i64, out: &ScopedOutcome) {
        let answer: Result<Option<String>, &str> = match out {
            ScopedOutcome::Content { content } => Ok(Some(content.clone())),
            ScopedOutcome::Text { text: Some(t) } => Ok(Some(t.clone())),
            ScopedOutcome::Text { text: None } => Ok(Some("<no text>".into())),
            ScopedOutcome::Refused { reason, .. } if reason == "not_found" => Ok(None),
            ScopedOutcome::Refused { reason, .. } => Err(reason.as_str()),
            _ => Err("an unexpected outcome"),
        };
        let shut_scope =
            s == Sess::Shut && (path.starts_with("agent/") || path.starts_with("workspace/"));
        if shut_scope {
            // The agent's access to this scope is none: refused, never answered (SC-3.3).
            if !matches!(answer, Err(r) if r == "permission_denied" || is_infra(r)) {
                self.violation(
                    at,
                    format!(
                        "{name}: reading {path} with access none was answered {}",
                        summary(out)
                    ),
                );
            }
            return;
        }
        let answer = match answer {
            Ok(a) => a,
            Err(r) if is_infra(r) => return,
            Err(r) => {
                self.violation(at, format!("{name}: reading {path} was refused {r}"));
                return;
            }
        };
        if path == SKILL_PATH {
            if self.skill_published && answer.as_deref() != Some(SKILL_CONTENT) {
                self.violation(at, format!("{name}: the skill published at setup reads {answer:?} (skills are never swept, SC-6.2)"));
            }
            return;
        }
        if path == REF_PATH {
            if self.reference.is_some() && answer != self.reference {
                let w = format!("{name}: {path} reads {answer:?}, not what setup wrote (a refused write had an effect, or workspace files went)");
                self.violation(at, w);
            }
            return;
        }
        let kept = s == Sess::Kept && self.session(s).protected;
        let Some(m) = self.path_model(s, path) else {
            return;
        };
        if !m.accepts(&answer) {
            let why = if answer.is_none() && kept {
                "its session holds a wait, so it is never swept (SC-5.2)"
            } else if answer.is_none() {
                "its session is live and nobody deleted it"
            } else {
                "the latest content the guest wrote is another (a refused or deleted write shows, or extracted text outlived its file)"
            };
            let w = format!(
                "{name}: {path} reads {answer:?}, expected one of {:?}: {why}",
                m.allowed
            );
            self.violation(at, w);
            return;
        }
        if !m.haunted {
            m.set(answer);
        }
    }

    fn check_listing(&mut self, s: Sess, name: &str, at: i64, out: &ScopedOutcome) {
        let ScopedOutcome::Listing { paths } = out else {
            return;
        };
        let listed: BTreeSet<&str> = paths.iter().map(String::as_str).collect();
        let mut known: BTreeMap<String, PathModel> = self.session(s).paths.clone();
        let mut problems = Vec::new();
        if let Some(w) = paths
            .windows(2)
            .find(|w| w[0].as_bytes() >= w[1].as_bytes())
        {
            problems.push(format!(
                "lists {} before {}: a listing is in ascending byte order of its guest paths (SC-4.4)",
                w[0], w[1]
            ));
        }
        if s == Sess::Shut {
            if let Some(p) = paths.iter().find(|p| !p.starts_with("session/")) {
                problems.push(format!("lists {p} from a scope with access none (SC-3.4)"));
            }
        } else {
            known.extend(self.agent_paths.clone());
            if self.reference.is_some() {
                known.insert(REF_PATH.to_string(), {
                    let mut m = PathModel::default();
                    m.set(self.reference.clone());
                    m
                });
            }
        }
        for (p, m) in &known {
            if m.must_exist() && !listed.contains(p.as_str()) {
                problems.push(format!(
                    "does not list {p} (a listing with no prefix shows all three scopes, SC-3.4)"
                ));
            }
            if m.must_not_exist() && listed.contains(p.as_str()) {
                problems.push(format!("lists {p}, which is gone"));
            }
        }
        for p in &listed {
            // The shut session's stray scopes are reported above.
            if !known.contains_key(*p) && (s != Sess::Shut || p.starts_with("session/")) {
                problems.push(format!("lists {p}, which nobody wrote"));
            }
        }
        if let Some(p) = problems.into_iter().next() {
            self.violation(at, format!("{name}: the listing {p}"));
        }
    }
}

/// A guest's plan: `(pause in ms, session, op, retry until it succeeds)`.
type Plan = Vec<(u64, Sess, ScopedOp, bool)>;

fn guest_plan(master: MasterSeed, g: &Guest) -> Plan {
    let c = g.c;
    let mut rng = master.stream(&format!("scoped-world-guest-{c}"));
    // Hostile spellings draw from their own stream, so adding spellings never moves the rest
    // of a guest's plan (the races a seed is known to stage stay staged).
    let mut hostile_rng = master.stream(&format!("scoped-world-guest-{c}-hostile"));
    let mut n = 0;
    let mut write = |s: Sess, path: &str| {
        n += 1;
        let t = g.turn(s);
        ScopedOp::Write {
            content: content_for(&t, path, &format!("g{c}n{n}")),
            turn: t,
            path: path.to_string(),
        }
    };
    let mut plan: Plan = Vec::new();
    for s in [Sess::Kept, Sess::Active, Sess::Shut, Sess::Exposed] {
        plan.push((5, s, ScopedOp::CreateSession { turn: g.turn(s) }, true));
    }
    let k = g.turn(Sess::Kept);
    plan.push((
        5,
        Sess::Kept,
        ScopedOp::AddWait {
            turn: k.clone(),
            kind: WaitKindName("parked".into()),
            id: "hold".into(),
        },
        true,
    ));
    plan.push((5, Sess::Kept, write(Sess::Kept, "session/keep.md"), true));
    plan.push((5, Sess::Kept, write(Sess::Kept, "agent/keep.md"), false));
    let read = |s: Sess, path: &str| ScopedOp::Read {
        turn: g.turn(s),
        path: path.to_string(),
    };
    let read_text = |s: Sess, path: &str| ScopedOp::ReadText {
        turn: g.turn(s),
        path: path.to_string(),
    };
    let active_paths = ["session/notes.md", "session/data.md", "agent/mem.md"];
    let readable = [
        "session/notes.md",
        "session/data.md",
        "agent/mem.md",
        "agent/keep.md",
        REF_PATH,
        SKILL_PATH,
    ];
    for _ in 0..OPS_PER_CLIENT {
        let pause = if rng.gen_bool(0.05) {
            rng.gen_range(800..1_500)
        } else {
            rng.gen_range(5..200)
        };
        let roll = rng.gen_range(0..100);
        let (s, op) = if roll < 60 {
            let s = Sess::Active;
            let op = match rng.gen_range(0..17) {
                0..=3 => write(s, active_paths[rng.gen_range(0..active_paths.len())]),
                4 => write(s, REF_PATH),
                5..=7 => read(s, readable[rng.gen_range(0..readable.len())]),
                8 => read_text(s, readable[rng.gen_range(0..3)]),
                9 => {
                    let path = active_paths[rng.gen_range(0..2)];
                    plan.push((
                        pause,
                        s,
                        ScopedOp::Delete {
                            turn: g.turn(s),
                            path: path.into(),
                        },
                        false,
                    ));
                    // Its text must go with it (SC-4.2).
                    read_text(s, path)
                }
                10 | 11 => ScopedOp::List {
                    turn: g.turn(s),
                    prefix: None,
                },
                12 => write(s, "notes.md"),
                13 => read(s, "notes.md"),
                14 => read(s, &refused_pick(&mut rng, &mut hostile_rng, &g.turn(s))),
                15 => write(s, &refused_pick(&mut rng, &mut hostile_rng, &g.turn(s))),
                _ => ScopedOp::Activity { turn: g.turn(s) },
            };
            (s, op)
        } else if roll < 75 {
            let s = Sess::Shut;
            let op = match rng.gen_range(0..7) {
                0 => write(s, "session/n.md"),
                1 => read(s, "session/n.md"),
                2 => read(s, REF_PATH),
                3 => read_text(s, REF_PATH),
                4 => read(s, SKILL_PATH),
                5 => write(s, "agent/x.md"),
                _ => ScopedOp::List {
                    turn: g.turn(s),
                    prefix: None,
                },
            };
            (s, op)
        } else {
            let s = Sess::Exposed;
            let paths = ["session/x.md", "agent/shared.md", "workspace/w2.md"];
            let p = paths[rng.gen_range(0..paths.len())];
            let op = match rng.gen_range(0..8) {
                0..=2 => write(s, p),
                3 | 4 => read(s, p),
                5 => ScopedOp::List {
                    turn: g.turn(s),
                    prefix: None,
                },
                6 => ScopedOp::Delete {
                    turn: g.turn(s),
                    path: p.into(),
                },
                _ => ScopedOp::CreateSession { turn: g.turn(s) },
            };
            (s, op)
        };
        plan.push((pause, s, op, false));
    }
    // The end: the kept session, idle since the start, must still hold its files.
    for op in [
        read(Sess::Kept, "session/keep.md"),
        read_text(Sess::Kept, "session/keep.md"),
        read(Sess::Kept, "agent/keep.md"),
        ScopedOp::List {
            turn: k,
            prefix: None,
        },
    ] {
        plan.push((5, Sess::Kept, op, false));
    }
    plan
}

/// The person deleting (and re-creating) sessions, agents and the exposed workspace. Nothing
/// in the home workspace is ever deleted, so the guests' checked sessions are theirs alone.
fn admin_ops(master: MasterSeed) -> Vec<(u64, ScopedOp)> {
    let mut rng = master.stream("scoped-world-admin");
    let mut out = Vec::new();
    for _ in 0..OPS_PER_CLIENT / 3 {
        let ws = EXPOSED.to_string();
        let agent = AGENTS[rng.gen_range(0..AGENTS.len())].to_string();
        let op = match rng.gen_range(0..8) {
            0 | 1 => {
                let c = rng.gen_range(0..GUESTS);
                ScopedOp::DeleteSession {
                    turn: turn(EXPOSED, AGENTS[c % AGENTS.len()], &format!("x{c}")),
                }
            }
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
        ..FaultPlan::default()
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
    // Longer than the TTL in one step: every session without a wait or a turn meanwhile
    // expires at once.
    if rng.gen_bool(0.5) {
        let days = i64::from(TTL_DAYS) + rng.gen_range(1..4);
        out.push((rng.gen_range(500..4_500), Fault::Jump(days * DAY_MS)));
    }
    // A slow store: sweeps take long enough for turns to arrive in the middle of them.
    if rng.gen_bool(0.4) {
        let at = rng.gen_range(200..4_000);
        let mut slow = plan(0.0, 0.0, false);
        slow.latency = Duration::from_millis(rng.gen_range(20..80));
        out.push((at, Fault::S3(slow)));
        out.push((at + rng.gen_range(500..1_500), Fault::S3Heal));
    }
    out.sort_by_key(|(at, _)| *at);
    out
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

    let mut sim = crate::world::builder(
        master.stream("scoped-world-turmoil").next_u64(),
        Duration::from_millis(1),
    )
    .build();
    sim.host(STORE, move || serve(service.clone(), S3_PORT));
    let skills: Skills = Arc::default();
    {
        let (meta, cfg, clock, log, skills) = (
            meta.clone(),
            cfg.clone(),
            clock.clone(),
            log.clone(),
            skills.clone(),
        );
        sim.host(APP, move || {
            serve_app(
                meta.clone(),
                cfg.clone(),
                clock.clone(),
                log.clone(),
                skills.clone(),
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
    for c in 0..GUESTS {
        let (left, set_up, setup, clock, log, violations, reference) = (
            clients_left.clone(),
            set_up.clone(),
            setup.clone(),
            clock.clone(),
            log.clone(),
            violations.clone(),
            reference.clone(),
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
            let mut guest = Guest::new(c);
            guest.reference = ref_ok.then_some(reference);
            guest.skill_published = skill_ok;
            let plan = guest_plan(master, &guest);
            let mut seq = 0;
            for (pause_ms, sess, op, retry) in plan {
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                for _ in 0..if retry { 50 } else { 1 } {
                    seq += 1;
                    let sent = clock.rel();
                    let answer = tokio::time::timeout(CALL_TIMEOUT, call(c, seq, op.clone())).await;
                    let replied = clock.rel();
                    let done = match answer {
                        Ok(Ok(out)) => {
                            guest.observe(sess, &op, sent, replied, &out);
                            !matches!(out, ScopedOutcome::Refused { .. })
                        }
                        _ => {
                            guest.unknown(sess, &op);
                            false
                        }
                    };
                    for v in guest.violations.drain(..) {
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
        let (left, set_up) = (clients_left.clone(), set_up.clone());
        let ops = admin_ops(master);
        sim.client("admin", async move {
            while lock(&set_up).is_none() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            for (seq, (pause_ms, op)) in ops.into_iter().enumerate() {
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                let _ = tokio::time::timeout(CALL_TIMEOUT, call(GUESTS, seq, op)).await;
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
            }
            lock(&log).push((clock.rel_at(elapsed_ms), format!("fault {f:?}")));
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

/// Scoped mutants the world cannot reach, and why; the scenarios kill each of them
/// (`tidemark mutants --profile scoped`).
pub const OUT_OF_REACH: &[(&str, &str)] = &[
    (
        "missing-bucket-unavailable",
        "the world's store never loses its bucket: a missing bucket is a deployment mistake, not a fault it injects",
    ),
    (
        "store-denied-as-permission",
        "the world's store never answers AccessDenied: credentials are not among its faults",
    ),
    (
        "throttle-not-retried",
        "the world's outages outlast any retry, so retrying a 503 or not gives the same answers",
    ),
    (
        "lifecycle-merged",
        "the world never puts a lifecycle configuration on its bucket",
    ),
    (
        "kept-classes-expire",
        "the world never puts a lifecycle configuration on its bucket",
    ),
];

/// `tidemark world --profile scoped`: the scoped world as the engine plays and hunts it.
pub const WORLD: crate::world::WorldProfile<ScopedMutant> = crate::world::WorldProfile {
    label: "scoped world",
    replay: "tidemark world --profile scoped",
    profile: "scoped",
    mutants: &ScopedMutant::ALL,
    id: ScopedMutant::id,
    from_id: ScopedMutant::from_id,
    out_of_reach: OUT_OF_REACH,
    run: run_scoped_world,
};

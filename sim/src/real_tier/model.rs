//! Random operation sequences against the scoped reference, checked step by step against a
//! small executable model of SPEC part SC (activity, waits, the idle TTL, session and agent
//! deletion, agent-scope files, listings, extracted text, and refusals: traversal, a missing
//! scope, the read-only workspace).
//! Every sequence comes from one seed; a divergence carries the seed, the steps so far and
//! what the model expected beside what the store did.
//! S3 is the in-memory store over HTTP (fast, deterministic LastModified); PostgreSQL is real.
//!
//! Used by `sim/tests/real_tier_scoped_model.rs` and by `tidemark explore --profile scoped`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tidemark_reference::clock::{Clock, ManualClock, DAY_MS, HOUR_MS};
use tidemark_reference::scoped::{
    PathError, ScopeSettings, ScopedConfig, ScopedError, ScopedMutant, ScopedStore, TurnSpace,
    WaitKind,
};

use crate::clock::EPOCH;
use crate::real_tier::{FaultPlan, MemoryHandle, PgProvider, S3Server};

/// Steps per sequence unless a caller says otherwise.
pub const DEFAULT_STEPS: usize = 60;

const TTL_DAYS: i64 = 30;
const SESSIONS: [(&str, &str); 4] = [("a1", "s1"), ("a1", "s2"), ("a2", "s1"), ("a2", "s2")];
const PATHS: [&str; 3] = ["notes.md", "dir/data.csv", "upload.pdf"];

#[derive(Default, Clone, Debug)]
struct SessionModel {
    last_activity: i64,
    waits: BTreeSet<(u8, u8)>,
    files: BTreeMap<String, String>,
    deleted: bool,
}

const AGENTS: [&str; 2] = ["a1", "a2"];

struct Model {
    sessions: Vec<SessionModel>,
    /// Agent-scope files by agent, kept while the agent exists (SC-1.1).
    agent_files: BTreeMap<&'static str, BTreeMap<String, String>>,
    deleted_agents: BTreeSet<&'static str>,
}

impl Model {
    /// Applies a sweep; returns how many files it removed.
    fn sweep(&mut self, now: i64) -> usize {
        let mut removed = 0;
        for s in &mut self.sessions {
            if s.deleted || (s.waits.is_empty() && now - s.last_activity >= TTL_DAYS * DAY_MS) {
                removed += s.files.len();
                s.files.clear();
            }
        }
        // A deleted agent's obligation is emptied by the same sweep (SC-6).
        for a in &self.deleted_agents {
            if let Some(files) = self.agent_files.get_mut(a) {
                removed += files.len();
                files.clear();
            }
        }
        removed
    }

    /// What a listing with no prefix shows for session `i` (SC-2.5): its session files and its
    /// agent's files; the workspace scope holds nothing in these sequences.
    fn listing(&self, i: usize) -> BTreeSet<String> {
        let agent = SESSIONS[i].0;
        let session = self.sessions[i]
            .files
            .keys()
            .map(|p| format!("session/{p}"));
        let agent_files = self
            .agent_files
            .get(agent)
            .into_iter()
            .flat_map(|f| f.keys().map(|p| format!("agent/{p}")));
        session.chain(agent_files).collect()
    }
}

fn kind(k: u8) -> WaitKind {
    [WaitKind::Queued, WaitKind::Parked, WaitKind::Waiting][k as usize % 3]
}

/// Where a sequence left the model: the step, every operation up to and including it, and
/// what the model expected beside what the store did.
#[derive(Clone, Debug)]
pub struct Divergence {
    pub seed: u64,
    pub step: usize,
    /// The operations, readable, in order; the last is the one that diverged.
    pub ops: Vec<String>,
    pub expected: String,
    pub actual: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {}, step {}:", self.seed, self.step)?;
        writeln!(f, "  expected {}", self.expected)?;
        writeln!(f, "  actual   {}", self.actual)?;
        write!(f, "steps so far:\n  {}", self.ops.join("\n  "))
    }
}

/// Why a sequence did not pass.
#[derive(Clone, Debug)]
pub enum SequenceError {
    /// The store and the model disagree.
    Diverged(Divergence),
    /// The harness could not set up (S3 server, database, bucket): not a verdict.
    Setup(String),
}

impl fmt::Display for SequenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequenceError::Diverged(d) => d.fmt(f),
            SequenceError::Setup(e) => write!(f, "setup failed: {e}"),
        }
    }
}

/// A sequence that agreed with the model throughout.
#[derive(Clone, Copy, Debug, Default)]
pub struct SequenceRun {
    pub steps: usize,
    /// Files the model's sweeps removed (the sequence reached expiry this often).
    pub swept_files: usize,
}

/// Runs the sequence of `seed` (`steps` operations) against a store on its own database of
/// `pg` and its own in-memory S3, `mutant` switched on, `faults` applied after setup.
pub async fn run_sequence(
    pg: &PgProvider,
    seed: u64,
    steps: usize,
    mutant: Option<ScopedMutant>,
    faults: Option<FaultPlan>,
) -> Result<SequenceRun, SequenceError> {
    let setup = |e: String| SequenceError::Setup(e);
    let clock = ManualClock::starting_at(EPOCH);
    let (server, mem): (S3Server, MemoryHandle) =
        S3Server::start_memory(Arc::new(clock.clone()), seed)
            .await
            .map_err(|e| setup(e.to_string()))?;
    let db = pg
        .fresh_database(&format!("model{seed}"))
        .await
        .map_err(|e| setup(e.to_string()))?;
    let outcome = run_on(&server, &mem, &db.pool, &clock, seed, steps, mutant, faults).await;
    let dropped = pg.drop_database(db).await;
    let run = outcome?;
    dropped.map_err(|e| setup(e.to_string()))?;
    Ok(run)
}

#[allow(clippy::too_many_arguments)]
async fn run_on(
    server: &S3Server,
    mem: &MemoryHandle,
    pool: &sqlx::PgPool,
    clock: &ManualClock,
    seed: u64,
    steps: usize,
    mutant: Option<ScopedMutant>,
    faults: Option<FaultPlan>,
) -> Result<SequenceRun, SequenceError> {
    let setup = |e: String| SequenceError::Setup(e);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let client = server.client();
    client
        .create_bucket()
        .bucket("model")
        .send()
        .await
        .map_err(|e| setup(format!("{e:?}")))?;
    let mut config = ScopedConfig::new("model");
    config.session_file_ttl_days = TTL_DAYS as u32;
    config.mutant = mutant;
    let store = ScopedStore::open(client, pool.clone(), config, Arc::new(clock.clone()))
        .await
        .map_err(|e| setup(e.to_string()))?;
    store
        .create_workspace("w1", ScopeSettings::default())
        .await
        .map_err(|e| setup(e.to_string()))?;
    for a in ["a1", "a2"] {
        store
            .create_agent("w1", a, ScopeSettings::default())
            .await
            .map_err(|e| setup(e.to_string()))?;
    }
    let turns: Vec<TurnSpace> = SESSIONS
        .iter()
        .map(|(a, s)| TurnSpace::new("w1", a, s).expect("fixed valid names"))
        .collect();
    let mut model = Model {
        sessions: vec![SessionModel::default(); SESSIONS.len()],
        agent_files: BTreeMap::new(),
        deleted_agents: BTreeSet::new(),
    };
    for (i, t) in turns.iter().enumerate() {
        store
            .create_session(t)
            .await
            .map_err(|e| setup(e.to_string()))?;
        model.sessions[i].last_activity = clock.now().0;
    }

    // Faults from here on: S3 requests fail at random, DeleteObjects keys fail at random.
    let faulty = faults.is_some();
    if let Some(plan) = &faults {
        server.faults().set_plan(plan.clone());
    }
    let mut log: Vec<String> = Vec::new();
    let mut swept_files = 0;
    for step in 0..steps {
        let i = rng.gen_range(0..SESSIONS.len());
        let t = &turns[i];
        let now = clock.now().0;
        let choice = rng.gen_range(0..112);
        let fail = |log: &Vec<String>, expected: String, actual: String| {
            Err(SequenceError::Diverged(Divergence {
                seed,
                step,
                ops: log.clone(),
                expected,
                actual,
            }))
        };
        match choice {
            0..=24 => {
                let path = PATHS[rng.gen_range(0..PATHS.len())];
                let content = format!("v{step}");
                log.push(format!("{}/{} write {path} {content}", t.agent, t.session));
                let r = store
                    .write(t, &format!("session/{path}"), content.clone().into_bytes())
                    .await;
                let m = &mut model.sessions[i];
                match (r, m.deleted) {
                    (Ok(_), false) => {
                        m.files.insert(path.to_string(), content);
                        m.last_activity = m.last_activity.max(now);
                    }
                    (Err(ScopedError::UnknownEntity { .. }), true) => {}
                    // A failed write changed nothing: not the file, not the activity.
                    (Err(ScopedError::Storage { .. }), _) if faulty => {
                        log.push("  (failed: storage)".into())
                    }
                    (r, deleted) => {
                        let want = if deleted {
                            "UnknownEntity (the session is deleted)"
                        } else {
                            "Ok (the session is live)"
                        };
                        return fail(&log, format!("write: {want}"), format!("write: {r:?}"));
                    }
                }
            }
            25..=44 => {
                let path = PATHS[rng.gen_range(0..PATHS.len())];
                log.push(format!("{}/{} read {path}", t.agent, t.session));
                let r = store.read(t, &format!("session/{path}")).await;
                let m = &mut model.sessions[i];
                match (r, m.deleted, m.files.get(path)) {
                    (Ok(b), false, Some(c)) if b == c.as_bytes() => {
                        m.last_activity = m.last_activity.max(now)
                    }
                    (Err(ScopedError::NotFound { .. }), false, None) => {}
                    (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
                    (Err(ScopedError::Storage { .. }), false, _) if faulty => {
                        log.push("  (failed: storage)".into())
                    }
                    (r, deleted, want) => {
                        let want = match (deleted, want) {
                            (true, _) => "UnknownEntity (the session is deleted)".to_string(),
                            (false, None) => "NotFound".to_string(),
                            (false, Some(c)) => format!("Ok({c:?})"),
                        };
                        let got = match r {
                            Ok(b) => format!("Ok({:?})", String::from_utf8_lossy(&b)),
                            Err(e) => format!("Err({e:?})"),
                        };
                        return fail(&log, format!("read: {want}"), format!("read: {got}"));
                    }
                }
            }
            45..=54 => {
                log.push(format!("{}/{} activity", t.agent, t.session));
                let r = store.record_activity(t).await;
                let m = &mut model.sessions[i];
                match (r, m.deleted) {
                    (Ok(()), false) => m.last_activity = m.last_activity.max(now),
                    (Err(ScopedError::UnknownEntity { .. }), true) => {}
                    (r, d) => {
                        let want = if d { "UnknownEntity" } else { "Ok" };
                        return fail(
                            &log,
                            format!("activity: {want} (deleted {d})"),
                            format!("activity: {r:?}"),
                        );
                    }
                }
            }
            55..=64 => {
                let w = (rng.gen_range(0..3u8), rng.gen_range(0..2u8));
                let add = rng.gen_bool(0.5);
                log.push(format!(
                    "{}/{} {} wait {:?} w{}",
                    t.agent,
                    t.session,
                    if add { "add" } else { "remove" },
                    kind(w.0),
                    w.1
                ));
                let id = format!("w{}", w.1);
                let r = if add {
                    store.add_wait(t, kind(w.0), &id).await
                } else {
                    store.remove_wait(t, kind(w.0), &id).await
                };
                let m = &mut model.sessions[i];
                match (r, m.deleted, add) {
                    (Ok(()), false, true) => {
                        m.waits.insert(w);
                    }
                    (Ok(()), false, false) => {
                        m.waits.remove(&w);
                    }
                    (Ok(()), true, false) => {}
                    (Err(ScopedError::UnknownEntity { .. }), true, true) => {}
                    (r, d, a) => {
                        let want = if d && a { "UnknownEntity" } else { "Ok" };
                        return fail(
                            &log,
                            format!("wait: {want} (deleted {d}, add {a})"),
                            format!("wait: {r:?}"),
                        );
                    }
                }
            }
            65..=79 => {
                let ms = rng.gen_range(0..20) * DAY_MS + rng.gen_range(0..24) * HOUR_MS;
                log.push(format!(
                    "advance {}d{}h",
                    ms / DAY_MS,
                    (ms % DAY_MS) / HOUR_MS
                ));
                clock.advance_ms(ms);
            }
            80..=96 => {
                log.push("sweep".into());
                match store.sweep().await {
                    Ok(r) if r.sessions_retried_later == 0 && r.obligations_retried_later == 0 => {}
                    Ok(_) | Err(ScopedError::Storage { .. }) if faulty => {
                        // Interrupted or incomplete: nothing may be marked done that is not.
                        // Healed, the next sweep must finish the job exactly.
                        log.push("  (incomplete under faults; healed and swept again)".into());
                        server.faults().heal();
                        let r = store.sweep().await;
                        if let Some(plan) = &faults {
                            server.faults().set_plan(plan.clone());
                        }
                        if let Err(e) = r {
                            return fail(
                                &log,
                                "the healed sweep: Ok".into(),
                                format!("the healed sweep: {e}"),
                            );
                        }
                    }
                    Ok(r) => {
                        return fail(
                            &log,
                            "sweep: nothing retried (no faults)".into(),
                            format!("sweep: {r:?}"),
                        )
                    }
                    Err(e) => return fail(&log, "sweep: Ok".into(), format!("sweep: {e}")),
                }
                swept_files += model.sweep(now);
                // The bucket agrees with the model, session by session and agent by agent.
                let sessions = SESSIONS.iter().enumerate().map(|(j, (a, s))| {
                    (
                        format!("sessions/w1/{a}/{s}/"),
                        format!("{a}/{s}"),
                        model.sessions[j].files.keys().cloned().collect(),
                    )
                });
                let agents = AGENTS.iter().map(|a| {
                    let files: BTreeSet<String> = model
                        .agent_files
                        .get(a)
                        .map(|f| f.keys().cloned().collect())
                        .unwrap_or_default();
                    (format!("agents/w1/{a}/"), format!("agent {a}"), files)
                });
                for (prefix, name, want) in sessions.chain(agents).collect::<Vec<_>>() {
                    let got = files_under(mem, &prefix);
                    if got != want {
                        return fail(
                            &log,
                            format!("after the sweep {name} holds {want:?}"),
                            format!("after the sweep {name} holds {got:?}"),
                        );
                    }
                }
            }
            100..=110 => {
                if let Err(d) = probe(
                    &store, t, i, now, choice, faulty, &mut rng, &mut model, &mut log,
                )
                .await
                {
                    return fail(&log, d.0, d.1);
                }
            }
            111 => {
                let agent = AGENTS[rng.gen_range(0..AGENTS.len())];
                if model.deleted_agents.contains(agent) {
                    continue;
                }
                log.push(format!("delete agent {agent}"));
                if let Err(e) = store.delete_agent("w1", agent).await {
                    return fail(&log, "delete agent: Ok".into(), format!("{e}"));
                }
                model.deleted_agents.insert(agent);
                for (j, (a, _)) in SESSIONS.iter().enumerate() {
                    if *a == agent {
                        model.sessions[j].deleted = true;
                        model.sessions[j].waits.clear();
                    }
                }
            }
            _ => {
                if model.sessions[i].deleted {
                    continue;
                }
                log.push(format!("{}/{} delete session", t.agent, t.session));
                if let Err(e) = store.delete_session(t).await {
                    return fail(&log, "delete session: Ok".into(), format!("{e}"));
                }
                model.sessions[i].deleted = true;
                model.sessions[i].waits.clear();
            }
        }
    }
    Ok(SequenceRun { steps, swept_files })
}

/// The guest-visible files under `prefix` in the model bucket: extracted text is not a file.
fn files_under(mem: &MemoryHandle, prefix: &str) -> BTreeSet<String> {
    mem.keys("model", prefix)
        .into_iter()
        .filter_map(|k| k.strip_prefix(prefix).map(str::to_string))
        .filter(|k| !k.starts_with(".tidemark-text/"))
        .collect()
}

/// The rarer operations: agent-scope writes, listings, extracted text, single-file deletes, and
/// requests that must be refused (traversal in two spellings, a path with no scope, a write to the read-only
/// workspace). Returns (expected, actual) on a divergence.
#[allow(clippy::too_many_arguments)]
async fn probe(
    store: &ScopedStore,
    t: &TurnSpace,
    i: usize,
    now: i64,
    choice: u32,
    faulty: bool,
    rng: &mut ChaCha8Rng,
    model: &mut Model,
    log: &mut Vec<String>,
) -> Result<(), (String, String)> {
    let path = PATHS[rng.gen_range(0..PATHS.len())];
    let who = format!("{}/{}", t.agent, t.session);
    let deleted = model.sessions[i].deleted;
    let gone = |r: &str| {
        (
            format!("{r}: UnknownEntity (the session is deleted)"),
            String::new(),
        )
    };
    match choice {
        100 | 101 => {
            let content = format!("agent v{}", log.len());
            log.push(format!("{who} write agent/{path} {content}"));
            match (
                store
                    .write(t, &format!("agent/{path}"), content.clone().into_bytes())
                    .await,
                deleted,
            ) {
                (Err(ScopedError::Storage { .. }), _) if faulty => {
                    log.push("  (failed: storage)".into())
                }
                (Ok(_), false) => {
                    model
                        .agent_files
                        .entry(SESSIONS[i].0)
                        .or_default()
                        .insert(path.to_string(), content);
                    let m = &mut model.sessions[i];
                    m.last_activity = m.last_activity.max(now);
                }
                (Err(ScopedError::UnknownEntity { .. }), true) => {}
                (r, true) => return Err((gone("agent write").0, format!("agent write: {r:?}"))),
                (r, false) => {
                    return Err(("agent write: Ok".into(), format!("agent write: {r:?}")))
                }
            }
        }
        102 | 103 => {
            log.push(format!("{who} list"));
            match (store.list(t, None).await, deleted) {
                (Err(ScopedError::Storage { .. }), _) if faulty => {
                    log.push("  (failed: storage)".into())
                }
                (Err(ScopedError::Storage { .. }), _) if faulty => {
                    log.push("  (failed: storage)".into())
                }
                (Ok(files), false) => {
                    let got: BTreeSet<String> = files.into_iter().map(|f| f.path).collect();
                    let want = model.listing(i);
                    if got != want {
                        return Err((format!("list: {want:?}"), format!("list: {got:?}")));
                    }
                    let m = &mut model.sessions[i];
                    m.last_activity = m.last_activity.max(now);
                }
                (Err(ScopedError::UnknownEntity { .. }), true) => {}
                (r, d) => {
                    let want = if d { gone("list").0 } else { "list: Ok".into() };
                    return Err((want, format!("list: {r:?}")));
                }
            }
        }
        104 | 105 => {
            log.push(format!("{who} text session/{path}"));
            let want = model.sessions[i].files.get(path).cloned();
            match (
                store.read_text(t, &format!("session/{path}")).await,
                deleted,
                want,
            ) {
                (Err(ScopedError::Storage { .. }), _, _) if faulty => {
                    log.push("  (failed: storage)".into())
                }
                (Ok(Some(text)), false, Some(c)) if text == c => {
                    let m = &mut model.sessions[i];
                    m.last_activity = m.last_activity.max(now);
                }
                (Err(ScopedError::NotFound { .. }), false, None) => {}
                (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
                (r, d, w) => {
                    let want = match (d, w) {
                        (true, _) => gone("text").0,
                        (false, None) => "text: NotFound (the file is gone, so is its text)".into(),
                        (false, Some(c)) => format!("text: Ok(Some({c:?}))"),
                    };
                    return Err((want, format!("text: {r:?}")));
                }
            }
        }
        106 | 107 => {
            let spelled = if rng.gen_bool(0.5) {
                format!("session/dir/../../agent/{path}")
            } else {
                format!("session/%2e%2e/agent/{path}")
            };
            log.push(format!("{who} read {spelled}"));
            match store.read(t, &spelled).await {
                Err(ScopedError::Path(PathError::Traversal { .. })) => {}
                r => {
                    return Err((
                        "read: refused as Traversal, never clamped".into(),
                        format!("read: {r:?}"),
                    ))
                }
            }
        }
        109 => {
            log.push(format!("{who} delete session/{path}"));
            let had = model.sessions[i].files.contains_key(path);
            match (
                store.delete(t, &format!("session/{path}")).await,
                deleted,
                had,
            ) {
                (Err(ScopedError::Storage { .. }), _, _) if faulty => {
                    log.push("  (failed: storage)".into())
                }
                (Ok(()), false, true) => {
                    let m = &mut model.sessions[i];
                    m.files.remove(path);
                    m.last_activity = m.last_activity.max(now);
                    // The text goes with its file, at once (SC-4): a file the listing no longer
                    // shows is not readable, not even as text.
                    log.push(format!("{who} text session/{path}"));
                    match store.read_text(t, &format!("session/{path}")).await {
                        Err(ScopedError::NotFound { .. }) => {}
                        Err(ScopedError::Storage { .. }) if faulty => {
                            log.push("  (failed: storage)".into())
                        }
                        r => {
                            return Err((
                                "text of a deleted file: NotFound".into(),
                                format!("text: {r:?}"),
                            ))
                        }
                    }
                }
                (Err(ScopedError::NotFound { .. }), false, false) => {}
                (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
                (r, d, h) => {
                    let want = match (d, h) {
                        (true, _) => gone("delete").0,
                        (false, true) => "delete: Ok".into(),
                        (false, false) => "delete: NotFound".into(),
                    };
                    return Err((want, format!("delete: {r:?}")));
                }
            }
        }
        108 => {
            log.push(format!("{who} read {path}"));
            match store.read(t, path).await {
                Err(ScopedError::Path(PathError::MissingScope { corrections, .. }))
                    if corrections.len() == 3 => {}
                r => {
                    return Err((
                        "read: refused as MissingScope with three corrections".into(),
                        format!("read: {r:?}"),
                    ))
                }
            }
        }
        _ => {
            log.push(format!("{who} write workspace/{path}"));
            match (
                store
                    .write(t, &format!("workspace/{path}"), b"shared".to_vec())
                    .await,
                deleted,
            ) {
                (Err(ScopedError::Storage { .. }), _) if faulty => {
                    log.push("  (failed: storage)".into())
                }
                (Err(ScopedError::PermissionDenied { .. }), false) => {}
                (Err(ScopedError::UnknownEntity { .. }), true) => {}
                (r, d) => {
                    let want = if d {
                        gone("workspace write").0
                    } else {
                        "workspace write: PermissionDenied (read-only by default)".into()
                    };
                    return Err((want, format!("workspace write: {r:?}")));
                }
            }
        }
    }
    Ok(())
}

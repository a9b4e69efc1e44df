//! Random operation sequences against the scoped reference, checked step by step against a
//! small executable model of SPEC part SC (activity, waits, the idle TTL, session deletion).
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
    ScopeSettings, ScopedConfig, ScopedError, ScopedMutant, ScopedStore, TurnSpace, WaitKind,
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

struct Model {
    sessions: Vec<SessionModel>,
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
        removed
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
        let choice = rng.gen_range(0..100);
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
                // The bucket agrees with the model, session by session.
                for (j, (a, s)) in SESSIONS.iter().enumerate() {
                    let prefix = format!("sessions/w1/{a}/{s}/");
                    let got: BTreeSet<String> = mem
                        .keys("model", &prefix)
                        .into_iter()
                        .filter_map(|k| k.strip_prefix(&prefix).map(str::to_string))
                        .filter(|k| !k.starts_with(".tidemark-text/"))
                        .collect();
                    let want: BTreeSet<String> = model.sessions[j].files.keys().cloned().collect();
                    if got != want {
                        return fail(
                            &log,
                            format!("after the sweep {a}/{s} holds {want:?}"),
                            format!("after the sweep {a}/{s} holds {got:?}"),
                        );
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

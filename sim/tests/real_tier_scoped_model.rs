//! Random operation sequences against the scoped reference, checked step by step against a
//! small executable model of SPEC part SC (activity, waits, the idle TTL, session deletion).
//! Every sequence comes from one seed; a failure prints the seed and the steps so far.
//! S3 is the in-memory store over HTTP (fast, deterministic LastModified); PostgreSQL is real.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tidemark_reference::clock::{Clock, ManualClock, DAY_MS, HOUR_MS};
use tidemark_reference::scoped::{
    ScopeSettings, ScopedConfig, ScopedError, ScopedMutant, ScopedStore, TurnSpace, WaitKind,
};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::{FaultPlan, MemoryHandle, PgProvider, S3Server};

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

async fn run_sequence(
    pg: &PgProvider,
    seed: u64,
    steps: usize,
    mutant: Option<ScopedMutant>,
    faults: Option<FaultPlan>,
) -> Result<usize, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let clock = ManualClock::starting_at(EPOCH);
    let (server, mem): (S3Server, MemoryHandle) =
        S3Server::start_memory(Arc::new(clock.clone()), seed)
            .await
            .map_err(|e| e.to_string())?;
    let db = pg
        .fresh_database(&format!("model{seed}"))
        .await
        .map_err(|e| e.to_string())?;
    let client = server.client();
    client
        .create_bucket()
        .bucket("model")
        .send()
        .await
        .map_err(|e| format!("{e:?}"))?;
    let mut config = ScopedConfig::new("model");
    config.session_file_ttl_days = TTL_DAYS as u32;
    config.mutant = mutant;
    let store = ScopedStore::open(client, db.pool.clone(), config, Arc::new(clock.clone()))
        .await
        .map_err(|e| e.to_string())?;
    store
        .create_workspace("w1", ScopeSettings::default())
        .await
        .map_err(|e| e.to_string())?;
    for a in ["a1", "a2"] {
        store
            .create_agent("w1", a, ScopeSettings::default())
            .await
            .map_err(|e| e.to_string())?;
    }
    let turns: Vec<TurnSpace> = SESSIONS
        .iter()
        .map(|(a, s)| TurnSpace::new("w1", a, s).unwrap())
        .collect();
    let mut model = Model {
        sessions: vec![SessionModel::default(); SESSIONS.len()],
    };
    for (i, t) in turns.iter().enumerate() {
        store.create_session(t).await.map_err(|e| e.to_string())?;
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
        let fail = |log: &Vec<String>, what: String| -> Result<usize, String> {
            Err(format!(
                "seed {seed}, step {step}: {what}\nsteps so far:\n  {}",
                log.join("\n  ")
            ))
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
                        return fail(&log, format!("write gave {r:?} (deleted {deleted})"))
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
                        return fail(
                            &log,
                            format!(
                                "read gave {:?}, model has {want:?} (deleted {deleted})",
                                r.map(|b| String::from_utf8_lossy(&b).into_owned())
                            ),
                        )
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
                    (r, d) => return fail(&log, format!("activity gave {r:?} (deleted {d})")),
                }
            }
            55..=64 => {
                let w = (rng.gen_range(0..3u8), rng.gen_range(0..2u8));
                let add = rng.gen_bool(0.5);
                log.push(format!(
                    "{}/{} {} wait {w:?}",
                    t.agent,
                    t.session,
                    if add { "add" } else { "remove" }
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
                        return fail(&log, format!("wait gave {r:?} (deleted {d}, add {a})"))
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
                            return fail(&log, format!("the healed sweep failed: {e}"));
                        }
                    }
                    Ok(r) => return fail(&log, format!("a sweep without faults retried: {r:?}")),
                    Err(e) => return fail(&log, format!("sweep failed: {e}")),
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
                            format!("after the sweep {a}/{s} holds {got:?}, the model {want:?}"),
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
                    return fail(&log, format!("delete session failed: {e}"));
                }
                model.sessions[i].deleted = true;
                model.sessions[i].waits.clear();
            }
        }
    }
    pg.drop_database(db).await.map_err(|e| e.to_string())?;
    Ok(swept_files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_of_writes_reads_waits_sweeps_and_deletions_agree_with_the_model() {
    let pg = PgProvider::from_environment().await.unwrap();
    let mut swept = 0;
    for seed in 0..24 {
        match run_sequence(&pg, seed, 60, None, None).await {
            Ok(n) => swept += n,
            Err(e) => {
                panic!("{e}\nreplay: cargo test -p tidemark-sim --test real_tier_scoped_model")
            }
        }
    }
    // The sequences must reach the interesting part: files actually expiring.
    assert!(swept >= 10, "only {swept} files were ever swept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_find_the_age_only_and_waits_ignored_mutants() {
    let pg = PgProvider::from_environment().await.unwrap();
    for m in [ScopedMutant::AgeOnlyExpiry, ScopedMutant::WaitsIgnored] {
        let mut killed = None;
        for seed in 0..24 {
            if run_sequence(&pg, seed, 60, Some(m), None).await.is_err() {
                killed = Some(seed);
                break;
            }
        }
        assert!(
            killed.is_some(),
            "mutant {} survives 24 random sequences",
            m.id()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_random_store_faults_nothing_half_done_is_reported_done_and_a_healed_sweep_finishes()
{
    let pg = PgProvider::from_environment().await.unwrap();
    let plan = FaultPlan {
        error_rate: 0.15,
        delete_key_failure_rate: 0.2,
        ..Default::default()
    };
    for seed in 100..116 {
        if let Err(e) = run_sequence(&pg, seed, 60, None, Some(plan.clone())).await {
            panic!("{e}\nreplay: cargo test -p tidemark-sim --test real_tier_scoped_model under_random");
        }
    }
}

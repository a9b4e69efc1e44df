//! The in-memory metadata store earns its place in the simulation tier by answering like
//! PostgreSQL: the same seeded random operation sequences (entities, waits, activity, sweeps
//! that claim or merely read, two claims at once, obligations met or abandoned, deletions with
//! their cascades and triggers, commits and rollbacks, workspaces' own idle TTLs) run on both, and
//! every answer and the tables after every step must be equal, ids included.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tidemark_reference::scoped::metadata::{
    Entity, MemoryMetadata, Metadata, PostgresMetadata, SessionKey,
};
use tidemark_reference::scoped::{Access, ScopeSettings, ScopedError, WaitKind};
use tidemark_sim::real_tier::PgProvider;

const SEEDS: u64 = 24;
const STEPS: usize = 80;
/// The clock's step between operations: a quarter of a day, so a workspace's own idle TTL (whole
/// days, SPEC SL-5.1) and the sweeps' default TTLs (quarters) each find some sessions idle.
const STEP_MS: i64 = tidemark_reference::clock::DAY_MS / 4;

fn pick<T: Copy>(rng: &mut ChaCha8Rng, xs: &[T]) -> T {
    xs[rng.gen_range(0..xs.len())]
}

fn settings(rng: &mut ChaCha8Rng) -> ScopeSettings {
    let a = [
        None,
        Some(Access::None),
        Some(Access::Read),
        Some(Access::ReadWrite),
    ];
    ScopeSettings {
        agent: pick(rng, &a),
        workspace: pick(rng, &a),
    }
}

fn key(rng: &mut ChaCha8Rng) -> SessionKey {
    SessionKey::new(
        pick(rng, &["w1", "w2"]),
        pick(rng, &["a1", "a2"]),
        pick(rng, &["s1", "s2", "s3"]),
    )
}

fn entity(rng: &mut ChaCha8Rng) -> Entity {
    match rng.gen_range(0..3) {
        0 => Entity::Session(key(rng)),
        1 => Entity::Agent {
            workspace: pick(rng, &["w1", "w2"]).to_string(),
            agent: pick(rng, &["a1", "a2"]).to_string(),
        },
        _ => Entity::Workspace(pick(rng, &["w1", "w2"]).to_string()),
    }
}

fn kind(rng: &mut ChaCha8Rng) -> WaitKind {
    pick(
        rng,
        &[WaitKind::Queued, WaitKind::Parked, WaitKind::Waiting],
    )
}

fn err(e: ScopedError) -> String {
    format!("error {}", e.kind())
}

/// One random step on `m`, described as text: what it did and what it answered. `rng` is a
/// clone per store, so both stores see the same step.
async fn step(m: &dyn Metadata, rng: &mut ChaCha8Rng, now: i64) -> Result<String, String> {
    let done = match rng.gen_range(0..12) {
        0 => {
            let ws = pick(rng, &["w1", "w2"]);
            let s = settings(rng);
            format!(
                "upsert ws {ws}: {:?}",
                m.upsert_workspace(ws, s).await.map_err(err)?
            )
        }
        1 => {
            let ws = pick(rng, &["w1", "w2", "w3"]);
            let a = pick(rng, &["a1", "a2"]);
            let s = settings(rng);
            format!(
                "upsert agent {ws}/{a}: {:?}",
                m.upsert_agent(ws, a, s).await.map_err(err)?
            )
        }
        2 | 3 => {
            let k = key(rng);
            format!(
                "insert {k:?}: {:?}",
                m.insert_session(&k, now).await.map_err(err)?
            )
        }
        4 => {
            let (k, kd, id) = (key(rng), kind(rng), pick(rng, &["m1", "m2"]));
            if rng.gen_bool(0.6) {
                format!(
                    "wait {k:?} {kd:?} {id}: {:?}",
                    m.insert_wait(&k, kd, id).await.map_err(err)?
                )
            } else {
                m.delete_wait(&k, kd, id).await.map_err(err)?;
                format!("unwait {k:?} {kd:?} {id}")
            }
        }
        5 => {
            let k = key(rng);
            let commit = rng.gen_bool(0.8);
            let mut tx = m.begin().await.map_err(err)?;
            let layers = tx.lock_session(&k).await.map_err(err)?;
            if layers.is_some() {
                tx.touch(&k, now).await.map_err(err)?;
            }
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(err)?;
            format!("touch {k:?} commit={commit}: {layers:?}")
        }
        6 | 7 => {
            let ttl = rng.gen_range(0..12) * STEP_MS;
            let limit = rng.gen_range(1..6);
            let (ignoring, claim, commit) =
                (rng.gen_bool(0.2), rng.gen_bool(0.8), rng.gen_bool(0.8));
            let mask: u32 = rng.gen();
            let mut tx = m.begin().await.map_err(err)?;
            let got = tx
                .claim_idle_sessions(now, ttl, limit, ignoring, claim)
                .await
                .map_err(err)?;
            for (i, k) in got.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    tx.mark_swept(k, now).await.map_err(err)?;
                }
            }
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(err)?;
            format!("sweep {ttl} {limit} ignoring={ignoring} claim={claim} mask={mask:b} commit={commit}: {got:?}")
        }
        8 => {
            // Two sweepers at once: the second skips what the first holds.
            let (l1, l2) = (rng.gen_range(1..4), rng.gen_range(1..8));
            let mut a = m.begin().await.map_err(err)?;
            let mut b = m.begin().await.map_err(err)?;
            let ga = a
                .claim_idle_sessions(now, 0, l1, false, true)
                .await
                .map_err(err)?;
            let gb = b
                .claim_idle_sessions(now, 0, l2, false, true)
                .await
                .map_err(err)?;
            let oa = a.claim_obligations(l1).await.map_err(err)?;
            let ob = b.claim_obligations(l2).await.map_err(err)?;
            for k in &gb {
                b.mark_swept(k, now).await.map_err(err)?;
            }
            b.commit().await.map_err(err)?;
            a.rollback().await.map_err(err)?;
            format!("two claims {l1} {l2}: {ga:?} {gb:?} {oa:?} {ob:?}")
        }
        9 => {
            let limit = rng.gen_range(1..6);
            let (mask, commit): (u32, bool) = (rng.gen(), rng.gen_bool(0.8));
            let mut tx = m.begin().await.map_err(err)?;
            let got = tx.claim_obligations(limit).await.map_err(err)?;
            for (i, (id, prefix)) in got.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    tx.record_obligation(*id, prefix, i as i64, now)
                        .await
                        .map_err(err)?;
                    tx.mark_done(*id, now).await.map_err(err)?;
                }
            }
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(err)?;
            format!("obligations {limit} mask={mask:b} commit={commit}: {got:?}")
        }
        10 => {
            let e = entity(rng);
            let (triggers, commit) = (rng.gen_bool(0.85), rng.gen_bool(0.85));
            let mut tx = m.begin().await.map_err(err)?;
            if !triggers {
                tx.record_deletion("app/", "session", "x", now)
                    .await
                    .map_err(err)?;
            }
            let n = tx.delete_entity(&e, now, triggers).await.map_err(err)?;
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(err)?;
            format!("delete {e:?} triggers={triggers} commit={commit}: {n}")
        }
        _ => {
            let id = rng.gen_range(1..12);
            format!(
                "done-if-pending {id}: {:?}",
                m.mark_done_if_pending(id, now).await.map_err(err)?
            )
        }
    };
    // Drawn after the step's own draws, so the operations the seeds drew before these stay as
    // they were: now and then a workspace's own idle TTL set, replaced or removed (SPEC SL-5.1),
    // and a count's ranking read and claim of the sessions it sweeps (SL-2), beside a sweep
    // holding some sessions.
    let mut done = done;
    if rng.gen_ratio(1, 5) {
        let ws = pick(rng, &["w1", "w2", "w3"]);
        let days = pick(rng, &[None, Some(1), Some(2), Some(3)]);
        done = format!(
            "{done}; retention {ws} {days:?}: {:?}",
            m.set_workspace_retention(ws, days).await.map_err(err)?
        );
    }
    if rng.gen_ratio(1, 5) {
        let keys: Vec<SessionKey> = (0..rng.gen_range(1..5)).map(|_| key(rng)).collect();
        let (ws, agent) = (
            pick(rng, &["w1", "w2"]),
            pick(rng, &[Some("a1"), Some("a2"), None]),
        );
        let (held, commit) = (rng.gen_range(0..3), rng.gen_bool(0.7));
        let mut sweep = m.begin().await.map_err(err)?;
        let holding = sweep
            .claim_idle_sessions(now, 0, held, true, true)
            .await
            .map_err(err)?;
        let mut count = m.begin().await.map_err(err)?;
        let claimed = count.claim_sessions(&keys).await.map_err(err)?;
        let standings = count.agent_sessions(ws, agent).await.map_err(err)?;
        for k in &claimed {
            count.mark_swept(k, now).await.map_err(err)?;
        }
        if commit {
            count.commit().await
        } else {
            count.rollback().await
        }
        .map_err(err)?;
        sweep.rollback().await.map_err(err)?;
        done = format!(
            "{done}; count {keys:?} {ws}/{agent:?} held {holding:?} commit={commit}: {claimed:?} {standings:?}"
        );
    }
    Ok(done)
}

/// Everything observable through the trait, as text.
async fn tables(m: &dyn Metadata) -> Result<String, String> {
    let mut out = format!(
        "obligations {:?}\nrecords {:?}\npending {:?}\n",
        m.obligations().await.map_err(err)?,
        m.records().await.map_err(err)?,
        m.pending_obligation_ids().await.map_err(err)?
    );
    let mut tx = m.begin().await.map_err(err)?;
    for ignoring in [true, false] {
        let all = tx
            .claim_idle_sessions(i64::MAX, 0, 1000, ignoring, false)
            .await
            .map_err(err)?;
        out.push_str(&format!("unswept ignoring={ignoring} {all:?}\n"));
    }
    tx.rollback().await.map_err(err)?;
    out.push_str(&format!(
        "retention {:?}\n",
        m.workspace_retentions().await.map_err(err)?
    ));
    for ws in ["w1", "w2"] {
        out.push_str(&format!(
            "{ws} {:?} ",
            m.workspace_exists(ws).await.map_err(err)?
        ));
        for a in ["a1", "a2"] {
            for s in ["s1", "s2", "s3"] {
                let k = SessionKey::new(ws, a, s);
                out.push_str(&format!("{:?} ", m.session_exists(&k).await.map_err(err)?));
            }
        }
    }
    // The people's files API finds a session by its id alone (SPEC SF-2.2).
    for s in ["s1", "s2", "s3"] {
        out.push_str(&format!(
            "\n{s} named in {:?}",
            m.sessions_named(s).await.map_err(err)?
        ));
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_metadata_answers_every_operation_as_postgresql_does() {
    let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
    for seed in 0..SEEDS {
        let db = pg.fresh_database(&format!("metadiff{seed}")).await.unwrap();
        let real = PostgresMetadata::new(db.pool.clone());
        real.migrate().await.unwrap();
        let mem = MemoryMetadata::new();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut log = Vec::new();
        for i in 0..STEPS {
            let now = (i as i64) * STEP_MS;
            let mut r1 = ChaCha8Rng::seed_from_u64(rng.gen());
            let mut r2 = r1.clone();
            let a = step(&real, &mut r1, now).await;
            let b = step(&mem, &mut r2, now).await;
            log.push(format!("{a:?}"));
            assert_eq!(
                b, a,
                "seed {seed}, step {i}: memory (left) and PostgreSQL (right) answer differently\nsteps:\n{}",
                log.join("\n")
            );
            let (ta, tb) = (tables(&real).await, tables(&mem).await);
            assert_eq!(
                tb, ta,
                "seed {seed}, step {i}: the tables differ (memory left, PostgreSQL right)\nsteps:\n{}",
                log.join("\n")
            );
        }
        pg.drop_database(db).await.unwrap();
    }
}

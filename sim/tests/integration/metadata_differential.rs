//! The in-memory metadata store earns its place in the simulation tier by answering like
//! PostgreSQL: the same seeded random operation sequences (entities, waits, activity, sweeps
//! that claim or merely read, two claims at once, obligations met or abandoned, deletions with
//! their cascades and triggers, closes and the close sweep's claims, erasures recorded, proven
//! and met, workspaces' own idle TTLs and the idle claims they shorten or lengthen, commits and
//! rollbacks) run on both, and every answer and the tables after every step must be equal, ids
//! included.

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
    Ok(match rng.gen_range(0..14) {
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
            let cutoff = now - rng.gen_range(0..5_000);
            let limit = rng.gen_range(1..6);
            let (ignoring, claim, commit) =
                (rng.gen_bool(0.2), rng.gen_bool(0.8), rng.gen_bool(0.8));
            let (mask, unfinished): (u32, u32) = (rng.gen(), rng.gen());
            let mut tx = m.begin().await.map_err(err)?;
            let got = tx
                .claim_idle_sessions(cutoff, 0, limit, ignoring, claim)
                .await
                .map_err(err)?;
            for (i, k) in got.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    tx.mark_swept(k, now).await.map_err(err)?;
                } else if unfinished & (1 << i) != 0 {
                    // A key failed: the next sweep finishes it (SC-5.5, SL-2.4).
                    tx.mark_sweep_unfinished(k, now).await.map_err(err)?;
                }
            }
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(err)?;
            format!("sweep {cutoff} {limit} ignoring={ignoring} claim={claim} mask={mask:b} unfinished={unfinished:b} commit={commit}: {got:?}")
        }
        8 => {
            // Two sweepers at once: the second skips what the first holds.
            let cutoff = now;
            let (l1, l2) = (rng.gen_range(1..4), rng.gen_range(1..8));
            let mut a = m.begin().await.map_err(err)?;
            let mut b = m.begin().await.map_err(err)?;
            let ga = a
                .claim_idle_sessions(cutoff, 0, l1, false, true)
                .await
                .map_err(err)?;
            let gb = b
                .claim_idle_sessions(cutoff, 0, l2, false, true)
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
        12 => {
            // An erasure (SPEC SL-4): the subject's row deleted by its cascade and triggers,
            // the obligation recorded, the pending deletions under its prefixes handed to it.
            let ws = pick(rng, &["w1", "w2"]);
            let agent = rng.gen_bool(0.6).then(|| pick(rng, &["a1", "a2"]));
            let commit = rng.gen_bool(0.85);
            let e = match agent {
                Some(a) => Entity::Agent {
                    workspace: ws.to_string(),
                    agent: a.to_string(),
                },
                None => Entity::Workspace(ws.to_string()),
            };
            let prefixes: Vec<String> = match agent {
                Some(a) => vec![format!("agents/{ws}/{a}/"), format!("sessions/{ws}/{a}/")],
                None => ["workspaces", "skills", "agents", "sessions"]
                    .iter()
                    .map(|c| format!("{c}/{ws}/"))
                    .collect(),
            };
            let mut tx = m.begin().await.map_err(err)?;
            let n = tx.delete_entity(&e, now, true).await.map_err(err)?;
            let id = tx
                .record_erasure(ws, agent, now, now + 5_000, &prefixes)
                .await
                .map_err(err)?;
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(err)?;
            format!(
                "erase {e:?} commit={commit}: {n} as {id}, pending {:?}",
                m.erasure_pending(ws, agent).await.map_err(err)?
            )
        }
        13 => {
            // An erasure sweep's chunk: keys written down, some recorded deleted, some met.
            let limit = rng.gen_range(1..4);
            let (mask, commit): (u32, bool) = (rng.gen(), rng.gen_bool(0.85));
            let mut tx = m.begin().await.map_err(err)?;
            let got = tx.claim_erasures(limit).await.map_err(err)?;
            let mut out = Vec::new();
            for (i, e) in got.iter().enumerate() {
                let keys = vec![
                    format!("sessions/{}/a1/s1/f{i}", e.workspace),
                    format!("agents/{}/a1/g", e.workspace),
                ];
                m.write_down_erasure_keys(e.id, &keys, now, mask & 1 != 0)
                    .await
                    .map_err(err)?;
                let unrecorded = m.unrecorded_erasure_keys(e.id).await.map_err(err)?;
                tx.mark_erasure_keys_deleted(e.id, &keys[..1], now)
                    .await
                    .map_err(err)?;
                let met = if mask & (2 << i) != 0 {
                    Some(tx.complete_erasure(e.id, now).await.map_err(err)?)
                } else {
                    None
                };
                out.push((e.id, unrecorded, met));
            }
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(err)?;
            format!("erasures {limit} mask={mask:b} commit={commit}: {got:?} {out:?}")
        }
        _ => {
            let id = rng.gen_range(1..12);
            format!(
                "done-if-pending {id}: {:?}",
                m.mark_done_if_pending(id, now).await.map_err(err)?
            )
        }
    })
}

/// The workspace and agent of the sessions [`close_step`] mostly closes.
const CLOSES_WS: &str = "w9";
const CLOSES_AGENT: &str = "c1";

/// One random step of a session's close (SPEC SL-3) on `m`: a close kept, moved or cleared, or
/// the close sweep's claim beside a second claimer. Drawn from a stream of its own, so the
/// steps of [`step`] keep the sequences they had before closes existed.
async fn close_step(m: &dyn Metadata, rng: &mut ChaCha8Rng, now: i64) -> Result<String, String> {
    Ok(match rng.gen_range(0..2) {
        0 => {
            // A close (SPEC SL-3), kept or moved, committed or not, after a turn half the time
            // (so a session the idle steps swept is closed unswept); activity clears a close.
            // Mostly a session of the workspace only these steps touch (no step of [`step`]
            // deletes or rewrites it, so its rows keep their order), made if missing.
            let k = if rng.gen_bool(0.7) {
                let k = SessionKey::new(CLOSES_WS, CLOSES_AGENT, pick(rng, &["s1", "s2", "s3"]));
                m.insert_session(&k, now).await.map_err(err)?;
                k
            } else {
                key(rng)
            };
            let (commit, clear, turn) = (rng.gen_bool(0.8), rng.gen_bool(0.2), rng.gen_bool(0.5));
            let mut tx = m.begin().await.map_err(err)?;
            let layers = tx.lock_session(&k).await.map_err(err)?;
            if turn {
                tx.touch(&k, now).await.map_err(err)?;
            }
            let before = tx.closed_at(&k).await.map_err(err)?;
            tx.set_closed_at(&k, (!clear).then_some(now))
                .await
                .map_err(err)?;
            let after = tx.closed_at(&k).await.map_err(err)?;
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(err)?;
            // Work waiting in a closed session holds it (SC-5.2): the claims must pass it by.
            let waits = if rng.gen_bool(0.3) {
                m.insert_wait(&k, kind(rng), "c1").await.map_err(err)?
            } else {
                false
            };
            format!(
                "close {k:?} clear={clear} turn={turn} commit={commit}: {:?} {before:?} {after:?} wait={waits}",
                layers.is_some()
            )
        }
        _ => {
            // The close sweep's claim, beside a second claimer that skips what the first holds.
            let cutoff = now - rng.gen_range(0..2_000);
            let (l1, l2) = (rng.gen_range(1..4), rng.gen_range(1..8));
            let (ignoring, claim) = (rng.gen_bool(0.2), rng.gen_bool(0.8));
            let mask: u32 = rng.gen();
            let mut a = m.begin().await.map_err(err)?;
            let mut b = m.begin().await.map_err(err)?;
            let ga = a
                .claim_closed_sessions(cutoff, l1, ignoring, claim)
                .await
                .map_err(err)?;
            let gb = b
                .claim_closed_sessions(cutoff, l2, false, true)
                .await
                .map_err(err)?;
            for (i, st) in gb.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    b.mark_swept(&st.key, now).await.map_err(err)?;
                }
            }
            b.commit().await.map_err(err)?;
            a.rollback().await.map_err(err)?;
            format!("close claims {cutoff} {l1} {l2} ignoring={ignoring} claim={claim} mask={mask:b}: {ga:?} {gb:?}")
        }
    })
}

/// One random step of a workspace's own idle TTL (SPEC SL-5.1) on `m`: a retention set, replaced
/// or removed, or the idle sweep's claim some days ahead, where a workspace's TTL shorter than
/// the default takes sessions the default keeps and a longer one keeps them. Drawn from a
/// stream of its own, so the steps of [`step`] keep their sequences.
async fn retention_step(
    m: &dyn Metadata,
    rng: &mut ChaCha8Rng,
    now: i64,
) -> Result<String, String> {
    use tidemark_reference::clock::DAY_MS;
    Ok(if rng.gen_bool(0.5) {
        let ws = pick(rng, &["w1", "w2", "w3"]);
        let days = pick(rng, &[None, Some(1), Some(2), Some(3)]);
        format!(
            "retention {ws} {days:?}: {:?}",
            m.set_workspace_retention(ws, days).await.map_err(err)?
        )
    } else {
        let ahead = rng.gen_range(0..5) * DAY_MS;
        let (limit, claim) = (rng.gen_range(1..8), rng.gen_bool(0.7));
        let mut tx = m.begin().await.map_err(err)?;
        let got = tx
            .claim_idle_sessions(now + ahead, 2 * DAY_MS, limit, false, claim)
            .await
            .map_err(err)?;
        tx.rollback().await.map_err(err)?;
        format!("idle {ahead} ahead {limit} claim={claim}: {got:?}")
    })
}

/// Everything observable through the trait, as text.
async fn tables(m: &dyn Metadata) -> Result<String, String> {
    let mut out = format!(
        "obligations {:?}\nrecords {:?}\npending {:?}\n",
        m.obligations().await.map_err(err)?,
        m.records().await.map_err(err)?,
        m.pending_obligation_ids().await.map_err(err)?
    );
    out.push_str(&format!(
        "erasures {:?}\nproofs {:?}\n",
        m.erasures().await.map_err(err)?,
        m.erasure_proofs().await.map_err(err)?
    ));
    let mut tx = m.begin().await.map_err(err)?;
    for ignoring in [true, false] {
        let all = tx
            .claim_idle_sessions(i64::MAX, 0, 1000, ignoring, false)
            .await
            .map_err(err)?;
        out.push_str(&format!("unswept ignoring={ignoring} {all:?}\n"));
        let closed = tx
            .claim_closed_sessions(i64::MAX, 1000, ignoring, false)
            .await
            .map_err(err)?;
        out.push_str(&format!("closed ignoring={ignoring} {closed:?}\n"));
    }
    for (ws, agents) in [
        ("w1", ["a1", "a2"]),
        ("w2", ["a1", "a2"]),
        (CLOSES_WS, [CLOSES_AGENT; 2]),
    ] {
        for a in agents {
            for s in ["s1", "s2", "s3"] {
                let k = SessionKey::new(ws, a, s);
                out.push_str(&format!("{:?} ", tx.closed_at(&k).await.map_err(err)?));
            }
        }
    }
    // What the count ranks (SPEC SL-2) and what the next sweep finishes first (SL-2.4).
    out.push_str(&format!(
        "unfinished {:?}\n",
        tx.claim_unfinished_sessions(1000).await.map_err(err)?
    ));
    for ws in ["w1", "w2"] {
        out.push_str(&format!(
            "{ws} standings {:?}\n",
            tx.agent_standings(ws, None).await.map_err(err)?
        ));
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
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
async fn the_in_memory_metadata_answers_every_operation_as_postgresql_does() {
    let pg = Arc::new(PgProvider::from_environment().await.expect("PostgreSQL"));
    // Whether some erasure was met with a deletion obligation it held: the erasure steps are
    // compared doing something, not only claiming nothing.
    let mut erasure_met_a_deletion = false;
    for seed in 0..SEEDS {
        let db = pg.fresh_database(&format!("metadiff{seed}")).await.unwrap();
        let real = PostgresMetadata::new(db.pool.clone());
        real.migrate().await.unwrap();
        let mem = MemoryMetadata::new();
        for m in [&real as &dyn Metadata, &mem] {
            m.upsert_workspace(CLOSES_WS, ScopeSettings::default())
                .await
                .unwrap();
            assert!(m
                .upsert_agent(CLOSES_WS, CLOSES_AGENT, ScopeSettings::default())
                .await
                .unwrap());
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut closes = ChaCha8Rng::seed_from_u64(seed ^ 0xc105e);
        let mut retentions = ChaCha8Rng::seed_from_u64(seed ^ 0x5e7e);
        let mut log = Vec::new();
        for i in 0..STEPS {
            let now = (i as i64) * 1000;
            let mut r1 = ChaCha8Rng::seed_from_u64(rng.gen());
            let mut r2 = r1.clone();
            let a = step(&real, &mut r1, now).await;
            let b = step(&mem, &mut r2, now).await;
            log.push(format!("{a:?}"));
            erasure_met_a_deletion |= a.as_ref().is_ok_and(|l| {
                l.starts_with("erasures ") && (1..10).any(|n| l.contains(&format!("Some({n})")))
            });
            if closes.gen_bool(0.5) {
                let mut c1 = ChaCha8Rng::seed_from_u64(closes.gen());
                let mut c2 = c1.clone();
                let a = close_step(&real, &mut c1, now).await;
                let b = close_step(&mem, &mut c2, now).await;
                log.push(format!("{a:?}"));
                assert_eq!(
                    b, a,
                    "seed {seed}, step {i}: memory (left) and PostgreSQL (right) close differently\nsteps:\n{}",
                    log.join("\n")
                );
            }
            if retentions.gen_bool(0.3) {
                let mut c1 = ChaCha8Rng::seed_from_u64(retentions.gen());
                let mut c2 = c1.clone();
                let a = retention_step(&real, &mut c1, now).await;
                let b = retention_step(&mem, &mut c2, now).await;
                log.push(format!("{a:?}"));
                assert_eq!(
                    b, a,
                    "seed {seed}, step {i}: memory (left) and PostgreSQL (right) retain differently\nsteps:\n{}",
                    log.join("\n")
                );
            }
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
    assert!(
        erasure_met_a_deletion,
        "no seed met an erasure holding a deletion obligation"
    );
}

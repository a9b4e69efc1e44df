//! Sweep efficiency at the scale the issue names: 100,000 live objects across 10,000 sessions,
//! 1,000 of them expired. S3 requests are counted against the lower bound (one list page per
//! expired session, plus one DeleteObjects per 1,000 keys), and the candidate query's plan must
//! use the partial index, so its cost follows what expired rather than what exists.
//!
//! The objects live in the in-memory S3 served over HTTP (the disk store lists by scanning the
//! whole bucket, which would measure the store, not the sweep); PostgreSQL is real.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use sqlx::Row;
use tidemark_reference::clock::{Clock, ManualClock, DAY_MS};
use tidemark_reference::scoped::store::WRITTEN_AT_META;
use tidemark_reference::scoped::{ScopeSettings, ScopedConfig, ScopedStore};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::{MemoryHandle, PgProvider, S3Server, TestDatabase};

const SESSIONS: usize = 10_000;
const AGENTS: usize = 100;
const OBJECTS_PER_SESSION: usize = 10;
const EXPIRED_EVERY: usize = 10; // one session in ten: 1,000 expired

/// A scoped store at scale: the in-memory S3 served over HTTP from `seed`, a fresh PostgreSQL
/// database named after `hint`, and the clock both share (what the tests need kept alive with it).
struct Scale {
    clock: ManualClock,
    server: S3Server,
    mem: MemoryHandle,
    _pg: PgProvider,
    db: TestDatabase,
    store: ScopedStore,
}

impl Scale {
    async fn open(seed: u64, hint: &str, config: ScopedConfig) -> Scale {
        let clock = ManualClock::starting_at(EPOCH);
        let (server, mem) = S3Server::start_memory(Arc::new(clock.clone()), seed)
            .await
            .unwrap();
        let pg = PgProvider::from_environment().await.unwrap();
        let db = pg.fresh_database(hint).await.unwrap();
        let client = server.client();
        client.create_bucket(&config.bucket).await.unwrap();
        let store = ScopedStore::open(client, db.pool.clone(), config, Arc::new(clock.clone()))
            .await
            .unwrap();
        Scale {
            clock,
            server,
            mem,
            _pg: pg,
            db,
            store,
        }
    }
}

/// `what`'s plan (the rows of its EXPLAIN), printed, names `index`: its cost follows what the
/// index holds, not the table.
fn assert_uses_index(what: &str, explain: &[sqlx::postgres::PgRow], index: &str) {
    let plan: Vec<String> = explain.iter().map(|r| r.get::<String, _>(0)).collect();
    println!("{what} plan:\n{}", plan.join("\n"));
    assert!(
        plan.iter().any(|l| l.contains(index)),
        "the {what} does not use its index:\n{}",
        plan.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
async fn the_sweep_of_a_thousand_expired_sessions_among_ten_thousand_stays_within_a_tenth_of_the_lower_bound(
) {
    let mut config = ScopedConfig::new("scale");
    config.session_file_ttl_days = 30;
    let Scale {
        clock,
        server,
        mem,
        _pg,
        db,
        store,
    } = Scale::open(9, "scale", config).await;
    store
        .create_workspace("w", ScopeSettings::default())
        .await
        .unwrap();

    // Rows in bulk: expired sessions were last active at the epoch, the rest 39 days later.
    let t0 = Instant::now();
    let expired_at = EPOCH.0;
    let active_at = EPOCH.0 + 39 * DAY_MS;
    sqlx::query(
        "INSERT INTO agents (workspace_id, id) SELECT 'w', 'a' || g FROM generate_series(0, $1 - 1) g",
    )
    .bind(AGENTS as i32)
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO sessions (workspace_id, agent_id, id, last_activity_ms)
         SELECT 'w', 'a' || (g % $2), 's' || g,
                CASE WHEN g % $3 = 0 THEN $4 ELSE $5 END
           FROM generate_series(0, $1 - 1) g",
    )
    .bind(SESSIONS as i32)
    .bind(AGENTS as i32)
    .bind(EXPIRED_EVERY as i32)
    .bind(expired_at)
    .bind(active_at)
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE").execute(&db.pool).await.unwrap();
    for g in 0..SESSIONS {
        let written = if g % EXPIRED_EVERY == 0 {
            expired_at
        } else {
            active_at
        };
        for f in 0..OBJECTS_PER_SESSION {
            mem.seed(
                "scale",
                &format!("sessions/w/a{}/s{g}/f{f}.txt", g % AGENTS),
                vec![b'x'; 100],
                BTreeMap::from([(WRITTEN_AT_META.to_string(), written.to_string())]),
                written,
            );
        }
    }
    assert_eq!(mem.object_count("scale"), SESSIONS * OBJECTS_PER_SESSION);
    let seeding = t0.elapsed();

    clock.advance_ms(40 * DAY_MS);

    // The plan of the candidate query (now, the chunk, the deployment's TTL), with a workspace
    // of its own shorter TTL in the database (SPEC SL-5.1), which joins and bounds the scan.
    store
        .create_workspace("short", ScopeSettings::default())
        .await
        .unwrap();
    store
        .set_workspace_retention("short", Some(7))
        .await
        .unwrap();
    sqlx::query("ANALYZE").execute(&db.pool).await.unwrap();
    let plan = sqlx::query(sqlx::AssertSqlSafe(format!(
        "EXPLAIN {}",
        ScopedStore::CANDIDATES_SQL
    )))
    .bind(clock.now().0)
    .bind(1000_i64)
    .bind(30 * DAY_MS)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_uses_index(
        "sweep's candidate query",
        &plan,
        "sessions_sweep_candidates",
    );

    server.faults().reset_counts();
    let t1 = Instant::now();
    let report = store.sweep().await.unwrap();
    let sweep_time = t1.elapsed();
    let counts = server.faults().counts();

    let expired = SESSIONS / EXPIRED_EVERY;
    let keys = expired * OBJECTS_PER_SESSION;
    assert_eq!(report.sessions_swept as usize, expired);
    assert_eq!(report.objects_deleted as usize, keys);
    assert_eq!(
        mem.object_count("scale"),
        (SESSIONS - expired) * OBJECTS_PER_SESSION
    );
    let lower_bound = expired + keys.div_ceil(1000);
    let issued: u64 = counts.values().sum();
    println!(
        "seeded {} objects / {SESSIONS} sessions in {seeding:?}; sweep of {expired} expired: \
         {issued} S3 requests ({counts:?}), lower bound {lower_bound}, ratio {:.3}, {sweep_time:?}",
        SESSIONS * OBJECTS_PER_SESSION,
        issued as f64 / lower_bound as f64
    );
    assert!(
        issued as f64 <= 1.1 * lower_bound as f64,
        "{issued} requests against a lower bound of {lower_bound}"
    );

    // A second sweep finds nothing to do and costs no S3 request: swept sessions are marked.
    server.faults().reset_counts();
    let again = store.sweep().await.unwrap();
    assert_eq!(again.sessions_swept, 0);
    assert_eq!(server.faults().counts().values().sum::<u64>(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_workspace_of_a_thousand_sessions_costs_one_list_per_prefix_and_one_delete_per_thousand_keys(
) {
    let Scale {
        clock: _,
        server,
        mem,
        _pg,
        db,
        store,
    } = Scale::open(10, "wsdelete", ScopedConfig::new("wsdel")).await;
    store
        .create_workspace("w", ScopeSettings::default())
        .await
        .unwrap();
    let (agents, per_agent, files) = (100usize, 10usize, 10usize);
    sqlx::query(
        "INSERT INTO agents (workspace_id, id) SELECT 'w', 'a' || g FROM generate_series(0, $1 - 1) g",
    )
    .bind(agents as i32)
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO sessions (workspace_id, agent_id, id, last_activity_ms)
         SELECT 'w', 'a' || (g / $2), 's' || g, $3 FROM generate_series(0, $1 - 1) g",
    )
    .bind((agents * per_agent) as i32)
    .bind(per_agent as i32)
    .bind(EPOCH.0)
    .execute(&db.pool)
    .await
    .unwrap();
    let mut keys: usize = 0;
    for g in 0..agents * per_agent {
        for f in 0..files {
            mem.seed(
                "wsdel",
                &format!("sessions/w/a{}/s{g}/f{f}.txt", g / per_agent),
                vec![b'x'; 10],
                BTreeMap::new(),
                EPOCH.0,
            );
            keys += 1;
        }
    }
    for a in 0..agents {
        mem.seed(
            "wsdel",
            &format!("agents/w/a{a}/notes.md"),
            vec![b'y'; 10],
            BTreeMap::new(),
            EPOCH.0,
        );
        keys += 1;
    }
    store.delete_workspace("w").await.unwrap();
    let prefixes = store.deletion_obligations().await.unwrap().len();
    // Finished obligations pile up over the years; the claim must not scan them.
    sqlx::query(
        "INSERT INTO storage_deletions (prefix, entity_kind, entity_id, done_at_ms)
         SELECT 'sessions/old/a/s' || g || '/', 'session', 's' || g, 1 FROM generate_series(1, 20000) g",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE storage_deletions")
        .execute(&db.pool)
        .await
        .unwrap();
    let plan = sqlx::query(
        "EXPLAIN SELECT id, prefix FROM storage_deletions WHERE done_at_ms IS NULL
          ORDER BY id LIMIT 1000 FOR UPDATE SKIP LOCKED",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_uses_index("obligation claim", &plan, "storage_deletions_pending");
    assert_eq!(prefixes, 2 + agents + agents * per_agent);

    server.faults().reset_counts();
    let t = Instant::now();
    let report = store.sweep().await.unwrap();
    let elapsed = t.elapsed();
    let counts = server.faults().counts();
    assert_eq!(report.obligations_completed as usize, prefixes);
    assert_eq!(mem.object_count("wsdel"), 0);
    let issued: u64 = counts.values().sum();
    let lower_bound = prefixes + keys.div_ceil(1000);
    println!(
        "workspace deletion: {prefixes} prefixes, {keys} objects: {issued} S3 requests ({counts:?}), \
         lower bound {lower_bound}, ratio {:.3}, {elapsed:?}",
        issued as f64 / lower_bound as f64
    );
    assert!(issued as f64 <= 1.1 * lower_bound as f64);
    assert_eq!(store.deletion_records().await.unwrap().len(), prefixes);
}

//! The rows reference (SPEC part SR) on a real PostgreSQL: what each table keeps, what the
//! reaper removes, where the boundaries fall, and that each sweep reads an index rather than the
//! table. Time is handed in: every test moves a number, never waits.

use sqlx::Row;
use tidemark_reference::clock::{Timestamp, DAY_MS};
use tidemark_reference::rows::ReapConfig;
use tidemark_reference::rows::{ExpiringStore, ReplyState, RowsError, RowsStore};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::{PgProvider, TestDatabase};

struct Rows {
    store: RowsStore,
    db: TestDatabase,
    // Last: the cluster outlives the pool on it.
    _pg: PgProvider,
}

async fn rows(hint: &str) -> Rows {
    let pg = PgProvider::from_environment().await.expect("a PostgreSQL");
    let db = pg.fresh_database(hint).await.expect("a fresh database");
    let store = RowsStore::open(db.pool.clone()).await.expect("schema");
    Rows { store, db, _pg: pg }
}

fn at(days: i64, ms: i64) -> Timestamp {
    EPOCH.plus_ms(days * DAY_MS + ms)
}

async fn streamed_of(r: &Rows, reply: i64) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM tidemark_rows.events WHERE reply_id = $1")
        .bind(reply)
        .fetch_one(&r.db.pool)
        .await
        .unwrap()
}

/// A session with one reply of three streamed events ("Hel", "lo", and some reasoning).
async fn conversation(r: &Rows, session: &str, now: Timestamp) -> i64 {
    let s = &r.store;
    match s.create_workspace("w").await {
        // Already there from an earlier conversation in the same test.
        Ok(()) | Err(RowsError::AlreadyExists { .. }) => {}
        Err(e) => panic!("create workspace: {e}"),
    }
    s.create_session("w", session).await.unwrap();
    let reply = s.start_reply(session, now).await.unwrap();
    s.stream(reply, "chat.delta", "Hel", now).await.unwrap();
    s.stream(reply, "chat.reasoning", "thinking", now)
        .await
        .unwrap();
    s.stream(reply, "chat.delta", "lo", now).await.unwrap();
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_still_being_written_survives_a_month_of_daily_reaping() {
    let r = rows("rows_month").await;
    let cfg = ReapConfig::default();
    let writing = conversation(&r, "s1", at(0, 0)).await;
    let stopped = conversation(&r, "s2", at(0, 0)).await;
    r.store.interrupt_reply(stopped).await.unwrap();
    // A finished reply beside them, so the sweep is seen to run and to remove something.
    let finished = conversation(&r, "s3", at(0, 0)).await;
    r.store
        .finish_reply(finished, "Hello", at(0, 0))
        .await
        .unwrap();

    let mut removed = 0;
    for day in 1..=31 {
        removed += r
            .store
            .reap_tick(at(day, 0), &cfg)
            .await
            .unwrap()
            .streamed_events;
    }
    assert_eq!(
        removed, 3,
        "the finished reply's three events go after a day"
    );
    assert_eq!(streamed_of(&r, finished).await, 0);
    assert_eq!(
        streamed_of(&r, writing).await,
        3,
        "a reply being written keeps its events"
    );
    assert_eq!(
        streamed_of(&r, stopped).await,
        3,
        "a stopped, unsealed reply keeps its events"
    );
    let t = r.store.transcript("s1").await.unwrap();
    assert_eq!(
        (t[0].state, t[0].text.as_str()),
        (ReplyState::Writing, "Hello")
    );
    let t = r.store.transcript("s2").await.unwrap();
    assert_eq!(
        (t[0].state, t[0].text.as_str()),
        (ReplyState::Stopped, "Hello")
    );
    // Still being written after a month: it takes more events.
    r.store
        .stream(writing, "chat.delta", "!", at(31, 0))
        .await
        .unwrap();
    assert_eq!(r.store.transcript("s1").await.unwrap()[0].text, "Hello!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_reply_is_sealed_from_its_events_and_they_are_swept_a_day_later() {
    let r = rows("rows_seal").await;
    let cfg = ReapConfig::default();
    let reply = conversation(&r, "s1", at(0, 0)).await;
    r.store.interrupt_reply(reply).await.unwrap();
    // Sealed ten days after the interruption; the day runs from sealing, not from the events.
    r.store.seal_reply(reply, at(10, 0)).await.unwrap();
    let t = r.store.transcript("s1").await.unwrap();
    assert_eq!(t[0].state, ReplyState::Finished);
    assert!(t[0].sealed);
    assert_eq!(
        t[0].text, "Hello",
        "the text is the chat.delta payloads in order"
    );

    let early = r.store.reap_tick(at(11, -1), &cfg).await.unwrap();
    assert_eq!(
        early.streamed_events, 0,
        "a millisecond short of a day keeps them"
    );
    assert_eq!(streamed_of(&r, reply).await, 3);
    let due = r.store.reap_tick(at(11, 0), &cfg).await.unwrap();
    assert_eq!(due.streamed_events, 3, "a day after sealing they go");
    assert_eq!(streamed_of(&r, reply).await, 0);
    assert_eq!(r.store.transcript("s1").await.unwrap()[0].text, "Hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_replys_events_are_kept_a_day_from_its_deletion() {
    let r = rows("rows_gone").await;
    let cfg = ReapConfig::default();
    let reply = conversation(&r, "s1", at(0, 0)).await;
    r.store.delete_reply(reply, at(5, 0)).await.unwrap();
    assert!(r.store.transcript("s1").await.unwrap().is_empty());
    assert_eq!(
        r.store
            .reap_tick(at(6, -1), &cfg)
            .await
            .unwrap()
            .streamed_events,
        0
    );
    assert_eq!(
        r.store
            .reap_tick(at(6, 0), &cfg)
            .await
            .unwrap()
            .streamed_events,
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_a_model_names_outlives_newer_ones() {
    let r = rows("rows_named").await;
    let cfg = ReapConfig::default();
    let s = &r.store;
    let named = s.take_snapshot(at(0, 0)).await.unwrap();
    s.name_snapshot("m1", named).await.unwrap();
    let mut ids = vec![named];
    for d in 1..=5 {
        ids.push(s.take_snapshot(at(d, 0)).await.unwrap());
    }
    assert_eq!(
        s.reap_tick(at(6, 0), &cfg).await.unwrap().catalog_snapshots,
        2
    );
    assert_eq!(
        s.snapshots().await.unwrap(),
        vec![ids[0], ids[3], ids[4], ids[5]]
    );
    // Once no model names it, it is an old snapshot like any other.
    s.drop_model("m1").await.unwrap();
    assert_eq!(
        s.reap_tick(at(7, 0), &cfg).await.unwrap().catalog_snapshots,
        1
    );
    assert_eq!(s.snapshots().await.unwrap(), ids[3..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_three_snapshots_are_kept_by_taking_order_even_when_the_clock_ran_back() {
    let r = rows("rows_three").await;
    let cfg = ReapConfig::default();
    let s = &r.store;
    let mut ids = Vec::new();
    for d in 0..3 {
        ids.push(s.take_snapshot(at(d, 0)).await.unwrap());
    }
    assert_eq!(
        s.reap_tick(at(3, 0), &cfg).await.unwrap().catalog_snapshots,
        0
    );
    // The clock jumped back a year: the fourth is still the newest.
    ids.push(s.take_snapshot(at(-365, 0)).await.unwrap());
    assert_eq!(
        s.reap_tick(at(3, 0), &cfg).await.unwrap().catalog_snapshots,
        1
    );
    assert_eq!(s.snapshots().await.unwrap(), ids[1..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_request_outlives_its_conversations_old_events_and_goes_with_the_conversation() {
    let r = rows("rows_held").await;
    let cfg = ReapConfig::default();
    let s = &r.store;
    let reply = conversation(&r, "s1", at(0, 0)).await;
    s.record_event("s1", "chat.message", "user said hi", at(0, 0))
        .await
        .unwrap();
    s.add_session_prompt("s1", "be brief").await.unwrap();
    let item = s.open_item("w").await.unwrap();
    let held = s.hold_request("s1", None, at(0, 0)).await.unwrap();
    let held_for_item = s.hold_request("s1", Some(item), at(0, 0)).await.unwrap();
    assert!(held < held_for_item);
    s.settle_item(item, at(1, 0)).await.unwrap();
    s.finish_reply(reply, "Hello", at(1, 0)).await.unwrap();

    let report = s.reap_tick(at(400, 0), &cfg).await.unwrap();
    assert_eq!(report.streamed_events, 3, "the old streamed events go");
    for (table, kept) in [
        ("held_requests", 2),
        ("action_items", 1),
        ("session_prompts", 1),
        ("events", 1),
        ("replies", 1),
    ] {
        assert_eq!(
            s.count(table).await.unwrap(),
            kept,
            "{table} after a year of reaping"
        );
    }
    // The conversation goes: its held requests, prompts, events and replies go with it; the
    // settled item stays with its workspace.
    s.delete_session("s1").await.unwrap();
    for table in ["held_requests", "session_prompts", "events", "replies"] {
        assert_eq!(
            s.count(table).await.unwrap(),
            0,
            "{table} after the session's cascade"
        );
    }
    assert_eq!(s.count("action_items").await.unwrap(), 1);
    s.delete_workspace("w").await.unwrap();
    assert_eq!(s.count("action_items").await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_request_goes_with_its_item() {
    let r = rows("rows_item").await;
    let s = &r.store;
    s.create_workspace("w").await.unwrap();
    s.create_session("w", "s1").await.unwrap();
    let item = s.open_item("w").await.unwrap();
    s.hold_request("s1", Some(item), at(0, 0)).await.unwrap();
    s.hold_request("s1", None, at(0, 0)).await.unwrap();
    sqlx::query("DELETE FROM tidemark_rows.action_items WHERE id = $1")
        .bind(item)
        .execute(&r.db.pool)
        .await
        .unwrap();
    assert_eq!(s.count("held_requests").await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expires_at_equal_to_now_is_expired_and_a_millisecond_before_is_kept() {
    let r = rows("rows_boundary").await;
    let cfg = ReapConfig::default();
    let s = &r.store;
    s.create_workspace("w").await.unwrap();
    s.create_session("w", "s1").await.unwrap();
    s.record_invocation("s1", at(0, 0)).await.unwrap();
    s.fire_trigger("nightly", at(0, 0)).await.unwrap();
    for store in ExpiringStore::ALL {
        s.put_expiring(store, "k", at(2, 0), at(0, 0))
            .await
            .unwrap();
    }
    // A renewal moves the expiry; the old one no longer applies.
    s.put_expiring(ExpiringStore::RefreshTokens, "k", at(40, 0), at(0, 0))
        .await
        .unwrap();

    let before = s.reap_tick(at(1, -1), &cfg).await.unwrap();
    assert_eq!(before.total(), 0);
    assert_eq!(
        s.reap_tick(at(1, 0), &cfg).await.unwrap().tool_invocations,
        1
    );
    let r2 = s.reap_tick(at(2, -1), &cfg).await.unwrap();
    assert_eq!(r2.total(), 0);
    let r2 = s.reap_tick(at(2, 0), &cfg).await.unwrap();
    assert_eq!(
        (
            r2.live_sessions,
            r2.refresh_tokens,
            r2.webhook_deliveries,
            r2.breaker_sightings
        ),
        (1, 0, 1, 1)
    );
    assert_eq!(
        s.reap_tick(at(30, -1), &cfg).await.unwrap().trigger_firings,
        0
    );
    assert_eq!(
        s.reap_tick(at(30, 0), &cfg).await.unwrap().trigger_firings,
        1
    );
    assert_eq!(
        s.reap_tick(at(40, 0), &cfg).await.unwrap().refresh_tokens,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_deletes_in_batches_of_the_size_it_is_given_and_finishes_in_one_tick() {
    let r = rows("rows_batches").await;
    sqlx::query(
        "INSERT INTO tidemark_rows.live_sessions (id, expires_at_ms)
         SELECT 'l' || g, $1 FROM generate_series(1, 1050) g",
    )
    .bind(at(0, 0).as_millis())
    .execute(&r.db.pool)
    .await
    .unwrap();
    let cfg = ReapConfig::default().with_batch(100);
    let report = r.store.reap_tick(at(0, 0), &cfg).await.unwrap();
    assert_eq!(report.live_sessions, 1050);
    assert_eq!(r.store.count("live_sessions").await.unwrap(), 0);
    // The statement itself never removes more than its batch (read on from below every key).
    let one = sqlx::query_as::<_, (i64, Option<i64>, Option<String>)>(
        ExpiringStore::WebhookDeliveries.sweep_sql(),
    );
    sqlx::query(
        "INSERT INTO tidemark_rows.webhook_deliveries (id, expires_at_ms)
         SELECT 'd' || g, 0 FROM generate_series(1, 250) g",
    )
    .execute(&r.db.pool)
    .await
    .unwrap();
    let (removed, _, last) = one
        .bind(at(0, 0).as_millis())
        .bind(100_i64)
        .bind(i64::MIN)
        .bind("")
        .fetch_one(&r.db.pool)
        .await
        .unwrap();
    assert_eq!(removed, 100);
    assert!(last.is_some(), "the batch names the last row it removed");
    // A reaper that died after that batch: the next tick removes exactly the rest.
    let next = r.store.reap_tick(at(0, 0), &cfg).await.unwrap();
    assert_eq!(next.webhook_deliveries, 150);
    assert_eq!(next.total(), 150);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaper_down_for_a_week_removes_on_its_first_tick_what_expired_meanwhile_and_nothing_else(
) {
    let r = rows("rows_week").await;
    let s = &r.store;
    for day in 1..=10 {
        s.put_expiring(
            ExpiringStore::BreakerSightings,
            &format!("b{day}"),
            at(day, 0),
            at(0, 0),
        )
        .await
        .unwrap();
    }
    let first = s.reap_tick(at(7, 0), &ReapConfig::default()).await.unwrap();
    assert_eq!(
        first.breaker_sightings, 7,
        "days 1 to 7, the seventh at its boundary"
    );
    assert_eq!(s.count("breaker_sightings").await.unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_a_writer_holds_is_skipped_by_the_reap_not_waited_for_and_taken_by_the_next_tick() {
    let r = rows("rows_skip").await;
    let s = &r.store;
    for id in ["a", "b", "c"] {
        s.put_expiring(ExpiringStore::LiveSessions, id, at(0, 0), at(0, 0))
            .await
            .unwrap();
    }
    let mut writer = r.db.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM tidemark_rows.live_sessions WHERE id = 'b' FOR UPDATE")
        .execute(&mut *writer)
        .await
        .unwrap();
    let tick = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        s.reap_tick(at(1, 0), &ReapConfig::default()),
    )
    .await
    .expect("the reap waited for a writer's row")
    .unwrap();
    assert_eq!(tick.live_sessions, 2);
    writer.commit().await.unwrap();
    let next = s.reap_tick(at(1, 0), &ReapConfig::default()).await.unwrap();
    assert_eq!(next.live_sessions, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_kinds_replies_and_snapshots_are_typed_errors() {
    let r = rows("rows_errors").await;
    let s = &r.store;
    let reply = conversation(&r, "s1", at(0, 0)).await;
    let code = |e: RowsError| e.code();
    assert_eq!(
        s.stream(999, "chat.delta", "x", at(0, 0))
            .await
            .map_err(code),
        Err("unknown_reply")
    );
    assert_eq!(
        s.stream(reply, "Chat.Delta", "x", at(0, 0))
            .await
            .map_err(code),
        Err("unknown_kind")
    );
    assert_eq!(
        s.stream(reply, "chat.message", "x", at(0, 0))
            .await
            .map_err(code),
        Err("unknown_kind")
    );
    assert_eq!(
        s.record_event("s1", "chat.delta", "x", at(0, 0))
            .await
            .map_err(code),
        Err("unknown_kind")
    );
    assert_eq!(
        s.record_event("nope", "chat.message", "x", at(0, 0))
            .await
            .map_err(code),
        Err("unknown_session")
    );
    assert_eq!(
        s.name_snapshot("m", 42).await.map_err(code),
        Err("unknown_snapshot")
    );
    assert_eq!(
        s.seal_reply(999, at(0, 0)).await.map_err(code),
        Err("unknown_reply")
    );
    assert_eq!(
        s.hold_request("s1", Some(77), at(0, 0)).await.map_err(code),
        Err("unknown_item")
    );
    s.finish_reply(reply, "Hello", at(0, 0)).await.unwrap();
    assert_eq!(
        s.stream(reply, "chat.delta", "x", at(0, 0))
            .await
            .map_err(code),
        Err("reply_state")
    );
    assert_eq!(
        s.seal_reply(reply, at(0, 0)).await.map_err(code),
        Err("reply_state")
    );
    assert_eq!(
        s.interrupt_reply(reply).await.map_err(code),
        Err("reply_state")
    );
    assert_eq!(
        s.count("no_such_table").await.map_err(code),
        Err("unknown_kind")
    );
}

/// The rows of the SR-8.1 guard: each table shaped as the bench's reap is (half of its rows
/// expired, all of those at one instant, so every batch meets a tie as long as the expired range),
/// beside rows that are not expired, which a plan that scans would read too.
const GUARD_ROWS: i64 = 200_000;
/// The instant the guard's expired rows all expire at, and the `now` its sweeps are planned for.
const GUARD_EXPIRED_AT_MS: i64 = 1_000_000;
const GUARD_NOW_MS: i64 = 2_000_000;

/// What is wrong with a sweep's text plan for `table`: a sequential scan of the table, or a
/// sort (`Sort`, `Incremental Sort`) anywhere above a read of it, which is a sort over the
/// expired range. (A sort of another, small table, such as the models a snapshot sweep
/// anti-joins, reads no expired row.)
fn plan_faults(plan: &str, table: &str) -> Vec<String> {
    let lines: Vec<&str> = plan.lines().collect();
    let node = |l: &str| {
        l.trim_start()
            .trim_start_matches("->")
            .trim_start()
            .split("  (")
            .next()
            .unwrap_or("")
            .to_string()
    };
    let indent = |l: &str| l.len() - l.trim_start().len();
    let reads_table = |l: &str| {
        let n = node(l);
        n.ends_with(&format!(" on {table}")) || n.contains(&format!(" on {table} "))
    };
    let mut faults = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let n = node(l);
        if n == format!("Seq Scan on {table}") || n.starts_with(&format!("Seq Scan on {table} ")) {
            faults.push(n.clone());
        }
        if n == "Sort" || n == "Incremental Sort" {
            let below = lines[i + 1..]
                .iter()
                .take_while(|b| indent(b) > indent(l))
                .any(|b| reads_table(b));
            if below {
                faults.push(format!("{n} over a read of {table}"));
            }
        }
    }
    faults
}

/// A sweep statement's plans on `conn`: the custom plan for the guard's `now` and a batch of
/// 1,000 and, for a keyset batch, the key its first batch read on from (`after`), and the
/// generic plan PostgreSQL switches a prepared statement to after a few runs (sqlx prepares
/// every statement, and the reaper runs each hundreds of times).
async fn sweep_plans(
    conn: &mut sqlx::PgConnection,
    sql: &str,
    after: &Option<(i64, String)>,
) -> [String; 2] {
    let text = |rows: Vec<sqlx::postgres::PgRow>| {
        rows.iter()
            .map(|r| r.get::<String, _>(0))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut explain = sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN {sql}")))
        .bind(GUARD_NOW_MS)
        .bind(1000_i64);
    let (types, rest) = match after {
        Some((at, id)) => {
            explain = explain.bind(*at).bind(id.clone());
            (
                "bigint, bigint, bigint, text",
                format!(", {at}, '{}'", id.replace('\'', "''")),
            )
        }
        None => ("bigint, bigint", String::new()),
    };
    let custom = explain.fetch_all(&mut *conn).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "PREPARE guarded_sweep({types}) AS {sql}"
    )))
    .execute(&mut *conn)
    .await
    .unwrap();
    sqlx::raw_sql("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .unwrap();
    let generic = sqlx::query(sqlx::AssertSqlSafe(format!(
        "EXPLAIN EXECUTE guarded_sweep({GUARD_NOW_MS}, 1000{rest})"
    )))
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    sqlx::raw_sql("RESET plan_cache_mode; DEALLOCATE guarded_sweep")
        .execute(&mut *conn)
        .await
        .unwrap();
    [text(custom), text(generic)]
}

/// SR-8.1's guard: the statements a tick's sweeps really run (written down by the tick itself,
/// [`ReapConfig::statements`]) are explained on tables where half the rows expired at one
/// instant; no plan may read a swept table sequentially or sort, since a sort over the expired
/// range makes each batch cost what expired and a reap cost what expired squared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
async fn every_sweep_reads_its_expired_rows_in_order_from_an_index_without_a_scan_or_a_sort() {
    use tidemark_reference::rows::batch::StatementLog;
    // The statements: one tick on an empty database, each sweep's statement recorded as it runs.
    let empty = rows("rows_plans_recorded").await;
    let log = StatementLog::default();
    let recording = ReapConfig {
        statements: Some(log.clone()),
        ..ReapConfig::default()
    };
    empty.store.reap_tick(at(0, 0), &recording).await.unwrap();
    let statements = log.statements();
    assert_eq!(
        statements.len(),
        8,
        "a tick runs one statement per sweep, eight sweeps: {statements:#?}"
    );

    let r = rows("rows_plans").await;
    let p = &r.db.pool;
    for sql in [
        "INSERT INTO tidemark_rows.workspaces VALUES ('w')",
        "INSERT INTO tidemark_rows.sessions VALUES ('s', 'w')",
        // Half the events stamped, all at one instant (their replies finished together); the
        // other half unfinished replies' events.
        "INSERT INTO tidemark_rows.events (session_id, reply_id, kind, payload, created_at_ms,
                                           forget_after_ms)
         SELECT 's', g / 50, 'chat.delta', 'x', 0, CASE WHEN g % 2 = 0 THEN $2 END
           FROM generate_series(1, $1) g",
        "INSERT INTO tidemark_rows.tool_invocations (session_id, created_at_ms, expires_at_ms)
         SELECT 's', 0, CASE WHEN g % 2 = 0 THEN $2 ELSE $2 * 1000 END FROM generate_series(1, $1) g",
        "INSERT INTO tidemark_rows.trigger_firings (trigger_name, fired_at_ms, expires_at_ms)
         SELECT 't', 0, CASE WHEN g % 2 = 0 THEN $2 ELSE $2 * 1000 END FROM generate_series(1, $1) g",
        "INSERT INTO tidemark_rows.catalog_snapshots (taken_at_ms) SELECT g FROM generate_series(1, $1) g",
        "INSERT INTO tidemark_rows.models SELECT 'm' || g, g * 1000 FROM generate_series(1, 100) g",
        "INSERT INTO tidemark_rows.live_sessions
         SELECT 'l' || g, CASE WHEN g % 2 = 0 THEN $2 ELSE $2 * 1000 END FROM generate_series(1, $1) g",
        "INSERT INTO tidemark_rows.refresh_tokens
         SELECT 'r' || g, CASE WHEN g % 2 = 0 THEN $2 ELSE $2 * 1000 END FROM generate_series(1, $1) g",
        "INSERT INTO tidemark_rows.webhook_deliveries
         SELECT 'd' || g, CASE WHEN g % 2 = 0 THEN $2 ELSE $2 * 1000 END FROM generate_series(1, $1) g",
        "INSERT INTO tidemark_rows.breaker_sightings
         SELECT 'b' || g, CASE WHEN g % 2 = 0 THEN $2 ELSE $2 * 1000 END FROM generate_series(1, $1) g",
        "ANALYZE",
    ] {
        let mut q = sqlx::query(sql);
        if sql.contains("$1") {
            q = q.bind(GUARD_ROWS).bind(GUARD_EXPIRED_AT_MS);
        }
        q.execute(p).await.unwrap();
    }
    let mut conn = p.acquire().await.unwrap();
    let mut bad = Vec::new();
    for run in &statements {
        let sql = run.sql;
        let table = sql
            .split("DELETE FROM tidemark_rows.")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("?")
            .to_string();
        for (which, plan) in ["custom", "generic"]
            .into_iter()
            .zip(sweep_plans(&mut conn, sql, &run.after).await)
        {
            println!("sweep of {table}, {which} plan:\n{plan}\n");
            let wrong = plan_faults(&plan, &table);
            if !wrong.is_empty() {
                bad.push(format!(
                    "the sweep of {table} ({which} plan) has {}:\n{plan}",
                    wrong.join(", ")
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaper_that_crashes_mid_sweep_keeps_what_it_removed_and_the_next_tick_removes_the_rest()
{
    let r = rows("rows_crash").await;
    sqlx::query(
        "INSERT INTO tidemark_rows.live_sessions (id, expires_at_ms)
         SELECT 'l' || g, $1 FROM generate_series(1, 250) g",
    )
    .bind(at(0, 0).as_millis())
    .execute(&r.db.pool)
    .await
    .unwrap();
    // Each of the four sweeps before live sessions runs one empty statement, which the fault
    // does not count; live sessions' first batch is the first to remove a row. The crash comes
    // after it commits.
    let crashing = ReapConfig::crashing_after(1).with_batch(100);
    let err = r.store.reap_tick(at(0, 0), &crashing).await.unwrap_err();
    assert_eq!(err.code(), "database_unavailable");
    assert_eq!(r.store.count("live_sessions").await.unwrap(), 150);
    // The budget is per tick: the same configuration crashes again at the same point.
    r.store.reap_tick(at(0, 0), &crashing).await.unwrap_err();
    assert_eq!(r.store.count("live_sessions").await.unwrap(), 50);
    let next = r
        .store
        .reap_tick(at(0, 0), &ReapConfig::default())
        .await
        .unwrap();
    assert_eq!(next.live_sessions, 50);
    assert_eq!(
        r.store
            .reap_tick(at(0, 0), &ReapConfig::crashing_after(0))
            .await
            .unwrap_err()
            .code(),
        "database_unavailable"
    );
}

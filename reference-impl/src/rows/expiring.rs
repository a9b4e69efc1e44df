//! Rows kept until a time written on them (SPEC SR-3, SR-4): tool invocations (a day), trigger
//! firings (thirty days from firing), and the four stores kept until they expire. Each rule's
//! expiry is computed once, when the row is written, so each sweep is a range scan of its
//! `expires_at_ms` index up to now.

use std::collections::BTreeMap;

use super::batch::{BatchSql, ReapConfig};
use super::memory::{self, delete_batch};
use super::schema::ExpiringStore;
use super::{
    lock, sqlstate, Backend, RowsError, RowsMutant, RowsStore, FOREIGN_KEY_VIOLATION,
    UNIQUE_VIOLATION,
};
use crate::clock::{Timestamp, DAY_MS};

/// How long a tool invocation is kept (SR-3.1).
pub const INVOCATION_TTL_MS: i64 = DAY_MS;
/// How long a trigger firing is kept, from firing (SR-3.2).
pub const FIRING_TTL_MS: i64 = 30 * DAY_MS;

/// The batch statement of an `expires_at_ms` rule (a keyset batch, `batch::BatchSql::Keyset`):
/// expired means `expires_at_ms <= now` (SR-1.3), read through the table's `(expires_at_ms, id)`
/// index in its own order from the key (`$3`, `$4`) of the last row the previous batch removed,
/// so no batch sorts or walks again what earlier ones removed (SR-8.1). `$id` is how `$4` (text)
/// compares with the table's id.
/// Ties are broken by id, so a tick that dies between batches (the crash fault) has removed
/// the same rows on every run, and the in-memory backend removes the same ones (its text ids
/// compare bytewise, as the harness's clusters' C collation does).
macro_rules! expired_sql {
    ($table:literal, $id:literal) => {
        concat!(
            "WITH gone AS (DELETE FROM tidemark_rows.",
            $table,
            " WHERE id = ANY (ARRAY (SELECT id FROM tidemark_rows.",
            $table,
            " WHERE expires_at_ms <= $1 AND (expires_at_ms, id) > ($3, ",
            $id,
            ") ORDER BY expires_at_ms, id LIMIT $2 FOR UPDATE SKIP LOCKED)) \
             RETURNING expires_at_ms AS at, id), \
             last AS (SELECT max(at) AS at FROM gone) \
             SELECT (SELECT count(*) FROM gone), (SELECT at FROM last), \
             (SELECT max(id) FROM gone WHERE at = (SELECT at FROM last))::text"
        )
    };
}

/// [`RowsMutant::ExpiryBoundaryStrict`]'s batch: a row whose expiry equals now is kept.
macro_rules! strict_sql {
    ($table:literal) => {
        concat!(
            "DELETE FROM tidemark_rows.",
            $table,
            " WHERE id = ANY (ARRAY (SELECT id FROM tidemark_rows.",
            $table,
            " WHERE expires_at_ms < $1 ORDER BY expires_at_ms, id LIMIT $2 FOR UPDATE SKIP LOCKED))"
        )
    };
}

impl ExpiringStore {
    /// One batch of this store's sweep (`$1` now, `$2` batch size, `$3`/`$4` where the last
    /// batch stopped).
    pub fn sweep_sql(self) -> &'static str {
        match self {
            ExpiringStore::LiveSessions => expired_sql!("live_sessions", "$4"),
            ExpiringStore::RefreshTokens => expired_sql!("refresh_tokens", "$4"),
            ExpiringStore::WebhookDeliveries => expired_sql!("webhook_deliveries", "$4"),
            ExpiringStore::BreakerSightings => expired_sql!("breaker_sightings", "$4"),
        }
    }

    fn strict_sql(self) -> &'static str {
        match self {
            ExpiringStore::LiveSessions => strict_sql!("live_sessions"),
            ExpiringStore::RefreshTokens => strict_sql!("refresh_tokens"),
            ExpiringStore::WebhookDeliveries => strict_sql!("webhook_deliveries"),
            ExpiringStore::BreakerSightings => strict_sql!("breaker_sightings"),
        }
    }
}

pub const FORGET_INVOCATIONS_SQL: &str = expired_sql!("tool_invocations", "$4::bigint");
pub const FORGET_FIRINGS_SQL: &str = expired_sql!("trigger_firings", "$4::bigint");

/// The id below every id of a table keyed by a `bigserial` (as text, `$4`), and of one keyed by
/// text: where a keyset sweep's first batch reads on from.
const BELOW_EVERY_NUMBER: &str = "-9223372036854775808";
const BELOW_EVERY_TEXT: &str = "";
const STRICT_INVOCATIONS_SQL: &str = strict_sql!("tool_invocations");
const STRICT_FIRINGS_SQL: &str = strict_sql!("trigger_firings");

impl RowsStore {
    /// Records a tool invocation in a session, kept a day.
    pub async fn record_invocation(&self, session: &str, now: Timestamp) -> Result<i64, RowsError> {
        let expires_at = if self.mutant(RowsMutant::InvocationsKeptForever) {
            i64::MAX
        } else {
            now.as_millis().saturating_add(INVOCATION_TTL_MS)
        };
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let id = memory::next(&mut t.seq.invocations);
                if !t.sessions.contains_key(session) {
                    return Err(RowsError::UnknownSession(session.into()));
                }
                let invocation = memory::Invocation {
                    session: session.into(),
                    created_at_ms: now.as_millis(),
                    expires_at_ms: expires_at,
                };
                t.invocations.insert(id, invocation);
                return Ok(id);
            }
        };
        if self.mutant(RowsMutant::InvocationsOutliveTheirSession)
            && !self.session_exists(pool, session).await?
        {
            // The key is gone; the mutant checks the session as the key did, after the
            // sequence spent an id.
            sqlx::query("SELECT nextval('tidemark_rows.tool_invocations_id_seq')")
                .execute(pool)
                .await
                .map_err(RowsError::db("record invocation"))?;
            return Err(RowsError::UnknownSession(session.into()));
        }
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.tool_invocations (session_id, created_at_ms, expires_at_ms)
             VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(session)
        .bind(now.as_millis())
        .bind(expires_at)
        .fetch_one(pool)
        .await
        .map_err(|e| match sqlstate(&e).as_deref() {
            Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownSession(session.into()),
            _ => RowsError::db("record invocation")(e),
        })
    }

    /// Records that a trigger fired at `now`, kept thirty days.
    pub async fn fire_trigger(&self, trigger: &str, now: Timestamp) -> Result<i64, RowsError> {
        let expires_at =
            now.as_millis()
                .saturating_add(if self.mutant(RowsMutant::FiringsKeptADay) {
                    INVOCATION_TTL_MS
                } else {
                    FIRING_TTL_MS
                });
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let id = memory::next(&mut t.seq.firings);
                let firing = memory::Firing {
                    trigger: trigger.into(),
                    fired_at_ms: now.as_millis(),
                    expires_at_ms: expires_at,
                };
                t.firings.insert(id, firing);
                return Ok(id);
            }
        };
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.trigger_firings (trigger_name, fired_at_ms, expires_at_ms)
             VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(trigger)
        .bind(now.as_millis())
        .bind(expires_at)
        .fetch_one(pool)
        .await
        .map_err(RowsError::db("fire trigger"))
    }

    /// Writes (or renews) a row of an expiring store, kept until `expires_at`.
    pub async fn put_expiring(
        &self,
        store: ExpiringStore,
        id: &str,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> Result<(), RowsError> {
        // The mutant reads an expiry that has already come as "no expiry".
        let expires_at = if self.mutant(RowsMutant::ZeroExpiryMeansNever) && expires_at <= now {
            Timestamp::from_millis(i64::MAX)
        } else {
            expires_at
        };
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let rows = t.expiring.entry(store).or_default();
                let at = expires_at.as_millis();
                let kept = match rows.get(id) {
                    Some(&old) if self.mutant(RowsMutant::RenewalOnlyExtends) => old.max(at),
                    _ => at,
                };
                rows.insert(id.into(), kept);
                return Ok(());
            }
        };
        let table = store.table();
        let sql = if self.mutant(RowsMutant::RenewalOnlyExtends) {
            format!(
                "INSERT INTO tidemark_rows.{table} (id, expires_at_ms) VALUES ($1, $2)
                 ON CONFLICT (id) DO UPDATE
                 SET expires_at_ms = greatest({table}.expires_at_ms, excluded.expires_at_ms)"
            )
        } else {
            format!(
                "INSERT INTO tidemark_rows.{table} (id, expires_at_ms) VALUES ($1, $2)
                 ON CONFLICT (id) DO UPDATE SET expires_at_ms = excluded.expires_at_ms"
            )
        };
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .bind(expires_at.as_millis())
            .execute(pool)
            .await
            .map_err(|e| match sqlstate(&e).as_deref() {
                Some(UNIQUE_VIOLATION) => RowsError::AlreadyExists { id: id.into() },
                _ => RowsError::db("put expiring")(e),
            })?;
        Ok(())
    }

    /// The sweep of SR-3.1.
    pub async fn forget_expired_invocations(
        &self,
        now: Timestamp,
        cfg: &ReapConfig,
    ) -> Result<u64, RowsError> {
        let strict = self.mutant(RowsMutant::ExpiryBoundaryStrict);
        self.delete_batches(
            if strict {
                BatchSql::Plain(STRICT_INVOCATIONS_SQL)
            } else {
                BatchSql::Keyset {
                    sql: FORGET_INVOCATIONS_SQL,
                    first_id: BELOW_EVERY_NUMBER,
                }
            },
            |t, now, n| {
                let expired = |i: &memory::Invocation| is_expired(i.expires_at_ms, now, strict);
                delete_batch(
                    &mut t.invocations,
                    n,
                    |_, i| expired(i),
                    |id, i| (i.expires_at_ms, *id),
                )
            },
            now,
            cfg,
            "forget invocations",
        )
        .await
    }

    /// The sweep of SR-3.2.
    pub async fn forget_old_firings(
        &self,
        now: Timestamp,
        cfg: &ReapConfig,
    ) -> Result<u64, RowsError> {
        let strict = self.mutant(RowsMutant::ExpiryBoundaryStrict);
        let sql = if strict {
            BatchSql::Plain(STRICT_FIRINGS_SQL)
        } else {
            BatchSql::Keyset {
                sql: FORGET_FIRINGS_SQL,
                first_id: BELOW_EVERY_NUMBER,
            }
        };
        self.delete_batches(
            sql,
            |t, now, n| {
                let expired = |f: &memory::Firing| is_expired(f.expires_at_ms, now, strict);
                delete_batch(
                    &mut t.firings,
                    n,
                    |_, f| expired(f),
                    |id, f| (f.expires_at_ms, *id),
                )
            },
            now,
            cfg,
            "forget firings",
        )
        .await
    }

    /// The sweep of SR-4.3, one store at a time.
    pub async fn forget_expired(
        &self,
        store: ExpiringStore,
        now: Timestamp,
        cfg: &ReapConfig,
    ) -> Result<u64, RowsError> {
        let strict = self.mutant(RowsMutant::ExpiryBoundaryStrict);
        let sql = if strict {
            BatchSql::Plain(store.strict_sql())
        } else {
            BatchSql::Keyset {
                sql: store.sweep_sql(),
                first_id: BELOW_EVERY_TEXT,
            }
        };
        if self.mutant(RowsMutant::ExpiredIdLeavesEveryStore) {
            self.take_expired_ids_from_other_stores(store, now).await?;
        }
        self.delete_batches(
            sql,
            |t, now, n| {
                let rows = t.expiring.entry(store).or_insert_with(BTreeMap::new);
                let expired = |at: &i64| is_expired(*at, now, strict);
                delete_batch(rows, n, |_, at| expired(at), |id, at| (*at, id.clone()))
            },
            now,
            cfg,
            "forget expired",
        )
        .await
    }
}

impl RowsStore {
    /// [`RowsMutant::ExpiredIdLeavesEveryStore`]'s first step: the ids expired in `store` are
    /// deleted from the three other stores, whatever their own expiry.
    async fn take_expired_ids_from_other_stores(
        &self,
        store: ExpiringStore,
        now: Timestamp,
    ) -> Result<(), RowsError> {
        let now_ms = now.as_millis();
        let others = ExpiringStore::ALL.into_iter().filter(|s| *s != store);
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let expired: Vec<String> = t
                    .expiring
                    .get(&store)
                    .map(|rows| {
                        rows.iter()
                            .filter(|(_, at)| **at <= now_ms)
                            .map(|(id, _)| id.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                for other in others {
                    if let Some(rows) = t.expiring.get_mut(&other) {
                        rows.retain(|id, _| !expired.contains(id));
                    }
                }
                return Ok(());
            }
        };
        for other in others {
            let sql = format!(
                "DELETE FROM tidemark_rows.{} WHERE id IN
                   (SELECT id FROM tidemark_rows.{} WHERE expires_at_ms <= $1)",
                other.table(),
                store.table()
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(now_ms)
                .execute(pool)
                .await
                .map_err(RowsError::db("forget expired"))?;
        }
        Ok(())
    }
}

/// Expired means `expires_at_ms <= now` (SR-1.3); the strict mutant's `<` keeps a row whose
/// expiry is now.
fn is_expired(expires_at_ms: i64, now: i64, strict: bool) -> bool {
    if strict {
        expires_at_ms < now
    } else {
        expires_at_ms <= now
    }
}

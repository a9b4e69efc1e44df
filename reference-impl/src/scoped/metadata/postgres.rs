//! The metadata store in PostgreSQL: the schema of [`crate::scoped::schema`] (tables, the
//! deletion triggers, the partial indexes the sweeps use) and the statements the store runs.
//!
//! Why this file passes 800 lines: it is one statement per operation of the [`super::Metadata`]
//! and [`super::MetaTx`] traits, in their order, mirrored by `memory.rs` operation by operation
//! so the two are reviewed side by side (`sim/tests/integration/metadata_differential.rs` holds
//! them equal); erasure's statements are `postgres/erasure.rs`'s already.

use async_trait::async_trait;
use sqlx::{PgPool, Postgres, Row, Transaction};

mod erasure;

use super::{
    DeletionObligation, DeletionRecord, Entity, MetaTx, Metadata, SessionKey, SessionLayers,
    SessionStanding, WaitKind,
};
use crate::scoped::error::ScopedError;
use crate::scoped::permissions::{Access, ScopeSettings};

/// PostgreSQL behind the [`Metadata`] trait.
#[derive(Clone, Debug)]
pub struct PostgresMetadata {
    pool: PgPool,
}

impl PostgresMetadata {
    pub fn new(pool: PgPool) -> PostgresMetadata {
        PostgresMetadata { pool }
    }
}

/// SQL selecting the sweep's candidates: `$1` is now, `$2` the chunk, `$3` the deployment's
/// TTL in milliseconds, which a workspace's own replaces (SPEC SL-5.1). The first bound on
/// `last_activity_ms` (now minus the shortest TTL in force) is the index's range; the second
/// is each session's own. Public so the plan can be shown (EXPLAIN) and checked to use
/// `sessions_sweep_candidates`.
pub const CANDIDATES_SQL: &str =
        "SELECT s.workspace_id, s.agent_id, s.id, s.last_activity_ms
           FROM sessions s
           LEFT JOIN workspace_retention r ON r.workspace_id = s.workspace_id
          WHERE s.files_swept_at_ms IS NULL
            AND s.last_activity_ms <= $1 - LEAST($3, (SELECT min(session_file_ttl_days)::bigint * 86400000
                                                        FROM workspace_retention))
            AND s.last_activity_ms <= $1 - COALESCE(r.session_file_ttl_days::bigint * 86400000, $3)
            AND NOT EXISTS (SELECT 1 FROM session_waits w
                             WHERE w.workspace_id = s.workspace_id AND w.agent_id = s.agent_id
                               AND w.session_id = s.id)
          ORDER BY s.last_activity_ms, s.workspace_id, s.agent_id, s.id
          LIMIT $2
          FOR UPDATE OF s SKIP LOCKED";

/// [`CANDIDATES_SQL`] without its wait check (the waits-ignored mutant).
const CANDIDATES_IGNORING_WAITS_SQL: &str =
    "SELECT s.workspace_id, s.agent_id, s.id, s.last_activity_ms
       FROM sessions s
       LEFT JOIN workspace_retention r ON r.workspace_id = s.workspace_id
      WHERE s.files_swept_at_ms IS NULL
        AND s.last_activity_ms <= $1 - COALESCE(r.session_file_ttl_days::bigint * 86400000, $3)
      ORDER BY s.last_activity_ms, s.workspace_id, s.agent_id, s.id
      LIMIT $2
      FOR UPDATE OF s SKIP LOCKED";

/// The close sweep's candidates (SPEC SL-3.1): closed at or before `$1`, not swept yet; the
/// caller adds the wait filter, the order, `LIMIT $2` and the claim.
const CLOSED_SQL: &str = "SELECT s.workspace_id, s.agent_id, s.id, s.last_activity_ms,
            COALESCE(s.created_at_ms, s.last_activity_ms),
            EXISTS (SELECT 1 FROM session_waits w
                     WHERE w.workspace_id = s.workspace_id AND w.agent_id = s.agent_id
                       AND w.session_id = s.id)
       FROM sessions s
      WHERE s.closed_at_ms IS NOT NULL AND s.closed_at_ms <= $1
        AND s.files_swept_at_ms IS NULL";

/// A closed session with a wait is never swept by its close (SC-5.2).
const CLOSED_WITHOUT_WAITS_SQL: &str = "AND NOT EXISTS (SELECT 1 FROM session_waits w
                      WHERE w.workspace_id = s.workspace_id AND w.agent_id = s.agent_id
                        AND w.session_id = s.id)";

fn access_col(row: &sqlx::postgres::PgRow, col: &str) -> Result<Option<Access>, ScopedError> {
    let v: Option<String> = row.try_get(col).map_err(ScopedError::db("read settings"))?;
    match v {
        None => Ok(None),
        Some(s) => Access::parse(&s)
            .map(Some)
            .ok_or_else(|| ScopedError::Config(format!("bad access value {s:?} in {col}"))),
    }
}

#[async_trait]
impl Metadata for PostgresMetadata {
    async fn migrate(&self) -> Result<(), ScopedError> {
        crate::scoped::schema::migrate(&self.pool).await
    }

    async fn begin(&self) -> Result<Box<dyn MetaTx>, ScopedError> {
        let tx = self.pool.begin().await.map_err(ScopedError::db("begin"))?;
        Ok(Box::new(PgTx {
            tx,
            pool: self.pool.clone(),
        }))
    }

    async fn upsert_workspace(&self, ws: &str, settings: ScopeSettings) -> Result<(), ScopedError> {
        put_workspace(&self.pool, ws, settings).await
    }

    async fn upsert_agent(
        &self,
        ws: &str,
        agent: &str,
        settings: ScopeSettings,
    ) -> Result<bool, ScopedError> {
        put_agent(&self.pool, ws, agent, settings).await
    }

    async fn insert_session(&self, key: &SessionKey, now_ms: i64) -> Result<bool, ScopedError> {
        put_session(&self.pool, key, now_ms).await
    }

    async fn session_exists(&self, key: &SessionKey) -> Result<bool, ScopedError> {
        let row = sqlx::query(
            "SELECT 1 FROM sessions WHERE workspace_id = $1 AND agent_id = $2 AND id = $3",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .fetch_optional(&self.pool)
        .await
        .map_err(ScopedError::db("find session"))?;
        Ok(row.is_some())
    }

    async fn sessions_named(&self, session: &str) -> Result<Vec<SessionKey>, ScopedError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT workspace_id, agent_id FROM sessions WHERE id = $1 ORDER BY workspace_id, agent_id",
        )
        .bind(session)
        .fetch_all(&self.pool)
        .await
        .map_err(ScopedError::db("find session by id"))?;
        Ok(rows
            .into_iter()
            .map(|(w, a)| SessionKey::new(&w, &a, session))
            .collect())
    }

    async fn unmark_swept(&self, key: &SessionKey) -> Result<(), ScopedError> {
        sqlx::query(
            "UPDATE sessions SET files_swept_at_ms = NULL
              WHERE workspace_id = $1 AND agent_id = $2 AND id = $3
                AND files_swept_at_ms IS NOT NULL",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .execute(&self.pool)
        .await
        .map_err(ScopedError::db("unmark swept"))?;
        Ok(())
    }

    async fn workspace_exists(&self, ws: &str) -> Result<bool, ScopedError> {
        let row = sqlx::query("SELECT 1 FROM workspaces WHERE id = $1")
            .bind(ws)
            .fetch_optional(&self.pool)
            .await
            .map_err(ScopedError::db("find workspace"))?;
        Ok(row.is_some())
    }

    async fn insert_wait(
        &self,
        key: &SessionKey,
        kind: WaitKind,
        wait_id: &str,
    ) -> Result<bool, ScopedError> {
        let r = sqlx::query(
            "INSERT INTO session_waits (workspace_id, agent_id, session_id, kind, wait_id)
             SELECT $1, $2, $3, $4, $5
              WHERE EXISTS (SELECT 1 FROM sessions WHERE workspace_id = $1 AND agent_id = $2 AND id = $3)
             ON CONFLICT DO NOTHING",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .bind(kind.as_str())
        .bind(wait_id)
        .execute(&self.pool)
        .await
        .map_err(ScopedError::db("add wait"))?;
        Ok(r.rows_affected() > 0)
    }

    async fn delete_wait(
        &self,
        key: &SessionKey,
        kind: WaitKind,
        wait_id: &str,
    ) -> Result<(), ScopedError> {
        sqlx::query(
            "DELETE FROM session_waits WHERE workspace_id = $1 AND agent_id = $2
               AND session_id = $3 AND kind = $4 AND wait_id = $5",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .bind(kind.as_str())
        .bind(wait_id)
        .execute(&self.pool)
        .await
        .map_err(ScopedError::db("remove wait"))?;
        Ok(())
    }

    async fn pending_obligation_ids(&self) -> Result<Vec<i64>, ScopedError> {
        sqlx::query_scalar("SELECT id FROM storage_deletions WHERE done_at_ms IS NULL ORDER BY id")
            .fetch_all(&self.pool)
            .await
            .map_err(ScopedError::db("select obligations"))
    }

    async fn mark_done_if_pending(
        &self,
        id: i64,
        now_ms: i64,
    ) -> Result<Option<String>, ScopedError> {
        sqlx::query_scalar(
            "UPDATE storage_deletions SET done_at_ms = $2
              WHERE id = $1 AND done_at_ms IS NULL RETURNING prefix",
        )
        .bind(id)
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(ScopedError::db("mark obligation done"))
    }

    async fn obligations(&self) -> Result<Vec<DeletionObligation>, ScopedError> {
        let rows = sqlx::query(
            "SELECT id, prefix, entity_kind, entity_id, requested_at_ms, done_at_ms
               FROM storage_deletions ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(ScopedError::db("read obligations"))?;
        rows.iter()
            .map(|r| {
                Ok(DeletionObligation {
                    id: r.try_get("id")?,
                    prefix: r.try_get("prefix")?,
                    entity_kind: r.try_get("entity_kind")?,
                    entity_id: r.try_get("entity_id")?,
                    requested_at_ms: r.try_get("requested_at_ms")?,
                    done_at_ms: r.try_get("done_at_ms")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("read obligations"))
    }

    async fn records(&self) -> Result<Vec<DeletionRecord>, ScopedError> {
        let rows = sqlx::query(
            "SELECT deletion_id, prefix, objects_deleted, completed_at_ms
               FROM storage_deletion_records ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(ScopedError::db("read deletion records"))?;
        rows.iter()
            .map(|r| {
                Ok(DeletionRecord {
                    deletion_id: r.try_get("deletion_id")?,
                    prefix: r.try_get("prefix")?,
                    objects_deleted: r.try_get("objects_deleted")?,
                    completed_at_ms: r.try_get("completed_at_ms")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("read deletion records"))
    }

    async fn set_session_count(
        &self,
        ws: &str,
        agent: &str,
        keep_last: Option<i64>,
    ) -> Result<bool, ScopedError> {
        let exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM agents WHERE workspace_id = $1 AND id = $2)",
        )
        .bind(ws)
        .bind(agent)
        .fetch_one(&self.pool)
        .await
        .map_err(ScopedError::db("find agent"))?;
        if !exists {
            return Ok(false);
        }
        let q = match keep_last {
            Some(n) => sqlx::query(
                "INSERT INTO agent_session_counts (workspace_id, agent_id, keep_last)
                 SELECT $1, $2, $3
                  WHERE EXISTS (SELECT 1 FROM agents WHERE workspace_id = $1 AND id = $2)
                 ON CONFLICT (workspace_id, agent_id) DO UPDATE SET keep_last = EXCLUDED.keep_last",
            )
            .bind(ws)
            .bind(agent)
            .bind(n as i32),
            None => sqlx::query(
                "DELETE FROM agent_session_counts WHERE workspace_id = $1 AND agent_id = $2",
            )
            .bind(ws)
            .bind(agent),
        };
        q.execute(&self.pool)
            .await
            .map_err(ScopedError::db("set session count"))?;
        Ok(true)
    }

    async fn session_counts(&self) -> Result<Vec<(String, String, i64)>, ScopedError> {
        let rows = sqlx::query(
            "SELECT workspace_id, agent_id, keep_last FROM agent_session_counts
              ORDER BY workspace_id, agent_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(ScopedError::db("read session counts"))?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get(0)?,
                    r.try_get(1)?,
                    i64::from(r.try_get::<i32, _>(2)?),
                ))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("row"))
    }

    async fn set_workspace_retention(
        &self,
        ws: &str,
        ttl_days: Option<i64>,
    ) -> Result<bool, ScopedError> {
        // One statement each way, so a retention is never half replaced; the workspace's row
        // is shared (FOR KEY SHARE) by the insert's foreign key, so a deleter waits or wins.
        let affected = match ttl_days {
            Some(days) => sqlx::query(
                "INSERT INTO workspace_retention (workspace_id, session_file_ttl_days)
                 SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = $1)
                 ON CONFLICT (workspace_id)
                 DO UPDATE SET session_file_ttl_days = EXCLUDED.session_file_ttl_days",
            )
            .bind(ws)
            .bind(days as i32)
            .execute(&self.pool)
            .await
            .map_err(ScopedError::db("set workspace retention"))?
            .rows_affected(),
            None => {
                sqlx::query("DELETE FROM workspace_retention WHERE workspace_id = $1")
                    .bind(ws)
                    .execute(&self.pool)
                    .await
                    .map_err(ScopedError::db("set workspace retention"))?;
                0
            }
        };
        if affected > 0 {
            return Ok(true);
        }
        self.workspace_exists(ws).await
    }

    async fn workspace_retentions(&self) -> Result<Vec<(String, i64)>, ScopedError> {
        let rows: Vec<(String, i32)> = sqlx::query_as(
            "SELECT workspace_id, session_file_ttl_days FROM workspace_retention
              ORDER BY workspace_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(ScopedError::db("read workspace retention"))?;
        Ok(rows.into_iter().map(|(w, d)| (w, i64::from(d))).collect())
    }

    async fn applied_session_backstop(&self) -> Result<Option<i64>, ScopedError> {
        let days: Option<i32> =
            sqlx::query_scalar("SELECT session_backstop_days FROM lifecycle_applied")
                .fetch_optional(&self.pool)
                .await
                .map_err(ScopedError::db("read the applied backstop"))?;
        Ok(days.map(i64::from))
    }

    async fn record_applied_session_backstop(&self, days: i64) -> Result<(), ScopedError> {
        sqlx::query(
            "INSERT INTO lifecycle_applied (singleton, session_backstop_days) VALUES (true, $1)
             ON CONFLICT (singleton) DO UPDATE SET session_backstop_days = EXCLUDED.session_backstop_days",
        )
        .bind(i32::try_from(days).unwrap_or(i32::MAX))
        .execute(&self.pool)
        .await
        .map_err(ScopedError::db("record the applied backstop"))?;
        Ok(())
    }

    async fn lock_waiters(&self) -> Result<u64, ScopedError> {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(ScopedError::db("count lock waiters"))?;
        Ok(n.max(0) as u64)
    }

    fn pool(&self) -> Option<&PgPool> {
        Some(&self.pool)
    }
}

/// A PostgreSQL transaction, and the pool for the statements the mutants run outside it.
struct PgTx {
    tx: Transaction<'static, Postgres>,
    pool: PgPool,
}

#[async_trait]
impl MetaTx for PgTx {
    async fn lock_session(
        &mut self,
        key: &SessionKey,
    ) -> Result<Option<SessionLayers>, ScopedError> {
        let row = sqlx::query(
            "SELECT w.agent_access AS w_agent, w.workspace_access AS w_ws,
                    a.agent_access AS a_agent, a.workspace_access AS a_ws,
                    s.sweep_unfinished_at_ms IS NOT NULL AS sweep_unfinished
               FROM sessions s
               JOIN agents a ON a.workspace_id = s.workspace_id AND a.id = s.agent_id
               JOIN workspaces w ON w.id = s.workspace_id
              WHERE s.workspace_id = $1 AND s.agent_id = $2 AND s.id = $3
              FOR UPDATE OF s",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .fetch_optional(&mut *self.tx)
        .await
        .map_err(ScopedError::db("lock session"))?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(SessionLayers {
            workspace: ScopeSettings {
                agent: access_col(&row, "w_agent")?,
                workspace: access_col(&row, "w_ws")?,
            },
            agent: ScopeSettings {
                agent: access_col(&row, "a_agent")?,
                workspace: access_col(&row, "a_ws")?,
            },
            sweep_unfinished: row
                .try_get("sweep_unfinished")
                .map_err(ScopedError::db("lock session"))?,
        }))
    }

    async fn touch(&mut self, key: &SessionKey, now_ms: i64) -> Result<(), ScopedError> {
        sqlx::query(
            "UPDATE sessions SET last_activity_ms = GREATEST(last_activity_ms, $4),
                                 files_swept_at_ms = NULL,
                                 sweep_unfinished_at_ms = NULL,
                                 closed_at_ms = NULL
              WHERE workspace_id = $1 AND agent_id = $2 AND id = $3",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .bind(now_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("record activity"))?;
        Ok(())
    }

    async fn claim_idle_sessions(
        &mut self,
        now_ms: i64,
        default_ttl_ms: i64,
        limit: i64,
        ignoring_waits: bool,
        claim: bool,
    ) -> Result<Vec<SessionKey>, ScopedError> {
        let sql = if ignoring_waits {
            CANDIDATES_IGNORING_WAITS_SQL
        } else {
            CANDIDATES_SQL
        };
        let rows = if claim {
            sqlx::query(sql)
                .bind(now_ms)
                .bind(limit)
                .bind(default_ttl_ms)
                .fetch_all(&mut *self.tx)
                .await
        } else {
            // The sweep-unlocked bug: candidates read without claiming their rows, so a write
            // can touch the session and land between the listing and the deletion.
            let unlocked = sql.replace("FOR UPDATE OF s SKIP LOCKED", "");
            sqlx::query(sqlx::AssertSqlSafe(unlocked))
                .bind(now_ms)
                .bind(limit)
                .bind(default_ttl_ms)
                .fetch_all(&self.pool)
                .await
        }
        .map_err(ScopedError::db("select idle sessions"))?;
        rows.iter()
            .map(|row| {
                Ok(SessionKey {
                    workspace: row.try_get(0)?,
                    agent: row.try_get(1)?,
                    session: row.try_get(2)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("row"))
    }

    async fn agent_standings(
        &mut self,
        ws: &str,
        agent: Option<&str>,
    ) -> Result<Vec<SessionStanding>, ScopedError> {
        let rows = sqlx::query(
            "SELECT s.agent_id, s.id, s.last_activity_ms, COALESCE(s.created_at_ms, s.last_activity_ms),
                    s.files_swept_at_ms IS NOT NULL,
                    EXISTS (SELECT 1 FROM session_waits w
                             WHERE w.workspace_id = s.workspace_id AND w.agent_id = s.agent_id
                               AND w.session_id = s.id),
                    s.sweep_unfinished_at_ms IS NOT NULL
               FROM sessions s
              WHERE s.workspace_id = $1 AND ($2::text IS NULL OR s.agent_id = $2)
              ORDER BY s.agent_id COLLATE \"C\", s.id COLLATE \"C\"",
        )
        .bind(ws)
        .bind(agent)
        .fetch_all(&mut *self.tx)
        .await
        .map_err(ScopedError::db("read agent sessions"))?;
        rows.iter()
            .map(|r| {
                Ok(SessionStanding {
                    key: SessionKey::new(ws, r.try_get::<&str, _>(0)?, r.try_get::<&str, _>(1)?),
                    last_activity_ms: r.try_get(2)?,
                    created_at_ms: r.try_get(3)?,
                    swept: r.try_get(4)?,
                    waiting: r.try_get(5)?,
                    sweep_unfinished: r.try_get(6)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("row"))
    }

    async fn claim_sessions(
        &mut self,
        keys: &[SessionKey],
    ) -> Result<Vec<SessionKey>, ScopedError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let col = |f: fn(&SessionKey) -> &String| keys.iter().map(f).cloned().collect::<Vec<_>>();
        let rows = sqlx::query(
            "SELECT s.workspace_id, s.agent_id, s.id
               FROM sessions s
               JOIN unnest($1::text[], $2::text[], $3::text[]) AS k (w, a, id)
                 ON s.workspace_id = k.w AND s.agent_id = k.a AND s.id = k.id
              FOR UPDATE OF s SKIP LOCKED",
        )
        .bind(col(|k| &k.workspace))
        .bind(col(|k| &k.agent))
        .bind(col(|k| &k.session))
        .fetch_all(&mut *self.tx)
        .await
        .map_err(ScopedError::db("claim sessions"))?;
        let mut claimed = rows
            .iter()
            .map(|r| {
                Ok(SessionKey::new(
                    r.try_get::<&str, _>(0)?,
                    r.try_get::<&str, _>(1)?,
                    r.try_get::<&str, _>(2)?,
                ))
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
            .map_err(ScopedError::db("row"))?;
        claimed.sort();
        Ok(claimed)
    }

    async fn closed_at(&mut self, key: &SessionKey) -> Result<Option<i64>, ScopedError> {
        let v: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT closed_at_ms FROM sessions
              WHERE workspace_id = $1 AND agent_id = $2 AND id = $3",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .fetch_optional(&mut *self.tx)
        .await
        .map_err(ScopedError::db("read close"))?;
        Ok(v.flatten())
    }

    async fn set_closed_at(
        &mut self,
        key: &SessionKey,
        closed_at_ms: Option<i64>,
    ) -> Result<(), ScopedError> {
        sqlx::query(
            "UPDATE sessions SET closed_at_ms = $4
              WHERE workspace_id = $1 AND agent_id = $2 AND id = $3",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .bind(closed_at_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("close session"))?;
        Ok(())
    }

    async fn claim_closed_sessions(
        &mut self,
        cutoff_ms: i64,
        limit: i64,
        ignoring_waits: bool,
        claim: bool,
    ) -> Result<Vec<SessionStanding>, ScopedError> {
        let sql =
            format!(
            "{CLOSED_SQL} {} ORDER BY s.closed_at_ms, s.workspace_id, s.agent_id, s.id LIMIT $2 {}",
            if ignoring_waits { "" } else { CLOSED_WITHOUT_WAITS_SQL },
            if claim { "FOR UPDATE OF s SKIP LOCKED" } else { "" },
        );
        let q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(cutoff_ms)
            .bind(limit);
        let rows = if claim {
            q.fetch_all(&mut *self.tx).await
        } else {
            // The policy-sweep-unclaimed bug: candidates read outside the transaction, without
            // claiming their rows, so a second sweep takes the same sessions.
            q.fetch_all(&self.pool).await
        }
        .map_err(ScopedError::db("claim closed sessions"))?;
        rows.iter()
            .map(|r| {
                Ok(SessionStanding {
                    key: SessionKey::new(
                        r.try_get::<&str, _>(0)?,
                        r.try_get::<&str, _>(1)?,
                        r.try_get::<&str, _>(2)?,
                    ),
                    last_activity_ms: r.try_get(3)?,
                    created_at_ms: r.try_get(4)?,
                    swept: false,
                    // Not ranked: the close sweep takes every closed session past its grace.
                    sweep_unfinished: false,
                    waiting: r.try_get(5)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("row"))
    }

    async fn claim_unfinished_sessions(
        &mut self,
        limit: i64,
    ) -> Result<Vec<SessionKey>, ScopedError> {
        // The partial index `sessions_sweep_unfinished` holds only these rows.
        let rows = sqlx::query(
            "SELECT workspace_id, agent_id, id FROM sessions
              WHERE sweep_unfinished_at_ms IS NOT NULL
              ORDER BY workspace_id, agent_id, id
              LIMIT $1
              FOR UPDATE SKIP LOCKED",
        )
        .bind(limit)
        .fetch_all(&mut *self.tx)
        .await
        .map_err(ScopedError::db("claim unfinished sessions"))?;
        rows.iter()
            .map(|r| {
                Ok(SessionKey::new(
                    r.try_get::<&str, _>(0)?,
                    r.try_get::<&str, _>(1)?,
                    r.try_get::<&str, _>(2)?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("row"))
    }

    async fn mark_sweep_unfinished(
        &mut self,
        key: &SessionKey,
        now_ms: i64,
    ) -> Result<(), ScopedError> {
        sqlx::query(
            "UPDATE sessions SET sweep_unfinished_at_ms = $4
              WHERE workspace_id = $1 AND agent_id = $2 AND id = $3",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .bind(now_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("mark sweep unfinished"))?;
        Ok(())
    }

    async fn mark_swept(&mut self, key: &SessionKey, now_ms: i64) -> Result<(), ScopedError> {
        sqlx::query(
            "UPDATE sessions SET files_swept_at_ms = $4, sweep_unfinished_at_ms = NULL
              WHERE workspace_id = $1 AND agent_id = $2 AND id = $3",
        )
        .bind(&key.workspace)
        .bind(&key.agent)
        .bind(&key.session)
        .bind(now_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("mark swept"))?;
        Ok(())
    }

    async fn claim_obligations(&mut self, limit: i64) -> Result<Vec<(i64, String)>, ScopedError> {
        let rows = sqlx::query(
            "SELECT id, prefix FROM storage_deletions
              WHERE done_at_ms IS NULL
                AND erasure_id IS NULL -- an erasure's are met with it (SL-4)
              ORDER BY id
              LIMIT $1
              FOR UPDATE SKIP LOCKED",
        )
        .bind(limit)
        .fetch_all(&mut *self.tx)
        .await
        .map_err(ScopedError::db("claim obligations"))?;
        rows.iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("row"))
    }

    async fn record_obligation(
        &mut self,
        deletion_id: i64,
        prefix: &str,
        objects_deleted: i64,
        now_ms: i64,
    ) -> Result<(), ScopedError> {
        sqlx::query(
            "INSERT INTO storage_deletion_records (deletion_id, prefix, objects_deleted, completed_at_ms)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(deletion_id)
        .bind(prefix)
        .bind(objects_deleted)
        .bind(now_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("record deletion"))?;
        Ok(())
    }

    async fn mark_done(&mut self, id: i64, now_ms: i64) -> Result<(), ScopedError> {
        sqlx::query("UPDATE storage_deletions SET done_at_ms = $2 WHERE id = $1")
            .bind(id)
            .bind(now_ms)
            .execute(&mut *self.tx)
            .await
            .map_err(ScopedError::db("mark obligation done"))?;
        Ok(())
    }

    async fn record_deletion(
        &mut self,
        prefix: &str,
        entity_kind: &str,
        entity_id: &str,
        now_ms: i64,
    ) -> Result<(), ScopedError> {
        sqlx::query(
            "INSERT INTO storage_deletions (prefix, entity_kind, entity_id, requested_at_ms)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(prefix)
        .bind(entity_kind)
        .bind(entity_id)
        .bind(now_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("record deletion"))?;
        Ok(())
    }

    async fn delete_entity(
        &mut self,
        entity: &Entity,
        now_ms: i64,
        triggers: bool,
    ) -> Result<u64, ScopedError> {
        // The trigger cannot call our clock: the deleting transaction hands it the time.
        sqlx::query("SELECT set_config('tidemark.now_ms', $1, true)")
            .bind(now_ms.to_string())
            .execute(&mut *self.tx)
            .await
            .map_err(ScopedError::db("set now"))?;
        if !triggers {
            sqlx::query("SELECT set_config('tidemark.app_records', 'on', true)")
                .execute(&mut *self.tx)
                .await
                .map_err(ScopedError::db("set app records"))?;
        }
        let q = match entity {
            Entity::Session(k) => sqlx::query(
                "DELETE FROM sessions WHERE workspace_id = $1 AND agent_id = $2 AND id = $3",
            )
            .bind(&k.workspace)
            .bind(&k.agent)
            .bind(&k.session),
            Entity::Agent { workspace, agent } => {
                sqlx::query("DELETE FROM agents WHERE workspace_id = $1 AND id = $2")
                    .bind(workspace)
                    .bind(agent)
            }
            Entity::Workspace(ws) => sqlx::query("DELETE FROM workspaces WHERE id = $1").bind(ws),
        };
        let r = q
            .execute(&mut *self.tx)
            .await
            .map_err(ScopedError::db("delete entity"))?;
        Ok(r.rows_affected())
    }

    async fn commit(self: Box<Self>) -> Result<(), ScopedError> {
        self.tx.commit().await.map_err(ScopedError::db("commit"))
    }

    async fn rollback(self: Box<Self>) -> Result<(), ScopedError> {
        self.tx
            .rollback()
            .await
            .map_err(ScopedError::db("rollback"))
    }
}

/// A workspace's row with its settings, replaced whole when it exists: the one statement of a
/// create, run on the pool or inside an erasure-checked create's transaction
/// (`postgres/erasure.rs`).
async fn put_workspace<'e>(
    ex: impl sqlx::PgExecutor<'e>,
    ws: &str,
    settings: ScopeSettings,
) -> Result<(), ScopedError> {
    sqlx::query(
        "INSERT INTO workspaces (id, agent_access, workspace_access) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET agent_access = EXCLUDED.agent_access,
                                        workspace_access = EXCLUDED.workspace_access",
    )
    .bind(ws)
    .bind(settings.agent.map(Access::as_str))
    .bind(settings.workspace.map(Access::as_str))
    .execute(ex)
    .await
    .map_err(ScopedError::db("create workspace"))?;
    Ok(())
}

/// An agent's row with its settings, replaced whole when it exists; false when its workspace
/// does not exist (nothing written).
async fn put_agent<'e>(
    ex: impl sqlx::PgExecutor<'e>,
    ws: &str,
    agent: &str,
    settings: ScopeSettings,
) -> Result<bool, ScopedError> {
    let r = sqlx::query(
        "INSERT INTO agents (workspace_id, id, agent_access, workspace_access)
         SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = $1)
         ON CONFLICT (workspace_id, id) DO UPDATE SET agent_access = EXCLUDED.agent_access,
                                                     workspace_access = EXCLUDED.workspace_access",
    )
    .bind(ws)
    .bind(agent)
    .bind(settings.agent.map(Access::as_str))
    .bind(settings.workspace.map(Access::as_str))
    .execute(ex)
    .await
    .map_err(ScopedError::db("create agent"))?;
    Ok(r.rows_affected() > 0)
}

/// A new session's row, active from `now_ms`; false when it exists already or its agent does
/// not (nothing written).
async fn put_session<'e>(
    ex: impl sqlx::PgExecutor<'e>,
    key: &SessionKey,
    now_ms: i64,
) -> Result<bool, ScopedError> {
    let r = sqlx::query(
        "INSERT INTO sessions (workspace_id, agent_id, id, last_activity_ms, created_at_ms)
         SELECT $1, $2, $3, $4, $4
          WHERE EXISTS (SELECT 1 FROM agents WHERE workspace_id = $1 AND id = $2)
         ON CONFLICT DO NOTHING",
    )
    .bind(&key.workspace)
    .bind(&key.agent)
    .bind(&key.session)
    .bind(now_ms)
    .execute(ex)
    .await
    .map_err(ScopedError::db("create session"))?;
    Ok(r.rows_affected() > 0)
}

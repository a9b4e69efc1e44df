//! The metadata store in PostgreSQL: the schema of [`crate::scoped::schema`] (tables, the
//! deletion triggers, the partial indexes the sweeps use) and the statements the store runs.
//!
//! Here: the store's [`super::Metadata`] statements, each committed at once; a transaction's
//! ([`super::MetaTx`]) are `postgres/tx.rs`'s, erasure's `postgres/erasure.rs`'s. `memory.rs`
//! and its folder mirror these files one for one, so each pair is reviewed side by side
//! (`sim/tests/integration/metadata_differential.rs` holds them equal).

use async_trait::async_trait;
use sqlx::{PgPool, Row};

mod erasure;
mod tx;

use tx::PgTx;
pub use tx::CANDIDATES_SQL;

use super::{DeletionObligation, DeletionRecord, MetaTx, Metadata, SessionKey, WaitKind};
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

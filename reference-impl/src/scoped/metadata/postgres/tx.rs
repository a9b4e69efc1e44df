//! A PostgreSQL transaction ([`PgTx`]) and the [`MetaTx`] statements it runs, in the order
//! `memory/tx.rs` mirrors them: the session's lock, its activity, the sweeps' claims (their
//! candidate queries are here) and marks, and a deletion whose triggers record it.

use async_trait::async_trait;
use sqlx::{PgPool, Postgres, Row, Transaction};

use crate::scoped::error::ScopedError;
use crate::scoped::metadata::{Entity, MetaTx, SessionKey, SessionLayers, SessionStanding};
use crate::scoped::permissions::{Access, ScopeSettings};

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

/// A PostgreSQL transaction, and the pool for the statements the mutants run outside it.
pub(super) struct PgTx {
    pub(super) tx: Transaction<'static, Postgres>,
    pub(super) pool: PgPool,
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

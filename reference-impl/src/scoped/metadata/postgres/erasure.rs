//! Erasure obligations and their proofs in PostgreSQL (SPEC SL-4): the statements of
//! [`ErasureMetadata`] and [`ErasureTx`] over `schema.rs`'s `erasure_obligations`,
//! `erasure_proofs` and `storage_deletions.erasure_id`. Keys are ordered by their bytes
//! (`COLLATE "C"`), as the in-memory store orders them.

use async_trait::async_trait;
use sqlx::Row;

use super::{put_agent, put_session, put_workspace, PgTx, PostgresMetadata};
use crate::scoped::error::ScopedError;
use crate::scoped::metadata::erasure::{
    Creation, ErasureMetadata, ErasureObligation, ErasureProof, ErasureTx,
};
use crate::scoped::metadata::SessionKey;
use crate::scoped::permissions::ScopeSettings;

/// A subject's lock (SL-4.6): a transaction-scoped advisory lock on the hash of its name
/// (`<ws>` or `<ws>/<agent>`; an identifier holds no `/`). Two names sharing a hash only wait
/// for each other. Exclusive for an erasure's request and a create of the subject itself,
/// shared for what is created under it.
const SUBJECT_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended('tidemark subject ' || $1, 0))";
const SUBJECT_LOCK_SHARED: &str =
    "SELECT pg_advisory_xact_lock_shared(hashtextextended('tidemark subject ' || $1, 0))";

async fn lock(tx: &mut sqlx::PgConnection, name: &str, shared: bool) -> Result<(), ScopedError> {
    sqlx::query(if shared {
        SUBJECT_LOCK_SHARED
    } else {
        SUBJECT_LOCK
    })
    .bind(name)
    .execute(tx)
    .await
    .map_err(ScopedError::db("lock subject"))?;
    Ok(())
}

async fn pending(
    tx: &mut sqlx::PgConnection,
    ws: &str,
    agent: Option<&str>,
) -> Result<bool, ScopedError> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM erasure_obligations
                         WHERE workspace_id = $1 AND agent_id IS NOT DISTINCT FROM $2
                           AND done_at_ms IS NULL)",
    )
    .bind(ws)
    .bind(agent)
    .fetch_one(tx)
    .await
    .map_err(ScopedError::db("find pending erasure"))
}

const OBLIGATION_COLUMNS: &str =
    "id, workspace_id, agent_id, requested_at_ms, deadline_ms, done_at_ms";

fn obligation(r: &sqlx::postgres::PgRow) -> Result<ErasureObligation, sqlx::Error> {
    Ok(ErasureObligation {
        id: r.try_get("id")?,
        workspace: r.try_get("workspace_id")?,
        agent: r.try_get("agent_id")?,
        requested_at_ms: r.try_get("requested_at_ms")?,
        deadline_ms: r.try_get("deadline_ms")?,
        done_at_ms: r.try_get("done_at_ms")?,
    })
}

#[async_trait]
impl ErasureMetadata for PostgresMetadata {
    async fn erasure_pending(&self, ws: &str, agent: Option<&str>) -> Result<bool, ScopedError> {
        sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM erasure_obligations
                             WHERE workspace_id = $1 AND agent_id IS NOT DISTINCT FROM $2
                               AND done_at_ms IS NULL)",
        )
        .bind(ws)
        .bind(agent)
        .fetch_one(&self.pool)
        .await
        .map_err(ScopedError::db("find pending erasure"))
    }

    async fn erasures(&self) -> Result<Vec<ErasureObligation>, ScopedError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {OBLIGATION_COLUMNS} FROM erasure_obligations ORDER BY id"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(ScopedError::db("read erasures"))?;
        rows.iter()
            .map(obligation)
            .collect::<Result<_, _>>()
            .map_err(ScopedError::db("read erasures"))
    }

    async fn erasure_proofs(&self) -> Result<Vec<ErasureProof>, ScopedError> {
        let rows = sqlx::query(
            "SELECT erasure_id, key, written_at_ms, deleted_at_ms FROM erasure_proofs
              ORDER BY erasure_id, key COLLATE \"C\"",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(ScopedError::db("read erasure proofs"))?;
        rows.iter()
            .map(|r| {
                Ok(ErasureProof {
                    erasure_id: r.try_get("erasure_id")?,
                    key: r.try_get("key")?,
                    written_at_ms: r.try_get("written_at_ms")?,
                    deleted_at_ms: r.try_get("deleted_at_ms")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(ScopedError::db("read erasure proofs"))
    }

    async fn write_down_erasure_keys(
        &self,
        erasure_id: i64,
        keys: &[String],
        now_ms: i64,
        deleted: bool,
    ) -> Result<(), ScopedError> {
        if keys.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "INSERT INTO erasure_proofs (erasure_id, key, written_at_ms, deleted_at_ms)
             SELECT $1, k, $3, $4 FROM unnest($2::text[]) AS k
             ON CONFLICT (erasure_id, key) DO NOTHING",
        )
        .bind(erasure_id)
        .bind(keys)
        .bind(now_ms)
        .bind(deleted.then_some(now_ms))
        .execute(&self.pool)
        .await
        .map_err(ScopedError::db("write down erasure keys"))?;
        Ok(())
    }

    async fn create_workspace_checked(
        &self,
        ws: &str,
        settings: ScopeSettings,
        refuse_pending: bool,
    ) -> Result<Creation, ScopedError> {
        let mut tx = self.pool.begin().await.map_err(ScopedError::db("begin"))?;
        lock(&mut tx, ws, false).await?;
        if refuse_pending && pending(&mut tx, ws, None).await? {
            tx.rollback().await.map_err(ScopedError::db("rollback"))?;
            return Ok(Creation::ErasurePending);
        }
        put_workspace(&mut *tx, ws, settings).await?;
        tx.commit().await.map_err(ScopedError::db("commit"))?;
        Ok(Creation::Done)
    }

    async fn create_agent_checked(
        &self,
        ws: &str,
        agent: &str,
        settings: ScopeSettings,
        refuse_pending: bool,
    ) -> Result<Creation, ScopedError> {
        let mut tx = self.pool.begin().await.map_err(ScopedError::db("begin"))?;
        lock(&mut tx, ws, true).await?;
        lock(&mut tx, &format!("{ws}/{agent}"), false).await?;
        if refuse_pending && pending(&mut tx, ws, Some(agent)).await? {
            tx.rollback().await.map_err(ScopedError::db("rollback"))?;
            return Ok(Creation::ErasurePending);
        }
        let created = put_agent(&mut *tx, ws, agent, settings).await?;
        tx.commit().await.map_err(ScopedError::db("commit"))?;
        Ok(if created {
            Creation::Done
        } else {
            Creation::NoParent
        })
    }

    async fn create_session_checked(
        &self,
        key: &SessionKey,
        now_ms: i64,
    ) -> Result<bool, ScopedError> {
        let mut tx = self.pool.begin().await.map_err(ScopedError::db("begin"))?;
        lock(&mut tx, &key.workspace, true).await?;
        lock(&mut tx, &format!("{}/{}", key.workspace, key.agent), true).await?;
        let created = put_session(&mut *tx, key, now_ms).await?;
        tx.commit().await.map_err(ScopedError::db("commit"))?;
        Ok(created)
    }

    async fn unrecorded_erasure_keys(&self, erasure_id: i64) -> Result<Vec<String>, ScopedError> {
        sqlx::query_scalar(
            "SELECT key FROM erasure_proofs WHERE erasure_id = $1 AND deleted_at_ms IS NULL
              ORDER BY key COLLATE \"C\"",
        )
        .bind(erasure_id)
        .fetch_all(&self.pool)
        .await
        .map_err(ScopedError::db("read written-down erasure keys"))
    }
}

#[async_trait]
impl ErasureTx for PgTx {
    async fn lock_subject(&mut self, ws: &str, agent: Option<&str>) -> Result<(), ScopedError> {
        match agent {
            None => lock(&mut self.tx, ws, false).await,
            Some(a) => {
                lock(&mut self.tx, ws, true).await?;
                lock(&mut self.tx, &format!("{ws}/{a}"), false).await
            }
        }
    }

    async fn record_erasure(
        &mut self,
        ws: &str,
        agent: Option<&str>,
        now_ms: i64,
        deadline_ms: i64,
        prefixes: &[String],
    ) -> Result<i64, ScopedError> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO erasure_obligations (workspace_id, agent_id, requested_at_ms, deadline_ms)
             VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(ws)
        .bind(agent)
        .bind(now_ms)
        .bind(deadline_ms)
        .fetch_one(&mut *self.tx)
        .await
        .map_err(ScopedError::db("record erasure"))?;
        // starts_with, not LIKE: an identifier's `_` is a LIKE wildcard.
        sqlx::query(
            "UPDATE storage_deletions SET erasure_id = $1
              WHERE done_at_ms IS NULL AND erasure_id IS NULL
                AND EXISTS (SELECT 1 FROM unnest($2::text[]) AS p WHERE starts_with(prefix, p))",
        )
        .bind(id)
        .bind(prefixes)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("hand deletions to the erasure"))?;
        Ok(id)
    }

    async fn claim_erasures(&mut self, limit: i64) -> Result<Vec<ErasureObligation>, ScopedError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {OBLIGATION_COLUMNS} FROM erasure_obligations
              WHERE done_at_ms IS NULL
              ORDER BY id
              LIMIT $1
              FOR NO KEY UPDATE SKIP LOCKED"
        )))
        .bind(limit)
        .fetch_all(&mut *self.tx)
        .await
        .map_err(ScopedError::db("claim erasures"))?;
        rows.iter()
            .map(obligation)
            .collect::<Result<_, _>>()
            .map_err(ScopedError::db("claim erasures"))
    }

    async fn mark_erasure_keys_deleted(
        &mut self,
        erasure_id: i64,
        keys: &[String],
        now_ms: i64,
    ) -> Result<(), ScopedError> {
        if keys.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "UPDATE erasure_proofs SET deleted_at_ms = $3
              WHERE erasure_id = $1 AND key = ANY($2) AND deleted_at_ms IS NULL",
        )
        .bind(erasure_id)
        .bind(keys)
        .bind(now_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("record erased keys"))?;
        Ok(())
    }

    async fn complete_erasure(
        &mut self,
        erasure_id: i64,
        done_at_ms: i64,
    ) -> Result<u64, ScopedError> {
        sqlx::query("UPDATE erasure_obligations SET done_at_ms = $2 WHERE id = $1")
            .bind(erasure_id)
            .bind(done_at_ms)
            .execute(&mut *self.tx)
            .await
            .map_err(ScopedError::db("mark erasure met"))?;
        sqlx::query(
            "INSERT INTO storage_deletion_records (deletion_id, prefix, objects_deleted, completed_at_ms)
             SELECT d.id, d.prefix,
                    (SELECT count(*) FROM erasure_proofs p
                      WHERE p.erasure_id = $1 AND p.deleted_at_ms IS NOT NULL
                        AND starts_with(p.key, d.prefix)),
                    $2
               FROM storage_deletions d
              WHERE d.erasure_id = $1 AND d.done_at_ms IS NULL
              ORDER BY d.id",
        )
        .bind(erasure_id)
        .bind(done_at_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("record the erasure's deletions"))?;
        let r = sqlx::query(
            "UPDATE storage_deletions SET done_at_ms = $2
              WHERE erasure_id = $1 AND done_at_ms IS NULL",
        )
        .bind(erasure_id)
        .bind(done_at_ms)
        .execute(&mut *self.tx)
        .await
        .map_err(ScopedError::db("mark the erasure's deletions done"))?;
        Ok(r.rows_affected())
    }
}

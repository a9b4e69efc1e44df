//! Catalog snapshots and the models that name them (SPEC SR-5): the newest three are kept, and
//! any a model names, however old.

use std::collections::BTreeSet;

use super::alternatives::Alternative;
use super::batch::{BatchSql, ReapConfig};
use super::memory::{self, delete_batch, Tables};
use super::{lock, sqlstate, Backend, RowsError, RowsMutant, RowsStore, FOREIGN_KEY_VIOLATION};
use crate::clock::Timestamp;

/// How many of the newest snapshots are kept whether named or not.
pub const KEEP_NEWEST: i64 = 3;

/// One batch of [`RowsStore::forget_old_snapshots`] (a keyset batch,
/// `batch::BatchSql::Keyset`, reading on after the id `$4` the previous batch stopped at).
/// Newest is by id, the order snapshots were taken, never by `taken_at_ms`: a clock that jumps
/// back must not make the latest snapshot look old (SR-5.2). `$1` (now) and `$3` are unused;
/// the rule has no clock. Only snapshots older than the newest three are read, and those left
/// after a sweep are all named, so a sweep reads what it removes plus the named ones.
pub const FORGET_SNAPSHOTS_SQL: &str = "WITH gone AS (
  DELETE FROM tidemark_rows.catalog_snapshots WHERE id = ANY (ARRAY (
    SELECT s.id FROM tidemark_rows.catalog_snapshots s
     WHERE $1::bigint IS NOT NULL AND $3::bigint IS NOT NULL AND s.id > $4::bigint
       AND s.id < (SELECT min(n.id) FROM (SELECT id FROM tidemark_rows.catalog_snapshots
                                            ORDER BY id DESC LIMIT 3) n)
       AND NOT EXISTS (SELECT 1 FROM tidemark_rows.models m WHERE m.snapshot_id = s.id)
     ORDER BY s.id LIMIT $2 FOR UPDATE SKIP LOCKED))
  RETURNING id)
SELECT (SELECT count(*) FROM gone), 0::bigint, (SELECT max(id) FROM gone)::text";

/// [`RowsMutant::NewestTwoSnapshots`]'s batch: the newest two kept, not three.
const MUTANT_NEWEST_TWO_SQL: &str =
    "DELETE FROM tidemark_rows.catalog_snapshots WHERE id = ANY (ARRAY (
    SELECT s.id FROM tidemark_rows.catalog_snapshots s
     WHERE $1::bigint IS NOT NULL
       AND s.id < (SELECT min(n.id) FROM (SELECT id FROM tidemark_rows.catalog_snapshots
                                            ORDER BY id DESC LIMIT 2) n)
       AND NOT EXISTS (SELECT 1 FROM tidemark_rows.models m WHERE m.snapshot_id = s.id)
     ORDER BY s.id LIMIT $2 FOR UPDATE SKIP LOCKED))";

/// [`RowsMutant::NewestThreeUnnamed`]'s batch: the newest three counted among unnamed snapshots.
const MUTANT_NEWEST_UNNAMED_SQL: &str =
    "DELETE FROM tidemark_rows.catalog_snapshots WHERE id = ANY (ARRAY (
    SELECT s.id FROM tidemark_rows.catalog_snapshots s
     WHERE $1::bigint IS NOT NULL
       AND s.id < (SELECT min(n.id) FROM (SELECT c.id FROM tidemark_rows.catalog_snapshots c
                    WHERE NOT EXISTS (SELECT 1 FROM tidemark_rows.models m WHERE m.snapshot_id = c.id)
                    ORDER BY c.id DESC LIMIT 3) n)
       AND NOT EXISTS (SELECT 1 FROM tidemark_rows.models m WHERE m.snapshot_id = s.id)
     ORDER BY s.id LIMIT $2 FOR UPDATE SKIP LOCKED))";

/// [`RowsMutant::NewestByTimestamp`]'s batch: newest by `taken_at_ms`.
const MUTANT_BY_TIMESTAMP_SQL: &str =
    "DELETE FROM tidemark_rows.catalog_snapshots WHERE id = ANY (ARRAY (
    SELECT s.id FROM tidemark_rows.catalog_snapshots s
     WHERE $1::bigint IS NOT NULL
       AND s.id NOT IN (SELECT id FROM tidemark_rows.catalog_snapshots
                         ORDER BY taken_at_ms DESC, id DESC LIMIT 3)
       AND NOT EXISTS (SELECT 1 FROM tidemark_rows.models m WHERE m.snapshot_id = s.id)
     ORDER BY s.id LIMIT $2 FOR UPDATE SKIP LOCKED))";

impl RowsStore {
    pub async fn take_snapshot(&self, now: Timestamp) -> Result<i64, RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                let id = memory::next(&mut t.seq.snapshots);
                t.snapshots.insert(id, now.as_millis());
                return Ok(id);
            }
        };
        sqlx::query_scalar(
            "INSERT INTO tidemark_rows.catalog_snapshots (taken_at_ms) VALUES ($1) RETURNING id",
        )
        .bind(now.as_millis())
        .fetch_one(pool)
        .await
        .map_err(RowsError::db("take snapshot"))
    }

    /// Points `model` at `snapshot` (creating the model if new). A snapshot a sweep is deleting
    /// at that moment is either kept (the sweep skips it) or gone (`unknown_snapshot`), never
    /// named after its deletion: the foreign key decides.
    pub async fn name_snapshot(&self, model: &str, snapshot: i64) -> Result<(), RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                if !t.snapshots.contains_key(&snapshot) {
                    return Err(RowsError::UnknownSnapshot(snapshot));
                }
                t.models.insert(model.into(), snapshot);
                return Ok(());
            }
        };
        sqlx::query(
            "INSERT INTO tidemark_rows.models (id, snapshot_id) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE SET snapshot_id = excluded.snapshot_id",
        )
        .bind(model)
        .bind(snapshot)
        .execute(pool)
        .await
        .map_err(|e| match sqlstate(&e).as_deref() {
            Some(FOREIGN_KEY_VIOLATION) => RowsError::UnknownSnapshot(snapshot),
            _ => RowsError::db("name snapshot")(e),
        })?;
        Ok(())
    }

    /// Removes a model; the snapshot it named is then an ordinary old snapshot.
    /// Dropping a model that does not exist is no error (SR-5.1), unless this store takes
    /// `unknown_model_drops=refused`: then it is `unknown_model`.
    pub async fn drop_model(&self, model: &str) -> Result<(), RowsError> {
        let refuse = self.config().takes(Alternative::UnknownModelDropRefused);
        let unknown = || RowsError::UnknownModel(model.into());
        if self.mutant(RowsMutant::DroppedModelStillNames) {
            return Ok(());
        }
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let dropped = lock(m).models.remove(model).is_some();
                return if dropped || !refuse {
                    Ok(())
                } else {
                    Err(unknown())
                };
            }
        };
        let dropped = sqlx::query("DELETE FROM tidemark_rows.models WHERE id = $1")
            .bind(model)
            .execute(pool)
            .await
            .map_err(RowsError::db("drop model"))?
            .rows_affected();
        if dropped == 0 && refuse {
            return Err(unknown());
        }
        Ok(())
    }

    /// The ids of the snapshots that exist, oldest first.
    pub async fn snapshots(&self) -> Result<Vec<i64>, RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => return Ok(lock(m).snapshots.keys().copied().collect()),
        };
        sqlx::query_scalar("SELECT id FROM tidemark_rows.catalog_snapshots ORDER BY id")
            .fetch_all(pool)
            .await
            .map_err(RowsError::db("snapshots"))
    }

    /// The sweep of SR-5.1.
    pub async fn forget_old_snapshots(&self, cfg: &ReapConfig) -> Result<u64, RowsError> {
        if self.mutant(RowsMutant::NamedSnapshotSwept) {
            // The mutant forgets the models' names before sweeping: the old ones go with them.
            self.forget_names_of_old_snapshots().await?;
        }
        let mutant = self.config().mutant;
        let sql = match mutant {
            Some(RowsMutant::NewestTwoSnapshots) => BatchSql::Plain(MUTANT_NEWEST_TWO_SQL),
            Some(RowsMutant::NewestByTimestamp) => BatchSql::Plain(MUTANT_BY_TIMESTAMP_SQL),
            Some(RowsMutant::NewestThreeUnnamed) => BatchSql::Plain(MUTANT_NEWEST_UNNAMED_SQL),
            _ => BatchSql::Keyset {
                sql: FORGET_SNAPSHOTS_SQL,
                first_id: "0",
            },
        };
        // The rule has no clock; the batch helper's `$1` is bound to a constant.
        self.delete_batches(
            sql,
            |t, _, n| {
                let kept = match mutant {
                    Some(RowsMutant::NewestTwoSnapshots) => newest_by_id(t, 2),
                    Some(RowsMutant::NewestByTimestamp) => newest_by_taken_at(t),
                    Some(RowsMutant::NewestThreeUnnamed) => newest_unnamed(t),
                    _ => newest_by_id(t, KEEP_NEWEST as usize),
                };
                let named: BTreeSet<i64> = t.models.values().copied().collect();
                let old = |id: &i64, _: &i64| !kept.contains(id) && !named.contains(id);
                delete_batch(&mut t.snapshots, n, old, |id, _| *id)
            },
            Timestamp::from_millis(0),
            cfg,
            "forget snapshots",
        )
        .await
    }

    /// [`RowsMutant::NamedSnapshotSwept`]'s first step: the models naming a snapshot older than
    /// the newest three are removed.
    async fn forget_names_of_old_snapshots(&self) -> Result<(), RowsError> {
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                if let Some(&oldest_kept) = newest_by_id(&t, KEEP_NEWEST as usize).first() {
                    t.models.retain(|_, s| *s >= oldest_kept);
                }
                return Ok(());
            }
        };
        sqlx::query(
            "DELETE FROM tidemark_rows.models WHERE snapshot_id <
                    (SELECT min(n.id) FROM (SELECT id FROM tidemark_rows.catalog_snapshots
                                             ORDER BY id DESC LIMIT 3) n)",
        )
        .execute(pool)
        .await
        .map_err(RowsError::db("forget snapshots"))?;
        Ok(())
    }
}

/// The ids of the newest `n` snapshots by id (the order they were taken), oldest first.
fn newest_by_id(t: &Tables, n: usize) -> Vec<i64> {
    let mut ids: Vec<i64> = t.snapshots.keys().rev().take(n).copied().collect();
    ids.reverse();
    ids
}

/// [`RowsMutant::NewestThreeUnnamed`]'s newest three: among the snapshots no model names.
/// What it returns is the oldest kept and above, as the SQL's `s.id <` the third newest unnamed.
fn newest_unnamed(t: &Tables) -> Vec<i64> {
    let named: BTreeSet<i64> = t.models.values().copied().collect();
    let third = t
        .snapshots
        .keys()
        .rev()
        .filter(|id| !named.contains(id))
        .take(3)
        .last()
        .copied();
    match third {
        Some(oldest_kept) => t
            .snapshots
            .keys()
            .copied()
            .filter(|id| *id >= oldest_kept)
            .collect(),
        // Fewer than one unnamed snapshot: min() of nothing is NULL, and `s.id < NULL` keeps all.
        None => t.snapshots.keys().copied().collect(),
    }
}

/// [`RowsMutant::NewestByTimestamp`]'s newest three: by `taken_at_ms`, then id.
fn newest_by_taken_at(t: &Tables) -> Vec<i64> {
    let mut by_time: Vec<(i64, i64)> = t.snapshots.iter().map(|(id, at)| (*at, *id)).collect();
    by_time.sort_by(|a, b| b.cmp(a));
    by_time.into_iter().take(3).map(|(_, id)| id).collect()
}

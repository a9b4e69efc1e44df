//! The deletion ledger read where the implementation keeps it (SPEC SC-6.6, PROTOCOL.md
//! "The ledger").
//!
//! An implementation may name its own tables: in `init_ok` it declares two read-only queries,
//! one yielding its obligations (`prefix` text, `pending` boolean) and one its records (`prefix`
//! text). The harness still reads the database itself with them; it never takes the
//! implementation's word for what the ledger says. Without a declaration the queries read
//! SC-6.6's default tables.
//!
//! The queries run as every declared query does (`crate::declared_sql`): read-only, bounded by
//! a statement timeout, rolled back, their columns checked by name and type first.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use sqlx::{PgPool, Row};

use crate::declared_sql::{self, Kind, Label};
use crate::protocol::InitOk;

/// The two queries that read a ledger. A key the harness does not read is an error, as for the
/// rows queries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerQueries {
    /// Rows of `prefix` (text) and `pending` (boolean): every obligation, pending or done.
    pub obligations: String,
    /// Rows of `prefix` (text): every deletion record.
    pub records: String,
}

impl LedgerQueries {
    /// The queries a program declares as `ledger` in its `init_ok`: `None` when it declares
    /// none (SC-6.6's tables), an error when they are malformed.
    pub fn declared(claims: &InitOk) -> Result<Option<LedgerQueries>, String> {
        claims.declared("ledger")
    }
}

impl Default for LedgerQueries {
    /// SC-6.6's tables.
    fn default() -> Self {
        LedgerQueries {
            obligations: "SELECT prefix, done_at_ms IS NULL AS pending FROM storage_deletions"
                .into(),
            records: "SELECT prefix FROM storage_deletion_records".into(),
        }
    }
}

impl LedgerQueries {
    /// Prefixes of pending obligations, sorted and distinct.
    pub async fn pending_prefixes(&self, pool: &PgPool) -> Result<Vec<String>, String> {
        let rows = read_only(
            pool,
            "obligations",
            &self.obligations,
            &[("prefix", Kind::Text), ("pending", Kind::Bool)],
        )
        .await?;
        let mut out = BTreeSet::new();
        for row in rows {
            let prefix = text(&row, "obligations", &self.obligations)?;
            let pending: Option<bool> = row
                .try_get("pending")
                .map_err(|e| query_error("obligations", &self.obligations, e))?;
            match pending {
                Some(true) => {
                    out.insert(prefix);
                }
                Some(false) => {}
                None => {
                    return Err(format!(
                        "the ledger's obligations query ({}) gave a null `pending` for {prefix:?}; it must be true or false",
                        self.obligations
                    ))
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// Prefixes with a deletion record, sorted and distinct.
    pub async fn record_prefixes(&self, pool: &PgPool) -> Result<Vec<String>, String> {
        let rows = read_only(pool, "records", &self.records, &[("prefix", Kind::Text)]).await?;
        let mut out = BTreeSet::new();
        for row in rows {
            out.insert(text(&row, "records", &self.records)?);
        }
        Ok(out.into_iter().collect())
    }
}

/// Runs one of the two queries with the harness's read-only runner.
async fn read_only(
    pool: &PgPool,
    which: &str,
    sql: &str,
    columns: &[(&str, Kind)],
) -> Result<Vec<sqlx::postgres::PgRow>, String> {
    let label = Label {
        named: &format!("the ledger's {which} query"),
        reading: &format!("reading the deletion ledger with its {which} query"),
    };
    declared_sql::read_only(pool, &label, sql, &[], columns).await
}

fn text(row: &sqlx::postgres::PgRow, which: &str, sql: &str) -> Result<String, String> {
    let prefix: Option<String> = row
        .try_get("prefix")
        .map_err(|e| query_error(which, sql, e))?;
    prefix.ok_or_else(|| format!("the ledger's {which} query ({sql}) gave a null `prefix`"))
}

fn query_error(which: &str, sql: &str, e: sqlx::Error) -> String {
    let detail = match &e {
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    };
    format!("reading the deletion ledger with its {which} query ({sql}): {detail}")
}

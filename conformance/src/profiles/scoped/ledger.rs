//! The deletion ledger read where the implementation keeps it (SPEC SC-6.6, PROTOCOL.md
//! "The ledger").
//!
//! An implementation may name its own tables: in `init_ok` it declares two read-only queries,
//! one yielding its obligations (`prefix` text, `pending` boolean) and one its records (`prefix`
//! text). The harness still reads the database itself with them; it never takes the
//! implementation's word for what the ledger says. Without a declaration the queries read
//! SC-6.6's default tables.
//!
//! A declared query is someone else's SQL run by the harness, often as a superuser, so it runs
//! inside a read-only transaction with a statement timeout and is rolled back: a query that
//! writes, loops or fails is reported as the scenario's failure, and the database is unchanged.
//! Columns are checked by name and type before any row is read, so a wrong shape is named
//! rather than decoded into a wrong answer.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use sqlx::{AssertSqlSafe, Column, Executor, PgPool, Row, SqlSafeStr, Statement, TypeInfo};

/// How long one declared ledger query may run before the harness gives up on it.
const QUERY_TIMEOUT_MS: u32 = 5_000;

/// The two queries that read a ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerQueries {
    /// Rows of `prefix` (text) and `pending` (boolean): every obligation, pending or done.
    pub obligations: String,
    /// Rows of `prefix` (text): every deletion record.
    pub records: String,
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

#[derive(Clone, Copy)]
enum Kind {
    Text,
    Bool,
}

impl Kind {
    fn accepts(self, type_name: &str) -> bool {
        match self {
            Kind::Text => matches!(type_name, "TEXT" | "VARCHAR"),
            Kind::Bool => type_name == "BOOL",
        }
    }

    fn spelled(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Bool => "boolean",
        }
    }
}

/// Runs `sql` in a read-only transaction (rolled back) after checking it yields `columns`.
async fn read_only(
    pool: &PgPool,
    which: &str,
    sql: &str,
    columns: &[(&str, Kind)],
) -> Result<Vec<sqlx::postgres::PgRow>, String> {
    let fail = |e: sqlx::Error| query_error(which, sql, e);
    let mut tx = pool.begin().await.map_err(fail)?;
    (&mut *tx)
        .execute("SET TRANSACTION READ ONLY")
        .await
        .map_err(fail)?;
    (&mut *tx)
        .execute(AssertSqlSafe(format!(
            "SET LOCAL statement_timeout = {QUERY_TIMEOUT_MS}"
        )))
        .await
        .map_err(fail)?;
    let statement = (&mut *tx)
        .prepare(AssertSqlSafe(sql.to_string()).into_sql_str())
        .await
        .map_err(fail)?;
    let found: Vec<(String, String)> = statement
        .columns()
        .iter()
        .map(|c| (c.name().to_string(), c.type_info().name().to_string()))
        .collect();
    for (name, kind) in columns {
        match found.iter().find(|(n, _)| n == name) {
            Some((_, t)) if kind.accepts(t) => {}
            Some((_, t)) => {
                return Err(format!(
                    "the ledger's {which} query ({sql}) gives `{name}` as {t}; it must be {}",
                    kind.spelled()
                ))
            }
            None => {
                return Err(format!(
                    "the ledger's {which} query ({sql}) has no column `{name}`; it must yield {} (found: {})",
                    columns
                        .iter()
                        .map(|(n, k)| format!("{n} {}", k.spelled()))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if found.is_empty() {
                        "no columns".to_string()
                    } else {
                        found
                            .iter()
                            .map(|(n, t)| format!("{n} {t}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ))
            }
        }
    }
    let rows = statement.query().fetch_all(&mut *tx).await.map_err(fail)?;
    tx.rollback().await.map_err(fail)?;
    Ok(rows)
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

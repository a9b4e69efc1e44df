//! Read-only SQL an implementation declares in `init_ok`, run by the harness itself: the scoped
//! profile's ledger queries (SC-6.6) and the rows profile's observations (SR-1.4). The harness
//! reads the database with them; it never takes the implementation's word for what it holds.
//!
//! A declared query is someone else's SQL run by the harness, often as a superuser, so it runs
//! inside a read-only transaction with a statement timeout and is rolled back: a query that
//! writes, loops or fails is reported as the scenario's failure, and the database is unchanged.
//! Its parameters and columns are checked by name and type before any row is read, so a wrong
//! shape is named rather than decoded into a wrong answer.

use sqlx::{AssertSqlSafe, Column, Either, Executor, PgPool, SqlSafeStr, Statement, TypeInfo};

/// How long one declared query may run before the harness gives up on it.
const QUERY_TIMEOUT_MS: u32 = 5_000;

/// A column's (or parameter's) type, as a declared query must give it.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Text,
    Bool,
    /// `bigint`, what `count(*)` gives.
    BigInt,
}

impl Kind {
    fn accepts(self, type_name: &str) -> bool {
        match self {
            Kind::Text => matches!(type_name, "TEXT" | "VARCHAR"),
            Kind::Bool => type_name == "BOOL",
            Kind::BigInt => type_name == "INT8",
        }
    }

    fn spelled(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Bool => "boolean",
            Kind::BigInt => "bigint",
        }
    }
}

/// How a query is named in errors: `named` is what it is ("the ledger's records query"),
/// `reading` what running it does ("reading the deletion ledger with its records query").
pub struct Label<'a> {
    pub named: &'a str,
    pub reading: &'a str,
}

/// Runs `sql` with the text parameters `params` (`$1`, `$2`, ...) in a read-only transaction,
/// rolled back, after checking it takes exactly that many text parameters and yields `columns`.
pub async fn read_only(
    pool: &PgPool,
    label: &Label<'_>,
    sql: &str,
    params: &[&str],
    columns: &[(&str, Kind)],
) -> Result<Vec<sqlx::postgres::PgRow>, String> {
    let fail = |e: sqlx::Error| query_error(label, sql, e);
    let named = label.named;
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
    let declared: Vec<String> = match statement.parameters() {
        Some(Either::Left(types)) => types.iter().map(|t| t.name().to_string()).collect(),
        Some(Either::Right(n)) => vec!["?".into(); n],
        None => Vec::new(),
    };
    if declared.len() != params.len() {
        return Err(format!(
            "{named} ({sql}) takes {} parameters; it must take {} ({})",
            declared.len(),
            params.len(),
            if params.is_empty() {
                "none".to_string()
            } else {
                (1..=params.len())
                    .map(|i| format!("${i} text"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
    }
    for (i, t) in declared.iter().enumerate() {
        if !Kind::Text.accepts(t) {
            return Err(format!(
                "{named} ({sql}) reads ${} as {t}; it must be text (compare your column as text, e.g. `id::text = ${}`)",
                i + 1,
                i + 1
            ));
        }
    }
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
                    "{named} ({sql}) gives `{name}` as {t}; it must be {}",
                    kind.spelled()
                ))
            }
            None => {
                return Err(format!(
                    "{named} ({sql}) has no column `{name}`; it must yield {} (found: {})",
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
    let mut query = statement.query();
    for p in params {
        query = query.bind(p.to_string());
    }
    let rows = query.fetch_all(&mut *tx).await.map_err(fail)?;
    tx.rollback().await.map_err(fail)?;
    Ok(rows)
}

fn query_error(label: &Label<'_>, sql: &str, e: sqlx::Error) -> String {
    let detail = match &e {
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    };
    format!("{} ({sql}): {detail}", label.reading)
}

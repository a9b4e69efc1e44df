//! What remains in the database, read by the harness where the implementation keeps it (SPEC
//! SR-1.4, PROTOCOL.md "The rows profile").
//!
//! An implementation may name its own tables: in `init_ok` it declares a read-only query per
//! observation, each yielding one row with a column `n` (bigint, what `count(*)` gives). Without
//! a declaration the queries read the reference's schema, `tidemark_rows`. The harness runs them
//! itself, as it runs the scoped ledger's (`crate::declared_sql`: read-only, bounded, rolled
//! back, shape checked first).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sqlx::{PgPool, Row};
use tidemark_reference::rows::TABLES;

use super::contract::Observation;
use crate::declared_sql::{self, Kind, Label};
use crate::protocol::InitOk;

/// The read-only queries an implementation declares for the rows profile (`rows` in `init_ok`).
/// A key the harness does not read (a misspelt one) is an error, never ignored: the
/// implementation would believe it declared a query the harness never runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowsQueries {
    /// For each table as SPEC SR and the reference name it (`events`, `sessions`,
    /// `held_requests`, ...: every name of [`TABLES`]), a query counting its rows.
    pub tables: BTreeMap<String, String>,
    /// The streamed events naming a reply, `$1` its id as the implementation made it (text).
    pub streamed_events_of: String,
    /// A session's events, streamed or not, `$1` its name (text).
    pub events_in: String,
}

impl RowsQueries {
    /// The queries a program declares as `rows` in its `init_ok`: `None` when it declares none
    /// (the reference's schema), an error when they are malformed.
    pub fn declared(claims: &InitOk) -> Result<Option<RowsQueries>, String> {
        let declared: Option<RowsQueries> = claims
            .declared("rows")
            .map_err(|e| format!("the declared rows queries: {e}"))?;
        if let Some(q) = &declared {
            if let Some(t) = q.tables.keys().find(|t| !TABLES.contains(&t.as_str())) {
                return Err(format!(
                    "the declared rows queries name a table {:?} SPEC SR does not have; `rows.tables` names each of {}",
                    tidemark_sim::clip::clip(t),
                    TABLES.join(", ")
                ));
            }
        }
        Ok(declared)
    }
}

impl Default for RowsQueries {
    /// The reference's schema.
    fn default() -> Self {
        RowsQueries {
            tables: TABLES
                .iter()
                .map(|t| {
                    (
                        t.to_string(),
                        format!("SELECT count(*) AS n FROM tidemark_rows.{t}"),
                    )
                })
                .collect(),
            streamed_events_of:
                "SELECT count(*) AS n FROM tidemark_rows.events WHERE reply_id::text = $1".into(),
            events_in: "SELECT count(*) AS n FROM tidemark_rows.events WHERE session_id = $1"
                .into(),
        }
    }
}

impl RowsQueries {
    /// The count `what` asks for, read from `pool`.
    pub async fn count(&self, pool: &PgPool, what: &Observation) -> Result<i64, String> {
        let (named, sql, param) = match what {
            Observation::Table { table } => {
                let Some(sql) = self.tables.get(table) else {
                    return Err(format!(
                        "no query counts the table {table:?} (`rows.tables` must have one for each of {})",
                        TABLES.join(", ")
                    ));
                };
                (format!("the count of {table}"), sql, None)
            }
            Observation::StreamedOf { reply } => (
                "the streamed_events_of query".to_string(),
                &self.streamed_events_of,
                Some(reply.as_str()),
            ),
            Observation::EventsIn { session } => (
                "the events_in query".to_string(),
                &self.events_in,
                Some(session.as_str()),
            ),
        };
        let label = Label {
            named: &named,
            reading: &format!("running {named}"),
        };
        let params: Vec<&str> = param.into_iter().collect();
        let rows =
            declared_sql::read_only(pool, &label, sql, &params, &[("n", Kind::BigInt)]).await?;
        let [row] = rows.as_slice() else {
            return Err(format!(
                "{named} ({sql}) gave {} rows; it must give exactly one",
                rows.len()
            ));
        };
        let n: Option<i64> = row
            .try_get("n")
            .map_err(|e| format!("{named} ({sql}): {e}"))?;
        n.ok_or_else(|| format!("{named} ({sql}) gave a null `n`"))
    }
}

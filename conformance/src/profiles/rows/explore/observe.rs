//! What the harness reads of the reference's whole state after a reap, in the model's format
//! ([`State`], `model/state.rs`): every row of its schema, read-only (SR-1.4), or on a backend
//! with no schema to read the count of each table through the endpoint's observations; the
//! snapshot listing and each session's transcript either way.

use sqlx::Row;
use tidemark_reference::clock::Timestamp;
use tidemark_reference::rows::ExpiringStore;

use crate::profiles::rows::contract::{Observation, RowsEndpoint};
use crate::profiles::rows::model::state::{
    line_event, line_expiring, line_item, rel, Detail, State, COUNTED,
};
use crate::profiles::rows::reference::ReferenceRows;
use crate::profiles::rows::runner::{perform, Learnt, Outcome};
use crate::profiles::rows::script::{transcript_text, Action};

/// The reference's whole state at `detail`: the rows (or their counts), the snapshot listing and
/// the transcripts of `sessions` (the model's: a session missing from the reference shows as its
/// refusal, an extra one in the sessions table).
pub(super) async fn read(
    endpoint: &mut ReferenceRows,
    now: Timestamp,
    learnt: &mut Learnt,
    detail: Detail,
    sessions: &[String],
) -> Result<State, String> {
    let mut st = match detail {
        Detail::Rows => read_rows(endpoint, learnt).await?,
        Detail::Counts => {
            let mut st = State::default();
            for table in COUNTED {
                let n = endpoint
                    .observe(&Observation::Table {
                        table: table.into(),
                    })
                    .await?;
                st.put(table, (0..n).map(|_| "a row".to_string()));
            }
            st
        }
    };
    match perform(endpoint, &Action::Snapshots, now, learnt).await? {
        Outcome::Snapshots(names) => st.put("catalog_snapshots", names.into_iter()),
        other => return Err(format!("the snapshot listing answered {}", other.text())),
    }
    for s in sessions {
        let line = match perform(endpoint, &Action::Transcript(s.clone()), now, learnt).await? {
            Outcome::Transcript(entries) => transcript_text(&entries),
            other => outcome_line(&other),
        };
        st.put_one("transcripts", format!("{s}: {line}"));
    }
    Ok(st)
}

/// Every row of the reference's schema (`tidemark_rows`), read by the harness, read-only
/// (SR-1.4). Replies are seen through the transcripts, and counted here.
async fn read_rows(endpoint: &ReferenceRows, learnt: &Learnt) -> Result<State, String> {
    let pool = endpoint.store.pool().clone();
    let pool = &pool;
    let q = |sql: &'static str| sqlx::query(sql);
    let err = |e: sqlx::Error| format!("reading the state: {e}");
    let name =
        |ids: &crate::profiles::rows::script::Ids, id: i64| Learnt::name_of(ids, &id.to_string());
    let mut st = State::default();
    let rows = q("SELECT id FROM tidemark_rows.workspaces")
        .fetch_all(pool)
        .await
        .map_err(err)?;
    st.put("workspaces", rows.iter().map(|r| r.get::<String, _>(0)));
    let sessions: Vec<(String, String)> =
        q("SELECT id, workspace_id FROM tidemark_rows.sessions ORDER BY id")
            .fetch_all(pool)
            .await
            .map_err(err)?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
    st.put(
        "sessions",
        sessions.iter().map(|(s, w)| format!("{s} in {w}")),
    );
    let rows = q("SELECT session_id FROM tidemark_rows.session_prompts")
        .fetch_all(pool)
        .await
        .map_err(err)?;
    st.put(
        "session_prompts",
        rows.iter().map(|r| r.get::<String, _>(0)),
    );
    let rows =
        q("SELECT session_id, reply_id, kind, payload, forget_after_ms FROM tidemark_rows.events")
            .fetch_all(pool)
            .await
            .map_err(err)?;
    st.put(
        "events",
        rows.iter().map(|r| {
            line_event(
                r.get(0),
                r.get::<Option<i64>, _>(1)
                    .map(|i| name(&learnt.replies, i))
                    .as_deref(),
                r.get(2),
                r.get(3),
                r.get::<Option<i64>, _>(4).map(rel),
            )
        }),
    );
    let rows = q("SELECT session_id, expires_at_ms FROM tidemark_rows.tool_invocations")
        .fetch_all(pool)
        .await
        .map_err(err)?;
    st.put(
        "tool_invocations",
        rows.iter().map(|r| line_expiring(r.get(0), rel(r.get(1)))),
    );
    let rows = q("SELECT expires_at_ms FROM tidemark_rows.trigger_firings")
        .fetch_all(pool)
        .await
        .map_err(err)?;
    st.put(
        "trigger_firings",
        rows.iter().map(|r| line_expiring("firing", rel(r.get(0)))),
    );
    let rows = q("SELECT id, snapshot_id FROM tidemark_rows.models")
        .fetch_all(pool)
        .await
        .map_err(err)?;
    st.put(
        "models",
        rows.iter().map(|r| {
            format!(
                "{} -> {}",
                r.get::<String, _>(0),
                name(&learnt.snapshots, r.get(1))
            )
        }),
    );
    for store in ExpiringStore::ALL {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id, expires_at_ms FROM tidemark_rows.{}",
            store.table()
        )))
        .fetch_all(pool)
        .await
        .map_err(err)?;
        st.put(
            store.table(),
            rows.iter().map(|r| line_expiring(r.get(0), rel(r.get(1)))),
        );
    }
    let rows = q("SELECT id, workspace_id, settled_at_ms FROM tidemark_rows.action_items")
        .fetch_all(pool)
        .await
        .map_err(err)?;
    st.put(
        "action_items",
        rows.iter().map(|r| {
            line_item(
                &name(&learnt.items, r.get(0)),
                r.get(1),
                r.get::<Option<i64>, _>(2).map(rel),
            )
        }),
    );
    let rows = q("SELECT session_id, item_id FROM tidemark_rows.held_requests")
        .fetch_all(pool)
        .await
        .map_err(err)?;
    st.put(
        "held_requests",
        rows.iter().map(|r| {
            format!(
                "{} for {}",
                r.get::<String, _>(0),
                r.get::<Option<i64>, _>(1)
                    .map_or("-".to_string(), |i| name(&learnt.items, i))
            )
        }),
    );
    let replies = endpoint
        .store
        .count("replies")
        .await
        .map_err(|e| e.to_string())?;
    st.put("replies", (0..replies).map(|_| "a row".to_string()));
    Ok(st)
}

/// An outcome as the trace records it: a refusal by its reason only (messages are free text).
pub fn outcome_line(o: &Outcome) -> String {
    match o {
        Outcome::Refused { reason, .. } => format!("refused {reason}"),
        o => o.text(),
    }
}

//! The scoped world's liveness check, after the heal and one sweep ([`liveness`]): every
//! obligation done, recorded and emptied, nothing expired keeping a file, nothing locked; and
//! what the guests' and people's models still promise is in the bucket ([`kept`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tidemark_reference::clock::DAY_MS;
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, SessionKey};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::memory_s3::MemoryHandle;

use super::oracle::Guest;
use super::paths::PathModel;
use super::session::Sess;
use super::{sweep_started, BUCKET, HOME, TTL_DAYS};
use crate::profiles::scoped::uuid_ids::uuid_for;
use crate::world::lock;

/// After heal and one sweep: every obligation done, recorded and emptied (unless its entity
/// lives again), nothing expired without a wait keeps a file, nothing left locked.
pub(super) fn liveness(
    meta: &MemoryMetadata,
    objects: &MemoryHandle,
    log: &[(i64, String)],
    heal_at: i64,
) -> Result<(), String> {
    let after: Vec<(i64, &String)> = log
        .iter()
        .filter_map(|(_, l)| sweep_started(l).filter(|s| *s >= heal_at).map(|s| (s, l)))
        .collect();
    let Some((swept_at, _)) = after.first() else {
        return Err("no sweep started after the heal".into());
    };
    let swept_at = *swept_at;
    if let Some((_, l)) = after.iter().find(|(_, l)| l.contains("refused")) {
        return Err(format!("a sweep after the heal failed: {l}"));
    }
    if meta.locked_rows() != 0 {
        return Err(format!(
            "{} rows are still locked once every host is gone",
            meta.locked_rows()
        ));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let (obligations, records) = rt.block_on(async {
        (
            meta.obligations().await.unwrap_or_default(),
            meta.records().await.unwrap_or_default(),
        )
    });
    let sessions: BTreeMap<SessionKey, (i64, Option<i64>)> = meta
        .sessions()
        .into_iter()
        .map(|(k, last, swept)| (k, (last, swept)))
        .collect();
    let recorded: std::collections::BTreeSet<i64> = records.iter().map(|r| r.deletion_id).collect();
    for o in &obligations {
        if o.done_at_ms.is_none() {
            return Err(format!(
                "obligation {} ({}) is still pending",
                o.id, o.prefix
            ));
        }
        if !recorded.contains(&o.id) {
            return Err(format!(
                "obligation {} ({}) is done without a record",
                o.id, o.prefix
            ));
        }
        let lives_again = match o.entity_kind.as_str() {
            "session" => sessions.keys().any(|k| o.prefix == k.prefix()),
            "agent" => {
                let mut parts = o.prefix.split('/').skip(1);
                match (parts.next(), parts.next()) {
                    (Some(ws), Some(a)) => meta.agent_row_exists(ws, a),
                    _ => false,
                }
            }
            _ => meta.workspace_row_exists(&o.entity_id),
        };
        let left = objects.keys(BUCKET, &o.prefix);
        if !lives_again && !left.is_empty() {
            return Err(format!(
                "obligation {} ({}) is recorded done but {} objects remain: {:?}",
                o.id,
                o.prefix,
                left.len(),
                &left[..left.len().min(3)]
            ));
        }
    }
    let cutoff = EPOCH.as_millis() + swept_at - i64::from(TTL_DAYS) * DAY_MS;
    for (k, (last, _)) in &sessions {
        if *last <= cutoff && !meta.has_wait(k) {
            let left = objects.keys(BUCKET, &k.prefix());
            if !left.is_empty() {
                return Err(format!(
                    "session {} expired (last activity {}) but keeps {:?}",
                    k.prefix(),
                    last - EPOCH.as_millis(),
                    left
                ));
            }
        }
    }
    super::oracle::policies::liveness(meta, objects)?;
    // Every object belongs to a live row: what a deleted row (or its cascade) owned must have
    // been recorded as an obligation and swept.
    for key in objects.keys(BUCKET, "") {
        let parts: Vec<&str> = key.split('/').collect();
        let live = match parts.as_slice() {
            ["sessions", ws, a, s, ..] => sessions.contains_key(&SessionKey::new(ws, a, s)),
            ["agents", ws, a, ..] => meta.agent_row_exists(ws, a),
            ["workspaces", ws, ..] | ["skills", ws, ..] => meta.workspace_row_exists(ws),
            _ => false,
        };
        if !live {
            return Err(format!(
                "{key} outlives its row, and no obligation removed it"
            ));
        }
    }
    Ok(())
}

/// When the first sweep that started after the heal started (world ms).
fn first_sweep_after(log: &[(i64, String)], heal_at: i64) -> Option<i64> {
    log.iter()
        .filter_map(|(_, l)| sweep_started(l))
        .find(|s| *s >= heal_at)
}

/// After the heal's sweep: every file the guests' and people's models still promise (not
/// haunted, never deleted, its session not idle near the TTL when the sweep started) is in the
/// bucket under its key. A person's upload counts as activity (SF-4.2), so the model keeps
/// an upload to a long-idle session that a sweep must not take.
pub(super) fn kept(
    guests: &[Arc<Mutex<Guest>>],
    objects: &MemoryHandle,
    log: &[(i64, String)],
    heal_at: i64,
) -> Result<(), String> {
    let Some(swept_at) = first_sweep_after(log, heal_at) else {
        return Ok(());
    };
    let id = |short: &str| uuid_for("scoped-world", short);
    let mut promised: Vec<(String, String)> = Vec::new();
    let mut add = |prefix: String, paths: &BTreeMap<String, PathModel>, owner: String| {
        for (p, m) in paths {
            if let (true, Some((_, rel))) = (m.must_exist(), p.split_once('/')) {
                promised.push((format!("{prefix}{rel}"), format!("{owner} {p}")));
            }
        }
    };
    for g in guests {
        let g = lock(g);
        for (s, m) in &g.sessions {
            let t = &m.turn;
            // The busy session's files are the count's whenever its kept one may be the newer
            // (part SL, `super::oracle::policies`).
            if *s == Sess::Exposed || m.expirable(swept_at) || g.count_may_take(*s) {
                continue;
            }
            let prefix = format!(
                "sessions/{}/{}/{}/",
                id(&t.workspace),
                id(&t.agent),
                id(&t.session)
            );
            add(
                prefix,
                &m.paths,
                format!("{}/{}/{}:", t.workspace, t.agent, t.session),
            );
        }
        for (s, paths) in [
            (Sess::Active, &g.agent_paths),
            (Sess::Shut, &g.shut_agent_paths),
        ] {
            let t = g.turn(s);
            let prefix = format!("agents/{}/{}/", id(&t.workspace), id(&t.agent));
            add(prefix, paths, format!("{}/{}:", t.workspace, t.agent));
        }
        if g.c == 0 {
            let prefix = format!("workspaces/{}/", id(HOME));
            add(prefix, &lock(&g.curated), format!("{HOME}:"));
        }
    }
    for (key, what) in promised {
        if !objects.keys(BUCKET, &key).contains(&key) {
            return Err(format!(
                "{what} is gone after the heal's sweep (from {swept_at}), though nothing deleted it and its session was active within the TTL (SC-5.3, SF-4.2)"
            ));
        }
    }
    Ok(())
}

//! The rows world's oracle: the executable model of part SR (`model/`), fed by the server
//! with every operation the reference accepted, held against what the reference has.
//!
//! Safety, after every tick: everything the model keeps after a reap at the latest time any
//! tick reaped at is still there. Liveness, after the heal: a whole tick leaves exactly what
//! the model keeps.

use std::collections::BTreeSet;

use tidemark_reference::rows::ReapConfig;
use tidemark_reference::rows::TABLES;

use super::{all_sessions, summary, World};
use crate::profiles::rows::contract::{RowsOp, RowsOutcome};
use crate::profiles::rows::model::Model;
use crate::profiles::rows::reference::answer;
use crate::profiles::rows::runner::Outcome;
use crate::profiles::rows::script::{Action, Counted};
use crate::world::lock;
use tidemark_sim::clock::EPOCH;

fn kept_at(world: &World, at: i64) -> Model {
    let mut kept = lock(&world.model).clone();
    kept.apply(&Action::Reap, at);
    kept
}

fn model_count(m: &mut Model, c: Counted) -> i64 {
    match m.apply(&Action::Count(c), 0) {
        Outcome::Count(n) => n,
        other => panic!("the model counted {other:?}"),
    }
}

/// One thing observed on the reference beside what the model says of it.
enum Seen {
    /// A count: the reference's answer (or its refusal's reason) and the model's.
    Count {
        what: String,
        got: Result<i64, &'static str>,
        want: i64,
    },
    /// A read whose answer no tick may change while the rows it shows are kept.
    Read {
        what: String,
        got: String,
        want: String,
    },
}

fn entries_text(entries: impl Iterator<Item = (String, String, String)>) -> String {
    format!("{:?}", entries.collect::<Vec<_>>())
}

/// Every table's count, every reply's events (deleted replies too), each conversation's
/// events and transcript, and the snapshots, on the reference and in `kept`.
async fn observe(world: &World, kept: &mut Model) -> Vec<Seen> {
    let store = &world.store;
    let code = |e: tidemark_reference::rows::RowsError| e.code();
    let mut out = Vec::new();
    for t in TABLES {
        out.push(Seen::Count {
            what: format!("{t} rows"),
            got: store.count(t).await.map_err(code),
            want: model_count(kept, Counted::Table(t.to_string())),
        });
    }
    let replies: Vec<String> = lock(&world.replies).iter().cloned().collect();
    for r in replies {
        out.push(Seen::Count {
            what: format!("events of reply {r}"),
            got: store
                .count_events_of_reply(r.parse().unwrap_or(-1))
                .await
                .map_err(code),
            want: model_count(kept, Counted::StreamedOf(r.clone())),
        });
    }
    for s in all_sessions() {
        out.push(Seen::Count {
            what: format!("events in {s}"),
            got: store.count_events_in_session(&s).await.map_err(code),
            want: model_count(kept, Counted::EventsIn(s.clone())),
        });
        let op = RowsOp::Transcript { session: s.clone() };
        let got = match answer(store, &ReapConfig::default(), EPOCH, &op).await {
            RowsOutcome::Transcript { replies } => {
                entries_text(replies.into_iter().map(|e| (e.reply, e.state, e.text)))
            }
            other => summary(&other),
        };
        let want = match kept.apply(&Action::Transcript(s.clone()), 0) {
            Outcome::Transcript(entries) => {
                entries_text(entries.into_iter().map(|e| (e.reply, e.state, e.text)))
            }
            Outcome::Refused { reason, .. } => format!("refused {reason}"),
            other => format!("{other:?}"),
        };
        out.push(Seen::Read {
            what: format!("transcript of {s}"),
            got,
            want,
        });
    }
    out
}

/// The snapshots the reference has and those the model keeps.
async fn snapshots(
    world: &World,
    kept: &mut Model,
) -> (Result<BTreeSet<String>, String>, BTreeSet<String>) {
    let got = world
        .store
        .snapshots()
        .await
        .map(|ids| ids.iter().map(i64::to_string).collect())
        .map_err(|e| e.code().to_string());
    let want = match kept.apply(&Action::Snapshots, 0) {
        Outcome::Snapshots(names) => names.into_iter().collect(),
        _ => BTreeSet::new(),
    };
    (got, want)
}

/// Safety after a tick: nothing the model keeps at `high` is gone. A row not reaped yet is no
/// violation (a tick may not have run since it expired); a row SR keeps that is missing is.
pub(super) async fn safety(world: &World, high: i64) -> Vec<String> {
    let mut kept = kept_at(world, high);
    let mut bad = Vec::new();
    for seen in observe(world, &mut kept).await {
        match seen {
            Seen::Count { what, got, want } if !got.is_ok_and(|g| g >= want) => bad.push(format!(
                "{what}: the reference has {got:?}, SR keeps {want}"
            )),
            Seen::Read { what, got, want } if got != want => bad.push(format!(
                "{what}: the reference shows {got}, SR shows {want}"
            )),
            _ => {}
        }
    }
    match snapshots(world, &mut kept).await {
        (Ok(got), want) => {
            let missing: Vec<&String> = want.difference(&got).collect();
            if !missing.is_empty() {
                bad.push(format!("snapshots {missing:?} are gone, which SR keeps"));
            }
        }
        (Err(e), _) => bad.push(format!("snapshots refused {e}")),
    }
    bad
}

/// Liveness after the heal: a whole tick at `at` leaves exactly what SR keeps.
pub(super) async fn liveness(world: &World, at: i64) -> Result<(), String> {
    let mut kept = kept_at(world, at);
    let mut bad = Vec::new();
    for seen in observe(world, &mut kept).await {
        match seen {
            Seen::Count { what, got, want } if got != Ok(want) => bad.push(format!(
                "{what}: the reference has {got:?}, SR keeps {want}"
            )),
            Seen::Read { what, got, want } if got != want => bad.push(format!(
                "{what}: the reference shows {got}, SR shows {want}"
            )),
            _ => {}
        }
    }
    let (got, want) = snapshots(world, &mut kept).await;
    if got.as_ref() != Ok(&want) {
        bad.push(format!(
            "snapshots: the reference has {got:?}, SR keeps {want:?}"
        ));
    }
    match bad.first() {
        None => Ok(()),
        Some(first) => Err(format!("{first} ({} differences)", bad.len())),
    }
}

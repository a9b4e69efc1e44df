//! The rows world's guests: writers in their own workspaces, each operation drawn from the
//! guest's own stream and what the answers that reached it taught it (a lost answer teaches
//! nothing, so a guest may ask about a reply it believes is writing and be refused).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tidemark_reference::clock::{DAY_MS, HOUR_MS};
use tidemark_reference::rows::ExpiringStore;

use super::{sessions_of, World, CALL_TIMEOUT, OPS_PER_GUEST, PORT, SERVER, STORE_IDS};
use crate::profiles::rows::contract::{RowsOp, RowsOutcome};

async fn call(guest: usize, seq: usize, op: RowsOp) -> std::io::Result<RowsOutcome> {
    crate::world::net::call(SERVER, PORT, guest, seq, op).await
}

/// What a guest knows of its own things, from the answers that reached it.
#[derive(Default)]
struct Known {
    writing: Vec<String>,
    stopped: Vec<String>,
    ended: Vec<String>,
    snapshots: Vec<String>,
    items: Vec<String>,
}

fn pick(rng: &mut impl Rng, from: &[String]) -> Option<String> {
    (!from.is_empty()).then(|| from[rng.gen_range(0..from.len())].clone())
}

/// The guest's next operation, from its stream and what it knows.
fn next_op(rng: &mut impl Rng, g: usize, known: &Known) -> RowsOp {
    let [a, b] = sessions_of(g);
    let session = if rng.gen_bool(0.6) { a } else { b.clone() };
    let payload = format!("p{}", rng.gen_range(0..1000));
    loop {
        let op = match rng.gen_range(0..24) {
            0..=2 => RowsOp::StartReply {
                session: session.clone(),
            },
            3..=7 => match pick(rng, &known.writing) {
                Some(reply) => RowsOp::Stream {
                    reply,
                    kind: ["chat.delta", "chat.delta", "chat.reasoning", "chat.tool"]
                        [rng.gen_range(0..4)]
                    .into(),
                    payload: payload.clone(),
                },
                None => continue,
            },
            8 => match pick(rng, &known.writing) {
                Some(reply) => RowsOp::FinishReply {
                    reply,
                    text: format!("final {payload}"),
                },
                None => continue,
            },
            9 => match pick(rng, &known.writing) {
                Some(reply) => RowsOp::InterruptReply { reply },
                None => continue,
            },
            10 => match pick(rng, &known.stopped) {
                Some(reply) => RowsOp::SealReply { reply },
                None => continue,
            },
            11 => {
                let any: Vec<String> = [&known.writing, &known.stopped, &known.ended]
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect();
                match pick(rng, &any) {
                    Some(reply) => RowsOp::DeleteReply { reply },
                    None => continue,
                }
            }
            // A conversation kind, or one that looks streamed: both are kept with their
            // conversation (SR-2.7).
            12 => RowsOp::RecordEvent {
                session: session.clone(),
                kind: ["note.added", "chat.title"][rng.gen_range(0..2)].into(),
                payload: payload.clone(),
            },
            13 => RowsOp::AddPrompt {
                session: session.clone(),
                body: payload.clone(),
            },
            14 => RowsOp::RecordInvocation {
                session: session.clone(),
            },
            15 => RowsOp::FireTrigger {
                trigger: format!("nightly{g}"),
            },
            16 => RowsOp::Keep {
                store: ExpiringStore::ALL[rng.gen_range(0..4)].table().into(),
                id: format!("g{g}{}", STORE_IDS[rng.gen_range(0..STORE_IDS.len())]),
                // Zero: a row revoked as it is written, due at the next tick (SR-4.1).
                for_ms: [0, HOUR_MS, 6 * HOUR_MS, 2 * DAY_MS, 10 * DAY_MS][rng.gen_range(0..5)],
            },
            17 => RowsOp::TakeSnapshot,
            18 => match pick(rng, &known.snapshots) {
                Some(snapshot) => RowsOp::NameSnapshot {
                    model: format!("m{g}"),
                    snapshot,
                },
                None => continue,
            },
            19 if rng.gen_bool(0.3) => RowsOp::DropModel {
                model: format!("m{g}"),
            },
            19 | 20 => RowsOp::OpenItem {
                workspace: format!("w{g}"),
            },
            21 => match pick(rng, &known.items) {
                Some(item) => RowsOp::SettleItem { item },
                None => continue,
            },
            22 => RowsOp::HoldRequest {
                session: session.clone(),
                item: pick(rng, &known.items).filter(|_| rng.gen_bool(0.5)),
            },
            // The second conversation goes, and comes back later.
            _ if rng.gen_bool(0.5) => RowsOp::DeleteSession { session: b.clone() },
            _ => RowsOp::CreateSession {
                session: b.clone(),
                workspace: format!("w{g}"),
            },
        };
        return op;
    }
}

/// What the guest learns from an answer that reached it.
fn learn(known: &mut Known, op: &RowsOp, out: &RowsOutcome) {
    let remove = |v: &mut Vec<String>, id: &str| v.retain(|x| x != id);
    match (op, out) {
        (RowsOp::StartReply { .. }, RowsOutcome::Made { id }) => known.writing.push(id.clone()),
        (RowsOp::TakeSnapshot, RowsOutcome::Made { id }) => known.snapshots.push(id.clone()),
        (RowsOp::OpenItem { .. }, RowsOutcome::Made { id }) => known.items.push(id.clone()),
        (RowsOp::FinishReply { reply, .. }, RowsOutcome::Ok) => {
            remove(&mut known.writing, reply);
            known.ended.push(reply.clone());
        }
        (RowsOp::InterruptReply { reply }, RowsOutcome::Ok) => {
            remove(&mut known.writing, reply);
            known.stopped.push(reply.clone());
        }
        (RowsOp::SealReply { reply }, RowsOutcome::Ok) => {
            remove(&mut known.stopped, reply);
            known.ended.push(reply.clone());
        }
        (RowsOp::DeleteReply { reply }, RowsOutcome::Ok) => {
            for v in [&mut known.writing, &mut known.stopped, &mut known.ended] {
                remove(v, reply);
            }
        }
        _ => {}
    }
}

pub(super) async fn guest(world: Arc<World>, g: usize, left: Arc<AtomicUsize>) -> turmoil::Result {
    let mut rng = world.seed.stream(&format!("rows-world-guest-{g}"));
    let mut seq = 0;
    let [a, b] = sessions_of(g);
    let setup = [
        RowsOp::CreateWorkspace {
            workspace: format!("w{g}"),
        },
        RowsOp::CreateSession {
            session: a,
            workspace: format!("w{g}"),
        },
        RowsOp::CreateSession {
            session: b,
            workspace: format!("w{g}"),
        },
    ];
    // The server may still be starting: setup is retried until it is answered.
    for op in setup {
        for _ in 0..100 {
            seq += 1;
            if let Ok(Ok(_)) = tokio::time::timeout(CALL_TIMEOUT, call(g, seq, op.clone())).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let mut known = Known::default();
    for _ in 0..OPS_PER_GUEST {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(10..90))).await;
        let op = next_op(&mut rng, g, &known);
        seq += 1;
        match tokio::time::timeout(CALL_TIMEOUT, call(g, seq, op.clone())).await {
            Ok(Ok(out)) => learn(&mut known, &op, &out),
            // The request may or may not have been applied: the guest learns nothing.
            _ => world.log(format!("g{g} #{seq} had no answer")),
        }
    }
    left.fetch_sub(1, Ordering::SeqCst);
    Ok(())
}

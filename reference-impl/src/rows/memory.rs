//! The rows schema in memory (SPEC SR-8's tables without PostgreSQL), so the profile runs where
//! sqlx cannot: a turmoil world, and runs that need no database. It keeps what the schema
//! decides, nothing more:
//!
//! - one ordered map per table, keyed by its primary key, so every scan is in key order and
//!   nothing a trace or a decision reads depends on hashing;
//! - a counter per `bigserial` table, starting at 1 and, as a PostgreSQL sequence does, spent by
//!   an insert that a foreign key then refuses (so ids match the database's step for step);
//! - the foreign keys as checks on insert and the `ON DELETE CASCADE`s as [`Tables::delete_session`]
//!   and [`Tables::delete_workspace`];
//! - one lock over all tables: every statement (and every transaction the PostgreSQL code
//!   opens) is one critical section that never awaits, so what PostgreSQL's row locks serialise
//!   is serialised here too. A sweep takes the lock once per batch, as each batch is its own
//!   statement there.
//!
//! Each operation's in-memory half lives beside its SQL in the rule's file (`replies.rs`,
//! `expiring.rs`, `catalog.rs`, `mod.rs`), as each sweep does (SR-7); this file only holds the
//! tables they share. The two backends earn their interchangeability by a differential check
//! (`conformance/tests/suites/rows_tiers.rs`: every rows scenario, and every mutant, on both).

use std::collections::{BTreeMap, BTreeSet};

use super::schema::{ExpiringStore, ReplyState};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Session {
    pub workspace: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Prompt {
    pub session: String,
    pub body: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    pub session: String,
    pub state: ReplyState,
    pub sealed: bool,
    pub content: Option<String>,
    pub started_at_ms: i64,
    pub finished_at_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub session: String,
    pub reply: Option<i64>,
    pub kind: String,
    pub payload: String,
    pub created_at_ms: i64,
    pub forget_after_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Invocation {
    pub session: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Firing {
    pub trigger: String,
    pub fired_at_ms: i64,
    pub expires_at_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    pub workspace: String,
    pub settled_at_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub session: String,
    pub item: Option<i64>,
    pub held_at_ms: i64,
}

/// The last value each `bigserial` handed out (0: none yet, so the first id is 1).
#[derive(Clone, Debug, Default)]
pub(crate) struct Sequences {
    pub prompts: i64,
    pub replies: i64,
    pub events: i64,
    pub invocations: i64,
    pub firings: i64,
    pub snapshots: i64,
    pub items: i64,
    pub held: i64,
}

/// `nextval`: the next id of a sequence, spent whether or not the insert then commits.
pub(crate) fn next(seq: &mut i64) -> i64 {
    *seq += 1;
    *seq
}

/// Every table of the rows schema.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tables {
    pub seq: Sequences,
    pub workspaces: BTreeSet<String>,
    pub sessions: BTreeMap<String, Session>,
    pub prompts: BTreeMap<i64, Prompt>,
    pub replies: BTreeMap<i64, Reply>,
    pub events: BTreeMap<i64, Event>,
    pub invocations: BTreeMap<i64, Invocation>,
    pub firings: BTreeMap<i64, Firing>,
    /// Snapshot id -> `taken_at_ms`.
    pub snapshots: BTreeMap<i64, i64>,
    /// Model id -> the snapshot it names.
    pub models: BTreeMap<String, i64>,
    /// Each expiring store's rows: id -> `expires_at_ms`.
    pub expiring: BTreeMap<ExpiringStore, BTreeMap<String, i64>>,
    pub items: BTreeMap<i64, Item>,
    pub held: BTreeMap<i64, Held>,
}

/// The schema's cascades that a mutant's schema may lack (its foreign key dropped): all `true`
/// in the reference.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cascades {
    /// Session prompts from their session.
    pub prompts: bool,
    /// Tool invocations from their session.
    pub invocations: bool,
    /// Action items from their workspace.
    pub items: bool,
}

impl Cascades {
    /// Every cascade the schema declares.
    #[cfg(test)]
    pub const ALL: Cascades = Cascades {
        prompts: true,
        invocations: true,
        items: true,
    };
}

impl Tables {
    /// `DELETE FROM sessions WHERE id = $1` with the schema's cascades: its prompts, replies,
    /// events, tool invocations and held requests (less what a mutant's schema lost). False if
    /// there was no such session.
    pub fn delete_session(&mut self, id: &str, cascade: &Cascades) -> bool {
        if self.sessions.remove(id).is_none() {
            return false;
        }
        if cascade.prompts {
            self.prompts.retain(|_, p| p.session != id);
        }
        self.replies.retain(|_, r| r.session != id);
        self.events.retain(|_, e| e.session != id);
        if cascade.invocations {
            self.invocations.retain(|_, i| i.session != id);
        }
        self.held.retain(|_, h| h.session != id);
        true
    }

    /// `DELETE FROM workspaces WHERE id = $1` with its cascades: its sessions (and theirs) and
    /// its action items, whose held requests go with them.
    pub fn delete_workspace(&mut self, id: &str, cascade: &Cascades) -> bool {
        if !self.workspaces.remove(id) {
            return false;
        }
        let sessions: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.workspace == id)
            .map(|(k, _)| k.clone())
            .collect();
        for s in sessions {
            self.delete_session(&s, cascade);
        }
        if !cascade.items {
            return true;
        }
        let items: Vec<i64> = self
            .items
            .iter()
            .filter(|(_, i)| i.workspace == id)
            .map(|(k, _)| *k)
            .collect();
        for i in items {
            self.delete_item(i);
        }
        true
    }

    /// Removes an action item and, by cascade, the requests held for it.
    pub fn delete_item(&mut self, id: i64) {
        if self.items.remove(&id).is_some() {
            self.held.retain(|_, h| h.item != Some(id));
        }
    }

    /// How many rows `table` holds (the name already checked against [`super::TABLES`]).
    pub fn count(&self, table: &str) -> i64 {
        let n = match table {
            "workspaces" => self.workspaces.len(),
            "sessions" => self.sessions.len(),
            "session_prompts" => self.prompts.len(),
            "replies" => self.replies.len(),
            "events" => self.events.len(),
            "tool_invocations" => self.invocations.len(),
            "trigger_firings" => self.firings.len(),
            "catalog_snapshots" => self.snapshots.len(),
            "models" => self.models.len(),
            "action_items" => self.items.len(),
            "held_requests" => self.held.len(),
            other => ExpiringStore::ALL
                .into_iter()
                .find(|s| s.table() == other)
                .map_or(0, |s| self.expiring.get(&s).map_or(0, BTreeMap::len)),
        };
        n as i64
    }
}

/// One batch of a sweep in memory: removes at most `limit` rows of `map` that `expired`
/// selects, taking them in `order` (the SQL's `ORDER BY`, with the key breaking ties so the
/// batch is the same on every run). Returns how many it removed.
pub(crate) fn delete_batch<K: Ord + Clone, V, O: Ord>(
    map: &mut BTreeMap<K, V>,
    limit: usize,
    expired: impl Fn(&K, &V) -> bool,
    order: impl Fn(&K, &V) -> O,
) -> u64 {
    let mut hits: Vec<(O, K)> = map
        .iter()
        .filter(|(k, v)| expired(k, v))
        .map(|(k, v)| (order(k, v), k.clone()))
        .collect();
    hits.sort();
    hits.truncate(limit);
    for (_, k) in &hits {
        map.remove(k);
    }
    hits.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Timestamp, DAY_MS};
    use crate::rows::batch::ReapConfig;
    use crate::rows::{RowsConfig, RowsStore};

    const T0: Timestamp = Timestamp::from_millis(1_000_000);

    #[tokio::test]
    async fn ids_count_from_one_per_table_and_an_insert_its_key_refuses_spends_one() {
        let s = RowsStore::in_memory(RowsConfig::default());
        assert_eq!(s.tier(), "memory");
        assert!(s.pg_pool().is_none());
        s.create_workspace("w").await.unwrap();
        s.create_session("w", "c").await.unwrap();
        assert_eq!(s.start_reply("c", T0).await, Ok(1));
        assert_eq!(s.take_snapshot(T0).await, Ok(1));
        assert_eq!(s.open_item("w").await, Ok(1));
        // As a PostgreSQL sequence, the refused insert took id 2.
        assert_eq!(
            s.start_reply("gone", T0).await.map_err(|e| e.code()),
            Err("unknown_session")
        );
        assert_eq!(s.start_reply("c", T0).await, Ok(3));
        // A check made before the insert (the kind's spelling) spends nothing.
        assert_eq!(s.stream(1, "chat.delta", "a", T0).await, Ok(1));
        assert!(s.stream(1, "Bad", "a", T0).await.is_err());
        assert_eq!(s.stream(1, "chat.delta", "b", T0).await, Ok(2));
    }

    #[tokio::test]
    async fn clones_share_one_store_and_two_stores_share_nothing() {
        let a = RowsStore::in_memory(RowsConfig::default());
        let b = RowsStore::in_memory(RowsConfig::default());
        a.clone().create_workspace("w").await.unwrap();
        assert_eq!(a.count("workspaces").await, Ok(1));
        assert_eq!(b.count("workspaces").await, Ok(0));
        assert_eq!(
            a.count("no_such_table").await.map_err(|e| e.code()),
            Err("unknown_kind")
        );
    }

    #[tokio::test]
    async fn a_crashed_tick_in_memory_keeps_what_its_batches_removed_and_the_next_takes_the_rest() {
        let s = RowsStore::in_memory(RowsConfig::default());
        for i in 0..5 {
            s.fire_trigger(&format!("t{i}"), T0).await.unwrap();
        }
        let later = T0.plus_ms(31 * DAY_MS);
        // The streamed events' and the invocations' sweeps each commit one empty batch first,
        // which the fault does not count; then the firings' sweep commits two batches of two,
        // and the tick dies.
        let crash = ReapConfig::crashing_after(2).with_batch(2);
        let err = s.reap_tick(later, &crash).await.unwrap_err();
        assert_eq!(err.code(), "database_unavailable");
        assert_eq!(s.count("trigger_firings").await, Ok(1));
        let report = s.reap_tick(later, &ReapConfig::default()).await.unwrap();
        assert_eq!(report.trigger_firings, 1);
        assert_eq!(s.count("trigger_firings").await, Ok(0));
        // A zero budget dies before its first batch.
        s.fire_trigger("t", T0).await.unwrap();
        assert!(s
            .reap_tick(later, &ReapConfig::crashing_after(0))
            .await
            .is_err());
        assert_eq!(s.count("trigger_firings").await, Ok(1));
    }

    #[test]
    #[should_panic(expected = "in-memory backend")]
    fn asking_the_memory_backend_for_a_database_pool_is_a_loud_mistake() {
        let _ = RowsStore::in_memory(RowsConfig::default()).pool();
    }

    #[test]
    fn a_batch_takes_the_earliest_expired_rows_up_to_its_limit_and_nothing_else() {
        let mut m: BTreeMap<i64, i64> = [(1, 50), (2, 10), (3, 30), (4, 99), (5, 10)].into();
        // Expired: value <= 40 (ids 2, 3, 5); ordered by value then id: 2, 5, 3.
        assert_eq!(delete_batch(&mut m, 2, |_, v| *v <= 40, |_, v| *v), 2);
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), vec![1, 3, 4]);
        assert_eq!(delete_batch(&mut m, 2, |_, v| *v <= 40, |_, v| *v), 1);
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), vec![1, 4]);
        assert_eq!(delete_batch(&mut m, 2, |_, v| *v <= 40, |_, v| *v), 0);
    }

    #[test]
    fn deleting_a_workspace_cascades_through_its_sessions_and_items_to_what_they_keep() {
        let mut t = Tables::default();
        for w in ["w", "other"] {
            t.workspaces.insert(w.into());
        }
        for (s, w) in [("s", "w"), ("keep", "other")] {
            t.sessions.insert(
                s.into(),
                Session {
                    workspace: w.into(),
                },
            );
            t.prompts.insert(
                next(&mut t.seq.prompts),
                Prompt {
                    session: s.into(),
                    body: "b".into(),
                },
            );
        }
        t.items.insert(
            1,
            Item {
                workspace: "w".into(),
                settled_at_ms: Some(5),
            },
        );
        // A request held in the other workspace's session for this workspace's item goes
        // with the item.
        t.held.insert(
            1,
            Held {
                session: "keep".into(),
                item: Some(1),
                held_at_ms: 0,
            },
        );
        t.held.insert(
            2,
            Held {
                session: "keep".into(),
                item: None,
                held_at_ms: 0,
            },
        );
        assert_eq!((t.count("sessions"), t.count("session_prompts")), (2, 2));
        assert!(t.delete_workspace("w", &Cascades::ALL));
        assert!(!t.delete_workspace("w", &Cascades::ALL));
        assert_eq!(t.sessions.keys().collect::<Vec<_>>(), vec!["keep"]);
        assert_eq!(t.count("session_prompts"), 1);
        assert_eq!(t.count("action_items"), 0);
        assert_eq!(t.held.keys().copied().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn without_the_prompts_cascade_a_deleted_sessions_prompts_stay() {
        let mut t = Tables::default();
        t.workspaces.insert("w".into());
        t.sessions.insert(
            "s".into(),
            Session {
                workspace: "w".into(),
            },
        );
        t.prompts.insert(
            1,
            Prompt {
                session: "s".into(),
                body: "b".into(),
            },
        );
        let no_prompts = Cascades {
            prompts: false,
            ..Cascades::ALL
        };
        assert!(t.delete_session("s", &no_prompts));
        assert_eq!(t.count("session_prompts"), 1);
        assert_eq!(t.count("sessions"), 0);
    }
}

//! The whole state of a rows deployment as data, for exploration's checks after every reap:
//! each table's rows as sorted lines (names, never the reference's ids; times in milliseconds
//! from the epoch), produced by the model ([`super::Model::rows`]) and read from an
//! implementation in the same format (`explore/observe.rs`), so the two compare line by line.
//! Replies are seen through each session's transcript.
//!
//! After a crashed tick the exact rows removed depend on the order of rows tied in a batch; what
//! SR fixes is checked instead ([`check_crashed`]): every table lies between the state before the
//! tick and the model's state after a full one, and each sweep removed exactly what its
//! committed batches could.

use std::collections::BTreeMap;

use tidemark_sim::clock::EPOCH;

/// Table (or `transcripts`) to its rows, each a line, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    pub tables: BTreeMap<String, Vec<String>>,
}

impl State {
    pub fn put(&mut self, table: &str, lines: impl Iterator<Item = String>) {
        let v = self.tables.entry(table.to_string()).or_default();
        v.extend(lines);
        v.sort();
    }

    pub fn put_one(&mut self, table: &str, line: String) {
        self.put(table, std::iter::once(line));
    }

    fn table(&self, t: &str) -> &[String] {
        self.tables.get(t).map_or(&[], |v| v.as_slice())
    }

    fn names(&self, other: &State) -> Vec<String> {
        let mut names: Vec<String> = self
            .tables
            .keys()
            .chain(other.tables.keys())
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// sha256 of every line, for the trace.
    pub fn hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for (t, v) in &self.tables {
            for l in v {
                h.update(format!("{t}: {l}\n").as_bytes());
            }
        }
        hex::encode(h.finalize())
    }
}

/// The first table where `actual` is not `expected`: (expected, actual) as text.
pub fn first_difference(expected: &State, actual: &State) -> Option<(String, String)> {
    for t in expected.names(actual) {
        let (e, a) = (expected.table(&t), actual.table(&t));
        if e != a {
            let missing: Vec<&String> = e.iter().filter(|l| !a.contains(l)).collect();
            let extra: Vec<&String> = a.iter().filter(|l| !e.contains(l)).collect();
            return Some((
                format!(
                    "{t}: {} rows; missing from the reference: {missing:?}",
                    e.len()
                ),
                format!("{t}: {} rows; not in the model: {extra:?}", a.len()),
            ));
        }
    }
    None
}

/// Whether every line of `small` is in `big`, as multisets (both sorted).
fn included(small: &[String], big: &[String]) -> bool {
    let mut it = big.iter();
    small.iter().all(|l| it.by_ref().any(|b| b == l))
}

/// The table each sweep removes from, in the tick's order (SR-7.2).
pub const SWEPT_TABLES: [&str; 8] = [
    "events",
    "tool_invocations",
    "trigger_firings",
    "catalog_snapshots",
    "live_sessions",
    "refresh_tokens",
    "webhook_deliveries",
    "breaker_sightings",
];

/// A crashed tick's state: every table between `after` (the model after a full tick) and
/// `before` (the state before it), and each swept table short by exactly `removed[i]` rows.
/// `Err((expected, actual))` names the first table that is not.
pub fn check_crashed(
    before: &State,
    after: &State,
    actual: &State,
    removed: &[u64; 8],
) -> Result<(), (String, String)> {
    for t in before.names(actual) {
        let (b, f, a) = (before.table(&t), after.table(&t), actual.table(&t));
        if !included(a, b) {
            let extra: Vec<&String> = a.iter().filter(|l| !b.contains(l)).collect();
            return Err((
                format!("{t}: only rows that existed before the crashed tick"),
                format!("{t}: new rows {extra:?}"),
            ));
        }
        if !included(f, a) {
            let gone: Vec<&String> = f.iter().filter(|l| !a.contains(l)).collect();
            return Err((
                format!("{t}: no row removed that SR keeps"),
                format!("{t}: removed {gone:?}"),
            ));
        }
        let want = SWEPT_TABLES
            .iter()
            .position(|s| *s == t)
            .map_or(0, |i| removed[i]);
        let got = (b.len() - a.len()) as u64;
        if got != want {
            return Err((
                format!("{t}: {want} rows removed by the batches that committed"),
                format!("{t}: {got} rows removed"),
            ));
        }
    }
    Ok(())
}

pub fn rel(ms: i64) -> i64 {
    ms - EPOCH.as_millis()
}

pub fn line_event(
    session: &str,
    reply: Option<&str>,
    kind: &str,
    payload: &str,
    forget_at: Option<i64>,
) -> String {
    format!(
        "{session} {} {kind} {payload:?} forget {}",
        reply.unwrap_or("-"),
        forget_at.map_or("-".to_string(), |t| t.to_string())
    )
}

pub fn line_expiring(owner: &str, at: i64) -> String {
    format!("{owner} expires {at}")
}

pub fn line_item(item: &str, workspace: &str, settled: Option<i64>) -> String {
    format!(
        "{item} in {workspace} settled {}",
        settled.map_or("-".to_string(), |t| t.to_string())
    )
}

/// How much of the state a tier lets the harness read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Every row, read from the reference's schema with read-only SQL (PostgreSQL).
    Rows,
    /// How many rows each table holds, through the endpoint's observations: for a backend with
    /// no schema to read. The snapshot listing and the transcripts are read in full either way.
    Counts,
}

/// The tables a state holds besides `catalog_snapshots` and `transcripts`.
pub const COUNTED: [&str; 14] = [
    "workspaces",
    "sessions",
    "session_prompts",
    "events",
    "tool_invocations",
    "trigger_firings",
    "models",
    "live_sessions",
    "refresh_tokens",
    "webhook_deliveries",
    "breaker_sightings",
    "action_items",
    "held_requests",
    "replies",
];

impl State {
    /// This state as `detail` sees it: at [`Detail::Counts`] each counted table's rows become
    /// as many identical lines, so comparisons and [`check_crashed`]'s inclusions become counts.
    pub fn at(&self, detail: Detail) -> State {
        match detail {
            Detail::Rows => self.clone(),
            Detail::Counts => State {
                tables: self
                    .tables
                    .iter()
                    .map(|(t, v)| match COUNTED.contains(&t.as_str()) {
                        true => (t.clone(), vec!["a row".to_string(); v.len()]),
                        false => (t.clone(), v.clone()),
                    })
                    .collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(lines: &[(&str, &[&str])]) -> State {
        let mut s = State::default();
        for (t, ls) in lines {
            s.put(t, ls.iter().map(|l| l.to_string()));
        }
        s
    }

    #[test]
    fn a_crashed_tick_may_remove_only_removable_rows_and_exactly_its_batches() {
        let before = state(&[("events", &["a", "b", "c"]), ("sessions", &["s"])]);
        let after = state(&[("events", &["c"]), ("sessions", &["s"])]);
        let mut removed = [0u64; 8];
        removed[0] = 1;
        let partial = state(&[("events", &["b", "c"]), ("sessions", &["s"])]);
        assert_eq!(check_crashed(&before, &after, &partial, &removed), Ok(()));
        // A row SR keeps is gone.
        let wrong = state(&[("events", &["a", "b"]), ("sessions", &["s"])]);
        assert!(check_crashed(&before, &after, &wrong, &removed)
            .unwrap_err()
            .0
            .contains("no row removed that SR keeps"));
        // More than the committed batches removed.
        assert!(check_crashed(&before, &after, &after, &removed).is_err());
        // A table no sweep touches lost a row.
        let cascade = state(&[("events", &["b", "c"])]);
        assert!(check_crashed(&before, &after, &cascade, &removed).is_err());
    }
}

//! Erasure obligations and their proofs read where the implementation keeps them (SPEC SL-4.7,
//! PROTOCOL.md "The erasure ledger"), and judged as SL-4 says.
//!
//! A program claiming `erasure_obligations` declares, in `init_ok`'s `erasure`, two read-only
//! queries: its obligations as rows of `obligation` (text), `subject` (text: `<ws>` or
//! `<ws>/<agent>`), `deadline_ms` (bigint) and `done_at_ms` (bigint, null while pending), and
//! its proofs as rows of `obligation`, `key` (text) and `deleted_at_ms` (bigint), one per key
//! recorded deleted. The harness runs them itself (`crate::declared_sql`: read-only, bounded,
//! rolled back, columns checked first), never taking the program's word.
//!
//! What is read is judged before it is answered, so a ledger that lies about itself fails the
//! step even where the scenario's expectation would not see it: a proof row naming an
//! obligation the obligations query does not yield, a key outside its obligation's subject
//! (SL-4.3), a deletion or a completion after the step's `now`, a key recorded deleted after
//! its obligation was met, a subject that is not `<ws>` or `<ws>/<agent>`, an obligation
//! yielded twice. A step then answers, for one subject, the state of each of its obligations
//! ([`state_text`]: `pending`, `overdue D`, `met`, `missed D`, SL-4.4) or the keys its proofs
//! name (duplicates kept: a key recorded twice is a proof that counts it twice).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sqlx::{PgPool, Row};
use tidemark_reference::clock::{DAY_MS, HOUR_MS};
use tidemark_reference::scoped::metadata::Metadata;

use crate::declared_sql::{self, Kind, Label};
use crate::protocol::InitOk;

/// The `init_ok` field declaring the queries (PROTOCOL.md).
pub const DECLARED_FIELD: &str = "erasure";

/// The two queries that read an erasure ledger. A key the harness does not read is an error,
/// as for the deletion ledger's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErasureQueries {
    /// Rows of `obligation`, `subject`, `deadline_ms`, `done_at_ms`.
    pub obligations: String,
    /// Rows of `obligation`, `key`, `deleted_at_ms`: one per key recorded deleted.
    pub proofs: String,
}

impl ErasureQueries {
    /// The queries a program declares as `erasure` in its `init_ok`: `None` when it declares
    /// none, an error when they are malformed.
    pub fn declared(claims: &InitOk) -> Result<Option<ErasureQueries>, String> {
        claims.declared(DECLARED_FIELD)
    }

    /// The reference's own queries, as its adapter declares them.
    pub fn reference() -> ErasureQueries {
        use tidemark_reference::scoped::retention::erasure::{OBLIGATIONS_SQL, PROOFS_SQL};
        ErasureQueries {
            obligations: OBLIGATIONS_SQL.into(),
            proofs: PROOFS_SQL.into(),
        }
    }

    /// Reads both with the harness's read-only runner.
    pub async fn read(&self, pool: &PgPool) -> Result<ErasureLedger, String> {
        let rows = read_only(
            pool,
            "obligations",
            &self.obligations,
            &[
                ("obligation", Kind::Text),
                ("subject", Kind::Text),
                ("deadline_ms", Kind::BigInt),
                ("done_at_ms", Kind::BigInt),
            ],
        )
        .await?;
        let mut obligations = Vec::new();
        for row in rows {
            let q = ("obligations", self.obligations.as_str());
            obligations.push(Obligation {
                obligation: required(&row, q, "obligation")?,
                subject: required(&row, q, "subject")?,
                deadline_ms: required(&row, q, "deadline_ms")?,
                done_at_ms: column(&row, q, "done_at_ms")?,
            });
        }
        let rows = read_only(
            pool,
            "proofs",
            &self.proofs,
            &[
                ("obligation", Kind::Text),
                ("key", Kind::Text),
                ("deleted_at_ms", Kind::BigInt),
            ],
        )
        .await?;
        let mut proofs = Vec::new();
        for row in rows {
            let q = ("proofs", self.proofs.as_str());
            proofs.push(Proof {
                obligation: required(&row, q, "obligation")?,
                key: required(&row, q, "key")?,
                deleted_at_ms: required(&row, q, "deleted_at_ms")?,
            });
        }
        Ok(ErasureLedger {
            obligations,
            proofs,
        })
    }
}

/// One obligation as the obligations query yields it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Obligation {
    pub obligation: String,
    pub subject: String,
    pub deadline_ms: i64,
    pub done_at_ms: Option<i64>,
}

/// One key recorded deleted, as the proofs query yields it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    pub obligation: String,
    pub key: String,
    pub deleted_at_ms: i64,
}

/// Everything the two queries yielded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErasureLedger {
    pub obligations: Vec<Obligation>,
    pub proofs: Vec<Proof>,
}

/// A subject as SL-4.7 spells it: `<ws>` for a workspace, `<ws>/<agent>` for an agent.
pub fn subject_text(workspace: &str, agent: Option<&str>) -> String {
    match agent {
        None => workspace.to_string(),
        Some(a) => format!("{workspace}/{a}"),
    }
}

/// The prefixes a subject's keys live under (SPEC SL-4.2, on SC-1.1's layout), from its
/// spelling; `None` for a spelling that is neither `<ws>` nor `<ws>/<agent>`.
fn subject_prefixes(subject: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = subject.split('/').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    match parts[..] {
        [ws] => Some(
            ["workspaces", "skills", "agents", "sessions"]
                .iter()
                .map(|c| format!("{c}/{ws}/"))
                .collect(),
        ),
        [ws, agent] => Some(vec![
            format!("agents/{ws}/{agent}/"),
            format!("sessions/{ws}/{agent}/"),
        ]),
        _ => None,
    }
}

impl ErasureLedger {
    /// The reference's rows in a metadata store (the simulation tier, where no SQL runs), as
    /// its declared queries yield them.
    pub async fn of_metadata(meta: &dyn Metadata) -> Result<ErasureLedger, String> {
        let obligations = meta
            .erasures()
            .await
            .map_err(|e| format!("reading the erasures: {e}"))?
            .into_iter()
            .map(|e| Obligation {
                obligation: e.id.to_string(),
                subject: subject_text(&e.workspace, e.agent.as_deref()),
                deadline_ms: e.deadline_ms,
                done_at_ms: e.done_at_ms,
            })
            .collect();
        let proofs = meta
            .erasure_proofs()
            .await
            .map_err(|e| format!("reading the erasure proofs: {e}"))?
            .into_iter()
            .filter_map(|p| {
                Some(Proof {
                    obligation: p.erasure_id.to_string(),
                    key: p.key,
                    deleted_at_ms: p.deleted_at_ms?,
                })
            })
            .collect();
        Ok(ErasureLedger {
            obligations,
            proofs,
        })
    }

    /// Why this ledger cannot be true at `now_ms`, if it cannot (see the module's note).
    fn check(&self, now_ms: i64) -> Result<(), String> {
        let mut by_id: BTreeMap<&str, &Obligation> = BTreeMap::new();
        for o in &self.obligations {
            if by_id.insert(&o.obligation, o).is_some() {
                return Err(format!(
                    "the obligations query yields obligation {:?} twice",
                    o.obligation
                ));
            }
            if subject_prefixes(&o.subject).is_none() {
                return Err(format!(
                    "obligation {:?} has the subject {:?}; SL-4.7 spells a subject <ws> or <ws>/<agent>",
                    o.obligation, o.subject
                ));
            }
            if let Some(done) = o.done_at_ms.filter(|d| *d > now_ms) {
                return Err(format!(
                    "obligation {:?} reads met at {done} ms, after now ({now_ms} ms)",
                    o.obligation
                ));
            }
        }
        for p in &self.proofs {
            let Some(o) = by_id.get(p.obligation.as_str()) else {
                return Err(format!(
                    "the proofs name obligation {:?} for {:?}, which the obligations query does not yield",
                    p.obligation, p.key
                ));
            };
            let under = subject_prefixes(&o.subject)
                .unwrap_or_default()
                .iter()
                .any(|prefix| p.key.starts_with(prefix.as_str()));
            if !under {
                return Err(format!(
                    "the proof of obligation {:?} names {:?}, which is not under its subject {:?} (SL-4.3)",
                    p.obligation, p.key, o.subject
                ));
            }
            if p.deleted_at_ms > now_ms {
                return Err(format!(
                    "the proof of obligation {:?} says {:?} was deleted at {} ms, after now ({now_ms} ms)",
                    p.obligation, p.key, p.deleted_at_ms
                ));
            }
            if let Some(done) = o.done_at_ms.filter(|d| p.deleted_at_ms > *d) {
                return Err(format!(
                    "the proof of obligation {:?} says {:?} was deleted at {} ms, after the obligation was met at {done} ms",
                    p.obligation, p.key, p.deleted_at_ms
                ));
            }
        }
        Ok(())
    }

    /// The state of each obligation of `subject` at `now_ms` ([`state_text`]), sorted.
    pub fn states(&self, subject: &str, now_ms: i64) -> Result<Vec<String>, String> {
        self.check(now_ms)?;
        let mut out: Vec<String> = self
            .obligations
            .iter()
            .filter(|o| o.subject == subject)
            .map(|o| state_text(o.deadline_ms, o.done_at_ms, now_ms))
            .collect();
        out.sort();
        Ok(out)
    }

    /// The keys the proofs of `subject`'s obligations name, sorted, each as often as named.
    pub fn proof(&self, subject: &str, now_ms: i64) -> Result<Vec<String>, String> {
        self.check(now_ms)?;
        let theirs: BTreeSet<&str> = self
            .obligations
            .iter()
            .filter(|o| o.subject == subject)
            .map(|o| o.obligation.as_str())
            .collect();
        let mut keys: Vec<String> = self
            .proofs
            .iter()
            .filter(|p| theirs.contains(p.obligation.as_str()))
            .map(|p| p.key.clone())
            .collect();
        keys.sort();
        Ok(keys)
    }
}

/// An obligation's state as SL-4.4 reads it: `pending` until its deadline and `overdue D`
/// after it (D = now - deadline), `met` when done by its deadline and `missed D` when done
/// after it (D = done - deadline). D is spelled by [`duration_text`].
pub fn state_text(deadline_ms: i64, done_at_ms: Option<i64>, now_ms: i64) -> String {
    match done_at_ms {
        None if now_ms <= deadline_ms => "pending".into(),
        None => format!("overdue {}", duration_text(now_ms - deadline_ms)),
        Some(done) if done <= deadline_ms => "met".into(),
        Some(done) => format!("missed {}", duration_text(done - deadline_ms)),
    }
}

/// A positive duration in the scenarios' spelling, largest unit first and each unit once:
/// `1d12h`, `30m`, `1m30s`, `250ms`.
pub fn duration_text(ms: i64) -> String {
    let units: [(&str, i64); 5] = [
        ("d", DAY_MS),
        ("h", HOUR_MS),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    let mut rest = ms;
    let mut out = String::new();
    for (unit, size) in units {
        if rest >= size {
            out.push_str(&format!("{}{unit}", rest / size));
            rest %= size;
        }
    }
    if out.is_empty() {
        "0ms".into()
    } else {
        out
    }
}

/// A state as a scenario writes it (`pending`, `met`, `overdue 36h`, `missed 2d`), in
/// [`state_text`]'s spelling (`overdue 1d12h`), so an expectation compares with what is read.
pub fn parse_state(words: &[&str]) -> Result<String, String> {
    let positive = |d: &str| {
        crate::scenario::units::duration_ms(d, crate::scenario::units::Sign::NotNegative).and_then(
            |ms| {
                if ms > 0 {
                    Ok(duration_text(ms))
                } else {
                    Err(format!("an erasure late by {d} is not late"))
                }
            },
        )
    };
    match words {
        ["pending"] => Ok("pending".into()),
        ["met"] => Ok("met".into()),
        ["overdue", d] => Ok(format!("overdue {}", positive(d)?)),
        ["missed", d] => Ok(format!("missed {}", positive(d)?)),
        _ => Err(format!(
            "an erasure's state is pending, met, overdue DURATION or missed DURATION, not {:?}",
            tidemark_sim::clip::clip(&words.join(" "))
        )),
    }
}

async fn read_only(
    pool: &PgPool,
    which: &str,
    sql: &str,
    columns: &[(&str, Kind)],
) -> Result<Vec<sqlx::postgres::PgRow>, String> {
    let label = Label {
        named: &format!("the erasure ledger's {which} query"),
        reading: &format!("reading the erasure ledger with its {which} query"),
    };
    declared_sql::read_only(pool, &label, sql, &[], columns).await
}

/// A column that may be null.
fn column<T>(
    row: &sqlx::postgres::PgRow,
    (which, sql): (&str, &str),
    name: &str,
) -> Result<Option<T>, String>
where
    T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get::<Option<T>, _>(name).map_err(|e| {
        let detail = match &e {
            sqlx::Error::Database(db) => db.message().to_string(),
            other => other.to_string(),
        };
        format!("reading the erasure ledger with its {which} query ({sql}): {detail}")
    })
}

/// A column that must not be null.
fn required<T>(row: &sqlx::postgres::PgRow, q: (&str, &str), name: &str) -> Result<T, String>
where
    T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    column(row, q, name)?.ok_or_else(|| {
        format!(
            "the erasure ledger's {} query ({}) gave a null `{name}`",
            q.0, q.1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(done: Option<i64>, proofs: &[(&str, &str, i64)]) -> ErasureLedger {
        ErasureLedger {
            obligations: vec![Obligation {
                obligation: "7".into(),
                subject: "w/a".into(),
                deadline_ms: 1_000,
                done_at_ms: done,
            }],
            proofs: proofs
                .iter()
                .map(|(o, k, t)| Proof {
                    obligation: o.to_string(),
                    key: k.to_string(),
                    deleted_at_ms: *t,
                })
                .collect(),
        }
    }

    #[test]
    fn a_state_reads_pending_overdue_met_or_missed_by_how_long() {
        assert_eq!(state_text(1_000, None, 1_000), "pending");
        assert_eq!(state_text(0, None, DAY_MS + 12 * HOUR_MS), "overdue 1d12h");
        assert_eq!(state_text(1_000, Some(1_000), 5_000), "met");
        assert_eq!(state_text(0, Some(90_000), 90_000), "missed 1m30s");
        assert_eq!(parse_state(&["overdue", "36h"]).unwrap(), "overdue 1d12h");
        assert_eq!(parse_state(&["missed", "250ms"]).unwrap(), "missed 250ms");
        for bad in [
            &["overdue", "0s"][..],
            &["late"],
            &["missed"],
            &["met", "1d"],
        ] {
            assert!(parse_state(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_proof_is_the_keys_of_the_subjects_obligations_each_as_often_as_named() {
        let l = ledger(
            Some(2_000),
            &[
                ("7", "sessions/w/a/s/x", 1_500),
                ("7", "agents/w/a/y", 2_000),
                ("7", "agents/w/a/y", 2_000),
            ],
        );
        assert_eq!(
            l.proof("w/a", 3_000).unwrap(),
            ["agents/w/a/y", "agents/w/a/y", "sessions/w/a/s/x"]
        );
        assert_eq!(l.states("w/a", 3_000).unwrap(), ["missed 1s"]);
        assert!(l.proof("w", 3_000).unwrap().is_empty());
    }

    #[test]
    fn a_ledger_that_cannot_be_true_fails_the_read_with_the_reason() {
        let cases: [(ErasureLedger, i64, &str); 5] = [
            (
                ledger(None, &[("8", "agents/w/a/y", 1)]),
                10,
                "does not yield",
            ),
            (
                ledger(None, &[("7", "agents/w/b/y", 1)]),
                10,
                "not under its subject",
            ),
            (ledger(None, &[("7", "agents/w/a/y", 11)]), 10, "after now"),
            (
                ledger(Some(5), &[("7", "agents/w/a/y", 6)]),
                10,
                "after the obligation was met",
            ),
            (ledger(Some(11), &[]), 10, "after now"),
        ];
        for (l, now, why) in cases {
            let e = l.states("w/a", now).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let mut twice = ledger(None, &[]);
        twice.obligations.push(twice.obligations[0].clone());
        assert!(twice.proof("w/a", 0).unwrap_err().contains("twice"));
        let mut odd = ledger(None, &[]);
        odd.obligations[0].subject = "w/a/s".into();
        assert!(odd.states("w", 0).unwrap_err().contains("<ws>/<agent>"));
    }
}

//! The scratchpad's signatures (`crate::explore::signature`): which SPEC rule a divergence is
//! about and what differed, from the request and the two outcomes alone, never their paths,
//! names, sizes or contents. The rule is the one that decides the expected outcome: a refusal
//! the model expects is the rule of its reason (`refused traversal` is SP-2.5); a refusal the
//! implementation made where the model expects none is the rule of that reason; otherwise the
//! operation's own rule (a write SP-3.1, a read SP-3.2, a listing SP-3.3, a removal SP-3.4, a
//! sweep SP-5.2), made finer where the outcomes say more (an eviction SP-4.2, its order SP-4.3, a
//! sweep when the sweeper is not due SP-5.5, a directory the scheme did not write SP-5.4).
//!
//! Every signature this table makes is listed by [`all`], so a test can read them.

use std::collections::BTreeSet;

use crate::explore::signature::Signature;
use crate::profiles::scratchpad::contract::{Outcome, Request, SCRATCHPAD_REASONS};

/// What the model held just before a sweep, to tell why the implementation swept more.
#[derive(Clone, Debug, Default)]
pub struct SweepContext {
    /// The sessions the model held.
    pub held: BTreeSet<String>,
    /// Those of them the model finds expired now (held and expired, yet not swept by the model:
    /// its sweeper was not due).
    pub expired: BTreeSet<String>,
    /// Every session directory name the exploration's callers have, in the implementation's
    /// names: a swept name outside it is not a session.
    pub sessions: BTreeSet<String>,
}

/// The operation a request is, and the rule that governs it when nothing finer applies.
fn operation(req: &Request) -> (&'static str, &'static str) {
    match req {
        Request::Write { .. } => ("write", "SP-3.1"),
        Request::Read { .. } => ("read", "SP-3.2"),
        Request::List { .. } => ("list", "SP-3.3"),
        Request::Remove { .. } => ("remove", "SP-3.4"),
        Request::Start | Request::Tick => ("sweep", "SP-5.2"),
        Request::Names { .. } => ("names", "SP-1.2"),
    }
}

/// The rule behind a refusal `reason` to operation `op`.
fn rule_of_reason(reason: &str, op: &str) -> &'static str {
    match reason {
        "unmounted" => "SP-1.3",
        "empty_path" => "SP-2.1",
        "absolute_path" => "SP-2.2",
        "nul_byte" => "SP-2.3",
        "not_utf8" => "SP-2.4",
        "traversal" | "non_canonical" | "backslash" => "SP-2.5",
        "too_deep" | "path_too_long" => "SP-2.6",
        "symlink_escape" => "SP-2.7",
        "too_large" => "SP-2.8",
        "ceiling_exceeded" => "SP-4.1",
        "not_found" | "is_a_directory" | "not_a_directory" => match op {
            "write" => "SP-6.2",
            "list" => "SP-3.3",
            "remove" => "SP-3.4",
            _ => "SP-3.2",
        },
        _ => "SP-6.1",
    }
}

/// An outcome's kind, as a signature names it.
fn class(o: &Outcome) -> String {
    match o {
        Outcome::Written { .. } => "written".into(),
        Outcome::Content { .. } => "content".into(),
        Outcome::Listing { .. } => "a listing".into(),
        Outcome::Removed => "removed".into(),
        Outcome::Swept { .. } => "swept".into(),
        Outcome::Names { .. } => "names".into(),
        Outcome::Refused { reason, .. } => format!("refused {}", reason_word(reason)),
    }
}

/// A reason as a signature names it: SP-6.1's codes as they are, anything else as one phrase
/// (an unknown code must not make a signature of its own per spelling).
fn reason_word(reason: &str) -> &str {
    if SCRATCHPAD_REASONS.contains(&reason) {
        reason
    } else {
        "with a reason SP-6.1 does not name"
    }
}

/// The rule that decides `expected`, the outcome the model predicts for `req` (counted for
/// `--coverage`): a refusal's is its reason's rule, a write that evicts SP-4.2, otherwise the
/// operation's own rule, as [`of_outcomes`] names them.
pub fn deciding_rule(req: &Request, expected: &Outcome) -> &'static str {
    let (op, home) = operation(req);
    match expected {
        Outcome::Refused { reason, .. } => rule_of_reason(reason, op),
        Outcome::Written { evicted, .. } if !evicted.is_empty() => "SP-4.2",
        _ => home,
    }
}

/// The signature of an outcome the model did not expect.
pub fn of_outcomes(
    req: &Request,
    expected: &Outcome,
    actual: &Outcome,
    sweep: Option<&SweepContext>,
) -> Signature {
    let (op, home) = operation(req);
    let (e, a) = (class(expected), class(actual));
    if e != a {
        let rule = match (expected, actual) {
            (Outcome::Refused { reason, .. }, _) | (_, Outcome::Refused { reason, .. }) => {
                rule_of_reason(reason, op)
            }
            _ => home,
        };
        return Signature::new(rule, format!("{op}: {a} where the model says {e}"));
    }
    match (expected, actual) {
        (
            Outcome::Written {
                path: p1,
                evicted: e1,
            },
            Outcome::Written {
                path: p2,
                evicted: e2,
            },
        ) => {
            if p1 != p2 {
                return Signature::new("SP-3.1", "write: written at another listing path");
            }
            eviction(e1, e2)
        }
        (Outcome::Content { .. }, Outcome::Content { .. }) => {
            Signature::new("SP-3.2", "read: content other than the model's")
        }
        (Outcome::Listing { entries: x }, Outcome::Listing { entries: y }) => {
            let paths = |v: &[crate::profiles::scratchpad::contract::Entry]| {
                v.iter().map(|e| e.path.clone()).collect::<BTreeSet<_>>()
            };
            let (x, y) = (paths(x), paths(y));
            let what = if x == y {
                "list: files of other sizes than the model's"
            } else if x.is_subset(&y) {
                "list: files the model does not have"
            } else if y.is_subset(&x) {
                "list: misses files the model has"
            } else {
                "list: other files than the model's"
            };
            Signature::new("SP-3.3", what)
        }
        (Outcome::Swept { swept: x }, Outcome::Swept { swept: y }) => swept(x, y, sweep),
        (Outcome::Names { .. }, Outcome::Names { .. }) => {
            Signature::new("SP-1.2", "names: other names than before")
        }
        _ => Signature::new(home, format!("{op}: {a} other than the model's")),
    }
}

/// Two writes that evicted differently.
fn eviction(expected: &[String], actual: &[String]) -> Signature {
    let (x, y): (BTreeSet<&String>, BTreeSet<&String>) =
        (expected.iter().collect(), actual.iter().collect());
    let what = if x == y {
        return Signature::new("SP-4.3", "write: evicted the same files in another order");
    } else if y.is_empty() {
        "write: evicted nothing where the model evicts"
    } else if x.is_empty() {
        "write: evicted where the model evicts nothing"
    } else if x.is_subset(&y) {
        "write: evicted more files than the model"
    } else if y.is_subset(&x) {
        "write: evicted fewer files than the model"
    } else {
        "write: evicted other files than the model"
    };
    Signature::new("SP-4.2", what)
}

/// Two sweeps that collected differently: the first session the implementation swept and the
/// model did not, else the first it kept that the model swept.
fn swept(expected: &[String], actual: &[String], ctx: Option<&SweepContext>) -> Signature {
    let default = SweepContext::default();
    let ctx = ctx.unwrap_or(&default);
    if let Some(extra) = actual.iter().find(|s| !expected.contains(s)) {
        return if !ctx.sessions.contains(extra) {
            Signature::new("SP-5.4", "sweep: swept a directory that is not a session")
        } else if !ctx.held.contains(extra) {
            Signature::new("SP-3.6", "sweep: swept a session the model does not have")
        } else if !ctx.expired.contains(extra) {
            Signature::new("SP-5.2", "sweep: swept a session the model keeps")
        } else {
            Signature::new("SP-5.5", "sweep: swept when the model's sweeper is not due")
        };
    }
    Signature::new("SP-5.2", "sweep: kept a session the model expired")
}

/// The signature of an error answer where the model expected `expected`.
pub fn of_error(req: &Request, expected: &Outcome) -> Signature {
    let (op, home) = operation(req);
    Signature::new(
        home,
        format!("{op}: an error where the model says {}", class(expected)),
    )
}

/// A directory of the caller that only a write may create (SP-3.6) exists after another
/// operation, or one the model holds is gone.
pub fn disk_new_directory() -> Signature {
    Signature::new("SP-3.6", "disk: a directory the model never had")
}

pub fn disk_directory_gone() -> Signature {
    Signature::new("SP-3.6", "disk: a directory the model has is gone")
}

/// A write that left the caller's directories missing wrote somewhere else (SP-3.1: it lands
/// at `<session>/<R-dir>/P`).
pub fn disk_write_elsewhere() -> Signature {
    Signature::new(
        "SP-3.1",
        "disk: the caller's directories are missing after a write",
    )
}

/// Something stands where the model has nothing, met when the harness plants a link: the
/// implementation wrote where SP-3.1 does not put a file.
pub fn disk_in_the_way() -> Signature {
    Signature::new(
        "SP-3.1",
        "disk: something stands where the model has nothing",
    )
}

/// At the end: the foreign directory was removed (SP-5.4), or the working directory was written
/// (SP-1.3).
pub fn foreign_removed() -> Signature {
    Signature::new("SP-5.4", "disk: a foreign directory was removed")
}

pub fn workdir_written() -> Signature {
    Signature::new(
        "SP-1.3",
        "disk: something was written in the working directory",
    )
}

/// The names an implementation answers after each start (SP-1.2).
pub fn names(what: NamesProblem) -> Signature {
    Signature::new(
        "SP-1.2",
        match what {
            NamesProblem::NotAnswered => "names: no names answer",
            NamesProblem::Shared => "names: two callers share a name",
            NamesProblem::Changed => "names: other names than before",
            NamesProblem::NotOneSegment => "names: a name that is not one path segment",
        },
    )
}

/// What is wrong with the names an implementation answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamesProblem {
    /// An error, or an answer that is not `names`.
    NotAnswered,
    /// Two callers' directories got one name.
    Shared,
    /// A name is not the one answered before (a restart, or another caller of the session).
    Changed,
    /// A name that is not one path segment of at most 255 bytes.
    NotOneSegment,
}

/// A directory the harness handed over (the root, the working directory) is no longer the one
/// it made: replaced by a link or another directory (PROTOCOL.md: the harness trusts nothing an
/// implementation can change).
pub fn handed_replaced() -> Signature {
    Signature::new(
        "PROTOCOL.md",
        "disk: a directory the harness handed over was replaced",
    )
}

/// The program could not be started, or did not stop when told to.
pub fn protocol(what: &'static str) -> Signature {
    Signature::new("PROTOCOL.md", what)
}

/// Every signature this table makes, as printed: an expectations file's scratchpad differences
/// can be checked against it.
pub fn all() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut classes: Vec<String> = [
        "written",
        "content",
        "a listing",
        "removed",
        "swept",
        "names",
    ]
    .map(String::from)
    .to_vec();
    classes.extend(
        SCRATCHPAD_REASONS
            .iter()
            .chain(["with a reason SP-6.1 does not name"].iter())
            .map(|r| format!("refused {r}")),
    );
    for op in ["write", "read", "list", "remove", "sweep", "names"] {
        for e in &classes {
            for a in &classes {
                if e != a {
                    out.insert(format!("{op}: {a} where the model says {e}"));
                }
            }
            out.insert(format!("{op}: an error where the model says {e}"));
            out.insert(format!("{op}: {e} other than the model's"));
        }
    }
    out
}

/// Whether `printed` is a rule followed by words this table makes (the pairing of rule and words
/// is not checked): an expectations file's scratchpad differences are checked with it.
pub fn is_known(printed: &str) -> bool {
    let Some((rule, what)) = printed.split_once(' ') else {
        return false;
    };
    if !rule.starts_with("SP-") && rule != "PROTOCOL.md" {
        return false;
    }
    all().contains(what) || FIXED.contains(&what)
}

/// The signatures whose words do not come from outcomes.
const FIXED: &[&str] = &[
    "disk: something stands where the model has nothing",
    "disk: a directory the harness handed over was replaced",
    "write: written at another listing path",
    "read: content other than the model's",
    "list: files of other sizes than the model's",
    "list: files the model does not have",
    "list: misses files the model has",
    "list: other files than the model's",
    "names: other names than before",
    "names: no names answer",
    "names: two callers share a name",
    "names: a name that is not one path segment",
    "write: evicted the same files in another order",
    "write: evicted nothing where the model evicts",
    "write: evicted where the model evicts nothing",
    "write: evicted more files than the model",
    "write: evicted fewer files than the model",
    "write: evicted other files than the model",
    "sweep: swept a directory that is not a session",
    "sweep: swept a session the model does not have",
    "sweep: swept a session the model keeps",
    "sweep: swept when the model's sweeper is not due",
    "sweep: kept a session the model expired",
    "disk: a directory the model never had",
    "disk: a directory the model has is gone",
    "disk: the caller's directories are missing after a write",
    "disk: a foreign directory was removed",
    "disk: something was written in the working directory",
    "the implementation did not start",
    "the implementation did not stop when told to",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::scratchpad::contract::{Bytes, Caller};

    fn refused(r: &str) -> Outcome {
        Outcome::Refused {
            reason: r.into(),
            message: "free text".into(),
        }
    }

    fn read() -> Request {
        Request::Read {
            caller: Caller {
                requester: "alice".into(),
                channel: "g".into(),
                thread: Some("T1".into()),
            },
            path: Bytes(b"dir/c.txt".to_vec()),
        }
    }

    #[test]
    fn a_read_through_a_file_answered_not_a_directory_is_sp_3_2() {
        let s = of_outcomes(
            &read(),
            &refused("not_found"),
            &refused("not_a_directory"),
            None,
        );
        assert_eq!(
            s.to_string(),
            "SP-3.2 read: refused not_a_directory where the model says refused not_found"
        );
        assert!(is_known(&s.to_string()));
    }

    #[test]
    fn signatures_do_not_depend_on_paths_names_or_messages() {
        let a = of_outcomes(
            &read(),
            &Outcome::Content {
                content: Bytes(b"one".to_vec()),
            },
            &Outcome::Content {
                content: Bytes(b"two".to_vec()),
            },
            None,
        );
        let b = of_outcomes(
            &read(),
            &Outcome::Content {
                content: Bytes(b"three".to_vec()),
            },
            &Outcome::Content {
                content: Bytes(b"four".to_vec()),
            },
            None,
        );
        assert_eq!(a, b);
        let w = |e: &[&str], a: &[&str]| {
            eviction(
                &e.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                &a.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            )
            .to_string()
        };
        assert_eq!(
            w(&["x/a", "x/b"], &["x/b", "x/a"]),
            "SP-4.3 write: evicted the same files in another order"
        );
        assert_eq!(
            w(&["x/a"], &["y/q"]),
            "SP-4.2 write: evicted other files than the model"
        );
    }

    #[test]
    fn a_sweep_that_collects_more_says_why_the_model_kept_it() {
        let ctx = SweepContext {
            held: ["t-a", "t-b"].map(String::from).into(),
            expired: ["t-b"].map(String::from).into(),
            sessions: ["t-a", "t-b", "t-c"].map(String::from).into(),
        };
        let sig = |swept: &[&str]| {
            of_outcomes(
                &Request::Tick,
                &Outcome::Swept { swept: vec![] },
                &Outcome::Swept {
                    swept: swept.iter().map(|s| s.to_string()).collect(),
                },
                Some(&ctx),
            )
            .to_string()
        };
        assert_eq!(
            sig(&["lost+found"]),
            "SP-5.4 sweep: swept a directory that is not a session"
        );
        assert_eq!(
            sig(&["t-c"]),
            "SP-3.6 sweep: swept a session the model does not have"
        );
        assert_eq!(
            sig(&["t-a"]),
            "SP-5.2 sweep: swept a session the model keeps"
        );
        assert_eq!(
            sig(&["t-b"]),
            "SP-5.5 sweep: swept when the model's sweeper is not due"
        );
        for s in ["lost+found", "t-c", "t-a", "t-b"] {
            assert!(is_known(&sig(&[s])), "{s}");
        }
        assert!(!is_known("SP-3.6 disk: a directory the model never hat"));
    }
}

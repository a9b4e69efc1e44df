//! The harness's lifecycle executor (`sim/src/lifecycle.rs`) held to what it stands for: S3's
//! documented lifecycle semantics (SPEC SC-7.3), each on both sides of its boundary.
//!
//! - Expiry: an object expires at its last-modified time plus N days, rounded up to the next
//!   midnight UTC; an instant already at midnight stays where it is. (AWS's own example: an
//!   object created 2014-01-15 10:30 UTC under a 3-day rule expires 2014-01-19 00:00 UTC.)
//! - Overwriting an object resets its clock (its last-modified time moves).
//! - Where several enabled rules expire one object, the shortest expiry wins; a disabled rule,
//!   or one whose filter does not select the object, does not count.
//! - AbortIncompleteMultipartUpload counts days after the upload's initiation, rounded the same
//!   way, and only rules whose prefix selects the upload's key abort it.
//! - A prefix is matched literally: starts-with on the bytes, no wildcard, no folder semantics.
//!
//! A bug planted in any of these fails a test here, not only a scenario of an implementation.

use std::collections::BTreeMap;

use proptest::prelude::*;
use tidemark_reference::clock::{Timestamp, DAY_MS, HOUR_MS};
use tidemark_sim::lifecycle::{
    expiry_instant, filter_matches, Filter, IncompleteUpload, LifecycleConfiguration,
    LifecycleExecutor, ObjectInfo, Rule,
};

/// 2014-01-15T00:00:00Z, the day of AWS's example.
const JAN_15: i64 = 1_389_744_000_000;

fn at(day: i64, ms: i64) -> Timestamp {
    Timestamp(JAN_15 + day * DAY_MS + ms)
}

fn object(key: &str, modified: Timestamp) -> ObjectInfo {
    ObjectInfo {
        key: key.into(),
        last_modified: modified,
        size: 10,
        tags: BTreeMap::new(),
    }
}

fn expiring(id: &str, prefix: &str, days: u32) -> Rule {
    Rule {
        id: id.into(),
        enabled: true,
        filter: Some(Filter::Prefix(prefix.into())),
        expiration_days: Some(days),
        abort_incomplete_multipart_days: None,
    }
}

fn executor(rules: Vec<Rule>) -> LifecycleExecutor {
    LifecycleExecutor::new(LifecycleConfiguration { rules }).expect("a valid configuration")
}

/// Whether `o` is due for removal at `now`.
fn due(ex: &LifecycleExecutor, o: &ObjectInfo, now: Timestamp) -> bool {
    !ex.due(std::slice::from_ref(o), now).is_empty()
}

#[test]
fn an_object_expires_at_the_midnight_after_its_days_and_not_a_millisecond_before() {
    let ex = executor(vec![expiring("r", "sessions/", 3)]);
    // AWS's example: 2014-01-15 10:30 UTC plus three days is due at 2014-01-19 00:00 UTC.
    let o = object("sessions/f", at(0, 10 * HOUR_MS + 30 * 60_000));
    assert_eq!(ex.expiry(&o).map(|(t, _)| t), Some(at(4, 0)));
    assert!(!due(&ex, &o, at(4, -1)));
    assert!(due(&ex, &o, at(4, 0)));
    // Three days after the write itself (2014-01-18 10:30) it is still kept: rounded up.
    assert!(!due(&ex, &o, at(3, 10 * HOUR_MS + 30 * 60_000)));
}

#[test]
fn an_object_written_at_midnight_expires_exactly_its_days_later() {
    let ex = executor(vec![expiring("r", "sessions/", 1)]);
    let o = object("sessions/f", at(0, 0));
    assert_eq!(ex.expiry(&o).map(|(t, _)| t), Some(at(1, 0)));
    assert!(!due(&ex, &o, at(1, -1)));
    assert!(due(&ex, &o, at(1, 0)));
    // A millisecond after midnight is rounded up to the next one: a whole day more.
    let o = object("sessions/f", at(0, 1));
    assert_eq!(ex.expiry(&o).map(|(t, _)| t), Some(at(2, 0)));
    assert!(!due(&ex, &o, at(2, -1)));
    // A millisecond before midnight goes at that midnight plus its days.
    let o = object("sessions/f", at(1, -1));
    assert_eq!(ex.expiry(&o).map(|(t, _)| t), Some(at(2, 0)));
}

#[test]
fn overwriting_an_object_starts_its_days_again() {
    let ex = executor(vec![expiring("r", "sessions/", 30)]);
    let first = object("sessions/f", at(0, 12 * HOUR_MS));
    let overwritten = object("sessions/f", at(20, 12 * HOUR_MS));
    assert!(due(&ex, &first, at(31, 0)));
    assert!(!due(&ex, &overwritten, at(31, 0)));
    assert!(!due(&ex, &overwritten, at(51, -1)));
    assert!(due(&ex, &overwritten, at(51, 0)));
}

#[test]
fn where_rules_overlap_the_shortest_expiry_wins_and_a_disabled_or_unmatched_rule_does_not_count() {
    let mut disabled = expiring("disabled", "sessions/", 1);
    disabled.enabled = false;
    let ex = executor(vec![
        expiring("long", "sessions/", 30),
        expiring("short", "sessions/w1/", 7),
        disabled,
        expiring("elsewhere", "agents/", 1),
    ]);
    let o = object("sessions/w1/a/s/f", at(0, 0));
    assert_eq!(ex.expiry(&o), Some((at(7, 0), "short")));
    assert!(!due(&ex, &o, at(7, -1)));
    assert!(due(&ex, &o, at(7, 0)));
    let other = object("sessions/w2/a/s/f", at(0, 0));
    assert_eq!(ex.expiry(&other), Some((at(30, 0), "long")));
    // The order the rules are listed in decides nothing.
    let reversed = executor(vec![
        expiring("short", "sessions/w1/", 7),
        expiring("long", "sessions/", 30),
    ]);
    assert_eq!(reversed.expiry(&o), Some((at(7, 0), "short")));
    // A rule without an expiration (only an abort) expires nothing.
    let abort_only = executor(vec![Rule {
        id: "kept".into(),
        enabled: true,
        filter: Some(Filter::Prefix("agents/".into())),
        expiration_days: None,
        abort_incomplete_multipart_days: Some(7),
    }]);
    assert_eq!(abort_only.expiry(&object("agents/w/a/f", at(0, 0))), None);
}

#[test]
fn a_prefix_is_matched_literally_with_no_wildcard_and_no_folder() {
    let ex = executor(vec![
        expiring("star", "workspaces/*/", 1),
        expiring("session", "sessions", 1),
        expiring("dot", "a.b/", 1),
    ]);
    let now = at(10, 0);
    assert!(!due(&ex, &object("workspaces/w1/f", at(0, 0)), now));
    assert!(due(&ex, &object("workspaces/*/f", at(0, 0)), now));
    // `sessions` is a string prefix: it takes `sessions-old/` too.
    assert!(due(&ex, &object("sessions-old/f", at(0, 0)), now));
    assert!(due(&ex, &object("sessions/f", at(0, 0)), now));
    // No regular expression: `.` is a dot.
    assert!(!due(&ex, &object("aXb/f", at(0, 0)), now));
    assert!(due(&ex, &object("a.b/f", at(0, 0)), now));
    // Case matters.
    assert!(!due(&ex, &object("Sessions/f", at(0, 0)), now));
}

#[test]
fn size_bounds_are_strict_and_an_and_needs_every_part() {
    let mut o = object("a/f", at(0, 0));
    o.size = 100;
    assert!(!filter_matches(&Filter::ObjectSizeGreaterThan(100), &o));
    assert!(filter_matches(&Filter::ObjectSizeGreaterThan(99), &o));
    assert!(!filter_matches(&Filter::ObjectSizeLessThan(100), &o));
    assert!(filter_matches(&Filter::ObjectSizeLessThan(101), &o));
    let and = Filter::And {
        prefix: Some("a/".into()),
        tags: vec![("class".into(), "tmp".into())],
        size_greater_than: Some(50),
        size_less_than: Some(200),
    };
    assert!(!filter_matches(&and, &o), "the tag is missing");
    o.tags.insert("class".into(), "tmp".into());
    assert!(filter_matches(&and, &o));
    o.key = "b/f".into();
    assert!(!filter_matches(&and, &o), "the prefix does not match");
}

#[test]
fn an_incomplete_upload_is_aborted_at_the_midnight_after_its_days_from_initiation() {
    let ex = executor(vec![
        Rule {
            id: "agents-kept".into(),
            enabled: true,
            filter: Some(Filter::Prefix("agents/".into())),
            expiration_days: None,
            abort_incomplete_multipart_days: Some(7),
        },
        Rule {
            id: "sessions".into(),
            enabled: true,
            filter: Some(Filter::Prefix("sessions/".into())),
            expiration_days: Some(1),
            abort_incomplete_multipart_days: None,
        },
    ]);
    let upload = |key: &str, initiated| IncompleteUpload {
        key: key.into(),
        upload_id: key.into(),
        initiated,
    };
    // Initiated 2014-01-15 10:30: seven days on is 2014-01-22 10:30, rounded up to the 23rd.
    let u = upload("agents/w/a/big.bin", at(0, 10 * HOUR_MS + 30 * 60_000));
    assert!(ex
        .uploads_due(std::slice::from_ref(&u), at(7, 10 * HOUR_MS + 30 * 60_000))
        .is_empty());
    assert!(ex
        .uploads_due(std::slice::from_ref(&u), at(8, -1))
        .is_empty());
    assert_eq!(
        ex.uploads_due(std::slice::from_ref(&u), at(8, 0)),
        vec![u.upload_id.clone()]
    );
    // Initiated at midnight: exactly seven days.
    let m = upload("agents/w/a/m.bin", at(0, 0));
    assert!(ex
        .uploads_due(std::slice::from_ref(&m), at(7, -1))
        .is_empty());
    assert_eq!(ex.uploads_due(std::slice::from_ref(&m), at(7, 0)).len(), 1);
    // An expiration is not an abort: the sessions rule never aborts an upload, and an upload
    // outside every abort rule's prefix is never aborted.
    let s = upload("sessions/w/a/s/big.bin", at(0, 0));
    assert!(ex.uploads_due(&[s], at(400, 0)).is_empty());
    let w = upload("workspaces/w/big.bin", at(0, 0));
    assert!(ex.uploads_due(&[w], at(400, 0)).is_empty());
}

proptest! {
    /// For any instant and any number of days: the expiry is a midnight, no earlier than the
    /// instant plus the days and less than a day after it, and equal to it exactly when that
    /// is a midnight.
    #[test]
    fn the_expiry_is_the_first_midnight_at_or_after_the_days(
        t in -10_000 * DAY_MS..20_000 * DAY_MS,
        days in 1u32..3650,
    ) {
        let raw = t + i64::from(days) * DAY_MS;
        let e = expiry_instant(Timestamp(t), days).0;
        prop_assert_eq!(e.rem_euclid(DAY_MS), 0);
        prop_assert!(e >= raw && e < raw + DAY_MS);
        prop_assert_eq!(e == raw, raw.rem_euclid(DAY_MS) == 0);
    }

    /// The shortest of several overlapping rules wins, whatever their order.
    #[test]
    fn the_shortest_overlapping_rule_decides(
        days in proptest::collection::vec(1u32..400, 1..6),
        t in 0i64..400 * DAY_MS,
    ) {
        let rules = days
            .iter()
            .enumerate()
            .map(|(i, d)| expiring(&format!("r{i}"), &"sessions/w/".chars().take(i % 3 + 9).collect::<String>(), *d))
            .collect();
        let ex = executor(rules);
        let o = object("sessions/w/a/s/f", Timestamp(JAN_15 + t));
        let shortest = *days.iter().min().unwrap();
        prop_assert_eq!(
            ex.expiry(&o).map(|(at, _)| at),
            Some(expiry_instant(Timestamp(JAN_15 + t), shortest))
        );
    }
}

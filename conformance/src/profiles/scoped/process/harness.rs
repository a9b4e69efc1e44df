//! The steps the harness keeps when an implementation runs in another process (PROTOCOL.md,
//! "The scoped profile"; [`side`](crate::profiles::scoped::contract::side) says which): listings
//! straight from the bucket ([`bucket_keys`]), an age-only lifecycle rule run on the scenario's clock
//! ([`run_age_rule`]), the bucket's lifecycle rules read back ([`lifecycle_rules`]), and the
//! fault plan a `faults` step sets on the harness's S3 server ([`fault_plan`]). The ledger is
//! read by `ledger.rs`, erasures by `erasure.rs`. The reference in process performs the same
//! steps with these, so each is written once.

use std::time::Duration;

use tidemark_reference::clock::Timestamp;
use tidemark_reference::s3_client::lifecycle_xml::{LifecycleRule, RuleFilter};
use tidemark_reference::s3_client::{ListRequest, S3Client};
use tidemark_reference::scoped::lifecycle::{Filter, LifecycleConfiguration, Rule};
use tidemark_sim::lifecycle::LifecycleExecutor;
use tidemark_sim::real_tier::FaultPlan;

use crate::profiles::scoped::contract::ScopedOp;

/// Every key under `prefix`, straight from the bucket.
pub async fn bucket_keys(
    client: &S3Client,
    bucket: &str,
    prefix: &str,
) -> Result<Vec<String>, String> {
    let mut keys = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let request = ListRequest {
            prefix: Some(prefix),
            continuation_token: token.as_deref(),
            ..ListRequest::default()
        };
        let page = client
            .list_objects_v2(bucket, &request)
            .await
            .map_err(|e| format!("listing the bucket: {e}"))?;
        keys.extend(page.objects.into_iter().map(|o| o.key));
        match (page.is_truncated, page.next_continuation_token) {
            (true, Some(t)) => token = Some(t),
            _ => break,
        }
    }
    Ok(keys)
}

/// Runs an age-only expiry rule of `days` over `prefix` with AWS semantics, at `now`; answers
/// the keys it deleted.
pub async fn run_age_rule(
    client: &S3Client,
    bucket: &str,
    prefix: &str,
    days: u32,
    now: Timestamp,
) -> Result<Vec<String>, String> {
    let ex = LifecycleExecutor::new(LifecycleConfiguration {
        rules: vec![Rule {
            id: "age-only".into(),
            enabled: true,
            filter: Some(Filter::Prefix(prefix.to_string())),
            expiration_days: Some(days),
            abort_incomplete_multipart_days: None,
        }],
    })
    .map_err(|e| e.to_string())?;
    ex.run_on_bucket(client, bucket, now).await
}

/// The bucket's lifecycle configuration as the store answers GetBucketLifecycleConfiguration,
/// one description per rule in id order (none when the bucket has no configuration), judged by
/// what SPEC SC-7.1 pins and not by the ids, which are the implementation's choice: a rule is
/// `PREFIX` (`""` for an empty one; a filter that is not a prefix is spelled `tag:K=V`,
/// `size>N`, `size<N`, `and(...)` or `no-filter`), then `expire Nd` or `expire on DATE`,
/// `abort Nd` (left out of a workspace's own rule under `sessions/` when no shorter than the
/// session class rule's, which covers it: SPEC SL-5.3), and `disabled` when it is not enabled, with anything else the rule carries
/// (noncurrent versions, transitions, delete markers) named so that it never matches silently.
/// Ids that SC-7.2 forbids (empty, longer than 255 characters, or used twice) add one entry
/// naming them, so no expectation can match them either.
pub async fn lifecycle_rules(client: &S3Client, bucket: &str) -> Result<Vec<String>, String> {
    let got = match client.get_bucket_lifecycle(bucket).await {
        Ok(got) => got,
        Err(e) if e.code() == Some("NoSuchLifecycleConfiguration") => return Ok(Vec::new()),
        Err(e) => return Err(format!("reading the bucket's lifecycle configuration: {e}")),
    };
    let tag = |(k, v): &(String, String)| format!("tag:{k}={v}");
    let filter = |f: Option<&RuleFilter>| -> String {
        let Some(f) = f else {
            return "no-filter".into();
        };
        let prefix = |p: &str| {
            if p.is_empty() {
                "\"\"".to_string()
            } else {
                p.to_string()
            }
        };
        if let Some(p) = &f.prefix {
            return prefix(p);
        }
        if let Some(t) = &f.tag {
            return tag(t);
        }
        if let Some(n) = f.object_size_greater_than {
            return format!("size>{n}");
        }
        if let Some(n) = f.object_size_less_than {
            return format!("size<{n}");
        }
        if let Some(a) = &f.and {
            let mut parts = Vec::new();
            if let Some(p) = &a.prefix {
                parts.push(prefix(p));
            }
            parts.extend(a.tags.iter().map(tag));
            if let Some(n) = a.object_size_greater_than {
                parts.push(format!("size>{n}"));
            }
            if let Some(n) = a.object_size_less_than {
                parts.push(format!("size<{n}"));
            }
            return format!("and({})", parts.join(" "));
        }
        "no-filter".into()
    };
    // A rule's prefix, in either spelling (the filter's, or the older one outside it).
    let prefix_of = |r: &LifecycleRule| -> Option<String> {
        r.filter
            .as_ref()
            .and_then(|f| f.prefix.clone())
            .or(r.legacy_prefix.clone())
    };
    let abort_of = |r: &LifecycleRule| r.abort_incomplete_multipart_days;
    // The session class's multipart abort covers every workspace's own rule under it (SPEC
    // SL-5.3): where rules overlap the shortest wins (SC-7.3), so a workspace rule's abort no
    // shorter than the class's changes nothing and is the implementation's own to carry or not.
    let class_abort = got
        .rules
        .iter()
        .filter(|r| prefix_of(r).as_deref() == Some("sessions/"))
        .filter_map(abort_of)
        .min();
    let redundant_abort = |r: &LifecycleRule| {
        let nested = prefix_of(r).is_some_and(|p| p.starts_with("sessions/") && p != "sessions/");
        matches!((abort_of(r), class_abort), (Some(a), Some(c)) if nested && a >= c)
    };
    let mut rules: Vec<(String, String)> = Vec::new();
    let mut ids = std::collections::BTreeMap::<String, usize>::new();
    for r in &got.rules {
        let id = r.id.clone().unwrap_or_default();
        *ids.entry(id.clone()).or_default() += 1;
        // A rule's prefix may also sit outside the filter (the older, deprecated spelling).
        let mut d = match (&r.filter, &r.legacy_prefix) {
            (None, Some(p)) => p.to_string(),
            (f, _) => filter(f.as_ref()),
        };
        if let Some(e) = &r.expiration {
            if let Some(days) = e.days {
                d.push_str(&format!(" expire {days}d"));
            }
            if let Some(date) = &e.date {
                d.push_str(&format!(" expire on {date}"));
            }
            if e.expired_object_delete_marker == Some(true) {
                d.push_str(" expire delete-markers");
            }
        }
        if let Some(days) = abort_of(r).filter(|_| !redundant_abort(r)) {
            d.push_str(&format!(" abort {days}d"));
        }
        if r.noncurrent_version_expiration {
            d.push_str(" noncurrent-expiration");
        }
        if r.transitions {
            d.push_str(" transitions");
        }
        if !r.enabled() {
            d.push_str(" disabled");
        }
        rules.push((id, d));
    }
    rules.sort();
    let mut out: Vec<String> = rules.into_iter().map(|(_, d)| d).collect();
    let bad: Vec<String> = ids
        .iter()
        .filter(|(id, n)| **n > 1 || id.is_empty() || id.chars().count() > 255)
        .map(|(id, n)| {
            if *n > 1 {
                format!("{:?} used {n} times", tidemark_sim::clip::clip(id))
            } else {
                format!("{:?} not 1-255 characters", tidemark_sim::clip::clip(id))
            }
        })
        .collect();
    if !bad.is_empty() {
        out.push(format!("ids SC-7.2 refuses: {}", bad.join("; ")));
    }
    Ok(out)
}

/// The fault plan a `faults` step sets, if `op` is one.
pub fn fault_plan(op: &ScopedOp) -> Option<FaultPlan> {
    match op {
        ScopedOp::Faults {
            down,
            error_rate,
            delete_key_failure_rate,
            fail_requests,
            fail_from,
            no_such_bucket,
            access_denied,
            throttle,
        } => Some(FaultPlan {
            down: *down,
            error_rate: *error_rate,
            delete_key_failure_rate: *delete_key_failure_rate,
            latency: Duration::ZERO,
            fail_requests: fail_requests.clone(),
            fail_from: fail_from.clone(),
            no_such_bucket: *no_such_bucket,
            access_denied: *access_denied,
            throttle: *throttle,
        }),
        _ => None,
    }
}

//! A lifecycle executor with AWS's documented semantics, so the harness can show what a bucket
//! rule would do: in particular, what an age-only rule does to a long conversation.
//!
//! - A rule matches by its filter: exactly one of prefix (literal starts-with, no wildcards),
//!   tag, size bounds (strict: greater-than / less-than), or an And of them.
//! - Expiry = the object's last-modified time + N days, rounded UP to the next midnight UTC (an
//!   instant already at midnight stays). Overwriting an object resets its clock.
//! - Where several enabled rules expire the same object, the shortest expiry wins.
//! - AbortIncompleteMultipartUpload counts days from initiation, rounded the same way.
//! - Removal is asynchronous in S3 (it may lag the expiry); the executor removes at the first
//!   run at or after the expiry, which is the earliest S3 could.
//!
//! Configurations are validated (1,000-rule cap, one filter, no abort in a tag-filtered rule)
//! by [`LifecycleConfiguration::validate`] before anything is applied.

use std::collections::BTreeMap;

use tidemark_reference::clock::{Timestamp, DAY_MS};
use tidemark_reference::s3_client::{ListRequest, S3Client};
pub use tidemark_reference::scoped::lifecycle::{
    Filter, LifecycleConfiguration, LifecycleError, Rule, MAX_RULES,
};
use tidemark_reference::scoped::store::WRITTEN_AT_META;

/// What the executor knows of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    pub key: String,
    pub last_modified: Timestamp,
    pub size: u64,
    pub tags: BTreeMap<String, String>,
}

/// An upload that was started and not completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncompleteUpload {
    pub key: String,
    pub upload_id: String,
    pub initiated: Timestamp,
}

/// `t + days`, rounded up to the next midnight UTC.
pub fn expiry_instant(t: Timestamp, days: u32) -> Timestamp {
    let raw = t.0.saturating_add(i64::from(days) * DAY_MS);
    Timestamp(
        raw.div_euclid(DAY_MS) * DAY_MS
            + if raw.rem_euclid(DAY_MS) == 0 {
                0
            } else {
                DAY_MS
            },
    )
}

/// Whether a filter selects an object.
pub fn filter_matches(filter: &Filter, o: &ObjectInfo) -> bool {
    match filter {
        Filter::Prefix(p) => o.key.starts_with(p.as_str()),
        Filter::Tag { key, value } => o.tags.get(key) == Some(value),
        Filter::ObjectSizeGreaterThan(n) => o.size > *n,
        Filter::ObjectSizeLessThan(n) => o.size < *n,
        Filter::And {
            prefix,
            tags,
            size_greater_than,
            size_less_than,
        } => {
            prefix
                .as_ref()
                .is_none_or(|p| o.key.starts_with(p.as_str()))
                && tags.iter().all(|(k, v)| o.tags.get(k) == Some(v))
                && size_greater_than.is_none_or(|n| o.size > n)
                && size_less_than.is_none_or(|n| o.size < n)
        }
    }
}

/// Applies a validated configuration.
#[derive(Clone, Debug)]
pub struct LifecycleExecutor {
    config: LifecycleConfiguration,
}

impl LifecycleExecutor {
    pub fn new(config: LifecycleConfiguration) -> Result<LifecycleExecutor, LifecycleError> {
        config.validate()?;
        Ok(LifecycleExecutor { config })
    }

    pub fn config(&self) -> &LifecycleConfiguration {
        &self.config
    }

    /// When the object expires under the configuration, and by which rule: the shortest
    /// expiry among the enabled rules that match it.
    pub fn expiry(&self, o: &ObjectInfo) -> Option<(Timestamp, &str)> {
        self.config
            .rules
            .iter()
            .filter(|r| r.enabled)
            .filter(|r| r.filter.as_ref().is_some_and(|f| filter_matches(f, o)))
            .filter_map(|r| {
                r.expiration_days
                    .map(|d| (expiry_instant(o.last_modified, d), r.id.as_str()))
            })
            .min()
    }

    /// The keys due for removal at `now`, in key order.
    pub fn due(&self, objects: &[ObjectInfo], now: Timestamp) -> Vec<String> {
        let mut keys: Vec<String> = objects
            .iter()
            .filter(|o| self.expiry(o).is_some_and(|(t, _)| t <= now))
            .map(|o| o.key.clone())
            .collect();
        keys.sort();
        keys
    }

    /// Incomplete uploads due for abortion at `now`. Tag filters cannot carry the action
    /// (validation refuses it), so only the key and size-free parts of a filter apply.
    pub fn uploads_due(&self, uploads: &[IncompleteUpload], now: Timestamp) -> Vec<String> {
        let mut ids: Vec<String> = uploads
            .iter()
            .filter(|u| {
                let probe = ObjectInfo {
                    key: u.key.clone(),
                    last_modified: u.initiated,
                    size: 0,
                    tags: BTreeMap::new(),
                };
                self.config
                    .rules
                    .iter()
                    .filter(|r| r.enabled)
                    .filter(|r| {
                        r.filter.as_ref().is_some_and(|f| match f {
                            Filter::Prefix(p) => u.key.starts_with(p.as_str()),
                            Filter::And { prefix, .. } => prefix
                                .as_ref()
                                .is_none_or(|p| u.key.starts_with(p.as_str())),
                            other => filter_matches(other, &probe),
                        })
                    })
                    .filter_map(|r| r.abort_incomplete_multipart_days)
                    .map(|d| expiry_instant(u.initiated, d))
                    .min()
                    .is_some_and(|t| t <= now)
            })
            .map(|u| u.upload_id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Runs the configuration against a live bucket: lists every object, reads its age from
    /// the written-at metadata the reference implementation stamps (the real tier's LastModified is
    /// wall time, which a simulated clock knows nothing about; objects without the
    /// stamp fall back to LastModified), and deletes what is due. Returns the deleted keys.
    pub async fn run_on_bucket(
        &self,
        client: &S3Client,
        bucket: &str,
        now: Timestamp,
    ) -> Result<Vec<String>, String> {
        let mut objects = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let request = ListRequest {
                continuation_token: token.as_deref(),
                ..ListRequest::default()
            };
            let page = client
                .list_objects_v2(bucket, &request)
                .await
                .map_err(|e| e.to_string())?;
            for o in page.objects {
                let head = client
                    .head_object(bucket, &o.key)
                    .await
                    .map_err(|e| e.to_string())?;
                let stamped = head
                    .metadata
                    .get(WRITTEN_AT_META)
                    .and_then(|v| v.parse::<i64>().ok());
                let modified = o.last_modified.map(|t| t.as_millis()).unwrap_or(0);
                objects.push(ObjectInfo {
                    key: o.key,
                    last_modified: Timestamp(stamped.unwrap_or(modified)),
                    size: o.size,
                    tags: BTreeMap::new(),
                });
            }
            match (page.is_truncated, page.next_continuation_token) {
                (true, Some(t)) => token = Some(t),
                _ => break,
            }
        }
        let due = self.due(&objects, now);
        for key in &due {
            client
                .delete_object(bucket, key)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAN_15_1030: i64 = 1_389_781_800_000; // 2014-01-15T10:30:00Z

    fn obj(key: &str, t: i64, size: u64) -> ObjectInfo {
        ObjectInfo {
            key: key.into(),
            last_modified: Timestamp(t),
            size,
            tags: BTreeMap::new(),
        }
    }

    fn rule(id: &str, filter: Filter, days: u32) -> Rule {
        Rule {
            id: id.into(),
            enabled: true,
            filter: Some(filter),
            expiration_days: Some(days),
            abort_incomplete_multipart_days: None,
        }
    }

    #[test]
    fn expiry_is_creation_plus_days_rounded_up_to_the_next_midnight_utc() {
        // AWS's own example: created 2014-01-15 10:30 UTC, 3 days -> 2014-01-19 00:00 UTC.
        let t = expiry_instant(Timestamp(JAN_15_1030), 3);
        assert_eq!(t, Timestamp(1_390_089_600_000));
        // Already at midnight: it stays.
        let midnight = Timestamp(1_389_744_000_000); // 2014-01-15T00:00Z
        assert_eq!(expiry_instant(midnight, 1).0, midnight.0 + DAY_MS);
    }

    #[test]
    fn the_shortest_expiry_wins_where_rules_overlap() {
        let ex = LifecycleExecutor::new(LifecycleConfiguration {
            rules: vec![
                rule("long", Filter::Prefix("sessions/".into()), 30),
                rule("short", Filter::Prefix("sessions/w1/".into()), 7),
            ],
        })
        .unwrap();
        let o = obj("sessions/w1/a/s/f", JAN_15_1030, 1);
        assert_eq!(ex.expiry(&o).unwrap().1, "short");
        let o = obj("sessions/w2/a/s/f", JAN_15_1030, 1);
        assert_eq!(ex.expiry(&o).unwrap().1, "long");
    }

    #[test]
    fn prefix_matching_is_literal_with_no_wildcards() {
        let ex = LifecycleExecutor::new(LifecycleConfiguration {
            rules: vec![rule(
                "wild",
                Filter::Prefix("workspaces/*/sessions/".into()),
                1,
            )],
        })
        .unwrap();
        let now = Timestamp(JAN_15_1030 + 100 * DAY_MS);
        assert!(ex
            .due(&[obj("workspaces/w1/sessions/s/f", JAN_15_1030, 1)], now)
            .is_empty());
        assert_eq!(
            ex.due(&[obj("workspaces/*/sessions/s/f", JAN_15_1030, 1)], now)
                .len(),
            1
        );
    }

    #[test]
    fn size_and_tag_filters_and_their_conjunction_select_objects() {
        let mut tagged = obj("a/big", JAN_15_1030, 500);
        tagged.tags.insert("class".into(), "scratch".into());
        let f = Filter::And {
            prefix: Some("a/".into()),
            tags: vec![("class".into(), "scratch".into())],
            size_greater_than: Some(100),
            size_less_than: None,
        };
        assert!(filter_matches(&f, &tagged));
        assert!(!filter_matches(&f, &obj("a/big", JAN_15_1030, 500)));
        assert!(!filter_matches(
            &Filter::ObjectSizeGreaterThan(500),
            &tagged
        ));
        assert!(filter_matches(&Filter::ObjectSizeLessThan(501), &tagged));
    }

    #[test]
    fn an_invalid_configuration_is_refused_before_it_is_applied() {
        let too_many = LifecycleConfiguration {
            rules: (0..1001)
                .map(|i| rule(&format!("r{i}"), Filter::Prefix(format!("p{i}/")), 1))
                .collect(),
        };
        assert!(matches!(
            LifecycleExecutor::new(too_many),
            Err(LifecycleError::TooManyRules { .. })
        ));
    }

    #[test]
    fn an_age_only_rule_expires_a_conversation_that_is_still_going() {
        // The bug the source document names: a thirty-day rule counts only age.
        let ex = LifecycleExecutor::new(LifecycleConfiguration {
            rules: vec![rule("sessions-30d", Filter::Prefix("sessions/".into()), 30)],
        })
        .unwrap();
        let upload = obj("sessions/w/a/s/upload.pdf", JAN_15_1030, 10);
        // The conversation is active every day; the rule does not know.
        let day_31 = Timestamp(JAN_15_1030 + 31 * DAY_MS);
        assert_eq!(ex.due(&[upload], day_31), vec!["sessions/w/a/s/upload.pdf"]);
    }

    #[test]
    fn incomplete_uploads_are_aborted_days_after_initiation() {
        let ex = LifecycleExecutor::new(LifecycleConfiguration::for_profile(365, 7)).unwrap();
        let u = IncompleteUpload {
            key: "agents/w/a/big.bin".into(),
            upload_id: "u1".into(),
            initiated: Timestamp(JAN_15_1030),
        };
        assert!(ex
            .uploads_due(
                std::slice::from_ref(&u),
                Timestamp(JAN_15_1030 + 7 * DAY_MS)
            )
            .is_empty());
        assert_eq!(
            ex.uploads_due(&[u], Timestamp(JAN_15_1030 + 8 * DAY_MS)),
            vec!["u1"]
        );
    }

    #[test]
    fn the_profile_configuration_round_trips_through_the_s3_xml() {
        use tidemark_reference::s3_client::lifecycle_xml::{from_xml, to_xml};
        use tidemark_reference::s3_client::BucketLifecycle;
        let c = LifecycleConfiguration::for_profile(365, 7);
        let xml = to_xml(&BucketLifecycle::from_configuration(&c));
        assert_eq!(from_xml(xml.as_bytes()).unwrap().to_configuration(), c);
    }
}

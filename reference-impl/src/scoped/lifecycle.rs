//! The bucket lifecycle configuration of the scoped profile, and its validation against what
//! S3 accepts. Lifecycle rules are the backstop that keeps working when the sweeper is broken
//! or was never deployed; the sweeper does everything that needs state S3 cannot see.
//!
//! Decision (SPEC SC-7): three rules, one per retention class, however many workspaces exist.
//! - `sessions/`: expire after a backstop age far beyond the sweeper's idle TTL (default 365
//!   days). It can only count age, so it must never be the thing that enforces the TTL: that is
//!   exactly the bug that lost uploads mid-conversation.
//! - `agents/`, `workspaces/`: no expiration (kept until deleted, which is the deletion sweep's
//!   job). Every class rule also aborts multipart uploads nobody finished after 7 days.
//!
//! `skills/` has no rule: versions are immutable and never swept.
//!
//! The configuration goes to S3 as [`crate::s3_client::BucketLifecycle`] (its XML in
//! [`crate::s3_client::lifecycle_xml`]).

use serde::{Deserialize, Serialize};

use super::layout::{AGENTS_CLASS_PREFIX, SESSIONS_CLASS_PREFIX, WORKSPACES_CLASS_PREFIX};

/// S3's limit on rules per bucket.
pub const MAX_RULES: usize = 1000;

/// A rule's filter: exactly one of a prefix, a tag, size bounds, or an `And` of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Filter {
    Prefix(String),
    Tag {
        key: String,
        value: String,
    },
    ObjectSizeGreaterThan(u64),
    ObjectSizeLessThan(u64),
    And {
        prefix: Option<String>,
        tags: Vec<(String, String)>,
        size_greater_than: Option<u64>,
        size_less_than: Option<u64>,
    },
}

impl Filter {
    pub fn has_tag(&self) -> bool {
        match self {
            Filter::Tag { .. } => true,
            Filter::And { tags, .. } => !tags.is_empty(),
            _ => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub id: String,
    pub enabled: bool,
    /// `None` stands for an absent `<Filter>` element, which S3 refuses in this model.
    pub filter: Option<Filter>,
    pub expiration_days: Option<u32>,
    pub abort_incomplete_multipart_days: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleConfiguration {
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifecycleError {
    #[error("{count} rules; a bucket holds at most {MAX_RULES}")]
    TooManyRules { count: usize },
    #[error("rule {id:?} has no filter; exactly one of prefix, tag, size or And is required")]
    MissingFilter { id: String },
    #[error("rule {id:?}: an And filter must combine at least two conditions")]
    DegenerateAnd { id: String },
    #[error("rule {id:?}: AbortIncompleteMultipartUpload cannot be used with a tag filter")]
    AbortWithTagFilter { id: String },
    #[error("rule {id:?} has no action")]
    NoAction { id: String },
    #[error("rule {id:?}: days must be at least 1")]
    ZeroDays { id: String },
    #[error("rule id {id:?} is used twice")]
    DuplicateId { id: String },
    #[error("rule id {id:?} must be 1-255 characters")]
    BadId { id: String },
    #[error("session backstop of {backstop_days} days would cut conversations the {ttl_days}-day idle sweep keeps")]
    BackstopTooShort { backstop_days: u32, ttl_days: u32 },
}

impl LifecycleConfiguration {
    /// The profile's configuration: three rules for three classes.
    pub fn for_profile(session_backstop_days: u32, abort_days: u32) -> LifecycleConfiguration {
        let class = |id: &str, prefix: &str, expiration: Option<u32>| Rule {
            id: id.to_string(),
            enabled: true,
            filter: Some(Filter::Prefix(prefix.to_string())),
            expiration_days: expiration,
            abort_incomplete_multipart_days: Some(abort_days),
        };
        LifecycleConfiguration {
            rules: vec![
                class(
                    "sessions-backstop",
                    SESSIONS_CLASS_PREFIX,
                    Some(session_backstop_days),
                ),
                class("agents-kept", AGENTS_CLASS_PREFIX, None),
                class("workspaces-kept", WORKSPACES_CLASS_PREFIX, None),
            ],
        }
    }

    /// What S3 would refuse, checked before it is sent.
    pub fn validate(&self) -> Result<(), LifecycleError> {
        if self.rules.len() > MAX_RULES {
            return Err(LifecycleError::TooManyRules {
                count: self.rules.len(),
            });
        }
        let mut ids = std::collections::BTreeSet::new();
        for r in &self.rules {
            if r.id.is_empty() || r.id.len() > 255 {
                return Err(LifecycleError::BadId { id: r.id.clone() });
            }
            if !ids.insert(r.id.as_str()) {
                return Err(LifecycleError::DuplicateId { id: r.id.clone() });
            }
            let Some(filter) = &r.filter else {
                return Err(LifecycleError::MissingFilter { id: r.id.clone() });
            };
            if let Filter::And {
                prefix,
                tags,
                size_greater_than,
                size_less_than,
            } = filter
            {
                let parts = prefix.is_some() as usize
                    + tags.len()
                    + size_greater_than.is_some() as usize
                    + size_less_than.is_some() as usize;
                if parts < 2 {
                    return Err(LifecycleError::DegenerateAnd { id: r.id.clone() });
                }
            }
            if r.abort_incomplete_multipart_days.is_some() && filter.has_tag() {
                return Err(LifecycleError::AbortWithTagFilter { id: r.id.clone() });
            }
            if r.expiration_days.is_none() && r.abort_incomplete_multipart_days.is_none() {
                return Err(LifecycleError::NoAction { id: r.id.clone() });
            }
            if r.expiration_days == Some(0) || r.abort_incomplete_multipart_days == Some(0) {
                return Err(LifecycleError::ZeroDays { id: r.id.clone() });
            }
        }
        Ok(())
    }

    /// Validates the profile's own configuration, including that the session backstop can never
    /// pre-empt the idle sweep (a conversation idle for less than the TTL is never that old
    /// unless it has been active for the whole backstop; the margin is documented in SPEC).
    pub fn validate_for_ttl(&self, ttl_days: u32) -> Result<(), LifecycleError> {
        self.validate()?;
        for r in &self.rules {
            if r.filter == Some(Filter::Prefix(SESSIONS_CLASS_PREFIX.to_string())) {
                if let Some(days) = r.expiration_days {
                    if days <= ttl_days {
                        return Err(LifecycleError::BackstopTooShort {
                            backstop_days: days,
                            ttl_days,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_needs_three_rules_however_many_workspaces_exist() {
        let c = LifecycleConfiguration::for_profile(365, 7);
        assert_eq!(c.rules.len(), 3);
        c.validate_for_ttl(30).unwrap();
    }

    #[test]
    fn one_rule_per_agent_exhausts_the_cap_at_a_thousand_agents() {
        let rules = (0..1001)
            .map(|i| Rule {
                id: format!("agent-{i}"),
                enabled: true,
                filter: Some(Filter::Prefix(format!(
                    "workspaces/w/agents/a{i}/sessions/"
                ))),
                expiration_days: Some(30),
                abort_incomplete_multipart_days: None,
            })
            .collect();
        let c = LifecycleConfiguration { rules };
        assert_eq!(
            c.validate(),
            Err(LifecycleError::TooManyRules { count: 1001 })
        );
    }

    #[test]
    fn abort_incomplete_multipart_is_refused_in_a_tag_filtered_rule() {
        let c = LifecycleConfiguration {
            rules: vec![Rule {
                id: "t".into(),
                enabled: true,
                filter: Some(Filter::Tag {
                    key: "k".into(),
                    value: "v".into(),
                }),
                expiration_days: None,
                abort_incomplete_multipart_days: Some(7),
            }],
        };
        assert!(matches!(
            c.validate(),
            Err(LifecycleError::AbortWithTagFilter { .. })
        ));
    }

    #[test]
    fn a_backstop_no_longer_than_the_ttl_is_refused() {
        let c = LifecycleConfiguration::for_profile(30, 7);
        assert!(matches!(
            c.validate_for_ttl(30),
            Err(LifecycleError::BackstopTooShort { .. })
        ));
    }
}

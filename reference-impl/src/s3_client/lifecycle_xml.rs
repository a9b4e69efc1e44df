//! A bucket lifecycle configuration as S3's XML (Put/GetBucketLifecycleConfiguration). rusty-s3
//! has no lifecycle action, so the client signs `?lifecycle` itself and this module is the body.
//!
//! [`BucketLifecycle`] holds what S3 says, not only what the profile's model can say
//! ([`crate::scoped::lifecycle`]): the conformance harness reads rules another implementation
//! wrote (an expiration by date, the older rule-level prefix, transitions) and must describe
//! them as they are. [`BucketLifecycle::from_configuration`] and
//! [`BucketLifecycle::to_configuration`] convert to and from the model.

use super::xml::{escape, parse, Element};
use crate::scoped::lifecycle::{Filter, LifecycleConfiguration, Rule};

/// The rules on a bucket, as S3 describes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketLifecycle {
    pub rules: Vec<LifecycleRule>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LifecycleRule {
    pub id: Option<String>,
    /// `Enabled` or `Disabled`.
    pub status: String,
    /// The older spelling of a prefix, outside any `<Filter>` (deprecated by S3).
    pub legacy_prefix: Option<String>,
    pub filter: Option<RuleFilter>,
    pub expiration: Option<Expiration>,
    /// `AbortIncompleteMultipartUpload/DaysAfterInitiation`.
    pub abort_incomplete_multipart_days: Option<i64>,
    /// Whether the rule has a `NoncurrentVersionExpiration` (read, never written).
    pub noncurrent_version_expiration: bool,
    /// Whether the rule has a `Transition` or `NoncurrentVersionTransition` (read, never
    /// written).
    pub transitions: bool,
}

impl LifecycleRule {
    pub fn enabled(&self) -> bool {
        self.status == "Enabled"
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expiration {
    pub days: Option<i64>,
    /// RFC 3339 (`2030-01-01T00:00:00Z`), as S3's SDKs print it; as S3 wrote it if it is not
    /// an instant.
    pub date: Option<String>,
    pub expired_object_delete_marker: Option<bool>,
}

/// A rule's `<Filter>`: S3 allows one of these, the model reads them in this order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleFilter {
    pub prefix: Option<String>,
    pub tag: Option<(String, String)>,
    pub object_size_greater_than: Option<i64>,
    pub object_size_less_than: Option<i64>,
    pub and: Option<AndFilter>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AndFilter {
    pub prefix: Option<String>,
    pub tags: Vec<(String, String)>,
    pub object_size_greater_than: Option<i64>,
    pub object_size_less_than: Option<i64>,
}

impl BucketLifecycle {
    /// The profile's configuration as S3 rules.
    pub fn from_configuration(config: &LifecycleConfiguration) -> BucketLifecycle {
        let rules = config
            .rules
            .iter()
            .map(|r| LifecycleRule {
                id: Some(r.id.clone()),
                status: if r.enabled { "Enabled" } else { "Disabled" }.to_string(),
                legacy_prefix: None,
                filter: r.filter.as_ref().map(filter_from_model),
                expiration: r.expiration_days.map(|d| Expiration {
                    days: Some(i64::from(d)),
                    ..Expiration::default()
                }),
                abort_incomplete_multipart_days: r.abort_incomplete_multipart_days.map(i64::from),
                noncurrent_version_expiration: false,
                transitions: false,
            })
            .collect();
        BucketLifecycle { rules }
    }

    /// The rules in the profile's model. What the model cannot say is dropped as an absent
    /// value: an expiration by date has no days, a filter-less rule has no filter.
    pub fn to_configuration(&self) -> LifecycleConfiguration {
        let days = |d: Option<i64>| d.map(|d| d.max(0) as u32);
        let rules = self
            .rules
            .iter()
            .map(|r| Rule {
                id: r.id.clone().unwrap_or_default(),
                enabled: r.enabled(),
                filter: r.filter.as_ref().and_then(filter_to_model),
                expiration_days: days(r.expiration.as_ref().and_then(|e| e.days)),
                abort_incomplete_multipart_days: days(r.abort_incomplete_multipart_days),
            })
            .collect();
        LifecycleConfiguration { rules }
    }
}

fn filter_from_model(f: &Filter) -> RuleFilter {
    match f {
        Filter::Prefix(p) => RuleFilter {
            prefix: Some(p.clone()),
            ..RuleFilter::default()
        },
        Filter::Tag { key, value } => RuleFilter {
            tag: Some((key.clone(), value.clone())),
            ..RuleFilter::default()
        },
        Filter::ObjectSizeGreaterThan(n) => RuleFilter {
            object_size_greater_than: Some(*n as i64),
            ..RuleFilter::default()
        },
        Filter::ObjectSizeLessThan(n) => RuleFilter {
            object_size_less_than: Some(*n as i64),
            ..RuleFilter::default()
        },
        Filter::And {
            prefix,
            tags,
            size_greater_than,
            size_less_than,
        } => RuleFilter {
            and: Some(AndFilter {
                prefix: prefix.clone(),
                tags: tags.clone(),
                object_size_greater_than: size_greater_than.map(|n| n as i64),
                object_size_less_than: size_less_than.map(|n| n as i64),
            }),
            ..RuleFilter::default()
        },
    }
}

/// A filter as the model reads one: an And first, then a tag, the size bounds, a prefix.
fn filter_to_model(f: &RuleFilter) -> Option<Filter> {
    let size = |n: i64| n.max(0) as u64;
    if let Some(a) = &f.and {
        return Some(Filter::And {
            prefix: a.prefix.clone(),
            tags: a.tags.clone(),
            size_greater_than: a.object_size_greater_than.map(size),
            size_less_than: a.object_size_less_than.map(size),
        });
    }
    if let Some((key, value)) = &f.tag {
        return Some(Filter::Tag {
            key: key.clone(),
            value: value.clone(),
        });
    }
    if let Some(n) = f.object_size_greater_than {
        return Some(Filter::ObjectSizeGreaterThan(size(n)));
    }
    if let Some(n) = f.object_size_less_than {
        return Some(Filter::ObjectSizeLessThan(size(n)));
    }
    f.prefix.clone().map(Filter::Prefix)
}

/// The rules as a PutBucketLifecycleConfiguration body, elements in the order AWS's own SDKs
/// write them (Expiration, ID, Prefix, Filter, Status, AbortIncompleteMultipartUpload).
pub fn to_xml(lifecycle: &BucketLifecycle) -> String {
    let mut x =
        String::from("<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for r in &lifecycle.rules {
        x.push_str("<Rule>");
        if let Some(e) = &r.expiration {
            x.push_str("<Expiration>");
            if let Some(d) = &e.date {
                x.push_str(&format!("<Date>{}</Date>", escape(d)));
            }
            if let Some(d) = e.days {
                x.push_str(&format!("<Days>{d}</Days>"));
            }
            if let Some(m) = e.expired_object_delete_marker {
                x.push_str(&format!(
                    "<ExpiredObjectDeleteMarker>{m}</ExpiredObjectDeleteMarker>"
                ));
            }
            x.push_str("</Expiration>");
        }
        if let Some(id) = &r.id {
            x.push_str(&format!("<ID>{}</ID>", escape(id)));
        }
        if let Some(p) = &r.legacy_prefix {
            x.push_str(&format!("<Prefix>{}</Prefix>", escape(p)));
        }
        if let Some(f) = &r.filter {
            x.push_str("<Filter>");
            filter_xml(f, &mut x);
            x.push_str("</Filter>");
        }
        x.push_str(&format!("<Status>{}</Status>", escape(&r.status)));
        if let Some(d) = r.abort_incomplete_multipart_days {
            x.push_str(&format!(
                "<AbortIncompleteMultipartUpload><DaysAfterInitiation>{d}\
                 </DaysAfterInitiation></AbortIncompleteMultipartUpload>"
            ));
        }
        x.push_str("</Rule>");
    }
    x.push_str("</LifecycleConfiguration>");
    x
}

fn tag_xml(key: &str, value: &str, x: &mut String) {
    x.push_str(&format!(
        "<Tag><Key>{}</Key><Value>{}</Value></Tag>",
        escape(key),
        escape(value)
    ));
}

fn sizes_xml(greater: Option<i64>, less: Option<i64>, x: &mut String) {
    if let Some(n) = greater {
        x.push_str(&format!(
            "<ObjectSizeGreaterThan>{n}</ObjectSizeGreaterThan>"
        ));
    }
    if let Some(n) = less {
        x.push_str(&format!("<ObjectSizeLessThan>{n}</ObjectSizeLessThan>"));
    }
}

fn filter_xml(f: &RuleFilter, x: &mut String) {
    if let Some(p) = &f.prefix {
        x.push_str(&format!("<Prefix>{}</Prefix>", escape(p)));
    }
    if let Some((k, v)) = &f.tag {
        tag_xml(k, v, x);
    }
    sizes_xml(f.object_size_greater_than, f.object_size_less_than, x);
    if let Some(a) = &f.and {
        x.push_str("<And>");
        if let Some(p) = &a.prefix {
            x.push_str(&format!("<Prefix>{}</Prefix>", escape(p)));
        }
        for (k, v) in &a.tags {
            tag_xml(k, v, x);
        }
        sizes_xml(a.object_size_greater_than, a.object_size_less_than, x);
        x.push_str("</And>");
    }
}

fn number(e: &Element, name: &str) -> Option<i64> {
    e.text_of(name).and_then(|n| n.trim().parse::<i64>().ok())
}

fn tag_from(t: &Element) -> (String, String) {
    (
        t.text_of("Key").unwrap_or_default().to_string(),
        t.text_of("Value").unwrap_or_default().to_string(),
    )
}

/// A GetBucketLifecycleConfiguration answer.
pub fn from_xml(body: &[u8]) -> Result<BucketLifecycle, String> {
    let root = parse(body)?;
    let rules = root
        .all("Rule")
        .map(|r| LifecycleRule {
            id: r.text_of("ID").map(str::to_string),
            status: r.text_of("Status").unwrap_or_default().trim().to_string(),
            legacy_prefix: r.text_of("Prefix").map(str::to_string),
            filter: r.child("Filter").map(|f| RuleFilter {
                prefix: f.text_of("Prefix").map(str::to_string),
                tag: f.child("Tag").map(tag_from),
                object_size_greater_than: number(f, "ObjectSizeGreaterThan"),
                object_size_less_than: number(f, "ObjectSizeLessThan"),
                and: f.child("And").map(|a| AndFilter {
                    prefix: a.text_of("Prefix").map(str::to_string),
                    tags: a.all("Tag").map(tag_from).collect(),
                    object_size_greater_than: number(a, "ObjectSizeGreaterThan"),
                    object_size_less_than: number(a, "ObjectSizeLessThan"),
                }),
            }),
            expiration: r.child("Expiration").map(|e| Expiration {
                days: number(e, "Days"),
                date: e.text_of("Date").map(|d| {
                    d.trim()
                        .parse::<jiff::Timestamp>()
                        .map(|t| t.to_string())
                        .unwrap_or_else(|_| d.trim().to_string())
                }),
                expired_object_delete_marker: e
                    .text_of("ExpiredObjectDeleteMarker")
                    .map(|m| m.trim() == "true"),
            }),
            abort_incomplete_multipart_days: r
                .child("AbortIncompleteMultipartUpload")
                .and_then(|a| number(a, "DaysAfterInitiation")),
            noncurrent_version_expiration: r.child("NoncurrentVersionExpiration").is_some(),
            transitions: r.child("Transition").is_some()
                || r.child("NoncurrentVersionTransition").is_some(),
        })
        .collect();
    Ok(BucketLifecycle { rules })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(c: &LifecycleConfiguration) -> LifecycleConfiguration {
        let xml = to_xml(&BucketLifecycle::from_configuration(c));
        from_xml(xml.as_bytes()).unwrap().to_configuration()
    }

    #[test]
    fn the_profile_configuration_round_trips_through_the_xml() {
        let c = LifecycleConfiguration::for_profile(365, 7);
        assert_eq!(round_trip(&c), c);
    }

    #[test]
    fn every_kind_of_filter_round_trips() {
        let rule = |id: &str, filter: Filter| Rule {
            id: id.into(),
            enabled: id != "off",
            filter: Some(filter),
            expiration_days: Some(3),
            abort_incomplete_multipart_days: None,
        };
        let c = LifecycleConfiguration {
            rules: vec![
                rule("p", Filter::Prefix("a&b/".into())),
                rule(
                    "t",
                    Filter::Tag {
                        key: "k".into(),
                        value: "<v>".into(),
                    },
                ),
                rule("gt", Filter::ObjectSizeGreaterThan(10)),
                rule("off", Filter::ObjectSizeLessThan(20)),
                rule(
                    "and",
                    Filter::And {
                        prefix: Some("x/".into()),
                        tags: vec![("a".into(), "1".into()), ("b".into(), "2".into())],
                        size_greater_than: Some(1),
                        size_less_than: None,
                    },
                ),
            ],
        };
        assert_eq!(round_trip(&c), c);
    }

    #[test]
    fn what_the_model_cannot_say_is_read_as_it_is() {
        let body = b"<LifecycleConfiguration><Rule><ID>old</ID><Prefix>logs/</Prefix>\
            <Status>Disabled</Status><Expiration><Date>2030-01-01T00:00:00.000Z</Date>\
            </Expiration><Transition><Days>3</Days></Transition></Rule></LifecycleConfiguration>";
        let got = from_xml(body).unwrap();
        let r = &got.rules[0];
        assert_eq!(r.legacy_prefix.as_deref(), Some("logs/"));
        assert!(!r.enabled());
        assert!(r.transitions);
        assert_eq!(
            r.expiration.as_ref().and_then(|e| e.date.as_deref()),
            Some("2030-01-01T00:00:00Z")
        );
        assert_eq!(from_xml(to_xml(&got).as_bytes()).unwrap().rules[0].id, r.id);
    }
}

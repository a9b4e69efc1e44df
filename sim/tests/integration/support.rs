//! What several of this binary's modules build the same way against an S3 client: a
//! DeleteObjects batch, and a listing page as the text the differential checks compare.

use aws_sdk_s3::operation::list_objects_v2::ListObjectsV2Output;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};

/// A DeleteObjects batch of `keys`, asking for a quiet answer (only the failures) or not.
pub fn delete_batch<K: AsRef<str>>(keys: &[K], quiet: bool) -> Delete {
    Delete::builder()
        .set_objects(Some(
            keys.iter()
                .map(|k| ObjectIdentifier::builder().key(k.as_ref()).build().unwrap())
                .collect(),
        ))
        .quiet(quiet)
        .build()
        .unwrap()
}

/// A listing page's objects (`key:size`) and common prefixes, in the order the store gave them.
pub fn page_entries(page: &ListObjectsV2Output) -> (Vec<String>, Vec<&str>) {
    let objs = page
        .contents()
        .iter()
        .map(|o| format!("{}:{}", o.key().unwrap(), o.size().unwrap()))
        .collect();
    let cps = page
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    (objs, cps)
}

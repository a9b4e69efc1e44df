//! What both of the harness's own S3 stores ([`super::disk_s3`] and [`super::memory_s3`]) share:
//! S3's key rules, the ETag, the body's bound, the answers to PUT, GET, HEAD and DeleteObjects
//! built from what a store keeps of an object, and one ListObjectsV2 page computed from keys in
//! S3's order. Each store keeps only where its objects live.
//!
//! One listing function for both stores, so the two cannot drift apart on the delicate parts
//! (delimiters, continuation past a common prefix, `start-after`); the differential key test then
//! checks what each store does on its own: keep every key, return it whole, order it by bytes.

use std::collections::{BTreeMap, BTreeSet};

use s3s::dto::*;
use s3s::s3_error;
use sha2::{Digest, Sha256};

/// S3's longest key, in UTF-8 bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// Largest object body accepted, to bound memory.
pub const MAX_OBJECT_BYTES: usize = 64 * 1024 * 1024;

/// S3 refuses an empty key and one longer than 1,024 bytes (`KeyTooLongError`).
pub fn check_key(key: &str) -> Result<(), s3s::S3Error> {
    if key.is_empty() {
        return Err(s3_error!(InvalidArgument, "an object key cannot be empty"));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(s3_error!(
            KeyTooLongError,
            "the key is {} bytes; at most {MAX_KEY_BYTES} are allowed",
            key.len()
        ));
    }
    Ok(())
}

pub fn etag_of(bytes: &[u8]) -> String {
    // Not MD5 (as S3's single-part ETag is); clients treat ETags as opaque.
    hex::encode(&Sha256::digest(bytes)[..16])
}

pub fn timestamp(ms: i64) -> Timestamp {
    Timestamp::from(tidemark_reference::clock::Timestamp(ms).to_system_time())
}

/// A PUT's body, whole, refused past [`MAX_OBJECT_BYTES`]; no body is an empty object.
pub async fn read_body(body: Option<StreamingBlob>) -> Result<Vec<u8>, s3s::S3Error> {
    Ok(match body {
        Some(blob) => {
            let mut body: s3s::Body = blob.into();
            body.store_all_limited(MAX_OBJECT_BYTES)
                .await
                .map_err(|e| s3_error!(IncompleteBody, "{e}"))?
                .to_vec()
        }
        None => Vec::new(),
    })
}

/// A PUT's answer for the object stored.
pub fn put_output(etag: String, size: i64) -> PutObjectOutput {
    PutObjectOutput {
        e_tag: Some(ETag::Strong(etag)),
        size: Some(size),
        ..Default::default()
    }
}

/// A HEAD's answer: what a store keeps of an object besides its body.
pub fn head_output(
    size: i64,
    etag: String,
    modified_ms: i64,
    metadata: BTreeMap<String, String>,
) -> HeadObjectOutput {
    HeadObjectOutput {
        content_length: Some(size),
        e_tag: Some(ETag::Strong(etag)),
        last_modified: Some(timestamp(modified_ms)),
        metadata: Some(metadata.into_iter().collect()),
        ..Default::default()
    }
}

/// A GET's answer: the body, and what a HEAD tells of the object.
pub fn get_output(
    body: s3s::Body,
    size: i64,
    etag: String,
    modified_ms: i64,
    metadata: BTreeMap<String, String>,
) -> GetObjectOutput {
    let head = head_output(size, etag, modified_ms, metadata);
    GetObjectOutput {
        body: Some(StreamingBlob::from(body)),
        content_length: head.content_length,
        e_tag: head.e_tag,
        last_modified: head.last_modified,
        metadata: head.metadata,
        ..Default::default()
    }
}

/// S3 takes at most 1,000 keys in one DeleteObjects.
pub fn check_batch(input: &DeleteObjectsInput) -> Result<(), s3s::S3Error> {
    if input.delete.objects.len() > 1000 {
        return Err(s3_error!(MalformedXML, "more than 1000 keys"));
    }
    Ok(())
}

/// A DeleteObjects's answer once every key of `removed` is gone: each named, unless the request
/// asked for a quiet answer (only the failures, and these stores fail a batch whole).
pub fn delete_objects_output(removed: Vec<ObjectKey>, quiet: bool) -> DeleteObjectsOutput {
    let deleted: Vec<DeletedObject> = if quiet {
        Vec::new()
    } else {
        removed
            .into_iter()
            .map(|key| DeletedObject {
                key: Some(key),
                ..Default::default()
            })
            .collect()
    };
    DeleteObjectsOutput {
        deleted: (!deleted.is_empty()).then_some(deleted),
        ..Default::default()
    }
}

/// One object as a listing shows it.
pub struct ListEntry<'a> {
    pub key: &'a str,
    pub size: i64,
    pub etag: &'a str,
    pub modified_ms: i64,
}

/// The key a listing scan may start from: no key before it can be on the page.
pub fn scan_start(input: &ListObjectsV2Input) -> Result<String, s3s::S3Error> {
    Ok(after(input)?.unwrap_or_else(|| input.prefix.clone().unwrap_or_default()))
}

/// The listing resumes after the later of the continuation token and `start-after`.
fn after(input: &ListObjectsV2Input) -> Result<Option<String>, s3s::S3Error> {
    let token = input
        .continuation_token
        .as_deref()
        .map(decode_token)
        .transpose()?;
    Ok(match (token, &input.start_after) {
        (Some(c), Some(a)) => Some(c.max(a.clone())),
        (Some(c), None) => Some(c),
        (None, Some(a)) => Some(a.clone()),
        (None, None) => None,
    })
}

/// A continuation token is the last key (or past a common prefix) in hex: opaque as S3's are,
/// and safe in XML whatever the key holds (a raw control character would make the response
/// unreadable, and a raw `\r` would come back as `\n`).
fn encode_token(resume_after: &str) -> String {
    hex::encode(resume_after.as_bytes())
}

fn decode_token(token: &str) -> Result<String, s3s::S3Error> {
    hex::decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| s3_error!(InvalidArgument, "the continuation token is not valid"))
}

/// One ListObjectsV2 page. `entries` must be in S3's order (ascending by the key's UTF-8 bytes,
/// which is `str`'s order) and may start anywhere at or before [`scan_start`].
pub fn list_page<'a>(
    input: ListObjectsV2Input,
    entries: impl Iterator<Item = ListEntry<'a>>,
) -> Result<ListObjectsV2Output, s3s::S3Error> {
    let prefix = input.prefix.clone().unwrap_or_default();
    let max_keys = input.max_keys.unwrap_or(1000).clamp(0, 1000) as usize;
    let after = after(&input)?;
    let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
    let url = input
        .encoding_type
        .as_ref()
        .is_some_and(|e| e.as_str() == EncodingType::URL);
    let enc = |s: String| if url { url_encode(&s) } else { s };
    let mut contents = Vec::new();
    let mut prefixes: BTreeSet<String> = BTreeSet::new();
    let mut count = 0usize;
    let mut last: Option<String> = None;
    let mut truncated = false;
    for e in entries {
        let key = e.key;
        if key < prefix.as_str() {
            continue;
        }
        if !key.starts_with(&prefix) {
            break;
        }
        if after.as_deref().is_some_and(|a| key <= a) {
            continue;
        }
        let rolled = delimiter.as_deref().and_then(|d| {
            key[prefix.len()..]
                .find(d)
                .map(|i| key[..prefix.len() + i + d.len()].to_string())
        });
        if let Some(cp) = &rolled {
            if prefixes.contains(cp) || after.as_deref().is_some_and(|a| cp.as_str() <= a) {
                continue;
            }
        }
        if count == max_keys {
            truncated = true;
            break;
        }
        count += 1;
        match rolled {
            Some(cp) => {
                last = Some(cp.clone());
                prefixes.insert(cp);
            }
            None => {
                last = Some(key.to_string());
                contents.push(Object {
                    key: Some(enc(key.to_string())),
                    size: Some(e.size),
                    e_tag: Some(ETag::Strong(e.etag.to_string())),
                    last_modified: Some(timestamp(e.modified_ms)),
                    ..Default::default()
                });
            }
        }
    }
    // A common prefix as the continuation point would re-list its members; skip past it.
    let next = if truncated {
        last.map(|l| {
            if prefixes.contains(&l) {
                encode_token(&format!("{l}\u{10FFFF}"))
            } else {
                encode_token(&l)
            }
        })
    } else {
        None
    };
    Ok(ListObjectsV2Output {
        name: Some(input.bucket),
        prefix: input.prefix.map(enc),
        delimiter: input.delimiter.map(enc),
        max_keys: Some(max_keys as i32),
        key_count: Some(count as i32),
        continuation_token: input.continuation_token,
        start_after: input.start_after.map(enc),
        is_truncated: Some(truncated),
        next_continuation_token: next,
        encoding_type: input.encoding_type,
        contents: (!contents.is_empty()).then_some(contents),
        common_prefixes: (!prefixes.is_empty()).then(|| {
            prefixes
                .into_iter()
                .map(|p| CommonPrefix {
                    prefix: Some(enc(p)),
                })
                .collect()
        }),
        ..Default::default()
    })
}

/// `encoding-type=url`: every byte but unreserved ones and `/` as `%XX`. A key may hold
/// characters XML 1.0 cannot carry (most control characters) or would rewrite (`\r`), so a
/// client that lists such keys asks for this. A space is `%20`, never `+`, so both a form
/// decoder and a plain percent-decoder read it back.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

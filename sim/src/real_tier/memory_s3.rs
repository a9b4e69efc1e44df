//! An in-memory [`s3s::S3`] implementation: buckets as `BTreeMap`s, LastModified from a
//! handed-in clock. Two uses: scale benchmarks (s3s-fs listing scans the whole bucket, so its
//! cost measures s3s-fs rather than the sweep), and simulation, where s3s-fs's blocking file
//! I/O would stall simulated time. It implements what the scoped profile uses: buckets, Put,
//! Get, Head, Delete, DeleteObjects and ListObjectsV2 (prefix, delimiter, max-keys,
//! continuation, start-after). Everything is ordered, so listings are deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use sha2::{Digest, Sha256};
use tidemark_reference::clock::Clock;

/// Largest object body accepted, to bound memory.
pub const MAX_OBJECT_BYTES: usize = 64 * 1024 * 1024;

#[derive(Clone, Debug)]
struct Obj {
    bytes: bytes_vec::Bytes,
    metadata: BTreeMap<String, String>,
    modified_ms: i64,
    etag: String,
}

mod bytes_vec {
    /// Shared immutable bytes (cheap clone on GET).
    pub type Bytes = std::sync::Arc<Vec<u8>>;
}

type Buckets = BTreeMap<String, BTreeMap<String, Obj>>;

/// A handle on the store's contents, for seeding and inspection without HTTP.
#[derive(Clone)]
pub struct MemoryHandle(Arc<Mutex<Buckets>>);

impl MemoryHandle {
    fn lock(&self) -> MutexGuard<'_, Buckets> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts an object directly (no request), stamping `modified_ms` and the given metadata.
    pub fn seed(
        &self,
        bucket: &str,
        key: &str,
        bytes: Vec<u8>,
        metadata: BTreeMap<String, String>,
        modified_ms: i64,
    ) {
        let etag = etag_of(&bytes);
        self.lock().entry(bucket.to_string()).or_default().insert(
            key.to_string(),
            Obj {
                bytes: Arc::new(bytes),
                metadata,
                modified_ms,
                etag,
            },
        );
    }

    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        self.lock()
            .get(bucket)
            .map(|b| {
                b.range(prefix.to_string()..)
                    .take_while(|(k, _)| k.starts_with(prefix))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn object_count(&self, bucket: &str) -> usize {
        self.lock().get(bucket).map(BTreeMap::len).unwrap_or(0)
    }
}

pub struct MemoryS3 {
    state: MemoryHandle,
    clock: Arc<dyn Clock>,
}

impl MemoryS3 {
    pub fn new(clock: Arc<dyn Clock>) -> MemoryS3 {
        MemoryS3 {
            state: MemoryHandle(Arc::new(Mutex::new(BTreeMap::new()))),
            clock,
        }
    }

    pub fn handle(&self) -> MemoryHandle {
        self.state.clone()
    }
}

fn etag_of(bytes: &[u8]) -> String {
    // Not MD5 (as S3's single-part ETag is); clients treat ETags as opaque.
    hex::encode(&Sha256::digest(bytes)[..16])
}

fn ts(ms: i64) -> Timestamp {
    Timestamp::from(tidemark_reference::clock::Timestamp(ms).to_system_time())
}

fn no_bucket(bucket: &str) -> s3s::S3Error {
    s3_error!(NoSuchBucket, "bucket {bucket} does not exist")
}

fn no_key() -> s3s::S3Error {
    s3_error!(NoSuchKey)
}

#[async_trait::async_trait]
impl S3 for MemoryS3 {
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let mut s = self.state.lock();
        if s.contains_key(&req.input.bucket) {
            return Err(s3_error!(BucketAlreadyOwnedByYou));
        }
        s.insert(req.input.bucket, BTreeMap::new());
        Ok(S3Response::new(CreateBucketOutput::default()))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        if self.state.lock().contains_key(&req.input.bucket) {
            Ok(S3Response::new(HeadBucketOutput::default()))
        } else {
            Err(no_bucket(&req.input.bucket))
        }
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let mut s = self.state.lock();
        match s.get(&req.input.bucket) {
            None => Err(no_bucket(&req.input.bucket)),
            Some(b) if !b.is_empty() => Err(s3_error!(BucketNotEmpty)),
            Some(_) => {
                s.remove(&req.input.bucket);
                Ok(S3Response::new(DeleteBucketOutput::default()))
            }
        }
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let input = req.input;
        if !self.state.lock().contains_key(&input.bucket) {
            return Err(no_bucket(&input.bucket));
        }
        let bytes = match input.body {
            Some(blob) => {
                let mut body: s3s::Body = blob.into();
                body.store_all_limited(MAX_OBJECT_BYTES)
                    .await
                    .map_err(|e| s3_error!(IncompleteBody, "{e}"))?
                    .to_vec()
            }
            None => Vec::new(),
        };
        let metadata: BTreeMap<String, String> =
            input.metadata.unwrap_or_default().into_iter().collect();
        let etag = etag_of(&bytes);
        let size = bytes.len() as i64;
        let mut s = self.state.lock();
        // Re-check: the bucket may have gone while the body streamed in.
        let bucket = s
            .get_mut(&input.bucket)
            .ok_or_else(|| no_bucket(&input.bucket))?;
        bucket.insert(
            input.key,
            Obj {
                bytes: Arc::new(bytes),
                metadata,
                modified_ms: self.clock.now().0,
                etag: etag.clone(),
            },
        );
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(ETag::Strong(etag)),
            size: Some(size),
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let obj = {
            let s = self.state.lock();
            let b = s
                .get(&req.input.bucket)
                .ok_or_else(|| no_bucket(&req.input.bucket))?;
            b.get(&req.input.key).cloned().ok_or_else(no_key)?
        };
        if req.input.range.is_some() {
            return Err(s3_error!(NotImplemented, "ranged GET"));
        }
        let len = obj.bytes.len() as i64;
        let body = s3s::Body::from(obj.bytes.as_ref().clone());
        Ok(S3Response::new(GetObjectOutput {
            body: Some(StreamingBlob::from(body)),
            content_length: Some(len),
            e_tag: Some(ETag::Strong(obj.etag)),
            last_modified: Some(ts(obj.modified_ms)),
            metadata: Some(obj.metadata.into_iter().collect()),
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let s = self.state.lock();
        let b = s
            .get(&req.input.bucket)
            .ok_or_else(|| no_bucket(&req.input.bucket))?;
        let obj = b.get(&req.input.key).ok_or_else(no_key)?;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(obj.bytes.len() as i64),
            e_tag: Some(ETag::Strong(obj.etag.clone())),
            last_modified: Some(ts(obj.modified_ms)),
            metadata: Some(obj.metadata.clone().into_iter().collect()),
            ..Default::default()
        }))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let mut s = self.state.lock();
        let b = s
            .get_mut(&req.input.bucket)
            .ok_or_else(|| no_bucket(&req.input.bucket))?;
        // Deleting a missing key succeeds, as in S3.
        b.remove(&req.input.key);
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        if input.delete.objects.len() > 1000 {
            return Err(s3_error!(MalformedXML, "more than 1000 keys"));
        }
        let mut s = self.state.lock();
        let b = s
            .get_mut(&input.bucket)
            .ok_or_else(|| no_bucket(&input.bucket))?;
        let quiet = input.delete.quiet.unwrap_or(false);
        let mut deleted = Vec::new();
        for o in input.delete.objects {
            b.remove(&o.key);
            if !quiet {
                deleted.push(DeletedObject {
                    key: Some(o.key),
                    ..Default::default()
                });
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: (!deleted.is_empty()).then_some(deleted),
            ..Default::default()
        }))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        let s = self.state.lock();
        let b = s
            .get(&input.bucket)
            .ok_or_else(|| no_bucket(&input.bucket))?;
        let prefix = input.prefix.clone().unwrap_or_default();
        let max_keys = input.max_keys.unwrap_or(1000).clamp(0, 1000) as usize;
        let after = match (&input.continuation_token, &input.start_after) {
            (Some(c), Some(a)) => Some(c.clone().max(a.clone())),
            (Some(c), None) => Some(c.clone()),
            (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        };
        let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
        let start = after.clone().unwrap_or_else(|| prefix.clone());
        let mut contents = Vec::new();
        let mut prefixes: BTreeSet<String> = BTreeSet::new();
        let mut count = 0usize;
        let mut last: Option<String> = None;
        let mut truncated = false;
        // A range scan from the prefix: the cost follows the answer, not the bucket.
        for (key, obj) in b.range(start..) {
            if !key.starts_with(&prefix) {
                break;
            }
            if after.as_deref().is_some_and(|a| key.as_str() <= a) {
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
                    last = Some(key.clone());
                    contents.push(Object {
                        key: Some(key.clone()),
                        size: Some(obj.bytes.len() as i64),
                        e_tag: Some(ETag::Strong(obj.etag.clone())),
                        last_modified: Some(ts(obj.modified_ms)),
                        ..Default::default()
                    });
                }
            }
        }
        // A common prefix as the continuation point would re-list its members; skip past it.
        let next = if truncated {
            last.map(|l| {
                if prefixes.contains(&l) {
                    format!("{l}\u{10FFFF}")
                } else {
                    l
                }
            })
        } else {
            None
        };
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket),
            prefix: input.prefix,
            delimiter: input.delimiter,
            max_keys: Some(max_keys as i32),
            key_count: Some(count as i32),
            continuation_token: input.continuation_token,
            start_after: input.start_after,
            is_truncated: Some(truncated),
            next_continuation_token: next,
            contents: (!contents.is_empty()).then_some(contents),
            common_prefixes: (!prefixes.is_empty()).then(|| {
                prefixes
                    .into_iter()
                    .map(|p| CommonPrefix { prefix: Some(p) })
                    .collect()
            }),
            ..Default::default()
        }))
    }
}

//! An in-memory [`s3s::S3`] implementation: buckets as `BTreeMap`s, LastModified from a
//! handed-in clock. Two uses: scale benchmarks (the disk store's listing scans the whole bucket,
//! so its cost would measure the store rather than the sweep), and simulation, where blocking
//! file I/O would stall simulated time. It implements what the scoped profile uses: buckets, Put,
//! Get, Head, Delete, DeleteObjects and ListObjectsV2 (prefix, delimiter, max-keys,
//! continuation, start-after). Everything is ordered, so listings are deterministic.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use tidemark_reference::clock::Clock;

use super::s3_shared::{
    check_batch, check_key, delete_objects_output, etag_of, get_output, head_output, list_page,
    put_output, read_body, scan_start, ListEntry,
};

/// Largest object body accepted, to bound memory (both stores').
pub use super::s3_shared::MAX_OBJECT_BYTES;

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
        check_key(&input.key)?;
        if !self.state.lock().contains_key(&input.bucket) {
            return Err(no_bucket(&input.bucket));
        }
        let bytes = read_body(input.body).await?;
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
        Ok(S3Response::new(put_output(etag, size)))
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
        Ok(S3Response::new(get_output(
            body,
            len,
            obj.etag,
            obj.modified_ms,
            obj.metadata,
        )))
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
        Ok(S3Response::new(head_output(
            obj.bytes.len() as i64,
            obj.etag.clone(),
            obj.modified_ms,
            obj.metadata.clone(),
        )))
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
        check_batch(&input)?;
        let mut s = self.state.lock();
        let b = s
            .get_mut(&input.bucket)
            .ok_or_else(|| no_bucket(&input.bucket))?;
        let quiet = input.delete.quiet.unwrap_or(false);
        let mut removed = Vec::new();
        for o in input.delete.objects {
            // Deleting a missing key succeeds, as in S3.
            b.remove(&o.key);
            removed.push(o.key);
        }
        Ok(S3Response::new(delete_objects_output(removed, quiet)))
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
        // A range scan from the first key that can be on the page: the cost follows the
        // answer, not the bucket.
        let start = scan_start(&input)?;
        let entries = b.range(start..).map(|(key, obj)| ListEntry {
            key,
            size: obj.bytes.len() as i64,
            etag: &obj.etag,
            modified_ms: obj.modified_ms,
        });
        Ok(S3Response::new(list_page(input, entries)?))
    }
}

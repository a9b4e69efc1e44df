//! The real tier's S3 store: an [`s3s::S3`] backend of our own over a directory, served over
//! loopback HTTP by s3s like any S3 (see [`super::server`]), that holds every key S3 allows.
//!
//! Why not s3s-fs (which this replaced): s3s-fs 0.14 maps an object's key onto a file path and
//! names its metadata file after the whole base64 key, so a key is refused with a 500 once the
//! metadata file name passes the filesystem's 255 bytes (measured: 165 bytes of key with a
//! 3-byte bucket name, 114 with a 54-byte one, far below S3's 1,024). The same mapping loses
//! keys a path cannot spell: `x//y` is stored as `x/y`, `p/../q` as `q`, and `a/b` cannot exist
//! beside `a`. Wrapping s3s-fs cannot fix that (the key is its file path), and patching it means
//! forking it (s3s 0.15+ needs a newer rustc than this toolchain).
//!
//! So each object is one file, `<root>/<bucket>/<sha256 of the key, hex>`: a name of 64 bytes
//! whatever the key. The file holds a one-line JSON header (the key itself, size, ETag, write
//! time, user metadata) and then the body. One file rather than body and sidecar, because one
//! rename then replaces an object whole: no reader sees a new body with old metadata, and a
//! crash leaves no orphan half. The full key in the header is checked on read, so a digest
//! collision would be an error, never another object's bytes.
//!
//! Listing reads the header of every object in the bucket and sorts by key (S3's order: the
//! key's UTF-8 bytes, which is `str`'s order); the page itself is computed by the same function
//! as the in-memory store's ([`super::s3_shared`]). A scan per page is what s3s-fs did too;
//! scale benchmarks use the in-memory store. Write times come from the handed-in clock (the
//! real tier hands in the system clock, so LastModified is wall time as on S3).
//!
//! Reading, writing and listing objects run on Tokio's blocking pool; single directory calls
//! (mkdir, stat, unlink) run inline. Writes go through `<root>/.tmp/` (a bucket
//! name cannot start with `.`), which lives in the tier's own temporary directory.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use sha2::{Digest, Sha256};
use tidemark_reference::clock::Clock;

use super::s3_shared::{
    check_batch, check_key, delete_objects_output, etag_of, get_output, head_output, list_page,
    put_output, read_body, scan_start, ListEntry,
};

/// What an object file says about itself, before its body.
#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    key: String,
    size: i64,
    etag: String,
    modified_ms: i64,
    metadata: BTreeMap<String, String>,
}

pub struct DiskS3 {
    root: PathBuf,
    clock: Arc<dyn Clock>,
    tmp_counter: AtomicU64,
}

const TMP_DIR: &str = ".tmp";

impl DiskS3 {
    /// A store over `root` (which must exist); each bucket is a subdirectory.
    pub fn new(root: &Path, clock: Arc<dyn Clock>) -> std::io::Result<DiskS3> {
        std::fs::create_dir_all(root.join(TMP_DIR))?;
        Ok(DiskS3 {
            root: root.to_path_buf(),
            clock,
            tmp_counter: AtomicU64::new(0),
        })
    }

    /// The bucket's directory. s3s has already refused invalid names; this refuses again
    /// anything that could leave the root, since the name becomes a path.
    fn bucket_dir(&self, bucket: &str) -> S3Result<PathBuf> {
        let valid = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !bucket.starts_with('.');
        if !valid {
            return Err(s3_error!(InvalidBucketName, "{bucket:?}"));
        }
        Ok(self.root.join(bucket))
    }

    /// The bucket's directory, or NoSuchBucket.
    fn existing_bucket(&self, bucket: &str) -> S3Result<PathBuf> {
        let dir = self.bucket_dir(bucket)?;
        if dir.is_dir() {
            Ok(dir)
        } else {
            Err(no_bucket(bucket))
        }
    }
}

fn object_file(bucket_dir: &Path, key: &str) -> PathBuf {
    bucket_dir.join(hex::encode(Sha256::digest(key.as_bytes())))
}

fn no_bucket(bucket: &str) -> s3s::S3Error {
    s3_error!(NoSuchBucket, "bucket {bucket} does not exist")
}

fn io_error(what: &str, e: std::io::Error) -> s3s::S3Error {
    s3_error!(InternalError, "{what}: {e}")
}

/// Runs blocking file work off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> S3Result<T> + Send + 'static,
) -> S3Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| s3_error!(InternalError, "file task: {e}"))?
}

/// Reads an object's header (and, if asked, its body). `None` if there is no such object.
fn read_object(file: &Path, key: &str, with_body: bool) -> S3Result<Option<(Header, Vec<u8>)>> {
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("open object", e)),
    };
    let mut r = BufReader::new(f);
    let header = read_header(&mut r, file)?;
    if header.key != key {
        return Err(s3_error!(
            InternalError,
            "{} holds key {:?}, not {key:?} (a digest collision)",
            file.display(),
            header.key
        ));
    }
    let mut body = Vec::new();
    if with_body {
        r.read_to_end(&mut body)
            .map_err(|e| io_error("read object", e))?;
    }
    Ok(Some((header, body)))
}

fn read_header(r: &mut impl BufRead, file: &Path) -> S3Result<Header> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)
        .map_err(|e| io_error("read object header", e))?;
    serde_json::from_slice(&line).map_err(|e| {
        s3_error!(
            InternalError,
            "{}: object header is not JSON: {e}",
            file.display()
        )
    })
}

#[async_trait::async_trait]
impl S3 for DiskS3 {
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let dir = self.bucket_dir(&req.input.bucket)?;
        match std::fs::create_dir(&dir) {
            Ok(()) => Ok(S3Response::new(CreateBucketOutput::default())),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                Err(s3_error!(BucketAlreadyOwnedByYou))
            }
            Err(e) => Err(io_error("create bucket", e)),
        }
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.existing_bucket(&req.input.bucket)?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let dir = self.existing_bucket(&req.input.bucket)?;
        let empty = std::fs::read_dir(&dir)
            .map_err(|e| io_error("read bucket", e))?
            .next()
            .is_none();
        if !empty {
            return Err(s3_error!(BucketNotEmpty));
        }
        std::fs::remove_dir(&dir).map_err(|e| io_error("remove bucket", e))?;
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let input = req.input;
        check_key(&input.key)?;
        let dir = self.existing_bucket(&input.bucket)?;
        let bytes = read_body(input.body).await?;
        let etag = etag_of(&bytes);
        let size = bytes.len() as i64;
        let header = Header {
            key: input.key,
            size,
            etag: etag.clone(),
            modified_ms: self.clock.now().0,
            metadata: input.metadata.unwrap_or_default().into_iter().collect(),
        };
        let tmp = self.root.join(TMP_DIR).join(format!(
            "{}",
            self.tmp_counter.fetch_add(1, Ordering::Relaxed)
        ));
        let bucket = input.bucket;
        blocking(move || {
            let mut content =
                serde_json::to_vec(&header).map_err(|e| s3_error!(InternalError, "{e}"))?;
            content.push(b'\n');
            content.extend_from_slice(&bytes);
            std::fs::write(&tmp, &content).map_err(|e| io_error("write object", e))?;
            // One rename replaces the object whole. It fails if the bucket went meanwhile.
            std::fs::rename(&tmp, object_file(&dir, &header.key)).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                if e.kind() == ErrorKind::NotFound {
                    no_bucket(&bucket)
                } else {
                    io_error("store object", e)
                }
            })
        })
        .await?;
        Ok(S3Response::new(put_output(etag, size)))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let dir = self.existing_bucket(&req.input.bucket)?;
        if req.input.range.is_some() {
            return Err(s3_error!(NotImplemented, "ranged GET"));
        }
        let key = req.input.key;
        let (h, body) = blocking(move || read_object(&object_file(&dir, &key), &key, true))
            .await?
            .ok_or_else(|| s3_error!(NoSuchKey))?;
        Ok(S3Response::new(get_output(
            s3s::Body::from(body),
            h.size,
            h.etag,
            h.modified_ms,
            h.metadata,
        )))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let dir = self.existing_bucket(&req.input.bucket)?;
        let key = req.input.key;
        let (h, _) = blocking(move || read_object(&object_file(&dir, &key), &key, false))
            .await?
            .ok_or_else(|| s3_error!(NoSuchKey))?;
        Ok(S3Response::new(head_output(
            h.size,
            h.etag,
            h.modified_ms,
            h.metadata,
        )))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let dir = self.existing_bucket(&req.input.bucket)?;
        remove_object(&dir, &req.input.key)?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        check_batch(&input)?;
        let dir = self.existing_bucket(&input.bucket)?;
        let quiet = input.delete.quiet.unwrap_or(false);
        let objects = input.delete.objects;
        let removed = blocking(move || {
            let mut removed = Vec::new();
            for o in objects {
                remove_object(&dir, &o.key)?;
                removed.push(o.key);
            }
            Ok(removed)
        })
        .await?;
        Ok(S3Response::new(delete_objects_output(removed, quiet)))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        let dir = self.existing_bucket(&input.bucket)?;
        let prefix = input.prefix.clone().unwrap_or_default();
        let start = scan_start(&input)?;
        // Only the headers of keys that can be on the page are kept; sorted by key.
        let headers = blocking(move || {
            let mut found = BTreeMap::new();
            let entries = std::fs::read_dir(&dir).map_err(|e| io_error("read bucket", e))?;
            for entry in entries {
                let path = entry.map_err(|e| io_error("read bucket", e))?.path();
                let f = match std::fs::File::open(&path) {
                    Ok(f) => f,
                    // Deleted since the directory was read: not in this listing.
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(io_error("open object", e)),
                };
                let h = read_header(&mut BufReader::new(f), &path)?;
                if h.key.starts_with(&prefix) && h.key >= start {
                    found.insert(h.key.clone(), h);
                }
            }
            Ok(found)
        })
        .await?;
        let entries = headers.values().map(|h| ListEntry {
            key: &h.key,
            size: h.size,
            etag: &h.etag,
            modified_ms: h.modified_ms,
        });
        Ok(S3Response::new(list_page(input, entries)?))
    }
}

/// Removes an object; a missing one is no error, as in S3.
fn remove_object(dir: &Path, key: &str) -> S3Result<()> {
    match std::fs::remove_file(object_file(dir, key)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error("delete object", e)),
    }
}

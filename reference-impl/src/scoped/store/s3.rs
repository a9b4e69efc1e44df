//! The store's S3 requests, one each: sent (and retried while the store answers a throttle,
//! SPEC SC-8.4), counted in [`super::RequestCounts`], and their failures classified into the
//! reasons SPEC SC-8 names. Only these functions talk to S3.

use std::sync::atomic::Ordering;

use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use crate::scoped::alternatives::Alternative;
use crate::scoped::error::ScopedError;
use crate::scoped::mutants::ScopedMutant;
use crate::scoped::permissions::{Access, Scope};

use super::{ScopedStore, S3_ATTEMPTS, S3_BATCH, SOURCE_SHA_META, WRITTEN_AT_META};

/// How an S3 call failed, before it is turned into a [`ScopedError`].
pub(super) enum S3Failure {
    NotFound,
    Error(ScopedError),
}

/// How a store's error maps to a reason (SPEC SC-8.1, SC-8.3): a missing bucket is
/// `no_such_bucket`, a missing object is not found, and everything else the store answers
/// (AccessDenied and a throttle that outlasted its retries included) is `storage_unavailable`.
pub(super) fn classify<E>(
    operation: &'static str,
    bucket: &str,
    mutant: Option<ScopedMutant>,
    err: SdkError<E>,
) -> S3Failure
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let status = err.raw_response().map(|r| r.status().as_u16());
    let code = err
        .as_service_error()
        .and_then(|e| e.code())
        .map(str::to_string);
    match code.as_deref() {
        Some("NoSuchBucket") if mutant != Some(ScopedMutant::MissingBucketUnavailable) => {
            return S3Failure::Error(ScopedError::NoSuchBucket {
                bucket: bucket.to_string(),
            })
        }
        Some("AccessDenied") if mutant == Some(ScopedMutant::StoreDeniedAsPermission) => {
            return S3Failure::Error(ScopedError::PermissionDenied {
                scope: Scope::Session,
                granted: Access::None,
                needed: Access::ReadWrite,
            })
        }
        Some("NoSuchKey") | Some("NotFound") => return S3Failure::NotFound,
        _ => {}
    }
    if status == Some(404) && code.is_none() {
        return S3Failure::NotFound;
    }
    S3Failure::Error(ScopedError::Storage {
        operation,
        message: format!("{}", DisplayErrorContext(&err)),
    })
}

pub(super) fn must<E>(
    operation: &'static str,
    bucket: &str,
    mutant: Option<ScopedMutant>,
    err: SdkError<E>,
) -> ScopedError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match classify(operation, bucket, mutant, err) {
        S3Failure::NotFound => ScopedError::Storage {
            operation,
            message: "unexpected 404".into(),
        },
        S3Failure::Error(e) => e,
    }
}

impl ScopedStore {
    /// Sends one S3 request, made afresh by `request` for each attempt, retrying it while the
    /// store answers 503 (SlowDown or ServiceUnavailable: a throttle), at most
    /// [`S3_ATTEMPTS`] attempts in all with a short backoff between them (SPEC SC-8.4). Any
    /// other error is answered at once, never retried.
    pub(super) async fn send<T, E, Fut>(
        &self,
        mut request: impl FnMut() -> Fut,
    ) -> Result<T, SdkError<E>>
    where
        Fut: std::future::Future<Output = Result<T, SdkError<E>>>,
    {
        let mut attempt = 1;
        // What is retried: a throttle (503), unless this store reports it at once
        // (`throttles=reported`); every 5xx when it retries server errors too
        // (`server_errors=retried`). SPEC SC-8.4 and its two variants.
        let retried = |status: Option<u16>| match status {
            Some(503) => {
                !self.is(ScopedMutant::ThrottleNotRetried)
                    && !self.cfg.takes(Alternative::ThrottlesReported)
            }
            Some(500..=599) => self.cfg.takes(Alternative::ServerErrorsRetried),
            _ => false,
        };
        loop {
            match request().await {
                Err(e)
                    if attempt < S3_ATTEMPTS
                        && retried(e.raw_response().map(|r| r.status().as_u16())) =>
                {
                    // Backoff is not time the scenario sees: every attempt runs at the
                    // request's `now`.
                    tokio::time::sleep(std::time::Duration::from_millis(10 << attempt)).await;
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    pub(super) async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), ScopedError> {
        self.put_tagged(key, bytes, None).await
    }

    /// Puts an object, stamping the write time and, for a file and its text, the sha256 of the
    /// file's content (see [`SOURCE_SHA_META`]).
    pub(crate) async fn put_tagged(
        &self,
        key: &str,
        bytes: Vec<u8>,
        source_sha: Option<&str>,
    ) -> Result<(), ScopedError> {
        self.counters.put.fetch_add(1, Ordering::Relaxed);
        let written_at = self.now().0.to_string();
        let stamped = !self.is(ScopedMutant::NoWrittenAtStamp);
        self.send(|| {
            let mut req = self.s3.put_object().bucket(&self.cfg.bucket).key(key);
            if stamped {
                req = req.metadata(WRITTEN_AT_META, &written_at);
            }
            if let Some(sha) = source_sha {
                req = req.metadata(SOURCE_SHA_META, sha);
            }
            req.body(ByteStream::from(bytes.clone())).send()
        })
        .await
        .map_err(|e| must("PutObject", &self.cfg.bucket, self.mutant(), e))?;
        Ok(())
    }

    pub(crate) async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, ScopedError> {
        Ok(self.get_stamped(key).await?.map(|(b, _)| b))
    }

    /// An object's bytes and its source-sha stamp, or `None` if it does not exist.
    pub(super) async fn get_stamped(
        &self,
        key: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, ScopedError> {
        self.counters.get.fetch_add(1, Ordering::Relaxed);
        match self
            .send(|| {
                self.s3
                    .get_object()
                    .bucket(&self.cfg.bucket)
                    .key(key)
                    .send()
            })
            .await
        {
            Ok(out) => {
                let stamp = out.metadata().and_then(|m| m.get(SOURCE_SHA_META)).cloned();
                let body = out.body.collect().await.map_err(|e| ScopedError::Storage {
                    operation: "GetObject body",
                    message: e.to_string(),
                })?;
                Ok(Some((body.into_bytes().to_vec(), stamp)))
            }
            Err(e) => match classify("GetObject", &self.cfg.bucket, self.mutant(), e) {
                S3Failure::NotFound => Ok(None),
                S3Failure::Error(e) => Err(e),
            },
        }
    }

    pub(super) async fn exists(&self, key: &str) -> Result<bool, ScopedError> {
        Ok(self.head_stamp(key).await?.is_some())
    }

    /// `None` if the object does not exist, else its source-sha stamp (if it has one).
    pub(crate) async fn head_stamp(
        &self,
        key: &str,
    ) -> Result<Option<Option<String>>, ScopedError> {
        self.counters.head.fetch_add(1, Ordering::Relaxed);
        match self
            .send(|| {
                self.s3
                    .head_object()
                    .bucket(&self.cfg.bucket)
                    .key(key)
                    .send()
            })
            .await
        {
            Ok(out) => Ok(Some(
                out.metadata().and_then(|m| m.get(SOURCE_SHA_META)).cloned(),
            )),
            Err(e) => match classify("HeadObject", &self.cfg.bucket, self.mutant(), e) {
                S3Failure::NotFound => Ok(None),
                S3Failure::Error(e) => Err(e),
            },
        }
    }

    /// The (handed-in) time a file was written, from its [`WRITTEN_AT_META`] stamp; a file
    /// without one is as old as can be. What the age-only sweeps measure age from.
    pub(crate) async fn written_at_ms(&self, key: &str) -> Result<i64, ScopedError> {
        self.counters.head.fetch_add(1, Ordering::Relaxed);
        let head = self
            .send(|| {
                self.s3
                    .head_object()
                    .bucket(&self.cfg.bucket)
                    .key(key)
                    .send()
            })
            .await
            .map_err(|e| must("HeadObject", &self.cfg.bucket, self.mutant(), e))?;
        let written = head
            .metadata()
            .and_then(|m| m.get(WRITTEN_AT_META))
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(i64::MIN);
        Ok(written)
    }

    pub(crate) async fn delete_one(&self, key: &str) -> Result<(), ScopedError> {
        self.counters.delete_one.fetch_add(1, Ordering::Relaxed);
        self.send(|| {
            self.s3
                .delete_object()
                .bucket(&self.cfg.bucket)
                .key(key)
                .send()
        })
        .await
        .map_err(|e| must("DeleteObject", &self.cfg.bucket, self.mutant(), e))?;
        Ok(())
    }

    /// Every key under `prefix`, in key order, one ListObjectsV2 page at a time.
    pub(crate) async fn list_keys(&self, prefix: &str) -> Result<Vec<(String, u64)>, ScopedError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            self.counters.list.fetch_add(1, Ordering::Relaxed);
            let page = self
                .send(|| {
                    self.s3
                        .list_objects_v2()
                        .bucket(&self.cfg.bucket)
                        .prefix(prefix)
                        .max_keys(S3_BATCH as i32)
                        .set_continuation_token(token.clone())
                        .send()
                })
                .await
                .map_err(|e| must("ListObjectsV2", &self.cfg.bucket, self.mutant(), e))?;
            for o in page.contents() {
                if let Some(k) = o.key() {
                    out.push((k.to_string(), o.size().unwrap_or(0).max(0) as u64));
                }
            }
            match (page.is_truncated(), page.next_continuation_token()) {
                (Some(true), Some(t)) => token = Some(t.to_string()),
                _ => break,
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Deletes keys in batches of 1,000 and returns the keys S3 reported as not deleted.
    pub(crate) async fn delete_keys(&self, keys: &[String]) -> Result<Vec<String>, ScopedError> {
        let mut failed = Vec::new();
        for chunk in keys.chunks(S3_BATCH) {
            let ids = chunk
                .iter()
                .map(|k| ObjectIdentifier::builder().key(k).build())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ScopedError::Storage {
                    operation: "DeleteObjects",
                    message: e.to_string(),
                })?;
            let delete = Delete::builder()
                .set_objects(Some(ids))
                .quiet(true)
                .build()
                .map_err(|e| ScopedError::Storage {
                    operation: "DeleteObjects",
                    message: e.to_string(),
                })?;
            self.counters.delete_batch.fetch_add(1, Ordering::Relaxed);
            let out = self
                .send(|| {
                    self.s3
                        .delete_objects()
                        .bucket(&self.cfg.bucket)
                        .delete(delete.clone())
                        .send()
                })
                .await
                .map_err(|e| must("DeleteObjects", &self.cfg.bucket, self.mutant(), e))?;
            if !self.is(ScopedMutant::PartialBatchMarkedDone) {
                failed.extend(
                    out.errors()
                        .iter()
                        .filter_map(|e| e.key().map(str::to_string)),
                );
            }
        }
        Ok(failed)
    }
}

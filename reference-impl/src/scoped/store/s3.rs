//! The store's S3 requests, one each: sent (and retried while the store answers a throttle,
//! SPEC SC-8.4), counted in [`super::RequestCounts`], and their failures classified into the
//! reasons SPEC SC-8 names. Only these functions talk to S3.

use std::sync::atomic::Ordering;

use crate::s3_client::{ListRequest, S3Error};
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
pub(super) fn classify(
    operation: &'static str,
    bucket: &str,
    mutant: Option<ScopedMutant>,
    err: S3Error,
) -> S3Failure {
    let status = err.status;
    let code = err.code.clone();
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
        message: err.message,
    })
}

pub(super) fn must(
    operation: &'static str,
    bucket: &str,
    mutant: Option<ScopedMutant>,
    err: S3Error,
) -> ScopedError {
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
    pub(super) async fn send<T, Fut>(&self, mut request: impl FnMut() -> Fut) -> Result<T, S3Error>
    where
        Fut: std::future::Future<Output = Result<T, S3Error>>,
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
                Err(e) if attempt < S3_ATTEMPTS && retried(e.status) => {
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
        let mut metadata: Vec<(&str, &str)> = Vec::new();
        if stamped {
            metadata.push((WRITTEN_AT_META, &written_at));
        }
        if let Some(sha) = source_sha {
            metadata.push((SOURCE_SHA_META, sha));
        }
        self.send(|| {
            self.s3
                .put_object(&self.cfg.bucket, key, bytes.clone(), &metadata)
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
            .send(|| self.s3.get_object(&self.cfg.bucket, key))
            .await
        {
            Ok(out) => {
                let stamp = out.head.metadata.get(SOURCE_SHA_META).cloned();
                Ok(Some((out.body, stamp)))
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
            .send(|| self.s3.head_object(&self.cfg.bucket, key))
            .await
        {
            Ok(out) => Ok(Some(out.metadata.get(SOURCE_SHA_META).cloned())),
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
            .send(|| self.s3.head_object(&self.cfg.bucket, key))
            .await
            .map_err(|e| must("HeadObject", &self.cfg.bucket, self.mutant(), e))?;
        let written = head
            .metadata
            .get(WRITTEN_AT_META)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(i64::MIN);
        Ok(written)
    }

    pub(crate) async fn delete_one(&self, key: &str) -> Result<(), ScopedError> {
        self.counters.delete_one.fetch_add(1, Ordering::Relaxed);
        self.send(|| self.s3.delete_object(&self.cfg.bucket, key))
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
                    let request = ListRequest {
                        prefix: Some(prefix),
                        max_keys: Some(S3_BATCH),
                        continuation_token: token.as_deref(),
                        ..ListRequest::default()
                    };
                    async move { self.s3.list_objects_v2(&self.cfg.bucket, &request).await }
                })
                .await
                .map_err(|e| must("ListObjectsV2", &self.cfg.bucket, self.mutant(), e))?;
            for o in page.objects {
                out.push((o.key, o.size));
            }
            match (page.is_truncated, page.next_continuation_token) {
                (true, Some(t)) => token = Some(t),
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
            self.counters.delete_batch.fetch_add(1, Ordering::Relaxed);
            let out = self
                .send(|| self.s3.delete_objects(&self.cfg.bucket, chunk, true))
                .await
                .map_err(|e| must("DeleteObjects", &self.cfg.bucket, self.mutant(), e))?;
            if !self.is(ScopedMutant::PartialBatchMarkedDone) {
                failed.extend(out.errors.into_iter().filter_map(|e| e.key));
            }
        }
        Ok(failed)
    }
}

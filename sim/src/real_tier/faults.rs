//! A fault-injecting [`s3s::S3`] wrapper. It sits in front of the disk or memory store (or any
//! implementation) and, from one seed, fails requests, delays them, or fails part of a
//! DeleteObjects batch. It also stores and serves bucket lifecycle configuration itself, so the
//! stores behind it need not.
//!
//! Faults are drawn from a seeded ChaCha stream in request-arrival order, so a sequential
//! client sees the same faults on every run of the same seed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};

/// What to inject. Rates are probabilities in `0.0..=1.0`.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// Every request fails with 503 ServiceUnavailable, as if the store were down.
    pub down: bool,
    /// Each request fails with 500 InternalError with this probability.
    pub error_rate: f64,
    /// Each key of a DeleteObjects request is reported as failed (and not deleted) with this
    /// probability; the rest of the batch succeeds.
    pub delete_key_failure_rate: f64,
    /// Fixed delay added to every request.
    pub latency: Duration,
    /// Exact failures: `(operation, n)` fails the n-th request (1-based) of that operation
    /// (`"PutObject"`, `"DeleteObjects"`, …) counted from when this plan was set.
    pub fail_requests: Vec<(String, u64)>,
    /// Lasting failures: `(operation, n)` fails the n-th request of that operation and every
    /// one after it, until the plan changes, so however often a client retries a 500 the
    /// operation fails.
    pub fail_from: Vec<(String, u64)>,
    /// Every request fails with 404 NoSuchBucket, as if the bucket had been deleted.
    pub no_such_bucket: bool,
    /// Every request fails with 403 AccessDenied, as if the credentials had lost their grant.
    pub access_denied: bool,
    /// Requests answered 503 SlowDown: the next N of any operation, or every one.
    pub throttle: Throttle,
}

/// How many requests a throttled store answers with 503 SlowDown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Throttle {
    #[default]
    Off,
    /// The next N requests, of any operation, counted from when the plan was set.
    Next(u64),
    /// Every request until the plan changes.
    Always,
}

/// Every operation name the wrapper counts, so `faults fail OP N` can be checked at load.
pub const S3_OPERATIONS: &[&str] = &[
    "AbortMultipartUpload",
    "CompleteMultipartUpload",
    "CopyObject",
    "CreateBucket",
    "CreateMultipartUpload",
    "DeleteBucket",
    "DeleteBucketLifecycle",
    "DeleteObject",
    "DeleteObjects",
    "GetBucketLifecycleConfiguration",
    "GetBucketLocation",
    "GetObject",
    "HeadBucket",
    "HeadObject",
    "ListBuckets",
    "ListObjects",
    "ListObjectsV2",
    "PutBucketLifecycleConfiguration",
    "PutObject",
    "UploadPart",
];

/// Requests the wrapper has seen, by operation name, in name order.
pub type OpCounts = BTreeMap<&'static str, u64>;

struct State {
    plan: FaultPlan,
    rng: ChaCha8Rng,
    counts: OpCounts,
    since_plan: OpCounts,
    injected: u64,
    /// Requests throttled since the plan was set (for [`Throttle::Next`]).
    throttled: u64,
    lifecycle: BTreeMap<String, BucketLifecycleConfiguration>,
}

/// A handle the harness keeps to change faults while the server runs and to read counts.
#[derive(Clone)]
pub struct FaultHandle(Arc<Mutex<State>>);

impl FaultHandle {
    pub fn new(seed: u64) -> FaultHandle {
        FaultHandle(Arc::new(Mutex::new(State {
            plan: FaultPlan::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            counts: OpCounts::new(),
            since_plan: OpCounts::new(),
            injected: 0,
            throttled: 0,
            lifecycle: BTreeMap::new(),
        })))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-updated in a way that
        // matters to a test double; keep serving.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_plan(&self, plan: FaultPlan) {
        let mut s = self.lock();
        s.plan = plan;
        s.since_plan.clear();
        s.throttled = 0;
    }

    pub fn plan(&self) -> FaultPlan {
        self.lock().plan.clone()
    }

    pub fn set_down(&self, down: bool) {
        self.lock().plan.down = down;
    }

    pub fn heal(&self) {
        self.set_plan(FaultPlan::default());
    }

    pub fn counts(&self) -> OpCounts {
        self.lock().counts.clone()
    }

    pub fn reset_counts(&self) {
        self.lock().counts.clear();
    }

    /// How many faults (failed requests or failed keys) were injected so far.
    pub fn injected(&self) -> u64 {
        self.lock().injected
    }

    /// The lifecycle configuration stored for a bucket, if any.
    pub fn lifecycle(&self, bucket: &str) -> Option<BucketLifecycleConfiguration> {
        self.lock().lifecycle.get(bucket).cloned()
    }

    /// Counts the request and decides its fate: an error to return, and a delay.
    fn admit(&self, op: &'static str) -> (Option<s3s::S3Error>, Duration) {
        let mut s = self.lock();
        *s.counts.entry(op).or_insert(0) += 1;
        let nth = {
            let n = s.since_plan.entry(op).or_insert(0);
            *n += 1;
            *n
        };
        let latency = s.plan.latency;
        if s.plan
            .fail_requests
            .iter()
            .any(|(o, n)| o == op && *n == nth)
            || s.plan.fail_from.iter().any(|(o, n)| o == op && nth >= *n)
        {
            s.injected += 1;
            return (
                Some(s3_error!(
                    InternalError,
                    "injected: {op} number {nth} fails"
                )),
                latency,
            );
        }
        if s.plan.down {
            s.injected += 1;
            return (
                Some(s3_error!(ServiceUnavailable, "injected: store down")),
                latency,
            );
        }
        // The store's own error classes, with the codes and statuses a real S3 answers.
        if s.plan.no_such_bucket {
            s.injected += 1;
            return (
                Some(s3_error!(
                    NoSuchBucket,
                    "injected: the bucket does not exist"
                )),
                latency,
            );
        }
        if s.plan.access_denied {
            s.injected += 1;
            return (
                Some(s3_error!(AccessDenied, "injected: access denied")),
                latency,
            );
        }
        let throttled = match s.plan.throttle {
            Throttle::Off => false,
            Throttle::Always => true,
            Throttle::Next(n) => s.throttled < n,
        };
        if throttled {
            s.throttled += 1;
            s.injected += 1;
            return (
                Some(s3_error!(
                    SlowDown,
                    "injected: please reduce your request rate"
                )),
                latency,
            );
        }
        let rate = s.plan.error_rate;
        if rate > 0.0 && s.rng.gen_bool(rate.clamp(0.0, 1.0)) {
            s.injected += 1;
            return (
                Some(s3_error!(InternalError, "injected fault in {op}")),
                latency,
            );
        }
        (None, latency)
    }

    /// Splits a DeleteObjects batch into keys to delete and keys to report as failed.
    fn split_delete(&self, objects: Vec<ObjectIdentifier>) -> (Vec<ObjectIdentifier>, Vec<String>) {
        let mut s = self.lock();
        let rate = s.plan.delete_key_failure_rate.clamp(0.0, 1.0);
        if rate <= 0.0 {
            return (objects, Vec::new());
        }
        let mut keep = Vec::new();
        let mut fail = Vec::new();
        for o in objects {
            if s.rng.gen_bool(rate) {
                fail.push(o.key);
            } else {
                keep.push(o);
            }
        }
        s.injected += fail.len() as u64;
        (keep, fail)
    }
}

/// The wrapper. `inner` is usually [`super::disk_s3::DiskS3`].
pub struct FaultyS3<T> {
    inner: T,
    faults: FaultHandle,
}

impl<T> FaultyS3<T> {
    pub fn new(inner: T, faults: FaultHandle) -> Self {
        FaultyS3 { inner, faults }
    }
}

async fn gate(faults: &FaultHandle, op: &'static str) -> S3Result<()> {
    let (err, latency) = faults.admit(op);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[async_trait::async_trait]
impl<T: S3> S3 for FaultyS3<T> {
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        gate(&self.faults, "CreateBucket").await?;
        self.inner.create_bucket(req).await
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        gate(&self.faults, "DeleteBucket").await?;
        self.inner.delete_bucket(req).await
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        gate(&self.faults, "HeadBucket").await?;
        self.inner.head_bucket(req).await
    }

    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        gate(&self.faults, "ListBuckets").await?;
        self.inner.list_buckets(req).await
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        gate(&self.faults, "GetBucketLocation").await?;
        self.inner.get_bucket_location(req).await
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        gate(&self.faults, "PutObject").await?;
        self.inner.put_object(req).await
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        gate(&self.faults, "GetObject").await?;
        self.inner.get_object(req).await
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        gate(&self.faults, "HeadObject").await?;
        self.inner.head_object(req).await
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        gate(&self.faults, "CopyObject").await?;
        self.inner.copy_object(req).await
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        gate(&self.faults, "DeleteObject").await?;
        self.inner.delete_object(req).await
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        gate(&self.faults, "ListObjects").await?;
        self.inner.list_objects(req).await
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        gate(&self.faults, "ListObjectsV2").await?;
        self.inner.list_objects_v2(req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        gate(&self.faults, "CreateMultipartUpload").await?;
        self.inner.create_multipart_upload(req).await
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        gate(&self.faults, "UploadPart").await?;
        self.inner.upload_part(req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        gate(&self.faults, "CompleteMultipartUpload").await?;
        self.inner.complete_multipart_upload(req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        gate(&self.faults, "AbortMultipartUpload").await?;
        self.inner.abort_multipart_upload(req).await
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        gate(&self.faults, "DeleteObjects").await?;
        let mut failed = Vec::new();
        let req = req.map_input(|mut input| {
            let objects = std::mem::take(&mut input.delete.objects);
            let (keep, fail) = self.faults.split_delete(objects);
            input.delete.objects = keep;
            failed = fail;
            input
        });
        if req.input.delete.objects.is_empty() && !failed.is_empty() {
            // Nothing left to forward: answer for the whole batch here.
            let output = DeleteObjectsOutput {
                errors: Some(failed.into_iter().map(injected_key_error).collect()),
                ..Default::default()
            };
            return Ok(S3Response::new(output));
        }
        let mut resp = self.inner.delete_objects(req).await?;
        if !failed.is_empty() {
            let errors = resp.output.errors.get_or_insert_with(Vec::new);
            errors.extend(failed.into_iter().map(injected_key_error));
        }
        Ok(resp)
    }

    async fn put_bucket_lifecycle_configuration(
        &self,
        req: S3Request<PutBucketLifecycleConfigurationInput>,
    ) -> S3Result<S3Response<PutBucketLifecycleConfigurationOutput>> {
        gate(&self.faults, "PutBucketLifecycleConfiguration").await?;
        let bucket = req.input.bucket.clone();
        let config = req.input.lifecycle_configuration.unwrap_or_default();
        // S3's own limit, enforced where a real bucket enforces it.
        if config.rules.len() > 1000 {
            return Err(s3_error!(
                InvalidRequest,
                "{} lifecycle rules; at most 1000 are allowed",
                config.rules.len()
            ));
        }
        self.faults.lock().lifecycle.insert(bucket, config);
        Ok(S3Response::new(
            PutBucketLifecycleConfigurationOutput::default(),
        ))
    }

    async fn get_bucket_lifecycle_configuration(
        &self,
        req: S3Request<GetBucketLifecycleConfigurationInput>,
    ) -> S3Result<S3Response<GetBucketLifecycleConfigurationOutput>> {
        gate(&self.faults, "GetBucketLifecycleConfiguration").await?;
        match self.faults.lifecycle(&req.input.bucket) {
            Some(c) => Ok(S3Response::new(GetBucketLifecycleConfigurationOutput {
                rules: Some(c.rules),
                ..Default::default()
            })),
            None => Err(s3_error!(
                NoSuchLifecycleConfiguration,
                "no lifecycle configuration on {}",
                req.input.bucket
            )),
        }
    }

    async fn delete_bucket_lifecycle(
        &self,
        req: S3Request<DeleteBucketLifecycleInput>,
    ) -> S3Result<S3Response<DeleteBucketLifecycleOutput>> {
        gate(&self.faults, "DeleteBucketLifecycle").await?;
        self.faults.lock().lifecycle.remove(&req.input.bucket);
        Ok(S3Response::new(DeleteBucketLifecycleOutput::default()))
    }
}

fn injected_key_error(key: String) -> Error {
    Error {
        code: Some("InternalError".to_string()),
        key: Some(key),
        message: Some("injected: this key was not deleted".to_string()),
        version_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fails(h: &FaultHandle, op: &'static str) -> bool {
        h.admit(op).0.is_some()
    }

    #[test]
    fn an_exact_failure_fails_one_request_and_a_lasting_one_every_request_from_its_number() {
        let h = FaultHandle::new(1);
        h.set_plan(FaultPlan {
            fail_requests: vec![("PutObject".into(), 2)],
            ..FaultPlan::default()
        });
        let exact: Vec<bool> = (0..4).map(|_| fails(&h, "PutObject")).collect();
        assert_eq!(exact, [false, true, false, false]);
        h.set_plan(FaultPlan {
            fail_from: vec![("PutObject".into(), 2)],
            ..FaultPlan::default()
        });
        let lasting: Vec<bool> = (0..4).map(|_| fails(&h, "PutObject")).collect();
        assert_eq!(lasting, [false, true, true, true]);
        // Other operations are not counted against it, and heal ends it.
        assert!(!fails(&h, "GetObject"));
        h.heal();
        assert!(!fails(&h, "PutObject"));
    }
}

//! The one S3 client of the reference implementation, the simulation and the conformance
//! harness: every S3 request Tidemark makes goes through [`S3Client`].
//!
//! rusty-s3 signs, hyper carries. rusty-s3 is Sans-IO: it turns an action into a presigned URL
//! (AWS Signature Version 4 in the query string) and does no I/O, so the same signing runs over
//! real TCP ([`HyperTransport`], hyper-util's pooled HTTP/1.1 client) and over the simulation's
//! network (a [`Transport`] the sim supplies: this crate does not depend on turmoil). It replaced
//! aws-sdk-s3, whose stack was a quarter of a fresh clone's build, for the handful of operations
//! Tidemark uses. Actions rusty-s3 lacks (ListObjectsV2 and DeleteObjects without its XML
//! features, the bucket lifecycle configuration) are presigned here with
//! [`rusty_s3::signing::sign`], their XML written and read in [`xml`] and [`lifecycle_xml`].
//!
//! - Path-style addressing: a loopback or simulated endpoint has no bucket subdomains.
//! - Every key S3 holds can be sent: one with a `.` or `..` segment, which a URL built by the
//!   `url` crate would resolve away, is signed by [`raw_path`] instead.
//! - No retries: the reference retries a throttle itself and reports every other failed request
//!   (SPEC SC-8.4); a client retry would hide injected faults.
//! - An optional operation timeout (tokio's, so simulated time under turmoil): a partition is an
//!   error, not a hang.
//! - Signed at wall time ([`crate::clock::s3_signing_time`]): the server checks the signature's
//!   time against its own wall clock.

mod error;
pub mod lifecycle_xml;
mod raw_path;
mod xml;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as PooledClient;
use hyper_util::rt::TokioExecutor;
use md5::Digest as _;
use rusty_s3::actions::S3Action;
use rusty_s3::{Bucket, Credentials, Method, UrlStyle};

pub use error::{S3Error, S3ErrorKind};

use crate::clock::{s3_signing_time, Timestamp};
pub use lifecycle_xml::BucketLifecycle;

/// How long a presigned URL stays valid: it is sent at once, so a few minutes of clock skew
/// between client and server is all this needs to cover.
const PRESIGN_EXPIRY: Duration = Duration::from_secs(15 * 60);

/// Carries one HTTP request to the server and brings back the whole answer. The request's URI
/// is absolute (`http://host:port/bucket/key?X-Amz-...`).
#[async_trait::async_trait]
pub trait Transport: Send + Sync + 'static {
    async fn send(&self, request: http::Request<Bytes>) -> Result<http::Response<Bytes>, String>;
}

/// Real TCP: hyper-util's legacy pooled client, HTTP/1.1 over plain http.
pub struct HyperTransport {
    client: PooledClient<HttpConnector, Full<Bytes>>,
}

impl Default for HyperTransport {
    fn default() -> Self {
        HyperTransport {
            client: PooledClient::builder(TokioExecutor::new()).build_http(),
        }
    }
}

#[async_trait::async_trait]
impl Transport for HyperTransport {
    async fn send(&self, request: http::Request<Bytes>) -> Result<http::Response<Bytes>, String> {
        let (parts, body) = request.into_parts();
        let response = self
            .client
            .request(http::Request::from_parts(parts, Full::new(body)))
            .await
            .map_err(|e| error_chain(&e))?;
        read_whole(response).await
    }
}

/// A response with its whole body read, as a [`Transport`] returns it (this one's and the
/// sim's).
pub async fn read_whole(
    response: http::Response<hyper::body::Incoming>,
) -> Result<http::Response<Bytes>, String> {
    let (parts, body) = response.into_parts();
    let bytes = body
        .collect()
        .await
        .map_err(|e| format!("reading the body: {}", error_chain(&e)))?
        .to_bytes();
    Ok(http::Response::from_parts(parts, bytes))
}

/// An error and its sources on one line (hyper's top-level message alone says little).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// An S3 client: endpoint, region, keys and a transport. Cheap to clone (one shared `Arc`).
#[derive(Clone)]
pub struct S3Client {
    inner: Arc<Inner>,
}

struct Inner {
    endpoint: String,
    region: String,
    credentials: Credentials,
    transport: Arc<dyn Transport>,
    operation_timeout: Option<Duration>,
}

impl std::fmt::Debug for S3Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Client")
            .field("endpoint", &self.inner.endpoint)
            .field("region", &self.inner.region)
            .field("operation_timeout", &self.inner.operation_timeout)
            .finish_non_exhaustive()
    }
}

/// What HeadObject (and GetObject, beside the body) tells of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectHead {
    pub content_length: Option<u64>,
    pub e_tag: Option<String>,
    pub last_modified: Option<Timestamp>,
    /// User metadata (`x-amz-meta-*`), by name without the prefix, lowercase as HTTP sends it.
    pub metadata: BTreeMap<String, String>,
}

/// A GetObject answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Object {
    pub head: ObjectHead,
    pub body: Vec<u8>,
}

/// One object in a listing. The key is as the server sent it: URL-encoded when the listing
/// asked for `encoding-type=url`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedObject {
    pub key: String,
    pub size: u64,
    pub e_tag: Option<String>,
    pub last_modified: Option<Timestamp>,
}

/// One ListObjectsV2 page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListPage {
    pub objects: Vec<ListedObject>,
    pub common_prefixes: Vec<String>,
    pub is_truncated: bool,
    pub next_continuation_token: Option<String>,
    /// `KeyCount`: the objects and common prefixes on this page, as the server counted them.
    pub key_count: Option<u64>,
}

/// What one ListObjectsV2 request asks for; `Default` lists the whole bucket, one page.
#[derive(Clone, Debug, Default)]
pub struct ListRequest<'a> {
    pub prefix: Option<&'a str>,
    pub delimiter: Option<&'a str>,
    pub max_keys: Option<usize>,
    pub continuation_token: Option<&'a str>,
    /// Lists keys after this one only (the first page; a continuation token supersedes it).
    pub start_after: Option<&'a str>,
    /// Asks for `encoding-type=url`: keys (and prefixes) come back URL-encoded, so a key with
    /// a control character, which XML 1.0 cannot carry, survives the listing.
    pub url_encoded_keys: bool,
}

/// A key a quiet DeleteObjects reported as not deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteObjectError {
    /// `None` when the server's error entry named no key.
    pub key: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
}

/// A DeleteObjects answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteObjectsOutput {
    /// Keys reported deleted, in the answer's order: none in quiet mode.
    pub deleted: Vec<String>,
    pub errors: Vec<DeleteObjectError>,
}

/// Why a key cannot be sent, if it cannot: an empty key names the bucket itself, and would
/// turn an object's request into the bucket's.
fn unsendable(key: &str) -> Option<&'static str> {
    key.is_empty().then_some("an empty key names the bucket")
}

/// The Content-MD5 header's value for `body` (S3 requires it on DeleteObjects and
/// PutBucketLifecycleConfiguration).
fn content_md5(body: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}

/// A response's status, headers and body.
struct Answer {
    status: u16,
    headers: http::HeaderMap,
    body: Bytes,
}

impl S3Client {
    /// A client over real TCP (see [`HyperTransport`]), without an operation timeout.
    pub fn new(endpoint: &str, region: &str, access_key: &str, secret_key: &str) -> S3Client {
        S3Client::with_transport(
            endpoint,
            region,
            access_key,
            secret_key,
            Arc::new(HyperTransport::default()),
        )
    }

    /// A client over `transport` (the simulation's network, say).
    pub fn with_transport(
        endpoint: &str,
        region: &str,
        access_key: &str,
        secret_key: &str,
        transport: Arc<dyn Transport>,
    ) -> S3Client {
        S3Client {
            inner: Arc::new(Inner {
                endpoint: endpoint.to_string(),
                region: region.to_string(),
                credentials: Credentials::new(access_key, secret_key),
                transport,
                operation_timeout: None,
            }),
        }
    }

    /// The same client with every operation bounded by `timeout` (tokio's timer: simulated
    /// time under turmoil).
    pub fn with_operation_timeout(self, timeout: Duration) -> S3Client {
        let inner = &self.inner;
        S3Client {
            inner: Arc::new(Inner {
                endpoint: inner.endpoint.clone(),
                region: inner.region.clone(),
                credentials: inner.credentials.clone(),
                transport: inner.transport.clone(),
                operation_timeout: Some(timeout),
            }),
        }
    }

    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    fn bucket(&self, operation: &'static str, name: &str) -> Result<Bucket, S3Error> {
        let endpoint = self
            .inner
            .endpoint
            .parse::<url::Url>()
            .map_err(|e| S3Error::refused(operation, &format!("endpoint: {e}")))?;
        Bucket::new(
            endpoint,
            UrlStyle::Path,
            name.to_string(),
            self.inner.region.clone(),
        )
        .map_err(|e| S3Error::refused(operation, &format!("bucket {name:?}: {e}")))
    }

    fn credentials(&self) -> &Credentials {
        &self.inner.credentials
    }

    fn signing_time() -> jiff::Timestamp {
        let ms = s3_signing_time().as_millis();
        jiff::Timestamp::from_millisecond(ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    /// Presigns a request rusty-s3 has no action for. `query` and `headers` sorted by name.
    fn presign(
        &self,
        bucket: &Bucket,
        method: Method,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> url::Url {
        rusty_s3::signing::sign(
            &S3Client::signing_time(),
            method,
            bucket.base_url().clone(),
            self.credentials().key(),
            self.credentials().secret(),
            self.credentials().token(),
            bucket.region(),
            PRESIGN_EXPIRY.as_secs(),
            query.iter().copied(),
            headers.iter().copied(),
        )
    }

    /// Presigns an object's request: by rusty-s3 (`action`, given the signing time), or, for a
    /// key with a `.` or `..` segment that a URL would resolve away, by [`raw_path`].
    fn sign_object(
        &self,
        bucket: &Bucket,
        method: Method,
        key: &str,
        headers: &[(String, String)],
        action: impl FnOnce(&jiff::Timestamp) -> url::Url,
    ) -> String {
        let time = S3Client::signing_time();
        if raw_path::has_dot_segment(key) {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            raw_path::presign(
                &time,
                method,
                bucket,
                key,
                self.credentials(),
                PRESIGN_EXPIRY.as_secs(),
                &headers,
            )
        } else {
            action(&time).to_string()
        }
    }

    /// Sends one request and reads the whole answer; an error status is an [`S3Error`].
    async fn execute(
        &self,
        operation: &'static str,
        method: Method,
        url: String,
        headers: &[(String, String)],
        body: Bytes,
    ) -> Result<Answer, S3Error> {
        let method = match method {
            Method::Head => http::Method::HEAD,
            Method::Get => http::Method::GET,
            Method::Post => http::Method::POST,
            Method::Put => http::Method::PUT,
            Method::Delete => http::Method::DELETE,
        };
        let mut request = http::Request::builder().method(method).uri(url);
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let request = request
            .body(body)
            .map_err(|e| S3Error::refused(operation, &e.to_string()))?;
        let sent = self.inner.transport.send(request);
        let response = match self.inner.operation_timeout {
            Some(limit) => tokio::time::timeout(limit, sent)
                .await
                .map_err(|_| S3Error::timeout(operation, limit))?,
            None => sent.await,
        }
        .map_err(|e| S3Error::transport(operation, &e))?;
        let (parts, body) = response.into_parts();
        let status = parts.status.as_u16();
        if !parts.status.is_success() {
            return Err(S3Error::response(operation, status, &body));
        }
        Ok(Answer {
            status,
            headers: parts.headers,
            body,
        })
    }

    /// CreateBucket, in the client's region (us-east-1 needs no configuration body).
    pub async fn create_bucket(&self, bucket: &str) -> Result<(), S3Error> {
        const OP: &str = "CreateBucket";
        let b = self.bucket(OP, bucket)?;
        let url = b
            .create_bucket(self.credentials())
            .sign_with_time(PRESIGN_EXPIRY, &S3Client::signing_time())
            .to_string();
        let body = if b.region() == "us-east-1" {
            String::new()
        } else {
            format!(
                "<CreateBucketConfiguration><LocationConstraint>{}</LocationConstraint>\
                 </CreateBucketConfiguration>",
                xml::escape(b.region())
            )
        };
        self.execute(OP, Method::Put, url, &[], Bytes::from(body))
            .await?;
        Ok(())
    }

    /// PutObject with user metadata (`x-amz-meta-<name>`; names lowercase). Returns the ETag.
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        body: Vec<u8>,
        metadata: &[(&str, &str)],
    ) -> Result<Option<String>, S3Error> {
        const OP: &str = "PutObject";
        if let Some(why) = unsendable(key) {
            return Err(S3Error::refused(OP, why));
        }
        let b = self.bucket(OP, bucket)?;
        let headers: Vec<(String, String)> = metadata
            .iter()
            .map(|(k, v)| {
                (
                    format!("x-amz-meta-{}", k.to_ascii_lowercase()),
                    v.to_string(),
                )
            })
            .collect();
        // Signed as well as sent: S3 refuses an unsigned `x-amz-*` header.
        let url = self.sign_object(&b, Method::Put, key, &headers, |time| {
            let mut action = b.put_object(Some(self.credentials()), key);
            for (k, v) in &headers {
                action.headers_mut().insert(k.as_str(), v.as_str());
            }
            action.sign_with_time(PRESIGN_EXPIRY, time)
        });
        let answer = self
            .execute(OP, Method::Put, url, &headers, Bytes::from(body))
            .await?;
        Ok(header(&answer.headers, "etag"))
    }

    /// GetObject: the bytes and what the headers say of the object.
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Object, S3Error> {
        const OP: &str = "GetObject";
        if let Some(why) = unsendable(key) {
            return Err(S3Error::refused(OP, why));
        }
        let b = self.bucket(OP, bucket)?;
        let url = self.sign_object(&b, Method::Get, key, &[], |time| {
            b.get_object(Some(self.credentials()), key)
                .sign_with_time(PRESIGN_EXPIRY, time)
        });
        let answer = self
            .execute(OP, Method::Get, url, &[], Bytes::new())
            .await?;
        Ok(Object {
            head: object_head(&answer.headers),
            body: answer.body.to_vec(),
        })
    }

    /// HeadObject. A missing object is a 404 without a code (a HEAD answer has no body).
    pub async fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectHead, S3Error> {
        const OP: &str = "HeadObject";
        if let Some(why) = unsendable(key) {
            return Err(S3Error::refused(OP, why));
        }
        let b = self.bucket(OP, bucket)?;
        let url = self.sign_object(&b, Method::Head, key, &[], |time| {
            b.head_object(Some(self.credentials()), key)
                .sign_with_time(PRESIGN_EXPIRY, time)
        });
        let answer = self
            .execute(OP, Method::Head, url, &[], Bytes::new())
            .await?;
        Ok(object_head(&answer.headers))
    }

    /// DeleteObject (S3 answers success for a key that does not exist).
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<(), S3Error> {
        const OP: &str = "DeleteObject";
        if let Some(why) = unsendable(key) {
            return Err(S3Error::refused(OP, why));
        }
        let b = self.bucket(OP, bucket)?;
        let url = self.sign_object(&b, Method::Delete, key, &[], |time| {
            b.delete_object(Some(self.credentials()), key)
                .sign_with_time(PRESIGN_EXPIRY, time)
        });
        self.execute(OP, Method::Delete, url, &[], Bytes::new())
            .await?;
        Ok(())
    }

    /// DeleteObjects (at most 1,000 keys, S3's limit): the keys it could not delete. A quiet
    /// request (the reference's) is answered with the failures only, a verbose one with each
    /// deleted key too.
    pub async fn delete_objects<K: AsRef<str>>(
        &self,
        bucket: &str,
        keys: &[K],
        quiet: bool,
    ) -> Result<DeleteObjectsOutput, S3Error> {
        const OP: &str = "DeleteObjects";
        let b = self.bucket(OP, bucket)?;
        let body = xml::delete_request(keys, quiet);
        let md5 = content_md5(body.as_bytes());
        let url = self
            .presign(
                &b,
                Method::Post,
                &[("delete", "")],
                &[("content-md5", &md5)],
            )
            .to_string();
        let answer = self
            .execute(
                OP,
                Method::Post,
                url,
                &[("content-md5".into(), md5.clone())],
                Bytes::from(body),
            )
            .await?;
        xml::delete_result(&answer.body).map_err(|e| S3Error::unreadable(OP, answer.status, &e))
    }

    /// One ListObjectsV2 page.
    pub async fn list_objects_v2(
        &self,
        bucket: &str,
        request: &ListRequest<'_>,
    ) -> Result<ListPage, S3Error> {
        const OP: &str = "ListObjectsV2";
        let b = self.bucket(OP, bucket)?;
        let max_keys = request.max_keys.map(|n| n.to_string());
        // Sorted by name, as signing requires.
        let mut query: Vec<(&str, &str)> = Vec::new();
        if let Some(t) = request.continuation_token {
            query.push(("continuation-token", t));
        }
        if let Some(d) = request.delimiter {
            query.push(("delimiter", d));
        }
        if request.url_encoded_keys {
            query.push(("encoding-type", "url"));
        }
        query.push(("list-type", "2"));
        if let Some(n) = &max_keys {
            query.push(("max-keys", n));
        }
        if let Some(p) = request.prefix {
            query.push(("prefix", p));
        }
        if let Some(a) = request.start_after {
            query.push(("start-after", a));
        }
        let url = self.presign(&b, Method::Get, &query, &[]).to_string();
        let answer = self
            .execute(OP, Method::Get, url, &[], Bytes::new())
            .await?;
        xml::list_page(&answer.body).map_err(|e| S3Error::unreadable(OP, answer.status, &e))
    }

    /// PutBucketLifecycleConfiguration: replaces the bucket's rules with `config`'s.
    pub async fn put_bucket_lifecycle(
        &self,
        bucket: &str,
        lifecycle: &BucketLifecycle,
    ) -> Result<(), S3Error> {
        const OP: &str = "PutBucketLifecycleConfiguration";
        let b = self.bucket(OP, bucket)?;
        let body = lifecycle_xml::to_xml(lifecycle);
        let md5 = content_md5(body.as_bytes());
        let url = self
            .presign(
                &b,
                Method::Put,
                &[("lifecycle", "")],
                &[("content-md5", &md5)],
            )
            .to_string();
        self.execute(
            OP,
            Method::Put,
            url,
            &[("content-md5".into(), md5.clone())],
            Bytes::from(body),
        )
        .await?;
        Ok(())
    }

    /// DeleteBucketLifecycle: the bucket keeps no rules.
    pub async fn delete_bucket_lifecycle(&self, bucket: &str) -> Result<(), S3Error> {
        const OP: &str = "DeleteBucketLifecycle";
        let b = self.bucket(OP, bucket)?;
        let url = self
            .presign(&b, Method::Delete, &[("lifecycle", "")], &[])
            .to_string();
        self.execute(OP, Method::Delete, url, &[], Bytes::new())
            .await?;
        Ok(())
    }

    /// GetBucketLifecycleConfiguration. A bucket without one answers 404
    /// `NoSuchLifecycleConfiguration`.
    pub async fn get_bucket_lifecycle(&self, bucket: &str) -> Result<BucketLifecycle, S3Error> {
        const OP: &str = "GetBucketLifecycleConfiguration";
        let b = self.bucket(OP, bucket)?;
        let url = self
            .presign(&b, Method::Get, &[("lifecycle", "")], &[])
            .to_string();
        let answer = self
            .execute(OP, Method::Get, url, &[], Bytes::new())
            .await?;
        lifecycle_xml::from_xml(&answer.body)
            .map_err(|e| S3Error::unreadable(OP, answer.status, &e))
    }
}

fn header(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn object_head(headers: &http::HeaderMap) -> ObjectHead {
    let metadata = headers
        .iter()
        .filter_map(|(name, value)| {
            let name = name.as_str().strip_prefix("x-amz-meta-")?;
            Some((name.to_string(), value.to_str().ok()?.to_string()))
        })
        .collect();
    ObjectHead {
        content_length: header(headers, "content-length").and_then(|v| v.parse().ok()),
        e_tag: header(headers, "etag"),
        last_modified: header(headers, "last-modified").and_then(|v| xml::http_date(&v)),
        metadata,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_empty_key_is_refused() {
        assert!(unsendable("").is_some());
        for k in [" ", ".", "..", "a/../b", "//", "%2E%2E", "..\\"] {
            assert!(unsendable(k).is_none(), "{k:?}");
        }
    }

    #[test]
    fn content_md5_is_base64_of_the_digest() {
        assert_eq!(content_md5(b""), "1B2M2Y8AsgTpgAmY7PhCfg==");
    }
}

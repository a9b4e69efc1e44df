//! The in-memory S3 store reachable over turmoil's simulated network, and the same S3 client
//! the real tier uses ([`tidemark_reference::s3_client::S3Client`]), connecting through
//! `turmoil::net::TcpStream`.
//!
//! - [`memory_service`]: the s3s service over a [`MemoryS3`], with the harness keys. Build it
//!   once outside the host closure: the service is a cheap clone sharing one store, so the
//!   store's contents survive a host bounce.
//! - [`serve`]: the accept loop (hyper-util's auto server over a `turmoil::net::TcpListener`),
//!   to run as a turmoil host's body.
//! - [`sim_s3_client`]: an [`S3Client`] whose transport ([`TurmoilTransport`]) opens one
//!   simulated TCP connection per request and speaks HTTP/1.1 over it with hyper. The client
//!   never retries, and an operation timeout bounds every call, so a partition is an error
//!   rather than a hang.
//!
//! Requests are signed with the real wall clock (s3s checks the signing time against its own
//! wall clock), so signatures differ between runs; what the world observes does not.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::{S3Service, S3ServiceBuilder};
use tidemark_reference::clock::Clock;
use tidemark_reference::s3_client::{error_chain, read_whole, S3Client, Transport};

use crate::real_tier::faults::{FaultHandle, FaultyS3};
use crate::real_tier::memory_s3::{MemoryHandle, MemoryS3};
use crate::real_tier::server::{ACCESS_KEY, REGION, SECRET_KEY};

/// The port the simulated store listens on.
pub const S3_PORT: u16 = 9000;

/// The s3s service over a fresh in-memory store, with SimpleAuth set to the harness keys, and a
/// handle on the store for seeding and inspection.
pub fn memory_service(clock: Arc<dyn Clock>) -> (S3Service, MemoryHandle) {
    let mem = MemoryS3::new(clock);
    let handle = mem.handle();
    let mut builder = S3ServiceBuilder::new(mem);
    builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
    (builder.build(), handle)
}

/// The s3s service over a fresh in-memory store behind the fault wrapper (faults drawn from
/// `seed`), with a handle on the store and one on its faults.
pub fn faulty_memory_service(
    clock: Arc<dyn Clock>,
    seed: u64,
) -> (S3Service, MemoryHandle, FaultHandle) {
    let mem = MemoryS3::new(clock);
    let handle = mem.handle();
    let faults = FaultHandle::new(seed);
    let mut builder = S3ServiceBuilder::new(FaultyS3::new(mem, faults.clone()));
    builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
    (builder.build(), handle, faults)
}

/// Serves `service` on `0.0.0.0:port` over turmoil's network until the host stops. Call it
/// from inside a turmoil host.
pub async fn serve(service: S3Service, port: u16) -> turmoil::Result {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    let http = ConnBuilder::new(TokioExecutor::new());
    loop {
        let (socket, _) = listener.accept().await?;
        let conn = http
            .serve_connection(TokioIo::new(socket), service.clone())
            .into_owned();
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}

/// The endpoint URL for a store host named `host` listening on `port`.
pub fn endpoint(host: &str, port: u16) -> String {
    format!("http://{host}:{port}")
}

/// A transport over turmoil's simulated TCP: per request, one connection to the URI's host and
/// port, one HTTP/1.1 exchange, and the response body read in full.
#[derive(Debug, Clone, Default)]
pub struct TurmoilTransport;

#[async_trait::async_trait]
impl Transport for TurmoilTransport {
    async fn send(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, String> {
        exchange(request).await
    }
}

async fn exchange(
    mut request: http::Request<bytes::Bytes>,
) -> Result<http::Response<bytes::Bytes>, String> {
    let uri = request.uri().clone();
    let host = uri
        .host()
        .ok_or_else(|| format!("no host in {uri}"))?
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    // hyper's connection-level client sends the request as given: an origin-form target and
    // the Host header the signature covers, as a pooled client would send them.
    if !request.headers().contains_key(http::header::HOST) {
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or(host.as_str());
        let value = http::HeaderValue::from_str(authority).map_err(|e| e.to_string())?;
        request.headers_mut().insert(http::header::HOST, value);
    }
    let target = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    *request.uri_mut() = target
        .parse()
        .map_err(|e: http::uri::InvalidUri| e.to_string())?;
    let stream = turmoil::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("connect to {host}:{port}: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| error_chain(&e))?;
    // The connection task ends when the exchange ends (the sender is dropped) or fails.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let (parts, body) = request.into_parts();
    let response = sender
        .send_request(http::Request::from_parts(parts, Full::new(body)))
        .await
        .map_err(|e| error_chain(&e))?;
    read_whole(response).await
}

/// An S3 client for `endpoint` over turmoil's network, configured as the real tier's
/// [`crate::real_tier::s3_client`] is (path style, harness keys, no retries), with every
/// operation bounded by `operation_timeout` of simulated time. Use it inside a turmoil host or
/// client.
pub fn sim_s3_client(endpoint: &str, operation_timeout: Duration) -> S3Client {
    S3Client::with_transport(
        endpoint,
        REGION,
        ACCESS_KEY,
        SECRET_KEY,
        Arc::new(TurmoilTransport),
    )
    .with_operation_timeout(operation_timeout)
}

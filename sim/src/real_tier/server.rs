//! The harness's S3 stores (on disk, [`DiskS3`], or in memory, [`MemoryS3`]) served in-process
//! over loopback HTTP by s3s behind the fault wrapper, and a real S3 client
//! ([`S3Client`]: rusty-s3 over hyper) pointed at them.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;

use tidemark_reference::clock::{Clock, SystemClock};
use tidemark_reference::s3_client::S3Client;

use super::disk_s3::DiskS3;
use super::faults::{FaultHandle, FaultyS3};
use super::memory_s3::{MemoryHandle, MemoryS3};
use super::RealTierError;

/// The keys the server accepts and the client signs with. Test-only, never secrets.
pub const ACCESS_KEY: &str = "tidemark-access";
pub const SECRET_KEY: &str = "tidemark-secret-key";
pub const REGION: &str = "us-east-1";

/// A running S3 server. Stops (its accept loop is aborted and its open connections dropped)
/// when dropped; the root directory belongs to the caller.
pub struct S3Server {
    addr: SocketAddr,
    faults: FaultHandle,
    task: tokio::task::JoinHandle<()>,
}

impl S3Server {
    /// Serves `root` (a directory; each bucket is a subdirectory) with [`DiskS3`] on 127.0.0.1
    /// at a free port, LastModified from the system clock as on S3. Must be called inside a
    /// Tokio runtime.
    pub async fn start(root: &Path, seed: u64) -> Result<S3Server, RealTierError> {
        S3Server::start_disk(root, Arc::new(SystemClock), seed).await
    }

    /// As [`S3Server::start`], LastModified from `clock`.
    pub async fn start_disk(
        root: &Path,
        clock: Arc<dyn Clock>,
        seed: u64,
    ) -> Result<S3Server, RealTierError> {
        let disk = DiskS3::new(root, clock).map_err(|e| RealTierError::S3Server {
            message: format!("S3 store over {}: {e}", root.display()),
        })?;
        let faults = FaultHandle::new(seed);
        S3Server::serve(FaultyS3::new(disk, faults.clone()), faults).await
    }

    /// Serves an in-memory store (see [`MemoryS3`]) behind the same fault wrapper.
    pub async fn start_memory(
        clock: Arc<dyn Clock>,
        seed: u64,
    ) -> Result<(S3Server, MemoryHandle), RealTierError> {
        let mem = MemoryS3::new(clock);
        let handle = mem.handle();
        let faults = FaultHandle::new(seed);
        let server = S3Server::serve(FaultyS3::new(mem, faults.clone()), faults).await?;
        Ok((server, handle))
    }

    async fn serve<T: s3s::S3>(
        s3: FaultyS3<T>,
        faults: FaultHandle,
    ) -> Result<S3Server, RealTierError> {
        let mut builder = S3ServiceBuilder::new(s3);
        builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        let service = builder.build();
        let listener =
            TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|e| RealTierError::S3Server {
                    message: format!("bind 127.0.0.1: {e}"),
                })?;
        let addr = listener.local_addr().map_err(|e| RealTierError::S3Server {
            message: e.to_string(),
        })?;
        let task = tokio::spawn(async move {
            let http = ConnBuilder::new(TokioExecutor::new());
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    // Out of descriptors or a reset: back off instead of spinning.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                let conn = http
                    .serve_connection(TokioIo::new(socket), service.clone())
                    .into_owned();
                // Connections live in this JoinSet, so aborting the server task drops them.
                conns.spawn(async move {
                    let _ = conn.await;
                });
                while conns.try_join_next().is_some() {}
            }
        });
        Ok(S3Server { addr, faults, task })
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn faults(&self) -> &FaultHandle {
        &self.faults
    }

    /// A client for this server.
    pub fn client(&self) -> S3Client {
        s3_client(&self.endpoint())
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An S3 client for any S3 endpoint speaking plain HTTP, signing with the harness keys.
/// Path-style addressing, because a loopback address has no bucket subdomains. The client never
/// retries (a retry would hide injected faults): the reference retries a throttle (503) itself
/// and reports every other failed request (SPEC SC-8.4).
pub fn s3_client(endpoint: &str) -> S3Client {
    s3_client_with(endpoint, REGION, ACCESS_KEY, SECRET_KEY)
}

/// As [`s3_client`], with the region and keys given (an implementation in another process is
/// handed them in its init message).
pub fn s3_client_with(
    endpoint: &str,
    region: &str,
    access_key_id: &str,
    secret_access_key: &str,
) -> S3Client {
    S3Client::new(endpoint, region, access_key_id, secret_access_key)
}

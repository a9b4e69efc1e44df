//! The real tier: the reference implementation against an S3 store on disk served over loopback
//! HTTP behind a fault-injecting wrapper, and a real PostgreSQL.
//!
//! - [`disk_s3`]: the S3 store over a directory, holding every key S3 allows.
//! - [`memory_s3`]: the same in memory, for simulation and scale.
//! - [`s3_shared`]: what both stores share (key rules, ETag, the body's bound, the answers to
//!   PUT, GET, HEAD and DeleteObjects, the ListObjectsV2 page).
//! - [`faults`]: the fault-injecting `s3s::S3` wrapper (errors, latency, partial DeleteObjects,
//!   store down) that also stores lifecycle configuration.
//! - [`server`]: the in-process server and an S3 client for it.
//! - [`pg`]: PostgreSQL from `DATABASE_URL`, an ephemeral cluster, or (detected) Docker.
//! - [`pg_cluster`]: an ephemeral cluster from local PostgreSQL binaries, started and stopped.
//! - [`pg_reap`]: databases of killed runs on a shared server, told apart by advisory locks.
//! - [`pg_template`]: the cached `initdb` output an ephemeral cluster starts from.
//! - [`remote`]: the scoped profile split where the process protocol splits it.
//! - [`model`]: seeded random operation sequences checked against a model of SPEC part SC.

pub mod disk_s3;
pub mod docker_api;
pub mod faults;
pub mod memory_s3;
pub mod pg;
pub mod pg_cluster;
pub mod pg_container;
pub mod pg_reap;
pub mod pg_source;
pub mod pg_template;
pub mod s3_shared;
pub mod server;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tidemark_reference::clock::Clock;
use tidemark_reference::scoped::{ScopedConfig, ScopedError, ScopedStore};

pub use disk_s3::DiskS3;
pub use faults::{FaultHandle, FaultPlan};
pub use memory_s3::{MemoryHandle, MemoryS3};
pub use pg::{PgProvider, PgSourceKind, TestDatabase};
pub use server::{s3_client, S3Server};

#[derive(Debug, thiserror::Error)]
pub enum RealTierError {
    #[error("no PostgreSQL available; tried, in order:\n  - {}", reasons.join("\n  - "))]
    NoPostgres { reasons: Vec<String> },
    #[error("PostgreSQL: {message}")]
    Postgres { message: String },
    #[error("S3 server: {message}")]
    S3Server { message: String },
    #[error("S3 client: {message}")]
    S3Client { message: String },
    #[error(transparent)]
    Scoped(#[from] ScopedError),
}

/// One running real tier: an S3 server over a temporary directory and a PostgreSQL provider.
/// Dropping it stops the server, stops an ephemeral cluster and removes both directories.
pub struct RealTier {
    // Field order is drop order: the server stops before its directory goes.
    pub s3: S3Server,
    /// Shared: many tiers (one S3 server each, so faults stay per scenario) may use one
    /// PostgreSQL server, each scenario in its own database.
    pub pg: Arc<PgProvider>,
    root: crate::owner::OwnedDir,
    /// Buckets handed out on this tier's server so far.
    buckets: AtomicU64,
}

impl RealTier {
    pub async fn start(seed: u64) -> Result<RealTier, RealTierError> {
        let root = crate::owner::tempdir("tidemark-s3-").map_err(|e| RealTierError::S3Server {
            message: format!("temporary directory: {e}"),
        })?;
        let pg = Arc::new(PgProvider::from_environment().await?);
        RealTier::start_with(pg, seed, root).await
    }

    /// A tier with its own S3 server over a fresh directory, on an existing PostgreSQL.
    pub async fn with_postgres(pg: Arc<PgProvider>, seed: u64) -> Result<RealTier, RealTierError> {
        let root = crate::owner::tempdir("tidemark-s3-").map_err(|e| RealTierError::S3Server {
            message: format!("temporary directory: {e}"),
        })?;
        RealTier::start_with(pg, seed, root).await
    }

    /// A tier whose S3 server is the in-memory store (same fault wrapper, same HTTP path), on
    /// an existing PostgreSQL: the other half of the differential check against the disk store.
    pub async fn with_postgres_memory(
        pg: Arc<PgProvider>,
        seed: u64,
    ) -> Result<RealTier, RealTierError> {
        let root = crate::owner::tempdir("tidemark-s3-").map_err(|e| RealTierError::S3Server {
            message: format!("temporary directory: {e}"),
        })?;
        // LastModified of the in-memory store comes from this clock; the scoped reference
        // stamps its own write times, so a fixed instant is enough.
        let clock = Arc::new(tidemark_reference::clock::ManualClock::starting_at(
            crate::clock::EPOCH,
        ));
        let (s3, _) = S3Server::start_memory(clock, seed).await?;
        Ok(RealTier {
            s3,
            pg,
            root,
            buckets: AtomicU64::new(0),
        })
    }

    async fn start_with(
        pg: Arc<PgProvider>,
        seed: u64,
        root: crate::owner::OwnedDir,
    ) -> Result<RealTier, RealTierError> {
        let s3 = S3Server::start(root.path(), seed).await?;
        Ok(RealTier {
            s3,
            pg,
            root,
            buckets: AtomicU64::new(0),
        })
    }

    pub fn root(&self) -> &std::path::Path {
        self.root.path()
    }

    /// A bucket name not yet used on this tier's server (see [`bucket_name`]).
    pub fn next_bucket_name(&self) -> String {
        bucket_name(self.buckets.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Creates a bucket through the client (so the request path is exercised too).
    pub async fn create_bucket(&self, bucket: &str) -> Result<(), RealTierError> {
        self.s3
            .client()
            .create_bucket(bucket)
            .await
            .map_err(|e| RealTierError::S3Client {
                message: format!("CreateBucket {bucket}: {e}"),
            })?;
        Ok(())
    }

    /// A scoped store on a fresh bucket and a fresh database, for one scenario.
    pub async fn scoped_store(
        &self,
        name: &str,
        mut config: ScopedConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<(ScopedStore, TestDatabase), RealTierError> {
        let db = self.pg.scoped_database(name).await?;
        let bucket = self.next_bucket_name();
        self.create_bucket(&bucket).await?;
        config.bucket = bucket;
        let store = ScopedStore::open(self.s3.client(), db.pool.clone(), config, clock).await?;
        Ok((store, db))
    }
}

/// The bucket for the `n`-th store on a server (1-based): `tidemark-<n>`. Short and fixed, so
/// a key's room never depends on a scenario's file name or a database's name (S3 caps the key,
/// not the bucket and key together, but a store that keeps both in one name, as s3s-fs did,
/// would not), and unique per server, which is all S3 asks.
pub fn bucket_name(n: u64) -> String {
    format!("tidemark-{n}")
}

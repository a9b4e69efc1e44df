//! Which PostgreSQL a run uses ([`PgProvider::from_environment`]).
//!
//! Without [`SOURCE_ENV`] (or with `auto`), in this order:
//!
//! 1. `DATABASE_URL`: the user named a server; nothing is guessed past an explicit choice (a
//!    set but unreachable `DATABASE_URL` is an error, not a reason to fall through).
//! 2. The ephemeral local cluster (`initdb` + `postgres` from the host's binaries): no daemon,
//!    no image, ready in about a second, and it stops with the run by itself (parent-death
//!    signal) even when the run is killed.
//! 3. A Docker container (through [`docker_api`](super::docker_api), our Docker API client):
//!    needs a Docker daemon and the local image (`scripts/build-pg-image.sh`); it starts as
//!    fast, but a killed run's container outlives it until the next run reaps it, so it comes
//!    last among the automatic choices.
//!
//! With none available, the error names each source and why it was not used. [`SOURCE_ENV`]
//! forces one (`url`, `cluster`, `container`): CI runs the scoped suite on each, and a forced
//! source that cannot serve is an error naming the step that failed, never a fall-through.

use super::pg::{find_pg_bin, PgProvider, PgSourceKind};
use super::pg_cluster::EphemeralCluster;
use super::pg_container::PgContainer;
use super::RealTierError;

/// Forces one PostgreSQL source: `auto` (the default), `url`, `cluster` or `container`.
pub const SOURCE_ENV: &str = "TIDEMARK_PG_SOURCE";

/// A value of [`SOURCE_ENV`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceChoice {
    Auto,
    Url,
    Cluster,
    Container,
}

impl SourceChoice {
    /// [`SOURCE_ENV`] read and checked; unset or empty is `Auto`.
    pub fn from_env() -> Result<SourceChoice, RealTierError> {
        match std::env::var(SOURCE_ENV) {
            Ok(v) => SourceChoice::parse(&v),
            Err(_) => Ok(SourceChoice::Auto),
        }
    }

    pub fn parse(value: &str) -> Result<SourceChoice, RealTierError> {
        match value.trim() {
            "" | "auto" => Ok(SourceChoice::Auto),
            "url" => Ok(SourceChoice::Url),
            "cluster" => Ok(SourceChoice::Cluster),
            "container" => Ok(SourceChoice::Container),
            other => Err(RealTierError::Postgres {
                message: format!(
                    "{SOURCE_ENV}={other:?}: expected one of auto, url, cluster, container"
                ),
            }),
        }
    }
}

impl PgProvider {
    /// The source [`SOURCE_ENV`] forces, or the first available in the order of the module
    /// doc; otherwise an error naming every source and why each was unavailable.
    pub async fn from_environment() -> Result<PgProvider, RealTierError> {
        let forced = |source: &str, e: String| RealTierError::Postgres {
            message: format!("{SOURCE_ENV}={source}: {e}"),
        };
        match SourceChoice::from_env()? {
            SourceChoice::Url => match database_url() {
                Some(url) => PgProvider::from_url(&url).await,
                None => Err(forced("url", "DATABASE_URL is not set".into())),
            },
            SourceChoice::Cluster => PgProvider::from_cluster()
                .await
                .map_err(|e| forced("cluster", e)),
            SourceChoice::Container => PgProvider::from_container()
                .await
                .map_err(|e| forced("container", e)),
            SourceChoice::Auto => {
                let mut reasons = Vec::new();
                match database_url() {
                    Some(url) => return PgProvider::from_url(&url).await,
                    None => reasons.push("DATABASE_URL: not set".to_string()),
                }
                match PgProvider::from_cluster().await {
                    Ok(p) => return Ok(p),
                    Err(e) => reasons.push(format!("ephemeral cluster: {e}")),
                }
                match PgProvider::from_container().await {
                    Ok(p) => return Ok(p),
                    Err(e) => reasons.push(format!("Docker container: {e}")),
                }
                Err(RealTierError::NoPostgres { reasons })
            }
        }
    }

    /// An ephemeral cluster from the host's binaries.
    pub async fn from_cluster() -> Result<PgProvider, String> {
        let bin = find_pg_bin()?;
        let cluster = EphemeralCluster::start(&bin)
            .await
            .map_err(|e| format!("from {}: {e}", bin.display()))?;
        let admin = cluster.connect_options();
        Ok(PgProvider::local(
            admin,
            PgSourceKind::EphemeralCluster { bin_dir: bin },
            Some(cluster),
            None,
        ))
    }

    /// A container of [`pg_container::image_name`], started through the Docker API.
    pub async fn from_container() -> Result<PgProvider, String> {
        let container = PgContainer::start().await.map_err(|e| e.to_string())?;
        let admin = container.connect_options();
        let kind = PgSourceKind::Container {
            image: container.image().to_string(),
        };
        Ok(PgProvider::local(admin, kind, None, Some(container)))
    }
}

fn database_url() -> Option<String> {
    std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_choice_accepts_the_four_names_and_rejects_others_naming_them() {
        assert_eq!(SourceChoice::parse("").unwrap(), SourceChoice::Auto);
        assert_eq!(SourceChoice::parse("auto").unwrap(), SourceChoice::Auto);
        assert_eq!(SourceChoice::parse("url").unwrap(), SourceChoice::Url);
        assert_eq!(
            SourceChoice::parse("cluster").unwrap(),
            SourceChoice::Cluster
        );
        assert_eq!(
            SourceChoice::parse("container").unwrap(),
            SourceChoice::Container
        );
        let e = SourceChoice::parse("docker").unwrap_err().to_string();
        assert_eq!(
            e,
            "PostgreSQL: TIDEMARK_PG_SOURCE=\"docker\": expected one of auto, url, cluster, container"
        );
    }
}

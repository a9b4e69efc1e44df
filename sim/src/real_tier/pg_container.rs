//! PostgreSQL in a Docker container started through our own Docker API client
//! ([`docker_api`](super::docker_api)): the third source of
//! [`PgProvider`](super::PgProvider), after `DATABASE_URL` and the ephemeral local cluster.
//!
//! The image is local (no registry is reachable here): `scripts/build-pg-image.sh` builds
//! [`DEFAULT_IMAGE`] from the host's PostgreSQL 15 files, with a cluster made at build time, so
//! a container only starts the server. [`IMAGE_ENV`] names another image.
//!
//! Ownership, so no container outlives its run (see [`crate::owner`]):
//! - every container carries the label [`OWNER_LABEL`]`=<token>` from the moment it is created,
//!   and [`START_LABEL`] naming this start, so a start that fails half-way removes what it made;
//! - [`PgContainer`]'s `Drop` removes it (normal end, and an interrupted run's cancelled
//!   command);
//! - [`remove_own_containers`] removes every container of this run: the `tidemark` binary's
//!   signal sweep and its exit call it;
//! - [`reap_dead_containers`] removes containers whose run is dead (its lock is free: it was
//!   killed with SIGKILL). Every container start runs it first, and so does the `tidemark`
//!   binary at its start, before `reap::reap_dead_runs` (which forgets a dead run's lock file
//!   once its directories are gone; after that its containers would be of an unknown owner).
//!
//! The client is a few calls over the daemon's Unix socket with hyper, already in the build
//! (issue 25): testcontainers pulled in a gRPC stack, protobufs and rustls with ring, and
//! bollard alone cost about 22 s of build CPU in generated API models. The steps are the few
//! below: create, start, follow the logs to the ready line, read the published port, remove.
//!
//! API version (issue 12): every request names Docker API 1.41
//! ([`docker_api::API_VERSION`](super::docker_api::API_VERSION)), the highest Debian's dockerd
//! 20.10 accepts; newer daemons still serve it. The test
//! `sim/tests/integration/real_tier_container.rs` starts a container through it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use serde_json::{json, Value};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

use super::docker_api::{ApiError, Docker, LogFrames};
use crate::owner;

/// The image `scripts/build-pg-image.sh` builds.
pub const DEFAULT_IMAGE: &str = "tidemark-postgres:15";
/// Names another image (`name:tag`) to run instead of [`DEFAULT_IMAGE`].
pub const IMAGE_ENV: &str = "TIDEMARK_PG_IMAGE";
/// The label naming the run that owns a container (its owner token).
pub const OWNER_LABEL: &str = "tidemark.owner";
/// The label naming one start (`<token>-<n>`), to remove what a failed start left.
pub const START_LABEL: &str = "tidemark.start";
/// The server's port inside the container, as Docker names it.
const PORT: &str = "5432/tcp";
/// What the server prints once it accepts connections.
const READY_LINE: &str = "database system is ready to accept connections";
/// Bounds each Docker call of a reap or a sweep, so a stuck daemon cannot hold a run.
const DOCKER_CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a container gets to print its ready line (a cold daemon on a busy machine).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Set once this process started a container: only then does its exit look for its own.
static STARTED_ANY: AtomicBool = AtomicBool::new(false);
static STARTS: AtomicU64 = AtomicU64::new(0);

/// The image to run: [`IMAGE_ENV`], else [`DEFAULT_IMAGE`].
pub fn image_name() -> String {
    std::env::var(IMAGE_ENV)
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_IMAGE.to_string())
}

/// The daemon's Unix socket: `DOCKER_HOST` (`unix://...`), else /var/run/docker.sock.
pub fn docker_socket() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(str::to_string))
        .unwrap_or_else(|| "/var/run/docker.sock".to_string())
}

/// Whether something listens on the daemon's socket (no request is made).
pub fn daemon_socket_answers() -> Result<(), String> {
    let socket = docker_socket();
    std::os::unix::net::UnixStream::connect(&socket)
        .map(|_| ())
        .map_err(|e| format!("no Docker daemon answers at {socket} ({e})"))
}

/// A step of starting a container, named in its error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    ReachDaemon,
    FindImage,
    CreateContainer,
    StartContainer,
    WaitReady,
    ReadPort,
    Connect,
}

impl Step {
    fn describe(self) -> &'static str {
        match self {
            Step::ReachDaemon => "reaching the Docker daemon",
            Step::FindImage => "finding the image",
            Step::CreateContainer => "creating the container",
            Step::StartContainer => "starting the container",
            Step::WaitReady => "waiting for the server's ready line",
            Step::ReadPort => "reading the published port",
            Step::Connect => "connecting to the server in the container",
        }
    }
}

/// Why a container could not serve: the step that failed, the image, and what was said.
#[derive(Debug, thiserror::Error)]
#[error("{} (image {image}): {detail}", step.describe())]
pub struct ContainerError {
    pub step: Step,
    pub image: String,
    pub detail: String,
}

/// A running PostgreSQL container of this run, removed when dropped.
pub struct PgContainer {
    /// The container's id; empty once removed.
    id: String,
    image: String,
    port: u16,
}

impl PgContainer {
    /// Reaps containers of dead runs, then starts [`image_name`] with this run's labels, waits
    /// for its ready line and for a connection on the loopback port it is published on.
    pub async fn start() -> Result<PgContainer, ContainerError> {
        PgContainer::start_image(&image_name()).await
    }

    /// Like [`start`](Self::start), with the image (`name:tag`) given.
    pub async fn start_image(image: &str) -> Result<PgContainer, ContainerError> {
        let image = image.to_string();
        let fail = |step: Step, detail: String| ContainerError {
            step,
            image: image.clone(),
            detail,
        };
        daemon_socket_answers().map_err(|e| fail(Step::ReachDaemon, e))?;
        let docker = client();
        bounded(docker.ping())
            .await
            .map_err(|e| fail(Step::ReachDaemon, e.into()))?;
        report_reaped(reap_dead_containers_with(&docker).await);
        match bounded(docker.inspect_image(&image)).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {
                return Err(fail(
                    Step::FindImage,
                    format!(
                        "the daemon has no such image; build it with scripts/build-pg-image.sh \
                         (no image registry is reachable to pull one) ({e})"
                    ),
                ))
            }
            Err(e) => return Err(fail(Step::FindImage, e.into())),
        }
        let token = owner::Owner::current().token().to_string();
        let start_id = format!("{token}-{}", STARTS.fetch_add(1, Ordering::SeqCst));
        STARTED_ANY.store(true, Ordering::SeqCst);
        let labels = BTreeMap::from([
            (OWNER_LABEL.to_string(), token),
            (START_LABEL.to_string(), start_id.clone()),
        ]);
        let body = json!({
            "Image": image,
            "Labels": labels,
            "ExposedPorts": { PORT: {} },
            "HostConfig": {
                // Published on the host's loopback only: the cluster trusts every client. An
                // empty host port asks the daemon for an ephemeral one.
                "PublishAllPorts": false,
                "PortBindings": { PORT: [{ "HostIp": "127.0.0.1", "HostPort": "" }] },
            },
        });
        let created = bounded(docker.create_container(&body)).await;
        let mut out = PgContainer {
            id: String::new(),
            image: image.clone(),
            port: 0,
        };
        // From here on a failure drops `out`, which removes the container; a container the
        // daemon made but whose id never came back is removed by this start's label.
        match created {
            Ok(id) => out.id = id,
            Err(e) => {
                let _ = remove_labelled(&docker, &format!("{START_LABEL}={start_id}")).await;
                return Err(fail(Step::CreateContainer, e.into()));
            }
        }
        bounded(docker.start_container(&out.id))
            .await
            .map_err(|e| fail(Step::StartContainer, e.into()))?;
        wait_for_ready_line(&docker, &out.id)
            .await
            .map_err(|e| fail(Step::WaitReady, e))?;
        out.port = published_port(&docker, &out.id)
            .await
            .map_err(|e| fail(Step::ReadPort, e))?;
        out.wait_connectable(Duration::from_secs(20))
            .await
            .map_err(|e| fail(Step::Connect, e))?;
        Ok(out)
    }

    /// The host port (on 127.0.0.1) the server is published on.
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn image(&self) -> &str {
        &self.image
    }

    /// The container's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn connect_options(&self) -> PgConnectOptions {
        PgConnectOptions::new()
            .host("127.0.0.1")
            .port(self.port)
            .username("postgres")
            .database("postgres")
    }

    /// The ready line comes from inside the container; the published port (docker-proxy) may
    /// take a moment longer to carry connections.
    async fn wait_connectable(&self, limit: Duration) -> Result<(), String> {
        let start = Instant::now();
        loop {
            match self.connect_options().connect().await {
                Ok(c) => {
                    let _ = c.close().await;
                    return Ok(());
                }
                Err(e) if start.elapsed() > limit => {
                    return Err(format!("127.0.0.1:{}: {e}", self.port))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

impl Drop for PgContainer {
    fn drop(&mut self) {
        let id = std::mem::take(&mut self.id);
        if id.is_empty() {
            return;
        }
        // This Drop may run outside a runtime or on a runtime's only thread (which it must not
        // block on itself), so the removal gets a thread, a runtime and a client of its own.
        if let Err(e) = blocking(async move { remove(&client(), &id).await }) {
            eprintln!("tidemark: removing the PostgreSQL container: {e}");
        }
    }
}

/// Follows the container's stdout and stderr until the server's ready line, for at most
/// [`STARTUP_TIMEOUT`]. A container that exits first ends the stream: an error, with the
/// last of what it printed.
async fn wait_for_ready_line(docker: &Docker, id: &str) -> Result<(), String> {
    // Everything printed so far: the line may arrive split across frames.
    let mut printed = String::new();
    let follow = async {
        let mut logs = docker.follow_logs(id).await?;
        let mut frames = LogFrames::new();
        while let Some(part) = logs.frame().await {
            let part = part.map_err(|e| format!("reading the container's logs: {e}"))?;
            let Ok(chunk) = part.into_data() else {
                continue; // trailers: none expected
            };
            frames.push(&chunk);
            while let Some((_, payload)) = frames.next_frame()? {
                printed.push_str(&String::from_utf8_lossy(&payload));
                if printed.contains(READY_LINE) {
                    return Ok(());
                }
            }
        }
        let tail: Vec<&str> = printed.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "the container stopped before printing {READY_LINE:?}; its last lines: {}",
            tail.join(" | ")
        ))
    };
    match tokio::time::timeout(STARTUP_TIMEOUT, follow).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "no {READY_LINE:?} within {} s",
            STARTUP_TIMEOUT.as_secs()
        )),
    }
}

/// The host port the daemon published [`PORT`] on (on 127.0.0.1).
async fn published_port(docker: &Docker, id: &str) -> Result<u16, String> {
    let inspected = bounded(docker.inspect_container(id)).await?;
    published_host_port(&inspected).ok_or_else(|| {
        format!(
            "{PORT} is not published: {}",
            inspected["NetworkSettings"]["Ports"]
        )
    })
}

/// The first host port in an inspected container's `NetworkSettings.Ports[PORT]`.
fn published_host_port(inspected: &Value) -> Option<u16> {
    inspected["NetworkSettings"]["Ports"][PORT]
        .as_array()?
        .iter()
        .filter_map(|b| b["HostPort"].as_str())
        .find_map(|p| p.parse::<u16>().ok())
}

fn client() -> Docker {
    Docker::new(docker_socket())
}

async fn bounded<T>(
    call: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    match tokio::time::timeout(DOCKER_CALL_TIMEOUT, call).await {
        Ok(r) => r,
        Err(_) => Err(ApiError::unanswered(format!(
            "the Docker daemon did not answer within {} s",
            DOCKER_CALL_TIMEOUT.as_secs()
        ))),
    }
}

/// Containers (running or not) carrying `label` (`key` or `key=value`): (id, owner token).
async fn labelled(docker: &Docker, label: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = bounded(docker.list_labelled(label))
        .await?
        .iter()
        .filter_map(|c| {
            let owner = c["Labels"][OWNER_LABEL].as_str()?;
            Some((c["Id"].as_str()?.to_string(), owner.to_string()))
        })
        .collect();
    out.sort();
    Ok(out)
}

async fn remove(docker: &Docker, id: &str) -> Result<(), String> {
    match bounded(docker.remove_container(id)).await {
        Ok(()) => Ok(()),
        // Someone else (its own Drop, another reaper) removed it first.
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(format!("removing container {id}: {e}")),
    }
}

async fn remove_labelled(docker: &Docker, label: &str) -> Result<Vec<String>, String> {
    let mut removed = Vec::new();
    for (id, _) in labelled(docker, label).await? {
        remove(docker, &id).await?;
        removed.push(id);
    }
    Ok(removed)
}

/// Removes every container of a run whose owner is dead (see [`owner::Liveness`]): never this
/// run's, a live run's, or one of an unknown owner. Returns the ids removed, sorted. A daemon
/// that does not answer means nothing to reap.
pub async fn reap_dead_containers() -> Result<Vec<String>, String> {
    if daemon_socket_answers().is_err() {
        return Ok(Vec::new());
    }
    reap_dead_containers_with(&client()).await
}

async fn reap_dead_containers_with(docker: &Docker) -> Result<Vec<String>, String> {
    let mut removed = Vec::new();
    for (id, token) in labelled(docker, OWNER_LABEL).await? {
        // Held while removing, so no other reaper judges the run meanwhile (nor forgets its
        // lock file, which must outlive its containers).
        let Some(_dead) = owner::claim_dead(&token) else {
            continue;
        };
        remove(docker, &id).await?;
        removed.push(id);
    }
    Ok(removed)
}

/// Removes every container carrying this run's token: an interrupted run's sweep, and a
/// normal exit's check that every `Drop` ran. Returns how many were removed.
pub async fn remove_own_containers() -> Result<usize, String> {
    if daemon_socket_answers().is_err() {
        return Ok(0);
    }
    let docker = client();
    let label = format!("{OWNER_LABEL}={}", owner::Owner::current().token());
    Ok(remove_labelled(&docker, &label).await?.len())
}

/// Whether this process has started a container (so its exit should look for leftovers).
pub fn started_any() -> bool {
    STARTED_ANY.load(Ordering::SeqCst)
}

/// Containers carrying an owner label, as (id, token), sorted: for tests and diagnostics.
pub async fn run_containers() -> Result<Vec<(String, String)>, String> {
    daemon_socket_answers()?;
    labelled(&client(), OWNER_LABEL).await
}

/// Runs `work` on a thread with its own runtime: for callers that are not async (the binary's
/// start and exit), or that are inside a runtime they must not block.
pub fn blocking<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T, String>> + Send + 'static,
) -> Result<T, String> {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(work)
    })
    .join()
    .map_err(|_| "the Docker cleanup thread panicked".to_string())?
}

/// One line on stderr about a reap: what was removed, or why it could not be.
pub fn report_reaped(result: Result<Vec<String>, String>) {
    match result {
        Ok(ids) if ids.is_empty() => {}
        Ok(ids) => eprintln!(
            "tidemark: removed {} PostgreSQL container(s) left by runs that were killed: {}",
            ids.len(),
            ids.iter()
                .map(|i| &i[..i.len().min(12)])
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(e) => eprintln!("tidemark: could not reap containers of killed runs: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_start_names_its_step_and_the_image() {
        let e = ContainerError {
            step: Step::StartContainer,
            image: "tidemark-postgres:15".into(),
            detail: "exec: \"/x\": no such file".into(),
        };
        assert_eq!(
            e.to_string(),
            "starting the container (image tidemark-postgres:15): exec: \"/x\": no such file"
        );
    }

    #[test]
    fn the_published_port_is_read_from_the_inspected_containers_bindings() {
        let inspected = json!({ "NetworkSettings": { "Ports": {
            "5432/tcp": [{ "HostIp": "127.0.0.1", "HostPort": "49153" }],
        } } });
        assert_eq!(published_host_port(&inspected), Some(49153));
        let unpublished = json!({ "NetworkSettings": { "Ports": { "5432/tcp": null } } });
        assert_eq!(published_host_port(&unpublished), None);
    }
}

//! The ephemeral PostgreSQL cluster: a server started from local PostgreSQL binaries in a
//! temporary directory owned by this run (as the `postgres` account when run as root), stopped
//! with its parent and removed when dropped. Apart from `pg.rs` (the provider and its pool of
//! databases, whichever source they come from) because starting and stopping a server is its
//! own job; `pg_source.rs` decides when a cluster is the source.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

use super::pg::PG_BIN_ROOT;

/// Finds the newest `<root>/<version>/bin` holding `initdb` and `postgres`, or `TIDEMARK_PG_BIN`.
pub(super) fn find_pg_bin() -> Result<PathBuf, String> {
    if let Ok(dir) = std::env::var("TIDEMARK_PG_BIN") {
        let p = PathBuf::from(dir);
        return if p.join("initdb").is_file() {
            Ok(p)
        } else {
            Err(format!("TIDEMARK_PG_BIN={} has no initdb", p.display()))
        };
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(PG_BIN_ROOT)
        .map_err(|e| format!("no binaries under {PG_BIN_ROOT}: {e}"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("postgres").is_file()).then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, p)| p)
        .ok_or_else(|| format!("no <version>/bin/initdb under {PG_BIN_ROOT}"))
}

/// The uid and gid of the `postgres` account, from /etc/passwd.
fn postgres_account() -> Result<(u32, u32), String> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| e.to_string())?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 3 && f[0] == "postgres")
                .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
                .flatten()
        })
        .ok_or_else(|| "running as root and there is no postgres account to drop to".to_string())
}

fn running_as_root() -> bool {
    // The owner of /proc/self is the effective uid; no libc needed.
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// A PostgreSQL cluster in a temporary directory, owned by this process.
pub struct EphemeralCluster {
    dir: Option<crate::owner::OwnedDir>,
    child: Option<Child>,
    port: u16,
    /// Where the server's Unix socket is, when its path fits in a socket address.
    socket_dir: Option<PathBuf>,
}

impl EphemeralCluster {
    pub async fn start(bin: &Path) -> Result<EphemeralCluster, String> {
        let run_as = if running_as_root() {
            Some(postgres_account()?)
        } else {
            None
        };
        // In the scratch base (memory-backed where there is one): a throwaway cluster never
        // needs its files to survive the machine, and on disk its writes queue behind every
        // other process's writeback. Owned by this run from its first instant: a later run stops
        // the cluster and removes it if this run is killed.
        let dir = crate::owner::tempdir_in(&crate::owner::scratch_base(), "tidemark-pg-")
            .map_err(|e| e.to_string())?;
        let data = dir.path().join("data");
        let socket_dir = dir.path().join("sock");
        std::fs::create_dir(&socket_dir).map_err(|e| e.to_string())?;
        if let Some((uid, gid)) = run_as {
            for p in [dir.path(), socket_dir.as_path()] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid))
                    .map_err(|e| format!("chown {}: {e}", p.display()))?;
            }
        }
        const INITDB_ARGS: [&str; 7] = [
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ];
        let template = super::pg_template::template_path(bin, &INITDB_ARGS, run_as);
        let copied = match &template {
            Some(t) if super::pg_template::is_ready(t) => {
                let data = data.clone();
                let t = t.clone();
                tokio::task::spawn_blocking(move || super::pg_template::copy_tree(&t, &data))
                    .await
                    .map_err(|e| e.to_string())?
                    .is_ok()
            }
            _ => false,
        };
        if !copied {
            let _ = std::fs::remove_dir_all(&data);
            let mut initdb = Command::new(bin.join("initdb"));
            initdb
                .arg("-D")
                .arg(&data)
                .args(INITDB_ARGS)
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                // Carries the run's token, so a signal's sweep kills an initdb still writing
                // into the cluster's directory before it removes that directory.
                .env(
                    crate::owner::RUN_ENV,
                    crate::owner::Owner::current().run_env_value(0),
                );
            as_user(&mut initdb, run_as);
            let out = tokio::task::spawn_blocking(move || initdb.output())
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("initdb: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "initdb failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            if let Some(t) = &template {
                let (data, t) = (data.clone(), t.clone());
                tokio::task::spawn_blocking(move || super::pg_template::save(&data, &t))
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        let mut last_err = String::new();
        // A free port can be taken between probing and binding; try a few.
        for _ in 0..5 {
            let port = free_port().map_err(|e| e.to_string())?;
            let mut cluster = EphemeralCluster {
                dir: None,
                child: None,
                port,
                // sun_path holds 108 bytes with its NUL; the name adds `/.s.PGSQL.<port>`.
                socket_dir: (socket_dir.as_os_str().len() + 17 < 108).then(|| socket_dir.clone()),
            };
            let mut postgres = Command::new(bin.join("postgres"));
            postgres
                .arg("-D")
                .arg(&data)
                .arg("-p")
                .arg(port.to_string())
                .arg("-k")
                .arg(&socket_dir)
                // No fsync, no waiting for the WAL flush at commit, no full-page images: these
                // only protect data across a crash of the machine, and a throwaway cluster's
                // data is worthless once its run ends (a crashed run starts a new cluster).
                // What a transaction sees is unchanged, so the traces are too.
                .args([
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "max_connections=200",
                    // Dynamic shared memory as files in the data directory rather than
                    // /dev/shm/PostgreSQL.*, which a killed postmaster leaves behind; the
                    // directory goes with the cluster.
                    "-c",
                    "dynamic_shared_memory_type=mmap",
                ])
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            as_user(&mut postgres, run_as);
            stop_with_parent(&mut postgres);
            cluster.child = Some(spawn_lasting(postgres).map_err(|e| format!("postgres: {e}"))?);
            match cluster.wait_ready(Duration::from_secs(20)).await {
                Ok(()) => {
                    cluster.dir = Some(dir);
                    return Ok(cluster);
                }
                Err(e) => last_err = e, // cluster dropped here: the child is stopped
            }
        }
        Err(format!("postgres did not start: {last_err}"))
    }

    /// The harness's own connections go through the Unix socket: a round trip costs the kernel
    /// less than over loopback TCP, and a seed makes hundreds. Other processes get the TCP
    /// address ([`PgProvider::database_url`]).
    pub(super) fn connect_options(&self) -> PgConnectOptions {
        let options = PgConnectOptions::new()
            .host("127.0.0.1")
            .port(self.port)
            .username("postgres")
            .database("postgres");
        match &self.socket_dir {
            Some(dir) => options.socket(dir),
            None => options,
        }
    }

    async fn wait_ready(&mut self, limit: Duration) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("postgres exited with {status}"));
                }
            }
            match self.connect_options().connect().await {
                Ok(c) => {
                    let _ = c.close().await;
                    return Ok(());
                }
                Err(e) if start.elapsed() > limit => return Err(e.to_string()),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for EphemeralCluster {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Fast shutdown (SIGINT) disconnects clients and exits cleanly, so no backend or
        // shared memory segment outlives the cluster. SIGKILL is the fallback.
        let _ = Command::new("kill")
            .arg("-INT")
            .arg(child.id().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
            }
        }
        // `dir` (an OwnedDir) is removed when it drops, after the server has stopped.
    }
}

fn as_user(cmd: &mut Command, run_as: Option<(u32, u32)>) {
    if let Some((uid, gid)) = run_as {
        use std::os::unix::process::CommandExt;
        cmd.uid(uid).gid(gid);
        // HOME of root is not readable by postgres; some tools look at it.
        cmd.env("HOME", "/tmp");
    }
}

/// Asks the kernel to send the postmaster SIGINT (a fast shutdown) when the thread that started
/// it dies, so a harness killed with SIGKILL does not leave a cluster running; [`spawn_lasting`]
/// makes that thread live as long as the process. Set after the uid change (`pre_exec` runs
/// after it), which would otherwise clear it.
fn stop_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Spawns `cmd` from one thread that lives as long as the process. A parent-death signal fires
/// when the *thread* that forked the child ends, not the process: a cluster started by a test
/// thread (libtest's workers end as the queue runs dry) was stopped under the tests still
/// using it. Spawned from here, the postmaster gets its signal only when the harness dies.
fn spawn_lasting(cmd: Command) -> std::io::Result<Child> {
    type Job = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<Job>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("tidemark-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("a thread to spawn clusters from");
        std::sync::Mutex::new(tx)
    });
    let (reply, answer) = std::sync::mpsc::channel();
    spawner
        .lock()
        .expect("never poisoned")
        .send((cmd, reply))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}

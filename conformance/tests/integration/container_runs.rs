//! The `tidemark` binary on the containerised PostgreSQL source (`TIDEMARK_PG_SOURCE=container`):
//! the whole scoped suite passes on it, and no container outlives the run, whether it ends
//! normally, is stopped by SIGINT, or is killed with SIGKILL (then the next run, whatever it
//! runs, removes the container).
//!
//! Needs a Docker daemon and the local image (`scripts/build-pg-image.sh`). Without them each
//! test prints why it is skipped and passes, except under CI (`CI` set), where `.ci/run`
//! provides both and a missing one is a failure.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tidemark_conformance::spec::repo_root;

use super::sandbox::wait_within;

/// Bounds the wait for a run to start its container, and for it to end.
const RUN_BOUND: Duration = Duration::from_secs(120);
const IMAGE: &str = "tidemark-postgres:15";

fn docker_ready() -> bool {
    let daemon = Command::new("docker")
        .args(["version", "--format", "{{.Server.APIVersion}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let missing = if !daemon {
        Some("no Docker daemon answers (docker version failed)".to_string())
    } else {
        let image = Command::new("docker")
            .args(["image", "inspect", IMAGE])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        (!image).then(|| format!("no image {IMAGE} (scripts/build-pg-image.sh builds it)"))
    };
    match missing {
        None => true,
        Some(why) if std::env::var_os("CI").is_some() => {
            panic!("CI must run the container tests, but: {why}")
        }
        Some(why) => {
            println!("skipped: {why}");
            false
        }
    }
}

/// A run of the binary in its own temp dir (so its lock file, and so its liveness, is judged
/// there), on the container source.
fn tidemark(sandbox: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tidemark"));
    cmd.args(args)
        .current_dir(repo_root())
        .env("TMPDIR", sandbox)
        .env("TIDEMARK_TMPDIR", sandbox)
        .env("TIDEMARK_PG_SOURCE", "container")
        .env_remove("DATABASE_URL")
        .env_remove("TIDEMARK_RUN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Ids of containers whose owner token is the run with process id `pid` (`<pid>x...`).
fn containers_of(pid: u32) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "ps",
            "-a",
            "--no-trunc",
            "--filter",
            "label=tidemark.owner",
            "--format",
            "{{.ID}} {{.Label \"tidemark.owner\"}}",
        ])
        .output()
        .expect("docker ps");
    assert!(out.status.success(), "docker ps failed");
    let prefix = format!("{pid}x");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, token)| token.starts_with(&prefix))
        .map(|(id, _)| id.to_string())
        .collect()
}

/// Waits until the run has a container; returns its ids.
fn wait_for_container(child: &mut Child) -> Vec<String> {
    let deadline = Instant::now() + RUN_BOUND;
    loop {
        let ids = containers_of(child.id());
        if !ids.is_empty() {
            return ids;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before a container was seen: {}",
                output_of(child)
            );
        }
        assert!(
            Instant::now() < deadline,
            "no container within {RUN_BOUND:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn output_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut s);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

fn remove(ids: &[String]) {
    if !ids.is_empty() {
        let _ = Command::new("docker")
            .args(["rm", "-f"])
            .args(ids)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn the_whole_scoped_suite_passes_on_a_container_and_the_container_goes_with_the_run() {
    if !docker_ready() {
        return;
    }
    let sandbox = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut child = tidemark(sandbox.path(), &["run", "--profile", "scoped"])
        .spawn()
        .unwrap();
    let ids = wait_for_container(&mut child);
    let status = wait_within(&mut child, RUN_BOUND);
    let output = output_of(&mut child);
    println!(
        "scoped suite on the container source: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let left = containers_of(child.id());
    remove(&left);
    assert!(status.success(), "the scoped suite passes: {output}");
    assert!(
        output.contains("scoped::"),
        "scoped scenarios ran: {output}"
    );
    assert!(!output.contains("FAIL"), "{output}");
    assert_eq!(ids.len(), 1, "one container for the run");
    assert!(left.is_empty(), "the run's container outlived it: {left:?}");
}

#[test]
fn a_container_run_stopped_by_sigint_removes_its_container_and_exits_130() {
    if !docker_ready() {
        return;
    }
    let sandbox = tempfile::tempdir().unwrap();
    let mut child = tidemark(sandbox.path(), &["run", "--profile", "scoped"])
        .spawn()
        .unwrap();
    wait_for_container(&mut child);
    signal(&child, libc::SIGINT);
    let status = wait_within(&mut child, RUN_BOUND);
    let output = output_of(&mut child);
    let left = containers_of(child.id());
    remove(&left);
    assert_eq!(status.code(), Some(130), "{output}");
    assert!(left.is_empty(), "left after SIGINT: {left:?}\n{output}");
}

#[test]
fn the_container_of_a_sigkilled_run_is_removed_by_the_next_run_whatever_it_runs() {
    if !docker_ready() {
        return;
    }
    let sandbox = tempfile::tempdir().unwrap();
    let mut child = tidemark(sandbox.path(), &["run", "--profile", "scoped"])
        .spawn()
        .unwrap();
    let ids = wait_for_container(&mut child);
    signal(&child, libc::SIGKILL);
    let status = wait_within(&mut child, RUN_BOUND);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // The leak is real: nothing of the killed run could remove it.
    let after_kill = containers_of(child.id());
    assert_eq!(after_kill, ids, "the killed run's container is still there");
    // A run that needs no PostgreSQL at all, in the same temp dir (where the killed run's
    // lock file says it is dead).
    let next = tidemark(sandbox.path(), &["run", "--profile", "scratchpad"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr).into_owned();
    let left = containers_of(child.id());
    remove(&left);
    assert!(next.status.success(), "the next run passes: {stderr}");
    assert!(left.is_empty(), "the next run left {left:?}: {stderr}");
    assert!(
        stderr.contains("removed 1 PostgreSQL container(s) left by runs that were killed"),
        "the next run says what it removed: {stderr}"
    );
}

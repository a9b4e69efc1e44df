//! Containing the processes an implementation starts, however they detach: a cgroup (v2) per
//! implementation, inside one cgroup per run, where the machine lets the run make them (as root
//! in CI it does). A process cannot leave its cgroup by `setsid()`, a double fork or dropping
//! its environment, and `cgroup.kill` takes every process in it at once. The run's cgroup is
//! named by its owner token (`tidemark-<token>`), so nothing of another run is touched, and a
//! dead run's is found by the next run (`crate::reap`).
//!
//! Where no cgroup can be made (no cgroup2 mount, or not writable, or `TIDEMARK_CGROUP=off`),
//! [`Cgroup::new`] gives `None` and containment falls back to what the process driver does
//! anyway: the implementation's own process group (killed even after its leader exits),
//! `TIDEMARK_RUN`, the harness as a child subreaper, and the parent-death signal.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::owner::Owner;

/// Set to `off` to run without cgroups (the fallback's own tests do).
pub const CGROUP_ENV: &str = "TIDEMARK_CGROUP";

/// How long a kill waits for a cgroup's processes to be gone.
const KILL_WAIT: Duration = Duration::from_millis(2_000);

/// The cgroup this process belongs to, as a directory of the cgroup2 mount: where the run's own
/// cgroup is made. `None` when there is no cgroup2 mount.
pub fn own_cgroup_dir() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (mount_root, mount_point) = mountinfo.lines().find_map(|l| {
        let (fields, rest) = l.split_once(" - ")?;
        if rest.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let f: Vec<&str> = fields.split_whitespace().collect();
        Some((unescape(f.get(3)?), unescape(f.get(4)?)))
    })?;
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let relative = Path::new(own).strip_prefix(&mount_root).ok()?;
    Some(PathBuf::from(mount_point).join(relative))
}

/// A mountinfo field with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let n = u8::from_str_radix(&field[i + 1..i + 4], 8).unwrap_or(b'?');
            out.push(n);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The name of a run's cgroup.
pub fn run_cgroup_name(token: &str) -> String {
    format!("tidemark-{token}")
}

/// Implementation cgroups of this run that exist: the run's cgroup is removed when the last
/// goes, so a process using the library (a test binary, a Rust gate) leaves none behind.
static LIVE: Mutex<usize> = Mutex::new(0);

/// Where this run's cgroup is, once found usable; `None` where cgroups cannot be made here.
fn run_cgroup() -> Option<&'static Path> {
    static RUN: OnceLock<Option<PathBuf>> = OnceLock::new();
    RUN.get_or_init(|| {
        if std::env::var(CGROUP_ENV).is_ok_and(|v| v == "off") {
            return None;
        }
        let dir = own_cgroup_dir()?.join(run_cgroup_name(Owner::current().token()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
        // Moving a process in needs write access to the cgroup's procs file.
        let procs = CString::new(
            dir.join("cgroup.procs")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .ok()?;
        // SAFETY: access(2) on a valid NUL-terminated path; reads nothing else.
        let writable = unsafe { libc::access(procs.as_ptr(), libc::W_OK) } == 0;
        let _ = std::fs::remove_dir(&dir);
        writable.then_some(dir)
    })
    .as_deref()
}

/// One implementation's cgroup, inside the run's.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    procs: CString,
    removed: bool,
}

impl Cgroup {
    /// A fresh cgroup `impl-<n>` in the run's cgroup (made with the first); `None` where
    /// cgroups cannot be made.
    pub fn new(n: u64) -> Option<Cgroup> {
        let run = run_cgroup()?;
        let procs_of = |d: &Path| {
            CString::new(d.join("cgroup.procs").into_os_string().into_encoded_bytes()).ok()
        };
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        match std::fs::create_dir(run) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
        let dir = run.join(format!("impl-{n}"));
        let made = std::fs::create_dir(&dir).ok().and_then(|()| procs_of(&dir));
        let Some(procs) = made else {
            if *live == 0 {
                let _ = std::fs::remove_dir(run);
            }
            return None;
        };
        *live += 1;
        Some(Cgroup {
            dir,
            procs,
            removed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// What a child process needs to move itself in, between fork and exec.
    pub fn entrance(&self) -> Entrance {
        Entrance(self.procs.clone())
    }
}

/// A cgroup's `cgroup.procs` path, for a child to enter it ([`Entrance::enter`]).
#[derive(Clone, Debug)]
pub struct Entrance(CString);

impl Entrance {
    /// Moves the calling process into the cgroup. Only async-signal-safe calls (`open`,
    /// `write`, `close`) on a path prepared before the fork: it runs in a child between fork
    /// and exec.
    pub fn enter(&self) -> std::io::Result<()> {
        let procs = &self.0;
        // SAFETY: open/write/close on a path prepared before the fork; no allocation.
        unsafe {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            if written != 1 {
                return Err(err);
            }
        }
        Ok(())
    }
}

impl Cgroup {
    /// SIGKILLs every process in the cgroup, waits (bounded) until none is left, reaps those
    /// that were this process's children except `not_mine` (a child someone else waits for),
    /// and removes the cgroup (and the run's, if it was the last). True when it is gone.
    pub fn kill(&mut self, not_mine: Option<i32>) -> bool {
        if self.removed {
            return true;
        }
        if !kill_dir(&self.dir, not_mine) {
            return false;
        }
        self.removed = true;
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        *live = live.saturating_sub(1);
        if *live == 0 {
            if let Some(run) = self.dir.parent() {
                let _ = std::fs::remove_dir(run);
            }
        }
        true
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.kill(None);
    }
}

/// Kills everything in the cgroup `dir` and its descendants, waits, reaps own children (not
/// `not_mine`) and removes the cgroups, deepest first. True when `dir` is gone.
pub fn kill_dir(dir: &Path, not_mine: Option<i32>) -> bool {
    if !dir.is_dir() {
        return true;
    }
    let pids = procs_below(dir);
    if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
        // Before Linux 5.14 there is no cgroup.kill: signal each process, as often as new
        // ones appear (a fork racing the kill).
        for _ in 0..5 {
            let now = procs_below(dir);
            if now.is_empty() {
                break;
            }
            for pid in now {
                // SAFETY: kill(2) on one pid read from this run's own cgroup.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let deadline = Instant::now() + KILL_WAIT;
    while populated(dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    for pid in pids.into_iter().filter(|p| Some(*p) != not_mine) {
        crate::reap::reap_if_child(pid);
    }
    remove_dirs(dir)
}

/// Every pid in `dir` and the cgroups below it.
fn procs_below(dir: &Path) -> Vec<i32> {
    let mut out: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    for sub in subdirs(dir) {
        out.extend(procs_below(&sub));
    }
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Whether any process is left in `dir` or below (`cgroup.events`: `populated 1`).
fn populated(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => events.lines().any(|l| l == "populated 1"),
        Err(_) => !procs_below(dir).is_empty(),
    }
}

/// Removes `dir` and the cgroups below it, deepest first (a cgroup is removed with rmdir, once
/// empty).
fn remove_dirs(dir: &Path) -> bool {
    for sub in subdirs(dir) {
        remove_dirs(&sub);
    }
    for _ in 0..20 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    false
}

/// Kills and removes the cgroup of the run `token`, under this process's own cgroup; true when
/// there is none left. For this run's guard when the harness is gone, and for the next run's
/// reap of a dead one.
pub fn kill_run(token: &str) -> bool {
    match own_cgroup_dir() {
        Some(own) => kill_dir(&own.join(run_cgroup_name(token)), None),
        None => true,
    }
}

/// Tokens of the run cgroups (`tidemark-<token>`) beside this process's own run cgroup.
pub fn run_cgroup_tokens() -> Vec<String> {
    let Some(own) = own_cgroup_dir() else {
        return Vec::new();
    };
    let mut out: Vec<String> = subdirs(&own)
        .into_iter()
        .filter_map(|d| {
            let name = d.file_name()?.to_str()?;
            let token = name.strip_prefix("tidemark-")?;
            crate::owner::is_token(token).then(|| token.to_string())
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mountinfo_path_with_a_space_is_decoded() {
        assert_eq!(unescape("/sys/fs/my\\040cgroup"), "/sys/fs/my cgroup");
        assert_eq!(unescape("/plain"), "/plain");
    }

    /// A process that left its session and dropped its environment is still in its cgroup, and
    /// dies with it. Skipped (passes vacuously, saying so) where the machine gives no cgroup.
    #[test]
    fn a_detached_process_without_its_environment_dies_with_its_cgroup() {
        let Some(mut cg) = Cgroup::new(999_999) else {
            eprintln!("no cgroup2 here: containment falls back to process groups");
            return;
        };
        use std::os::unix::process::CommandExt;
        let entrance = cg.entrance();
        let mut child = std::process::Command::new("sh");
        child
            .args([
                "-c",
                "setsid sh -c 'exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 300",
            ])
            .env_clear();
        // SAFETY: the closure only opens and writes a prepared path.
        unsafe {
            child.pre_exec(move || entrance.enter());
        }
        let mut child = child.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while procs_below(cg.path()).len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let inside = procs_below(cg.path());
        assert!(inside.len() >= 3, "{inside:?}");
        assert!(cg.kill(Some(child.id() as i32)));
        let _ = child.wait();
        for pid in inside {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let running = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'));
            assert!(!running, "{pid} survived its cgroup");
        }
        assert!(!cg.path().exists());
        // The run's own cgroup went with its last implementation's.
        assert!(!cg.path().parent().unwrap().exists());
    }
}

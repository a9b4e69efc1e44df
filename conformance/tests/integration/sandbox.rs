//! A run of the `tidemark` binary in a sandbox of its own: `TMPDIR` and `TIDEMARK_TMPDIR` point
//! at a fresh directory, so every directory the run makes is listed there, and every process it
//! starts that keeps its environment (PostgreSQL included) is found by `TMPDIR=<sandbox>`.
//! Shared by the tests that check what a run leaves behind (`interrupted_runs.rs`,
//! `hostile_inputs.rs`).
//!
//! The binary is the one cargo built, or the one `TIDEMARK_UNDER_TEST` names: the hostile
//! inputs are counted against an older build that way (`hostile_inputs.rs` says how).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tidemark_conformance::spec::repo_root;

/// Bounds the wait for a run to reach the point where it is interrupted, and for it to end.
pub const RUN_BOUND: Duration = Duration::from_secs(60);

/// The `tidemark` binary under test.
pub fn binary() -> PathBuf {
    std::env::var_os("TIDEMARK_UNDER_TEST")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tidemark")))
}

pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        // Not named `tidemark-...`: it is the test's, not a run's.
        let dir = tempfile::Builder::new()
            .prefix("leak-sandbox-")
            .tempdir()
            .expect("a sandbox");
        Sandbox { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `tidemark <args>` from the repository root, in the sandbox, stdout discarded.
    pub fn tidemark(&self, args: &[&str], database_url: Option<&str>) -> Command {
        let mut cmd = Command::new(binary());
        cmd.args(args)
            .current_dir(repo_root())
            .env("TMPDIR", self.path())
            .env("TIDEMARK_TMPDIR", self.path())
            .env_remove("TIDEMARK_RUN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        match database_url {
            Some(url) => cmd.env("DATABASE_URL", url),
            None => cmd.env_remove("DATABASE_URL"),
        };
        cmd
    }

    /// Entries of the sandbox other than the lock directory, sorted.
    pub fn directories(&self) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(self.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "tidemark-locks")
            .collect();
        out.sort();
        out
    }

    /// Lock files of runs (a clean exit removes its own; a reap removes a dead run's).
    pub fn lock_files(&self) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(self.path().join("tidemark-locks"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        out.sort();
        out
    }

    /// Live processes (not zombies) whose environment has `TMPDIR=<sandbox>`, with their
    /// command lines.
    pub fn processes(&self) -> Vec<String> {
        let wanted = format!("TMPDIR={}", self.path().display());
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            let has = environ.split(|&b| b == 0).any(|v| v == wanted.as_bytes());
            if has && alive(pid as i32) {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                out.push(format!(
                    "{pid}: {}",
                    String::from_utf8_lossy(&cmdline).replace('\0', " ")
                ));
            }
        }
        out
    }

    /// The pids of runs' guards (`tidemark-guard`) in this sandbox.
    pub fn guards(&self) -> Vec<i32> {
        self.processes()
            .iter()
            .filter_map(|p| p.split(':').next()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == "tidemark-guard")
            })
            .collect()
    }

    /// SIGKILLs the runs' guards, as a kill of everything at once would: what a run leaves is
    /// then the next run's to reap.
    pub fn kill_guards(&self) {
        for pid in self.guards() {
            // SAFETY: kill(2) on a guard of a run this test started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }

    /// Asserts nothing of any run is left, waiting a little for processes that are being
    /// killed to go and for a guard's sweep.
    pub fn assert_clean(&self, after: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while (!self.processes().is_empty() || !self.directories().is_empty())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            self.processes(),
            Vec::<String>::new(),
            "processes left {after}"
        );
        assert_eq!(
            self.directories(),
            Vec::<String>::new(),
            "directories left {after}"
        );
    }

    fn kill_leftovers(&self) {
        for p in self.processes() {
            if let Some(pid) = p.split(':').next().and_then(|p| p.parse::<i32>().ok()) {
                // SAFETY: kill(2) on one pid this test found carrying its sandbox.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // A failing test must not leave its leftovers running.
        self.kill_leftovers();
    }
}

/// Whether `pid` is a live process (not a zombie, not gone).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

pub fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + RUN_BOUND;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn wait_bounded(child: &mut Child) -> ExitStatus {
    wait_within(child, RUN_BOUND)
}

/// Waits for `child` to exit, killing it and failing the test past `bound`.
pub fn wait_within(child: &mut Child, bound: Duration) -> ExitStatus {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tidemark did not exit within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

pub fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

//! A running implementation's process: spawned in its own process group and cgroup with its own
//! `TIDEMARK_RUN` value, its stderr drained into a bounded tail, and killed and reaped with
//! everything it started. Every path that can leave a child process behind (spawn, kill, reap,
//! drop) is in this one file, so the guarantee that none is left is checked in one place; the
//! lines it exchanges over its pipes are `wire.rs`.

use super::{
    AdapterCommand, ClaimsCheck, ProcessOptions, EXIT_GRACE, NEXT_RUN, RUNNING_GRACE,
    STDERR_LINE_MAX_BYTES, STDERR_TAIL_LINES,
};
use crate::driver::DriverError;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tidemark_sim::clip::clip_prefix;
use tidemark_sim::owner::{Owner, RUN_ENV};
use tokio::io::{AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

/// A running program: its pipes, the tail of its stderr, and the bound on every wait.
pub(super) struct Adapter {
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: BufReader<ChildStdout>,
    pub(super) stderr: StderrTail,
    pub(super) reply_timeout: Duration,
    pub(super) startup_timeout: Duration,
    pub(super) claims_check: ClaimsCheck,
    /// Set once the process has been waited for, so it is never signalled after its pid may
    /// have been reused.
    pub(super) reaped: bool,
    /// Its `TIDEMARK_RUN` value, which its descendants inherit.
    pub(super) run_env: String,
    /// Its cgroup, where one could be made: every process it starts stays in it.
    pub(super) cgroup: Option<tidemark_sim::contain::Cgroup>,
    /// Its process group (its own pid) and when it started (clock ticks since boot), so the
    /// group's members are killed even after the leader is gone, and a reused number never is.
    pub(super) group: Option<(i32, u64)>,
}

impl Adapter {
    pub(super) fn spawn(
        command: &AdapterCommand,
        workdir: &Path,
        options: &ProcessOptions,
    ) -> Result<Adapter, DriverError> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .current_dir(workdir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so that killing it also kills what it started (`go run`,
        // `sh -c`, `npm start` all run the real program as a child).
        #[cfg(unix)]
        cmd.process_group(0);
        // A value no other implementation has: its descendants inherit it, so they are found
        // and killed with it even after leaving its group or session (`kill_descendants`).
        let n = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
        let run_env = Owner::current().run_env_value(n);
        cmd.env(RUN_ENV, &run_env);
        // Its own cgroup, entered between fork and exec, so that everything it starts stays in
        // it whatever it does to detach (`setsid()`, a double fork, an empty environment).
        let cgroup = tidemark_sim::contain::Cgroup::new(n);
        let entrance = cgroup.as_ref().map(|c| c.entrance());
        // The kernel kills the implementation if the harness dies (even by SIGKILL), so a stuck
        // program never outlives it. Its descendants are reaped by the next run (by RUN_ENV).
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: prctl and getppid are async-signal-safe and touch no memory of the parent.
            unsafe {
                cmd.pre_exec(move || {
                    if let Some(entrance) = &entrance {
                        entrance.enter()?;
                    }
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // The harness died between fork and prctl: the signal was never armed.
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().map_err(|e| {
            DriverError(format!(
                "cannot start the implementation `{}`: {e}",
                command.text
            ))
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("all three pipes were requested");
        };
        // Its group, remembered while the leader is surely alive (not yet waited for), and told
        // to the guard, which kills its members if the harness dies.
        let group = child.id().and_then(|pid| {
            let pid = pid as i32;
            let (_, started) = tidemark_sim::reap::stat_fields(pid)?;
            tidemark_sim::guard::register_group(pid, started);
            Some((pid, started))
        });
        Ok(Adapter {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            stderr: StderrTail::capture(stderr),
            reply_timeout: options.reply_timeout,
            startup_timeout: options.startup_timeout(),
            claims_check: options.claims_check,
            reaped: false,
            run_env,
            cgroup,
            group,
        })
    }

    /// A driver error: `what`, how the process ended if it has, and the tail of its stderr.
    pub(super) async fn failure(&mut self, what: String) -> DriverError {
        self.describe_failure(what, RUNNING_GRACE).await
    }

    /// A driver error for a program that closed its end of a pipe: it is exiting, so its exit
    /// status is worth a longer wait.
    pub(super) async fn failure_on_exit(&mut self, what: String) -> DriverError {
        self.describe_failure(what, EXIT_GRACE).await
    }

    pub(super) async fn describe_failure(&mut self, what: String, grace: Duration) -> DriverError {
        let mut message = what;
        if let Some(status) = self.exit_status_within(grace).await {
            let _ = write!(
                message,
                "; the implementation exited ({})",
                describe_exit(status)
            );
            // It has exited, so its stderr is closing: let the capture collect the last lines.
            self.stderr.finish(EXIT_GRACE).await;
        } else {
            tokio::task::yield_now().await;
        }
        message.push_str(&self.stderr.render());
        DriverError(message)
    }

    /// The exit status if the process ends within `grace`.
    pub(super) async fn exit_status_within(&mut self, grace: Duration) -> Option<ExitStatus> {
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => {
                self.reaped = true;
                Some(status)
            }
            _ => None,
        }
    }

    pub(super) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// SIGKILL to the process and its group, then reap it: a crash, no shutdown.
    pub(super) async fn kill(mut self) {
        self.stdin = None;
        if !self.reaped {
            // Where there is no cgroup, what is still below the leader is found by its parent
            // links before the leader dies (after, its orphans belong to the harness).
            let below = self.below_leader();
            self.kill_group();
            let _ = self.child.start_kill();
            let _ = self.exit_status_within(EXIT_GRACE).await;
            tidemark_sim::reap::kill_listed(&below);
        }
        self.kill_descendants();
        self.stderr.abort();
    }

    /// The live processes below the leader, when there is no cgroup to hold them.
    pub(super) fn below_leader(&self) -> Vec<(i32, u64)> {
        match (&self.cgroup, self.group) {
            (None, Some((leader, _))) => tidemark_sim::reap::descendants(leader),
            _ => Vec::new(),
        }
    }

    /// SIGKILL to everything this implementation started, however it detached: its cgroup,
    /// the members of its process group (the leader may be long gone), and every process
    /// carrying its `TIDEMARK_RUN` value. Runs after the leader is reaped (or given up on), so
    /// it never races tokio for the leader's exit status.
    pub(super) fn kill_descendants(&mut self) {
        let leader = (!self.reaped)
            .then(|| self.group.map(|(pid, _)| pid))
            .flatten();
        // Every member of its process group is in its cgroup (setsid() does not leave one):
        // once the cgroup is gone, so is the group.
        let contained = self.cgroup.as_mut().is_some_and(|c| c.kill(leader));
        if let (false, Some((pgid, started))) = (contained, self.group) {
            tidemark_sim::reap::kill_process_group(pgid, started, leader);
        }
        let value = self.run_env.as_str();
        tidemark_sim::reap::kill_run_processes(|v| v == value);
    }

    pub(super) fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads; it
            // touches no memory. The group was created at spawn and the child is not yet reaped,
            // so the id cannot name anyone else's group.
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
            }
        }
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        // Error paths that never reach `kill` still take the program's children with it;
        // `kill_on_drop` covers the program itself and tokio reaps it.
        let below = if self.reaped {
            Vec::new()
        } else {
            self.below_leader()
        };
        if !self.reaped {
            self.kill_group();
        }
        tidemark_sim::reap::kill_listed(&below);
        self.kill_descendants();
        self.stderr.abort();
    }
}

pub(super) fn describe_exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => status.to_string(),
    }
}

/// The last lines the program wrote to stderr, collected by a task that drains the pipe
/// continuously (a full pipe would block a chatty program mid-request). Text after the last
/// newline is kept too, so a program that never ends its line is still shown.
pub(super) struct StderrTail {
    state: Arc<Mutex<StderrState>>,
    task: Option<JoinHandle<()>>,
}

#[derive(Default)]
pub(super) struct StderrState {
    /// Complete lines, each already cut.
    lines: VecDeque<String>,
    /// The start of the line being written (at most [`STDERR_LINE_MAX_BYTES`] + 3 bytes kept,
    /// so a cut can back up to a character boundary), and its whole length.
    partial: Vec<u8>,
    partial_len: usize,
}

impl StderrState {
    pub(super) fn take(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                let line = render_stderr_line(&self.partial, self.partial_len);
                if self.lines.len() == STDERR_TAIL_LINES {
                    self.lines.pop_front();
                }
                self.lines.push_back(line);
                self.partial.clear();
                self.partial_len = 0;
            } else {
                if self.partial.len() < STDERR_LINE_MAX_BYTES + 3 {
                    self.partial.push(b);
                }
                self.partial_len += 1;
            }
        }
    }

    /// The tail as shown: complete lines, then the unfinished one if it has any text.
    pub(super) fn shown(&self) -> Vec<String> {
        let mut out: Vec<String> = self.lines.iter().cloned().collect();
        if !self.partial.iter().all(u8::is_ascii_whitespace) {
            out.push(render_stderr_line(&self.partial, self.partial_len));
            if out.len() > STDERR_TAIL_LINES {
                out.remove(0);
            }
        }
        out
    }
}

pub(super) fn render_stderr_line(kept: &[u8], total_len: usize) -> String {
    let line = clip_prefix(kept, total_len, STDERR_LINE_MAX_BYTES);
    line.trim_end().to_string()
}

impl StderrTail {
    pub(super) fn capture(stderr: tokio::process::ChildStderr) -> StderrTail {
        let state = Arc::new(Mutex::new(StderrState::default()));
        let sink = state.clone();
        let task = tokio::spawn(async move {
            let mut stderr = stderr;
            let mut chunk = vec![0u8; 8 * 1024];
            loop {
                let n = match stderr.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                sink.lock()
                    .expect("the stderr tail is never poisoned")
                    .take(&chunk[..n]);
            }
        });
        StderrTail {
            state,
            task: Some(task),
        }
    }

    /// Waits (bounded) for the pipe to close, so the lines written just before an exit are kept.
    pub(super) async fn finish(&mut self, grace: Duration) {
        if let Some(task) = self.task.as_mut() {
            if tokio::time::timeout(grace, task).await.is_ok() {
                self.task = None;
            }
        }
    }

    pub(super) fn abort(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    pub(super) fn render(&self) -> String {
        let lines = self
            .state
            .lock()
            .expect("the stderr tail is never poisoned")
            .shown();
        if lines.is_empty() {
            return "; its stderr was empty".into();
        }
        let mut s = format!("\nlast {} line(s) of its stderr:", lines.len());
        for l in lines.iter() {
            let _ = write!(s, "\n  | {l}");
        }
        s
    }
}

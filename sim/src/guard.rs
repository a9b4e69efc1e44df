//! The run's guard: a process forked when the harness starts, before any thread exists, that
//! waits for the harness to end, however it ends, and then removes whatever of the run is left.
//! Without it, a harness killed by SIGKILL leaves its implementations' detached helpers running
//! (and its directories in place) until some later run happens to reap them, or for ever.
//!
//! The harness holds the write end of a pipe (close-on-exec, so no program it starts holds it
//! too); the guard reads the other end. End of file means every holder is gone: the harness has
//! exited, cleanly or not. The guard then kills the run's cgroup ([`crate::contain`]), every
//! process carrying the run's `TIDEMARK_RUN`, every process group the harness registered
//! ([`register_group`]: the fallback where no cgroup could be made), and sweeps the run's marked
//! directories (stopping its PostgreSQL clusters). It shares the run's lock, so no other run
//! judges this one dead while the guard is at work; databases on a `DATABASE_URL` server and
//! containers are left to the next run's reap, as for any run that died.
//!
//! The guard leaves the harness's session and ignores SIGINT, SIGTERM and SIGHUP, so a Ctrl-C
//! or a kill of the harness's process group does not take it before its work; it holds nothing
//! the harness's caller waits on (its standard streams are `/dev/null`).

use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use crate::owner::Owner;

/// The write end of the pipe the guard reads, once it runs.
static PIPE: OnceLock<Mutex<File>> = OnceLock::new();

/// Forks the guard. Call it first thing in `main`, while the process has one thread: a fork
/// copies only the calling thread, so with more the guard could inherit a lock held by another
/// (the allocator's) and hang. With more than one thread, or when the fork fails, there is no
/// guard and this says so on stderr; the harness then relies on its own cleanup and the next
/// run's reap. `extra_bases`: where the run makes directories besides the temp dir.
pub fn start(extra_bases: Vec<PathBuf>) {
    if threads() != Some(1) {
        eprintln!("tidemark: no guard process (the harness already runs threads); a harness killed by SIGKILL leaves its leftovers to the next run");
        return;
    }
    let owner = Owner::current();
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    // SAFETY: the process has one thread (checked above), so the child may run any code.
    match unsafe { libc::fork() } {
        -1 => {
            // SAFETY: closing the two descriptors pipe2 just made.
            unsafe {
                libc::close(read_fd);
                libc::close(write_fd);
            }
        }
        0 => {
            // SAFETY: the write end is this process's own copy.
            unsafe { libc::close(write_fd) };
            guard(read_fd, owner, &extra_bases);
        }
        _ => {
            // SAFETY: the read end is the guard's now; this copy is closed.
            unsafe { libc::close(read_fd) };
            // SAFETY: `write_fd` is an open descriptor this process owns from here on.
            let _ = PIPE.set(Mutex::new(unsafe { File::from_raw_fd(write_fd) }));
        }
    }
}

/// Tells the guard about a process group the harness made for an implementation (its leader's
/// pid, and the leader's start time in clock ticks since boot, so a reused pid is never taken
/// for it). Where the run has a cgroup this is a second line of defence; where it has none,
/// the guard kills these groups' members if the harness dies.
pub fn register_group(pgid: i32, started: u64) {
    if let Some(pipe) = PIPE.get() {
        let mut w = pipe.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(w, "group {pgid} {started}");
    }
}

/// The number of threads of this process.
fn threads() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}

/// The guard's life: detach, wait for the end of the pipe, clean up, exit.
fn guard(read_fd: i32, owner: &Owner, extra_bases: &[PathBuf]) -> ! {
    detach(read_fd, owner.lock_fd());
    // SAFETY: `read_fd` is open and owned by this process.
    let pipe = std::io::BufReader::new(unsafe { File::from_raw_fd(read_fd) });
    let mut groups: Vec<(i32, u64)> = Vec::new();
    for line in pipe.lines() {
        let Ok(line) = line else { break };
        let mut words = line.split_whitespace();
        if let (Some("group"), Some(pgid), Some(started)) =
            (words.next(), words.next(), words.next())
        {
            if let (Ok(pgid), Ok(started)) = (pgid.parse(), started.parse()) {
                groups.push((pgid, started));
            }
        }
    }
    // The harness is gone. Its cgroup and its processes first, then its directories.
    let token = owner.token().to_string();
    crate::contain::kill_run(&token);
    crate::reap::kill_run_processes(|v| crate::owner::token_of_run_env(v) == Some(&token));
    for (pgid, started) in groups {
        crate::reap::kill_process_group(pgid, started, None);
    }
    crate::reap::sweep_own(extra_bases);
    // SAFETY: _exit ends the process without running the harness's exit handlers again.
    unsafe { libc::_exit(0) }
}

/// Leaves the harness's session, ignores the signals a terminal or a group kill sends, and keeps
/// only the pipe and the run's lock open, with `/dev/null` as its standard streams.
fn detach(read_fd: i32, lock_fd: Option<i32>) {
    // SAFETY: plain system calls on this process's own state; no memory is shared.
    unsafe {
        libc::setsid();
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGPIPE,
            libc::SIGQUIT,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::prctl(
            libc::PR_SET_NAME,
            c"tidemark-guard".as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }
    }
    let keep = [Some(read_fd), lock_fd];
    let open: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    for fd in open {
        if fd > 2 && !keep.contains(&Some(fd)) {
            // SAFETY: closing a descriptor this process inherited and does not use.
            unsafe { libc::close(fd) };
        }
    }
}

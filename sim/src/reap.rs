//! Removing what a run owns: its processes, its marked temporary directories and the
//! PostgreSQL clusters inside them. Used two ways:
//!
//! - [`reap_dead_runs`], at a run's start: everything of every run whose owner is
//!   [`Liveness::Dead`](crate::owner::Liveness) (killed with SIGKILL, so its cleanup never ran);
//! - [`sweep_own`], when this run is interrupted: everything carrying this run's own token.
//!
//! Ownership comes from [`crate::owner`]: a directory's `.tidemark-owner` file, a process's
//! `TIDEMARK_RUN=<token>-<n>` environment variable, a run's cgroup `tidemark-<token>`
//! ([`crate::contain`]: every process an implementation started, however it detached). Without
//! cgroups, a process that scrubs its environment and leaves its process group is not found
//! here; a directory whose owner file was removed is not found. Databases on a shared server are
//! reaped by [`crate::real_tier::pg_reap`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::owner::{self, DeadRun, LOCK_DIR_NAME, RUN_ENV};

/// How long a stale postmaster gets to stop after SIGQUIT before SIGKILL.
const POSTMASTER_STOP_MS: u64 = 5_000;

/// How many times a kill sweep looks again for processes (a process may fork between the scan
/// and its kill).
const KILL_ROUNDS: usize = 5;

/// What a reap removed, for a line on stderr and for tests.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reaped {
    pub processes: usize,
    pub directories: Vec<PathBuf>,
    pub clusters: usize,
    /// Dead runs whose lock file was removed because nothing of theirs is left.
    pub runs: usize,
}

impl Reaped {
    pub fn is_empty(&self) -> bool {
        self.processes == 0 && self.directories.is_empty() && self.clusters == 0
    }

    fn add(&mut self, other: Reaped) {
        self.processes += other.processes;
        self.directories.extend(other.directories);
        self.clusters += other.clusters;
        self.runs += other.runs;
    }
}

/// The directories runs put their temporary directories in: the temp dir and `extra` (e.g.
/// the scratch base in /dev/shm), without duplicates.
fn bases(extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = vec![std::env::temp_dir()];
    for b in extra {
        if !out.contains(b) {
            out.push(b.clone());
        }
    }
    out
}

/// Removes everything of runs whose owner is dead: their processes, their marked directories
/// under the temp dir and `extra_bases` (a postmaster running in one is stopped first), and
/// then their lock files. A live run's things, and things of unknown owners, are not touched.
pub fn reap_dead_runs(extra_bases: &[PathBuf]) -> Reaped {
    let mut reaped = Reaped::default();
    let dead: Vec<DeadRun> = owner::known_tokens()
        .iter()
        .filter_map(|t| owner::claim_dead(t))
        .collect();
    if dead.is_empty() {
        return reaped;
    }
    let bases = bases(extra_bases);
    let dirs = marked_dirs(&bases);
    for run in dead {
        let token = run.token().to_string();
        // Its cgroup first: every process in it, however it detached (`crate::contain`).
        let mut all_gone = crate::contain::kill_run(&token);
        let mut r = Reaped {
            processes: kill_run_processes(|v| owner::token_of_run_env(v) == Some(&token)),
            ..Reaped::default()
        };
        for dir in dirs.get(&token).into_iter().flatten() {
            match remove_marked_dir(dir) {
                Ok(cluster) => {
                    r.clusters += usize::from(cluster);
                    r.directories.push(dir.clone());
                }
                Err(_) => all_gone = false,
            }
        }
        if all_gone {
            run.forget();
            r.runs = 1;
        }
        reaped.add(r);
    }
    reaped
}

/// Removes everything carrying this run's token: its implementations' processes, its marked
/// directories (stopping its clusters). For an interrupted run, after its own cleanup had its
/// chance; whatever that cleanup already removed is simply not found.
pub fn sweep_own(extra_bases: &[PathBuf]) -> Reaped {
    let token = owner::Owner::current().token().to_string();
    crate::contain::kill_run(&token);
    let mut r = Reaped {
        processes: kill_run_processes(|v| owner::token_of_run_env(v) == Some(&token)),
        ..Reaped::default()
    };
    let dirs = marked_dirs(&bases(extra_bases));
    for dir in dirs.get(&token).into_iter().flatten() {
        if let Ok(cluster) = remove_marked_dir(dir) {
            r.clusters += usize::from(cluster);
            r.directories.push(dir.clone());
        }
    }
    r
}

/// Removes this run's lock file, at a clean exit: everything it owned is gone, so nobody needs
/// to judge it. (An interrupted run keeps it: a later run then reaps whatever raced the sweep.)
pub fn release_own_lock() {
    let token = owner::Owner::current().token();
    let _ = std::fs::remove_file(owner::lock_dir().join(format!("{token}.lock")));
}

/// `tidemark-*` directories holding an owner file, by token, sorted.
fn marked_dirs(bases: &[PathBuf]) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for base in bases {
        let Ok(entries) = std::fs::read_dir(base) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let ours = name.starts_with("tidemark-") || name.starts_with(owner::STAGING_PREFIX);
            if !ours || name == LOCK_DIR_NAME {
                continue;
            }
            // Never follow a symlink someone planted in the temp dir.
            if !e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            // A staging directory's name says whose it is, owner file or not (a run killed
            // between making it and marking it).
            let token = owner::staging_owner(name)
                .map(str::to_string)
                .or_else(|| owner::dir_owner(&e.path()));
            if let Some(token) = token {
                out.entry(token).or_default().push(e.path());
            }
        }
    }
    for dirs in out.values_mut() {
        dirs.sort();
    }
    out
}

/// Stops a postmaster running in `dir` (its `data/postmaster.pid`), then removes `dir`.
/// True when a running postmaster was stopped.
fn remove_marked_dir(dir: &Path) -> std::io::Result<bool> {
    let stopped = stop_postmaster(&dir.join("data"));
    owner::remove_owned(dir)?;
    Ok(stopped)
}

/// Stops the postmaster whose data directory is `data`, if one runs: SIGQUIT (immediate
/// shutdown: nothing of this cluster is worth keeping), then SIGKILL after
/// [`POSTMASTER_STOP_MS`]. The pid is trusted only if that process is a postgres whose working
/// directory is the cluster's, so a reused pid is never signalled.
fn stop_postmaster(data: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(data.join("postmaster.pid")) else {
        return false;
    };
    let Some(pid) = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<i32>().ok())
    else {
        return false;
    };
    let is_ours = |pid: i32| -> bool {
        let exe_is_postgres = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains("postgres"))
            .unwrap_or(false);
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
        let dir = data.parent().map(Path::to_path_buf);
        exe_is_postgres
            && cwd.is_some()
            && (cwd == dir || cwd.as_deref() == Some(data))
            && !is_zombie(pid)
    };
    if pid <= 1 || !is_ours(pid) {
        return false;
    }
    signal(pid, libc::SIGQUIT);
    let deadline = Instant::now() + Duration::from_millis(POSTMASTER_STOP_MS);
    while Instant::now() < deadline {
        if !is_ours(pid) {
            return true;
        }
        reap_if_child(pid);
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(pid, libc::SIGKILL);
    reap_if_child(pid);
    true
}

/// Kills (SIGKILL) every process whose [`RUN_ENV`] value satisfies `matches`, looking again
/// until none is left (bounded). Returns how many were killed. Processes that were this
/// process's children (reparented to it as a subreaper) are reaped.
pub fn kill_run_processes(matches: impl Fn(&str) -> bool) -> usize {
    let me = std::process::id() as i32;
    let mut killed = std::collections::BTreeSet::new();
    let mut quiet_rounds = 0;
    for _ in 0..KILL_ROUNDS {
        let found: Vec<i32> = processes_with_run_env(&matches)
            .into_iter()
            .filter(|&p| p != me)
            .collect();
        if found.is_empty() {
            // Two quiet looks in a row: one could fall in a process's exec window.
            quiet_rounds += 1;
            if quiet_rounds == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        quiet_rounds = 0;
        for &pid in &found {
            signal(pid, libc::SIGKILL);
            killed.insert(pid);
        }
        // Let the kernel deliver before looking again.
        std::thread::sleep(Duration::from_millis(10));
    }
    for &pid in &killed {
        reap_if_child(pid);
    }
    killed.len()
}

/// Pids of running (not zombie) processes whose environment has `TIDEMARK_RUN=<v>` with
/// `matches(v)`, sorted. Processes of other users, unreadable, are skipped. A process in the
/// middle of exec can read as having no environment for an instant; sweeps look more than once.
pub fn processes_with_run_env(matches: impl Fn(&str) -> bool) -> Vec<i32> {
    let prefix = format!("{RUN_ENV}=");
    let mut out: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                return false;
            };
            environ.split(|&b| b == 0).any(|var| {
                std::str::from_utf8(var)
                    .ok()
                    .and_then(|v| v.strip_prefix(&prefix))
                    .is_some_and(&matches)
            }) && !is_zombie(pid)
        })
        .collect();
    out.sort();
    out
}

/// Kills (SIGKILL) every live process in the process group `pgid` that started at or after
/// `started` (clock ticks since boot, as `/proc/<pid>/stat` gives): the members of a group the
/// harness made for an implementation, even after the group's leader is gone, and never a later
/// group that happens to reuse the number. Those that were this process's children are reaped,
/// but `not_mine` (a child someone else waits for). Returns how many were killed.
pub fn kill_process_group(pgid: i32, started: u64, not_mine: Option<i32>) -> usize {
    let me = std::process::id() as i32;
    let members = |pgid: i32| -> Vec<i32> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid != me)
            .filter(|&pid| {
                stat_fields(pid).is_some_and(|(group, start)| group == pgid && start >= started)
                    && !is_zombie(pid)
            })
            .collect()
    };
    let mut killed = std::collections::BTreeSet::new();
    for _ in 0..KILL_ROUNDS {
        let found = members(pgid);
        if found.is_empty() {
            break;
        }
        for &pid in &found {
            signal(pid, libc::SIGKILL);
            killed.insert(pid);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for &pid in killed.iter().filter(|p| Some(**p) != not_mine) {
        reap_if_child(pid);
    }
    killed.len()
}

/// Every live descendant of `pid` (children, their children, ...), each with its start time,
/// from the parent links in `/proc`: the processes an implementation started that are still
/// below it, whatever session, group or environment they took.
pub fn descendants(pid: i32) -> Vec<(i32, u64)> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for p in std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
    {
        if let Some(parent) = parent_of(p) {
            children.entry(parent).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).into_iter().flatten() {
            if let Some((_, started)) = stat_fields(c) {
                out.push((c, started));
                stack.push(c);
            }
        }
    }
    out.sort();
    out
}

/// Kills (SIGKILL) each listed process that is still the one listed (same start time), and
/// reaps those that were this process's children. Returns how many were killed.
pub fn kill_listed(processes: &[(i32, u64)]) -> usize {
    let mut killed = 0;
    for &(pid, started) in processes {
        if stat_fields(pid).is_some_and(|(_, s)| s == started) && !is_zombie(pid) {
            signal(pid, libc::SIGKILL);
            killed += 1;
        }
    }
    for &(pid, _) in processes {
        reap_if_child(pid);
    }
    killed
}

/// A process's group and its start time (clock ticks since boot), from `/proc/<pid>/stat`.
pub fn stat_fields(pid: i32) -> Option<(i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    // After the command: state (3), ppid (4), pgrp (5), ..., starttime (22).
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.get(2)?.parse().ok()?, f.get(19)?.parse().ok()?))
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Waits for `pid` if it is this process's child (bounded: it was just sent SIGKILL or has
/// exited), so no zombie stays behind. Never waits for anyone else's child.
pub fn reap_if_child(pid: i32) {
    if parent_of(pid) != Some(std::process::id() as i32) {
        return;
    }
    let deadline = Instant::now() + Duration::from_millis(1_000);
    while Instant::now() < deadline {
        let mut status = 0;
        // SAFETY: waitpid on one pid with WNOHANG; writes only `status`.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) on one positive pid; touches no memory.
    unsafe {
        libc::kill(pid, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_carrying_a_run_value_is_found_and_killed_and_others_are_not() {
        let value = format!("{}-9999", owner::Owner::current().token());
        let mut marked = std::process::Command::new("sleep")
            .arg("30")
            .env(RUN_ENV, &value)
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .env(RUN_ENV, "1xother0-1")
            .spawn()
            .unwrap();
        // A process just spawned can show an empty environment for a moment: the kernel lets
        // the spawning parent go on (vfork) before the new program's environment is in place.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut found = processes_with_run_env(|v| v == value);
        while found.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
            found = processes_with_run_env(|v| v == value);
        }
        assert_eq!(found, vec![marked.id() as i32]);
        assert_eq!(kill_run_processes(|v| v == value), 1);
        // Reaped by kill_run_processes (it is this process's child).
        assert!(marked.try_wait().is_err() || marked.try_wait().unwrap().is_some());
        assert!(
            other.try_wait().unwrap().is_none(),
            "the other run's process lives"
        );
        let _ = other.kill();
        let _ = other.wait();
    }
}

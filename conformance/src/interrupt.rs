//! What the `tidemark` binary does at its start, on SIGINT or SIGTERM, and at its exit, so
//! nothing it started outlives it.
//!
//! - [`start`]: forks the run's guard (`tidemark_sim::guard`: when the harness ends, however it
//!   ends, SIGKILL included, it kills what the run started and removes its directories), makes
//!   the process a child subreaper (orphaned descendants of an implementation reparent to it,
//!   so they are reaped, not left to init), reaps what killed runs left (`tidemark_sim::reap`),
//!   and starts the thread that waits for SIGINT and SIGTERM.
//! - On a signal, that thread asks the command to stop ([`cancellable`]: the command's future
//!   is dropped, so every `Drop` runs: implementations' process groups killed, clusters
//!   stopped, temporary directories removed) and waits for it at most [`DROP_GRACE_MS`]. Then
//!   it removes whatever still carries this run's token (processes, directories, clusters, and
//!   `tdm_<token>_*` databases on a `DATABASE_URL` server, and containers labelled with its
//!   token), and exits 128 + the signal's
//!   number: 130 for SIGINT, 143 for SIGTERM. Commands that drive their own runtimes
//!   (`explore`, `world`) are not cancelled; the sweep alone cleans up after them. An
//!   interrupted run keeps its lock file: if anything raced the sweep, the next run reaps it.
//! - [`finish`]: at a normal exit, the same sweep, then the lock file goes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use tidemark_sim::real_tier::pg_container;
use tidemark_sim::reap::{self, Reaped};

/// How long the command gets to run its own cleanup (its `Drop`s) after a signal. An ephemeral
/// cluster's own stop waits up to 10 s; a stuck one is then stopped by the sweep.
pub const DROP_GRACE_MS: u64 = 12_000;

/// Set when a signal arrived: from then on the signal thread owns the exit.
static SIGNALLED: AtomicBool = AtomicBool::new(false);
/// Set while a [`cancellable`] command runs, so the signal thread knows someone will answer.
static CANCELLABLE: AtomicBool = AtomicBool::new(false);
static CANCEL: tokio::sync::Notify = tokio::sync::Notify::const_new();
/// Set (and notified) once a cancelled command's future has been dropped.
static DROPPED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// Where runs put temporary directories besides the temp dir: the scenarios' scratch base, and
/// the cache where a cluster template is staged.
fn extra_bases() -> Vec<PathBuf> {
    let mut bases = vec![tidemark_sim::owner::scratch_base()];
    bases.extend(tidemark_sim::real_tier::pg_template::cache_root());
    bases
}

/// Call first in `main`, while the process has one thread: the run's guard, subreaper, reap
/// killed runs, install the signal handlers.
pub fn start() {
    // Before any thread: the guard is a fork of this process (`tidemark_sim::guard`).
    tidemark_sim::guard::start(extra_bases());
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments; touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    // After a signal, work that is still running may fail (its directories are being
    // removed): its panic is not news, and the signal thread owns the exit.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if SIGNALLED.load(Ordering::SeqCst) {
            loop {
                std::thread::park();
            }
        }
        default_hook(info);
    }));
    // Containers first: `reap_dead_runs` forgets a dead run's lock file once its directories
    // are gone, and a container whose owner has no lock file is of an unknown owner, kept.
    if pg_container::daemon_socket_answers().is_ok() {
        pg_container::report_reaped(pg_container::blocking(pg_container::reap_dead_containers()));
    }
    let reaped = reap::reap_dead_runs(&extra_bases());
    if !reaped.is_empty() {
        eprintln!("{}", reaped_at_start_line(&reaped));
    }
    install_signal_thread();
}

/// Call at a normal exit: removes anything still carrying this run's token, then its lock.
/// If a signal arrived meanwhile (a command that is not cancellable may fail because the
/// sweep removed its directories), it never returns: the signal thread exits with 130/143.
pub fn finish() {
    if SIGNALLED.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    reap::sweep_own(&extra_bases());
    // Every container's Drop removed it; this finds one whose Drop never ran (leaked handle).
    if pg_container::started_any() {
        if let Err(e) = pg_container::blocking(pg_container::remove_own_containers()) {
            eprintln!("tidemark: {e}");
        }
    }
    reap::release_own_lock();
}

/// Runs `command` until it finishes or a signal cancels it; `None` when cancelled (the caller
/// then waits: the signal thread exits the process).
pub async fn cancellable<T>(command: impl std::future::Future<Output = T>) -> Option<T> {
    CANCELLABLE.store(true, Ordering::SeqCst);
    let out = tokio::select! {
        out = command => Some(out),
        _ = CANCEL.notified() => None,
    };
    // The command's future is gone by now, finished or cancelled: its Drops have run, so the
    // signal thread need not wait for them. A signal that arrived while it finished still
    // stops the run (130/143), not a success.
    let (lock, cvar) = &DROPPED;
    *lock.lock().expect("never poisoned") = true;
    cvar.notify_all();
    if SIGNALLED.load(Ordering::SeqCst) {
        return None;
    }
    out
}

fn install_signal_thread() {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime for signals");
    // Registered here, before main goes on, so no signal finds the default action.
    let registered = {
        let _guard = rt.enter();
        signal(SignalKind::interrupt()).and_then(|i| Ok((i, signal(SignalKind::terminate())?)))
    };
    let Ok((mut sigint, mut sigterm)) = registered else {
        eprintln!("tidemark: cannot handle SIGINT/SIGTERM; an interrupted run will not clean up");
        return;
    };
    std::thread::spawn(move || {
        let number = rt.block_on(async {
            tokio::select! {
                _ = sigint.recv() => libc::SIGINT,
                _ = sigterm.recv() => libc::SIGTERM,
            }
        });
        SIGNALLED.store(true, Ordering::SeqCst);
        let name = if number == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        eprintln!("tidemark: {name}: stopping the implementation and cleaning up");
        if CANCELLABLE.load(Ordering::SeqCst) {
            CANCEL.notify_one();
            let (lock, cvar) = &DROPPED;
            let guard = lock.lock().expect("never poisoned");
            let _ = cvar
                .wait_timeout_while(guard, Duration::from_millis(DROP_GRACE_MS), |d| !*d)
                .expect("never poisoned");
        }
        tidemark_sim::owner::stop_marking();
        let reaped = reap::sweep_own(&extra_bases());
        let databases = rt.block_on(drop_own_databases());
        let databases = databases.unwrap_or_else(|e| {
            eprintln!("tidemark: {e}");
            0
        });
        let containers = if pg_container::started_any() {
            rt.block_on(pg_container::remove_own_containers())
                .unwrap_or_else(|e| {
                    eprintln!("tidemark: {e}");
                    0
                })
        } else {
            0
        };
        if !reaped.is_empty() || databases > 0 || containers > 0 {
            eprintln!("{}", swept_line(&reaped, databases, containers));
        }
        std::process::exit(128 + number);
    });
}

/// Drops `tdm_<own token>_*` databases on the `DATABASE_URL` server, if one is set.
async fn drop_own_databases() -> Result<usize, String> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        return Ok(0);
    };
    if url.trim().is_empty() {
        return Ok(0);
    }
    let options: tidemark_sim::real_tier::pg_reap::PgConnectOptions = url
        .parse()
        .map_err(|e| format!("DATABASE_URL does not parse: {e}"))?;
    tidemark_sim::real_tier::pg_reap::drop_own_databases(&options)
        .await
        .map(|names| names.len())
}

/// The line a run prints when it removed what killed runs left.
fn reaped_at_start_line(r: &Reaped) -> String {
    format!("tidemark: removed what killed runs left: {}", describe(r))
}

/// The line an interrupted run prints after its sweep.
fn swept_line(r: &Reaped, databases: usize, containers: usize) -> String {
    format!(
        "tidemark: removed after the command stopped: {}, {databases} database(s), \
         {containers} container(s)",
        describe(r)
    )
}

fn describe(r: &Reaped) -> String {
    format!(
        "{} process(es), {} directory(ies), {} PostgreSQL cluster(s)",
        r.processes,
        r.directories.len(),
        r.clusters
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cleanup_lines_say_what_was_removed() {
        let r = Reaped {
            processes: 2,
            directories: vec![
                PathBuf::from("/tmp/tidemark-pg-x"),
                PathBuf::from("/tmp/tidemark-s3-y"),
            ],
            clusters: 1,
            runs: 1,
        };
        insta::assert_snapshot!(reaped_at_start_line(&r), @"tidemark: removed what killed runs left: 2 process(es), 2 directory(ies), 1 PostgreSQL cluster(s)");
        insta::assert_snapshot!(swept_line(&r, 3, 1), @"tidemark: removed after the command stopped: 2 process(es), 2 directory(ies), 1 PostgreSQL cluster(s), 3 database(s), 1 container(s)");
    }
}

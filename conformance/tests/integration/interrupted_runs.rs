//! Nothing outlives a run (issue 14 item 2, issue 12 item 4): the `tidemark` binary is
//! interrupted by SIGINT, SIGTERM or SIGKILL (then run again), or runs an implementation that
//! is stuck, leaves a worker behind its exiting leader, or has a helper that called `setsid()`;
//! each test then lists what is left and asserts nothing is: no process, no directory, no
//! `tdm_` database.
//!
//! Each run gets its own sandbox as `TMPDIR` and `TIDEMARK_TMPDIR`, so every directory it makes
//! is listed there, and every process it starts (PostgreSQL included) inherits
//! `TMPDIR=<sandbox>`, which is how leftover processes are found.

use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use super::sandbox::{signal, stderr_of, wait_bounded, wait_until, Sandbox};

/// A scenario of the scoped profile is under way: its S3 directory exists.
fn scoped_scenario_started(sandbox: &Sandbox) -> bool {
    sandbox
        .directories()
        .iter()
        .any(|d| d.starts_with("tidemark-s3-"))
}

/// Runs the scoped suite (`impl_args` adds `--impl ...`), interrupts it with `sig` once a
/// scenario is under way, and returns its exit status and stderr. `Kill::HarnessAndGuard`
/// SIGKILLs the run's guard first, as a kill of everything at once would.
fn interrupt_scoped(
    sandbox: &Sandbox,
    impl_args: &[&str],
    sig: i32,
    database_url: Option<&str>,
) -> (ExitStatus, String) {
    interrupt_scoped_killing(sandbox, impl_args, sig, database_url, Kill::Harness)
}

#[derive(PartialEq)]
enum Kill {
    Harness,
    HarnessAndGuard,
}

fn interrupt_scoped_killing(
    sandbox: &Sandbox,
    impl_args: &[&str],
    sig: i32,
    database_url: Option<&str>,
    kill: Kill,
) -> (ExitStatus, String) {
    let mut args = vec!["run", "--profile", "scoped", "--jobs", "2"];
    args.extend_from_slice(impl_args);
    let mut child = sandbox.tidemark(&args, database_url).spawn().unwrap();
    wait_until("a scoped scenario to start", || {
        scoped_scenario_started(sandbox)
    });
    if let Some(url) = database_url {
        let options = url.parse().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        wait_until("a scenario's database", || {
            rt.block_on(tidemark_sim::real_tier::pg_reap::run_databases(&options))
                .is_ok_and(|names| !names.is_empty())
        });
    }
    // Before the signal there is something to leak (so the test is not vacuous): a cluster,
    // or with DATABASE_URL the scenarios' databases.
    if database_url.is_none() {
        let procs = sandbox.processes();
        assert!(
            procs.iter().any(|p| p.contains("postgres")),
            "a cluster runs: {procs:?}"
        );
    }
    if kill == Kill::HarnessAndGuard {
        assert!(!sandbox.guards().is_empty(), "the run has a guard");
        sandbox.kill_guards();
    }
    signal(&child, sig);
    let status = wait_bounded(&mut child);
    (status, stderr_of(&mut child))
}

/// One short, complete scoped run in the same sandbox: it must reap what a killed run left.
fn next_run(sandbox: &Sandbox, database_url: Option<&str>) -> String {
    let out = sandbox
        .tidemark(
            &[
                "run",
                "--profile",
                "scoped",
                "--only",
                "scoped::an_empty_session_still_expires",
            ],
            database_url,
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the next run passes: {stderr}");
    stderr
}

fn reference_adapter() -> String {
    PathBuf::from(env!("CARGO_BIN_EXE_tidemark"))
        .with_file_name("tidemark-reference-adapter")
        .display()
        .to_string()
}

use std::os::unix::process::ExitStatusExt;

#[test]
fn a_scoped_run_stopped_by_sigint_cleans_up_and_exits_130() {
    let sandbox = Sandbox::new();
    let (status, stderr) = interrupt_scoped(&sandbox, &[], libc::SIGINT, None);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("SIGINT: stopping"), "{stderr}");
    sandbox.assert_clean("after SIGINT");
}

#[test]
fn a_scoped_run_stopped_by_sigterm_cleans_up_and_exits_143() {
    let sandbox = Sandbox::new();
    let (status, stderr) = interrupt_scoped(&sandbox, &[], libc::SIGTERM, None);
    assert_eq!(status.code(), Some(143), "{stderr}");
    sandbox.assert_clean("after SIGTERM");
}

#[test]
fn what_a_sigkilled_scoped_run_and_its_guard_left_is_removed_by_the_next_run() {
    let sandbox = Sandbox::new();
    let (status, _) =
        interrupt_scoped_killing(&sandbox, &[], libc::SIGKILL, None, Kill::HarnessAndGuard);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // The evidence: SIGKILL of the harness and its guard leaves the cluster's and the S3
    // server's directories.
    let left = sandbox.directories();
    assert!(
        left.iter().any(|d| d.starts_with("tidemark-pg-")),
        "{left:?}"
    );
    let stderr = next_run(&sandbox, None);
    assert!(stderr.contains("removed what killed runs left"), "{stderr}");
    sandbox.assert_clean("after SIGKILL and a next run");
    assert_eq!(sandbox.lock_files(), Vec::<String>::new());
}

#[test]
fn an_impl_scoped_run_stopped_by_sigint_leaves_nothing() {
    let sandbox = Sandbox::new();
    let adapter = reference_adapter();
    let (status, stderr) = interrupt_scoped(&sandbox, &["--impl", &adapter], libc::SIGINT, None);
    assert_eq!(status.code(), Some(130), "{stderr}");
    sandbox.assert_clean("after SIGINT");
}

#[test]
fn an_impl_scoped_run_stopped_by_sigterm_leaves_nothing() {
    let sandbox = Sandbox::new();
    let adapter = reference_adapter();
    let (status, stderr) = interrupt_scoped(&sandbox, &["--impl", &adapter], libc::SIGTERM, None);
    assert_eq!(status.code(), Some(143), "{stderr}");
    sandbox.assert_clean("after SIGTERM");
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn what_a_sigkilled_impl_scoped_run_left_is_removed_by_its_guard_with_no_next_run() {
    let sandbox = Sandbox::new();
    let adapter = reference_adapter();
    let (status, _) = interrupt_scoped(&sandbox, &["--impl", &adapter], libc::SIGKILL, None);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    sandbox.assert_clean("after SIGKILL, by the run's guard");
    // The run's lock stays for the next run (a DATABASE_URL's databases are its to drop), which
    // finds nothing else and forgets the run.
    next_run(&sandbox, None);
    sandbox.assert_clean("after SIGKILL and a next run");
    assert_eq!(sandbox.lock_files(), Vec::<String>::new());
}

/// Starts a scratchpad `--impl` run of a misbehaving fixture and waits until its scenario's
/// implementation is stuck on a file operation.
/// `min_processes`: how many processes of the fixture run once it is stuck (a helper counts).
fn stuck_run(sandbox: &Sandbox, fixture: &str, min_processes: usize, extra: &[&str]) -> Child {
    let command = format!("python3 fixtures/adapters/{fixture}");
    let mut args = vec![
        "run",
        "--profile",
        "scratchpad",
        "--impl",
        &command,
        "--only",
        "scratchpad::own_path_wins",
    ];
    args.extend_from_slice(extra);
    let child = sandbox.tidemark(&args, None).spawn().unwrap();
    // The probe's directory is `tidemark-probe-*`; the scenario's is another `tidemark-*`.
    wait_until("the scenario's implementation to start", || {
        sandbox
            .directories()
            .iter()
            .any(|d| d.starts_with("tidemark-") && !d.starts_with("tidemark-probe-"))
            && sandbox
                .processes()
                .iter()
                // The harness's own command line names the fixture too.
                .filter(|p| p.contains(fixture) && !p.contains("tidemark run"))
                .count()
                >= min_processes
    });
    std::thread::sleep(Duration::from_millis(500));
    child
}

#[test]
fn a_stuck_implementation_dies_with_a_run_stopped_by_sigint() {
    let sandbox = Sandbox::new();
    let mut child = stuck_run(&sandbox, "never-answers.py", 1, &[]);
    assert!(sandbox
        .processes()
        .iter()
        .any(|p| p.contains("never-answers") && !p.contains("tidemark run")));
    signal(&child, libc::SIGINT);
    let status = wait_bounded(&mut child);
    assert_eq!(status.code(), Some(130), "{}", stderr_of(&mut child));
    sandbox.assert_clean("after SIGINT");
}

#[test]
fn a_stuck_implementation_and_its_setsid_helper_die_after_sigkill_with_no_next_run() {
    let sandbox = Sandbox::new();
    let mut child = stuck_run(&sandbox, "setsid-escapee.py", 2, &[]);
    signal(&child, libc::SIGKILL);
    wait_bounded(&mut child);
    // The kernel killed the implementation with the harness (PR_SET_PDEATHSIG); its helper,
    // in its own session, is the run's guard's to kill (its cgroup, or TIDEMARK_RUN).
    sandbox.assert_clean("after SIGKILL, by the run's guard");
}

#[test]
fn a_stuck_implementations_setsid_helper_dies_after_sigkill_of_harness_and_guard_and_a_next_run() {
    let sandbox = Sandbox::new();
    let mut child = stuck_run(&sandbox, "setsid-escapee.py", 2, &[]);
    assert!(!sandbox.guards().is_empty(), "the run has a guard");
    sandbox.kill_guards();
    signal(&child, libc::SIGKILL);
    wait_bounded(&mut child);
    // The helper is still there until a next run finds it (its cgroup, or TIDEMARK_RUN).
    // (The kernel's kill and the implementation's exit take a moment on a loaded machine.)
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = sandbox.processes();
    while left.len() != 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = sandbox.processes();
    }
    assert!(
        left.len() == 1 && left[0].contains("setsid-escapee"),
        "{left:?}"
    );
    next_run(&sandbox, None);
    sandbox.assert_clean("after SIGKILL and a next run");
}

#[test]
fn a_live_runs_processes_and_directories_are_never_reaped() {
    let sandbox = Sandbox::new();
    let mut live = stuck_run(&sandbox, "never-answers.py", 1, &["--timeout-ms", "20000"]);
    let (procs, dirs) = (sandbox.processes(), sandbox.directories());
    // Another run in the same temp dir reaps at its start: the live run's things stay.
    next_run(&sandbox, None);
    assert!(
        live.try_wait().unwrap().is_none(),
        "the live run still runs"
    );
    let still: Vec<String> = sandbox.processes();
    for p in procs
        .iter()
        .filter(|p| p.contains("never-answers") && !p.contains("tidemark run"))
    {
        assert!(still.contains(p), "{p} was killed; left: {still:?}");
    }
    for d in &dirs {
        assert!(sandbox.directories().contains(d), "{d} was removed");
    }
    signal(&live, libc::SIGINT);
    assert_eq!(wait_bounded(&mut live).code(), Some(130));
    sandbox.assert_clean("after the live run was stopped");
}

/// Runs a fixture through one scenario that times out, to the end (no interruption).
fn complete_run(sandbox: &Sandbox, fixture: &str) -> String {
    let command = format!("python3 fixtures/adapters/{fixture}");
    let out = sandbox
        .tidemark(
            &[
                "run",
                "--profile",
                "scratchpad",
                "--impl",
                &command,
                "--only",
                "scratchpad::own_path_wins",
                "--timeout-ms",
                "500",
            ],
            None,
        )
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "the scenario fails (it times out)"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_worker_whose_leader_exited_first_dies_with_the_scenario() {
    let sandbox = Sandbox::new();
    complete_run(&sandbox, "wrapper-leaves-worker.py");
    sandbox.assert_clean("after a run whose implementation's leader exited first");
    assert_eq!(sandbox.lock_files(), Vec::<String>::new());
}

#[test]
fn a_helper_that_called_setsid_dies_with_the_scenario() {
    let sandbox = Sandbox::new();
    complete_run(&sandbox, "setsid-escapee.py");
    sandbox.assert_clean("after a run whose implementation's helper called setsid()");
}

/// A PostgreSQL server of the test's own, as a user's `DATABASE_URL` would be.
struct OwnServer {
    cluster: tidemark_sim::real_tier::pg_cluster::EphemeralCluster,
    rt: tokio::runtime::Runtime,
}

impl OwnServer {
    fn start() -> OwnServer {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let bin = ["/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.join("initdb").is_file())
            .or_else(|| std::env::var_os("TIDEMARK_PG_BIN").map(PathBuf::from))
            .expect("PostgreSQL binaries");
        let cluster = rt
            .block_on(tidemark_sim::real_tier::pg_cluster::EphemeralCluster::start(&bin))
            .expect("a cluster for the test");
        OwnServer { cluster, rt }
    }

    fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            self.cluster.port()
        )
    }

    fn run_databases(&self) -> Vec<String> {
        let options = self.url().parse().unwrap();
        self.rt
            .block_on(tidemark_sim::real_tier::pg_reap::run_databases(&options))
            .unwrap()
    }
}

#[test]
fn a_database_url_run_stopped_by_sigint_drops_its_databases() {
    let server = OwnServer::start();
    let sandbox = Sandbox::new();
    let url = server.url();
    let (status, stderr) = interrupt_scoped(&sandbox, &[], libc::SIGINT, Some(&url));
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(server.run_databases(), Vec::<String>::new(), "{stderr}");
    sandbox.assert_clean("after SIGINT");
}

#[test]
fn databases_of_a_sigkilled_database_url_run_are_dropped_by_the_next_run() {
    let server = OwnServer::start();
    let sandbox = Sandbox::new();
    let url = server.url();
    let (status, _) = interrupt_scoped(&sandbox, &[], libc::SIGKILL, Some(&url));
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    let left = server.run_databases();
    assert!(!left.is_empty(), "SIGKILL leaves the scenarios' databases");
    let stderr = next_run(&sandbox, Some(&url));
    assert!(stderr.contains("dropped"), "{stderr}");
    assert_eq!(server.run_databases(), Vec::<String>::new());
    sandbox.assert_clean("after SIGKILL and a next run");
}

/// Interrupted while its cluster is still being made (initdb running) and while it runs. The
/// first used to leave the cluster's directory behind, unmarked: the killed initdb was still
/// writing into it when the sweep removed it, and `remove_dir_all` had already deleted the
/// owner file. Directories are now removed with their mark last.
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_scoped_exploration_stopped_by_sigint_leaves_nothing() {
    // Exploration drives its own runtimes, so it is not cancelled: the sweep alone cleans up
    // after it, and nothing it still does may create what the sweep would miss.
    for delay_ms in [1_000, 4_000] {
        let sandbox = Sandbox::new();
        let mut child = sandbox
            .tidemark(
                &[
                    "explore",
                    "--profile",
                    "scoped",
                    "--seeds",
                    "300",
                    "--no-save",
                ],
                None,
            )
            .spawn()
            .unwrap();
        wait_until("the exploration's cluster", || {
            sandbox.processes().iter().any(|p| p.contains("postgres"))
        });
        std::thread::sleep(Duration::from_millis(delay_ms));
        signal(&child, libc::SIGINT);
        let status = wait_bounded(&mut child);
        assert_eq!(status.code(), Some(130), "{}", stderr_of(&mut child));
        sandbox.assert_clean(&format!("after SIGINT {delay_ms} ms into the cluster"));
    }
}

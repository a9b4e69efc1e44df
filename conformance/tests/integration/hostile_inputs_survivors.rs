//! Issue 20's hostile inputs, group 3 (`survivor_*`): a helper that detaches dies with
//! its session and its run, and nothing of another run is touched. Split from `hostile_inputs.rs` (whose doc lists every
//! group, and which holds the helpers these tests share) so each file is one group of the
//! issue's list; every test is the same test, moved whole.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};

use tidemark_conformance::spec::repo_root;

use super::hostile_inputs::{run, shown};
use super::sandbox::{alive, signal, stderr_of, wait_bounded, wait_until, Sandbox};

// ---- 3. Survivors: a helper that detaches -------------------------------------------------------

/// The pids the helpers of `detaching-helper.py` wrote into `dir`.
fn helpers(dir: &Path) -> Vec<i32> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.parse().ok())
        .collect()
}

/// Asserts every helper is gone within `bound` (and kills any that is not, so a failing test
/// leaves nothing).
fn assert_helpers_gone(dir: &Path, bound: Duration, after: &str) {
    let all = helpers(dir);
    assert!(
        !all.is_empty(),
        "no helper started: the test proves nothing"
    );
    let deadline = Instant::now() + bound;
    while all.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<i32> = all.iter().copied().filter(|&p| alive(p)).collect();
    for &p in &left {
        // SAFETY: kill(2) on a pid the test's own fixture wrote.
        unsafe {
            libc::kill(p, libc::SIGKILL);
        }
    }
    assert!(left.is_empty(), "helpers {left:?} outlived {after}");
}

/// Whether this machine lets a run make cgroups (as root in CI it does). Where it does not, a
/// helper that both leaves its session and drops its environment after a double fork is beyond
/// the fallback's reach (process groups, `TIDEMARK_RUN`, parent links): the tests of that case
/// say so and check nothing.
fn cgroups_here() -> bool {
    let here = std::env::var_os("HOSTILE_WITHOUT_CGROUPS").is_none()
        && tidemark_sim::contain::Cgroup::new(u64::MAX).is_some();
    if !here {
        eprintln!("no cgroup2 this run may write: the fully detached helper is not contained here");
    }
    here
}

/// A scratchpad run of `detaching-helper.py MODE` through one scenario; without cgroups when
/// `HOSTILE_WITHOUT_CGROUPS` is set (the fallback's own check).
fn helper_run(
    sandbox: &Sandbox,
    mode: &str,
    pids: &Path,
    timeout_ms: &str,
) -> std::process::Command {
    let command = format!(
        "python3 fixtures/adapters/detaching-helper.py {mode} {}",
        pids.display()
    );
    let mut cmd = sandbox.tidemark(
        &[
            "run",
            "--profile",
            "scratchpad",
            "--impl",
            &command,
            "--only",
            "scratchpad::own_path_wins",
            "--timeout-ms",
            timeout_ms,
        ],
        None,
    );
    if std::env::var_os("HOSTILE_WITHOUT_CGROUPS").is_some() {
        cmd.env(tidemark_sim::contain::CGROUP_ENV, "off");
    }
    cmd
}

/// The run ends (its one scenario times out); every helper is gone by then.
fn helper_dies_with_the_run(mode: &str) {
    let sandbox = Sandbox::new();
    let pids = tempfile::tempdir().unwrap();
    let out = helper_run(&sandbox, mode, pids.path(), "500")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", shown(&out));
    assert_helpers_gone(pids.path(), Duration::from_secs(2), "the run");
    sandbox.assert_clean(&format!("a run whose helper detached ({mode})"));
}

#[test]
fn survivor_a_setsid_helper_ignoring_sigterm_dies_with_the_run() {
    helper_dies_with_the_run("setsid");
}

#[test]
fn survivor_a_helper_without_tidemark_run_in_its_own_session_dies_with_the_run() {
    helper_dies_with_the_run("no-env");
}

#[test]
fn survivor_a_double_forked_helper_without_tidemark_run_whose_leader_left_dies_with_the_run() {
    helper_dies_with_the_run("double-fork");
}

#[test]
fn survivor_a_helper_detached_every_way_dies_with_the_run() {
    if !cgroups_here() {
        return;
    }
    helper_dies_with_the_run("all");
}

/// Waits until a scenario's implementation (not the probe's: its directory is
/// `tidemark-probe-*`) runs and has started its helper.
fn wait_for_the_scenarios_helper(sandbox: &Sandbox, pids: &Path) {
    wait_until("the scenario's implementation", || {
        sandbox
            .directories()
            .iter()
            .any(|d| !d.starts_with("tidemark-probe-"))
    });
    wait_until("its helper", || !helpers(pids).is_empty());
    std::thread::sleep(Duration::from_millis(1_000));
}

/// The harness is SIGKILLed while its implementation is stuck; every helper dies within
/// seconds, with no later run to reap it, and the run's directories go too.
fn helper_dies_with_a_sigkilled_harness(mode: &str) {
    let sandbox = Sandbox::new();
    let pids = tempfile::tempdir().unwrap();
    let mut child = helper_run(&sandbox, mode, pids.path(), "60000")
        .spawn()
        .unwrap();
    wait_for_the_scenarios_helper(&sandbox, pids.path());
    signal(&child, libc::SIGKILL);
    assert_eq!(wait_bounded(&mut child).signal(), Some(libc::SIGKILL));
    assert_helpers_gone(pids.path(), Duration::from_secs(5), "a SIGKILLed harness");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !sandbox.directories().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    sandbox.assert_clean("a SIGKILLed harness, with no later run");
}

#[test]
fn survivor_a_setsid_helper_ignoring_sigterm_dies_with_a_sigkilled_harness() {
    helper_dies_with_a_sigkilled_harness("setsid");
}

#[test]
fn survivor_a_helper_detached_every_way_dies_with_a_sigkilled_harness() {
    if !cgroups_here() {
        return;
    }
    helper_dies_with_a_sigkilled_harness("all");
}

#[test]
fn survivor_another_runs_contained_helper_is_never_touched() {
    if !cgroups_here() {
        return;
    }
    let sandbox = Sandbox::new();
    let pids = tempfile::tempdir().unwrap();
    let mut live = helper_run(&sandbox, "all", pids.path(), "60000")
        .spawn()
        .unwrap();
    wait_for_the_scenarios_helper(&sandbox, pids.path());
    let before = helpers(pids.path());
    // Another run in the same temp dir, start to finish, and one SIGKILLed.
    let other = sandbox
        .tidemark(
            &[
                "run",
                "--profile",
                "scratchpad",
                "--only",
                "scratchpad::own_path_wins",
            ],
            None,
        )
        .output()
        .unwrap();
    assert!(other.status.success(), "{}", shown(&other));
    let mut killed = sandbox
        .tidemark(&["run", "--profile", "scratchpad"], None)
        .spawn()
        .unwrap();
    signal(&killed, libc::SIGKILL);
    wait_bounded(&mut killed);
    std::thread::sleep(Duration::from_millis(500));
    let live_helpers: Vec<i32> = before.iter().copied().filter(|&p| alive(p)).collect();
    assert!(
        !live_helpers.is_empty(),
        "another run killed the live run's helpers {before:?}"
    );
    assert!(
        live.try_wait().unwrap().is_none(),
        "the live run still runs"
    );
    signal(&live, libc::SIGINT);
    assert_eq!(
        wait_bounded(&mut live).code(),
        Some(130),
        "{}",
        stderr_of(&mut live)
    );
    assert_helpers_gone(pids.path(), Duration::from_secs(3), "the live run's SIGINT");
}

#[test]
fn survivor_replay_removes_its_lock_file_at_a_clean_exit() {
    let sandbox = Sandbox::new();
    let fixture =
        repo_root().join("fixtures/explore/scratchpad/scratchpad-dotdot-normalised-seed-0.json");
    let out = run(&sandbox, &["replay", &fixture.display().to_string()]);
    assert_eq!(out.status.code(), Some(1), "{}", shown(&out));
    assert_eq!(sandbox.lock_files(), Vec::<String>::new());
    sandbox.assert_clean("a replay");
}

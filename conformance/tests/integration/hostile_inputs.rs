//! Issue 20: the harness runs strangers' code as root in CI. Each test here is one hostile input,
//! kept as a test so it cannot regress, grouped by what it attacks:
//!
//! - `escape_*`: an implementation replaces a directory it was handed (its root, its working
//!   directory) and the harness's disk steps must neither write nor look through it;
//! - `secret_*`: a scenario file or folder that is a symlink leaving `--scenarios` must be
//!   refused by name, with no byte of its target shown;
//! - `survivor_*`: whatever an implementation's helper does to detach, it dies with its session,
//!   and with the run even when the harness is SIGKILLed; nothing of another run is touched;
//! - `loader_*`: every profile finds, refuses and reports files by one set of rules;
//! - `number_*`: numbers from scenario files, saved failures, protocol answers and the command
//!   line are range-checked, never wrapped;
//! - `smaller_*`: the rest of the list.
//!
//! Every test drives the `tidemark` binary, in a sandbox of its own (`sandbox.rs`), so the same
//! tests count how an older build fares: `TIDEMARK_UNDER_TEST=<its binary> cargo test --test
//! integration hostile_inputs::`.
//!
//! Why this file passes 800 lines: it has one reason, the list of hostile inputs, read
//! and checked off as one list; each group is a few tests sharing this file's sandbox helpers.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use tidemark_conformance::spec::repo_root;

use super::sandbox::{alive, signal, stderr_of, wait_bounded, wait_until, Sandbox};

/// A scenario directory of the test's own, its files given as (relative path, text).
fn suite(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("hostile-suite-")
        .tempdir()
        .unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

fn spec() -> String {
    repo_root().join("SPEC.md").display().to_string()
}

/// `tidemark <args>` in `sandbox`, both outputs kept.
fn run(sandbox: &Sandbox, args: &[&str]) -> Output {
    sandbox
        .tidemark(args, None)
        .stdout(Stdio::piped())
        .output()
        .unwrap()
}

/// Stdout and stderr together, for "is this shown anywhere" checks.
fn shown(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

const SCRATCHPAD_HEAD: &str =
    "scenario: the harness keeps to what it was given\nprofile: scratchpad\nrules: SP-1.3\n";

// ---- 1. An escape: a directory the implementation was handed, replaced -------------------------

/// Runs one scratchpad scenario (`steps` after the header) against `replaces-its-root.py MODE`,
/// whose target directory holds `only-in-target.txt`. Returns the run's output and the target's
/// listing afterwards.
fn replaced(mode: &str, steps: &str) -> (Output, Vec<String>) {
    let sandbox = Sandbox::new();
    let target = tempfile::Builder::new()
        .prefix("hostile-target-")
        .tempdir()
        .unwrap();
    std::fs::write(target.path().join("only-in-target.txt"), "not the run's").unwrap();
    let scenarios = suite(&[(
        "scratchpad/replaced.tdm",
        &format!("{SCRATCHPAD_HEAD}{steps}\n"),
    )]);
    let command = format!(
        "python3 fixtures/adapters/replaces-its-root.py {mode} {}",
        target.path().display()
    );
    let out = run(
        &sandbox,
        &[
            "run",
            "--profile",
            "scratchpad",
            "--scenarios",
            &scenarios.path().display().to_string(),
            "--spec",
            &spec(),
            "--impl",
            &command,
        ],
    );
    (out, listing(target.path()))
}

/// The scenario failed, naming the replaced directory, and nothing of the target was touched or
/// shown.
fn assert_refused(what: &str, (out, target): (Output, Vec<String>)) {
    let text = shown(&out);
    assert_eq!(
        target,
        ["only-in-target.txt"],
        "the target was written: {text}"
    );
    // The scenario's own step line may name the file; nothing else may.
    let beyond_the_step: String = text
        .lines()
        .filter(|l| !l.contains("replaced.tdm:"))
        .collect();
    assert!(
        !beyond_the_step.contains("only-in-target"),
        "the target was shown: {text}"
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("the {what}")) && text.contains("replaced"),
        "the failure does not name the replaced {what}: {text}"
    );
}

#[test]
fn escape_a_disk_mkdir_never_follows_a_root_replaced_by_a_symlink() {
    assert_refused("root", replaced("root-symlink", "disk mkdir planted"));
}

#[test]
fn escape_a_disk_write_never_follows_a_root_replaced_by_a_symlink() {
    assert_refused(
        "root",
        replaced("root-symlink", "disk write planted/file.txt \"escaped\""),
    );
}

#[test]
fn escape_a_disk_symlink_is_never_planted_through_a_replaced_root() {
    assert_refused(
        "root",
        replaced("root-symlink", "disk symlink planted -> $OUTSIDE"),
    );
}

#[test]
fn escape_a_disk_exists_never_looks_through_a_replaced_root() {
    assert_refused(
        "root",
        replaced("root-symlink", "disk exists only-in-target.txt"),
    );
}

#[test]
fn escape_no_path_contains_never_lists_what_a_replaced_root_points_at() {
    assert_refused(
        "root",
        replaced("root-symlink", "disk no-path-contains only-in"),
    );
}

#[test]
fn escape_workdir_empty_never_lists_what_a_replaced_workdir_points_at() {
    assert_refused(
        "working directory",
        replaced("workdir-symlink", "workdir empty"),
    );
}

#[test]
fn escape_a_root_swapped_for_another_real_directory_is_not_the_runs() {
    assert_refused(
        "root",
        replaced("root-directory", "disk write planted.txt \"x\""),
    );
}

// ---- 2. A secret shown: a scenario file or folder that leaves the tree --------------------------

const CANARY: &str = "CANARY-8d1e-not-a-scenario";

/// Runs `--profile <profile>` over `scenarios`, with the canary in the environment too.
fn load_run(scenarios: &Path, profile: &str) -> Output {
    let sandbox = Sandbox::new();
    sandbox
        .tidemark(
            &[
                "run",
                "--profile",
                profile,
                "--tier",
                "memory",
                "--scenarios",
                &scenarios.display().to_string(),
                "--spec",
                &spec(),
            ]
            .into_iter()
            .filter(|a| profile == "rows" || (*a != "--tier" && *a != "memory"))
            .collect::<Vec<_>>(),
            None,
        )
        .env("TIDEMARK_HOSTILE_CANARY", CANARY)
        .stdout(Stdio::piped())
        .output()
        .unwrap()
}

/// The load was refused (exit 2) naming `link`, and no byte of the canary was shown.
fn assert_refused_link(out: &Output, link: &str) {
    let text = shown(out);
    assert!(!text.contains("CANARY"), "a secret was shown: {text}");
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(link),
        "the refusal does not name {link}: {text}"
    );
    assert!(text.contains("outside"), "{text}");
}

/// A directory outside any suite holding a scenario whose first line is the canary.
fn outside_with_canary() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("hostile-outside-")
        .tempdir()
        .unwrap();
    std::fs::write(
        dir.path().join("secret.tdm"),
        format!("{CANARY} token=1234\nrules: SP-1.1\n"),
    )
    .unwrap();
    dir
}

#[test]
fn secret_a_scenario_file_linked_to_a_file_outside_is_refused_unread() {
    let outside = outside_with_canary();
    let scenarios = suite(&[]);
    std::fs::create_dir(scenarios.path().join("scratchpad")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.tdm"),
        scenarios.path().join("scratchpad/leak.tdm"),
    )
    .unwrap();
    assert_refused_link(&load_run(scenarios.path(), "scratchpad"), "leak.tdm");
}

#[test]
fn secret_a_scenario_file_linked_to_the_harness_environment_is_refused_unread() {
    let scenarios = suite(&[]);
    std::fs::create_dir(scenarios.path().join("rows")).unwrap();
    std::os::unix::fs::symlink(
        "/proc/self/environ",
        scenarios.path().join("rows/environ.tdm"),
    )
    .unwrap();
    assert_refused_link(&load_run(scenarios.path(), "rows"), "environ.tdm");
}

#[test]
fn secret_a_profile_folder_linked_outside_is_refused_unread() {
    let outside = outside_with_canary();
    let scenarios = suite(&[]);
    std::os::unix::fs::symlink(outside.path(), scenarios.path().join("scoped")).unwrap();
    assert_refused_link(&load_run(scenarios.path(), "scoped"), "scoped");
}

#[test]
fn secret_a_link_to_a_link_that_leaves_is_refused_unread() {
    let outside = outside_with_canary();
    let scenarios = suite(&[]);
    std::fs::create_dir(scenarios.path().join("scratchpad")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.tdm"),
        scenarios.path().join("scratchpad/hop.tdm"),
    )
    .unwrap();
    std::os::unix::fs::symlink("hop.tdm", scenarios.path().join("scratchpad/first.tdm")).unwrap();
    let out = load_run(scenarios.path(), "scratchpad");
    assert_refused_link(&out, "first.tdm");
    assert_refused_link(&out, "hop.tdm");
}

#[test]
fn secret_a_scratchpad_folder_linked_outside_is_refused_not_skipped() {
    let outside = outside_with_canary();
    let scenarios = suite(&[]);
    std::os::unix::fs::symlink(outside.path(), scenarios.path().join("scratchpad")).unwrap();
    assert_refused_link(&load_run(scenarios.path(), "scratchpad"), "scratchpad");
}

#[test]
fn secret_a_scenario_link_that_leads_nowhere_is_refused_not_skipped() {
    let scenarios = suite(&[]);
    std::fs::create_dir(scenarios.path().join("scratchpad")).unwrap();
    std::os::unix::fs::symlink(
        "/nonexistent/secret.tdm",
        scenarios.path().join("scratchpad/gone.tdm"),
    )
    .unwrap();
    let out = load_run(scenarios.path(), "scratchpad");
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(shown(&out).contains("gone.tdm"), "{}", shown(&out));
}

#[test]
fn secret_a_scenario_named_fifo_is_refused_without_blocking() {
    let scenarios = suite(&[]);
    std::fs::create_dir(scenarios.path().join("scratchpad")).unwrap();
    let fifo = scenarios.path().join("scratchpad/pipe.tdm");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: mkfifo on a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let t = Instant::now();
    let out = load_run(scenarios.path(), "scratchpad");
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(shown(&out).contains("pipe.tdm"), "{}", shown(&out));
}

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

// ---- 4. Loaders that disagree ------------------------------------------------------------------

const ROWS_FAILING: &str = "scenario: a rows scenario kept in another folder still runs\n\
profile: rows\nrules: SR-1.1\n\nworkspace w1\nsession c1 in w1\ncount events in c1 => 1\n";

#[test]
fn loader_a_rows_scenario_outside_the_rows_folder_is_run() {
    let scenarios = suite(&[("misc/elsewhere.tdm", ROWS_FAILING)]);
    let out = load_run(scenarios.path(), "rows");
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("rows::elsewhere"), "{text}");
}

#[test]
fn loader_a_malformed_scoped_scenario_outside_the_scoped_folder_is_a_load_error() {
    let scenarios = suite(&[(
        "misc/scoped-elsewhere.tdm",
        "scenario: s\nprofile: scoped\nrules: SC-1.1\nfrobnicate\n",
    )]);
    let out = load_run(scenarios.path(), "scoped");
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(
        shown(&out).contains("scoped-elsewhere.tdm:4:"),
        "{}",
        shown(&out)
    );
}

#[test]
fn loader_a_missing_scenario_directory_is_the_same_error_for_every_profile() {
    for profile in ["scratchpad", "scoped", "rows"] {
        let out = load_run(Path::new("/nonexistent/hostile-suite"), profile);
        let text = shown(&out);
        assert_eq!(out.status.code(), Some(2), "{profile}: {text}");
        assert!(
            text.contains("/nonexistent/hostile-suite") && text.contains("no such directory"),
            "{profile}: {text}"
        );
    }
}

#[test]
fn loader_a_scenario_directory_that_is_a_file_is_the_same_error_for_every_profile() {
    let file = tempfile::NamedTempFile::new().unwrap();
    for profile in ["scratchpad", "scoped", "rows"] {
        let out = load_run(file.path(), profile);
        let text = shown(&out);
        assert_eq!(out.status.code(), Some(2), "{profile}: {text}");
        assert!(text.contains("not a directory"), "{profile}: {text}");
    }
}

/// A scoped file with `step`, loaded with a rows file that fails to load, so nothing needs a
/// database: the run stops at the load, and says whether the scoped file loaded.
fn scoped_step_loads(step: &str) -> String {
    let scenarios = suite(&[
        (
            "scoped/step.tdm",
            &format!(
                "scenario: s\nprofile: scoped\nrules: SC-5.1\n\ncreate workspace w1\n{step}\n"
            ),
        ),
        (
            "rows/broken.tdm",
            "scenario: r\nprofile: rows\nrules: SR-1.1\nfrobnicate\n",
        ),
    ]);
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "run",
            "--scenarios",
            &scenarios.path().display().to_string(),
            "--spec",
            &spec(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(shown(&out).contains("broken.tdm:4:"), "{}", shown(&out));
    shown(&out)
}

#[test]
fn loader_an_unknown_scoped_refusal_reason_is_a_load_error() {
    let text = scoped_step_loads("w1/a1/s1 read session/x.md => refused no_such_reason");
    assert!(
        text.contains("step.tdm:6:") && text.contains("no_such_reason"),
        "{text}"
    );
}

#[test]
fn loader_an_unknown_scoped_wait_kind_is_a_load_error() {
    let text = scoped_step_loads("w1/a1/s1 wait snoozing x1");
    assert!(
        text.contains("step.tdm:6:") && text.contains("snoozing"),
        "{text}"
    );
}

#[test]
fn loader_an_unknown_scoped_crash_point_is_a_load_error() {
    let text = scoped_step_loads("crash at nowhere");
    assert!(
        text.contains("step.tdm:6:") && text.contains("nowhere"),
        "{text}"
    );
}

#[test]
fn loader_the_scoped_grammar_takes_the_durations_the_language_lists() {
    let text = scoped_step_loads("advance 250ms");
    assert!(!text.contains("step.tdm"), "{text}");
}

#[test]
fn loader_the_rows_grammar_takes_the_durations_the_language_lists() {
    let scenarios = suite(&[(
        "rows/ms.tdm",
        "scenario: a quarter second passes\nprofile: rows\nrules: SR-1.1\n\nworkspace w1\nadvance 250ms\nadvance 1d2h3m4s5ms\n",
    )]);
    let out = load_run(scenarios.path(), "rows");
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
}

#[test]
fn loader_every_malformed_file_of_a_run_is_reported_together() {
    let scenarios = suite(&[
        (
            "scratchpad/first.tdm",
            "scenario: a\nprofile: scratchpad\nrules: SP-1.1\nfrobnicate\n",
        ),
        (
            "scratchpad/second.tdm",
            "scenario: b\nprofile: scratchpad\nrules: SP-1.1\n\nadvance soon\n",
        ),
        (
            "scoped/third.tdm",
            "scenario: c\nprofile: scoped\nrules: SC-1.1\nfrobnicate\n",
        ),
        (
            "rows/fourth.tdm",
            "scenario: d\nprofile: rows\nrules: SR-1.1\nfrobnicate\n",
        ),
    ]);
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "run",
            "--scenarios",
            &scenarios.path().display().to_string(),
            "--spec",
            &spec(),
        ],
    );
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    for located in [
        "first.tdm:4:",
        "second.tdm:5:",
        "third.tdm:4:",
        "fourth.tdm:4:",
    ] {
        assert_eq!(
            text.matches(located).count(),
            1,
            "{located} once in: {text}"
        );
    }
}

#[test]
fn loader_a_file_in_the_older_grammar_is_named_with_what_to_do() {
    let scenarios = suite(&[(
        "scoped/old.tdms",
        "scenario: an old one\nrules: SC-5.1\n\nsweep => swept 0 sessions, 0 deletions\n",
    )]);
    let out = load_run(scenarios.path(), "scoped");
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("old.tdms") && text.contains("rename it"),
        "{text}"
    );
}

#[test]
fn loader_a_symlinked_profile_folder_inside_the_tree_loads_each_scenario_once() {
    let scenarios = suite(&[("library/rows/one.tdm", ROWS_FAILING)]);
    std::os::unix::fs::symlink("library/rows", scenarios.path().join("rows")).unwrap();
    let out = load_run(scenarios.path(), "rows");
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(text.matches("FAIL  rows::one").count(), 1, "{text}");
}

// ---- 5. Numbers that wrap ----------------------------------------------------------------------

#[test]
fn number_a_reaped_total_past_u64_is_not_a_small_one() {
    use tidemark_conformance::profiles::rows::runner::{matches, Outcome};
    use tidemark_conformance::profiles::rows::script::Expect;
    let report = tidemark_reference::rows::ReapReport {
        streamed_events: u64::MAX,
        tool_invocations: 1,
        ..Default::default()
    };
    let outcome = Outcome::Reaped(report);
    let zero = Expect::Reaped {
        total: Some(0),
        sweeps: vec![],
    };
    assert!(!matches(&zero, &outcome));
    assert!(outcome.text().contains("more than"), "{}", outcome.text());
}

fn rows_load_error(step: &str) -> String {
    let scenarios = suite(&[(
        "rows/n.tdm",
        &format!(
            "scenario: n\nprofile: rows\nrules: SR-1.1\n\nworkspace w1\nsession c1 in w1\n{step}\n"
        ),
    )]);
    let out = load_run(scenarios.path(), "rows");
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(shown(&out).contains("n.tdm:7:"), "{}", shown(&out));
    shown(&out)
}

#[test]
fn number_a_count_past_the_largest_row_count_is_a_load_error() {
    rows_load_error("count events in c1 => 18446744073709551615");
}

#[test]
fn number_a_negative_keep_is_a_load_error() {
    rows_load_error("keep refresh_tokens t1 for -5d");
}

#[test]
fn number_seeds_past_the_last_seed_are_refused_not_skipped() {
    let sandbox = Sandbox::new();
    for args in [
        &[
            "explore",
            "--first-seed",
            "18446744073709551615",
            "--seeds",
            "10",
            "--no-save",
        ][..],
        &["explore", "--seeds", "0", "--no-save"][..],
        &[
            "world",
            "--first-seed",
            "18446744073709551615",
            "--seeds",
            "10",
        ][..],
        &[
            "explore",
            "--hunt",
            "--first-seed",
            "18446744073709551000",
            "--seeds",
            "10",
        ][..],
    ] {
        let out = run(&sandbox, args);
        let text = shown(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains("seed"), "{args:?}: {text}");
    }
}

#[test]
fn number_a_reply_bound_past_a_day_is_refused() {
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "run",
            "--impl",
            "python3 examples/python-scratchpad/scratchpad.py",
            "--timeout-ms",
            "18446744073709551615",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(shown(&out).contains("timeout"), "{}", shown(&out));
}

/// A copy of a saved failure with `edit` applied, replayed; the replay must be refused (exit 2)
/// naming `expected`, and leave nothing.
fn replay_refused(fixture: &str, edit: impl Fn(&mut serde_json::Value), expected: &str) {
    let sandbox = Sandbox::new();
    let mut f: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("fixtures/explore").join(fixture)).unwrap(),
    )
    .unwrap();
    edit(&mut f);
    let copy = sandbox.path().join("hostile.json");
    std::fs::write(&copy, serde_json::to_string_pretty(&f).unwrap()).unwrap();
    let out = run(&sandbox, &["replay", &copy.display().to_string()]);
    std::fs::remove_file(&copy).unwrap();
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains(expected), "{text}");
    sandbox.assert_clean("a refused replay");
}

const SCRATCHPAD_SAVED: &str = "scratchpad/scratchpad-dotdot-normalised-seed-0.json";
const ROWS_SAVED: &str = "rows/rows-newest-by-timestamp-seed-16.json";

fn with_scratchpad_advance(ms: i64) -> impl Fn(&mut serde_json::Value) {
    move |f| {
        f["ops"]
            .as_array_mut()
            .unwrap()
            .insert(0, serde_json::json!({"op": "advance", "ms": ms}))
    }
}

#[test]
fn number_a_saved_advance_of_i64_min_is_refused_not_an_abort() {
    replay_refused(
        SCRATCHPAD_SAVED,
        with_scratchpad_advance(i64::MIN),
        "advance",
    );
}

#[test]
fn number_a_saved_advance_before_1970_is_refused() {
    replay_refused(
        SCRATCHPAD_SAVED,
        with_scratchpad_advance(-1_767_225_600_001),
        "advance",
    );
}

#[test]
fn number_a_saved_advance_past_the_span_is_refused() {
    replay_refused(
        SCRATCHPAD_SAVED,
        with_scratchpad_advance(i64::MAX),
        "advance",
    );
}

#[test]
fn number_a_saved_rows_advance_of_i64_min_is_refused() {
    replay_refused(
        ROWS_SAVED,
        |f| {
            f["tier"] = serde_json::json!("memory");
            f["ops"][3] = serde_json::json!({"step": {"advance": i64::MIN}});
        },
        "advance",
    );
}

#[test]
fn number_a_saved_rows_keep_below_zero_is_refused() {
    replay_refused(
        ROWS_SAVED,
        |f| {
            f["tier"] = serde_json::json!("memory");
            f["ops"][3] = serde_json::json!(
                {"step": {"keep": {"store": "refresh_tokens", "id": "t1", "for_ms": -5}}}
            );
        },
        "keep",
    );
}

// ---- 6. The smaller ones -----------------------------------------------------------------------

#[test]
fn smaller_a_scoped_list_item_holding_a_comma_is_one_item() {
    let scenarios = suite(&[(
        "scoped/comma.tdm",
        "scenario: a listed path holding a comma is one item\nprofile: scoped\nrules: SC-1.1\n\n\
         create workspace w1\ncreate agent w1/a1\ncreate session w1/a1/s1\n\
         w1/a1/s1 write \"session/a,b.md\" \"x\" => written \"session/a,b.md\"\n\
         w1/a1/s1 list session => [\"session/a,b.md\"]\n",
    )]);
    let out = load_run(scenarios.path(), "scoped");
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
}

#[test]
fn smaller_a_session_name_longer_than_a_path_segment_is_refused_and_cut() {
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "run",
            "--impl",
            "python3 fixtures/adapters/bad-names.py huge",
            "--only",
            "scratchpad::own_path_wins",
        ],
    );
    let text = shown(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(text.len() < 64 << 10, "{} bytes shown", text.len());
    assert!(
        text.contains("255 bytes"),
        "{}",
        &text[..text.len().min(2000)]
    );
}

#[test]
fn smaller_an_unknown_key_in_the_declared_rows_queries_is_refused() {
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "run",
            "--profile",
            "rows",
            "--impl",
            "python3 fixtures/adapters/rows-queries-typo.py",
            "--timeout-ms",
            "200",
        ],
    );
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("streamed_event_of"), "{text}");
}

/// A suite long enough that a signal lands in the middle of the in-process scratchpad run.
fn long_scratchpad_suite() -> tempfile::TempDir {
    let text = std::fs::read_to_string(
        repo_root().join("scenarios/scratchpad/the-session-cap-evicts-oldest-first.tdm"),
    )
    .unwrap();
    // Long enough to be mid-run when the signal comes at 700 ms: 400 copies took about 1 s on
    // a quiet machine, and finished first in one CI run of two; 2,000 take about 5 s.
    let files: Vec<(String, String)> = (0..2000)
        .map(|i| (format!("scratchpad/copy-{i}.tdm"), text.clone()))
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    suite(&borrowed)
}

fn in_process_run_stops_on(sig: i32, after: Duration, code: i32) {
    let scenarios = long_scratchpad_suite();
    let sandbox = Sandbox::new();
    let mut child = sandbox
        .tidemark(
            &[
                "run",
                "--profile",
                "scratchpad",
                "--scenarios",
                &scenarios.path().display().to_string(),
                "--spec",
                &spec(),
            ],
            None,
        )
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let t = Instant::now();
    signal(&child, sig);
    let status = wait_bounded(&mut child);
    let took = t.elapsed();
    assert_eq!(status.code(), Some(code), "{}", stderr_of(&mut child));
    // The bug took 12 s (a whole suite finished first); 0.1 s is usual. The bound leaves room
    // for a CI machine busy with the tests beside this one (2.3 s was seen under a load of 7).
    assert!(took < Duration::from_secs(6), "it took {took:?} to stop");
    sandbox.assert_clean("an interrupted in-process run");
}

#[test]
fn smaller_sigint_stops_an_in_process_scratchpad_run_at_once() {
    in_process_run_stops_on(libc::SIGINT, Duration::from_millis(700), 130);
}

#[test]
fn smaller_sigterm_stops_an_in_process_scratchpad_run_at_once() {
    in_process_run_stops_on(libc::SIGTERM, Duration::from_millis(700), 143);
}

#[test]
fn smaller_a_signal_sent_early_is_not_ignored() {
    in_process_run_stops_on(libc::SIGINT, Duration::from_millis(150), 130);
}

#[test]
fn smaller_a_gigabyte_of_nul_bytes_is_refused_before_it_is_read() {
    let scenarios = suite(&[]);
    std::fs::create_dir(scenarios.path().join("scratchpad")).unwrap();
    let huge = std::fs::File::create(scenarios.path().join("scratchpad/nul.tdm")).unwrap();
    huge.set_len(1 << 30).unwrap();
    let t = Instant::now();
    let out = load_run(scenarios.path(), "scratchpad");
    let took = t.elapsed();
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("nul.tdm") && text.contains("at most"),
        "{text}"
    );
    assert!(took < Duration::from_secs(5), "it took {took:?}");
}

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
//! integration hostile_inputs`.
//!
//! This file holds groups 1, 2 and 6 and the helpers every group shares; groups 3, 4 and 5 are
//! `hostile_inputs_survivors.rs`, `hostile_inputs_loaders.rs` and `hostile_inputs_numbers.rs`.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use tidemark_conformance::spec::repo_root;

use super::sandbox::{signal, stderr_of, wait_bounded, Sandbox};

/// A scenario directory of the test's own, its files given as (relative path, text).
pub(super) fn suite(files: &[(&str, &str)]) -> tempfile::TempDir {
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

pub(super) fn spec() -> String {
    repo_root().join("SPEC.md").display().to_string()
}

/// `tidemark <args>` in `sandbox`, both outputs kept.
pub(super) fn run(sandbox: &Sandbox, args: &[&str]) -> Output {
    sandbox
        .tidemark(args, None)
        .stdout(Stdio::piped())
        .output()
        .unwrap()
}

/// Stdout and stderr together, for "is this shown anywhere" checks.
pub(super) fn shown(out: &Output) -> String {
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
pub(super) fn load_run(scenarios: &Path, profile: &str) -> Output {
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

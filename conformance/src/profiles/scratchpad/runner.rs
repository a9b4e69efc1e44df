//! Runs one scenario against one driver: starts the implementation at the pinned epoch, plays
//! each step, compares each outcome with the step's expectation, and records a trace.

use crate::play::{play, Failure, Located, Mismatch, StepPlayer};
use crate::profiles::scratchpad::contract::{Outcome, Request};
use crate::profiles::scratchpad::driver::{Driver, DriverFactory, Environment};
use crate::profiles::scratchpad::names::NameBook;
use crate::profiles::scratchpad::scenario::{
    Action, DiskAction, Expected, NameSource, PathTemplate, Scenario, Step,
};
use std::fs;
use std::path::{Path, PathBuf};
use tidemark_reference::clock::Timestamp;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::trace::Trace;

/// Content of the file the harness places outside the root, for symlink-escape scenarios.
pub const OUTSIDE_SECRET: &str = "outside the root";

#[derive(Clone, Debug)]
pub struct ScenarioResult {
    pub test_name: String,
    pub name: String,
    pub file: PathBuf,
    pub rules: Vec<String>,
    pub failure: Option<Failure>,
    pub trace: Trace,
}

impl ScenarioResult {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

/// Runs `scenario` against a fresh implementation from `factory`, in its own temporary
/// directory (removed afterwards).
pub async fn run_scenario(scenario: &Scenario, factory: &dyn DriverFactory) -> ScenarioResult {
    // The steps this implementation's variants keep (SPEC.md's variants).
    let scenario = &scenario.as_played_by(&factory.variants());
    let mut trace = Trace::new();
    let failure = match tidemark_sim::owner::tempdir("tidemark-") {
        Ok(tmp) => run_in(scenario, factory, tmp.path(), &mut trace)
            .await
            .err(),
        Err(e) => Some(Failure {
            line: 0,
            step: "(setup)".into(),
            expected: "a temporary directory".into(),
            actual: e.to_string(),
        }),
    };
    ScenarioResult {
        test_name: scenario.test_name(),
        name: scenario.name.clone(),
        file: scenario.file.clone(),
        rules: scenario.rules.clone(),
        failure,
        trace,
    }
}

async fn run_in(
    scenario: &Scenario,
    factory: &dyn DriverFactory,
    tmp: &Path,
    trace: &mut Trace,
) -> Result<(), Failure> {
    let setup_failure = |what: &str, e: String| Failure {
        line: 0,
        step: "(setup)".into(),
        expected: what.into(),
        actual: e,
    };
    let root = tmp.join("root");
    let workdir = tmp.join("workdir");
    let outside = tmp.join("outside");
    for d in [&root, &workdir, &outside] {
        fs::create_dir(d).map_err(|e| setup_failure("a scratch directory", e.to_string()))?;
    }
    fs::write(outside.join("secret.txt"), OUTSIDE_SECRET)
        .map_err(|e| setup_failure("the outside file", e.to_string()))?;
    let env = Environment {
        root: if scenario.knobs.mounted {
            root.clone()
        } else {
            PathBuf::new()
        },
        workdir: workdir.clone(),
        // Every knob, the scenario's or SPEC.md's default (SP-5.6): an implementation's own
        // defaults never decide a verdict.
        knobs: crate::profiles::scratchpad::scenario::Knobs {
            values: scenario.knobs.complete(scenario.profile),
            mounted: scenario.knobs.mounted,
        },
    };
    let driver: Box<dyn Driver> = factory
        .create(scenario.profile, &env)
        .map_err(|e| setup_failure("the implementation to start", e.to_string()))?;
    let mut player = ScratchpadPlayer {
        driver,
        now: EPOCH,
        running: false,
        names: NameBook::for_scenario(scenario, &factory.variants()),
        trace,
        root: &root,
        workdir: &workdir,
        outside: &outside,
    };
    // The implementation starts before the first step, as a `start` step at line 0 would.
    let first_start = Step {
        line: 0,
        text: "(start)".into(),
        action: Action::Start { swept: None },
    };
    let result = match play(&mut player, std::slice::from_ref(&first_start)).await {
        Ok(()) => play(&mut player, &scenario.steps).await,
        failed => failed,
    };
    if player.running {
        let _ = player.driver.stop().await;
    }
    result
}

fn rel(now: Timestamp) -> i64 {
    now.as_millis() - EPOCH.as_millis()
}

impl Located for Step {
    fn line(&self) -> usize {
        self.line
    }
    fn text(&self) -> &str {
        &self.text
    }
}

/// One scratchpad scenario's implementation and harness: the simulated clock, whether the
/// implementation runs, the directory names it gave, the trace, and the scratch directories.
struct ScratchpadPlayer<'a> {
    driver: Box<dyn Driver>,
    now: Timestamp,
    running: bool,
    names: NameBook,
    trace: &'a mut Trace,
    root: &'a Path,
    workdir: &'a Path,
    outside: &'a Path,
}

/// What a step observed from the implementation.
enum Observed {
    /// A timer tick's sweep.
    Tick(Outcome),
    /// A start's sweep (traced as the start happened, before the names were learnt).
    Startup(Outcome),
    /// The answer to a caller's request.
    Reply(Outcome),
}

impl StepPlayer for ScratchpadPlayer<'_> {
    type Step = Step;
    type Outcome = Observed;

    async fn perform(&mut self, step: &Step) -> Result<Option<Observed>, Mismatch> {
        match &step.action {
            Action::Advance { ms, swept } => {
                self.now = self.now.plus_ms(*ms);
                self.trace.record(rel(self.now), format!("advance {ms}ms"));
                if self.running {
                    let out = self
                        .driver
                        .call(self.now, &Request::Tick)
                        .await
                        .map_err(|e| Mismatch::new("the timer tick to succeed", e.to_string()))?;
                    Ok(Some(Observed::Tick(out)))
                } else if swept.is_some() {
                    Err(Mismatch::new(
                        "a running implementation to tick",
                        "the scenario expects a sweep while stopped (a scenario bug)",
                    ))
                } else {
                    Ok(None)
                }
            }
            Action::Stop => {
                self.driver
                    .stop()
                    .await
                    .map_err(|e| Mismatch::new("the implementation to stop", e.to_string()))?;
                self.trace.record(rel(self.now), "stop");
                self.running = false;
                Ok(None)
            }
            Action::Start { .. } => {
                let out = self
                    .driver
                    .call(self.now, &Request::Start)
                    .await
                    .map_err(|e| Mismatch::new("the implementation to start", e.to_string()))?;
                self.trace
                    .record(rel(self.now), format!("start -> {}", out.summary()));
                self.names
                    .learn(&mut *self.driver, self.now, self.trace)
                    .await
                    .map_err(|(expected, actual)| Mismatch { expected, actual })?;
                self.running = true;
                Ok(Some(Observed::Startup(out)))
            }
            Action::Call { call, expect } => {
                if !self.running {
                    return Err(Mismatch::new(
                        "a running implementation",
                        "the scenario called it while stopped (a scenario bug)",
                    ));
                }
                let request = call.resolve(&self.names);
                let out = self.driver.call(self.now, &request).await.map_err(|e| {
                    Mismatch::new(
                        expect.resolve(&self.names).to_string(),
                        format!("implementation error: {e}"),
                    )
                })?;
                Ok(Some(Observed::Reply(out)))
            }
            Action::Disk(d) => {
                disk(
                    d,
                    &self.names,
                    self.root,
                    self.workdir,
                    self.outside,
                    self.now,
                )
                .map_err(|(expected, actual)| Mismatch { expected, actual })?;
                self.trace
                    .record(rel(self.now), format!("{} -> ok", step.text));
                Ok(None)
            }
        }
    }

    fn observe(&mut self, step: &Step, observed: &Observed) {
        match observed {
            Observed::Tick(out) => self
                .trace
                .record(rel(self.now), format!("tick -> {}", out.summary())),
            Observed::Reply(out) => self
                .trace
                .record(rel(self.now), format!("{} -> {}", step.text, out.summary())),
            Observed::Startup(_) => {}
        }
    }

    fn compare(&self, step: &Step, observed: &Observed) -> Result<(), Mismatch> {
        match (&step.action, observed) {
            (Action::Advance { swept, .. } | Action::Start { swept }, Observed::Tick(out))
            | (Action::Advance { swept, .. } | Action::Start { swept }, Observed::Startup(out)) => {
                check_swept(swept, out, &self.names)
                    .map_err(|(expected, actual)| Mismatch { expected, actual })
            }
            (Action::Call { expect, .. }, Observed::Reply(out)) => {
                let expected = expect.resolve(&self.names);
                if matches(&expected, out) {
                    Ok(())
                } else {
                    Err(Mismatch::new(expected.to_string(), out.summary()))
                }
            }
            _ => unreachable!("each step observes only what its kind performs"),
        }
    }
}

/// A start's or tick's sweep against what the step says it collected, if it says. Errors are
/// (expected, actual).
fn check_swept(
    want: &Option<Vec<PathTemplate>>,
    out: &Outcome,
    names: &dyn NameSource,
) -> Result<(), (String, String)> {
    let Some(want) = want else { return Ok(()) };
    let mut want: Vec<String> = want.iter().map(|p| p.resolve_lossy(names)).collect();
    want.sort();
    let expected = format!("swept [{}]", want.join(", "));
    match out {
        Outcome::Swept { swept } => {
            let mut got = swept.clone();
            got.sort();
            if got == want {
                Ok(())
            } else {
                Err((expected, format!("swept [{}]", got.join(", "))))
            }
        }
        other => Err((expected, other.summary())),
    }
}

/// Whether an outcome meets an expectation.
pub fn matches(expect: &Expected, out: &Outcome) -> bool {
    match (expect, out) {
        (Expected::Ok, Outcome::Refused { .. }) => false,
        (Expected::Ok, _) => true,
        (Expected::Written { evicted }, Outcome::Written { evicted: got, .. }) => evicted == got,
        (Expected::Content(want), Outcome::Content { content }) => want == &content.0,
        (Expected::Listing(want), Outcome::Listing { entries }) => {
            let mut want = want.clone();
            want.sort();
            let mut got: Vec<String> = entries.iter().map(|e| e.path.clone()).collect();
            got.sort();
            want == got
        }
        (Expected::Refused(r), Outcome::Refused { reason, .. }) => r == reason,
        _ => false,
    }
}

/// Performs or checks one disk step. Errors are (expected, actual).
///
/// The parser has refused absolute paths and `..`; here the harness never follows a symlink on
/// the way to a path it writes or checks (a scenario plants links that point outside the root,
/// and the harness must not write or look through them). Each component is looked at with
/// `symlink_metadata`, directories are created one at a time, and a file is opened with
/// `O_NOFOLLOW`.
fn disk(
    d: &DiskAction,
    names: &dyn NameSource,
    root: &Path,
    workdir: &Path,
    outside: &Path,
    now: Timestamp,
) -> Result<(), (String, String)> {
    let io = |what: &str, e: std::io::Error| (what.to_string(), e.to_string());
    let stamp = |p: &Path| {
        let t = filetime::FileTime::from_system_time(now.to_system_time());
        filetime::set_symlink_file_times(p, t, t)
    };
    match d {
        DiskAction::Mkdir(rel) => {
            let shown = &rel.resolve_lossy(names);
            let p = below(root, &under_root(rel, names), Walk::Create)?
                .ok_or_else(|| unreachable_missing(shown))?;
            match fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(not_followed(shown, &p, root)),
                Err(_) => fs::create_dir(&p).map_err(|e| io("the directory to be created", e))?,
            }
            stamp(&p).map_err(|e| io("the directory to be stamped", e))
        }
        DiskAction::Write(rel, content) => {
            let p = below(root, &under_root(rel, names), Walk::Create)?
                .ok_or_else(|| unreachable_missing(&rel.resolve_lossy(names)))?;
            write_no_follow(&p, content).map_err(|e| {
                (
                    "the file to be written (the harness does not write through a symlink)"
                        .to_string(),
                    e.to_string(),
                )
            })?;
            stamp(&p).map_err(|e| io("the file to be stamped", e))
        }
        DiskAction::Symlink { link, target } => {
            let p = below(root, &under_root(link, names), Walk::Create)?
                .ok_or_else(|| unreachable_missing(&link.resolve_lossy(names)))?;
            let target = target.replace("$OUTSIDE", &outside.to_string_lossy());
            std::os::unix::fs::symlink(&target, &p).map_err(|e| io("the symlink to be created", e))
        }
        DiskAction::Exists(rel) => match below(root, &under_root(rel, names), Walk::Look)? {
            Some(p) if fs::symlink_metadata(&p).is_ok() => Ok(()),
            _ => Err((
                format!(
                    "{rel} ({}) to exist under the root",
                    rel.resolve_lossy(names)
                ),
                "it does not".into(),
            )),
        },
        DiskAction::Absent(rel) => match below(root, &under_root(rel, names), Walk::Look)? {
            Some(p) if fs::symlink_metadata(&p).is_ok() => Err((
                format!(
                    "{rel} ({}) to be absent from the root",
                    rel.resolve_lossy(names)
                ),
                "it exists".into(),
            )),
            _ => Ok(()),
        },
        DiskAction::NoPathContains(text) => {
            let hits = all_paths(root)
                .into_iter()
                .filter(|p| p.contains(text.as_str()))
                .collect::<Vec<_>>();
            if hits.is_empty() {
                Ok(())
            } else {
                Err((
                    format!("no path under the root containing {text:?}"),
                    format!("found {}", hits.join(", ")),
                ))
            }
        }
        DiskAction::WorkdirEmpty => {
            let found = all_paths(workdir);
            if found.is_empty() {
                Ok(())
            } else {
                Err((
                    "the working directory to stay empty".into(),
                    format!("it holds {}", found.join(", ")),
                ))
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// Create missing directories on the way.
    Create,
    /// Only look: a missing directory on the way means the path does not exist.
    Look,
}

/// `root/rel`, reached one component at a time without following a symlink: every directory on
/// the way must be a real directory (created if missing and `walk` is `Create`). `None`: a
/// directory on the way is missing. The last component itself is not looked at.
fn below(root: &Path, rel: &[u8], walk: Walk) -> Result<Option<PathBuf>, (String, String)> {
    use std::os::unix::ffi::OsStrExt;
    let shown = String::from_utf8_lossy(rel).into_owned();
    let parts: Vec<&[u8]> = rel
        .split(|b| *b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .collect();
    let Some((last, dirs)) = parts.split_last() else {
        return Err((
            "a path under the root".into(),
            format!("{shown:?} names the root itself"),
        ));
    };
    if parts.contains(&&b".."[..]) || rel.starts_with(b"/") {
        // The parser refuses these; a scenario built in code is held to the same rule.
        return Err((
            "a path under the root".into(),
            format!("{shown:?} leaves the root"),
        ));
    }
    let mut at = root.to_path_buf();
    for dir in dirs {
        at.push(std::ffi::OsStr::from_bytes(dir));
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(not_followed(&shown, &at, root)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match walk {
                Walk::Look => return Ok(None),
                Walk::Create => fs::create_dir(&at).map_err(|e| {
                    (
                        "the parent directory to be created".to_string(),
                        e.to_string(),
                    )
                })?,
            },
            Err(e) => return Err(("the path to be readable".into(), e.to_string())),
        }
    }
    Ok(Some(at.join(std::ffi::OsStr::from_bytes(last))))
}

fn not_followed(rel: &str, at: &Path, root: &Path) -> (String, String) {
    let shown = at.strip_prefix(root).unwrap_or(at).display().to_string();
    (
        format!("a path to {rel} made of real directories"),
        format!("{shown} is a symlink or a file; the harness never follows a symlink"),
    )
}

fn unreachable_missing(rel: &str) -> (String, String) {
    (
        format!("the directories on the way to {rel}"),
        "one is missing".into(),
    )
}

/// Writes `content` to `p`, refusing to open it if it is a symlink.
fn write_no_follow(p: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p)?;
    f.write_all(content)
}

/// A disk step's path, in the implementation's names, as a relative path (bytes kept exactly).
fn under_root(rel: &PathTemplate, names: &dyn NameSource) -> Vec<u8> {
    rel.resolve(names)
}

/// Every path below `dir`, relative to it, sorted.
fn all_paths(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            out.push(
                p.strip_prefix(dir)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .to_string(),
            );
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

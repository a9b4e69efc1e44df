//! Runs one scenario against one driver: starts the implementation at the pinned epoch, plays
//! each step, compares each outcome with the step's expectation, and records a trace.

use crate::play::{play, Failure, Located, Mismatch, StepPlayer};
use crate::profiles::scratchpad::contract::{Driver, DriverFactory, Environment};
use crate::profiles::scratchpad::contract::{Outcome, Request};
use crate::profiles::scratchpad::names::NameBook;
use crate::profiles::scratchpad::script::{
    Action, DiskAction, Expected, NameSource, PathTemplate, Scenario, Step,
};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tidemark_reference::clock::Timestamp;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::confine::{Dir, Handed, Kind};
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
    let scratch = Scratch::make(tmp, scenario.knobs.root_missing)
        .map_err(|e| setup_failure("the scratch directories", e))?;
    let env = Environment {
        root: if scenario.knobs.mounted {
            scratch.root_path.clone()
        } else {
            PathBuf::new()
        },
        workdir: scratch.workdir.path().to_path_buf(),
        // Every knob, the scenario's or SPEC.md's default (SP-5.6): an implementation's own
        // defaults never decide a verdict.
        knobs: crate::profiles::scratchpad::script::Knobs {
            values: scenario.knobs.complete(scenario.profile),
            ..scenario.knobs.clone()
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
        scratch: &scratch,
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
    scratch: &'a Scratch,
}

/// A scenario's scratch directory: the root and the working directory handed to the
/// implementation (re-checked before every harness step touches them: `confine::Handed`), and
/// beside them the outside directory a planted link points at. The harness holds its own
/// directory open, so a renamed or replaced path never redirects it.
struct Scratch {
    dir: Dir,
    /// `None` with `knob root missing`: the root's path is handed over, and nothing is there.
    root: Option<Handed>,
    root_path: PathBuf,
    workdir: Handed,
    outside: PathBuf,
}

/// What the harness puts in a scenario's scratch directory besides the root.
const SCRATCH_NAMES: [&str; 3] = ["workdir", "outside", tidemark_sim::owner::OWNER_FILE];

impl Scratch {
    fn make(tmp: &Path, root_missing: bool) -> Result<Scratch, String> {
        let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
        let root = if root_missing {
            None
        } else {
            Some(Handed::make(tmp, "root", "root").map_err(|e| io("the root", e))?)
        };
        let workdir = Handed::make(tmp, "workdir", "working directory")
            .map_err(|e| io("the working directory", e))?;
        let outside = tmp.join("outside");
        fs::create_dir(&outside).map_err(|e| io("the outside directory", e))?;
        fs::write(outside.join("secret.txt"), OUTSIDE_SECRET)
            .map_err(|e| io("the outside file", e))?;
        Ok(Scratch {
            dir: Dir::open(tmp).map_err(|e| io("the scratch directory", e))?,
            root,
            root_path: tmp.join("root"),
            workdir,
            outside,
        })
    }

    /// The root, re-checked: still the directory the harness made.
    fn root(&self) -> Result<Dir, (String, String)> {
        let handed = self.root.as_ref().ok_or_else(|| {
            (
                "a root to act on".to_string(),
                "the scenario's root is missing (knob root missing); a scenario bug".to_string(),
            )
        })?;
        handed
            .open()
            .map_err(|e| ("the root handed to the implementation".to_string(), e))
    }
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
                disk(d, &self.names, self.scratch, self.now)
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
/// The parser has refused absolute paths and `..`. Here the harness works from a handle on the
/// root, opened afresh without following a link and checked to be the directory it made (an
/// implementation may have replaced it), and never follows a link on the way to a path it
/// writes or checks (a scenario plants links that point outside the root): each directory on the
/// way is opened relative to the one before with `O_NOFOLLOW`, and a file is opened with
/// `O_NOFOLLOW`. What the harness creates carries the scenario's clock, as SP-3.5 has an
/// implementation do: each directory and link it makes, each file it writes, and each
/// directory an entry is made in.
fn disk(
    d: &DiskAction,
    names: &dyn NameSource,
    scratch: &Scratch,
    now: Timestamp,
) -> Result<(), (String, String)> {
    let io = |what: &str, e: std::io::Error| (what.to_string(), e.to_string());
    let t = now.to_system_time();
    match d {
        DiskAction::Mkdir(rel) => {
            let shown = &rel.resolve_lossy(names);
            let root = scratch.root()?;
            let (parent, last) = below(&root, &rel.resolve(names), Walk::Create, t)?
                .ok_or_else(|| unreachable_missing(shown))?;
            match parent
                .kind(&last)
                .map_err(|e| io("the path to be readable", e))?
            {
                Some(Kind::Dir) => {}
                Some(_) => return Err(not_followed(shown, &last)),
                None => {
                    parent
                        .make_dir(&last)
                        .map_err(|e| io("the directory to be created", e))?;
                    parent
                        .stamp(None, t)
                        .map_err(|e| io("the directory to be stamped", e))?;
                }
            }
            parent
                .stamp(Some(&last), t)
                .map_err(|e| io("the directory to be stamped", e))
        }
        DiskAction::Write(rel, content) => {
            let root = scratch.root()?;
            let (parent, last) = below(&root, &rel.resolve(names), Walk::Create, t)?
                .ok_or_else(|| unreachable_missing(&rel.resolve_lossy(names)))?;
            let new = parent
                .kind(&last)
                .map_err(|e| io("the path to be readable", e))?
                .is_none();
            parent.write_file(&last, content).map_err(|e| {
                (
                    "the file to be written (the harness does not write through a symlink)"
                        .to_string(),
                    e.to_string(),
                )
            })?;
            if new {
                parent
                    .stamp(None, t)
                    .map_err(|e| io("the directory to be stamped", e))?;
            }
            parent
                .stamp(Some(&last), t)
                .map_err(|e| io("the file to be stamped", e))
        }
        DiskAction::Symlink { link, target } => {
            let root = scratch.root()?;
            let (parent, last) = below(&root, &link.resolve(names), Walk::Create, t)?
                .ok_or_else(|| unreachable_missing(&link.resolve_lossy(names)))?;
            let target = target.replace("$OUTSIDE", &scratch.outside.to_string_lossy());
            parent
                .symlink(OsStr::new(&target), &last)
                .map_err(|e| io("the symlink to be created", e))?;
            // The link's own time, never its target's (utimensat with AT_SYMLINK_NOFOLLOW).
            parent
                .stamp(Some(&last), t)
                .map_err(|e| io("the symlink to be stamped", e))?;
            parent
                .stamp(None, t)
                .map_err(|e| io("the directory to be stamped", e))
        }
        DiskAction::Exists(rel) => {
            let root = scratch.root()?;
            match below(&root, &rel.resolve(names), Walk::Look, t)? {
                Some((parent, last)) if matches!(parent.kind(&last), Ok(Some(_))) => Ok(()),
                _ => Err((
                    format!(
                        "{rel} ({}) to exist under the root",
                        rel.resolve_lossy(names)
                    ),
                    "it does not".into(),
                )),
            }
        }
        DiskAction::Absent(rel) => {
            let root = scratch.root()?;
            match below(&root, &rel.resolve(names), Walk::Look, t)? {
                Some((parent, last)) if matches!(parent.kind(&last), Ok(Some(_))) => Err((
                    format!(
                        "{rel} ({}) to be absent from the root",
                        rel.resolve_lossy(names)
                    ),
                    "it exists".into(),
                )),
                _ => Ok(()),
            }
        }
        DiskAction::NoPathContains(text) => {
            let root = scratch.root()?;
            let hits = root
                .paths()
                .map_err(|e| io("the root to be readable", e))?
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
            let workdir = scratch
                .workdir
                .open()
                .map_err(|e| ("the working directory to stay empty".to_string(), e))?;
            let found = workdir
                .paths()
                .map_err(|e| io("the working directory to be readable", e))?;
            if found.is_empty() {
                Ok(())
            } else {
                Err((
                    "the working directory to stay empty".into(),
                    format!("it holds {}", found.join(", ")),
                ))
            }
        }
        DiskAction::RootAbsent => {
            let expected = || {
                format!(
                    "the missing root {} not to be created, nor anything beside it",
                    scratch.root_path.display()
                )
            };
            let made: Vec<String> = scratch
                .dir
                .entries()
                .map_err(|e| io("the scratch directory to be readable", e))?
                .into_iter()
                .map(|(name, _)| name.to_string_lossy().into_owned())
                .filter(|n| !SCRATCH_NAMES.contains(&n.as_str()))
                .collect();
            if made.is_empty() {
                Ok(())
            } else {
                Err((expected(), format!("it holds {}", made.join(", "))))
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

/// The directory holding `rel` under `root` and `rel`'s last name, reached one component at a
/// time without following a symlink: every directory on the way must be a real directory
/// (created, and stamped at `t` with the directory it is made in, if missing and `walk` is
/// `Create`). `None`: a directory on the way is missing. The last component itself is not
/// looked at.
fn below(
    root: &Dir,
    rel: &[u8],
    walk: Walk,
    t: std::time::SystemTime,
) -> Result<Option<(Dir, OsString)>, (String, String)> {
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
    let readable = |e: std::io::Error| ("the path to be readable".to_string(), e.to_string());
    let mut at = root.open_dir(OsStr::new(".")).map_err(readable)?;
    let mut walked = PathBuf::new();
    for dir in dirs {
        let name = OsStr::from_bytes(dir);
        walked.push(name);
        match at.kind(name).map_err(readable)? {
            Some(Kind::Dir) => {}
            Some(_) => return Err(not_followed(&shown, walked.as_os_str())),
            None => match walk {
                Walk::Look => return Ok(None),
                Walk::Create => {
                    let created = |e: std::io::Error| {
                        (
                            "the parent directory to be created".to_string(),
                            e.to_string(),
                        )
                    };
                    at.make_dir(name).map_err(created)?;
                    at.stamp(Some(name), t).map_err(created)?;
                    at.stamp(None, t).map_err(created)?;
                }
            },
        }
        // Opened with O_NOFOLLOW: a directory swapped for a link since is refused, not entered.
        at = at
            .open_dir(name)
            .map_err(|_| not_followed(&shown, walked.as_os_str()))?;
    }
    Ok(Some((at, OsStr::from_bytes(last).to_os_string())))
}

fn not_followed(rel: &str, at: &OsStr) -> (String, String) {
    (
        format!("a path to {rel} made of real directories"),
        format!(
            "{} is a symlink or a file; the harness never follows a symlink",
            Path::new(at).display()
        ),
    )
}

fn unreachable_missing(rel: &str) -> (String, String) {
    (
        format!("the directories on the way to {rel}"),
        "one is missing".into(),
    )
}

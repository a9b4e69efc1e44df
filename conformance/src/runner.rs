//! Runs one scenario against one driver: starts the implementation at the pinned epoch, plays
//! each step, compares each outcome with the step's expectation, and records a trace.

use crate::contract::{Outcome, Request};
use crate::driver::{Driver, DriverFactory, Environment};
use crate::names::NameBook;
use crate::scenario::{Action, DiskAction, Expected, NameSource, PathTemplate, Scenario};
use std::fs;
use std::path::{Path, PathBuf};
use tidemark_reference::clock::Timestamp;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::trace::Trace;

/// Content of the file the harness places outside the root, for symlink-escape scenarios.
pub const OUTSIDE_SECRET: &str = "outside the root";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Line of the failing step; 0 when the scenario failed before any step.
    pub line: usize,
    pub step: String,
    pub expected: String,
    pub actual: String,
}

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
    let mut trace = Trace::new();
    let failure = match tidemark_sim::owner::tempdir("tidemark-") {
        Ok(tmp) => play(scenario, factory, tmp.path(), &mut trace).await.err(),
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

async fn play(
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
        knobs: crate::scenario::Knobs {
            values: scenario.knobs.complete(scenario.profile),
            mounted: scenario.knobs.mounted,
        },
    };
    let mut driver: Box<dyn Driver> = factory
        .create(scenario.profile, &env)
        .map_err(|e| setup_failure("the implementation to start", e.to_string()))?;
    let mut now = EPOCH;
    let mut running = false;
    let mut names = NameBook::for_scenario(scenario);
    let result = async {
        start(&mut *driver, now, trace, 0, "(start)").await?;
        names
            .learn(&mut *driver, now, trace)
            .await
            .map_err(|(expected, actual)| Failure {
                line: 0,
                step: "(start)".into(),
                expected,
                actual,
            })?;
        running = true;
        for step in &scenario.steps {
            let fail = |expected: String, actual: String| Failure {
                line: step.line,
                step: step.text.clone(),
                expected,
                actual,
            };
            match &step.action {
                Action::Advance { ms, swept } => {
                    now = now.plus_ms(*ms);
                    trace.record(
                        now.as_millis() - EPOCH.as_millis(),
                        format!("advance {ms}ms"),
                    );
                    if running {
                        let out = driver
                            .call(now, &Request::Tick)
                            .await
                            .map_err(|e| fail("the timer tick to succeed".into(), e.to_string()))?;
                        trace.record(rel(now), format!("tick -> {}", out.summary()));
                        check_swept(swept, &out, &names).map_err(|(e, a)| fail(e, a))?;
                    } else if swept.is_some() {
                        return Err(fail(
                            "a running implementation to tick".into(),
                            "the scenario expects a sweep while stopped (a scenario bug)".into(),
                        ));
                    }
                }
                Action::Stop => {
                    driver
                        .stop()
                        .await
                        .map_err(|e| fail("the implementation to stop".into(), e.to_string()))?;
                    trace.record(rel(now), "stop");
                    running = false;
                }
                Action::Start { swept } => {
                    let out = start(&mut *driver, now, trace, step.line, &step.text).await?;
                    names
                        .learn(&mut *driver, now, trace)
                        .await
                        .map_err(|(e, a)| fail(e, a))?;
                    running = true;
                    check_swept(swept, &out, &names).map_err(|(e, a)| fail(e, a))?;
                }
                Action::Call { call, expect } => {
                    if !running {
                        return Err(fail(
                            "a running implementation".into(),
                            "the scenario called it while stopped (a scenario bug)".into(),
                        ));
                    }
                    let request = call.resolve(&names);
                    let expected = expect.resolve(&names);
                    let out = driver.call(now, &request).await.map_err(|e| {
                        fail(expected.to_string(), format!("implementation error: {e}"))
                    })?;
                    trace.record(rel(now), format!("{} -> {}", step.text, out.summary()));
                    if !matches(&expected, &out) {
                        return Err(fail(expected.to_string(), out.summary()));
                    }
                }
                Action::Disk(d) => {
                    disk(d, &names, &root, &workdir, &outside, now)
                        .map_err(|(exp, act)| fail(exp, act))?;
                    trace.record(rel(now), format!("{} -> ok", step.text));
                }
            }
        }
        Ok(())
    }
    .await;
    if running {
        let _ = driver.stop().await;
    }
    result
}

fn rel(now: Timestamp) -> i64 {
    now.as_millis() - EPOCH.as_millis()
}

async fn start(
    driver: &mut dyn Driver,
    now: Timestamp,
    trace: &mut Trace,
    line: usize,
    text: &str,
) -> Result<Outcome, Failure> {
    let out = driver
        .call(now, &Request::Start)
        .await
        .map_err(|e| Failure {
            line,
            step: text.into(),
            expected: "the implementation to start".into(),
            actual: e.to_string(),
        })?;
    trace.record(rel(now), format!("start -> {}", out.summary()));
    Ok(out)
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
            let p = root.join(under_root(rel, names));
            fs::create_dir_all(&p).map_err(|e| io("the directory to be created", e))?;
            stamp(&p).map_err(|e| io("the directory to be stamped", e))
        }
        DiskAction::Write(rel, content) => {
            let p = root.join(under_root(rel, names));
            if let Some(parent) = p.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| io("the parent directory to be created", e))?;
            }
            fs::write(&p, content).map_err(|e| io("the file to be written", e))?;
            stamp(&p).map_err(|e| io("the file to be stamped", e))
        }
        DiskAction::Symlink { link, target } => {
            let p = root.join(under_root(link, names));
            if let Some(parent) = p.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| io("the parent directory to be created", e))?;
            }
            let target = target.replace("$OUTSIDE", &outside.to_string_lossy());
            std::os::unix::fs::symlink(&target, &p).map_err(|e| io("the symlink to be created", e))
        }
        DiskAction::Exists(rel) => match fs::symlink_metadata(root.join(under_root(rel, names))) {
            Ok(_) => Ok(()),
            Err(_) => Err((
                format!(
                    "{rel} ({}) to exist under the root",
                    rel.resolve_lossy(names)
                ),
                "it does not".into(),
            )),
        },
        DiskAction::Absent(rel) => match fs::symlink_metadata(root.join(under_root(rel, names))) {
            Ok(_) => Err((
                format!(
                    "{rel} ({}) to be absent from the root",
                    rel.resolve_lossy(names)
                ),
                "it exists".into(),
            )),
            Err(_) => Ok(()),
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

/// A disk step's path, in the implementation's names, as a relative path (bytes kept exactly).
fn under_root(rel: &PathTemplate, names: &dyn NameSource) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(&rel.resolve(names)))
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

//! Plays one sequence of operations against an implementation and the oracle side by side,
//! comparing every outcome and, after every call, the caller's directories on disk (only a write
//! creates them, SP-3.6), then heals the world and checks liveness.
//!
//! A difference the expectations file lists as known (by its signature, `signature.rs`) does not
//! end the run: it is recorded, the model is re-derived from the root on disk as the harness
//! observes it (`observe.rs`: files with their contents and times, directories, links), and every
//! later step is checked against that. A disk difference no outcome had shown before a known
//! difference is adopted with it: the model follows the implementation's disk from there.

use std::collections::BTreeSet;

use super::names::{self, NameMap};
use super::observe;
use super::ops::{caller, SimOp, LINK_PATHS, PLACES, WHO};
use super::signature::{self as sig, SweepContext};
use crate::explore::signature::{KnownDifferences, Signature};
use crate::profiles::scratchpad::contract::{Driver, DriverFactory, Environment};
use crate::profiles::scratchpad::contract::{Outcome, Request};
use crate::profiles::scratchpad::model::{ModelKnobs, ScratchpadModel};
use crate::profiles::scratchpad::script::{Knobs, Profile};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use tidemark_reference::clock::Timestamp;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::confine::{Dir, Handed, Kind};
use tidemark_sim::trace::Trace;

/// The exploration knobs: small enough that 200 steps reach the cap, the ceiling and both timers.
pub fn knobs(unmounted: bool) -> (Knobs, ModelKnobs) {
    let model = ModelKnobs {
        mounted: !unmounted,
        session_cap_bytes: 1000,
        requester_ceiling_bytes: 2500,
        max_file_bytes: 1000,
        ..ModelKnobs::default()
    };
    let mut k = Knobs {
        mounted: !unmounted,
        ..Knobs::default()
    };
    k.values
        .insert("session_cap_bytes".into(), model.session_cap_bytes as i64);
    k.values.insert(
        "requester_ceiling_bytes".into(),
        model.requester_ceiling_bytes as i64,
    );
    k.values
        .insert("max_file_bytes".into(), model.max_file_bytes as i64);
    (k, model)
}

/// Where a run diverged from the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Index into the operations, or `None` for the start and the healing phase.
    pub step: Option<usize>,
    pub op: String,
    pub expected: String,
    pub actual: String,
    /// The kind of difference (`signature.rs`), boxed: a divergence is an `Err` passed along
    /// every step.
    pub signature: Box<Signature>,
}

#[derive(Clone, Debug)]
pub struct RunResult {
    pub trace: Trace,
    pub divergence: Option<Divergence>,
    /// Simulated milliseconds from the first to the last step, healing included.
    pub simulated_ms: i64,
    /// The known differences the run went past, in order.
    pub known: Vec<Divergence>,
    /// How often each SPEC rule decided an outcome the model predicted (`sig::deciding_rule`),
    /// for `--coverage`.
    pub rules: BTreeMap<&'static str, u64>,
    /// The model's state at the divergence (`ScratchpadModel::state_lines`, bounded); empty
    /// when the run passed: it is worked out only when a step diverges.
    pub model_state: Vec<String>,
}

/// Foreign directories planted before the run, each holding a file; every one must survive
/// every sweep (SP-5.4). Besides a name no scheme writes, names that start like a session's
/// but have another shape: a character outside `[a-z0-9]` after the prefix, too short a name,
/// uppercase hex. A sweeper that recognises sessions by their prefix alone takes them.
pub const FOREIGN: [&str; 4] = [
    "lost+found/keep.txt",
    "t-not-a-session/keep.txt",
    "c-x/keep.txt",
    "t-0123456789ABCDEF/keep.txt",
];

struct World<'a> {
    driver: Box<dyn Driver>,
    model: ScratchpadModel,
    trace: &'a mut Trace,
    now: Timestamp,
    /// The root handed to the implementation; `None` when it runs unmounted.
    root: Option<&'a Handed>,
    outside: &'a Path,
    /// The oracle's directory names in the implementation's, learned at each start.
    names: NameMap,
    /// Differences the run goes on past.
    known: &'a KnownDifferences,
    /// Those it went past.
    hits: Vec<Divergence>,
    /// Each caller's directory names in the implementation's names (`caller_dir_names`), worked
    /// out at the first check: names never change (SP-1.2; a change ends the run at `names`).
    dirs: Vec<(String, String)>,
    /// The rule that decided each predicted outcome, counted.
    rules: BTreeMap<&'static str, u64>,
}

impl World<'_> {
    fn rel(&self) -> i64 {
        self.now.as_millis() - EPOCH.as_millis()
    }

    /// `r`, unless it is a known difference: then it is recorded, the model takes the disk as it
    /// is, and the run goes on.
    fn go_on(&mut self, r: Result<(), Divergence>) -> Result<(), Divergence> {
        let d = match r {
            Ok(()) => return Ok(()),
            Err(d) if self.known.contains(&d.signature) => d,
            Err(d) => return Err(d),
        };
        let rel = self.rel();
        self.trace.record(
            rel,
            format!(
                "known difference {} at {}: expected {}, got {}",
                d.signature, d.op, d.expected, d.actual
            ),
        );
        // Through a handle on the root it handed over, so a root replaced by a link is never
        // looked through (the next disk check names it).
        if let Some(root) = self.root.and_then(|h| h.open().ok()) {
            let observed = observe::observe(&root.proc_path(), &self.session_names());
            self.model.adopt_disk(observed);
        }
        self.hits.push(d);
        Ok(())
    }

    /// Each caller's session and member directory names, in the implementation's names, by
    /// `who * PLACES.len() + place`.
    fn caller_dir_names(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for who in 0..WHO.len() as u8 {
            for place in 0..PLACES.len() as u8 {
                let (s, r) = self.model.recommended_names(&caller(who, place));
                out.push((
                    self.names.session(&s).to_string(),
                    self.names.requester(&r).to_string(),
                ));
            }
        }
        out
    }

    /// Every session directory name of the exploration's callers, in the implementation's
    /// names.
    fn session_names(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for who in 0..WHO.len() as u8 {
            for place in 0..PLACES.len() as u8 {
                let (s, _) = self.model.recommended_names(&caller(who, place));
                out.insert(self.names.session(&s).to_string());
            }
        }
        out
    }

    async fn both(
        &mut self,
        step: Option<usize>,
        label: &str,
        req: &Request,
    ) -> Result<(), Divergence> {
        let r = self.compare(step, label, req).await;
        self.go_on(r)
    }

    async fn compare(
        &mut self,
        step: Option<usize>,
        label: &str,
        req: &Request,
    ) -> Result<(), Divergence> {
        let req = &self.names.request(req);
        let now = self.now.as_millis();
        let actual = match self.driver.call(self.now, req).await {
            Ok(o) => o,
            Err(e) => {
                let expected = self.model.apply(self.now.as_millis(), req);
                return Err(Divergence {
                    step,
                    op: label.into(),
                    expected: expected.summary(),
                    actual: format!("implementation error: {e}"),
                    signature: Box::new(sig::of_error(req, &expected)),
                });
            }
        };
        // The answer settles what the implementation's variants leave open (eviction ties).
        let expected = self.model.apply_seen(now, req, &actual);
        *self
            .rules
            .entry(sig::deciding_rule(req, &expected))
            .or_default() += 1;
        let rel = self.rel();
        self.trace
            .record(rel, format!("{label} -> {}", actual.summary()));
        if names::same(&expected, &actual) {
            return Ok(());
        }
        let sweep = self.before_sweep(now, &expected);
        Err(Divergence {
            step,
            op: label.into(),
            expected: expected.summary(),
            actual: actual.summary(),
            signature: Box::new(sig::of_outcomes(req, &expected, &actual, sweep.as_ref())),
        })
    }

    /// What the model held just before the sweep that answered `expected` (a start or tick),
    /// from the model after it: the sessions it swept were held and expired; one it did not sweep
    /// was not due, so its state is as before. Worked out only when a sweep diverges.
    fn before_sweep(&self, now: i64, expected: &Outcome) -> Option<SweepContext> {
        let Outcome::Swept { swept } = expected else {
            return None;
        };
        let mut held = self.model.session_names();
        held.extend(swept.iter().cloned());
        let mut expired: BTreeSet<String> = self.model.expired(now).into_iter().collect();
        expired.extend(swept.iter().cloned());
        Some(SweepContext {
            held,
            expired,
            sessions: self.session_names(),
        })
    }

    /// After a call by the caller `who` in `place`: its session and member directories exist on
    /// disk exactly when the model holds them (SP-3.6: only a write creates them; a removal
    /// leaves them in place).
    fn check_caller_dirs(
        &mut self,
        step: usize,
        label: &str,
        (who, place): (u8, u8),
        write: bool,
    ) -> Result<(), Divergence> {
        let Some(handed) = self.root else {
            return Ok(());
        };
        let index = (who as usize % WHO.len()) * PLACES.len() + place as usize % PLACES.len();
        if self.dirs.is_empty() {
            self.dirs = self.caller_dir_names();
        }
        let (session, member) = self.dirs[index].clone();
        let (session, member) = (session.as_str(), member.as_str());
        let root = handed.open().map_err(|e| Divergence {
            step: Some(step),
            op: format!("{label}: disk"),
            expected: "the root handed over".into(),
            actual: e,
            signature: Box::new(sig::handed_replaced()),
        })?;
        let disk = observe::caller_dirs(&root.proc_path(), session, member);
        let model = (
            self.model.holds_dir(session, None),
            self.model.holds_dir(session, Some(member)),
        );
        if disk == model {
            return Ok(());
        }
        let say = |(s, m): (bool, bool)| match (s, m) {
            (false, _) => format!("no session directory {session}"),
            (true, false) => format!("{session} without a member directory {member}"),
            (true, true) => format!("{session}/{member}"),
        };
        let new = (disk.0 && !model.0) || (disk.1 && !model.1);
        let r = Err(Divergence {
            step: Some(step),
            op: format!("{label}: disk"),
            expected: say(model),
            actual: say(disk),
            signature: Box::new(match (new, write) {
                (true, _) => sig::disk_new_directory(),
                (false, true) => sig::disk_write_elsewhere(),
                (false, false) => sig::disk_directory_gone(),
            }),
        });
        self.go_on(r)
    }

    /// A start, then the names of every caller from both sides (SP-1.2: each implementation
    /// names its own directories).
    async fn start(&mut self, step: Option<usize>, label: &str) -> Result<(), Divergence> {
        self.both(step, label, &Request::Start).await?;
        let learnt = self
            .names
            .learn(&mut self.model, &mut *self.driver, self.now)
            .await
            .map_err(|(expected, actual, problem)| Divergence {
                step,
                op: format!("{label}: names"),
                expected,
                actual,
                signature: Box::new(sig::names(problem)),
            });
        self.go_on(learnt)
    }

    async fn step(&mut self, i: usize, op: &SimOp) -> Result<(), Divergence> {
        let label = op.to_string();
        match op {
            SimOp::Nop => Ok(()),
            SimOp::Advance { ms } => {
                self.now = self.now.plus_ms(*ms);
                let rel = self.rel();
                self.trace.record(rel, &label);
                if self.model.is_running() {
                    self.both(Some(i), "tick", &Request::Tick).await?;
                }
                Ok(())
            }
            SimOp::Crash => {
                if self.model.is_running() {
                    let stopped = self.driver.stop().await.map_err(|e| Divergence {
                        step: Some(i),
                        op: label.clone(),
                        expected: "a clean stop".into(),
                        actual: e.to_string(),
                        signature: Box::new(sig::protocol(
                            "the implementation did not stop when told to",
                        )),
                    });
                    self.go_on(stopped)?;
                    self.model.stop();
                    let rel = self.rel();
                    self.trace.record(rel, &label);
                }
                Ok(())
            }
            SimOp::Restart => {
                if !self.model.is_running() {
                    self.start(Some(i), &label).await?;
                }
                Ok(())
            }
            SimOp::PlantLink { who, place, path } => {
                let c = caller(*who, *place);
                let rel_path: Vec<String> = LINK_PATHS[*path as usize % LINK_PATHS.len()]
                    .split('/')
                    .map(String::from)
                    .collect();
                let Some(handed) = self.root else {
                    return Ok(());
                };
                if !self.model.can_plant_link(&c, &rel_path) {
                    return Ok(());
                }
                let (session, requester) = self.model.recommended_names(&c);
                let root = handed.open().map_err(|e| Divergence {
                    step: Some(i),
                    op: label.clone(),
                    expected: "the root handed over, to plant a link under".into(),
                    actual: e,
                    signature: Box::new(sig::handed_replaced()),
                })?;
                plant_link_on_disk(
                    &root,
                    self.outside,
                    (
                        self.names.session(&session),
                        self.names.requester(&requester),
                    ),
                    &rel_path,
                    self.now,
                )
                .map_err(|e| Divergence {
                    step: Some(i),
                    op: label.clone(),
                    expected: "nothing where the link goes, as the model says".into(),
                    actual: e.to_string(),
                    // Something the model does not have stands in the way: the implementation
                    // left the disk otherwise than the model says (or the harness could not
                    // plant, which the same words report).
                    signature: Box::new(sig::disk_in_the_way()),
                })?;
                self.model.plant_link(&c, &rel_path, self.now.as_millis());
                let rel = self.rel();
                self.trace.record(rel, &label);
                Ok(())
            }
            call => {
                if !self.model.is_running() {
                    let rel = self.rel();
                    self.trace.record(rel, format!("{label} -> (down)"));
                    return Ok(());
                }
                let req = call.request(i).expect("a call operation");
                self.both(Some(i), &label, &req).await?;
                let who_place = match *call {
                    SimOp::Write { who, place, .. }
                    | SimOp::Read { who, place, .. }
                    | SimOp::List { who, place }
                    | SimOp::ListPath { who, place, .. }
                    | SimOp::Remove { who, place, .. } => (who, place),
                    _ => unreachable!("a call operation has a caller"),
                };
                let write = matches!(call, SimOp::Write { .. });
                self.check_caller_dirs(i, &label, who_place, write)
            }
        }
    }
}

/// Plants a symbolic link to `outside` at `rel_path` in a member's subtree (its session and
/// requester directories as the implementation names them), as someone other than the
/// implementation would, from a handle on the root (`root`, opened without following a link),
/// never following a link on the way. What it makes carries the simulated time, as SP-3.5 has
/// an implementation stamp what it makes: each directory it creates, each directory it creates
/// an entry in, and the link itself (its own time, `utimensat` with `AT_SYMLINK_NOFOLLOW`, never
/// its target's). The session directory thus moves only when a member directory is created in
/// it.
///
/// An error, and nothing planted, when something already stands where the link goes (or a
/// file where one of its directories goes): the implementation left the disk otherwise than the
/// model says, which is the run's divergence, not the harness's failure.
pub fn plant_link_on_disk(
    root: &Dir,
    outside: &Path,
    (session_dir, requester_dir): (&str, &str),
    rel_path: &[String],
    now: Timestamp,
) -> std::io::Result<()> {
    let t = now.to_system_time();
    let Some((last, dirs)) = rel_path.split_last() else {
        return Ok(());
    };
    let mut at = root.open_dir(OsStr::new("."))?;
    for name in [session_dir, requester_dir]
        .into_iter()
        .chain(dirs.iter().map(String::as_str))
    {
        let name = OsStr::new(name);
        match at.kind(name)? {
            Some(Kind::Dir) => {}
            None => {
                at.make_dir(name)?;
                at.stamp(Some(name), t)?;
                at.stamp(None, t)?;
            }
            Some(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!(
                        "{} is not a directory on the way to the link",
                        name.to_string_lossy()
                    ),
                ))
            }
        }
        at = at.open_dir(name)?;
    }
    let last = OsStr::new(last.as_str());
    if at.kind(last)?.is_some() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} already exists where the model has nothing",
                last.to_string_lossy()
            ),
        ));
    }
    at.symlink(outside.as_os_str(), last)?;
    at.stamp(Some(last), t)?;
    at.stamp(None, t)
}

/// Plays `ops` against a fresh implementation from `factory` and the model; the first
/// difference ends the run.
pub async fn run_ops(ops: &[SimOp], unmounted: bool, factory: &dyn DriverFactory) -> RunResult {
    run_ops_past(ops, unmounted, factory, &KnownDifferences::default()).await
}

/// [`run_ops`], going on past the differences `known` lists.
pub async fn run_ops_past(
    ops: &[SimOp],
    unmounted: bool,
    factory: &dyn DriverFactory,
    known: &KnownDifferences,
) -> RunResult {
    let mut trace = Trace::new();
    let tmp =
        tidemark_sim::owner::tempdir_in(&tidemark_sim::owner::scratch_base(), "tidemark-explore-")
            .expect("a temporary directory");
    let root = Handed::make(tmp.path(), "root", "root").expect("a scratch root");
    let workdir =
        Handed::make(tmp.path(), "workdir", "working directory").expect("a working directory");
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).expect("a scratch directory");
    fs::write(outside.join("secret.txt"), "outside the root").expect("the outside file");
    plant_foreign(root.path());

    let (knobs, mut model_knobs) = knobs(unmounted);
    // The model follows the variants the implementation takes (SPEC.md's variants).
    model_knobs.alternatives =
        crate::profiles::scratchpad::variants::alternatives(&factory.variants());
    let env = Environment {
        root: if unmounted {
            Default::default()
        } else {
            root.path().to_path_buf()
        },
        workdir: workdir.path().to_path_buf(),
        knobs,
    };
    let driver = match factory.create(Profile::Scratchpad, &env) {
        Ok(d) => d,
        Err(e) => {
            return RunResult {
                trace,
                divergence: Some(Divergence {
                    step: None,
                    op: "create".into(),
                    expected: "an implementation".into(),
                    actual: e.to_string(),
                    signature: Box::new(sig::protocol("the implementation did not start")),
                }),
                simulated_ms: 0,
                known: Vec::new(),
                rules: BTreeMap::new(),
                model_state: Vec::new(),
            }
        }
    };
    let model_root = (!unmounted).then_some(&root);
    let mut w = World {
        driver,
        model: ScratchpadModel::new(model_knobs.clone()),
        trace: &mut trace,
        now: EPOCH,
        root: model_root,
        outside: &outside,
        names: NameMap::default(),
        known,
        hits: Vec::new(),
        dirs: Vec::new(),
        rules: BTreeMap::new(),
    };
    let result = async {
        w.start(None, "start").await?;
        for (i, op) in ops.iter().enumerate() {
            w.step(i, op).await?;
        }
        heal(&mut w, &model_knobs).await?;
        let disk = check_disk(&root, &workdir);
        w.go_on(disk)
    }
    .await;
    let simulated_ms = w.now.as_millis() - EPOCH.as_millis();
    let model_state = match &result {
        Err(d) => {
            let op = d.step.and_then(|i| ops.get(i));
            let who = op
                .and_then(caller_of)
                .map(|(who, place)| caller(who, place));
            crate::html::bounded_lines(w.model.state_lines(who.as_ref(), w.now.as_millis()))
        }
        Ok(()) => Vec::new(),
    };
    if w.model.is_running() {
        let _ = w.driver.stop().await;
    }
    let known = std::mem::take(&mut w.hits);
    let rules = std::mem::take(&mut w.rules);
    drop(w);
    RunResult {
        trace,
        divergence: result.err(),
        simulated_ms,
        known,
        rules,
        model_state,
    }
}

/// The caller (`who`, `place`) of an operation that has one.
fn caller_of(op: &SimOp) -> Option<(u8, u8)> {
    match *op {
        SimOp::Write { who, place, .. }
        | SimOp::Read { who, place, .. }
        | SimOp::List { who, place }
        | SimOp::ListPath { who, place, .. }
        | SimOp::Remove { who, place, .. }
        | SimOp::PlantLink { who, place, .. } => Some((who, place)),
        _ => None,
    }
}

/// The healing phase: everything restarts, time passes the longest timer plus one interval, and
/// every session is listed. Anything the model expired must be gone (liveness).
async fn heal(w: &mut World<'_>, k: &ModelKnobs) -> Result<(), Divergence> {
    if !w.model.is_running() {
        w.start(None, "heal: start").await?;
    }
    w.now = w
        .now
        .plus_ms(k.thread_quiet_ms.max(k.pairing_idle_ms) + k.sweep_interval_ms);
    w.both(None, "heal: tick after the longest timer", &Request::Tick)
        .await?;
    for who in 0..WHO.len() as u8 {
        for place in 0..PLACES.len() as u8 {
            let req = Request::List {
                caller: caller(who, place),
                path: None,
            };
            w.both(
                None,
                &format!("heal: {} list", caller(who, place).display()),
                &req,
            )
            .await?;
        }
    }
    Ok(())
}

/// Plants a directory the scheme did not write, old in simulated time, so a sweeper that wrongly
/// considered it would collect it at once (SP-5.4).
pub fn plant_foreign(root: &Path) {
    let long_ago =
        filetime::FileTime::from_system_time(EPOCH.plus_ms(-30 * 86_400_000).to_system_time());
    for f in FOREIGN {
        let foreign = root.join(f);
        let dir = foreign.parent().expect("parent");
        fs::create_dir_all(dir).expect("a foreign directory");
        fs::write(&foreign, "not the scratchpad's").expect("a foreign file");
        for p in [foreign.as_path(), dir] {
            let _ = filetime::set_file_mtime(p, long_ago);
        }
    }
}

/// What the model cannot see: the foreign directory survives (SP-5.4) and the working directory
/// stays empty (SP-1.3). Both are looked at through handles that follow no link, and must still
/// be the directories the harness handed over.
pub fn check_disk(root: &Handed, workdir: &Handed) -> Result<(), Divergence> {
    let disk = |expected: &str, actual: String| Divergence {
        step: None,
        op: "heal: disk".into(),
        expected: expected.into(),
        actual,
        signature: Box::new(sig::handed_replaced()),
    };
    let root = root.open().map_err(|e| disk("the root handed over", e))?;
    let gone = FOREIGN.iter().find(|f| {
        let (dir, file) = f.split_once('/').expect("a directory and a file");
        root.open_dir(OsStr::new(dir))
            .ok()
            .and_then(|d| d.kind(OsStr::new(file)).ok().flatten())
            != Some(Kind::File)
    });
    if let Some(gone) = gone {
        return Err(Divergence {
            signature: Box::new(sig::foreign_removed()),
            ..disk(&format!("{gone} to survive"), "it was removed".into())
        });
    }
    let workdir = workdir
        .open()
        .map_err(|e| disk("the working directory to stay empty", e))?;
    let stray: Vec<String> = workdir
        .entries()
        .map(|es| {
            es.into_iter()
                .map(|(name, _)| name.to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !stray.is_empty() {
        return Err(Divergence {
            step: None,
            op: "heal: disk".into(),
            expected: "the working directory to stay empty".into(),
            actual: format!("it holds {}", stray.join(", ")),
            signature: Box::new(sig::workdir_written()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An implementation explored through the protocol may replace its root with a link to a
    /// directory that looks right (it even holds the foreign file): the harness's disk check
    /// refuses it by name instead of looking through it, and plants nothing there.
    #[test]
    fn a_root_replaced_by_a_link_is_named_not_looked_through() {
        let tmp = tempfile::tempdir().unwrap();
        let decoy = tempfile::tempdir().unwrap();
        plant_foreign(decoy.path());
        let root = Handed::make(tmp.path(), "root", "root").unwrap();
        let workdir = Handed::make(tmp.path(), "workdir", "working directory").unwrap();
        plant_foreign(root.path());
        assert_eq!(check_disk(&root, &workdir), Ok(()));
        fs::rename(root.path(), tmp.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(decoy.path(), root.path()).unwrap();
        let d = check_disk(&root, &workdir).unwrap_err();
        assert!(
            d.actual.contains("the root") && d.actual.contains("replaced"),
            "{d:?}"
        );
        assert!(root.open().is_err());
        let before: Vec<_> = fs::read_dir(decoy.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            before.len(),
            FOREIGN.len(),
            "only the foreign directories in the decoy"
        );
    }
}

//! Plays one sequence of operations against an implementation and the oracle side by side,
//! comparing every outcome, then heals the world and checks liveness.

use super::names::{self, NameMap};
use super::ops::{caller, SimOp, LINK_PATHS, PLACES, WHO};
use crate::profiles::scratchpad::contract::Request;
use crate::profiles::scratchpad::driver::{Driver, DriverFactory, Environment};
use crate::profiles::scratchpad::oracle::{ModelKnobs, ScratchpadModel};
use crate::profiles::scratchpad::scenario::{Knobs, Profile};
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
}

#[derive(Clone, Debug)]
pub struct RunResult {
    pub trace: Trace,
    pub divergence: Option<Divergence>,
    /// Simulated milliseconds from the first to the last step, healing included.
    pub simulated_ms: i64,
}

/// A foreign directory planted before the run; it must survive every sweep (SP-5.4).
pub const FOREIGN: &str = "lost+found/keep.txt";

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
}

impl World<'_> {
    fn rel(&self) -> i64 {
        self.now.as_millis() - EPOCH.as_millis()
    }

    async fn both(
        &mut self,
        step: Option<usize>,
        label: &str,
        req: &Request,
    ) -> Result<(), Divergence> {
        let req = &self.names.request(req);
        let expected = self.model.apply(self.now.as_millis(), req);
        let actual = match self.driver.call(self.now, req).await {
            Ok(o) => o,
            Err(e) => {
                return Err(Divergence {
                    step,
                    op: label.into(),
                    expected: expected.summary(),
                    actual: format!("implementation error: {e}"),
                })
            }
        };
        let rel = self.rel();
        self.trace
            .record(rel, format!("{label} -> {}", actual.summary()));
        if names::same(&expected, &actual) {
            Ok(())
        } else {
            Err(Divergence {
                step,
                op: label.into(),
                expected: expected.summary(),
                actual: actual.summary(),
            })
        }
    }

    /// A start, then the names of every caller from both sides (SP-1.2: each implementation
    /// names its own directories).
    async fn start(&mut self, step: Option<usize>, label: &str) -> Result<(), Divergence> {
        self.both(step, label, &Request::Start).await?;
        self.names
            .learn(&mut self.model, &mut *self.driver, self.now)
            .await
            .map_err(|(expected, actual)| Divergence {
                step,
                op: format!("{label}: names"),
                expected,
                actual,
            })?;
        Ok(())
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
                    self.driver.stop().await.map_err(|e| Divergence {
                        step: Some(i),
                        op: label.clone(),
                        expected: "a clean stop".into(),
                        actual: e.to_string(),
                    })?;
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
                let ctx = crate::profiles::scratchpad::scenario::parse::context_of(&c);
                let (session, requester) = (ctx.session_dir(), ctx.requester_dir());
                let planted = handed.open().and_then(|root| {
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
                    .map_err(|e| format!("the link to be planted: {e}"))
                });
                if let Err(e) = planted {
                    return Err(Divergence {
                        step: Some(i),
                        op: label.clone(),
                        expected: "the harness's link planted under the root it handed over".into(),
                        actual: e,
                    });
                }
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
                self.both(Some(i), &label, &req).await
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
                return Err(std::io::Error::other(format!(
                    "{} is not a directory on the way to the link",
                    name.to_string_lossy()
                )))
            }
        }
        at = at.open_dir(name)?;
    }
    let last = OsStr::new(last.as_str());
    at.symlink(outside.as_os_str(), last)?;
    at.stamp(Some(last), t)?;
    at.stamp(None, t)
}

/// Plays `ops` against a fresh implementation from `factory` and the model.
pub async fn run_ops(ops: &[SimOp], unmounted: bool, factory: &dyn DriverFactory) -> RunResult {
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

    let (knobs, model_knobs) = knobs(unmounted);
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
                }),
                simulated_ms: 0,
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
    };
    let result = async {
        w.start(None, "start").await?;
        for (i, op) in ops.iter().enumerate() {
            w.step(i, op).await?;
        }
        heal(&mut w, &model_knobs).await?;
        check_disk(&root, &workdir)
    }
    .await;
    let simulated_ms = w.now.as_millis() - EPOCH.as_millis();
    if w.model.is_running() {
        let _ = w.driver.stop().await;
    }
    drop(w);
    RunResult {
        trace,
        divergence: result.err(),
        simulated_ms,
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
    let foreign = root.join(FOREIGN);
    fs::create_dir_all(foreign.parent().expect("parent")).expect("a foreign directory");
    fs::write(&foreign, "not the scratchpad's").expect("a foreign file");
    let long_ago =
        filetime::FileTime::from_system_time(EPOCH.plus_ms(-30 * 86_400_000).to_system_time());
    for p in [&foreign, &root.join("lost+found")] {
        let _ = filetime::set_file_mtime(p, long_ago);
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
    };
    let root = root.open().map_err(|e| disk("the root handed over", e))?;
    let (dir, file) = FOREIGN.split_once('/').expect("a directory and a file");
    let survived = root
        .open_dir(OsStr::new(dir))
        .ok()
        .and_then(|d| d.kind(OsStr::new(file)).ok().flatten())
        == Some(Kind::File);
    if !survived {
        return Err(disk(
            &format!("{FOREIGN} to survive"),
            "it was removed".into(),
        ));
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
        assert_eq!(before.len(), 1, "only lost+found in the decoy");
    }
}

//! Plays one sequence of operations against an implementation and the oracle side by side,
//! comparing every outcome, then heals the world and checks liveness.

use super::names::{self, NameMap};
use super::ops::{caller, SimOp, LINK_PATHS, PLACES, WHO};
use crate::profiles::scratchpad::contract::Request;
use crate::profiles::scratchpad::driver::{Driver, DriverFactory, Environment};
use crate::profiles::scratchpad::oracle::{ModelKnobs, ScratchpadModel};
use crate::profiles::scratchpad::scenario::{Knobs, Profile};
use std::fs;
use std::path::Path;
use tidemark_reference::clock::Timestamp;
use tidemark_sim::clock::EPOCH;
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
    root: &'a Path,
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
                if self.root.as_os_str().is_empty() || !self.model.can_plant_link(&c, &rel_path) {
                    return Ok(());
                }
                let ctx = crate::profiles::scratchpad::scenario::parse::context_of(&c);
                let (session, requester) = (ctx.session_dir(), ctx.requester_dir());
                plant_link_on_disk(
                    self.root,
                    self.outside,
                    (
                        self.names.session(&session),
                        self.names.requester(&requester),
                    ),
                    &rel_path,
                    self.now,
                )
                .map_err(|actual| Divergence {
                    step: Some(i),
                    op: label.clone(),
                    expected: "nothing where the link goes, as the model says".into(),
                    actual,
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
                self.both(Some(i), &label, &req).await
            }
        }
    }
}

/// Plants a symbolic link to `outside` at `rel_path` in a member's subtree (its session and
/// requester directories as the implementation names them), as someone other than the
/// implementation would, then restamps what the operating system touched in simulated time as
/// the implementation does (SP-3.5): each created directory, the directory it was created in, and
/// the link's own directory. The session directory thus moves only when a member directory is
/// created in it.
///
/// An error, and nothing planted, when something already stands where the link goes (or a
/// file where one of its directories goes): the implementation left the disk otherwise than the
/// model says, which is the run's divergence, not the harness's failure.
pub fn plant_link_on_disk(
    root: &Path,
    outside: &Path,
    (session_dir, requester_dir): (&str, &str),
    rel_path: &[String],
    now: Timestamp,
) -> Result<(), String> {
    let session = root.join(session_dir);
    let mut dir = session.join(requester_dir);
    let mut created = Vec::new();
    for d in [&session, &dir] {
        if !d.exists() {
            created.push(d.to_path_buf());
        }
    }
    for c in &rel_path[..rel_path.len() - 1] {
        dir.push(c);
        if !dir.exists() {
            created.push(dir.clone());
        }
    }
    let link = dir.join(rel_path.last().expect("a name"));
    if fs::symlink_metadata(&link).is_ok() {
        return Err(format!(
            "{} already exists where the model has nothing",
            link.strip_prefix(root).unwrap_or(&link).display()
        ));
    }
    fs::create_dir_all(&dir)
        .map_err(|e| format!("making the link's directories {}: {e}", dir.display()))?;
    std::os::unix::fs::symlink(outside, &link)
        .map_err(|e| format!("planting a link at {}: {e}", link.display()))?;
    let t = filetime::FileTime::from_system_time(now.to_system_time());
    let mut touched: Vec<std::path::PathBuf> = vec![dir.clone()];
    for d in &created {
        touched.push(d.clone());
        if let Some(parent) = d.parent().filter(|p| p.starts_with(&session)) {
            touched.push(parent.to_path_buf());
        }
    }
    for d in touched {
        let _ = filetime::set_file_mtime(d, t);
    }
    Ok(())
}

/// Plays `ops` against a fresh implementation from `factory` and the model.
pub async fn run_ops(ops: &[SimOp], unmounted: bool, factory: &dyn DriverFactory) -> RunResult {
    let mut trace = Trace::new();
    let tmp =
        tidemark_sim::owner::tempdir_in(&tidemark_sim::owner::scratch_base(), "tidemark-explore-")
            .expect("a temporary directory");
    let root = tmp.path().join("root");
    let workdir = tmp.path().join("workdir");
    let outside = tmp.path().join("outside");
    for d in [&root, &workdir, &outside] {
        fs::create_dir(d).expect("a scratch directory");
    }
    fs::write(outside.join("secret.txt"), "outside the root").expect("the outside file");
    plant_foreign(&root);

    let (knobs, model_knobs) = knobs(unmounted);
    let env = Environment {
        root: if unmounted {
            Default::default()
        } else {
            root.clone()
        },
        workdir: workdir.clone(),
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
    let model_root = if unmounted {
        Path::new("")
    } else {
        root.as_path()
    };
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
/// stays empty (SP-1.3).
pub fn check_disk(root: &Path, workdir: &Path) -> Result<(), Divergence> {
    if let Some(gone) = FOREIGN.iter().find(|f| !root.join(f).exists()) {
        return Err(Divergence {
            step: None,
            op: "heal: disk".into(),
            expected: format!("{gone} to survive"),
            actual: "it was removed".into(),
        });
    }
    let stray: Vec<String> = fs::read_dir(workdir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
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

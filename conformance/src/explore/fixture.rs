//! Saved failures. A fixture holds a shrunk operation sequence, the implementation it failed
//! against (the reference, or one named mutant), and the hash of the failing run's trace, so a
//! replay proves the failure recurs identically.

use super::ops::SimOp;
use super::run::run_ops;
use crate::profiles::scratchpad::ReferenceScratchpad;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tidemark_reference::scratchpad::ScratchpadMutant;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fixture {
    /// Format version, so old fixtures are read or refused knowingly.
    pub version: u32,
    pub profile: String,
    pub seed: u64,
    /// The generator version the seed ran through (`explore::ops`), so `seed` names the
    /// workload the failure was shrunk from. Fixtures saved before versions existed are 1. A
    /// replay runs `ops` and never regenerates.
    #[serde(default = "generator_version_1")]
    pub generator: u32,
    /// The mutant the failure was found against; `None`: the reference itself.
    pub mutant: Option<String>,
    pub unmounted: bool,
    pub ops: Vec<SimOp>,
    /// Where it diverged, as printed when found.
    pub divergence: String,
    pub trace_hash: String,
}

fn generator_version_1() -> u32 {
    1
}

impl Fixture {
    pub fn file_name(&self) -> String {
        format!(
            "{}-{}-seed-{}.json",
            self.profile,
            self.mutant.as_deref().unwrap_or("reference"),
            self.seed
        )
    }

    pub fn save(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(self.file_name());
        std::fs::write(
            &path,
            serde_json::to_string_pretty(self).expect("a fixture serialises") + "\n",
        )?;
        Ok(path)
    }

    pub fn load(path: &Path) -> Result<Fixture, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let f: Fixture = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}: {e}", path.display(), e.line()))?;
        if f.version != 1 {
            return Err(format!(
                "{}: fixture version {} is not 1",
                path.display(),
                f.version
            ));
        }
        Ok(f)
    }

    pub fn mutant(&self) -> Result<Option<ScratchpadMutant>, String> {
        match &self.mutant {
            None => Ok(None),
            Some(id) => ScratchpadMutant::from_id(id)
                .map(Some)
                .ok_or_else(|| format!("unknown mutant {id:?}")),
        }
    }
}

/// What replaying a fixture showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    /// The failure recurred against its implementation with the same trace hash.
    pub reproduced: bool,
    pub trace_hash: String,
    pub divergence: Option<String>,
    /// The same operations pass against the reference (the model and the reference agree).
    pub reference_passes: bool,
}

pub async fn replay(f: &Fixture) -> Result<Replay, String> {
    let factory = ReferenceScratchpad {
        mutant: f.mutant()?,
    };
    let run = run_ops(&f.ops, f.unmounted, &factory).await;
    let reference = if f.mutant.is_some() {
        run_ops(&f.ops, f.unmounted, &ReferenceScratchpad::default())
            .await
            .divergence
            .is_none()
    } else {
        run.divergence.is_none()
    };
    let divergence = run
        .divergence
        .as_ref()
        .map(|d| format!("{}: expected {}, got {}", d.op, d.expected, d.actual));
    Ok(Replay {
        reproduced: run.divergence.is_some() && run.trace.hash() == f.trace_hash,
        trace_hash: run.trace.hash(),
        divergence,
        reference_passes: reference,
    })
}

/// Every fixture under `dir`, sorted by file name.
/// Where the scratchpad's saved failures live.
pub fn default_dir() -> PathBuf {
    crate::spec::repo_root().join("fixtures/explore")
}

pub fn load_all(dir: &Path) -> Result<Vec<(PathBuf, Fixture)>, String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let f = Fixture::load(&p)?;
        out.push((p, f));
    }
    Ok(out)
}

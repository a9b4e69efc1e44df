//! Saved scoped failures: a shrunk [`ModelOp`] sequence, its seed (which also seeds the S3
//! fault generator), the implementation it failed against, and the hash of the failing trace,
//! so a replay proves the failure recurs identically. Kept apart from the scratchpad fixtures
//! (`fixtures/explore-scoped/`): the operations are another profile's.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tidemark_reference::scoped::ScopedMutant;
use tidemark_sim::real_tier::model::{
    run_ops, trace_hash, Divergence, ModelOp, SequenceError, Tier,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopedFixture {
    pub version: u32,
    /// Always `scoped`: `tidemark replay` reads it to pick the profile.
    pub profile: String,
    pub seed: u64,
    pub mutant: Option<String>,
    /// Where the metadata lived: `postgres` or `memory`.
    #[serde(default = "postgres")]
    pub tier: String,
    pub ops: Vec<ModelOp>,
    /// Where it diverged, as printed when found.
    pub divergence: String,
    pub trace_hash: String,
}

/// The hash a divergence is known by: its trace, then what was expected and what happened.
pub fn divergence_hash(d: &Divergence) -> String {
    let mut lines = d.ops.clone();
    lines.push(format!("expected {}", d.expected));
    lines.push(format!("actual {}", d.actual));
    trace_hash(&lines)
}

pub fn divergence_line(d: &Divergence) -> String {
    format!(
        "{}: expected {}, got {}",
        d.ops
            .iter()
            .rev()
            .find(|l| !l.starts_with("  "))
            .map_or("", |l| l.as_str()),
        d.expected,
        d.actual
    )
}

impl ScopedFixture {
    pub fn new(
        seed: u64,
        mutant: Option<ScopedMutant>,
        tier: Tier<'_>,
        ops: Vec<ModelOp>,
        d: &Divergence,
    ) -> ScopedFixture {
        ScopedFixture {
            version: 1,
            profile: "scoped".into(),
            seed,
            mutant: mutant.map(|m| m.id().to_string()),
            tier: tier.name().to_string(),
            ops,
            divergence: divergence_line(d),
            trace_hash: divergence_hash(d),
        }
    }

    pub fn file_name(&self) -> String {
        format!(
            "scoped-{}-seed-{}.json",
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

    pub fn load(path: &Path) -> Result<ScopedFixture, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let f: ScopedFixture = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}: {e}", path.display(), e.line()))?;
        if f.version != 1 || f.profile != "scoped" {
            return Err(format!(
                "{}: expected a version 1 scoped fixture, found version {} of profile {:?}",
                path.display(),
                f.version,
                f.profile
            ));
        }
        Ok(f)
    }

    pub fn mutant(&self) -> Result<Option<ScopedMutant>, String> {
        super::scoped::mutant_arg(self.mutant.as_deref())
    }
}

/// Whether a fixture file belongs to the scoped profile (its `profile` field), without
/// committing to either format.
pub fn is_scoped(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("profile").and_then(|p| p.as_str()) == Some("scoped"))
}

/// What replaying a scoped fixture showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopedReplay {
    /// It diverged again, with the same trace hash.
    pub reproduced: bool,
    pub trace_hash: Option<String>,
    pub divergence: Option<String>,
    /// The same operations pass against the reference (the model and the reference agree).
    pub reference_passes: bool,
}

/// Replays `f` on `tier` (a fixture says which tier found it; either must reproduce it).
pub async fn replay(tier: Tier<'_>, f: &ScopedFixture) -> Result<ScopedReplay, String> {
    let mutant = f.mutant()?;
    let run = run_ops(tier, f.seed, &f.ops, mutant, None).await;
    let (hash, divergence) = match &run {
        Err(SequenceError::Diverged(d)) => (Some(divergence_hash(d)), Some(divergence_line(d))),
        Err(SequenceError::Setup(e)) => return Err(format!("could not set up: {e}")),
        Ok(_) => (None, None),
    };
    let reference_passes = if mutant.is_some() {
        match run_ops(tier, f.seed, &f.ops, None, None).await {
            Ok(_) => true,
            Err(SequenceError::Diverged(_)) => false,
            Err(SequenceError::Setup(e)) => return Err(format!("could not set up: {e}")),
        }
    } else {
        run.is_ok()
    };
    Ok(ScopedReplay {
        reproduced: hash.as_deref() == Some(f.trace_hash.as_str()),
        trace_hash: hash,
        divergence,
        reference_passes,
    })
}

/// Every scoped fixture under `dir`, sorted by file name.
pub fn load_all(dir: &Path) -> Result<Vec<(PathBuf, ScopedFixture)>, String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| ScopedFixture::load(&p).map(|f| (p, f)))
        .collect()
}

fn postgres() -> String {
    "postgres".into()
}

pub fn default_dir() -> PathBuf {
    crate::spec::repo_root().join("fixtures/explore-scoped")
}

//! Saved scoped failures: a shrunk [`ModelOp`] sequence, its seed (which also seeds the S3
//! fault generator), the implementation it failed against, and the hash of the failing trace,
//! so a replay proves the failure recurs identically, in the one saved-failure format
//! (`crate::explore::saved`), under `fixtures/explore/scoped/`.

use crate::explore::saved::SavedFailure;
use crate::profiles::scoped::model::{
    run_ops_taking, trace_hash, Divergence, IdStyle, ModelOp, SequenceError, Tier, GENERATOR,
};
use crate::variants::Declared;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tidemark_reference::scoped::ScopedMutant;

/// What a scoped run is given besides its operations: where the metadata lived.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopedSetting {
    /// `postgres` or `memory`.
    #[serde(default = "postgres")]
    pub tier: String,
    /// The SPEC.md variants the reference took (`--variant`), by name; empty: the defaults.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub variants: std::collections::BTreeMap<String, String>,
}

/// A saved scoped failure, in the one saved-failure format ([`SavedFailure`]). Its seed also
/// seeds the S3 fault generator. Generator 1 gave the store short ids (`w1`), 2 to 4 UUIDs, 5 a
/// UUID per session ([`IdStyle`]), 6 a second of the clock per operation, 7 closes and
/// workspaces' retention; a replay runs as the file's own version ran, so its trace hash still
/// holds.
pub type ScopedFixture = SavedFailure<ModelOp, ScopedSetting>;

pub const PROFILE: &str = "scoped";

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
        variants: &Declared,
        ops: Vec<ModelOp>,
        d: &Divergence,
    ) -> ScopedFixture {
        ScopedFixture {
            version: crate::explore::saved::FORMAT_VERSION,
            profile: PROFILE.into(),
            seed,
            generator: GENERATOR,
            mutant: mutant.map(|m| m.id().to_string()),
            setting: ScopedSetting {
                tier: tier.name().to_string(),
                variants: variants.to_map(),
            },
            ops,
            divergence: divergence_line(d),
            trace_hash: divergence_hash(d),
        }
    }

    pub fn load(path: &Path) -> Result<ScopedFixture, String> {
        let f = SavedFailure::load_as(path, PROFILE)?;
        if IdStyle::of_version(f.generator).is_none() {
            return Err(format!(
                "{}: unknown scoped generator version {} (known: 1, short ids; 2, UUIDs; 3, UUIDs and a workspace deleted beside published skills; 4, people through the store's door; 5, people over HTTP and a UUID per session; 6, retention policies and a second of the clock per operation; 7, sessions' closes and workspaces' retention)",
                path.display(),
                f.generator
            ));
        }
        Ok(f)
    }

    /// The identifiers this fixture's generator version gave the store.
    pub fn ids(&self) -> IdStyle {
        IdStyle::of_version(self.generator).unwrap_or(IdStyle::CURRENT)
    }

    pub fn mutant(&self) -> Result<Option<ScopedMutant>, String> {
        super::mutant_arg(self.mutant.as_deref())
    }

    /// The SPEC.md variants the reference took when this failure was found.
    pub fn variants(&self) -> Result<Declared, String> {
        Declared::read(&self.setting.variants)
    }
}

/// Whether a fixture file belongs to the scoped profile (its `profile` field), without
/// committing to either format.
pub fn is_scoped(path: &Path) -> bool {
    crate::explore::saved::profile_of(path).as_deref() == Some(PROFILE)
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
    /// The divergence in pieces, for the HTML page.
    pub shown: Option<crate::explore::cli::ReplayDivergence>,
}

/// Replays `f` on `tier` (a fixture says which tier found it; either must reproduce it).
pub async fn replay(tier: Tier<'_>, f: &ScopedFixture) -> Result<ScopedReplay, String> {
    let mutant = f.mutant()?;
    let variants = f.variants()?;
    let run = run_ops_taking(tier, f.seed, &f.ops, mutant, None, f.generator, &variants).await;
    let (hash, divergence) = match &run {
        Err(SequenceError::Diverged(d)) => (Some(divergence_hash(d)), Some(divergence_line(d))),
        Err(SequenceError::Setup(e)) => return Err(format!("could not set up: {e}")),
        Ok(_) => (None, None),
    };
    let reference_passes = if mutant.is_some() {
        match run_ops_taking(tier, f.seed, &f.ops, None, None, f.generator, &variants).await {
            Ok(_) => true,
            Err(SequenceError::Diverged(_)) => false,
            Err(SequenceError::Setup(e)) => return Err(format!("could not set up: {e}")),
        }
    } else {
        run.is_ok()
    };
    let shown = match &run {
        Err(SequenceError::Diverged(d)) => Some(crate::explore::cli::ReplayDivergence {
            at: format!("operation {}, the last one", d.step),
            expected: d.expected.clone(),
            actual: d.actual.clone(),
            trace: d.ops.clone(),
            rule: Some(super::signature(f.ops.get(d.step), d).rule),
            model_state: d.model_state.clone(),
        }),
        _ => None,
    };
    Ok(ScopedReplay {
        reproduced: hash.as_deref() == Some(f.trace_hash.as_str()),
        trace_hash: hash,
        divergence,
        reference_passes,
        shown,
    })
}

/// Every scoped fixture under `dir`, sorted by file name.
pub fn load_all(dir: &Path) -> Result<Vec<(PathBuf, ScopedFixture)>, String> {
    ScopedFixture::load_all_with(dir, ScopedFixture::load)
}

fn postgres() -> String {
    "postgres".into()
}

pub fn default_dir() -> PathBuf {
    crate::explore::saved::profile_dir(PROFILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    /// The saved failure whose divergence quotes a key, so it names the workspace id.
    fn writable_fixture() -> ScopedFixture {
        ScopedFixture::load(&default_dir().join("scoped-workspace-writable-by-default-seed-6.json"))
            .expect("the saved fixture loads")
    }

    #[test]
    fn a_fixture_saved_before_uuid_ids_replays_with_short_ids_and_keeps_its_hash() {
        let f = writable_fixture();
        assert_eq!(f.generator, 1, "saved by the first generator");
        assert!(f.divergence.contains("workspaces/w1/"), "{}", f.divergence);
        let r = runtime()
            .block_on(replay(Tier::Memory, &f))
            .expect("replays");
        assert!(r.reproduced, "{r:?}");
    }

    #[test]
    fn a_fixture_found_today_gives_the_store_uuids_and_replays_under_its_own_generator() {
        let old = writable_fixture();
        let mutant = old.mutant().expect("a known mutant");
        let rt = runtime();
        let run =
            crate::profiles::scoped::model::run_ops(Tier::Memory, old.seed, &old.ops, mutant, None);
        let Err(SequenceError::Diverged(d)) = rt.block_on(run) else {
            panic!("the mutant still fails the same operations with UUID ids")
        };
        let f = ScopedFixture::new(
            old.seed,
            mutant,
            Tier::Memory,
            &Declared::defaults(),
            old.ops.clone(),
            &d,
        );
        // Version 7: UUIDs (one per session), a workspace deleted beside published skills,
        // people's requests over HTTP and part SL's policies in the mix, each operation a
        // second of the clock, closes and workspaces' retention.
        assert_eq!(f.generator, 7);
        let ws = crate::profiles::scoped::model::IdStyle::Uuid.id("w1");
        assert!(
            f.divergence.contains(&format!("workspaces/{ws}/")),
            "{}",
            f.divergence
        );
        assert_ne!(
            f.trace_hash, old.trace_hash,
            "the ids are part of what diverged"
        );
        let r = rt.block_on(replay(Tier::Memory, &f)).expect("replays");
        assert!(r.reproduced && r.reference_passes, "{r:?}");
    }
}

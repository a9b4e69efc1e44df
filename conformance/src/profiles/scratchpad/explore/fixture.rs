//! Saved failures. A fixture holds a shrunk operation sequence, the implementation it failed
//! against (the reference, or one named mutant), and the hash of the failing run's trace, so a
//! replay proves the failure recurs identically.

use super::ops::SimOp;
use super::run::run_ops;
use crate::explore::saved::SavedFailure;
use crate::profiles::scratchpad::ReferenceScratchpad;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tidemark_reference::scratchpad::ScratchpadMutant;

/// What a scratchpad run is given besides its operations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScratchpadSetting {
    /// The root was handed over unmounted (`knob root unmounted`).
    pub unmounted: bool,
    /// The SPEC.md variants the reference took (`--variant`), by name; empty: the defaults.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub variants: std::collections::BTreeMap<String, String>,
}

/// A saved scratchpad failure, in the one saved-failure format ([`SavedFailure`]).
pub type Fixture = SavedFailure<SimOp, ScratchpadSetting>;

pub const PROFILE: &str = "scratchpad";

impl Fixture {
    /// Reads a saved failure, its operations checked as strictly as the scenario loader checks
    /// a scenario's steps ([`check_ops`]) and its mutant named.
    pub fn load(path: &Path) -> Result<Fixture, String> {
        let f: Fixture = SavedFailure::load_as(path, PROFILE)?;
        check_ops(&f.ops).map_err(|e| format!("{}: {e}", path.display()))?;
        f.mutant().map_err(|e| format!("{}: {e}", path.display()))?;
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

/// A saved failure's operations as a scenario's steps are checked at load: the clock, moved by
/// every advance, stays between 1970 and the span a scenario may cover
/// (`scenario::units::Clock`). (The other operations are indices into fixed tables, each
/// taken modulo its table: any value names one.)
pub fn check_ops(ops: &[SimOp]) -> Result<(), String> {
    let mut clock = crate::scenario::units::Clock::default();
    for (i, op) in ops.iter().enumerate() {
        if let SimOp::Advance { ms } = op {
            clock
                .advance(*ms)
                .map_err(|e| format!("operation {i} (advance): {e}"))?;
        }
    }
    Ok(())
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
    /// The divergence in pieces, for the HTML page.
    pub shown: Option<crate::explore::cli::ReplayDivergence>,
}

pub async fn replay(f: &Fixture) -> Result<Replay, String> {
    let variants = crate::variants::Declared::read(&f.setting.variants)?;
    let factory = ReferenceScratchpad {
        mutant: f.mutant()?,
        variants: variants.clone(),
    };
    let run = run_ops(&f.ops, f.setting.unmounted, &factory).await;
    let reference_of_its_variants = ReferenceScratchpad {
        mutant: None,
        variants,
    };
    let reference = if f.mutant.is_some() {
        run_ops(&f.ops, f.setting.unmounted, &reference_of_its_variants)
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
    let shown = run
        .divergence
        .as_ref()
        .map(|d| crate::explore::cli::ReplayDivergence {
            at: d.op.clone(),
            expected: d.expected.clone(),
            actual: d.actual.clone(),
            trace: run.trace.lines().to_vec(),
            rule: Some(d.signature.rule.clone()),
            model_state: run.model_state.clone(),
        });
    Ok(Replay {
        reproduced: run.divergence.is_some() && run.trace.hash() == f.trace_hash,
        trace_hash: run.trace.hash(),
        divergence,
        reference_passes: reference,
        shown,
    })
}

/// Where the scratchpad's saved failures live.
pub fn default_dir() -> PathBuf {
    crate::explore::saved::profile_dir(PROFILE)
}

/// Every scratchpad fixture under `dir`, sorted by file name.
pub fn load_all(dir: &Path) -> Result<Vec<(PathBuf, Fixture)>, String> {
    Fixture::load_all_with(dir, Fixture::load)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_sequence_passes_and_an_advance_out_of_the_span_does_not() {
        for seed in 0..300 {
            let (_, ops) = crate::profiles::scratchpad::explore::generate(seed);
            check_ops(&ops).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
        for ms in [
            i64::MIN,
            i64::MAX,
            -tidemark_sim::clock::EPOCH.as_millis() - 1,
        ] {
            assert!(check_ops(&[SimOp::Advance { ms }]).is_err(), "{ms}");
        }
    }
}

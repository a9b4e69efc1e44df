//! Saved rows failures: a shrunk [`ExploreOp`] sequence, its seed, the batch size its reaps ran
//! with, the implementation it failed against (the reference or a named mutant) and the hash of
//! the failing trace, in the one saved-failure format (`crate::explore::saved`), under
//! `fixtures/explore/rows/`. A replay runs the saved operations; it never regenerates them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tidemark_reference::rows::RowsMutant;

use super::ops::{ExploreOp, GENERATOR_VERSION};
use super::run::{run_ops_taking, Divergence, RunError, Tier};
use crate::explore::saved::SavedFailure;
use crate::variants::Declared;

pub const PROFILE: &str = "rows";

/// What a rows run is given besides its operations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowsSetting {
    /// Where the rows lived: `postgres` or `memory`; a replay runs on the same tier (the trace
    /// holds the state as that tier reads it).
    pub tier: String,
    /// Rows per delete batch in every reap.
    pub batch: i64,
    /// The SPEC.md variants the reference took (`--variant`), by name; empty: the defaults.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub variants: std::collections::BTreeMap<String, String>,
}

pub type RowsFixture = SavedFailure<ExploreOp, RowsSetting>;

/// The mutant an id names, or an error listing every rows id.
pub fn mutant_arg(id: Option<&str>) -> Result<Option<RowsMutant>, String> {
    match id {
        None => Ok(None),
        Some(id) => RowsMutant::from_id(id).map(Some).ok_or_else(|| {
            format!(
                "unknown rows mutant {id:?}; expected one of {}",
                RowsMutant::ALL.map(|m| m.id()).join(", ")
            )
        }),
    }
}

pub fn new_fixture(
    seed: u64,
    mutant: Option<RowsMutant>,
    tier: &str,
    variants: &Declared,
    batch: i64,
    ops: Vec<ExploreOp>,
    d: &Divergence,
) -> RowsFixture {
    RowsFixture {
        version: crate::explore::saved::FORMAT_VERSION,
        profile: PROFILE.into(),
        seed,
        generator: GENERATOR_VERSION,
        mutant: mutant.map(|m| m.id().to_string()),
        setting: RowsSetting {
            tier: tier.into(),
            batch,
            variants: variants.to_map(),
        },
        ops,
        divergence: d.line(),
        trace_hash: d.hash(),
    }
}

/// Reads a rows fixture; another profile's, an unknown mutant or a batch below 1 is an error
/// naming the file.
pub fn load(path: &Path) -> Result<RowsFixture, String> {
    let f: RowsFixture = SavedFailure::load_as(path, PROFILE)?;
    check_ops(&f.ops).map_err(|e| format!("{}: {e}", path.display()))?;
    mutant_arg(f.mutant.as_deref()).map_err(|e| format!("{}: {e}", path.display()))?;
    Declared::read(&f.setting.variants).map_err(|e| format!("{}: {e}", path.display()))?;
    if f.setting.batch < 1 {
        return Err(format!(
            "{}: batch {} is not a batch size (expected 1 or more)",
            path.display(),
            f.setting.batch
        ));
    }
    if !crate::profiles::rows::runner::TIERS.contains(&f.setting.tier.as_str()) {
        return Err(format!(
            "{}: unknown rows tier {:?} (expected {})",
            path.display(),
            f.setting.tier,
            crate::profiles::rows::runner::TIERS.join(" or ")
        ));
    }
    Ok(f)
}

/// A saved failure's operations, their numbers checked as the scenario loader checks a
/// scenario's: the clock, moved by every advance, stays between 1970 and the span a scenario may
/// cover; a row is kept for a length of time from 0 to that span; a count names a table. (Unlike
/// a scenario's, an exploration's steps may name what was never made: that is how it reaches the
/// refusals.)
pub fn check_ops(ops: &[ExploreOp]) -> Result<(), String> {
    use crate::profiles::rows::script::{Action, Counted};
    let mut clock = crate::scenario::units::Clock::default();
    for (i, op) in ops.iter().enumerate() {
        let ExploreOp::Step(action) = op else {
            continue;
        };
        let at = |e: String| {
            format!(
                "operation {i} ({}): {e}",
                tidemark_sim::clip::clip(&super::ops::action_text(action))
            )
        };
        match action {
            Action::Advance(ms) => clock.advance(*ms).map_err(at)?,
            Action::Keep { for_ms, .. }
                if !(0..=tidemark_sim::clip::MAX_SCENARIO_SPAN_MS).contains(for_ms) =>
            {
                return Err(at(format!(
                    "a row is kept for 0 to {} ms, not {for_ms}",
                    tidemark_sim::clip::MAX_SCENARIO_SPAN_MS
                )))
            }
            Action::Count(Counted::Table(t))
                if !tidemark_reference::rows::TABLES.contains(&t.as_str()) =>
            {
                return Err(at(format!("no table {:?}", tidemark_sim::clip::clip(t))))
            }
            _ => {}
        }
    }
    Ok(())
}

pub fn is_rows(path: &Path) -> bool {
    crate::explore::saved::profile_of(path).as_deref() == Some(PROFILE)
}

pub fn default_dir() -> PathBuf {
    crate::explore::saved::profile_dir(PROFILE)
}

/// Every rows fixture under `dir`, sorted by file name.
pub fn load_all(dir: &Path) -> Result<Vec<(PathBuf, RowsFixture)>, String> {
    RowsFixture::load_all_with(dir, load)
}

/// What replaying a rows fixture showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowsReplay {
    /// It diverged again, with the same trace hash.
    pub reproduced: bool,
    pub trace_hash: Option<String>,
    pub divergence: Option<String>,
    /// The same operations pass against the reference.
    pub reference_passes: bool,
    /// The divergence in pieces, for the HTML page.
    pub shown: Option<crate::explore::cli::ReplayDivergence>,
}

/// Replays `f` on `tier`, and (for a mutant's failure) the same operations on the reference.
pub async fn replay(tier: Tier<'_>, f: &RowsFixture) -> Result<RowsReplay, String> {
    let mutant = mutant_arg(f.mutant.as_deref())?;
    let variants = Declared::read(&f.setting.variants)?;
    let detail = tier.detail();
    let run = run_ops_taking(tier, detail, f.setting.batch, &f.ops, mutant, &variants).await;
    let (hash, divergence) = match &run {
        Err(RunError::Diverged(d)) => (Some(d.hash()), Some(d.line())),
        Err(RunError::Setup(e)) => return Err(format!("could not set up: {e}")),
        Ok(_) => (None, None),
    };
    let reference_passes = if mutant.is_some() {
        match run_ops_taking(tier, detail, f.setting.batch, &f.ops, None, &variants).await {
            Ok(_) => true,
            Err(RunError::Diverged(_)) => false,
            Err(RunError::Setup(e)) => return Err(format!("could not set up: {e}")),
        }
    } else {
        run.is_ok()
    };
    let shown = match &run {
        Err(RunError::Diverged(d)) => Some(crate::explore::cli::ReplayDivergence {
            at: format!("operation {} ({})", d.step, d.op),
            expected: d.expected.clone(),
            actual: d.actual.clone(),
            trace: d.trace.lines().to_vec(),
            rule: Some(super::signature(f.ops.get(d.step), d).rule),
            model_state: d.model_state.clone(),
        }),
        _ => None,
    };
    Ok(RowsReplay {
        reproduced: hash.as_deref() == Some(f.trace_hash.as_str()),
        trace_hash: hash,
        divergence,
        reference_passes,
        shown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::rows::explore::ops::{generate, DEFAULT_STEPS};
    use crate::profiles::rows::script::Action;

    #[test]
    fn every_generated_sequence_passes_the_loaders_checks_and_a_hostile_one_does_not() {
        for seed in 0..200 {
            let (_, ops) = generate(seed, DEFAULT_STEPS);
            check_ops(&ops).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
        let (_, mut ops) = generate(0, DEFAULT_STEPS);
        ops.insert(0, ExploreOp::Step(Action::Advance(i64::MIN)));
        assert!(check_ops(&ops).unwrap_err().contains("before 1970"));
        let keep = ExploreOp::Step(Action::Keep {
            store: tidemark_reference::rows::ExpiringStore::ALL[0],
            id: "t1".into(),
            for_ms: -5,
        });
        assert!(check_ops(&[keep]).unwrap_err().contains("kept for 0"));
    }
}

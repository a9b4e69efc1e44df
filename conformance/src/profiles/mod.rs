//! The profile interface. A profile is one design of agent file storage with retention (the
//! scratchpad, scoped object storage, ...): it supplies its scenario vocabulary, its reference
//! driver, its model and exploration, its mutant catalogue and its world. Everything a profile
//! owns lives in its folder here; the command line reaches it only through [`Profile`], so a
//! new profile is one folder and one line in [`PROFILES`].

pub mod rows;
pub mod scoped;
pub mod scratchpad;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::explore::cli::ReplayOutcome;
use crate::explore::engine::{self, Explorer, Seeds};
use crate::explore::signature::KnownDifferences;
use crate::explore::Shard;
use crate::explore::{compare, hunt};
use crate::process::ProcessFactory;
use crate::protocol::InitOk;
use crate::report::CaseReport;
use crate::scenario::header::HeaderVocabulary;
use crate::scenario::{LoadErrors, ScenarioFileError};
use crate::variants::Declared;

/// Every profile, in the order `tidemark run` plays and reports them.
pub static PROFILES: &[&dyn Profile] = &[
    &scratchpad::ScratchpadProfile,
    &scoped::ScopedProfile,
    &rows::RowsProfile,
];

/// The registered profiles' names, in order.
pub fn names() -> Vec<&'static str> {
    PROFILES.iter().map(|p| p.name()).collect()
}

/// The profile called `name`, or an error listing the others.
pub fn named(name: &str) -> Result<&'static dyn Profile, String> {
    PROFILES
        .iter()
        .copied()
        .find(|p| p.name() == name)
        .ok_or_else(|| {
            format!(
                "unknown profile {name:?}; expected one of {}",
                names().join(", ")
            )
        })
}

/// What `tidemark run` asks of one profile.
pub struct RunRequest<'a> {
    /// The suite's root (`scenarios/`); the profile reads its own files below it.
    pub scenarios: &'a Path,
    pub spec: &'a Path,
    /// Test names of this profile (`--only`); empty for all.
    pub only: &'a [String],
    pub jobs: NonZeroUsize,
    /// The command that reruns this suite; a failure's replay adds `--only <test name>`.
    pub replay_prefix: &'a str,
    /// `--tier`: where the reference keeps its state, one of [`Profile::tiers`]; `None` for
    /// the profile's default.
    pub tier: Option<&'a str>,
    /// `--variant`: the SPEC.md variants the in-process reference takes (a program declares
    /// its own in `init_ok`).
    pub variants: &'a Declared,
}

/// What `tidemark mutants` asks of one profile.
pub struct MutantsRequest<'a> {
    pub scenarios: &'a Path,
    pub spec: &'a Path,
    /// One mutant id (`--only`), or all.
    pub only: Option<&'a str>,
    /// Name every scenario that kills a mutant, not only the first.
    pub all_killers: bool,
    /// `--tier`, as for [`RunRequest::tier`].
    pub tier: Option<&'a str>,
}

/// One profile's mutant table rows and counts.
pub struct MutantRows {
    /// Rendered rows, without the closing count line.
    pub rows: String,
    pub killed: usize,
    pub survived: usize,
}

/// Where exploration saves a shrunk failure.
#[derive(Clone, Debug)]
pub enum SaveTo {
    /// The profile's folder under `fixtures/`.
    Default,
    Dir(PathBuf),
    Nowhere,
}

impl SaveTo {
    /// The directory a failure is saved in, `default` being the profile's folder; `None`: not
    /// saved.
    pub fn dir(&self, default: impl FnOnce() -> PathBuf) -> Option<PathBuf> {
        match self {
            SaveTo::Default => Some(default()),
            SaveTo::Dir(d) => Some(d.clone()),
            SaveTo::Nowhere => None,
        }
    }
}

/// `tidemark explore`'s options. A profile refuses an option it does not support, by name.
#[derive(Clone, Debug)]
pub struct ExploreRequest {
    pub seeds: u64,
    pub first_seed: u64,
    pub shard: Shard,
    pub mutant: Option<String>,
    pub check_determinism: bool,
    pub hunt: bool,
    /// Searches per mutant when hunting; `None`: the profile's default.
    pub hunt_trials: Option<u64>,
    pub save: SaveTo,
    pub max_shrink_iters: u32,
    /// `--impl`: explore a program through the protocol instead of the reference.
    pub implementation: Option<String>,
    /// `--tier`, where the profile has tiers (`postgres`, `memory`).
    pub tier: Option<String>,
    pub differential: bool,
    pub jobs: NonZeroUsize,
    /// `--variant`: the SPEC.md variants the reference takes, and the model follows.
    pub variants: Declared,
    /// `--expect`: an expectations file whose differences this exploration accepts.
    pub expect: Option<crate::expectations::Expectations>,
    /// `--html`, `--json`, `--coverage`.
    pub outputs: crate::explore::Outputs,
}

impl ExploreRequest {
    /// The differences `--expect` lists for `profile` (none without `--expect`).
    pub fn known(&self, profile: &str) -> KnownDifferences {
        self.expect
            .as_ref()
            .map(|e| e.known_differences(profile))
            .unwrap_or_default()
    }

    /// The seeds asked for, as the engine runs them.
    pub fn seeds(&self) -> Seeds {
        Seeds {
            first_seed: self.first_seed,
            seeds: self.seeds,
            shard: self.shard,
            jobs: self.jobs.get(),
        }
    }

    /// `--hunt`, `--check-determinism`, or the exploration itself on `explorer`, its failures
    /// saved where `--save-dir`/`--no-save` say (`default_dir`: the profile's folder).
    pub async fn run_on<E: Explorer + ?Sized>(
        &self,
        explorer: &E,
        mutant: Option<E::Mutant>,
        default_dir: impl FnOnce() -> PathBuf,
    ) -> Result<bool, String> {
        let seeds = self.seeds();
        if self.hunt && self.expect.is_some() {
            return Err(
                "--expect lists differences exploration accepts; a hunt looks for mutants, not differences: leave one out"
                    .into(),
            );
        }
        if (self.hunt || self.check_determinism) && self.outputs.any() {
            return Err(
                "--html, --json and --coverage report an exploration; --hunt and --check-determinism print their own lines: leave one out"
                    .into(),
            );
        }
        if self.hunt {
            return hunt::hunt_command(explorer, &seeds, mutant, self.hunt_trials).await;
        }
        if self.check_determinism {
            return compare::compare(explorer, explorer, &seeds, mutant).await;
        }
        let save_dir = self.save.dir(default_dir);
        engine::explore(
            explorer,
            &seeds,
            mutant,
            self.max_shrink_iters,
            save_dir.as_deref(),
            &self.known(explorer.profile()),
            &self.outputs,
        )
        .await
    }
}

/// `tidemark bench`'s options; each profile measures with those it takes.
#[derive(Clone, Debug)]
pub struct BenchRequest {
    /// Seeds for the scratchpad's exploration throughput.
    pub seeds: u64,
    /// Seeds for the scoped figures (the same seeds on both tiers).
    pub scoped_seeds: u64,
    /// Streamed events for the rows reap figure; 0 skips it.
    pub rows: i64,
    pub jobs: NonZeroUsize,
}

/// `tidemark world`'s options.
#[derive(Clone, Debug)]
pub struct WorldRequest {
    pub seeds: u64,
    pub first_seed: u64,
    pub mutant: Option<String>,
    pub check_determinism: bool,
    pub hunt: bool,
    /// `--variant`: the SPEC.md variants the world's reference takes and its oracle follows.
    pub variants: Declared,
    /// `--html FILE`: the seeds' report page.
    pub html: Option<PathBuf>,
}

/// What each profile supplies to the command line. The engine around it (argument parsing,
/// selection, reports in every format, exit codes, interruption) is written once.
#[async_trait(?Send)]
pub trait Profile: Sync {
    /// The name scenario files give in `profile:` and the command line in `--profile`.
    fn name(&self) -> &'static str;

    /// What this profile's scenario headers may name.
    fn vocabulary(&self) -> &'static HeaderVocabulary;

    /// The tiers `tidemark run` and `tidemark mutants` may put its reference on (`--tier`),
    /// the default first; empty when it has one only and takes no `--tier`.
    fn tiers(&self) -> &'static [&'static str] {
        &[]
    }

    /// Loads this profile's scenarios from the suite's directory (every profile reads the whole
    /// tree, `scenario/load.rs`), citations checked against `spec`, to report what does not
    /// load: empty when every file loads.
    fn load_errors(&self, scenarios: &Path, spec: &Path) -> Vec<ScenarioFileError>;

    /// Plays the selected scenarios against the reference in process, or (`program`) an
    /// implementation through the process protocol, one report case per scenario.
    async fn run(
        &self,
        request: &RunRequest<'_>,
        program: Option<&ProcessFactory>,
    ) -> Result<Vec<CaseReport>, String>;

    /// Runs the mutant catalogue against the suite.
    async fn mutants(&self, request: &MutantsRequest<'_>) -> Result<MutantRows, String>;

    /// Random operation sequences beside the profile's model; true if no seed failed.
    fn explore(&self, request: &ExploreRequest) -> Result<bool, String>;

    /// Whether a saved failure at `path` is this profile's to replay.
    fn owns_fixture(&self, path: &Path) -> bool;

    /// Replays a saved failure (or, where the profile supports it, one seed).
    fn replay(
        &self,
        fixture: Option<&Path>,
        seed: Option<u64>,
        mutant: Option<&str>,
        html: Option<&Path>,
    ) -> Result<ReplayOutcome, String>;

    /// The turmoil world: the reference as a host, concurrent guests, faults from the seed.
    fn world(&self, request: &WorldRequest) -> Result<bool, String>;

    /// `tidemark bench`'s figures for this profile, measured on this machine; empty when it has
    /// none.
    fn bench(&self, _request: &BenchRequest) -> Result<String, String> {
        Ok(String::new())
    }

    /// Reads what this profile's part of the protocol adds to a program's `init_ok` (declared
    /// queries), as it will be read: an error says what is malformed.
    fn check_claims(&self, _claims: &InitOk) -> Result<(), String> {
        Ok(())
    }
}

/// Every profile's [`Profile::check_claims`], in registry order: a program's `init_ok` whose
/// part for some profile is malformed is refused whichever profile it is run for.
pub fn check_claims(claims: &InitOk) -> Result<(), String> {
    PROFILES.iter().try_for_each(|p| p.check_claims(claims))
}

/// Every load error of the selected profiles' scenarios, each once (a file no profile's header
/// claims is every profile's error), in path order: a run reports them all together, and
/// nothing runs when there is any.
pub fn load_errors(
    selected: &[&'static dyn Profile],
    scenarios: &Path,
    spec: &Path,
) -> Result<(), LoadErrors> {
    let errors: std::collections::BTreeSet<ScenarioFileError> = selected
        .iter()
        .flat_map(|p| p.load_errors(scenarios, spec))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(LoadErrors(errors.into_iter().collect()))
    }
}

/// The rule ids of the SPEC.md at `spec`, or the load error naming it.
pub(crate) fn spec_rules(spec: &Path) -> Result<crate::spec::RuleIndex, ScenarioFileError> {
    crate::spec::RuleIndex::load(spec)
        .map_err(|e| ScenarioFileError::new(spec, 0, format!("cannot read SPEC.md: {e}")))
}

/// Checks `--tier` against a profile's tiers: `Ok` when none was given or the profile has it.
pub fn check_tier(profile: &dyn Profile, tier: Option<&str>) -> Result<(), String> {
    match tier {
        None => Ok(()),
        Some(t) if profile.tiers().contains(&t) => Ok(()),
        Some(_) if profile.tiers().is_empty() => Err(unsupported(profile.name(), "--tier")),
        Some(t) => Err(format!(
            "the {} profile has no tier {t:?}; it has {}",
            profile.name(),
            profile.tiers().join(", ")
        )),
    }
}

/// The error for an option a profile does not take.
pub(crate) fn unsupported(profile: &str, option: &str) -> String {
    format!("{option} does not apply to the {profile} profile")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_is_registered_once_and_reads_its_own_header() {
        let names = names();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for p in PROFILES {
            assert_eq!(p.vocabulary().profile, p.name());
        }
        assert!(named("rows-typo")
            .err()
            .unwrap()
            .contains("scratchpad, scoped"));
    }
}

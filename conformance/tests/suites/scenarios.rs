//! `cargo test` runs each scenario as its own named test (`scratchpad::<file stem>`), each
//! mutant as a test that passes only when every scenario naming it in `kills:` fails under it
//! (`mutant::<profile>::<id>`),
//! each saved exploration failure under fixtures/explore/scratchpad as a replay (`fixture::<file>`),
//! and each SPEC.md variant's other choice twice (`variant::scratchpad::<name>_<choice>::…`): the
//! reference taking and declaring it passes every scenario, and taking it while declaring the
//! default fails one, so the guarded steps tell the two choices apart.

use libtest_mimic::{Failed, Trial};
use tidemark_conformance::driver::DriverError;
use tidemark_conformance::profiles::scratchpad as suite;
use tidemark_conformance::profiles::scratchpad::contract::{Driver, DriverFactory, Environment};
use tidemark_conformance::profiles::scratchpad::explore::fixture;
use tidemark_conformance::profiles::scratchpad::gate::skip_reason;
use tidemark_conformance::profiles::scratchpad::mutants::run_scratchpad_mutants;
use tidemark_conformance::profiles::scratchpad::runner::run_scenario;
use tidemark_conformance::profiles::scratchpad::script::{Profile, Scenario};
use tidemark_conformance::profiles::scratchpad::variants;
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::{default_scenarios_dir, default_spec_path};
use tidemark_reference::scratchpad::ScratchpadMutant;

use super::shared::{
    block_on, every_rule_bites, failure_line, mutant_verdict, saved_failure_verdict, Claims,
    Replayed,
};

/// The reference taking other variants than it declares: what an implementation whose
/// declaration is wrong looks like to the suite.
struct Undeclared(ReferenceScratchpad);

impl DriverFactory for Undeclared {
    fn name(&self) -> String {
        format!("{} (declaring the defaults)", self.0.name())
    }
    fn supports(&self, profile: Profile) -> bool {
        self.0.supports(profile)
    }
    fn capabilities(&self) -> Vec<String> {
        self.0.capabilities()
    }
    fn create(&self, profile: Profile, env: &Environment) -> Result<Box<dyn Driver>, DriverError> {
        self.0.create(profile, env)
    }
}

/// The scenarios `factory` fails (skipped ones are not failures), as `file:line: step`.
fn failures(scenarios: &[Scenario], factory: &dyn DriverFactory) -> Vec<String> {
    scenarios
        .iter()
        .filter(|s| skip_reason(factory, s).is_none())
        .filter_map(|s| {
            block_on(run_scenario(s, factory))
                .failure
                .map(|f| failure_line(&s.file, &f, ""))
        })
        .collect()
}

/// The SP rules SPEC itself says no scenario stages, and why.
const SP_NOT_STAGED: &[(&str, &str)] = &[
    (
        "SP-7.4",
        "the harness sends `start` before any other request: a promise of the harness, not of an implementation",
    ),
    (
        "SP-7.5",
        "files placed in a session directory or a foreign directory belong to no requester; no scenario places one",
    ),
    ("SP-7.6", "an I/O failure is not staged by the suite"),
    (
        "SP-7.7",
        "a file no guest path could create (a name that is not UTF-8) is placed by no scenario",
    ),
];

/// The SP rules no mutant breaks, and why none can be killed by a scenario (the four SPEC says
/// no scenario stages among them).
const SP_WITHOUT_MUTANT: &[(&str, &str)] = &[
    (
        "SP-7.4",
        "a promise of the harness (`start` first), not of an implementation",
    ),
    (
        "SP-7.5",
        "no scenario places a file that belongs to no requester, and counting one is the implementation's choice",
    ),
    ("SP-7.6", "an I/O failure is not staged by the suite"),
    (
        "SP-7.7",
        "no scenario places a file no guest path could create, and skipping or replacing its name is the implementation's choice",
    ),
];

pub fn trials(_: &super::shared::Shared) -> Result<Vec<Trial>, String> {
    let scenarios = suite::load(&default_scenarios_dir(), &default_spec_path())
        .map_err(|e| format!("the scenario suite does not load: {e}"))?;
    let mut trials = Vec::new();
    for s in scenarios.clone() {
        trials.push(Trial::test(s.test_name(), move || {
            let r = block_on(run_scenario(&s, &ReferenceScratchpad::default()));
            match r.failure {
                None => Ok(()),
                Some(f) => Err(Failed::from(format!(
                    "{}:{}: {}\n  expected: {}\n  actual:   {}\n  trace tail:\n    {}",
                    s.file.display(),
                    f.line,
                    f.step,
                    f.expected,
                    f.actual,
                    r.trace.tail(8).join("\n    ")
                ))),
            }
        }));
    }
    for m in ScratchpadMutant::ALL {
        // The scenarios that claim this mutant (`kills:`): each claim must hold, and there
        // must be one.
        let claiming: Vec<_> = scenarios
            .iter()
            .filter(|s| s.kills.iter().any(|k| k == m.id()))
            .cloned()
            .collect();
        trials.push(Trial::test(
            format!("mutant::scratchpad::{}", m.id().replace('-', "_")),
            move || {
                if claiming.is_empty() {
                    return mutant_verdict(m.id(), m.description(), false, &[]);
                }
                let refs: Vec<_> = claiming.iter().collect();
                let r = block_on(run_scratchpad_mutants(&refs, Some(m.id()), false));
                let survived: Vec<String> = claiming
                    .iter()
                    .map(|s| s.test_name())
                    .filter(|n| !r.iter().any(|r| r.killed_by.contains(n)))
                    .collect();
                mutant_verdict(m.id(), m.description(), true, &survived)
            },
        ));
    }
    let all = scenarios.clone();
    trials.extend(super::shared::variant_trials(
        "scratchpad",
        variants::each_alternative(),
        move |takes, declares| {
            let reference = ReferenceScratchpad {
                mutant: None,
                variants: takes.clone(),
            };
            Ok(if takes == declares {
                failures(&all, &reference)
            } else {
                // The only other declaration played is the defaults.
                failures(&all, &Undeclared(reference))
            })
        },
    ));
    trials.push(super::shared::every_rule_cited(
        "SP",
        scenarios
            .iter()
            .map(|s| (s.file.clone(), s.rules.clone()))
            .collect(),
        SP_NOT_STAGED,
    ));
    trials.push(every_rule_bites(
        "SP",
        scenarios
            .iter()
            .map(|s| Claims {
                file: s.file.clone(),
                rules: s.rules.clone(),
                kills: s.kills.clone(),
            })
            .collect(),
        ScratchpadMutant::ALL
            .iter()
            .map(|m| (m.id(), m.rules()))
            .collect(),
        SP_WITHOUT_MUTANT,
    ));
    let fixtures_dir = tidemark_conformance::profiles::scratchpad::explore::fixture::default_dir();
    let fixtures = fixture::load_all(&fixtures_dir)
        .map_err(|e| format!("a saved fixture does not load: {e}"))?;
    for (path, f) in fixtures {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().replace('-', "_"))
            .unwrap_or_default();
        trials.push(Trial::test(format!("fixture::{name}"), move || {
            let r = block_on(fixture::replay(&f)).map_err(Failed::from)?;
            saved_failure_verdict(Replayed {
                path: &path,
                against_mutant: f.mutant.is_some(),
                reproduced: r.reproduced,
                reference_passes: r.reference_passes,
                trace_hash: &r.trace_hash,
                saved_hash: &f.trace_hash,
                divergence: r.divergence.map(|d| d.to_string()),
            })
        }));
    }
    Ok(trials)
}

//! What the suites set up once for all of them: one runtime, and one PostgreSQL for the run,
//! started only when a test first needs it and stopped before the binary exits
//! (libtest-mimic's exit skips destructors).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use libtest_mimic::{Failed, Trial};
use tidemark_conformance::play::Failure;
use tidemark_conformance::profiles::scoped::script::{self, Script};
use tidemark_conformance::variants::Declared;
use tidemark_sim::real_tier::PgProvider;

pub struct Shared {
    pub rt: Arc<tokio::runtime::Runtime>,
    pg: Arc<OnceLock<Result<Arc<PgProvider>, String>>>,
}

impl Shared {
    pub fn new() -> Shared {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        Shared {
            rt: Arc::new(rt),
            pg: Arc::new(OnceLock::new()),
        }
    }

    /// The run's PostgreSQL, for a trial to call: each test makes its own databases on it (and
    /// each scoped scenario its own S3 server), so one test's faults never reach another.
    pub fn postgres(
        &self,
    ) -> impl Fn() -> Result<Arc<PgProvider>, Failed> + Clone + Send + 'static {
        let (rt, pg) = (self.rt.clone(), self.pg.clone());
        move || {
            pg.get_or_init(|| {
                rt.block_on(PgProvider::from_environment())
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(Failed::from)
        }
    }
}

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The scoped scenarios, or why they do not load (file and line).
pub fn scoped_scripts() -> Result<Vec<Script>, String> {
    script::load_dir(&root().join("scenarios/scoped"))
        .map_err(|e| format!("the scoped scenarios do not load: {e}"))
}

/// The rows scenarios, their rule citations checked against SPEC.md, or why they do not load.
pub fn rows_scripts() -> Result<Vec<tidemark_conformance::profiles::rows::script::Script>, String> {
    let spec = std::fs::read_to_string(root().join("SPEC.md"))
        .map_err(|e| format!("cannot read SPEC.md: {e}"))?;
    tidemark_conformance::profiles::rows::load_with(
        &root().join("scenarios/rows"),
        &[],
        &tidemark_sim::spec_rules::rule_ids(&spec),
    )
    .map_err(|e| format!("the rows scenarios do not load: {e}"))
}

/// The rules SPEC.md defines in `part` (`SC` defines `SC-1.1` ...), counted first: a SPEC.md
/// the reader found fewer than ten rules of a part in would make every check over them hollow.
fn defined_rules(part: &str) -> Result<BTreeSet<String>, Failed> {
    let spec = std::fs::read_to_string(root().join("SPEC.md"))
        .map_err(|e| Failed::from(format!("cannot read SPEC.md: {e}")))?;
    let prefix = format!("{part}-");
    let defined: BTreeSet<String> = tidemark_sim::spec_rules::rule_ids(&spec)
        .into_iter()
        .filter(|r| r.starts_with(&prefix))
        .collect();
    if defined.len() < 10 {
        return Err(format!("SPEC.md defines only {} {part} rules", defined.len()).into());
    }
    Ok(defined)
}

/// A trial: every rule of SPEC.md's `part` (`SP`, `SC`, `SR`) is cited by some scenario, and
/// every citation names a rule SPEC.md defines. The rules are counted first: a SPEC.md the
/// reader found no rules in would otherwise pass with nothing checked. `not_staged` lists the
/// rules SPEC itself says no scenario stages, each with why; each must still be defined.
pub fn every_rule_cited(
    part: &'static str,
    citations: Vec<(PathBuf, Vec<String>)>,
    not_staged: &'static [(&'static str, &'static str)],
) -> Trial {
    let name = format!(
        "rules::every_{}_rule_is_cited_and_every_citation_exists",
        part.to_lowercase()
    );
    Trial::test(name, move || {
        let defined = defined_rules(part)?;
        let prefix = format!("{part}-");
        let mut cited = BTreeSet::new();
        for (file, rules) in &citations {
            // Scoped scenarios cite SC and SF rules; each part's check reads its own.
            for r in rules.iter().filter(|r| r.starts_with(&prefix)) {
                if !defined.contains(r) {
                    return Err(format!(
                        "{} cites {r}, which SPEC does not define",
                        file.display()
                    )
                    .into());
                }
                cited.insert(r.clone());
            }
        }
        for (rule, _why) in not_staged {
            if !defined.contains(*rule) {
                return Err(
                    format!("{rule} is listed as not staged, but SPEC does not define it").into(),
                );
            }
            cited.insert(rule.to_string());
        }
        let uncited: Vec<_> = defined.difference(&cited).collect();
        if uncited.is_empty() {
            Ok(())
        } else {
            Err(format!("no scenario cites {uncited:?}").into())
        }
    })
}

/// One scenario as the bite check reads it: its file, the rules it cites, the mutants it kills.
pub struct Claims {
    pub file: PathBuf,
    pub rules: Vec<String>,
    pub kills: Vec<String>,
}

/// A trial: every rule of SPEC.md's `part` bites. Each mutant of the part's catalogue names the
/// rules it breaks (`mutants`: id and rules), and each of those rules is cited by a scenario
/// naming the mutant in `kills:` (the `mutant::` trials hold that every such scenario fails
/// under it); every rule of the part is broken by some mutant, or is listed in `without` with
/// the reason no mutant of it can be killed by a scenario. A listed rule that has a mutant is
/// an error too, so the list stays the list of rules without one.
/// `TIDEMARK_SHOW_BITES=1` prints each rule's mutants.
pub fn every_rule_bites(
    part: &'static str,
    scenarios: Vec<Claims>,
    mutants: Vec<(&'static str, &'static [&'static str])>,
    without: &'static [(&'static str, &'static str)],
) -> Trial {
    let name = format!(
        "rules::every_{}_rule_has_a_mutant_killed_by_a_scenario_citing_it",
        part.to_lowercase()
    );
    Trial::test(name, move || {
        let defined = defined_rules(part)?;
        let prefix = format!("{part}-");
        let mut problems = Vec::new();
        let mut bitten: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for (id, rules) in &mutants {
            if rules.is_empty() {
                problems.push(format!("mutant {id} names no rule it breaks"));
            }
            // A catalogue may break rules of several parts (the scoped mutants break SC's and
            // SF's); each part's check reads its own.
            for rule in rules.iter().filter(|r| r.starts_with(&prefix)) {
                if !defined.contains(*rule) {
                    problems.push(format!(
                        "mutant {id} breaks {rule}, which SPEC does not define in part {part}"
                    ));
                    continue;
                }
                let cited_by_a_killer = scenarios
                    .iter()
                    .any(|s| s.kills.iter().any(|k| k == id) && s.rules.iter().any(|r| r == rule));
                if cited_by_a_killer {
                    bitten.entry(rule).or_default().push(id);
                } else {
                    let killers: Vec<String> = scenarios
                        .iter()
                        .filter(|s| s.kills.iter().any(|k| k == id))
                        .filter_map(|s| {
                            s.file.file_name().map(|f| f.to_string_lossy().into_owned())
                        })
                        .collect();
                    problems.push(format!(
                        "mutant {id} breaks {rule}, but no scenario naming it in `kills:` cites {rule} (they are: {})",
                        if killers.is_empty() { "none".to_string() } else { killers.join(", ") }
                    ));
                }
            }
        }
        for (rule, why) in without {
            if !defined.contains(*rule) {
                problems.push(format!(
                    "{rule} is listed as having no mutant, but SPEC does not define it"
                ));
            } else if let Some(ms) = bitten.get(rule) {
                problems.push(format!(
                    "{rule} is listed as having no mutant ({why}), but {} breaks it",
                    ms.join(", ")
                ));
            }
        }
        let unexplained: Vec<&String> = defined
            .iter()
            .filter(|r| !bitten.contains_key(r.as_str()) && !without.iter().any(|(w, _)| w == r))
            .collect();
        if !unexplained.is_empty() {
            problems.push(format!(
                "no mutant breaks {unexplained:?}, and no reason says why none can"
            ));
        }
        if std::env::var_os("TIDEMARK_SHOW_BITES").is_some() {
            for rule in &defined {
                match (
                    bitten.get(rule.as_str()),
                    without.iter().find(|(w, _)| w == rule),
                ) {
                    (Some(ms), _) => eprintln!("{rule}\t{}\t{}", ms.len(), ms.join(", ")),
                    (None, Some((_, why))) => eprintln!("{rule}\t0\t(none: {why})"),
                    (None, None) => eprintln!("{rule}\t0\t(none, no reason)"),
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n").into())
        }
    })
}

/// What replaying a saved failure found, whatever the profile.
pub struct Replayed<'a> {
    /// Its file, for the message.
    pub path: &'a std::path::Path,
    /// Whether it was found against a mutant (else against the reference).
    pub against_mutant: bool,
    /// The replay's trace hash equals the saved one.
    pub reproduced: bool,
    /// The reference passes the same operations (asked only of a mutant's failure).
    pub reference_passes: bool,
    pub trace_hash: &'a dyn std::fmt::Debug,
    pub saved_hash: &'a str,
    /// Where the replay diverged, if it did.
    pub divergence: Option<String>,
}

/// The verdict on a replayed saved failure: one found against a mutant must recur with its
/// trace hash while the reference passes the same operations (the model and the reference
/// still agree); one found against the reference must no longer happen.
pub fn saved_failure_verdict(r: Replayed<'_>) -> Result<(), Failed> {
    let shown = r.path.display();
    if !r.against_mutant {
        return match r.divergence {
            Some(d) => Err(format!("{shown}: the reference still fails: {d}").into()),
            None => Ok(()),
        };
    }
    if !r.reproduced {
        return Err(format!(
            "{shown}: the saved failure no longer reproduces identically (trace {:?} vs saved {}; divergence {:?})",
            r.trace_hash, r.saved_hash, r.divergence
        )
        .into());
    }
    if !r.reference_passes {
        return Err(format!("{shown}: the reference fails these operations too").into());
    }
    Ok(())
}

/// `variant::<profile>::<variant>_<choice>::…`, two trials for each non-default choice in
/// `alternatives`: declared, the reference taking it passes every scenario
/// (`every_scenario_follows_it`); undeclared, some scenario fails
/// (`an_undeclared_one_fails_a_scenario`), so the guarded steps tell the two choices apart.
/// `failures(takes, declares)` plays the profile's scenarios with the reference taking `takes`
/// and declaring `declares`, and lists each failure as a line.
pub fn variant_trials<F>(
    profile: &'static str,
    alternatives: Vec<Declared>,
    failures: F,
) -> Vec<Trial>
where
    F: Fn(&Declared, &Declared) -> Result<Vec<String>, Failed> + Clone + Send + 'static,
{
    let mut trials = Vec::new();
    for declared in alternatives {
        let label = declared.non_defaults().join(",");
        let name = label.replace(['=', ','], "_");
        let (follows, takes, label1) = (failures.clone(), declared.clone(), label.clone());
        trials.push(Trial::test(
            format!("variant::{profile}::{name}::every_scenario_follows_it"),
            move || {
                let failed = follows(&takes, &takes)?;
                if failed.is_empty() {
                    Ok(())
                } else {
                    Err(Failed::from(format!(
                        "the reference taking {label1}, and declaring it, fails:\n{}",
                        failed.join("\n")
                    )))
                }
            },
        ));
        let undeclared = failures.clone();
        trials.push(Trial::test(
            format!("variant::{profile}::{name}::an_undeclared_one_fails_a_scenario"),
            move || {
                if undeclared(&declared, &Declared::defaults())?.is_empty() {
                    Err(Failed::from(format!(
                        "the reference taking {label} but declaring the default passes every scenario: no scenario tells the two choices apart"
                    )))
                } else {
                    Ok(())
                }
            },
        ));
    }
    trials
}

/// One failing scenario as a line of a trial's message: its file and line, the step, what was
/// expected and what came (`where_` says where it ran, when a trial plays on more than one).
pub fn failure_line(file: &Path, f: &Failure, where_: &str) -> String {
    format!(
        "  {}:{}: {}{where_} (expected {}, got {})",
        file.display(),
        f.line,
        f.step,
        f.expected,
        f.actual
    )
}

/// A mutant trial's verdict: a mutant no scenario names in `kills:` fails (every mutant must be
/// killed by a named scenario), and so does one that survives a scenario naming it.
pub fn mutant_verdict(
    id: &str,
    description: &str,
    named: bool,
    survived: &[String],
) -> Result<(), Failed> {
    if !named {
        return Err(Failed::from(format!(
            "no scenario names mutant {id} ({description}) in `kills:`"
        )));
    }
    if survived.is_empty() {
        return Ok(());
    }
    Err(Failed::from(format!(
        "mutant {id} ({description}) survives {}, which names it in `kills:`",
        survived.join(", ")
    )))
}

/// A future run to its end on a runtime of its own, for a trial that runs outside the shared
/// runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

//! `cargo test` runs each scoped scenario (`scenarios/scoped/*.tdm`) as its own named test,
//! `scoped::<file stem>`, against the reference implementation on the real tier (the disk S3
//! store over HTTP, a real PostgreSQL; one bucket and database per scenario), and each scoped mutant as a
//! test, `mutant::scoped::<id>`, that passes only when every scenario naming it in `kills:`
//! fails under it. Each scenario runs a second time on the in-memory S3
//! (`differential::memory::<file stem>`): the in-memory store earns its place in the
//! simulation tier by giving the same observable outcomes.

use libtest_mimic::{Failed, Trial};

use super::shared::{every_rule_bites, every_rule_cited, scoped_scripts, Claims, Shared};
use tidemark_conformance::profiles::scoped::runner;
use tidemark_conformance::profiles::scoped::script::Script;
use tidemark_reference::scoped::ScopedMutant;

/// The SC rules no mutant breaks, and why none can be killed by a scenario.
const SC_WITHOUT_MUTANT: &[(&str, &str)] = &[
    (
        "SC-1.2",
        "where the layout is encoded is the shape of the code; no harness reads source, and every key it builds is judged through SC-1.1 and SC-6.2",
    ),
    (
        "SC-2.8",
        "it permits (any of several reasons for a path that breaks several rules) and obliges nothing no other rule of SC-2 obliges",
    ),
    (
        "SC-6.5",
        "cost: the index an obligation sweep reads and how it chunks change how long it takes, never what it deletes or records",
    ),
    (
        "SC-6.6",
        "it says how a harness reads the ledger (declared read-only queries, the implementation's own tables); what the ledger must hold is SC-6.1 to SC-6.4's, whose mutants are killed through it",
    ),
    (
        "SC-7.3",
        "it states S3's own lifecycle semantics, which the harness's executor carries out (sim/tests/integration/lifecycle_aws.rs holds it to AWS's documented behaviour); an implementation's rules are judged by SC-7.1, SC-7.2 and SC-7.4",
    ),
];

/// Rules with the reason each is listed.
type Reasons = &'static [(&'static str, &'static str)];

/// The SF rules no mutant breaks, and why none can be killed by a scenario.
const SF_WITHOUT_MUTANT: &[(&str, &str)] = &[
    (
        "SF-1.2",
        "it fixes the shapes of the answers, which the harness's client judges on every answer of every people's step (profiles/scoped/people.rs, tested there): a shape it does not name fails the step, so no mutant can answer otherwise and be judged by its outcome; the names inside them are SF-1.3's, whose mutant is killed",
    ),
];

/// The SL rules no scenario stages yet, and why: none since retention per workspace (SL-5),
/// the last of issue 23's slices, was built.
const SL_NOT_STAGED: &[(&str, &str)] = &[];

/// The SL rules no mutant breaks, and why none is killed by a scenario yet.
const SL_WITHOUT_MUTANT: &[(&str, &str)] = &[
    (
        "SL-6.4",
        "survival of the sweep and the deletion is staged; a promotion raced against a sweep (a `promote ... during sweep` step and its mutant) is not built yet",
    ),
    (
        "SL-4.7",
        "it says how a harness reads obligations and proofs (declared read-only queries, the implementation's own tables); what they must hold is SL-4.1 to SL-4.6's, whose mutants are killed through them, and the queries' failures are held to it by conformance/tests/integration/process_erasure.rs",
    ),
];

pub fn trials(shared: &Shared) -> Result<Vec<Trial>, String> {
    let scripts = scoped_scripts()?;
    let rt = shared.rt.clone();
    let get_tier = shared.postgres();

    let mut trials = Vec::new();
    for s in scripts.clone() {
        let rt = rt.clone();
        let get_tier = get_tier.clone();
        trials.push(Trial::test(s.test_name(), move || {
            let tier = get_tier()?;
            rt.block_on(runner::run(tier, &s, None))
                .map_err(|f| Failed::from(format!("{}: {}\n{f}", s.file.display(), s.name)))
        }));
    }
    // The differential check: the same scenarios, the same expectations, on the in-memory
    // store. A scenario that passes on the disk store and fails here is a difference between them.
    for s in scripts.clone() {
        let rt = rt.clone();
        let get_tier = get_tier.clone();
        let name = s
            .test_name()
            .replacen("scoped::", "differential::memory::", 1);
        trials.push(Trial::test(name, move || {
            let pg = get_tier()?;
            rt.block_on(runner::run_on(pg, &s, None, runner::Backend::Memory))
                .map_err(|f| Failed::from(format!("{}: {}\n{f}", s.file.display(), s.name)))
        }));
    }
    for m in ScopedMutant::ALL {
        let killers: Vec<Script> = scripts
            .iter()
            .filter(|s| s.kills.iter().any(|k| k == m.id()))
            .cloned()
            .collect();
        let rt = rt.clone();
        let get_tier = get_tier.clone();
        trials.push(Trial::test(
            format!("mutant::scoped::{}", m.id().replace('-', "_")),
            move || {
                if killers.is_empty() {
                    return Err(Failed::from(format!(
                        "no scenario names mutant {} ({}) in `kills:`",
                        m.id(),
                        m.description()
                    )));
                }
                // Every claim must hold: each scenario naming the mutant fails under it (the
                // bite check reads each claim as a kill of the rules that scenario cites).
                let tier = get_tier()?;
                let survived: Vec<String> = killers
                    .iter()
                    .filter(|s| rt.block_on(runner::run(tier.clone(), s, Some(m))).is_ok())
                    .map(|s| s.test_name())
                    .collect();
                if survived.is_empty() {
                    Ok(())
                } else {
                    Err(Failed::from(format!(
                        "mutant {} ({}) survives {}, which names it in `kills:`",
                        m.id(),
                        m.description(),
                        survived.join(", ")
                    )))
                }
            },
        ));
    }
    trials.push(every_rule_bites(
        "SC",
        scripts
            .iter()
            .map(|s| Claims {
                file: s.file.clone(),
                rules: s.rules.clone(),
                kills: s.kills.clone(),
            })
            .collect(),
        ScopedMutant::ALL
            .iter()
            .map(|m| (m.id(), m.rules()))
            .collect(),
        SC_WITHOUT_MUTANT,
    ));
    trials.push(every_rule_cited(
        "SC",
        scripts
            .iter()
            .map(|s| (s.file.clone(), s.rules.clone()))
            .collect(),
        &[],
    ));
    // Parts SF (the people's files API) and SL (retention policies) are the scoped profile's
    // too: their scenarios are scoped scenarios and their mutants scoped mutants.
    let parts: [(&str, Reasons, Reasons); 2] = [
        ("SF", SF_WITHOUT_MUTANT, &[]),
        ("SL", SL_WITHOUT_MUTANT, SL_NOT_STAGED),
    ];
    for (part, without_mutant, not_staged) in parts {
        trials.push(every_rule_bites(
            part,
            scripts
                .iter()
                .map(|s| Claims {
                    file: s.file.clone(),
                    rules: s.rules.clone(),
                    kills: s.kills.clone(),
                })
                .collect(),
            ScopedMutant::ALL
                .iter()
                .map(|m| (m.id(), m.rules()))
                .collect(),
            without_mutant,
        ));
        trials.push(every_rule_cited(
            part,
            scripts
                .iter()
                .map(|s| (s.file.clone(), s.rules.clone()))
                .collect(),
            not_staged,
        ));
    }
    Ok(trials)
}

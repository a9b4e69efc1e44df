//! `cargo test` runs each scoped scenario (`scenarios/scoped/*.tdm`) as its own named test,
//! `scoped::<file stem>`, against the reference implementation on the real tier (the disk S3
//! store over HTTP, a real PostgreSQL; one bucket and database per scenario), and each scoped mutant as a
//! test, `mutant::scoped::<id>`, that passes only when a scenario naming it in `kills:` fails
//! under it. Each scenario runs a second time on the in-memory S3
//! (`differential::memory::<file stem>`): the in-memory store earns its place in the
//! simulation tier by giving the same observable outcomes.

use libtest_mimic::{Failed, Trial};

use super::shared::{every_rule_cited, scoped_scripts, Shared};
use tidemark_conformance::profiles::scoped::play;
use tidemark_conformance::profiles::scoped::script::Script;
use tidemark_reference::scoped::ScopedMutant;

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
            rt.block_on(play::run(tier, &s, None))
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
            rt.block_on(play::run_on(pg, &s, None, play::Backend::Memory))
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
                let tier = get_tier()?;
                for s in &killers {
                    if rt.block_on(play::run(tier.clone(), s, Some(m))).is_err() {
                        return Ok(());
                    }
                }
                Err(Failed::from(format!(
                    "mutant {} ({}) survives {}",
                    m.id(),
                    m.description(),
                    killers
                        .iter()
                        .map(|s| s.test_name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            },
        ));
    }
    trials.push(every_rule_cited(
        "SC",
        scripts
            .iter()
            .map(|s| (s.file.clone(), s.rules.clone()))
            .collect(),
        &[],
    ));
    Ok(trials)
}

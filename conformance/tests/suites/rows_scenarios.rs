//! `cargo test` runs each rows scenario (`scenarios/rows/*.tdm`) as its own named test,
//! `rows::<file stem>`, against the reference on a real PostgreSQL (one database per
//! scenario), and each rows mutant as a test, `mutant::rows::<id>`, that passes only when every
//! scenario naming it in `kills:` fails under it (and one does). Each scenario also runs as
//! `model::rows::<file stem>`: every outcome the reference gives is the one the executable
//! model (`profiles/rows/model.rs`) predicts. A last test checks that every SR rule SPEC.md
//! defines is cited by some scenario, and every citation exists.
//!
//! `TIDEMARK_SHOW_KILLS=1` prints where each mutant was killed (the step, expected and actual),
//! to check a kill is for the reason the scenario states.

use libtest_mimic::{Failed, Trial};
use tidemark_conformance::variants::Declared;

use super::shared::{
    every_rule_bites, every_rule_cited, failure_line, mutant_verdict, root, rows_scripts, Claims,
    Shared,
};
use tidemark_conformance::profiles::rows::model::Model;
use tidemark_conformance::profiles::rows::runner;
use tidemark_conformance::profiles::rows::script::{Action, Script};
use tidemark_reference::rows::RowsMutant;
use tidemark_sim::trace::Trace;

/// `tidemark <args>` from the repository root: exit code, stdout and stderr.
fn tidemark(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("tidemark runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The command line reaches the profile through the registry alone: `run` passes in process on
/// both tiers and through the reference adapter (`--impl`), `mutants` kills every mutant in
/// memory (on PostgreSQL it is the `mutant::rows::*` tests above, and `.ci/run`'s), `--tier` is
/// refused by a profile without tiers, `world` runs and replays byte-identically, `explore`
/// refuses by name.
fn cli() -> Result<(), Failed> {
    let check = |ok: bool, what: &str, out: &(i32, String, String)| {
        if ok {
            Ok(())
        } else {
            Err(Failed::from(format!(
                "{what}: exit {}\n{}\n{}",
                out.0, out.1, out.2
            )))
        }
    };
    let run = tidemark(&["run", "--profile", "rows"]);
    check(
        run.0 == 0 && run.1.ends_with(" passed, 0 failed\n") && run.1.contains("PASS  rows::"),
        "tidemark run --profile rows",
        &run,
    )?;
    let memory = tidemark(&["run", "--profile", "rows", "--tier", "memory"]);
    check(
        memory.0 == 0
            && memory.1.ends_with(" passed, 0 failed\n")
            && memory.1.contains("PASS  rows::"),
        "tidemark run --profile rows --tier memory",
        &memory,
    )?;
    let mutants = tidemark(&["mutants", "--profile", "rows", "--tier", "memory"]);
    check(
        mutants.0 == 0
            && mutants.1.ends_with(" passed, 0 failed\n")
            && !mutants.1.contains("SURVIVED"),
        "tidemark mutants --profile rows --tier memory",
        &mutants,
    )?;
    let elsewhere = tidemark(&["run", "--profile", "scratchpad", "--tier", "memory"]);
    check(
        elsewhere.0 == 2
            && elsewhere
                .2
                .contains("--tier does not apply to the scratchpad profile"),
        "tidemark run --profile scratchpad --tier memory",
        &elsewhere,
    )?;
    let adapter = env!("CARGO_BIN_EXE_tidemark-reference-adapter");
    let through = tidemark(&["run", "--impl", adapter, "--profile", "rows"]);
    check(
        through.0 == 0
            && through.1.ends_with(" passed, 0 failed\n")
            && through.1.contains("PASS  rows::"),
        "tidemark run --impl ... --profile rows",
        &through,
    )?;
    let explore = tidemark(&["explore", "--profile", "rows", "--seeds", "2", "--no-save"]);
    check(
        explore.0 == 0 && explore.1.ends_with("2 passed, 0 failed\n"),
        "tidemark explore --profile rows --seeds 2",
        &explore,
    )?;
    let fixture = root().join("fixtures/explore/rows/rows-newest-by-timestamp-seed-16.json");
    let replay = tidemark(&["replay", &fixture.to_string_lossy()]);
    check(
        replay.0 == 1
            && replay.1.contains("reproduces identically")
            && replay.1.contains("reference: passes the same operations"),
        "tidemark replay <rows fixture>",
        &replay,
    )?;
    let memory = tidemark(&[
        "explore",
        "--profile",
        "rows",
        "--tier",
        "memory",
        "--seeds",
        "20",
        "--no-save",
    ]);
    check(
        memory.0 == 0 && memory.1.ends_with("20 passed, 0 failed\n"),
        "tidemark explore --profile rows --tier memory --seeds 20",
        &memory,
    )?;
    let both = tidemark(&[
        "explore",
        "--profile",
        "rows",
        "--differential",
        "--seeds",
        "2",
    ]);
    check(
        both.0 == 0 && both.1.contains("2 of 2 give byte-identical traces"),
        "tidemark explore --profile rows --differential --seeds 2",
        &both,
    )?;
    let world = tidemark(&[
        "world",
        "--profile",
        "rows",
        "--seeds",
        "2",
        "--check-determinism",
    ]);
    check(
        world.0 == 0
            && world
                .1
                .contains("2/2 rows world seeds replay byte-identically")
            && world.1.ends_with("2 passed, 0 failed\n"),
        "tidemark world --profile rows --seeds 2 --check-determinism",
        &world,
    )?;
    Ok(())
}

/// The scenarios the reference fails in memory while taking `takes` and declaring `declares`
/// (a scenario about another choice than the declared one is skipped, not failed).
fn failures(
    rt: &tokio::runtime::Runtime,
    scripts: &[Script],
    takes: &Declared,
    declares: &Declared,
) -> Vec<String> {
    scripts
        .iter()
        .filter(|s| s.skip_reason(declares).is_none())
        .filter_map(|s| {
            rt.block_on(runner::run_on_declaring(
                runner::Tier::Memory,
                s,
                None,
                takes,
                declares,
                &mut Trace::new(),
                &mut Vec::new(),
            ))
            .err()
            .map(|f| failure_line(&s.file, &f, ""))
        })
        .collect()
}

/// `variant::rows::<name>_<choice>::…` for each non-default choice: declared, the reference
/// taking it passes every scenario in memory and on PostgreSQL; undeclared, some scenario fails
/// in memory.
fn variant_trials(
    rt: &std::sync::Arc<tokio::runtime::Runtime>,
    scripts: &[Script],
    get_pg: &(impl Fn() -> Result<std::sync::Arc<tidemark_sim::real_tier::PgProvider>, Failed>
          + Clone
          + Send
          + 'static),
) -> Vec<Trial> {
    let (rt1, all, get_pg) = (rt.clone(), scripts.to_vec(), get_pg.clone());
    super::shared::variant_trials(
        "rows",
        tidemark_conformance::profiles::rows::variants::each_alternative(),
        move |takes, declares| {
            let mut failed = failures(&rt1, &all, takes, declares);
            if takes != declares {
                return Ok(failed);
            }
            let pg = get_pg()?;
            for s in all.iter().filter(|s| s.skip_reason(takes).is_none()) {
                if let Err(f) = rt1.block_on(runner::run_on_taking(
                    runner::Tier::Postgres(&pg),
                    s,
                    None,
                    takes,
                    &mut Trace::new(),
                    &mut Vec::new(),
                )) {
                    failed.push(failure_line(&s.file, &f, " on PostgreSQL"));
                }
            }
            Ok(failed)
        },
    )
}
/// The SR rules no mutant breaks, and why none can be killed by a scenario.
const SR_WITHOUT_MUTANT: &[(&str, &str)] = &[
    (
        "SR-1.4",
        "it says what a harness may judge (behaviour through the transcript and declared queries, never table or function names); an implementation has nothing here to get wrong that a scenario could see",
    ),
    (
        "SR-7.1",
        "where each sweep function lives is the shape of the code, and the one `now` of a tick is the request's: an implementation has no other clock, so no outcome differs",
    ),
    (
        "SR-7.2",
        "the sweeps' order changes nothing that remains (its own Decided) and the report on the wire has no order; only a crash between two sweeps could show it, and no user is hurt by either order (a candidate variant, not a rule)",
    ),
    (
        "SR-8.1",
        "cost: the rows a sweep reads are no outcome; sim/tests/integration/real_tier_rows.rs EXPLAINs the statements the sweeps run on tables shaped for it and fails on a scan or a sort",
    ),
    (
        "SR-8.2",
        "cost: an index on a cascade's key changes how long a deletion takes, never what it removes",
    ),
];

pub fn trials(shared: &Shared) -> Result<Vec<Trial>, String> {
    let scripts = rows_scripts()?;
    let rt = shared.rt.clone();
    let get_pg = shared.postgres();

    let mut trials = variant_trials(&rt, &scripts, &get_pg);
    for s in scripts.clone() {
        let rt = rt.clone();
        let get_pg = get_pg.clone();
        trials.push(Trial::test(s.test_name(), move || {
            let pg = get_pg()?;
            rt.block_on(runner::run(&pg, &s, None, &mut Trace::new()))
                .map_err(|f| {
                    Failed::from(format!(
                        "{}:{}: {}\n  expected: {}\n  actual:   {}",
                        s.file.display(),
                        f.line,
                        f.step,
                        f.expected,
                        f.actual
                    ))
                })
        }));
    }
    // The model: every step's outcome on the reference is the one the model predicts, exactly
    // (every sweep's count, every refusal's reason), not only what the scenario states.
    for s in scripts.clone() {
        let rt = rt.clone();
        let get_pg = get_pg.clone();
        let name = s.test_name().replacen("rows::", "model::rows::", 1);
        trials.push(Trial::test(name, move || {
            let pg = get_pg()?;
            let mut outcomes = Vec::new();
            rt.block_on(runner::run_recorded(
                &pg,
                &s,
                None,
                &mut Trace::new(),
                &mut outcomes,
            ))
            .map_err(|f| Failed::from(format!("line {}: {}", f.line, f.actual)))?;
            let mut model = Model::default();
            let mut now = 0i64;
            let mut recorded = outcomes.iter();
            // The steps the reference played: those the default of every variant keeps.
            let played = s.as_played_by(&Declared::defaults());
            for step in &played.steps {
                if let Action::Advance(ms) = step.action {
                    now += ms;
                    continue;
                }
                let predicted = model.apply(&step.action, now);
                let Some((line, actual)) = recorded.next() else {
                    return Err(Failed::from("fewer outcomes recorded than steps"));
                };
                if *line != step.line || !runner::same(&predicted, actual) {
                    return Err(Failed::from(format!(
                        "{}:{}: {}\n  the model: {}\n  the reference: {}",
                        s.file.display(),
                        step.line,
                        step.text,
                        predicted.text(),
                        actual.text()
                    )));
                }
            }
            Ok(())
        }));
    }
    for m in RowsMutant::ALL {
        let killers: Vec<Script> = runner::killers(&scripts, m).into_iter().cloned().collect();
        let rt = rt.clone();
        let get_pg = get_pg.clone();
        trials.push(Trial::test(
            format!("mutant::rows::{}", m.id().replace('-', "_")),
            move || {
                if killers.is_empty() {
                    return mutant_verdict(m.id(), m.description(), false, &[]);
                }
                // Every claim must hold: each scenario naming the mutant fails under it.
                let pg = get_pg()?;
                let mut survived = Vec::new();
                for s in &killers {
                    match rt.block_on(runner::run(&pg, s, Some(m), &mut Trace::new())) {
                        Err(f) if std::env::var_os("TIDEMARK_SHOW_KILLS").is_some() => {
                            eprintln!(
                                "{} killed by {} line {}: {}\n  expected: {}\n  actual:   {}",
                                m.id(),
                                s.test_name(),
                                f.line,
                                f.step,
                                f.expected,
                                f.actual
                            );
                        }
                        Err(_) => {}
                        Ok(()) => survived.push(s.test_name()),
                    }
                }
                mutant_verdict(m.id(), m.description(), true, &survived)
            },
        ));
    }
    trials.push(every_rule_cited(
        "SR",
        scripts
            .iter()
            .map(|s| (s.file.clone(), s.rules.clone()))
            .collect(),
        &[],
    ));
    trials.push(every_rule_bites(
        "SR",
        scripts
            .iter()
            .map(|s| Claims {
                file: s.file.clone(),
                rules: s.rules.clone(),
                kills: s.kills.clone(),
            })
            .collect(),
        RowsMutant::ALL
            .iter()
            .map(|m| (m.id(), m.rules()))
            .collect(),
        SR_WITHOUT_MUTANT,
    ));
    trials.push(Trial::test(
        "cli::run_explore_replay_and_the_world_take_the_rows_profile_on_both_tiers",
        cli,
    ));
    Ok(trials)
}

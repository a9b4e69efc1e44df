//! `cargo test` runs each scenario as its own named test (`scratchpad::<file stem>`), and each
//! mutant as a test that passes only when some scenario kills it (`mutant::<profile>::<id>`).

use libtest_mimic::{Arguments, Failed, Trial};
use tidemark_conformance::mutants::run_scratchpad_mutants;
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::runner::run_scenario;
use tidemark_conformance::{default_scenarios_dir, default_spec_path, suite};
use tidemark_reference::scratchpad::ScratchpadMutant;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f)
}

fn main() {
    let args = Arguments::from_args();
    let scenarios = match suite::load(&default_scenarios_dir(), &default_spec_path()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("the scenario suite does not load: {e}");
            std::process::exit(101);
        }
    };
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
        let scenarios = scenarios.clone();
        trials.push(Trial::test(format!("mutant::scratchpad::{}", m.id().replace('-', "_")), move || {
            let refs: Vec<_> = scenarios.iter().collect();
            let r = block_on(run_scratchpad_mutants(&refs, Some(m.id()), true));
            if r.iter().all(|r| r.killed()) {
                Ok(())
            } else {
                Err(Failed::from(format!("mutant {} ({}) survives every scenario", m.id(), m.description())))
            }
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}

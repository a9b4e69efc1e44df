//! `tidemark run`: the gate. Every scenario the profiles select, in one report, against the
//! reference in process or a program through the protocol; the command that replays a failure;
//! the report printed and written in the chosen formats. Apart from `main.rs` because it is the
//! one command with its own report to build; the arguments it reads stay with the others.

use crate::{selected_profiles, Format, GateArgs, SuiteArgs};
use std::path::PathBuf;
use tidemark_conformance::profiles::{self, Profile};
use tidemark_conformance::{
    default_scenarios_dir, default_spec_path, expectations, process, report,
};

/// `tidemark run`: every scenario the profiles select, in one report, against the reference
/// in process or (`--impl`) a program through the protocol.
pub(crate) async fn run_gate(args: &SuiteArgs, gate_args: &GateArgs) -> Result<bool, String> {
    // A malformed expectations file is a load error before anything runs.
    let expect = gate_args
        .expect
        .as_deref()
        .map(expectations::Expectations::load)
        .transpose()?;
    let selected = selected_profiles(&args.profile)?;
    for p in &selected {
        profiles::check_tier(*p, args.tier.as_deref())?;
    }
    if gate_args.implementation.is_some() && !gate_args.variants.is_empty() {
        return Err(
            "--variant sets the reference's variants; a program declares its own in init_ok".into(),
        );
    }
    let variants = tidemark_conformance::variants::from_options(&gate_args.variants)?;
    // Every file that does not load, of every selected profile, before anything runs.
    profiles::load_errors(&selected, &args.scenarios, &args.spec).map_err(|e| e.to_string())?;
    // `--only` names are `<profile>::<file stem>`: each goes to its profile.
    let mut only: Vec<(&'static dyn Profile, Vec<String>)> =
        selected.iter().map(|p| (*p, Vec::new())).collect();
    for name in &gate_args.only {
        let owner = name.split_once("::").map(|(p, _)| p).unwrap_or("");
        match only.iter_mut().find(|(p, _)| p.name() == owner) {
            Some((_, names)) => names.push(name.clone()),
            None if profiles::named(owner).is_ok() => {
                return Err(format!(
                    "--only {name} names a {owner} scenario, but --profile leaves that profile out"
                ))
            }
            None => {
                return Err(format!(
                    "--only {name} names no scenario: a test name is <profile>::<file stem>, the profile one of {}",
                    profiles::names().join(", ")
                ))
            }
        }
    }
    // With `--only`, a profile none of whose scenarios is named plays nothing.
    if !gate_args.only.is_empty() {
        only.retain(|(_, names)| !names.is_empty());
    }

    let factory = match &gate_args.implementation {
        None => None,
        Some(command) => {
            let command = process::AdapterCommand::parse(command, &process::launch_dir())
                .map_err(|e| e.to_string())?;
            let options = process::ProcessOptions {
                reply_timeout: std::time::Duration::from_millis(gate_args.timeout_ms),
                claims_check: profiles::check_claims,
            };
            match process::ProcessFactory::probe(command.clone(), options).await {
                Ok(factory) => Some(factory),
                Err(e) => {
                    let message =
                        format!("the implementation did not complete the init exchange: {e}");
                    if let Some(path) = &gate_args.junit {
                        let xml = report::render_junit_setup_error(command.text(), &message);
                        std::fs::write(path, xml)
                            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    }
                    return Err(message);
                }
            }
        }
    };
    let replay = replay_prefix(args, gate_args, gate_args.implementation.as_deref())?;
    let mut report = report::RunReport {
        implementation: factory
            .as_ref()
            .map(process::ProcessFactory::name)
            .unwrap_or_else(|| "reference".into()),
        replay_prefix: replay.clone(),
        profile_commands: Default::default(),
        cases: Vec::new(),
        expectations: None,
    };
    for (profile, names) in &only {
        let request = profiles::RunRequest {
            scenarios: &args.scenarios,
            spec: &args.spec,
            only: names,
            jobs: gate_args.jobs,
            replay_prefix: &replay,
            tier: args.tier.as_deref(),
            variants: &variants,
        };
        report
            .cases
            .extend(profile.run(&request, factory.as_ref()).await?);
    }
    let played: Vec<&str> = only.iter().map(|(p, _)| p.name()).collect();
    let selection = expectations::judge::Selection {
        profiles: &played,
        only: &gate_args.only,
    };
    if let Some(expect) = &expect {
        report.expectations = Some(expectations::judge::judge(&report, expect, &selection));
    }
    if let Some(path) = &gate_args.write_expectations {
        let text = expectations::write::render(&report, expect.as_ref(), &selection);
        std::fs::write(path, &text)
            .map_err(|e| format!("cannot write the expectations file {}: {e}", path.display()))?;
        let written = expectations::Expectations::parse(&path.display().to_string(), &text)?;
        let untriaged = written
            .failures
            .iter()
            .filter(|f| expectations::is_untriaged(&f.reason))
            .count();
        eprintln!(
            "tidemark: wrote {} entr{} to {} ({untriaged} UNTRIAGED: say why each is accepted, or fix it); gate on them with --expect {}",
            written.failures.len(),
            if written.failures.len() == 1 { "y" } else { "ies" },
            path.display(),
            path.display()
        );
    }
    let coverage = if gate_args.coverage {
        let played: Vec<&dyn Profile> = only.iter().map(|(p, _)| *p).collect();
        Some(tidemark_conformance::coverage::of_run(
            &report, &played, &args.spec,
        )?)
    } else {
        None
    };
    emit(&report, gate_args, coverage, &args.spec)
}

/// The command that reruns this run's suite, to which a failure's `--only <test name>` is added:
/// the same scenarios, SPEC.md, program and reply bound, wherever it is run from (paths are made
/// absolute). Options that do not change a scenario's outcome (`--jobs`, `--format`, `--junit`)
/// are left out, and so is `--profile`, which `--only` makes redundant.
fn replay_prefix(
    args: &SuiteArgs,
    gate_args: &GateArgs,
    implementation: Option<&str>,
) -> Result<String, String> {
    let quote = |s: &str| {
        shlex::try_quote(s)
            .map(|q| q.into_owned())
            .map_err(|e| e.to_string())
    };
    let absolute = |p: &std::path::Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| process::launch_dir().join(p))
            .to_string_lossy()
            .into_owned()
    };
    let mut replay = String::from("tidemark run");
    if let Some(command) = implementation {
        replay.push_str(&format!(" --impl {}", quote(command)?));
    }
    let same = |given: &std::path::Path, default: PathBuf| {
        std::fs::canonicalize(given).ok() == std::fs::canonicalize(default).ok()
    };
    if !same(&args.scenarios, default_scenarios_dir()) {
        replay.push_str(&format!(
            " --scenarios {}",
            quote(&absolute(&args.scenarios))?
        ));
    }
    if !same(&args.spec, default_spec_path()) {
        replay.push_str(&format!(" --spec {}", quote(&absolute(&args.spec))?));
    }
    // The tier changes where the reference runs, so a replay keeps it; so do its variants.
    if let Some(tier) = &args.tier {
        replay.push_str(&format!(" --tier {tier}"));
    }
    for v in &gate_args.variants {
        replay.push_str(&format!(" --variant {}", quote(v)?));
    }
    // The replay waits as long as this run did, or a slow scenario would time out differently.
    if gate_args.timeout_ms != process::DEFAULT_REPLY_TIMEOUT_MS {
        replay.push_str(&format!(" --timeout-ms {}", gate_args.timeout_ms));
    }
    Ok(replay)
}

/// Prints the report in the chosen format (and the coverage, when asked), writes the JUnit and
/// HTML files if asked; true if it passed.
fn emit(
    report: &report::RunReport,
    gate_args: &GateArgs,
    coverage: Option<tidemark_conformance::coverage::Coverage>,
    spec: &std::path::Path,
) -> Result<bool, String> {
    let coverage_text = coverage.as_ref().map(|c| c.render_text());
    match gate_args.format {
        Format::Table => {
            print!("{}", coverage_text.unwrap_or_default());
            print!("{}", report::render_table(report));
        }
        Format::Json => {
            eprint!("{}", coverage_text.unwrap_or_default());
            print!("{}", report::render_json(report));
        }
    }
    if let Some(path) = &gate_args.junit {
        std::fs::write(path, report::render_junit(report))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(path) = &gate_args.html {
        let mut page = tidemark_conformance::html::run::page(report);
        page.coverage = coverage;
        tidemark_conformance::html::write(
            path,
            &page,
            &tidemark_conformance::html::rule_texts(spec),
        )?;
    }
    Ok(report.passed())
}

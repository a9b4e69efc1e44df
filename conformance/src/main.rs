//! `tidemark`: run the conformance suite, hunt mutants.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::scenario::Profile;
use tidemark_conformance::{default_scenarios_dir, default_spec_path, mutants, report, suite};

#[derive(Parser)]
#[command(name = "tidemark", version, about = "Deterministic simulation and conformance harness for agent file storage with retention")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct SuiteArgs {
    /// Run only this profile's scenarios (scratchpad). Default: every profile.
    #[arg(long)]
    profile: Option<String>,
    /// The scenario directory.
    #[arg(long, default_value_os_t = default_scenarios_dir())]
    scenarios: PathBuf,
    /// SPEC.md, whose rule ids scenarios cite.
    #[arg(long, default_value_os_t = default_spec_path())]
    spec: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Run the scenarios against the reference implementation; prints a table and `N passed, M failed`.
    Run {
        #[command(flatten)]
        suite: SuiteArgs,
    },
    /// Run every mutant of the reference implementation; each must be killed by some scenario.
    Mutants {
        #[command(flatten)]
        suite: SuiteArgs,
        /// Only this mutant id.
        #[arg(long)]
        only: Option<String>,
        /// Run every scenario against each mutant and list all that kill it.
        #[arg(long)]
        all_killers: bool,
    },
}

fn profiles(arg: &Option<String>) -> Result<Vec<Profile>, String> {
    match arg.as_deref() {
        None | Some("all") => Ok(vec![]),
        Some(p) => Profile::from_name(p).map(|p| vec![p]).ok_or_else(|| format!("unknown profile {p:?}; expected scratchpad or all")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    match rt.block_on(run(cli)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("tidemark: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> Result<bool, String> {
    match cli.command {
        Command::Run { suite: args } => {
            let profiles = profiles(&args.profile)?;
            let all = suite::load(&args.scenarios, &args.spec).map_err(|e| e.to_string())?;
            let selected = suite::select(&all, &profiles);
            let results = suite::run_all(&selected, &ReferenceScratchpad::default()).await;
            print!("{}", report::table(&results));
            Ok(results.iter().all(|r| r.passed()))
        }
        Command::Mutants { suite: args, only, all_killers } => {
            let profiles = profiles(&args.profile)?;
            let all = suite::load(&args.scenarios, &args.spec).map_err(|e| e.to_string())?;
            let selected = suite::select(&all, &profiles);
            let results = mutants::run_scratchpad_mutants(&selected, only.as_deref(), !all_killers).await;
            if results.is_empty() {
                return Err(format!("no mutant matches {:?}", only.unwrap_or_default()));
            }
            print!("{}", mutants::table(&results));
            Ok(results.iter().all(|r| r.killed()))
        }
    }
}

//! `tidemark`: run the conformance suite, hunt mutants. This file holds the arguments of every
//! subcommand, profile selection, the dispatch and exit codes; `run_gate.rs` is `tidemark run`
//! and `merge.rs` is `tidemark merge`.

mod merge;
mod run_gate;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tidemark_conformance::profiles::{self, Profile};
use tidemark_conformance::{default_scenarios_dir, default_spec_path, expectations, interrupt};

#[derive(Parser)]
#[command(
    name = "tidemark",
    version,
    about = "Deterministic simulation and conformance harness for agent file storage with retention"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct SuiteArgs {
    /// Run only this profile's scenarios (scratchpad, scoped or rows). Default: every profile.
    #[arg(long)]
    profile: Option<String>,
    /// The scenario directory.
    #[arg(long, default_value_os_t = default_scenarios_dir())]
    scenarios: PathBuf,
    /// SPEC.md, whose rule ids scenarios cite.
    #[arg(long, default_value_os_t = default_spec_path())]
    spec: PathBuf,
    /// Rows only: where the reference keeps its rows, `postgres` (the default: a real
    /// PostgreSQL) or `memory` (in memory, with the database's semantics).
    #[arg(long, value_parser = ["postgres", "memory"])]
    tier: Option<String>,
}

/// What `run` checks and how it reports.
#[derive(clap::Args, Clone)]
struct GateArgs {
    /// Run the suite against this program (PROTOCOL.md) instead of the in-process reference,
    /// e.g. --impl 'python3 examples/python-scratchpad/scratchpad.py'. Every profile it claims
    /// runs; for the scoped profile the harness provides an S3 server and a database.
    #[arg(long = "impl", value_name = "COMMAND")]
    implementation: Option<String>,
    /// How long to wait for each answer from an --impl program before failing the scenario.
    /// At most a day (86400000): a bound that never ends is no bound.
    #[arg(long, default_value_t = tidemark_conformance::process::DEFAULT_REPLY_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    timeout_ms: u64,
    /// Only the scenario with this test name (repeatable), e.g. --only scratchpad::own_path_wins.
    #[arg(long, value_name = "TEST_NAME")]
    only: Vec<String>,
    /// What stdout carries: the human table, or one JSON document.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also write a JUnit XML report here, for CI.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Also write one self-contained HTML report here: the summary, each failure's timeline
    /// and divergence with its SPEC rules, the replay commands.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Print each SPEC rule of the profiles run with the scenarios citing it, the rules none
    /// cites, and the rules left unjudged by skipped scenarios (on stderr with --format json);
    /// the HTML report shows the table too.
    #[arg(long)]
    coverage: bool,
    /// Scenarios in flight at once (each has its own directories and process); the report's
    /// order does not change. Defaults to the number of cores.
    #[arg(long, default_value_t = default_jobs())]
    jobs: std::num::NonZeroUsize,
    /// The in-process reference takes this SPEC.md variant's other choice, and the scenarios
    /// follow it (repeatable), e.g. --variant read_through_a_file=not_a_directory. A program
    /// declares its own in init_ok instead.
    #[arg(long = "variant", value_name = "NAME=CHOICE")]
    variants: Vec<String>,
    /// An expectations file (TOML): the failures this implementation is known to have, each
    /// with its step, outcome and reason. The run passes when the results match it; a new
    /// failure, or a listed one that passes now or fails differently, fails it.
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// Write this run's failures to FILE as an expectations file, a starting point for
    /// --expect (reasons UNTRIAGED; with --expect, an entry listing the same failure keeps its
    /// reason).
    #[arg(long, value_name = "FILE")]
    write_expectations: Option<PathBuf>,
}

/// The cores this process may use: scenarios share nothing, so that many run side by side.
fn default_jobs() -> std::num::NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN)
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
enum Format {
    Table,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the scenarios against the reference implementation, or any program speaking the
    /// protocol (--impl); prints a table and `N passed, M failed`.
    Run {
        #[command(flatten)]
        suite: SuiteArgs,
        #[command(flatten)]
        gate: GateArgs,
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
    /// Random operation sequences from seeds, beside the oracle; failures shrink and are saved.
    Explore {
        /// How many seeds (before sharding).
        #[arg(long, default_value_t = 100)]
        seeds: u64,
        #[arg(long, default_value_t = 0)]
        first_seed: u64,
        /// The profile explored: scratchpad (the oracle, in process), scoped (the real tier
        /// against the model of SPEC part SC) or rows (the reference on PostgreSQL against the
        /// model of SPEC part SR, with the reaper's faults). All shrink failures and save them.
        #[arg(long, default_value = "scratchpad")]
        profile: String,
        /// Run only seeds with `seed % M == K`, so M machines split one run.
        #[arg(long, default_value = "0/1")]
        shard: tidemark_conformance::explore::Shard,
        /// Explore against this mutant instead of the reference.
        #[arg(long)]
        mutant: Option<String>,
        /// Run each seed twice and compare trace hashes.
        #[arg(long)]
        check_determinism: bool,
        /// For each mutant (or --mutant), count the seeds random search needs to find it.
        #[arg(long)]
        hunt: bool,
        /// Independent searches per mutant when hunting [default: 5 for the scratchpad, 1 where
        /// each seed needs a database of its own].
        #[arg(long)]
        hunt_trials: Option<u64>,
        /// Where failures are saved [default: fixtures/explore/<profile>].
        #[arg(long)]
        save_dir: Option<PathBuf>,
        /// Do not save failures.
        #[arg(long)]
        no_save: bool,
        /// Scoped: where the metadata lives, `postgres` (the real tier) or `memory` (the
        /// in-memory store with PostgreSQL's semantics: the simulation tier). Rows: the
        /// reference on `postgres` (every row checked after each reap) or its `memory` backend
        /// (row counts, listings and transcripts checked).
        #[arg(long, value_parser = ["postgres", "memory"])]
        tier: Option<String>,
        /// Scoped and rows: run each seed on both tiers and compare trace hashes.
        #[arg(long)]
        differential: bool,
        #[arg(long, default_value_t = 4096)]
        max_shrink_iters: u32,
        /// Scoped and rows: seeds in flight at once (each has its own database, and for scoped its
        /// own S3 server; the report's order and every trace stay the same); mutants in flight
        /// when a rows run hunts. Defaults to the number of cores.
        #[arg(long, default_value_t = default_jobs())]
        jobs: std::num::NonZeroUsize,
        /// Explore a program speaking conformance/PROTOCOL.md instead of the reference.
        #[arg(long = "impl", value_name = "COMMAND")]
        implementation: Option<String>,
        /// The reference takes this SPEC.md variant's other choice, and the model follows it
        /// (repeatable). A program declares its own in init_ok instead.
        #[arg(long = "variant", value_name = "NAME=CHOICE")]
        variants: Vec<String>,
        /// An expectations file: its [[difference]] entries are differences this exploration
        /// accepts, by the signature it prints. They do not fail the run, and the scratchpad
        /// explores on past them.
        #[arg(long, value_name = "FILE")]
        expect: Option<PathBuf>,
        /// Also write one self-contained HTML report here: the summary and each distinct
        /// difference's shrunk seed as a timeline, its divergence and SPEC rule.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Also write the exploration's report as JSON here; `tidemark merge` folds the
        /// reports of the shards of one run (`--shard K/M`) into one.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Print each SPEC rule of the profile with the scenarios citing it and how often this
        /// exploration reached it, the rules nothing reached and the generator gaps.
        #[arg(long)]
        coverage: bool,
    },
    /// Seeds through the turmoil world: the scratchpad as a networked host with its sweeper on a
    /// timer, three concurrent clients, partitions, crashes, restarts and clock jumps.
    World {
        /// `scratchpad` (the default), `scoped` (the reference over the in-memory metadata
        /// store and the in-memory S3 behind turmoil's network) or `rows` (the rows reference
        /// in memory as a server, writers and a reaper on the world clock).
        #[arg(long, default_value = "scratchpad")]
        profile: String,
        #[arg(long, default_value_t = 20)]
        seeds: u64,
        #[arg(long, default_value_t = 0)]
        first_seed: u64,
        #[arg(long)]
        mutant: Option<String>,
        #[arg(long)]
        check_determinism: bool,
        /// Hunt every mutant through the world.
        #[arg(long)]
        hunt: bool,
        /// The world's reference takes this SPEC.md variant's other choice, and its oracle
        /// follows it (repeatable).
        #[arg(long = "variant", value_name = "NAME=CHOICE")]
        variants: Vec<String>,
        /// Also write one self-contained HTML report here: each failing seed's whole history
        /// as a timeline, one lane per guest, the sweeper or reaper and the harness's faults.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Print the measured figures: scratchpad write cost by session size, exploration speed,
    /// the scoped suite and tiers, and the rows reap at scale.
    Bench {
        /// Only this profile's figures (`scratchpad`, `scoped`, `rows`), or `report` for the
        /// HTML report's size and writing time; every profile's and the report's when not
        /// given.
        #[arg(long)]
        profile: Option<String>,
        /// Seeds for the exploration throughput figure.
        #[arg(long, default_value_t = 500)]
        seeds: u64,
        /// Seeds for the scoped profile's figures (the same seeds on both tiers).
        #[arg(long, default_value_t = 200)]
        scoped_seeds: u64,
        /// Streamed events for the rows reap figure (half of them expired); 0 skips it.
        #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(i64).range(0..))]
        rows: i64,
        /// Scoped seeds in flight at once, on both tiers. Defaults to the number of cores.
        #[arg(long, default_value_t = default_jobs())]
        jobs: std::num::NonZeroUsize,
    },
    /// Fold the JSON reports of the shards of one exploration (`tidemark explore --shard K/M
    /// --json FILE`) into one verdict: printed, and as JSON, JUnit and HTML if asked. Refuses
    /// shards of different runs (profile, setting, implementation, harness version, seed
    /// range), a shard missing or given twice, and a file that is not a whole report.
    ///
    /// Given `tidemark run --format json` reports instead, folds runs of different profiles
    /// against one implementation into one run report; refuses another harness version,
    /// implementation or replay command, a profile run twice, and a report judged with --expect.
    ///
    /// Exit status: 0 no seed (or scenario) failed; 1 some did; 2 a refusal or a file that does
    /// not load.
    Merge {
        /// Each shard's report (or each run's), in any order.
        #[arg(required = true, value_name = "SHARD_JSON")]
        shards: Vec<PathBuf>,
        /// Write the merged report as JSON here.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Write the merged verdict as JUnit XML here.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Write the merged HTML report here.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Print the SPEC coverage of the whole exploration (and show it in the HTML report).
        #[arg(long)]
        coverage: bool,
    },
    /// Replay a saved failure (a fixture file) or a seed.
    ///
    /// Exit status: 0 the saved failure no longer happens (the run passes); 1 it reproduces with
    /// an identical trace; 3 it still fails, but its trace differs from the saved one; 2 a usage
    /// or load error. With --seed: 0 no divergence, 1 the seed diverges.
    Replay {
        /// A fixture saved by `tidemark explore`.
        fixture: Option<PathBuf>,
        #[arg(long)]
        seed: Option<u64>,
        #[arg(long)]
        mutant: Option<String>,
        /// Also write one self-contained HTML report of the replay here: the saved failure's
        /// operations, its timeline, its divergence and SPEC rule.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
}

/// The profiles a `--profile` selects: all of them (none given, or `all`), or the one named.
fn selected_profiles(arg: &Option<String>) -> Result<Vec<&'static dyn Profile>, String> {
    match arg.as_deref() {
        None | Some("all") => Ok(profiles::PROFILES.to_vec()),
        Some(name) => profiles::named(name).map(|p| vec![p]),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Reap what killed runs left, and clean up on SIGINT/SIGTERM (interrupt.rs).
    interrupt::start();
    // Exploration, replay and worlds drive their own runtimes, so they start outside this one.
    let direct = match &cli.command {
        Command::Explore {
            seeds,
            first_seed,
            profile,
            shard,
            mutant,
            check_determinism,
            hunt,
            hunt_trials,
            save_dir,
            no_save,
            max_shrink_iters,
            implementation,
            tier,
            differential,
            jobs,
            variants,
            expect,
            html,
            json,
            coverage,
        } => Some(
            // Each profile's default is at most 5 trials.
            tidemark_conformance::explore::check_seeds(
                *first_seed,
                *seeds,
                if *hunt { hunt_trials.unwrap_or(5) } else { 1 },
            )
            .and_then(|()| profiles::named(profile))
            .and_then(|p| {
                if implementation.is_some() && !variants.is_empty() {
                    return Err("--variant sets the reference's variants; a program declares its own in init_ok".into());
                }
                let expect = expect
                    .as_deref()
                    .map(expectations::Expectations::load)
                    .transpose()?;
                p.explore(&profiles::ExploreRequest {
                    variants: tidemark_conformance::variants::from_options(variants)?,
                    seeds: *seeds,
                    first_seed: *first_seed,
                    shard: *shard,
                    mutant: mutant.clone(),
                    check_determinism: *check_determinism,
                    hunt: *hunt,
                    hunt_trials: *hunt_trials,
                    save: match (no_save, save_dir) {
                        (true, _) => profiles::SaveTo::Nowhere,
                        (false, Some(d)) => profiles::SaveTo::Dir(d.clone()),
                        (false, None) => profiles::SaveTo::Default,
                    },
                    max_shrink_iters: *max_shrink_iters,
                    implementation: implementation.clone(),
                    tier: tier.clone(),
                    differential: *differential,
                    jobs: *jobs,
                    expect,
                    outputs: tidemark_conformance::explore::Outputs {
                        html: html.clone(),
                        json: json.clone(),
                        coverage: *coverage,
                    },
                })
            }),
        ),
        Command::Replay {
            fixture,
            seed,
            mutant,
            html,
        } => {
            // A saved failure names its profile's format; the first profile's replay also
            // takes a bare `--seed` and reports a file nobody recognises.
            let owner = fixture
                .as_deref()
                .and_then(|f| profiles::PROFILES.iter().find(|p| p.owns_fixture(f)))
                .unwrap_or(&profiles::PROFILES[0]);
            let outcome = owner.replay(
                fixture.as_deref(),
                *seed,
                mutant.as_deref(),
                html.as_deref(),
            );
            // Its exit codes are its own, but it cleans up as every command does.
            interrupt::finish();
            return match outcome {
                Ok(o) => ExitCode::from(o.exit_code()),
                Err(e) => exit(Err(e)),
            };
        }
        Command::World {
            profile,
            seeds,
            first_seed,
            mutant,
            check_determinism,
            hunt,
            variants,
            html,
        } => Some(
            tidemark_conformance::explore::check_seeds(*first_seed, *seeds, 1)
                .and_then(|()| profiles::named(profile))
                .and_then(|p| {
                    p.world(&profiles::WorldRequest {
                        variants: tidemark_conformance::variants::from_options(variants)?,
                        seeds: *seeds,
                        first_seed: *first_seed,
                        mutant: mutant.clone(),
                        check_determinism: *check_determinism,
                        hunt: *hunt,
                        html: html.clone(),
                    })
                }),
        ),
        Command::Merge {
            shards,
            json,
            junit,
            html,
            coverage,
        } => Some(merge::merge_command(
            shards,
            json.as_deref(),
            junit.as_deref(),
            html.as_deref(),
            *coverage,
        )),
        Command::Bench {
            profile,
            seeds,
            scoped_seeds,
            rows,
            jobs,
        } => {
            let request = profiles::BenchRequest {
                seeds: *seeds,
                scoped_seeds: *scoped_seeds,
                rows: *rows,
                jobs: *jobs,
            };
            // `--profile report`: the HTML report's figures alone; they close every full bench.
            if profile.as_deref() == Some("report") {
                print!("{}", tidemark_conformance::html::bench::run());
                interrupt::finish();
                return exit(Ok(true));
            }
            // Each profile's figures as soon as they are measured; the first error ends the run.
            Some(selected_profiles(profile).and_then(|selected| {
                selected
                    .iter()
                    .try_for_each(|p| {
                        print!("{}", p.bench(&request)?);
                        Ok(())
                    })
                    .map(|()| {
                        if profile.is_none() {
                            print!("{}", tidemark_conformance::html::bench::run());
                        }
                        true
                    })
            }))
        }
        _ => None,
    };
    if let Some(result) = direct {
        interrupt::finish();
        return exit(result);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match rt.block_on(interrupt::cancellable(run(cli))) {
        Some(result) => {
            drop(rt);
            interrupt::finish();
            exit(result)
        }
        // Cancelled by a signal: the signal thread finishes the cleanup and exits the process.
        None => loop {
            std::thread::park();
        },
    }
}

fn exit(result: Result<bool, String>) -> ExitCode {
    match result {
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
        Command::Run {
            suite: args,
            gate: gate_args,
        } => run_gate::run_gate(&args, &gate_args).await,
        Command::Mutants {
            suite: args,
            only,
            all_killers,
        } => {
            let mut rows = String::new();
            let (mut killed, mut survived) = (0, 0);
            let selected = selected_profiles(&args.profile)?;
            for p in &selected {
                profiles::check_tier(*p, args.tier.as_deref())?;
            }
            profiles::load_errors(&selected, &args.scenarios, &args.spec)
                .map_err(|e| e.to_string())?;
            for p in selected {
                let found = p
                    .mutants(&profiles::MutantsRequest {
                        scenarios: &args.scenarios,
                        spec: &args.spec,
                        only: only.as_deref(),
                        all_killers,
                        tier: args.tier.as_deref(),
                    })
                    .await?;
                rows.push_str(&found.rows);
                killed += found.killed;
                survived += found.survived;
            }
            if killed + survived == 0 {
                return Err(format!("no mutant matches {:?}", only.unwrap_or_default()));
            }
            print!("{rows}");
            println!("{killed} passed, {survived} failed");
            Ok(survived == 0)
        }
        Command::Explore { .. }
        | Command::Merge { .. }
        | Command::Replay { .. }
        | Command::Bench { .. }
        | Command::World { .. } => {
            unreachable!("handled before the runtime starts")
        }
    }
}

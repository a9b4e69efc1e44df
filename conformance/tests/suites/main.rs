//! The suites as data, each scenario, mutant and saved failure its own named test (libtest-mimic,
//! so `cargo test --test suites cascade` filters by name), in one binary sharing one runtime and
//! one PostgreSQL:
//!
//! - `scenarios`: the scratchpad's scenarios, mutants and saved failures;
//! - `real_tier_scenarios`, `sim_tier_scenarios`, `scoped_fixtures`: the scoped profile's, on
//!   the real tier, on the simulation tier against the real one, and its saved failures;
//! - `rows_scenarios`, `rows_tiers`, `rows_fixtures`: the rows profile's, its two tiers side
//!   by side, and its saved failures.
//!
//! A suite that does not load (a malformed scenario or fixture) stops the binary with status
//! 101, naming the file.
//!
//! Three families are the slow tier ([`SLOW_TIER`]), ignored unless `--include-ignored` (CI
//! passes it): every rows scenario again on both tiers side by side, every variant's choice over
//! the whole suite, and the command-line round trip over the rows profile. Together they are
//! about half the binary's time; the quick tier keeps every scenario, mutant, saved failure and
//! the scoped tiers' differential check.

use libtest_mimic::Arguments;

mod real_tier_scenarios;
mod rows_fixtures;
mod rows_scenarios;
mod rows_tiers;
mod scenarios;
mod scoped_fixtures;
mod shared;
mod sim_tier_scenarios;

/// The name prefixes of the slow tier's trials.
const SLOW_TIER: [&str; 3] = ["tiers::", "variant::", "cli::"];

fn main() {
    let args = Arguments::from_args();
    let shared = shared::Shared::new();
    let suites = [
        scenarios::trials(&shared),
        real_tier_scenarios::trials(&shared),
        sim_tier_scenarios::trials(&shared),
        scoped_fixtures::trials(&shared),
        rows_scenarios::trials(&shared),
        rows_tiers::trials(&shared),
        rows_fixtures::trials(&shared),
    ];
    let mut trials = Vec::new();
    for suite in suites {
        match suite {
            Ok(t) => trials.extend(t.into_iter().map(|t| {
                let slow = SLOW_TIER.iter().any(|p| t.name().starts_with(p));
                let ignored = t.has_ignored_flag() || slow;
                t.with_ignored_flag(ignored)
            })),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(101);
            }
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    // Stop the PostgreSQL cluster before exiting (exit skips destructors).
    drop(shared);
    conclusion.exit();
}

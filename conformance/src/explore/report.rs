//! An exploration's report as data: what `tidemark explore --json FILE` writes, what `tidemark
//! merge` folds (one per shard), and what the HTML page of an exploration is drawn from. Each
//! distinct difference keeps its seeds and its shrunk failure as the page shows it; the run
//! keeps what it was (profile, setting, who ran, seeds, shard, harness version) so shards of
//! different runs are refused at a merge.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::html::{FailureView, Page, ProfileSummary};

/// The `format` field of every exploration report.
pub const FORMAT: &str = "tidemark-explore-report/1";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExploreReport {
    pub format: String,
    pub harness_version: String,
    pub profile: String,
    /// Where the runs happened (`Explorer::setting`).
    pub setting: String,
    /// Who ran: `the reference`, `the mutant x`, a program's command.
    pub against: String,
    /// The command that runs the whole exploration again (every shard).
    pub command: String,
    pub first_seed: u64,
    pub seeds: u64,
    /// `K/M`; a merged report says `all of M`.
    pub shard: String,
    pub passed: usize,
    /// Seeds that failed (known differences aside).
    pub failed: usize,
    pub differences: Vec<DifferenceReport>,
    /// Seeds that could not be set up (no verdict).
    pub setup: Vec<FailureView>,
    /// The summary's other lines: known differences gone past, seeds ended at one.
    pub notes: Vec<String>,
    /// How often exploration reached each SPEC rule (see `crate::coverage` for what counts).
    pub rules_reached: BTreeMap<String, u64>,
    /// What `rules_reached` counts, in words (`Explorer::rules_counting`).
    pub rules_counting: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DifferenceReport {
    /// As `tidemark explore` prints it, and an expectations file lists it.
    pub signature: String,
    pub rule: String,
    pub seeds: Vec<u64>,
    /// The first seed of the group, shrunk.
    pub shrunk: FailureView,
}

impl ExploreReport {
    /// `first..first+n, shard K/M`.
    pub fn seed_range(&self) -> String {
        format!(
            "{}..{} ({} seeds), shard {}",
            self.first_seed,
            self.first_seed.saturating_add(self.seeds),
            self.seeds,
            self.shard
        )
    }

    /// What the counting of `rules_reached` means, in words for the coverage table.
    pub fn counting(&self) -> String {
        format!(
            "{}; and each failing seed counts its difference's rule",
            self.rules_counting
        )
    }

    /// The report as a page.
    pub fn page(&self) -> Page {
        let mut failures: Vec<FailureView> = self
            .differences
            .iter()
            .map(|d| {
                let mut f = d.shrunk.clone();
                f.seeds = Some(format!(
                    "{} seed{} showed this difference: {}",
                    d.seeds.len(),
                    if d.seeds.len() == 1 { "" } else { "s" },
                    crate::explore::signature::seed_list(&d.seeds)
                ));
                f
            })
            .collect();
        failures.extend(self.setup.iter().cloned());
        Page {
            title: format!("tidemark explore --profile {}", self.profile),
            command: self.command.clone(),
            implementation: format!("{} ({})", self.against, self.setting),
            harness_version: self.harness_version.clone(),
            seeds: Some(self.seed_range()),
            profiles: vec![ProfileSummary {
                name: self.profile.clone(),
                passed: self.passed,
                failed: self.failed,
                known: 0,
                skipped: Vec::new(),
            }],
            failures,
            notes: self.notes.clone(),
            coverage: None,
        }
    }

    /// As JSON, pretty-printed, with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serialises");
        s.push('\n');
        s
    }
}

/// Writes what `outputs` asks for: the JSON report, the coverage table (printed), the page.
pub fn write_outputs(report: &ExploreReport, outputs: &super::Outputs) -> Result<(), String> {
    if let Some(path) = &outputs.json {
        std::fs::write(path, report.to_json())
            .map_err(|e| format!("cannot write the JSON report {}: {e}", path.display()))?;
    }
    let coverage = if outputs.coverage {
        let c = coverage(report)?;
        print!("{}", c.render_text());
        Some(c)
    } else {
        None
    };
    if let Some(path) = &outputs.html {
        let mut page = report.page();
        page.coverage = coverage;
        let spec = crate::default_spec_path();
        crate::html::write(path, &page, &crate::html::rule_texts(&spec))?;
    }
    Ok(())
}

/// The SPEC coverage of an exploration: its profile's rules, the suite's scenarios citing each
/// (from the repository's scenarios), and how often the exploration reached each.
pub fn coverage(report: &ExploreReport) -> Result<crate::coverage::Coverage, String> {
    let profile = crate::profiles::named(&report.profile)?;
    let spec = crate::default_spec_path();
    let scenarios = crate::default_scenarios_dir();
    let rules = crate::coverage::rules_of(&spec, &crate::coverage::parts_of(profile.vocabulary()))?;
    let citations = crate::coverage::citations(profile, &scenarios, &spec);
    Ok(crate::coverage::Coverage::new(
        rules,
        &citations,
        Some(&report.rules_reached),
        &BTreeMap::new(),
        report.counting(),
    ))
}

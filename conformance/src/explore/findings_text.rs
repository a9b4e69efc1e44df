//! What an exploration found, told: the summary a person reads (each distinct difference, its
//! count and replay command, the known differences), the closing `N passed, M failed` line, and
//! the same findings as data for `--json` and the page (`report.rs`). Apart from `engine.rs`
//! because it only lays out findings the engine has already grouped and shrunk.

use std::fmt::Write;
use std::path::Path;

use super::engine::{Explorer, Failed, Failure, Findings, Seeds};
use super::signature::{self, KnownDifferences, Signature};
use super::text;

/// The summary of `findings` a person reads, before the throughput line: each distinct
/// difference with its count and the command that replays its shrunk seed, then the known
/// differences (went past, or where seeds ended because this profile cannot go on past one).
pub fn findings_summary<E: Explorer + ?Sized>(
    e: &E,
    f: &Findings<E::Workload, E::Divergence>,
    mutant: Option<E::Mutant>,
    known: &KnownDifferences,
) -> String {
    let mut s = String::new();
    let failed: usize = f.differences.iter().map(|d| d.seeds.len()).sum();
    if !f.differences.is_empty() {
        let _ = writeln!(
            s,
            "{} in {failed} failed seed{}:",
            signature::distinct(f.differences.len()),
            plural(failed)
        );
        let width = f
            .differences
            .iter()
            .map(|d| d.seeds.len().to_string().len())
            .max()
            .unwrap_or(1);
        for d in &f.differences {
            let n = d.seeds.len();
            let _ = writeln!(s, "  {n:>width$} seed{}  {}", plural_pad(n), d.signature);
            let _ = writeln!(
                s,
                "  {:width$}        seeds: {}",
                "",
                signature::seed_list(&d.seeds)
            );
            let replay = match &d.saved {
                Some(p) => format!("tidemark replay {}", p.display()),
                None => e.replay_command(d.shrunk.seed, mutant),
            };
            let _ = writeln!(
                s,
                "  {:width$}        shrunk: seed {} ({} of {} operations); replay: {replay}",
                "",
                d.shrunk.seed,
                e.len(&d.shrunk.workload),
                d.shrunk.original_len
            );
        }
    }
    if !f.setup.is_empty() {
        let seeds: Vec<u64> = f.setup.iter().map(|x| x.seed).collect();
        let _ = writeln!(
            s,
            "{} seed{} could not be set up (no verdict): {}",
            seeds.len(),
            plural(seeds.len()),
            signature::seed_list(&seeds)
        );
    }
    let listed = |sig: &Signature| {
        known
            .get(sig)
            .map(|k| format!("{}:{}", known.file, k.line))
            .unwrap_or_default()
    };
    if !f.went_past_known.is_empty() {
        let _ = writeln!(
            s,
            "known differences ({}), gone past and explored beyond:",
            known.file
        );
        for (sig, times, seeds) in &f.went_past_known {
            let _ = writeln!(
                s,
                "  {times} time{} in {} seed{}  {sig}  ({})",
                plural(*times),
                seeds.len(),
                plural(seeds.len()),
                listed(sig)
            );
        }
    }
    for (sig, seeds) in &f.ended_at_known {
        let _ = writeln!(
            s,
            "{} seed{} ended at the known difference {sig} ({}): the {} exploration cannot go on past a known difference yet, so what follows it in those seeds was not explored",
            seeds.len(),
            plural(seeds.len()),
            listed(sig),
            e.profile()
        );
    }
    let seen = |k: &signature::KnownEntry| {
        f.went_past_known
            .iter()
            .any(|w| w.0.to_string() == k.signature)
            || f.ended_at_known
                .iter()
                .any(|w| w.0.to_string() == k.signature)
    };
    for k in known.entries.iter().filter(|k| !seen(k)) {
        let _ = writeln!(
            s,
            "known difference not seen in these seeds: {} ({}:{})",
            k.signature, known.file, k.line
        );
    }
    s
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `s`, or a space where there is none, so counts' words line up.
fn plural_pad(n: usize) -> &'static str {
    if n == 1 {
        " "
    } else {
        "s"
    }
}

/// The closing line: `N passed, M failed`, then the distinct differences among the failures
/// and the seeds that ended at a known difference.
pub fn closing_line<W, D>(passed: usize, f: &Findings<W, D>) -> String {
    let failed: usize = f.differences.iter().map(|d| d.seeds.len()).sum::<usize>() + f.setup.len();
    let mut s = format!("{passed} passed, {failed} failed");
    if !f.differences.is_empty() {
        let _ = write!(s, ": {}", signature::distinct(f.differences.len()));
    }
    let ended: usize = f.ended_at_known.iter().map(|e| e.1.len()).sum();
    if ended > 0 {
        let _ = write!(s, ", {ended} ended at a known difference");
    }
    s
}

/// The exploration as data (`explore/report.rs`): its run, each distinct difference with its
/// seeds and shrunk failure, the seeds not set up, the known differences, the rules reached.
pub fn explore_report<E: Explorer + ?Sized>(
    e: &E,
    seeds: &Seeds,
    mutant: Option<E::Mutant>,
    passed: usize,
    f: &Findings<E::Workload, E::Divergence>,
    mut rules: std::collections::BTreeMap<String, u64>,
) -> super::report::ExploreReport {
    use super::report::{DifferenceReport, ExploreReport, FORMAT};
    // A difference found exercised its rule too, once per seed that showed it.
    for d in &f.differences {
        *rules.entry(d.signature.rule.clone()).or_default() += d.seeds.len() as u64;
    }
    let mut notes = Vec::new();
    for (sig, times, seeds) in &f.went_past_known {
        notes.push(format!(
            "known difference {sig}: gone past {times} time{} in {} seed{}",
            plural(*times),
            seeds.len(),
            plural(seeds.len())
        ));
    }
    for (sig, seeds) in &f.ended_at_known {
        notes.push(format!(
            "{} seed{} ended at the known difference {sig}: what follows it in those seeds was not explored",
            seeds.len(),
            plural(seeds.len())
        ));
    }
    ExploreReport {
        format: FORMAT.into(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        profile: e.profile().into(),
        setting: e.setting(),
        against: e.against(mutant),
        command: text::run_command(
            e.profile(),
            e.program(),
            seeds.first_seed,
            seeds.seeds,
            mutant.map(|m| e.mutant_id(m)),
            &e.setting_options(),
        ),
        first_seed: seeds.first_seed,
        seeds: seeds.seeds,
        shard: format!("{}/{}", seeds.shard.index, seeds.shard.count),
        passed,
        failed: f.differences.iter().map(|d| d.seeds.len()).sum::<usize>() + f.setup.len(),
        differences: f
            .differences
            .iter()
            .map(|d| DifferenceReport {
                signature: d.signature.to_string(),
                rule: d.signature.rule.clone(),
                seeds: d.seeds.clone(),
                shrunk: failure_view(e, &d.shrunk, mutant, d.saved.as_deref(), Some(&d.signature)),
            })
            .collect(),
        setup: f
            .setup
            .iter()
            .map(|s| failure_view(e, s, mutant, None, None))
            .collect(),
        notes,
        rules_reached: rules,
        rules_counting: format!("{} exploration: {}", e.profile(), e.rules_counting()),
    }
}

/// A failure as the HTML page shows it: the divergence, the shrunk operations, the whole trace.
pub fn failure_view<E: Explorer + ?Sized>(
    e: &E,
    failure: &Failure<E::Workload, E::Divergence>,
    mutant: Option<E::Mutant>,
    saved: Option<&Path>,
    signature: Option<&Signature>,
) -> crate::html::FailureView {
    let title = format!(
        "seed {} against {}{}",
        failure.seed,
        e.against(mutant),
        e.heading_detail(&failure.workload)
    );
    let replay = match saved {
        Some(p) => format!("tidemark replay {}", p.display()),
        None => e.replay_command(failure.seed, mutant),
    };
    let mut view = crate::html::FailureView {
        title,
        profile: e.profile().into(),
        replay,
        operations: e.op_lines(&failure.workload),
        ..Default::default()
    };
    match &failure.error {
        Failed::Diverged(d) => {
            let t = e.divergence_text(d);
            view.what = signature.map(|s| s.to_string()).unwrap_or_default();
            view.at = t.at;
            view.expected = t.expected.to_string();
            view.actual = t.actual.to_string();
            view.trace = t.trace.to_vec();
            view.model_state = t.model_state.to_vec();
            view.rules = signature
                .map(|s| s.rule.clone())
                .filter(|r| crate::spec::is_rule_id(r))
                .into_iter()
                .collect();
        }
        Failed::Setup(why) => {
            view.what = "could not be set up (no verdict)".into();
            view.at = "set-up".into();
            view.expected = "the run set up".into();
            view.actual = why.clone();
        }
    }
    view
}

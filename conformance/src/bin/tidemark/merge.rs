//! `tidemark merge`: shards' exploration reports or runs' reports, each loaded (an error naming
//! its file), folded, printed and written where asked. Apart from `main.rs` because folding
//! reports is its own job, shared by no other command.

use std::path::PathBuf;
use tidemark_conformance::profiles::{self, Profile};
use tidemark_conformance::{default_spec_path, report};

/// `tidemark merge`: the shards' reports loaded (each error naming its file), folded, printed
/// and written where asked; true if no seed failed.
pub(crate) fn merge_command(
    shards: &[PathBuf],
    json: Option<&std::path::Path>,
    junit: Option<&std::path::Path>,
    html: Option<&std::path::Path>,
    coverage: bool,
) -> Result<bool, String> {
    use tidemark_conformance::{merge, merge_run};
    if let Some(first) = shards.first() {
        if merge_run::format_of(first)?.as_deref() == Some(merge_run::FORMAT) {
            return merge_runs(shards, json, junit, html, coverage);
        }
    }
    let loaded = shards
        .iter()
        .map(|p| merge::load(p).map(|r| (p.clone(), r)))
        .collect::<Result<Vec<_>, String>>()?;
    let merged = merge::merge(&loaded)?;
    print!("{}", merge::render_text(&merged));
    let write = |path: &std::path::Path, text: String| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    if let Some(path) = junit {
        write(path, merge::render_junit(&merged))?;
    }
    tidemark_conformance::explore::report::write_outputs(
        &merged,
        &tidemark_conformance::explore::Outputs {
            html: html.map(|p| p.to_path_buf()),
            json: json.map(|p| p.to_path_buf()),
            coverage,
        },
    )?;
    Ok(merged.failed == 0)
}

/// `tidemark merge` of run reports: loaded (each error naming its file), folded, printed as the
/// run's table and written where asked; true if the merged run passed.
fn merge_runs(
    runs: &[PathBuf],
    json: Option<&std::path::Path>,
    junit: Option<&std::path::Path>,
    html: Option<&std::path::Path>,
    coverage: bool,
) -> Result<bool, String> {
    use tidemark_conformance::merge_run;
    let loaded = runs
        .iter()
        .map(|p| merge_run::load(p).map(|r| (p.clone(), r)))
        .collect::<Result<Vec<_>, String>>()?;
    let merged = merge_run::merge(&loaded)?;
    let spec = default_spec_path();
    let coverage = if coverage {
        let mut played: Vec<&dyn Profile> = Vec::new();
        for c in &merged.cases {
            let p = profiles::named(&c.profile)?;
            if !played.iter().any(|q| q.name() == p.name()) {
                played.push(p);
            }
        }
        let c = tidemark_conformance::coverage::of_run(&merged, &played, &spec)?;
        print!("{}", c.render_text());
        Some(c)
    } else {
        None
    };
    print!("{}", report::render_table(&merged));
    let write = |path: &std::path::Path, text: String| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    if let Some(path) = json {
        write(path, report::render_json(&merged))?;
    }
    if let Some(path) = junit {
        write(path, report::render_junit(&merged))?;
    }
    if let Some(path) = html {
        let mut page = tidemark_conformance::html::run::page(&merged);
        page.title = "tidemark merge (run reports)".into();
        page.coverage = coverage;
        tidemark_conformance::html::write(
            path,
            &page,
            &tidemark_conformance::html::rule_texts(&spec),
        )?;
    }
    Ok(merged.passed())
}

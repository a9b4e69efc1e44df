//! `tidemark merge`: the JSON reports of the M shards of one exploration (`tidemark explore
//! --shard K/M --json FILE`) folded into one report, with one JUnit document and one HTML page.
//! Shards of different runs are refused (another profile, setting, implementation or mutant,
//! harness version, or seed range), and so are a shard missing, given twice, or a file that is
//! not a whole report (a truncated upload): each error names the file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;

use crate::explore::report::{DifferenceReport, ExploreReport, FORMAT};

/// Reads one shard's report.
pub fn load(path: &Path) -> Result<ExploreReport, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read the shard's report: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a whole JSON report (truncated or corrupt?): {e}",
            path.display()
        )
    })?;
    let format = value.get("format").and_then(|f| f.as_str());
    if format != Some(FORMAT) {
        return Err(format!(
            "{}: not an exploration report of this harness: its format is {}, expected {FORMAT:?} (written by tidemark explore --json)",
            path.display(),
            format.map(|f| format!("{f:?}")).unwrap_or_else(|| "missing".into())
        ));
    }
    serde_json::from_value(value).map_err(|e| {
        format!(
            "{}: an exploration report with a field missing or malformed: {e}",
            path.display()
        )
    })
}

/// `K/M` as numbers.
fn shard_of(path: &Path, shard: &str) -> Result<(u64, u64), String> {
    let s: crate::explore::Shard = shard
        .parse()
        .map_err(|e| format!("{}: shard {shard:?}: {e}", path.display()))?;
    Ok((s.index, s.count))
}

/// Folds the shards into one report; every shard of one run must be there, once.
pub fn merge(shards: &[(PathBuf, ExploreReport)]) -> Result<ExploreReport, String> {
    let (first_path, first) = shards.first().ok_or("merge needs at least one shard")?;
    let run_of = |r: &ExploreReport| -> Vec<(&'static str, String)> {
        vec![
            ("harness version", r.harness_version.clone()),
            ("profile", r.profile.clone()),
            ("setting", r.setting.clone()),
            ("implementation", r.against.clone()),
            ("command", r.command.clone()),
            ("first seed", r.first_seed.to_string()),
            ("seeds", r.seeds.to_string()),
            ("rule counting", r.rules_counting.clone()),
        ]
    };
    let expected = run_of(first);
    let (_, count) = shard_of(first_path, &first.shard)?;
    let mut seen: BTreeMap<u64, &Path> = BTreeMap::new();
    for (path, r) in shards {
        for ((what, a), (_, b)) in expected.iter().zip(run_of(r)) {
            if *a != b {
                return Err(format!(
                    "{} is a shard of another run than {}: its {what} is {b:?}, not {a:?}",
                    path.display(),
                    first_path.display()
                ));
            }
        }
        let (k, m) = shard_of(path, &r.shard)?;
        if m != count {
            return Err(format!(
                "{} is shard {k}/{m}, but {} is one of {count} shards: shards of one run split its seeds the same way",
                path.display(),
                first_path.display()
            ));
        }
        if let Some(other) = seen.insert(k, path) {
            return Err(format!(
                "{} and {} are both shard {k}/{m}",
                other.display(),
                path.display()
            ));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|k| !seen.contains_key(k))
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "shard{} {} of the run missing: a merged report would leave {} seeds unjudged",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "its" } else { "their" }
        ));
    }
    let mut differences: Vec<DifferenceReport> = Vec::new();
    let mut ordered: Vec<&(PathBuf, ExploreReport)> = shards.iter().collect();
    ordered.sort_by_key(|(p, r)| shard_of(p, &r.shard).map(|s| s.0).unwrap_or(0));
    let mut rules_reached: BTreeMap<String, u64> = BTreeMap::new();
    let mut merged = ExploreReport {
        shard: format!("all of {count}"),
        passed: 0,
        failed: 0,
        differences: Vec::new(),
        setup: Vec::new(),
        notes: Vec::new(),
        rules_reached: BTreeMap::new(),
        ..first.clone()
    };
    for (_, r) in &ordered {
        merged.passed += r.passed;
        merged.failed += r.failed;
        merged.setup.extend(r.setup.iter().cloned());
        merged
            .notes
            .extend(r.notes.iter().map(|n| format!("shard {}: {n}", r.shard)));
        for (rule, n) in &r.rules_reached {
            *rules_reached.entry(rule.clone()).or_default() += n;
        }
        for d in &r.differences {
            match differences.iter_mut().find(|x| x.signature == d.signature) {
                Some(x) => {
                    // The group's shrunk seed is its first seed's, as one unsharded run shrinks.
                    if d.seeds.first() < x.seeds.first() {
                        x.shrunk = d.shrunk.clone();
                    }
                    x.seeds.extend(d.seeds.iter().copied());
                    x.seeds.sort_unstable();
                }
                None => differences.push(d.clone()),
            }
        }
    }
    differences.sort_by_key(|d| d.seeds.first().copied());
    merged.differences = differences;
    merged.rules_reached = rules_reached;
    Ok(merged)
}

/// The merged verdict as text: each distinct difference with its seeds and replay, then
/// `N passed, M failed`.
pub fn render_text(r: &ExploreReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} exploration against {} ({}): seeds {}",
        r.profile,
        r.against,
        r.setting,
        r.seed_range()
    );
    for d in &r.differences {
        let _ = writeln!(
            s,
            "  {} seed{}  {}",
            d.seeds.len(),
            if d.seeds.len() == 1 { " " } else { "s" },
            d.signature
        );
        let _ = writeln!(
            s,
            "           seeds: {}",
            crate::explore::signature::seed_list(&d.seeds)
        );
        let _ = writeln!(s, "           replay: {}", d.shrunk.replay);
    }
    for f in &r.setup {
        let _ = writeln!(s, "  could not be set up: {}: {}", f.title, f.actual);
    }
    for n in &r.notes {
        let _ = writeln!(s, "  {n}");
    }
    let _ = write!(s, "{} passed, {} failed", r.passed, r.failed);
    if !r.differences.is_empty() {
        let _ = write!(
            s,
            ": {}",
            crate::explore::signature::distinct(r.differences.len())
        );
    }
    s.push('\n');
    s
}

/// The exploration as JUnit XML: one test case for the passing seeds, one failing test case
/// per distinct difference (its seeds, divergence and replay), one per seed not set up.
pub fn render_junit(r: &ExploreReport) -> String {
    crate::report::xml_document(|w| write_junit(w, r))
}

fn write_junit(w: &mut Writer<Vec<u8>>, r: &ExploreReport) -> std::io::Result<()> {
    use crate::report::xml_safe;
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let suite = format!("tidemark.explore.{}", r.profile);
    let tests = (1 + r.differences.len() + r.setup.len()).to_string();
    let failures = r.differences.len().to_string();
    let errors = r.setup.len().to_string();
    let attrs = [
        ("tests", tests.as_str()),
        ("failures", failures.as_str()),
        ("errors", errors.as_str()),
        ("skipped", "0"),
    ];
    w.create_element("testsuites")
        .with_attribute(("name", "tidemark"))
        .with_attributes(attrs)
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attribute(("name", suite.as_str()))
                .with_attributes(attrs)
                .write_inner_content(|w| {
                    w.create_element("properties").write_inner_content(|w| {
                        for (name, value) in [
                            ("implementation", r.against.as_str()),
                            ("setting", r.setting.as_str()),
                            ("seeds", &r.seed_range()),
                            ("command", r.command.as_str()),
                            ("harness_version", r.harness_version.as_str()),
                        ] {
                            w.create_element("property")
                                .with_attribute(("name", name))
                                .with_attribute(("value", xml_safe(value).as_str()))
                                .write_empty()?;
                        }
                        Ok(())
                    })?;
                    w.create_element("testcase")
                        .with_attribute(("classname", suite.as_str()))
                        .with_attribute((
                            "name",
                            format!("{} seeds passed", r.passed).as_str(),
                        ))
                        .write_empty()?;
                    for d in &r.differences {
                        let body = format!(
                            "{} seeds: {}\nshrunk: {}\nat: {}\nexpected: {}\nactual:   {}\nreplay:   {}\n",
                            d.seeds.len(),
                            crate::explore::signature::seed_list(&d.seeds),
                            d.shrunk.title,
                            d.shrunk.at,
                            d.shrunk.expected,
                            d.shrunk.actual,
                            d.shrunk.replay
                        );
                        w.create_element("testcase")
                            .with_attribute(("classname", suite.as_str()))
                            .with_attribute(("name", xml_safe(&d.signature).as_str()))
                            .write_inner_content(|w| {
                                w.create_element("failure")
                                    .with_attribute((
                                        "message",
                                        xml_safe(&format!(
                                            "{} ({} seeds)",
                                            d.signature,
                                            d.seeds.len()
                                        ))
                                        .as_str(),
                                    ))
                                    .with_attribute(("type", "difference"))
                                    .write_text_content(BytesText::new(&xml_safe(
                                        &tidemark_sim::clip::clip_field(&body),
                                    )))?;
                                Ok(())
                            })?;
                    }
                    for f in &r.setup {
                        w.create_element("testcase")
                            .with_attribute(("classname", suite.as_str()))
                            .with_attribute(("name", xml_safe(&f.title).as_str()))
                            .write_inner_content(|w| {
                                w.create_element("error")
                                    .with_attribute(("message", "could not be set up"))
                                    .with_attribute(("type", "setup"))
                                    .write_text_content(BytesText::new(&xml_safe(
                                        &tidemark_sim::clip::clip_field(&f.actual),
                                    )))?;
                                Ok(())
                            })?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::FailureView;

    fn shard(k: u64, m: u64, seeds: &[u64]) -> (PathBuf, ExploreReport) {
        let report = ExploreReport {
            format: FORMAT.into(),
            harness_version: "0.1.0".into(),
            profile: "scratchpad".into(),
            setting: "the reference".into(),
            against: "the mutant m".into(),
            command: "tidemark explore --profile scratchpad --first-seed 0 --seeds 10 --mutant m"
                .into(),
            first_seed: 0,
            seeds: 10,
            shard: format!("{k}/{m}"),
            passed: 5 - seeds.len(),
            failed: seeds.len(),
            differences: if seeds.is_empty() {
                vec![]
            } else {
                vec![DifferenceReport {
                    signature: "SP-4.2 write: evicted more files than the model".into(),
                    rule: "SP-4.2".into(),
                    seeds: seeds.to_vec(),
                    shrunk: FailureView {
                        title: format!("seed {} against the mutant m", seeds[0]),
                        ..Default::default()
                    },
                }]
            },
            setup: vec![],
            notes: vec![],
            rules_reached: BTreeMap::from([("SP-4.2".to_string(), seeds.len() as u64)]),
            rules_counting: "counted".into(),
        };
        (PathBuf::from(format!("shard-{k}.json")), report)
    }

    #[test]
    fn shards_fold_into_one_verdict_each_difference_shrunk_at_its_first_seed() {
        let merged = merge(&[shard(1, 2, &[1, 3]), shard(0, 2, &[4])]).unwrap();
        assert_eq!((merged.passed, merged.failed), (7, 3));
        assert_eq!(merged.differences.len(), 1);
        assert_eq!(merged.differences[0].seeds, [1, 3, 4]);
        assert_eq!(
            merged.differences[0].shrunk.title,
            "seed 1 against the mutant m"
        );
        assert_eq!(merged.shard, "all of 2");
        assert_eq!(merged.rules_reached["SP-4.2"], 3);
        let junit = render_junit(&merged);
        assert!(junit.contains("failures=\"1\""), "{junit}");
        assert!(junit.contains("3 seeds: 1, 3, 4"), "{junit}");
    }

    #[test]
    fn shards_of_different_runs_are_refused_naming_the_field() {
        let mut other = shard(1, 2, &[]);
        other.1.harness_version = "0.2.0".into();
        let e = merge(&[shard(0, 2, &[]), other]).unwrap_err();
        assert!(e.contains("shard-1.json is a shard of another run than shard-0.json: its harness version is \"0.2.0\", not \"0.1.0\""), "{e}");
        let mut other = shard(1, 2, &[]);
        other.1.seeds = 20;
        let e = merge(&[shard(0, 2, &[]), other]).unwrap_err();
        assert!(e.contains("its seeds is \"20\""), "{e}");
        let mut other = shard(1, 2, &[]);
        other.1.profile = "rows".into();
        let e = merge(&[shard(0, 2, &[]), other]).unwrap_err();
        assert!(e.contains("its profile is \"rows\""), "{e}");
    }

    #[test]
    fn a_missing_repeated_or_differently_split_shard_is_refused() {
        let e = merge(&[shard(0, 3, &[]), shard(2, 3, &[])]).unwrap_err();
        assert!(e.contains("shard 1/3 of the run missing"), "{e}");
        let e = merge(&[shard(0, 2, &[]), shard(0, 2, &[])]).unwrap_err();
        assert!(e.contains("are both shard 0/2"), "{e}");
        let e = merge(&[shard(0, 2, &[]), shard(1, 3, &[])]).unwrap_err();
        assert!(
            e.contains("is shard 1/3, but shard-0.json is one of 2 shards"),
            "{e}"
        );
    }

    #[test]
    fn a_truncated_or_foreign_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let whole = shard(0, 1, &[2]).1.to_json();
        let cut = dir.path().join("cut.json");
        std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
        let e = load(&cut).unwrap_err();
        assert!(
            e.starts_with(&format!("{}: not a whole JSON report", cut.display())),
            "{e}"
        );
        let foreign = dir.path().join("run.json");
        std::fs::write(&foreign, "{\"implementation\": \"reference\"}").unwrap();
        let e = load(&foreign).unwrap_err();
        assert!(
            e.contains(
                "run.json: not an exploration report of this harness: its format is missing"
            ),
            "{e}"
        );
        let good = dir.path().join("good.json");
        std::fs::write(&good, &whole).unwrap();
        assert_eq!(load(&good).unwrap(), shard(0, 1, &[2]).1);
    }
}

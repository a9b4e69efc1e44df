//! The two test tiers stay what README.md and `.ci/run` say they are: `cargo test` runs the
//! quick tier, and CI runs both (`-- --include-ignored`) minus the few tests it skips by name.
//!
//! An ignored test is either in the slow tier (its reason starts `slow tier:`) or one of the
//! extras CI skips: a measurement, or a deeper search whose shallower twin runs. Each `--skip`
//! in `.ci/run` is a substring filter over every test binary's names, so a careless one would
//! silently drop tests from CI: each must match extras only, and at least one.
//!
//! Read from the sources as text: a `#[ignore` attribute and the `fn` after it.

use std::path::Path;

use tidemark_conformance::spec::repo_root;

/// Every test function in the workspace's Rust sources (its module path from the crate root
/// is not needed: a skip filter matching a function's name is what matters here), with its
/// ignore reason if it has one.
fn tests_with_ignore_reasons(root: &Path) -> Vec<(String, String, Option<String>)> {
    let mut out = Vec::new();
    let mut stack: Vec<std::path::PathBuf> = ["conformance", "reference-impl", "sim", "examples"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(path);
                }
                continue;
            }
            if !name.ends_with(".rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let file = path.strip_prefix(root).unwrap().display().to_string();
            let mut pending_test = false;
            let mut reason: Option<String> = None;
            for line in text.lines().map(str::trim) {
                if line == "#[test]" || line.starts_with("#[tokio::test") {
                    pending_test = true;
                } else if let Some(rest) = line.strip_prefix("#[ignore") {
                    reason = Some(
                        rest.trim_start_matches(" = \"")
                            .trim_end_matches("\"]")
                            .to_string(),
                    );
                } else if pending_test && line.contains("fn ") {
                    let after = line.split("fn ").nth(1).unwrap();
                    let name = after.split(['(', '<']).next().unwrap().to_string();
                    out.push((file.clone(), name, reason.take()));
                    pending_test = false;
                } else if !pending_test && !line.starts_with("#[") && !line.starts_with("//") {
                    reason = None;
                }
            }
        }
    }
    out
}

/// The `--skip` filters `.ci/run` passes to `cargo test`.
fn ci_skips(root: &Path) -> Vec<String> {
    let script = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let words: Vec<&str> = script.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[0] == "--skip")
        .map(|w| w[1].to_string())
        .collect()
}

#[test]
fn every_ignored_test_is_in_the_slow_tier_or_skipped_by_ci_by_name_and_no_skip_drops_another() {
    let root = repo_root();
    let tests = tests_with_ignore_reasons(&root);
    assert!(tests.len() > 300, "the sources were read: {}", tests.len());
    let skips = ci_skips(&root);
    assert!(!skips.is_empty(), ".ci/run skips its measurements by name");
    let slow = tests
        .iter()
        .filter(|(_, _, r)| r.as_deref().is_some_and(|r| r.starts_with("slow tier:")))
        .count();
    assert!(slow > 10, "the slow tier was found: {slow} tests");
    for skip in &skips {
        // A filter names a module path (`module::function`) or part of a function's name.
        let function = skip.rsplit("::").next().unwrap();
        let matched: Vec<_> = tests
            .iter()
            .filter(|(_, name, _)| name.contains(function))
            .collect();
        assert!(!matched.is_empty(), "--skip {skip} matches no test");
        for (file, name, reason) in matched {
            assert!(
                reason
                    .as_deref()
                    .is_some_and(|r| !r.starts_with("slow tier:")),
                "--skip {skip} drops {file}: {name}, which is not an extra CI may skip"
            );
        }
    }
    for (file, name, reason) in &tests {
        let Some(reason) = reason else { continue };
        if reason.starts_with("slow tier:") {
            continue;
        }
        assert!(
            skips
                .iter()
                .any(|s| name.contains(s.rsplit("::").next().unwrap())),
            "{file}: {name} is ignored ({reason}) but neither in the slow tier nor skipped by CI"
        );
    }
}

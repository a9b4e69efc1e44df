//! Both scenario parsers under random and mutated text: they never panic, and every error names a
//! line inside the file (1..=its line count; 1 for an empty file). The inputs are the real
//! scenarios under scenarios/, mutated line by line and byte by byte, and plain random text.
//! Failures shrink and are saved in `parser_fuzz.proptest-regressions` beside this file.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tidemark_conformance::spec::RuleIndex;

/// Every real scenario file, both grammars, with its text.
fn corpus() -> &'static [(PathBuf, String)] {
    static CORPUS: OnceLock<Vec<(PathBuf, String)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tidemark_conformance::default_scenarios_dir();
        tidemark_sim::scenario_files::find(&dir, &["tdm"])
            .unwrap()
            .files
            .into_iter()
            .map(|f| {
                let text = std::fs::read_to_string(&f.open).unwrap();
                (f.path, text)
            })
            .collect()
    })
}

fn rules() -> &'static RuleIndex {
    static RULES: OnceLock<RuleIndex> = OnceLock::new();
    RULES.get_or_init(|| RuleIndex::load(&tidemark_conformance::default_spec_path()).unwrap())
}

/// Words and fragments both grammars use, so mutations reach deep into a line's grammar.
const FRAGMENTS: &[&str] = &[
    "scenario: x",
    "profile: scratchpad",
    "profile: scoped",
    "rules: SP-1.1",
    "rules: SC-1.1",
    "rules:",
    "kills: age-only-expiry",
    "knob",
    "knobs: a=1",
    "advance",
    "999999999999d",
    "-",
    "=>",
    "[",
    "]",
    ",",
    "\"",
    "\\",
    "\\x",
    "\\xZZ",
    "@",
    "#",
    "/",
    "<",
    ">",
    "<a@#b/c>",
    "..",
    "disk",
    "write",
    "read",
    "list",
    "remove",
    "symlink",
    "->",
    "$OUTSIDE",
    "ok",
    "refused",
    "evicted",
    "faults",
    "error",
    "fail",
    "NaN",
    "1e309",
    "-0",
    "18446744073709551616",
    "sweep",
    "swept",
    "session",
    "w1/a1/s1",
    "+a=b",
    "crash at",
    "publish skill s in w1",
    "=",
    "\t",
    " ",
    "é",
    "\u{0}",
    "\r",
    "MiB",
    "KiB",
    "B",
    "d",
    "h",
    "m",
    "s",
    "ms",
    "workdir",
    "empty",
];

#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    InsertLine(usize, String),
    InsertAt(usize, String),
    DeleteBytes(usize, usize),
    Truncate(usize),
}

fn fragment_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(prop::sample::select(FRAGMENTS), 1..6).prop_map(|v| v.join(" ")),
        1 => "\\PC{0,12}",
        1 => prop::collection::vec(any::<char>(), 0..8).prop_map(|v| v.into_iter().collect()),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        at.prop_map(Mutation::DeleteLine),
        at.prop_map(Mutation::DuplicateLine),
        (at, at).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (at, fragment_text()).prop_map(|(a, t)| Mutation::InsertLine(a, t)),
        (at, fragment_text()).prop_map(|(a, t)| Mutation::InsertAt(a, t)),
        (at, 0..16usize).prop_map(|(a, n)| Mutation::DeleteBytes(a, n)),
        at.prop_map(Mutation::Truncate),
    ]
}

/// The nearest character boundary at or below `i % (len + 1)`.
fn boundary(text: &str, i: usize) -> usize {
    let mut at = i % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len().max(1);
    match m {
        Mutation::DeleteLine(i) if !lines.is_empty() => {
            lines.remove(i % n);
        }
        Mutation::DuplicateLine(i) if !lines.is_empty() => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Mutation::SwapLines(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
        Mutation::InsertLine(i, t) => lines.insert(i % (lines.len() + 1), t.clone()),
        Mutation::InsertAt(i, t) => {
            let mut s = text.to_string();
            s.insert_str(boundary(text, *i), t);
            return s;
        }
        Mutation::DeleteBytes(i, len) => {
            let start = boundary(text, *i);
            let end = boundary(text, start + len).max(start);
            let end = if end < start { start } else { end };
            let mut s = text.to_string();
            s.replace_range(start..end.min(text.len()), "");
            return s;
        }
        Mutation::Truncate(i) => return text[..boundary(text, *i)].to_string(),
        _ => {}
    }
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

/// Parses `text` with both grammars and checks every error's line.
fn check_both(file: &Path, text: &str) -> Result<(), TestCaseError> {
    let lines = text.lines().count().max(1);
    if let Err(e) =
        tidemark_conformance::profiles::scratchpad::script::parse_str(file, text, rules())
    {
        prop_assert!(
            (1..=lines).contains(&e.line),
            "scratchpad error at line {} of a {lines}-line file: {e}",
            e.line
        );
    }
    if let Err(e) =
        tidemark_conformance::profiles::scoped::script::parse_with(file, text, rules().id_set())
    {
        prop_assert!(
            (1..=lines).contains(&e.line),
            "scoped error at line {} of a {lines}-line file: {e}",
            e.line
        );
    }
    Ok(())
}

/// How many cases each property runs: `PARSER_FUZZ_CASES`, else 1000.
fn cases() -> u32 {
    std::env::var("PARSER_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1000)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_real_scenarios_never_panic_and_errors_name_a_line_in_the_file(
        pick in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..8),
    ) {
        let (file, text) = &corpus()[pick % corpus().len()];
        let mut mutated = text.clone();
        for m in &mutations {
            mutated = apply(&mutated, m);
        }
        check_both(file, &mutated)?;
    }

    #[test]
    fn random_text_never_panics_and_errors_name_a_line_in_the_file(
        lines in prop::collection::vec(fragment_text(), 0..12),
    ) {
        check_both(Path::new("random.tdm"), &lines.join("\n"))?;
    }
}

#[test]
fn the_corpus_holds_both_grammars() {
    let c = corpus();
    assert!(c
        .iter()
        .any(|(f, _)| f.extension().is_some_and(|e| e == "tdm")));
    assert!(c
        .iter()
        .any(|(f, _)| f.extension().is_some_and(|e| e == "tdm")));
}

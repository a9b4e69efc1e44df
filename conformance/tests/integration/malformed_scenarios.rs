//! A malformed scenario file fails with its path, its line and what was expected. Each message is
//! snapshotted, because a person reads it.

use std::path::Path;
use tidemark_conformance::profiles::scratchpad::script::parse_str;
use tidemark_conformance::spec::RuleIndex;

fn error_of(text: &str) -> String {
    let rules = RuleIndex::parse("**SP-1.1** x\n**SP-4.2** y\n");
    match parse_str(Path::new("scenarios/scratchpad/example.tdm"), text, &rules) {
        Ok(s) => panic!("expected an error, parsed {} steps", s.steps.len()),
        Err(e) => e.to_string(),
    }
}

const HEAD: &str = "scenario: an example\nprofile: scratchpad\nrules: SP-1.1\n";

#[test]
fn an_unknown_operation_is_an_error_not_a_skipped_step() {
    insta::assert_snapshot!(error_of(&format!(
        "{HEAD}alice@#g/T1 delete notes.md => ok\n"
    )));
}

#[test]
fn an_unknown_rule_id_is_an_error() {
    insta::assert_snapshot!(error_of(
        "scenario: x\nprofile: scratchpad\nrules: SP-1.1, SP-9.9\n"
    ));
}

#[test]
fn a_call_without_an_expectation_names_what_was_expected() {
    insta::assert_snapshot!(error_of(&format!("{HEAD}alice@#g/T1 read notes.md\n")));
}

#[test]
fn an_unknown_refusal_reason_lists_the_known_ones() {
    insta::assert_snapshot!(error_of(&format!(
        "{HEAD}alice@#g/T1 read ../x => refused climbing\n"
    )));
}

#[test]
fn an_unclosed_string_names_its_line() {
    insta::assert_snapshot!(error_of(&format!(
        "{HEAD}\n# a comment\nalice@#g/T1 write notes.md \"draft => ok\n"
    )));
}

#[test]
fn a_bad_duration_names_the_accepted_forms() {
    insta::assert_snapshot!(error_of(&format!("{HEAD}advance 7days\n")));
}

#[test]
fn an_unknown_knob_lists_the_known_ones() {
    insta::assert_snapshot!(error_of(&format!("{HEAD}knob session_cap 1KiB\n")));
}

#[test]
fn a_missing_scenario_line_is_reported_at_line_one() {
    insta::assert_snapshot!(error_of("profile: scratchpad\n"));
}

#[test]
fn a_caller_without_a_channel_is_explained() {
    insta::assert_snapshot!(error_of(&format!(
        "{HEAD}alice@general write x \"y\" => ok\n"
    )));
}

#[test]
fn the_whole_suite_loads() {
    let scenarios = tidemark_conformance::profiles::scratchpad::load(
        &tidemark_conformance::default_scenarios_dir(),
        &tidemark_conformance::default_spec_path(),
    )
    .expect("every scenario file parses");
    assert!(scenarios.len() >= 30);
    for s in &scenarios {
        assert!(!s.rules.is_empty(), "{} cites no rule", s.file.display());
    }
}

/// The error a fixture under fixtures/malformed/ loads with, its path shown from the repository.
fn fixture_error(relative: &str) -> String {
    let root = tidemark_conformance::spec::repo_root();
    let path = root.join(relative);
    let profile = std::fs::read(&path).ok().and_then(|b| {
        tidemark_conformance::scenario::header::profile_named(&String::from_utf8_lossy(&b))
            .map(str::to_string)
    });
    let scoped = profile.as_deref() == Some("scoped");
    let message = if profile.as_deref() == Some("rows") {
        let rules = RuleIndex::load(&tidemark_conformance::default_spec_path()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        match tidemark_conformance::profiles::rows::script::utf8_text(&bytes) {
            Err((line, m)) => format!("{}:{line}: {m}", path.display()),
            Ok(text) => {
                match tidemark_conformance::profiles::rows::script::parse_with(
                    &path,
                    text,
                    rules.id_set(),
                ) {
                    Ok(s) => panic!("{relative} should not load; parsed {} steps", s.steps.len()),
                    Err(e) => e.to_string(),
                }
            }
        }
    } else if scoped {
        let rules = RuleIndex::load(&tidemark_conformance::default_spec_path()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        match tidemark_conformance::profiles::scoped::script::utf8_text(&bytes) {
            Err((line, m)) => format!("{}:{line}: {m}", path.display()),
            Ok(text) => {
                match tidemark_conformance::profiles::scoped::script::parse_with(
                    &path,
                    text,
                    rules.id_set(),
                ) {
                    Ok(s) => panic!("{relative} should not load; parsed {} steps", s.steps.len()),
                    Err(e) => e.to_string(),
                }
            }
        }
    } else {
        let rules = RuleIndex::load(&tidemark_conformance::default_spec_path()).unwrap();
        match tidemark_conformance::profiles::scratchpad::script::parse_file(&path, &rules) {
            Ok(s) => panic!("{relative} should not load; parsed {} steps", s.steps.len()),
            Err(e) => e.to_string(),
        }
    };
    message.replace(&format!("{}/", root.display()), "")
}

/// Every malformed fixture fails to load at the line of its mistake; each message is
/// snapshotted, one snapshot per fixture.
#[test]
fn every_malformed_fixture_is_a_located_load_error() {
    let root = tidemark_conformance::spec::repo_root();
    let mut seen = 0;
    for profile in ["scratchpad", "scoped", "rows"] {
        let dir = root.join("fixtures/malformed").join(profile);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let relative = f.strip_prefix(&root).unwrap().display().to_string();
            let message = fixture_error(&relative);
            // The mistake is on the last line of every fixture but the header ones.
            let lines = std::fs::read(&f).unwrap().split(|&b| b == b'\n').count() - 1;
            let located = message
                .strip_prefix(&format!("{relative}:"))
                .and_then(|rest| rest.split(':').next())
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or_else(|| panic!("{message} names no line of {relative}"));
            assert!(
                (1..=lines).contains(&located),
                "{message}: line {located} is not in the file"
            );
            let name = format!(
                "fixture_{profile}_{}",
                f.file_stem().unwrap().to_string_lossy()
            );
            insta::assert_snapshot!(name, message);
            seen += 1;
        }
    }
    assert!(seen >= 25, "only {seen} fixtures");
}

#[test]
fn invalid_utf8_is_reported_at_its_line_in_every_grammar() {
    assert!(
        fixture_error("fixtures/malformed/scratchpad/invalid-utf8-on-line-5.tdm")
            .starts_with("fixtures/malformed/scratchpad/invalid-utf8-on-line-5.tdm:5: ")
    );
    assert!(
        fixture_error("fixtures/malformed/scoped/invalid-utf8-on-line-5.tdm")
            .starts_with("fixtures/malformed/scoped/invalid-utf8-on-line-5.tdm:5: ")
    );
    assert!(
        fixture_error("fixtures/malformed/rows/invalid-utf8-on-line-5.tdm")
            .starts_with("fixtures/malformed/rows/invalid-utf8-on-line-5.tdm:5: ")
    );
}

#[test]
fn a_ten_megabyte_line_is_cut_in_its_parse_error_in_both_grammars() {
    let huge = "x".repeat(10 << 20);
    let scratchpad = error_of(&format!("{HEAD}frobnicate{huge}\n"));
    assert!(scratchpad.len() < 20 << 10, "{} bytes", scratchpad.len());
    assert!(scratchpad.starts_with("scenarios/scratchpad/example.tdm:4: "));
    assert!(
        scratchpad.contains(&format!("… ({} more bytes)", huge.len() + 10 - 4096)),
        "{}",
        &scratchpad[scratchpad.len() - 200..]
    );
    let scoped = tidemark_conformance::profiles::scoped::script::parse_with(
        Path::new("x.tdm"),
        &format!("scenario: s\nprofile: scoped\nrules: SC-1.1\nfrobnicate {huge}\n"),
        &["SC-1.1".to_string()].into_iter().collect(),
    )
    .unwrap_err()
    .to_string();
    assert!(scoped.len() < 20 << 10, "{} bytes", scoped.len());
    assert!(scoped.starts_with("x.tdm:4: no such step: frobnicate xxx"));
    assert!(scoped.contains("more bytes)"));
}

#[test]
fn two_files_with_one_test_name_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!("{HEAD}advance 1d\n");
    std::fs::write(tmp.path().join("a-b.tdm"), &text).unwrap();
    std::fs::write(tmp.path().join("a_b.tdm"), &text).unwrap();
    let rules = RuleIndex::parse("**SP-1.1** x\n");
    let e = tidemark_conformance::profiles::scratchpad::script::load_dir(tmp.path(), &rules)
        .unwrap_err()
        .to_string()
        .replace(&format!("{}/", tmp.path().display()), "");
    insta::assert_snapshot!(e);
}

#[test]
fn a_symlink_loop_in_the_scenario_directory_loads_each_scenario_once() {
    let tmp = tempfile::tempdir().unwrap();
    let sub = tmp.path().join("scratchpad");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("one.tdm"), format!("{HEAD}advance 1d\n")).unwrap();
    std::os::unix::fs::symlink(tmp.path(), sub.join("loop")).unwrap();
    let rules = RuleIndex::parse("**SP-1.1** x\n");
    let loaded =
        tidemark_conformance::profiles::scratchpad::script::load_dir(tmp.path(), &rules).unwrap();
    assert_eq!(loaded.len(), 1);
}

#[test]
fn the_scoped_grammar_loads_each_file_once_and_refuses_a_shared_test_name() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "scenario: s\nprofile: scoped\nrules: SC-1.1\nsweep\n";
    std::fs::write(tmp.path().join("one.tdm"), text).unwrap();
    std::os::unix::fs::symlink(tmp.path(), tmp.path().join("loop")).unwrap();
    let rules = ["SC-1.1".to_string()].into_iter().collect();
    let loaded =
        tidemark_conformance::profiles::scoped::script::load_dir_with(tmp.path(), &rules).unwrap();
    assert_eq!(loaded.len(), 1);
    std::fs::create_dir(tmp.path().join("again")).unwrap();
    std::fs::write(tmp.path().join("again/one.tdm"), text).unwrap();
    let e = tidemark_conformance::profiles::scoped::script::load_dir_with(tmp.path(), &rules)
        .unwrap_err()
        .to_string()
        .replace(&format!("{}/", tmp.path().display()), "");
    assert_eq!(
        e,
        "one.tdm:1: the test name scoped::one is taken by again/one.tdm already; rename one of the files"
    );
}

#[test]
fn an_absence_check_with_nothing_shown_first_is_refused_as_hollow() {
    let unanchored_disk = error_of(&format!(
        "{HEAD}alice@#g/T1 write notes.md \"x\" => ok\ndisk absent <alice@#g/T1>\n"
    ));
    let unanchored_listing = error_of(&format!(
        "{HEAD}alice@#g/T1 write /x \"x\" => refused absolute_path\nalice@#g/T1 list => []\n"
    ));
    insta::assert_snapshot!(format!("{unanchored_disk}\n{unanchored_listing}"));
}

#[test]
fn an_absence_check_after_the_thing_was_shown_loads() {
    let rules = RuleIndex::parse("**SP-1.1** x\n");
    let text = format!(
        "{HEAD}alice@#g/T1 write notes.md \"x\" => ok\nbob@#g/T1 list => [@alice/notes.md]\n\
         disk exists <bob@#g/T1>/@alice/notes.md\nalice@#g/T1 remove notes.md => ok\n\
         bob@#g/T1 list => []\ndisk absent <alice@#g/T1>/@alice/notes.md\n"
    );
    parse_str(Path::new("example.tdm"), &text, &rules).expect("anchored checks load");
}

#[test]
fn an_unknown_capability_and_a_bad_sweep_expectation_are_errors() {
    let capability = error_of(&format!("{HEAD}needs: telepathy\nadvance 1d\n"));
    let swept_file = error_of(&format!("{HEAD}advance 1d => swept [@alice/notes.md]\n"));
    let swept_word = error_of(&format!("{HEAD}start => collected []\n"));
    insta::assert_snapshot!(format!("{capability}\n{swept_file}\n{swept_word}"));
}

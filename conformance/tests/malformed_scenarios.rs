//! A malformed scenario file fails with its path, its line and what was expected. Each message is
//! snapshotted, because a person reads it.

use std::path::Path;
use tidemark_conformance::scenario::parse_str;
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
    let scenarios = tidemark_conformance::suite::load(
        &tidemark_conformance::default_scenarios_dir(),
        &tidemark_conformance::default_spec_path(),
    )
    .expect("every scenario file parses");
    assert!(scenarios.len() >= 30);
    for s in &scenarios {
        assert!(!s.rules.is_empty(), "{} cites no rule", s.file.display());
    }
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

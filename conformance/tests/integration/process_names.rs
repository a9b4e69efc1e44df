//! The `names` exchange (SP-1.2, PROTOCOL.md): an implementation names its own directories, and
//! an answer that breaks one of SP-1.2's rules, or is not a names answer at all, fails the
//! scenario with a message naming the rule or the protocol error, never a hang.

use super::support::tidemark_in_repo;

/// `tidemark run` against `fixtures/adapters/bad-names.py MODE` on one scenario.
fn run(mode: &str, scenario: &str) -> (i32, String) {
    let command = format!("python3 fixtures/adapters/bad-names.py {mode}");
    let ran = tidemark_in_repo(&["run", "--impl", &command, "--only", scenario]);
    (
        ran.code,
        format!(
            "$ tidemark run --impl '{command}' --only {scenario}   # exit {}\n{}",
            ran.code, ran.stdout
        ),
    )
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_names_answer_that_breaks_a_rule_fails_the_scenario_naming_the_rule() {
    let mut table = String::new();
    for (mode, scenario) in [
        ("identifier", "scratchpad::own_path_wins"),
        ("shared", "scratchpad::own_path_wins"),
        ("slash", "scratchpad::own_path_wins"),
        (
            "unstable",
            "scratchpad::the_kind_survives_the_disk_round_trip",
        ),
        ("malformed", "scratchpad::own_path_wins"),
        ("wrong", "scratchpad::own_path_wins"),
    ] {
        let (code, text) = run(mode, scenario);
        assert_eq!(code, 1, "{text}");
        table.push_str(&text);
        table.push('\n');
    }
    insta::assert_snapshot!("bad_names_table", table);
}

#[test]
fn the_same_adapter_with_honest_names_passes_so_each_failure_is_the_names_alone() {
    let (code, text) = run(
        "honest",
        "scratchpad::the_kind_survives_the_disk_round_trip",
    );
    assert_eq!(code, 0, "{text}");
}

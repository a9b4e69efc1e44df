//! The part of a scenario file every profile shares: the text decoded, comments and blank lines
//! dropped, the header read and checked, and the step lines handed to the profile's own
//! vocabulary with their line numbers. One copy, so every profile's files say the same things
//! the same way and fail the same way (`file:line: what was expected`).
//!
//! ```text
//! scenario: <the sentence this file proves>    first, once
//! profile: <name>                              once, before the first step
//! rules: SP-4.2, SP-4.3                        once, before the first step; ids SPEC.md defines,
//!                                              of this profile's part
//! kills: <mutant id>, ...                      optional, once: mutants this scenario must kill
//! needs: <capability>, ...                     optional, once: capabilities it needs
//! variant: <variant>=<choice>, ...             optional, once: the scenario is about these
//!                                              choices (SPEC.md's variants)
//! knob <name> <value>                          optional, any number, each name once
//! [when <variant>=<choice>[|<choice>]:] <step> one per line, in the profile's vocabulary;
//!                                              a guarded step is played only for an
//!                                              implementation taking one of the choices
//! ```
//!
//! A line whose first non-blank character is `#` is a comment. Every header line comes before
//! the first step.

use tidemark_sim::clip::clip;

use crate::variants::{self, Guards, Variant, When};

/// What a profile's header may name: its rule ids' prefix, its mutants, its capabilities and
/// its variants.
/// The knobs' names and values are the profile's to check (their units differ), but each
/// name may be set once whatever the profile.
pub struct HeaderVocabulary {
    pub profile: &'static str,
    /// `SP-` for the scratchpad: the part of SPEC.md its scenarios cite.
    pub rule_prefix: &'static str,
    /// Other parts its scenarios may cite: the scoped profile's `SF-` (the people's files API
    /// over the same scopes).
    pub also_cites: &'static [&'static str],
    pub mutants: fn() -> Vec<&'static str>,
    pub capabilities: &'static [&'static str],
    /// The decisions SPEC.md leaves to an implementation in this profile's part.
    pub variants: &'static [Variant],
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub profile: String,
    pub rules: Vec<String>,
    pub kills: Vec<String>,
    pub needs: Vec<String>,
    /// The `needs:` line, for a skip reason (0 when there is none).
    pub needs_line: usize,
    pub knobs: Vec<KnobLine>,
    /// The `variant:` line and the steps' `when` guards.
    pub guards: Guards,
}

/// `knob <name> <value>`, the value as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobLine {
    pub line: usize,
    pub name: String,
    pub value: String,
}

/// One step, trimmed, for the profile to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepLine<'a> {
    pub line: usize,
    pub text: &'a str,
}

/// A problem at a line (1-based; 0 for the file as a whole).
pub type LineError = (usize, String);

/// A scenario file's text: read (bounded, never through a symlink: `load::read_bounded`), then
/// checked to be UTF-8. An error is the line it is at (0 for a file that cannot be read) and
/// what was wrong, for the profile's `file:line:` error.
pub fn read_text(path: &std::path::Path) -> Result<String, LineError> {
    let bytes = super::load::read_bounded(path).map_err(|m| (0, m))?;
    utf8_text(&bytes).map(str::to_owned)
}

/// The file as text, or the line holding its first byte that is not UTF-8 (1-based).
pub fn utf8_text(bytes: &[u8]) -> Result<&str, LineError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        let line = bytes[..valid].iter().filter(|&&b| b == b'\n').count() + 1;
        (
            line,
            format!(
                "the file is not UTF-8: byte 0x{:02x} at offset {valid} (write other bytes as \\xNN inside a quoted string)",
                bytes[valid]
            ),
        )
    })
}

/// The error for a file with a header and no step, once its knobs have been checked.
pub fn require_steps(text: &str, steps: &[StepLine]) -> Result<(), LineError> {
    if steps.is_empty() {
        return Err((
            text.lines().count().max(1),
            "expected at least one step".into(),
        ));
    }
    Ok(())
}

/// The profile a file's first `profile:` line names, if any.
pub fn profile_named(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("profile:"))
        .map(str::trim)
}

/// Reads the header of `text` and returns it with the step lines. `defined` says whether
/// SPEC.md defines a rule id.
pub fn split<'a>(
    text: &'a str,
    vocabulary: &HeaderVocabulary,
    defined: &dyn Fn(&str) -> bool,
) -> Result<(Header, Vec<StepLine<'a>>), LineError> {
    let mut name: Option<String> = None;
    let mut profile: Option<String> = None;
    let mut rules: Option<Vec<String>> = None;
    let mut kills: Option<Vec<String>> = None;
    let mut needs: Option<(usize, Vec<String>)> = None;
    let mut guards = Guards::default();
    let mut knobs: Vec<KnobLine> = Vec::new();
    let mut steps: Vec<StepLine<'a>> = Vec::new();

    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let header_word = [
            "scenario:",
            "profile:",
            "rules:",
            "kills:",
            "needs:",
            "variant:",
        ]
        .into_iter()
        .find(|w| l.starts_with(w))
        .or_else(|| (l == "knob" || l.starts_with("knob ")).then_some("knob"));
        let Some(word) = header_word else {
            if name.is_none() {
                return Err((
                    line,
                    format!(
                        "expected 'scenario: <sentence>' as the first line, found {:?}",
                        clip(l)
                    ),
                ));
            }
            if profile.is_none() {
                return Err((line, "expected 'profile:' before the first step".into()));
            }
            if rules.is_none() {
                return Err((line, "expected 'rules:' before the first step".into()));
            }
            let (when, text) =
                variants::split_guard(l, vocabulary.variants).map_err(|m| (line, m))?;
            if let Some(when) = when {
                guards.steps.insert(line, when);
            }
            steps.push(StepLine { line, text });
            continue;
        };
        if !steps.is_empty() {
            return Err((
                line,
                format!("a '{word}' line after the first step; the header comes first"),
            ));
        }
        let value = l[word.len()..].trim();
        if word != "scenario:" && name.is_none() {
            return Err((
                line,
                format!(
                    "expected 'scenario: <sentence>' as the first line, found {:?}",
                    clip(l)
                ),
            ));
        }
        match word {
            "scenario:" => {
                if name.is_some() {
                    return Err((
                        line,
                        "a second 'scenario:' line; one scenario per file".into(),
                    ));
                }
                if value.is_empty() {
                    return Err((
                        line,
                        "expected a sentence after 'scenario:' stating the decision proved".into(),
                    ));
                }
                if value.contains("=>") {
                    return Err((
                        line,
                        "the sentence after 'scenario:' contains '=>', which would become part of \
                         its name; an expectation belongs on a step line"
                            .into(),
                    ));
                }
                name = Some(value.to_string());
            }
            "profile:" => {
                if profile.is_some() {
                    return Err((line, "a second 'profile:' line".into()));
                }
                if value != vocabulary.profile {
                    return Err((
                        line,
                        format!(
                            "unknown profile {:?}; expected '{}'",
                            clip(value),
                            vocabulary.profile
                        ),
                    ));
                }
                profile = Some(value.to_string());
            }
            "rules:" => {
                if rules.is_some() {
                    return Err((
                        line,
                        "a second 'rules:' line; cite every rule on one line".into(),
                    ));
                }
                let ids = rule_ids(value, vocabulary, defined).map_err(|m| (line, m))?;
                rules = Some(ids);
            }
            "kills:" => {
                if kills.is_some() {
                    return Err((
                        line,
                        "a second 'kills:' line; name every mutant on one line".into(),
                    ));
                }
                let known = (vocabulary.mutants)();
                let ids =
                    list(value, "mutant", &known, vocabulary.profile).map_err(|m| (line, m))?;
                kills = Some(ids);
            }
            "needs:" => {
                if needs.is_some() {
                    return Err((
                        line,
                        "a second 'needs:' line; name every capability on one".into(),
                    ));
                }
                let names = list(
                    value,
                    "capability",
                    vocabulary.capabilities,
                    vocabulary.profile,
                )
                .map_err(|m| (line, m))?;
                needs = Some((line, names));
            }
            "variant:" => {
                if guards.scenario.is_some() {
                    return Err((
                        line,
                        "a second 'variant:' line; name every choice on one".into(),
                    ));
                }
                let mut whens: Vec<When> = Vec::new();
                for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let w = When::parse(item, vocabulary.variants).map_err(|m| (line, m))?;
                    if whens.iter().any(|o| o.variant == w.variant) {
                        return Err((line, format!("variant {} is named twice", w.variant)));
                    }
                    whens.push(w);
                }
                if whens.is_empty() {
                    return Err((
                        line,
                        "expected '<variant>=<choice>' after 'variant:'".into(),
                    ));
                }
                guards.scenario = Some((line, whens));
            }
            _ => {
                let mut parts = value.split_whitespace();
                let (Some(k), Some(v), None) = (parts.next(), parts.next(), parts.next()) else {
                    return Err((
                        line,
                        format!("expected 'knob <name> <value>', found {:?}", clip(l)),
                    ));
                };
                if knobs.iter().any(|kl| kl.name == k) {
                    return Err((line, format!("knob {k} is set twice")));
                }
                knobs.push(KnobLine {
                    line,
                    name: k.to_string(),
                    value: v.to_string(),
                });
            }
        }
    }

    let name = name.ok_or_else(|| {
        (
            1,
            "expected 'scenario: <sentence>'; the file is empty".to_string(),
        )
    })?;
    let profile = profile.ok_or_else(|| (1, "expected a 'profile:' line".to_string()))?;
    let rules = rules.ok_or_else(|| (1, "expected a 'rules:' line citing SPEC.md".to_string()))?;
    let (needs_line, needs) = needs.unwrap_or_default();
    Ok((
        Header {
            name,
            profile,
            rules,
            kills: kills.unwrap_or_default(),
            needs,
            needs_line,
            knobs,
            guards,
        },
        steps,
    ))
}

fn rule_ids(
    value: &str,
    vocabulary: &HeaderVocabulary,
    defined: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, String> {
    let prefix = vocabulary.rule_prefix;
    let mut ids = Vec::new();
    for id in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !tidemark_sim::spec_rules::is_rule_id(id) {
            return Err(format!(
                "{:?} is not a rule id; expected the form {prefix}1.2",
                clip(id)
            ));
        }
        if !id.starts_with(prefix) && !vocabulary.also_cites.iter().any(|p| id.starts_with(p)) {
            return Err(format!(
                "rule {id} belongs to another profile; a {} scenario cites {prefix}* rules",
                vocabulary.profile
            ));
        }
        if !defined(id) {
            return Err(format!("rule {id} is not defined in SPEC.md"));
        }
        ids.push(id.to_string());
    }
    if ids.is_empty() {
        return Err("expected at least one rule id after 'rules:'".into());
    }
    Ok(ids)
}

/// A comma-separated list of names, each one of `known`.
fn list(value: &str, what: &str, known: &[&str], profile: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for n in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !known.contains(&n) {
            return Err(format!(
                "unknown {profile} {what} {:?}; expected one of {}",
                clip(n),
                known.join(", ")
            ));
        }
        out.push(n.to_string());
    }
    if out.is_empty() {
        return Err(format!("expected at least one {what}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: HeaderVocabulary = HeaderVocabulary {
        profile: "demo",
        rule_prefix: "SP-",
        also_cites: &[],
        mutants: || vec!["eager-sweep"],
        capabilities: &["binary_content"],
        variants: &[],
    };

    fn defined(id: &str) -> bool {
        id == "SP-1.1"
    }

    #[test]
    fn the_header_is_read_and_the_steps_keep_their_lines() {
        let text = "scenario: s\n# note\nprofile: demo\nrules: SP-1.1\nkills: eager-sweep\nknob cap 1B\n\nadvance 1d\n";
        let (h, steps) = split(text, &V, &defined).unwrap();
        assert_eq!(h.name, "s");
        assert_eq!(h.kills, ["eager-sweep"]);
        assert_eq!(h.knobs[0].line, 6);
        assert_eq!(
            steps,
            [StepLine {
                line: 8,
                text: "advance 1d"
            }]
        );
    }

    const VARIANTS: &[Variant] = &[Variant {
        name: "ties",
        rule: "SP-1.1",
        choices: &["by_path", "any"],
    }];

    const WITH_VARIANTS: HeaderVocabulary = HeaderVocabulary {
        profile: "demo",
        rule_prefix: "SP-",
        also_cites: &[],
        mutants: || vec![],
        capabilities: &[],
        variants: VARIANTS,
    };

    #[test]
    fn a_guard_is_peeled_from_its_step_and_kept_by_line() {
        let text = "scenario: s\nprofile: demo\nrules: SP-1.1\nvariant: ties=by_path\nadvance 1d\nwhen ties=any: advance 2d\n";
        let (h, steps) = split(text, &WITH_VARIANTS, &defined).unwrap();
        assert_eq!(
            steps,
            [
                StepLine {
                    line: 5,
                    text: "advance 1d"
                },
                StepLine {
                    line: 6,
                    text: "advance 2d"
                }
            ]
        );
        assert_eq!(h.guards.steps[&6].to_string(), "ties=any");
        let (line, whens) = h.guards.scenario.as_ref().unwrap();
        assert_eq!((*line, whens[0].to_string()), (4, "ties=by_path".into()));
    }

    #[test]
    fn a_guard_naming_an_unknown_variant_or_choice_or_every_choice_is_an_error_at_its_line() {
        for (guard, says) in [
            (
                "when nope=any: advance 1d",
                "unknown variant \"nope\"; expected one of ties",
            ),
            ("when ties=some: advance 1d", "has no choice \"some\""),
            (
                "when ties=any|by_path: advance 1d",
                "holds for every implementation",
            ),
            ("when ties=any advance 1d", "a colon after the guard"),
            ("when ties=any:", "expected a step after"),
        ] {
            let text = format!("scenario: s\nprofile: demo\nrules: SP-1.1\n{guard}\n");
            let (line, m) = split(&text, &WITH_VARIANTS, &defined).unwrap_err();
            assert_eq!(line, 4, "{guard}");
            assert!(m.contains(says), "{guard}: {m}");
        }
    }

    #[test]
    fn an_expectation_in_the_scenario_sentence_is_an_error() {
        let text =
            "scenario: the kind survives => swept []\nprofile: demo\nrules: SP-1.1\nadvance 1d\n";
        let (line, m) = split(text, &V, &defined).unwrap_err();
        assert_eq!(line, 1);
        assert!(m.contains("'=>'"), "{m}");
    }

    #[test]
    fn a_header_line_after_a_step_is_an_error_at_its_line() {
        let text = "scenario: s\nprofile: demo\nrules: SP-1.1\nadvance 1d\nknob cap 1B\n";
        assert_eq!(split(text, &V, &defined).unwrap_err().0, 5);
    }

    #[test]
    fn another_profiles_rule_and_an_unknown_mutant_are_errors() {
        let text = "scenario: s\nprofile: demo\nrules: SC-1.1\nadvance 1d\n";
        let (line, m) = split(text, &V, &defined).unwrap_err();
        assert_eq!(line, 3);
        assert!(m.contains("belongs to another profile"), "{m}");
        let text = "scenario: s\nprofile: demo\nrules: SP-1.1\nkills: nope\nadvance 1d\n";
        let (line, m) = split(text, &V, &defined).unwrap_err();
        assert_eq!(line, 4);
        assert!(m.contains("eager-sweep"), "{m}");
    }
}

//! Variants: the decisions SPEC.md leaves to each implementation (SPEC.md, "How a decision is
//! made", and its table of variants). A decision that protects a user is a rule; one where
//! reasonable implementations differ and no user is hurt is a variant with named choices, the
//! first of which is the default (the reference's). An implementation declares the choices it
//! takes in `init_ok`'s `variants` (PROTOCOL.md); every variant it does not name takes its
//! default. Scenarios follow the declared choice: a step may be guarded
//! (`when read_through_a_file=not_a_directory: ...`), and a scenario about one choice says so in
//! its header (`variant: eviction_ties=listing_path`). The models follow it too.
//!
//! Written once for every profile: each profile lists its variants in its
//! [`HeaderVocabulary`](crate::scenario::header::HeaderVocabulary), and variant names are unique
//! across profiles, so one flat `variants` object in `init_ok` serves every profile.

use std::collections::BTreeMap;
use std::fmt;

use tidemark_sim::clip::clip;

/// One decision an implementation may take either way.
#[derive(Debug, PartialEq, Eq)]
pub struct Variant {
    /// The name an implementation declares it by (`read_through_a_file`).
    pub name: &'static str,
    /// The SPEC.md rule that names the choices.
    pub rule: &'static str,
    /// The permitted choices, the default (the reference's) first.
    pub choices: &'static [&'static str],
}

impl Variant {
    pub fn default_choice(&self) -> &'static str {
        self.choices[0]
    }

    fn choice_named(&self, choice: &str) -> Result<&'static str, String> {
        self.choices
            .iter()
            .copied()
            .find(|c| *c == choice)
            .ok_or_else(|| {
                format!(
                    "variant {} ({}) has no choice {:?}; its choices are {}",
                    self.name,
                    self.rule,
                    clip(choice),
                    self.choices.join(", ")
                )
            })
    }
}

/// Every variant of every registered profile.
pub fn all() -> Vec<&'static Variant> {
    crate::profiles::PROFILES
        .iter()
        .flat_map(|p| p.vocabulary().variants.iter())
        .collect()
}

/// The variant called `name`, in any profile.
pub fn named(name: &str) -> Option<&'static Variant> {
    all().into_iter().find(|v| v.name == name)
}

/// A profile's variants beside the reference's way of taking each non-default choice (its
/// `Alternative`): how the harness configures the reference as an implementation declaring
/// them, and what `cargo test` plays the suite under. Written once; each profile gives its
/// tables.
pub struct Alternatives<A: 'static> {
    /// The profile, for the message when a name is not one of its variants.
    pub profile: &'static str,
    /// Every variant of the profile, in SPEC.md's order.
    pub variants: &'static [Variant],
    /// `(variant, non-default choice, the reference's alternative)`, one for each choice the
    /// reference can take.
    pub alternatives: &'static [(&'static str, &'static str, A)],
}

impl<A: Copy> Alternatives<A> {
    /// The variant called `name` (one of the profile's).
    pub fn variant(&self, name: &str) -> &'static Variant {
        self.variants
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("no {} variant {name}", self.profile))
    }

    /// The alternatives that behave as `declared` says: what the reference is configured
    /// with, and what the model follows.
    pub fn taken<'a>(&'a self, declared: &'a Declared) -> impl Iterator<Item = A> + 'a {
        self.alternatives
            .iter()
            .filter(|(name, choice, _)| declared.takes(self.variant(name), choice))
            .map(|(_, _, a)| *a)
    }

    /// Every declaration of one non-default choice the reference can take: what `cargo test`
    /// plays the suite under, one at a time.
    pub fn each_alternative(&self) -> Vec<Declared> {
        self.alternatives
            .iter()
            .map(|(name, choice, _)| Declared::defaults().with(self.variant(name), choice))
            .collect()
    }

    /// Whether `declared` takes the choice `variant_name=choice` of this profile.
    pub fn takes(&self, declared: &Declared, variant_name: &str, choice: &str) -> bool {
        declared.takes(self.variant(variant_name), choice)
    }

    /// Every alternative names a non-default choice of one of the profile's variants, each at
    /// most once; and the number of non-default choices the reference cannot take.
    pub fn untaken_choices(&self) -> Result<usize, String> {
        let mut seen = std::collections::BTreeSet::new();
        for (name, choice, _) in self.alternatives {
            if !self.variant(name).choices[1..].contains(choice) {
                return Err(format!("{name}={choice} is not a non-default choice"));
            }
            if !seen.insert((*name, *choice)) {
                return Err(format!("{name}={choice} is listed twice"));
            }
        }
        let choices: usize = self.variants.iter().map(|v| v.choices.len() - 1).sum();
        Ok(choices - self.alternatives.len())
    }
}

/// The choices an implementation takes: what it declared, and the default of every variant it
/// did not name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    /// Only the declared choices that differ from their default, so two declarations that mean
    /// the same compare equal.
    differs: BTreeMap<&'static str, &'static str>,
}

impl Declared {
    /// Every variant at its default: the reference as it ships.
    pub fn defaults() -> Declared {
        Declared::default()
    }

    /// Reads an implementation's declaration (`init_ok`'s `variants`): each name must be a
    /// variant of some profile and each choice one of its choices, or the handshake fails
    /// naming the mistake.
    pub fn read(raw: &BTreeMap<String, String>) -> Result<Declared, String> {
        let mut out = Declared::default();
        for (name, choice) in raw {
            let variant = named(name).ok_or_else(|| {
                format!(
                    "init_ok declares an unknown variant {:?}; the variants are {}",
                    clip(name),
                    all().iter().map(|v| v.name).collect::<Vec<_>>().join(", ")
                )
            })?;
            let choice = variant.choice_named(choice)?;
            out = out.with(variant, choice);
        }
        Ok(out)
    }

    /// These choices with `variant` taking `choice` (which must be one of its choices).
    pub fn with(mut self, variant: &'static Variant, choice: &str) -> Declared {
        let choice = variant
            .choice_named(choice)
            .unwrap_or_else(|e| panic!("{e}"));
        if choice == variant.default_choice() {
            self.differs.remove(variant.name);
        } else {
            self.differs.insert(variant.name, choice);
        }
        self
    }

    /// The choice taken for `variant`.
    pub fn choice(&self, variant: &Variant) -> &'static str {
        self.differs
            .get(variant.name)
            .copied()
            .unwrap_or(variant.default_choice())
    }

    /// Whether `variant` takes `choice`.
    pub fn takes(&self, variant: &Variant, choice: &str) -> bool {
        self.choice(variant) == choice
    }

    /// The choices that are not defaults, as `name=choice` in name order (empty: all defaults).
    pub fn non_defaults(&self) -> Vec<String> {
        self.differs
            .iter()
            .map(|(n, c)| format!("{n}={c}"))
            .collect()
    }

    /// As `init_ok` carries it: the non-default choices by name.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.differs
            .iter()
            .map(|(n, c)| (n.to_string(), c.to_string()))
            .collect()
    }
}

impl fmt::Display for Declared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nd = self.non_defaults();
        if nd.is_empty() {
            f.write_str("every variant at its default")
        } else {
            f.write_str(&nd.join(", "))
        }
    }
}

/// Reads `--variant <name>=<choice>` options (each one variant of any profile) into the
/// choices the in-process reference takes.
pub fn from_options(options: &[String]) -> Result<Declared, String> {
    let mut raw = BTreeMap::new();
    for o in options {
        let (name, choice) = o
            .split_once('=')
            .ok_or_else(|| format!("--variant takes <name>=<choice>, not {:?}", clip(o)))?;
        if raw.insert(name.to_string(), choice.to_string()).is_some() {
            return Err(format!("--variant {name} is given twice"));
        }
    }
    Declared::read(&raw).map_err(|e| e.replacen("init_ok declares", "--variant names", 1))
}

/// A guard: `<variant>=<choice>[|<choice>...]`, true when the implementation takes one of the
/// choices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct When {
    pub variant: &'static str,
    pub choices: Vec<&'static str>,
}

impl When {
    /// Reads `name=choice|choice` against the variants `known` (a profile's).
    pub fn parse(text: &str, known: &'static [Variant]) -> Result<When, String> {
        let Some((name, choices)) = text.split_once('=') else {
            return Err(format!(
                "expected '<variant>=<choice>', found {:?}",
                clip(text)
            ));
        };
        let name = name.trim();
        let variant = known.iter().find(|v| v.name == name).ok_or_else(|| {
            if known.is_empty() {
                format!("unknown variant {:?}; this profile has none", clip(name))
            } else {
                format!(
                    "unknown variant {:?}; expected one of {}",
                    clip(name),
                    known.iter().map(|v| v.name).collect::<Vec<_>>().join(", ")
                )
            }
        })?;
        let mut out = Vec::new();
        for c in choices.split('|').map(str::trim) {
            let c = variant.choice_named(c)?;
            if out.contains(&c) {
                return Err(format!("choice {c} of {name} is named twice"));
            }
            out.push(c);
        }
        if out.len() == variant.choices.len() {
            return Err(format!(
                "a guard naming every choice of {name} holds for every implementation; drop it"
            ));
        }
        Ok(When {
            variant: variant.name,
            choices: out,
        })
    }

    pub fn holds(&self, declared: &Declared) -> bool {
        let variant = named(self.variant).expect("a guard names a registered variant");
        self.choices.contains(&declared.choice(variant))
    }
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.variant, self.choices.join("|"))
    }
}

/// A scenario's guards: its header's `variant:` line (the scenario is about those choices) and
/// each guarded step's `when` (by line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guards {
    /// The `variant:` line and what it names.
    pub scenario: Option<(usize, Vec<When>)>,
    pub steps: BTreeMap<usize, When>,
}

impl Guards {
    /// Why the scenario does not apply to an implementation taking `declared`, if it does not.
    pub fn skip_reason(&self, declared: &Declared) -> Option<String> {
        let (line, whens) = self.scenario.as_ref()?;
        let unmet = whens.iter().find(|w| !w.holds(declared))?;
        let variant = named(unmet.variant).expect("registered");
        Some(format!(
            "line {line}: the scenario is about {unmet}; the implementation takes {}={}",
            unmet.variant,
            declared.choice(variant)
        ))
    }

    /// Whether the step at `line` is played for an implementation taking `declared`.
    pub fn keeps(&self, line: usize, declared: &Declared) -> bool {
        self.steps.get(&line).is_none_or(|w| w.holds(declared))
    }

    /// The variants the guards name, in name order.
    pub fn variants(&self) -> Vec<&'static Variant> {
        let mut names: Vec<&'static str> = self
            .steps
            .values()
            .chain(self.scenario.iter().flat_map(|(_, w)| w.iter()))
            .map(|w| w.variant)
            .collect();
        names.sort();
        names.dedup();
        names.into_iter().filter_map(named).collect()
    }

    /// Every combination of choices of the variants the guards name, each as declared choices
    /// that apply to the scenario: what the loader checks the scenario under (an absence must be
    /// anchored whichever steps an implementation plays).
    pub fn assignments(&self) -> Vec<Declared> {
        let mut out = vec![Declared::defaults()];
        for v in self.variants() {
            out = out
                .into_iter()
                .flat_map(|d| v.choices.iter().map(move |c| d.clone().with(v, c)))
                .collect();
        }
        out.retain(|d| self.skip_reason(d).is_none());
        out
    }
}

/// Peels a step's guard: `when <variant>=<choice>: <step>` is the guard and the step; a line
/// without one is the step alone.
pub fn split_guard<'a>(
    text: &'a str,
    known: &'static [Variant],
) -> Result<(Option<When>, &'a str), String> {
    let Some(rest) = text.strip_prefix("when ") else {
        return Ok((None, text));
    };
    let Some((guard, step)) = rest.split_once(':') else {
        return Err(
            "expected 'when <variant>=<choice>: <step>' (a colon after the guard)".to_string(),
        );
    };
    let when = When::parse(guard.trim(), known)?;
    let step = step.trim();
    if step.is_empty() {
        return Err(format!("expected a step after 'when {when}:'"));
    }
    Ok((Some(when), step))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_are_unique_across_profiles_and_each_has_two_choices_at_least() {
        let all = all();
        let mut names: Vec<_> = all.iter().map(|v| v.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a variant name is used twice");
        for v in all {
            assert!(v.choices.len() >= 2, "{} has one choice", v.name);
            assert!(
                tidemark_sim::spec_rules::is_rule_id(v.rule),
                "{} cites {:?}",
                v.name,
                v.rule
            );
        }
    }
}

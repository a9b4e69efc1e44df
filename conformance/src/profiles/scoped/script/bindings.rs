//! Names a scenario gives to paths only the implementation knows. SPEC SL-7.1 leaves a tool
//! result's overflow path to the implementation, yet a scenario must read that file, write over
//! it as a guest would, and tell two overflows apart: `=> overflowed as OUT` binds `OUT` to the
//! path the step answered, and a later step may write `OUT` wherever it writes a guest path.
//!
//! A name is capital letters, digits and `_`, a capital first, so it never reads as a guest
//! path (which starts with its scope, in lower case). Each name is bound once, by a step above
//! its uses (the loader checks both). It is resolved as the step is played, by every runner
//! (in process, through a program, on either tier), in: the path of a write, read, text read,
//! delete or promotion, a listing's prefix, and the expectation `written NAME` or the items of
//! a guest listing's expectation. A path the scenario spells out is never touched.

use std::collections::BTreeMap;

use super::{Action, Expect, Step};
use crate::profiles::scoped::contract::{ScopedOp, ScopedOutcome};

/// The paths the scenario bound so far, by name.
#[derive(Clone, Debug, Default)]
pub struct Bindings(BTreeMap<String, String>);

impl Bindings {
    /// `step` as it is played: each path that is exactly a bound name replaced by its path.
    pub fn resolve(&self, step: &Step) -> Step {
        let mut step = step.clone();
        if self.0.is_empty() {
            return step;
        }
        for p in paths_mut(&mut step) {
            if let Some(bound) = self.0.get(p.as_str()) {
                *p = bound.clone();
            }
        }
        step
    }

    /// Binds the name `step`'s expectation gives (`overflowed as NAME`) to the path `got`
    /// answered; any other step binds nothing.
    pub fn observe(&mut self, step: &Step, got: &ScopedOutcome) {
        if let (Expect::Overflowed(Some(name)), ScopedOutcome::Written { path }) =
            (&step.expect, got)
        {
            self.0.insert(name.clone(), path.clone());
        }
    }
}

/// A name `=> overflowed as NAME` may bind.
pub fn binding_name(w: &str) -> Result<String, String> {
    let ok = w.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && w.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(w.to_string())
    } else {
        Err(format!(
            "a bound path is named with capital letters, digits and _, a capital first, not {:?}",
            tidemark_sim::clip::clip(w)
        ))
    }
}

/// The loader's checks of a scenario's names: each bound once, and never used (as a path
/// [`Bindings::resolve`] would replace) on a step above its binding, where it would be played
/// as the literal path it spells. `Err((line, message))`.
pub fn check(steps: &mut [Step]) -> Result<(), (usize, String)> {
    let mut bound: BTreeMap<String, usize> = BTreeMap::new();
    for s in steps.iter() {
        if let Expect::Overflowed(Some(name)) = &s.expect {
            if let Some(first) = bound.insert(name.clone(), s.line) {
                return Err((
                    s.line,
                    format!("{name} is bound twice (first on line {first})"),
                ));
            }
        }
    }
    for s in steps.iter_mut() {
        let line = s.line;
        for p in paths_mut(s) {
            if let Some(&at) = bound.get(p.as_str()) {
                if at >= line {
                    return Err((line, format!("{p} is used before line {at} binds it")));
                }
            }
        }
    }
    Ok(())
}

/// Every path of a step a name may stand for.
fn paths_mut(step: &mut Step) -> Vec<&mut String> {
    let mut out: Vec<&mut String> = Vec::new();
    let mut guest_listing = false;
    if let Action::Op(op) = &mut step.action {
        match op {
            ScopedOp::Write { path, .. }
            | ScopedOp::WriteDuringSweep { path, .. }
            | ScopedOp::Read { path, .. }
            | ScopedOp::ReadText { path, .. }
            | ScopedOp::Delete { path, .. } => out.push(path),
            ScopedOp::List { prefix, .. } => {
                guest_listing = true;
                out.extend(prefix.as_mut());
            }
            ScopedOp::Promote { from, to, .. } => {
                out.push(from);
                out.push(to);
            }
            _ => {}
        }
    }
    match &mut step.expect {
        Expect::Written(p) => out.push(p),
        Expect::List(items) | Expect::Ordered(items) if guest_listing => out.extend(items),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::scoped::script::parse;
    use std::path::Path;

    const HEAD: &str = "scenario: s\nprofile: scoped\nrules: SL-7.1\n";

    #[test]
    fn a_bound_name_is_resolved_in_paths_and_expectations_and_nothing_else() {
        let s = parse(
            Path::new("x.tdm"),
            &format!(
                "{HEAD}w1/a1/s1 tool output \"long\" => overflowed as OUT\n\
                 w1/a1/s1 write OUT \"edit\" => written OUT\n\
                 w1/a1/s1 list session/ => [OUT, session/OUT]\n\
                 w1/a1/s1 write session/OUT \"x\" => written session/OUT\n\
                 bucket OUT => [OUT]\n"
            ),
        )
        .unwrap();
        assert_eq!(s.steps[0].expect, Expect::Overflowed(Some("OUT".into())));
        let mut b = Bindings::default();
        // Unbound, a name is played as written.
        let unbound = b.resolve(&s.steps[1]);
        assert_eq!(unbound.expect, Expect::Written("OUT".into()));
        b.observe(
            &s.steps[0],
            &ScopedOutcome::Written {
                path: "session/tool-output/ab.txt".into(),
            },
        );
        let write = b.resolve(&s.steps[1]);
        let Action::Op(ScopedOp::Write { path, .. }) = &write.action else {
            panic!("{write:?}")
        };
        assert_eq!(path, "session/tool-output/ab.txt");
        assert_eq!(
            write.expect,
            Expect::Written("session/tool-output/ab.txt".into())
        );
        assert_eq!(
            b.resolve(&s.steps[2]).expect,
            Expect::List(vec![
                "session/tool-output/ab.txt".into(),
                "session/OUT".into()
            ])
        );
        // A path that merely contains the name, and a bucket listing, are left alone.
        let literal = b.resolve(&s.steps[3]);
        assert_eq!(literal.expect, Expect::Written("session/OUT".into()));
        let bucket = b.resolve(&s.steps[4]);
        assert_eq!(bucket.expect, Expect::List(vec!["OUT".into()]));
    }

    #[test]
    fn a_name_bound_twice_used_before_its_binding_or_misspelled_is_a_load_error_at_its_line() {
        for (body, line) in [
            (
                "w1/a1/s1 tool output \"a\" => overflowed as OUT\n\
                 w1/a1/s1 tool output \"b\" => overflowed as OUT\n",
                5,
            ),
            (
                "w1/a1/s1 read OUT => \"a\"\n\
                 w1/a1/s1 tool output \"a\" => overflowed as OUT\n",
                4,
            ),
            ("w1/a1/s1 tool output \"a\" => overflowed as out\n", 4),
            ("w1/a1/s1 tool output \"a\" => overflowed as\n", 4),
        ] {
            let e = parse(Path::new("x.tdm"), &format!("{HEAD}{body}")).unwrap_err();
            assert_eq!(e.line, line, "{body}: {e}");
        }
    }
}

//! SC-1.4's text area, spelled as the implementation spells it. Where extracted text lives (under
//! the file's own scope prefix, refused to guests, never listed) is a rule; what the segment is
//! called is the implementation's own. It declares the spelling in `init_ok` (`text_segment`,
//! PROTOCOL.md); the scenarios spell the reference's, `.tidemark-text`, and the harness reads
//! them with the declared one: every path segment `.tidemark-text` in a step's paths and in its
//! expected paths and keys becomes the declared segment, and a filler (a path segment starting
//! with 100 or more `k`s, as the key-limit scenarios write) is shortened or lengthened by the
//! difference in length, so a key the scenario puts at the limit of SC-2.3 (the text key
//! counted) is at the limit for the implementation's text key too.

use tidemark_reference::scoped::layout::TEXT_DIR;

use super::contract::PeopleCall;
use super::script::{Action, Expect, Script, Step};
use super::ScopedOp;
use crate::protocol::InitOk;

/// The spelling the scenarios use, and the reference's.
pub const DEFAULT: &str = TEXT_DIR;

/// The shortest run of `k`s that is a filler rather than a name.
const FILLER_RUN: usize = 100;

/// The text segment a program declares in its `init_ok`: `None` when it declares none (the
/// reference's spelling), an error naming the problem when the declaration is not a segment a
/// guest path could spell (so that SC-1.4's refusal of it can be asked of the program).
pub fn declared(claims: &InitOk) -> Result<Option<String>, String> {
    let Some(segment) = claims.declared::<String>("text_segment")? else {
        return Ok(None);
    };
    check(&segment)
        .map(|()| Some(segment.clone()))
        .map_err(|why| format!("text_segment {segment:?} {why}"))
}

/// Whether `segment` is one segment a guest path can spell, so a scenario can name it (and see
/// it refused): 1 to 255 bytes, not `.` or `..`, no `/`, `\`, control character, surrounding
/// whitespace or `%`, and not a run of the filler's `k`s.
pub fn check(segment: &str) -> Result<(), String> {
    if segment.is_empty() || segment.len() > 255 {
        return Err("is not 1 to 255 bytes".into());
    }
    if segment == "." || segment == ".." {
        return Err("is a dot segment".into());
    }
    if let Some(c) = segment
        .chars()
        .find(|c| matches!(c, '/' | '\\' | '%') || c.is_control())
    {
        return Err(format!(
            "holds {c:?}, which a guest path cannot carry in a name"
        ));
    }
    if segment.starts_with(char::is_whitespace) || segment.ends_with(char::is_whitespace) {
        return Err("begins or ends with whitespace".into());
    }
    if segment.chars().all(|c| {
        matches!(
            c,
            '.' | '\u{2024}' | '\u{2025}' | '\u{2026}' | '\u{FE52}' | '\u{FF0E}'
        )
    }) {
        return Err("is made only of dots, which SC-2.2 refuses as traversal".into());
    }
    let lower = segment.to_ascii_lowercase();
    if ["session", "agent", "workspace", "skill"]
        .iter()
        .any(|s| lower == *s || lower == format!("{s}s"))
    {
        return Err("is a scope's name, which a guest path reads as its scope (SC-2.4)".into());
    }
    if is_filler(segment) {
        return Err(format!(
            "starts with {FILLER_RUN} or more k's, which the scenarios use as filler"
        ));
    }
    Ok(())
}

fn is_filler(segment: &str) -> bool {
    segment.bytes().take_while(|b| *b == b'k').count() >= FILLER_RUN
}

/// `text` (a guest path, a prefix or a bucket key) read with `segment` for `.tidemark-text`.
fn respell(text: &str, segment: &str) -> String {
    // How many bytes longer the implementation's text key is than the scenario's: a filler
    // loses that many `k`s (or gains them).
    let longer = segment.len() as isize - DEFAULT.len() as isize;
    text.split('/')
        .map(|s| {
            if s == DEFAULT {
                segment.to_string()
            } else if is_filler(s) {
                let run = s.bytes().take_while(|b| *b == b'k').count() as isize;
                let run = (run - longer).max(1) as usize;
                format!("{}{}", "k".repeat(run), s.trim_start_matches('k'))
            } else {
                s.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl Script {
    /// The scenario as an implementation spelling its text area `segment` plays it (see the
    /// module's note); with the reference's spelling, the scenario itself.
    pub fn with_text_segment(&self, segment: &str) -> Script {
        if segment == DEFAULT {
            return self.clone();
        }
        Script {
            steps: self.steps.iter().map(|s| respelled(s, segment)).collect(),
            ..self.clone()
        }
    }
}

/// A person's request with `segment` for `.tidemark-text` in its URL, percent-encoded as a URL
/// segment (a declared segment may hold characters a URL cannot carry as they are).
fn respelled_call(call: PeopleCall, segment: &str) -> PeopleCall {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    let encoded = percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string();
    let r = |p: String| respell(&p, &encoded);
    match call {
        PeopleCall::Upload { url_path, content } => PeopleCall::Upload {
            url_path: r(url_path),
            content,
        },
        PeopleCall::Download { url_path } => PeopleCall::Download {
            url_path: r(url_path),
        },
        PeopleCall::Remove { url_path } => PeopleCall::Remove {
            url_path: r(url_path),
        },
        other => other,
    }
}

fn respelled(step: &Step, segment: &str) -> Step {
    let r = |t: &String| respell(t, segment);
    let action = match &step.action {
        Action::Op(op) => Action::Op(match op.clone() {
            ScopedOp::Write {
                turn,
                path,
                content,
            } => ScopedOp::Write {
                turn,
                path: r(&path),
                content,
            },
            ScopedOp::WriteDuringSweep {
                turn,
                path,
                content,
            } => ScopedOp::WriteDuringSweep {
                turn,
                path: r(&path),
                content,
            },
            ScopedOp::Read { turn, path } => ScopedOp::Read {
                turn,
                path: r(&path),
            },
            ScopedOp::ReadText { turn, path } => ScopedOp::ReadText {
                turn,
                path: r(&path),
            },
            ScopedOp::Delete { turn, path } => ScopedOp::Delete {
                turn,
                path: r(&path),
            },
            ScopedOp::List { turn, prefix } => ScopedOp::List {
                turn,
                prefix: prefix.as_ref().map(r),
            },
            ScopedOp::PublishSkill {
                workspace,
                name,
                files,
            } => ScopedOp::PublishSkill {
                workspace,
                name,
                files: files.into_iter().map(|(p, c)| (r(&p), c)).collect(),
            },
            ScopedOp::People {
                person,
                session,
                call,
            } => ScopedOp::People {
                person,
                session,
                call: respelled_call(call, segment),
            },
            ScopedOp::BucketKeys { prefix } => ScopedOp::BucketKeys { prefix: r(&prefix) },
            ScopedOp::RunAgeRule { prefix, days } => ScopedOp::RunAgeRule {
                prefix: r(&prefix),
                days,
            },
            other => other,
        }),
        advance => advance.clone(),
    };
    let expect = match &step.expect {
        Expect::Written(p) => Expect::Written(r(p)),
        Expect::List(items) => Expect::List(items.iter().map(r).collect()),
        Expect::Ordered(items) => Expect::Ordered(items.iter().map(r).collect()),
        other => other.clone(),
    };
    Step {
        line: step.line,
        text: step.text.clone(),
        action,
        expect,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_segment_and_a_filler_are_respelled_and_nothing_else() {
        assert_eq!(
            respell("sessions/w/a/s/.tidemark-text/notes.md", ".extracted-text"),
            "sessions/w/a/s/.extracted-text/notes.md"
        );
        // One byte longer: the filler loses one k, so the text key keeps its length.
        let filler = format!("session/{}.md", "k".repeat(120));
        let respelled = respell(&filler, ".extracted-text");
        assert_eq!(respelled, format!("session/{}.md", "k".repeat(119)));
        assert_eq!(
            respell(&filler, ".t"),
            format!("session/{}.md", "k".repeat(132))
        );
        // Names that only look alike are left alone.
        for name in [
            "session/.tidemark-texts/a",
            "session/x.tidemark-text",
            "session/kkk.md",
        ] {
            assert_eq!(respell(name, ".extracted-text"), name);
        }
    }

    #[test]
    fn a_declared_segment_must_be_one_segment_a_guest_path_can_spell() {
        assert!(check(".extracted-text").is_ok());
        assert!(check("_text").is_ok());
        for bad in [
            "",
            ".",
            "..",
            "...",
            "a/b",
            "a\\b",
            "%2e",
            " t",
            "t\n",
            "Session",
            "skills",
            &"k".repeat(100),
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        assert!(check(&"t".repeat(256)).is_err());
    }
}

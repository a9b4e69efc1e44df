//! The scenario grammar, one line at a time. Every error names the file, the line and what was
//! expected; an unknown operation, knob, reason or rule id is an error, never a skipped step.
//!
//! ```text
//! scenario: <sentence>                 required, first
//! profile: scratchpad                  required
//! rules: SP-1.2, SP-3.1                required, ids defined in SPEC.md
//! knob <name> <value>                  e.g. knob session_cap_bytes 1KiB; knob root unmounted|missing
//! advance <duration>                   e.g. advance 6d23h59m
//! stop | start
//! <caller> write <path> <content> => <expect>
//! <caller> read <path> => <expect>
//! <caller> list [<path>] => <expect>
//! <caller> remove <path> => <expect>
//! disk mkdir|write|symlink|exists|absent|no-path-contains ...
//! workdir empty
//! root absent                          with knob root missing: the root was not created
//! ```
//! A caller is `name@#channel/thread` (a thread) or `name@#channel` (a channel pairing). In a
//! path, a component `@name` is that requester's directory, and `<caller>` is that caller's
//! session directory, as the implementation names them (SP-1.2; see `names.rs`). Content is a
//! quoted string or a size (`600KiB`, `10B`). `advance` and `start` may state what their sweep
//! collects (`=> swept [<alice@#general/T1>]`). An absence check must be anchored (`anchor.rs`).

use super::{
    Action, Call, DiskAction, Expect, KnobUnit, Knobs, PathTemplate, Profile, Scenario, Step,
    SCRATCHPAD_KNOBS,
};
use crate::profiles::scratchpad::contract::{Caller, SCRATCHPAD_REASONS};
use crate::scenario::header::{self, HeaderVocabulary, StepLine};
use crate::scenario::lex::{tokenize, Token};
use crate::scenario::ScenarioFileError;
use crate::spec::RuleIndex;
use std::path::{Path, PathBuf};
use tidemark_reference::scratchpad::{CallContext, ScratchpadMutant};

/// The optional behaviours a scratchpad scenario may need (PROTOCOL.md, SP-1.2, SP-3.7).
pub const SCRATCHPAD_CAPABILITIES: &[&str] = &["sp12_digest", "binary_content"];
use tidemark_sim::clip::{clip, clip_field, MAX_SCENARIO_SPAN_MS};

const DAY_MS: i64 = 86_400_000;

/// The largest content a step may write: a size above it is a load error, not an allocation
/// (the protocol carries content in one line of at most 64 MiB, as JSON).
pub const MAX_CONTENT_BYTES: u64 = 16 << 20;

/// The largest value a byte-size or count knob may take: the largest integer every JSON reader
/// holds exactly (2^53 - 1).
pub const MAX_KNOB_VALUE: i64 = (1 << 53) - 1;

pub fn parse_file(path: &Path, rules: &RuleIndex) -> Result<Scenario, ScenarioFileError> {
    let text = header::read_text(path)
        .map_err(|(line, message)| ScenarioFileError::new(path, line, message))?;
    parse_str(path, &text, rules)
}

/// The scratchpad's header vocabulary: its part of SPEC.md, its mutants, its capabilities.
pub const VOCABULARY: HeaderVocabulary = HeaderVocabulary {
    profile: "scratchpad",
    rule_prefix: "SP-",
    also_cites: &[],
    mutants: || ScratchpadMutant::ALL.iter().map(|m| m.id()).collect(),
    capabilities: SCRATCHPAD_CAPABILITIES,
    variants: crate::profiles::scratchpad::variants::VARIANTS,
};

pub fn parse_str(
    file: &Path,
    text: &str,
    rules: &RuleIndex,
) -> Result<Scenario, ScenarioFileError> {
    // Quoted input is clipped where it is quoted; this bounds the whole message as well.
    let err =
        |line: usize, message: String| ScenarioFileError::new(file, line, clip_field(&message));
    let (header, lines) = header::split(text, &VOCABULARY, &|id| rules.contains(id))
        .map_err(|(line, m)| err(line, m))?;
    let mut knobs = Knobs::default();
    for k in &header.knobs {
        parse_knob(&k.name, &k.value, &mut knobs).map_err(|m| err(k.line, m))?;
    }
    header::require_steps(text, &lines).map_err(|(line, m)| err(line, m))?;
    let mut steps = Vec::new();
    // Simulated time since the epoch, checked at every advance so no sum can overflow.
    let mut elapsed_ms: i64 = 0;

    for StepLine {
        line,
        text: trimmed,
    } in lines
    {
        let tokens = tokenize(trimmed).map_err(|m| err(line, m))?;
        let mut p = LineParser {
            tokens: &tokens,
            pos: 0,
        };
        let first = p.word().map_err(|m| err(line, m))?;
        let action = match first.as_str() {
            "advance" => {
                let d = p.word().map_err(|m| err(line, m))?;
                let ms = parse_duration(&d).map_err(|m| err(line, m))?;
                elapsed_ms = elapsed_ms
                    .checked_add(ms)
                    .filter(|t| *t <= MAX_SCENARIO_SPAN_MS)
                    .ok_or_else(|| {
                        err(
                            line,
                            format!(
                                "this advance takes the scenario's clock past {} days after the epoch, the most a scenario may span",
                                MAX_SCENARIO_SPAN_MS / DAY_MS
                            ),
                        )
                    })?;
                let swept = parse_swept(&mut p).map_err(|m| err(line, m))?;
                Action::Advance { ms, swept }
            }
            "stop" => Action::Stop,
            "start" => Action::Start {
                swept: parse_swept(&mut p).map_err(|m| err(line, m))?,
            },
            "workdir" => {
                let w = p.word().map_err(|m| err(line, m))?;
                if w != "empty" {
                    return Err(err(
                        line,
                        format!("expected 'workdir empty', found 'workdir {}'", clip(&w)),
                    ));
                }
                Action::Disk(DiskAction::WorkdirEmpty)
            }
            "root" => {
                let w = p.word().map_err(|m| err(line, m))?;
                if w != "absent" {
                    return Err(err(
                        line,
                        format!("expected 'root absent', found 'root {}'", clip(&w)),
                    ));
                }
                if !knobs.root_missing {
                    return Err(err(
                        line,
                        "'root absent' checks the root of 'knob root missing'; this scenario's root exists".into(),
                    ));
                }
                Action::Disk(DiskAction::RootAbsent)
            }
            "disk" if knobs.root_missing => {
                return Err(err(
                    line,
                    "a disk step acts on the root, and with 'knob root missing' there is none: the harness never creates it".into(),
                ))
            }
            "disk" => Action::Disk(parse_disk(&mut p).map_err(|m| err(line, m))?),
            w if w.contains('@') => {
                let caller = parse_caller(w).map_err(|m| err(line, m))?;
                parse_call(&mut p, caller).map_err(|m| err(line, m))?
            }
            other => {
                return Err(err(
                    line,
                    format!("unknown step {:?}; expected a caller (name@#channel[/thread]), advance, stop, start, disk, workdir or root", clip(other)),
                ))
            }
        };
        p.end().map_err(|m| err(line, m))?;
        steps.push(Step {
            line,
            text: trimmed.to_string(),
            action,
        });
    }

    // Every implementation plays the steps its variants keep, so each of them must be anchored.
    for declared in header.guards.assignments() {
        let played: Vec<Step> = steps
            .iter()
            .filter(|s| header.guards.keeps(s.line, &declared))
            .cloned()
            .collect();
        super::anchor::check(&played).map_err(|(line, m)| {
            if declared == crate::variants::Declared::defaults() {
                err(line, m)
            } else {
                err(
                    line,
                    format!("{m} (for an implementation taking {declared})"),
                )
            }
        })?;
    }
    Ok(Scenario {
        file: PathBuf::from(file),
        name: header.name,
        profile: Profile::Scratchpad,
        rules: header.rules,
        kills: header.kills,
        needs: header.needs,
        needs_line: header.needs_line,
        knobs,
        steps,
        guards: header.guards,
    })
}

struct LineParser<'a> {
    tokens: &'a [Token],
    pos: usize,
}

impl LineParser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }
    fn next(&mut self) -> Option<&Token> {
        let t = self.tokens.get(self.pos);
        self.pos += 1;
        t
    }
    fn word(&mut self) -> Result<String, String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w.clone()),
            Some(t) => Err(format!("expected a word, found {}", t.describe())),
            None => Err("expected a word, found the end of the line".into()),
        }
    }
    /// A path: a bare word or a quoted string, its names (`@name`, `<caller>`) kept for the
    /// runner to resolve with the implementation's own.
    fn path(&mut self) -> Result<PathTemplate, String> {
        match self.next() {
            Some(Token::Word(w)) => PathTemplate::parse(w.as_bytes(), parse_caller),
            Some(Token::Quoted(q)) => PathTemplate::parse(q, parse_caller),
            Some(t) => Err(format!("expected a path, found {}", t.describe())),
            None => Err("expected a path, found the end of the line".into()),
        }
    }
    fn arrow(&mut self) -> Result<(), String> {
        match self.next() {
            Some(Token::Arrow) => Ok(()),
            Some(t) => Err(format!(
                "expected '=> <expectation>', found {}",
                t.describe()
            )),
            None => {
                Err("expected '=> <expectation>': every call states what must come back".into())
            }
        }
    }
    fn end(&self) -> Result<(), String> {
        match self.peek() {
            None => Ok(()),
            Some(t) => Err(format!(
                "unexpected {} after the end of the step",
                t.describe()
            )),
        }
    }
    /// `[a, b, c]` or `[]`.
    fn path_list(&mut self) -> Result<Vec<PathTemplate>, String> {
        match self.next() {
            Some(Token::Open) => {}
            Some(t) => return Err(format!("expected '[', found {}", t.describe())),
            None => return Err("expected '[', found the end of the line".into()),
        }
        let mut out = Vec::new();
        loop {
            match self.next() {
                Some(Token::Close) => return Ok(out),
                Some(Token::Word(w)) => out.push(PathTemplate::parse(w.as_bytes(), parse_caller)?),
                Some(Token::Quoted(q)) => out.push(PathTemplate::parse(q, parse_caller)?),
                Some(t) => return Err(format!("expected a path or ']', found {}", t.describe())),
                None => return Err("expected ']' to close the list".into()),
            }
            match self.next() {
                Some(Token::Comma) => continue,
                Some(Token::Close) => return Ok(out),
                Some(t) => return Err(format!("expected ',' or ']', found {}", t.describe())),
                None => return Err("expected ']' to close the list".into()),
            }
        }
    }
}

/// `alice@#general/T1` or `alice@#general`.
fn parse_caller(w: &str) -> Result<Caller, String> {
    let (req, place) = w
        .split_once('@')
        .ok_or_else(|| format!("expected a caller name@#channel, found {w:?}"))?;
    let place = place.strip_prefix('#').ok_or_else(|| {
        format!("expected '#' before the channel in {w:?} (name@#channel[/thread])")
    })?;
    let (channel, thread) = match place.split_once('/') {
        Some((c, t)) => (c, Some(t.to_string())),
        None => (place, None),
    };
    if req.is_empty() || channel.is_empty() || thread.as_deref() == Some("") {
        return Err(format!(
            "expected name@#channel or name@#channel/thread, found {w:?}"
        ));
    }
    Ok(Caller {
        requester: req.to_string(),
        channel: channel.to_string(),
        thread,
    })
}

pub(crate) fn context_of(c: &Caller) -> CallContext {
    CallContext {
        requester: c.requester.clone(),
        channel: c.channel.clone(),
        thread: c.thread.clone(),
    }
}

fn parse_call(p: &mut LineParser, caller: Caller) -> Result<Action, String> {
    let verb = p.word()?;
    let request = match verb.as_str() {
        "write" => {
            let path = p.path()?;
            let content = match p.next() {
                Some(Token::Quoted(q)) => q.clone(),
                Some(Token::Word(w)) => filler(content_size(w)?),
                Some(t) => {
                    return Err(format!(
                        "expected content (a quoted string or a size like 600KiB), found {}",
                        t.describe()
                    ))
                }
                None => {
                    return Err("expected content (a quoted string or a size like 600KiB)".into())
                }
            };
            Call::Write {
                caller,
                path,
                content,
            }
        }
        "read" => Call::Read {
            caller,
            path: p.path()?,
        },
        "remove" => Call::Remove {
            caller,
            path: p.path()?,
        },
        "list" => {
            let path = match p.peek() {
                Some(Token::Arrow) | None => None,
                _ => Some(p.path()?),
            };
            Call::List { caller, path }
        }
        other => {
            return Err(format!(
                "unknown operation {other:?}; expected write, read, list or remove"
            ))
        }
    };
    p.arrow()?;
    let expect = parse_expect(p, &request)?;
    Ok(Action::Call {
        call: request,
        expect,
    })
}

/// After `advance <duration>` or `start`: nothing, or `=> swept [<session>, ...]`.
fn parse_swept(p: &mut LineParser) -> Result<Option<Vec<PathTemplate>>, String> {
    match p.peek() {
        None => return Ok(None),
        Some(Token::Arrow) => {
            p.next();
        }
        Some(t) => {
            return Err(format!(
                "expected the end of the line or '=> swept [sessions]', found {}",
                t.describe()
            ))
        }
    }
    match p.word()?.as_str() {
        "swept" => {}
        other => {
            return Err(format!(
                "expected 'swept [sessions]' after '=>' (what the sweep collected), found {other:?}"
            ))
        }
    }
    let sessions = p.path_list()?;
    for s in &sessions {
        if !matches!(s.components.as_slice(), [super::Component::Session(_)]) {
            return Err(format!(
                "a swept entry is one session directory like <alice@#general/T1>, found {s}"
            ));
        }
    }
    Ok(Some(sessions))
}

fn parse_expect(p: &mut LineParser, req: &Call) -> Result<Expect, String> {
    let is_write = matches!(req, Call::Write { .. });
    match p.peek().cloned() {
        Some(Token::Quoted(q)) => {
            p.next();
            if !matches!(req, Call::Read { .. }) {
                return Err(
                    "a quoted expectation is file content; only a read returns content".into(),
                );
            }
            Ok(Expect::Content(q))
        }
        Some(Token::Open) => {
            if !matches!(req, Call::List { .. }) {
                return Err("a [list] expectation is a listing; only list returns one".into());
            }
            Ok(Expect::Listing(p.path_list()?))
        }
        Some(Token::Word(w)) => {
            p.next();
            match w.as_str() {
                "ok" if is_write => match p.peek() {
                    Some(Token::Word(e)) if e == "evicted" => {
                        p.next();
                        Ok(Expect::Written { evicted: p.path_list()? })
                    }
                    _ => Ok(Expect::Written { evicted: vec![] }),
                },
                "ok" => Ok(Expect::Ok),
                "not_found" => Ok(Expect::Refused("not_found".into())),
                "refused" => {
                    let r = p.word()?;
                    if !SCRATCHPAD_REASONS.contains(&r.as_str()) {
                        return Err(format!("unknown refusal reason {r:?}; expected one of {}", SCRATCHPAD_REASONS.join(", ")));
                    }
                    Ok(Expect::Refused(r))
                }
                other => Err(format!(
                    "unknown expectation {other:?}; expected ok, ok evicted [..], refused <reason>, not_found, \"content\" or [paths]"
                )),
            }
        }
        Some(t) => Err(format!(
            "expected an expectation after '=>', found {}",
            t.describe()
        )),
        None => Err("expected an expectation after '=>'".into()),
    }
}

fn parse_knob(name: &str, value: &str, knobs: &mut Knobs) -> Result<(), String> {
    if name == "root" {
        if !knobs.mounted || knobs.root_missing {
            return Err("knob root is set twice".into());
        }
        match value {
            // An empty root path (SP-1.3).
            "unmounted" => knobs.mounted = false,
            // The path of a root that does not exist (SP-1.3, decided: not created).
            "missing" => knobs.root_missing = true,
            _ => {
                return Err(format!(
                    "expected 'knob root unmounted' or 'knob root missing', found 'knob root {}'",
                    clip(value)
                ))
            }
        }
        return Ok(());
    }
    let table = SCRATCHPAD_KNOBS;
    let unit = table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, u)| *u)
        .ok_or_else(|| {
            format!(
                "unknown knob {:?}; expected root or one of {}",
                clip(name),
                table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )
        })?;
    let v = match unit {
        KnobUnit::Bytes => parse_size(value)? as i64,
        KnobUnit::Duration => parse_duration(value)?,
        KnobUnit::Count => value
            .parse::<i64>()
            .ok()
            .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                format!(
                    "expected a whole number from 1 to {MAX_KNOB_VALUE} for {name}, found {:?}",
                    clip(value)
                )
            })?,
    };
    // SP-5.6 gives every knob a positive default and no knob a meaning at zero or below.
    let max = match unit {
        KnobUnit::Duration => MAX_SCENARIO_SPAN_MS,
        KnobUnit::Bytes | KnobUnit::Count => MAX_KNOB_VALUE,
    };
    if !(1..=max).contains(&v) {
        return Err(format!(
            "knob {name} is {v}; it must be from 1 to {max}{}",
            if unit == KnobUnit::Duration {
                " ms"
            } else {
                ""
            }
        ));
    }
    if knobs.values.contains_key(name) {
        return Err(format!("knob {name} is set twice"));
    }
    knobs.values.insert(name.to_string(), v);
    Ok(())
}

fn parse_disk(p: &mut LineParser) -> Result<DiskAction, String> {
    let verb = p.word()?;
    // Every path the harness writes or checks stays under the scenario's root; only a symlink's
    // target (what the planted link points at) may name anything.
    let path_str = |p: &mut LineParser| -> Result<PathTemplate, String> {
        let path = p.path()?;
        confined(&path)?;
        Ok(path)
    };
    Ok(match verb.as_str() {
        "mkdir" => DiskAction::Mkdir(path_str(p)?),
        "write" => {
            let path = path_str(p)?;
            let content = match p.next() {
                Some(Token::Quoted(q)) => q.clone(),
                Some(Token::Word(w)) => filler(content_size(w)?),
                _ => return Err("expected content after 'disk write <path>'".into()),
            };
            DiskAction::Write(path, content)
        }
        "symlink" => {
            let link = path_str(p)?;
            let arrow = p.word()?;
            if arrow != "->" {
                return Err(format!("expected 'disk symlink <link> -> <target>', found {arrow:?}"));
            }
            // The target is written into the link as it is: `$OUTSIDE` and literal text only.
            let target = match p.next() {
                Some(Token::Word(w)) => w.clone(),
                Some(Token::Quoted(q)) => String::from_utf8_lossy(q).into_owned(),
                _ => return Err("expected a target after '->'".into()),
            };
            DiskAction::Symlink { link, target }
        }
        "exists" => DiskAction::Exists(path_str(p)?),
        "absent" => DiskAction::Absent(path_str(p)?),
        "no-path-contains" => match p.next() {
            Some(Token::Word(w)) => DiskAction::NoPathContains(w.clone()),
            Some(Token::Quoted(q)) => DiskAction::NoPathContains(String::from_utf8_lossy(q).to_string()),
            _ => return Err("expected text after 'disk no-path-contains'".into()),
        },
        other => return Err(format!("unknown disk action {other:?}; expected mkdir, write, symlink, exists, absent or no-path-contains")),
    })
}

/// A disk step's path: relative to the scenario's root, and never climbing out of it.
fn confined(path: &PathTemplate) -> Result<(), String> {
    use super::names::Component;
    let literal = |c: &Component, text: &[u8]| matches!(c, Component::Literal(l) if l == text);
    let shown = path.to_string();
    match path.components.as_slice() {
        [] => {
            return Err("a disk step needs a path under the scenario's root, found \"\"".into())
        }
        [only] if literal(only, b"") => {
            return Err("a disk step needs a path under the scenario's root, found \"\"".into())
        }
        [first, ..] if literal(first, b"") => {
            return Err(format!(
                "the disk path {:?} is absolute; a disk step reaches only the scenario's root, so write it relative to the root",
                clip(&shown)
            ))
        }
        _ => {}
    }
    if path.components.iter().any(|c| literal(c, b"..")) {
        return Err(format!(
            "the disk path {:?} climbs out with '..'; a disk step reaches only the scenario's root",
            clip(&shown)
        ));
    }
    if path
        .components
        .iter()
        .any(|c| matches!(c, Component::Literal(l) if l.contains(&0)))
    {
        return Err(format!("the disk path {:?} holds a NUL byte", clip(&shown)));
    }
    Ok(())
}

/// A content size: a size no larger than [`MAX_CONTENT_BYTES`].
fn content_size(w: &str) -> Result<u64, String> {
    let n = parse_size(w)?;
    if n > MAX_CONTENT_BYTES {
        return Err(format!(
            "content of {n} bytes is larger than a step may write ({MAX_CONTENT_BYTES} bytes)"
        ));
    }
    Ok(n)
}

/// Deterministic filler content of `n` bytes, printable so listings and reports stay readable.
pub fn filler(n: u64) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

/// `10B`, `4KiB`, `1MiB`, or a plain number of bytes; at most [`MAX_KNOB_VALUE`].
pub fn parse_size(w: &str) -> Result<u64, String> {
    let (num, mult) = if let Some(n) = w.strip_suffix("MiB") {
        (n, 1024 * 1024)
    } else if let Some(n) = w.strip_suffix("KiB") {
        (n, 1024)
    } else if let Some(n) = w.strip_suffix('B') {
        (n, 1)
    } else {
        (w, 1)
    };
    let bad = || {
        format!(
            "expected a size like 100B, 4KiB or 1MiB, found {:?}",
            clip(w)
        )
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n <= MAX_KNOB_VALUE as u64)
        .ok_or_else(|| {
            format!(
                "the size {:?} is larger than {MAX_KNOB_VALUE} bytes",
                clip(w)
            )
        })
}

/// `7d`, `6d23h59m`, `90s`, `250ms`; 0 or more, at most [`MAX_SCENARIO_SPAN_MS`] (the shared
/// reader, `scenario/units.rs`).
pub fn parse_duration(w: &str) -> Result<i64, String> {
    crate::scenario::units::duration_ms(w, crate::scenario::units::Sign::NotNegative)
}

//! Paths as a scenario spells them. SP-1.2 leaves directory names to the implementation, so a
//! scenario never writes a hash: `@alice` is alice's requester directory and
//! `<alice@#general/T1>` that caller's session directory, whatever the implementation calls them.
//! The runner learns the names (the `names` request) and resolves a [`PathTemplate`] with them.

use crate::profiles::scratchpad::contract::Caller;
use std::fmt;

/// One `/`-separated component of a scenario path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Component {
    /// Bytes as written (may be empty, `.`, `..`, or not UTF-8: scenarios test such paths).
    Literal(Vec<u8>),
    /// `@name`: the requester directory of `name`.
    Requester(String),
    /// `<caller>`: the session directory of this caller.
    Session(Caller),
}

/// Which session a caller is in (SP-1.1): everyone in a thread shares it; outside a thread it is
/// the channel-and-requester pairing. Two callers with one key must get one session name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SessionKey {
    Thread { channel: String, thread: String },
    Pairing { channel: String, requester: String },
}

impl SessionKey {
    pub fn of(caller: &Caller) -> SessionKey {
        SessionKey::of_with(caller, false)
    }

    /// The key when a thread id names one session in every channel (SPEC.md's variant
    /// `thread_identity=global`), or in its own channel only.
    pub fn of_with(caller: &Caller, global_threads: bool) -> SessionKey {
        match &caller.thread {
            Some(t) if global_threads => SessionKey::Thread {
                channel: String::new(),
                thread: t.clone(),
            },
            Some(t) => SessionKey::Thread {
                channel: caller.channel.clone(),
                thread: t.clone(),
            },
            None => SessionKey::Pairing {
                channel: caller.channel.clone(),
                requester: caller.requester.clone(),
            },
        }
    }
}

/// A scenario path: components joined by `/`, some of them names to be learned.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PathTemplate {
    pub components: Vec<Component>,
}

/// What a template's names resolve to. The runner implements it from the implementation's
/// answers; `resolve` never guesses a name.
pub trait NameSource {
    fn requester(&self, name: &str) -> String;
    fn session(&self, caller: &Caller) -> String;
}

impl PathTemplate {
    /// A path with no names in it.
    pub fn literal(bytes: &[u8]) -> PathTemplate {
        PathTemplate {
            components: bytes
                .split(|b| *b == b'/')
                .map(|c| Component::Literal(c.to_vec()))
                .collect(),
        }
    }

    /// Parses a scenario path: `@name` components and `<caller>` placeholders (which may span one
    /// `/`) become names; everything else, including bytes that are not UTF-8, stays literal.
    pub fn parse(
        raw: &[u8],
        parse_caller: impl Fn(&str) -> Result<Caller, String>,
    ) -> Result<PathTemplate, String> {
        let mut components = Vec::new();
        let mut parts = raw.split(|b| *b == b'/').peekable();
        while let Some(part) = parts.next() {
            if let Some(name) = part.strip_prefix(b"@") {
                let name = std::str::from_utf8(name)
                    .map_err(|_| "a requester name after '@' must be UTF-8".to_string())?;
                if name.is_empty() {
                    return Err(format!(
                        "'@' in {:?} needs a requester name after it",
                        String::from_utf8_lossy(raw)
                    ));
                }
                components.push(Component::Requester(name.to_string()));
            } else if part.first() == Some(&b'<') {
                // `<alice@#general/T1>` arrives split at its '/'; take the next part too.
                let mut spelled = part.to_vec();
                if !spelled.ends_with(b">") {
                    match parts.next() {
                        Some(rest) => {
                            spelled.push(b'/');
                            spelled.extend_from_slice(rest);
                        }
                        None => {
                            return Err(format!(
                                "'<' in {:?} is not closed by '>'",
                                String::from_utf8_lossy(raw)
                            ))
                        }
                    }
                }
                let inner = spelled
                    .strip_prefix(b"<")
                    .and_then(|s| s.strip_suffix(b">"))
                    .ok_or_else(|| {
                        format!(
                            "'<' in {:?} must enclose a whole component, e.g. <alice@#general/T1>",
                            String::from_utf8_lossy(raw)
                        )
                    })?;
                let inner = std::str::from_utf8(inner)
                    .map_err(|_| "a caller inside '<…>' must be UTF-8".to_string())?;
                components.push(Component::Session(parse_caller(inner)?));
            } else {
                components.push(Component::Literal(part.to_vec()));
            }
        }
        Ok(PathTemplate { components })
    }

    /// The path with every name replaced by the implementation's.
    pub fn resolve(&self, names: &dyn NameSource) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, c) in self.components.iter().enumerate() {
            if i > 0 {
                out.push(b'/');
            }
            match c {
                Component::Literal(b) => out.extend_from_slice(b),
                Component::Requester(r) => out.extend_from_slice(names.requester(r).as_bytes()),
                Component::Session(caller) => {
                    out.extend_from_slice(names.session(caller).as_bytes())
                }
            }
        }
        out
    }

    /// As [`resolve`](Self::resolve), for paths compared as text (listings, evictions, disk).
    pub fn resolve_lossy(&self, names: &dyn NameSource) -> String {
        String::from_utf8_lossy(&self.resolve(names)).into_owned()
    }

    /// The requester names and callers this path needs names for.
    pub fn names(&self) -> impl Iterator<Item = &Component> {
        self.components
            .iter()
            .filter(|c| !matches!(c, Component::Literal(_)))
    }

    /// Whether `self` is `other` or a directory above it, comparing sessions by their key, so
    /// `<bob@#general/T1>` and `<alice@#general/T1>` are one directory.
    pub fn contains(&self, other: &PathTemplate) -> bool {
        self.components.len() <= other.components.len()
            && self
                .components
                .iter()
                .zip(&other.components)
                .all(|(a, b)| same_component(a, b))
    }
}

fn same_component(a: &Component, b: &Component) -> bool {
    match (a, b) {
        (Component::Session(x), Component::Session(y)) => SessionKey::of(x) == SessionKey::of(y),
        _ => a == b,
    }
}

impl fmt::Display for PathTemplate {
    /// As the scenario spells it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.components.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            match c {
                Component::Literal(b) => f.write_str(&String::from_utf8_lossy(b))?,
                Component::Requester(r) => write!(f, "@{r}")?,
                Component::Session(caller) => write!(f, "<{}>", caller.display())?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(w: &str) -> Result<Caller, String> {
        let (r, place) = w.split_once("@#").ok_or("no @#")?;
        let (c, t) = match place.split_once('/') {
            Some((c, t)) => (c, Some(t.to_string())),
            None => (place, None),
        };
        Ok(Caller {
            requester: r.into(),
            channel: c.into(),
            thread: t,
        })
    }

    struct Fixed;
    impl NameSource for Fixed {
        fn requester(&self, name: &str) -> String {
            format!("R({name})")
        }
        fn session(&self, caller: &Caller) -> String {
            format!("S({})", caller.display())
        }
    }

    #[test]
    fn names_resolve_in_place_and_literals_keep_every_byte() {
        let t = PathTemplate::parse(b"<alice@#general/T1>/@bob/a//b\xff", caller).unwrap();
        assert_eq!(t.to_string(), "<alice@#general/T1>/@bob/a//b\u{fffd}");
        assert_eq!(
            t.resolve(&Fixed),
            b"S(alice@#general/T1)/R(bob)/a//b\xff".to_vec()
        );
    }

    #[test]
    fn a_session_placeholder_contains_what_lies_below_it_for_any_member() {
        let session = PathTemplate::parse(b"<alice@#general/T1>", caller).unwrap();
        let file = PathTemplate::parse(b"<bob@#general/T1>/@bob/x.md", caller).unwrap();
        let other = PathTemplate::parse(b"<bob@#general/T2>/@bob/x.md", caller).unwrap();
        assert!(session.contains(&file));
        assert!(!session.contains(&other));
        assert!(!file.contains(&session));
    }

    #[test]
    fn an_unclosed_or_partial_placeholder_is_an_error() {
        assert!(PathTemplate::parse(b"<alice@#general/T1", caller).is_err());
        assert!(PathTemplate::parse(b"x/@", caller).is_err());
    }
}

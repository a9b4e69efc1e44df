//! The shared lexer's tokens as the words the scoped steps match on, and the readings every
//! step family shares: quoted content, lists, durations.

use tidemark_sim::clip::clip;

use crate::scenario::lex::Token;

/// The shared lexer's tokens as the words this profile's steps match on: a quoted string keeps
/// its quotes (`"a b"`), `PATH=` followed by a quoted string is one word (`PATH="CONTENT"`), a
/// list is one word (`[a, b]`, its items bare or quoted, held as a JSON array so an item keeps
/// its commas: [`list`] reads it back), and a comma outside a list is punctuation (`swept 1
/// session, 0 deletions`). Scoped content is text: a quoted string must decode to UTF-8.
pub(super) fn words(tokens: &[Token]) -> Result<Vec<String>, String> {
    let text = |b: &[u8]| {
        String::from_utf8(b.to_vec()).map_err(|_| {
            format!(
                "a quoted string here is text, and {:?} is not UTF-8",
                tidemark_sim::clip::clip_bytes(b)
            )
        })
    };
    let mut out: Vec<String> = Vec::new();
    let mut it = tokens.iter().peekable();
    while let Some(t) = it.next() {
        match t {
            Token::Word(w) => match it.peek() {
                Some(Token::Quoted(q)) if w.ends_with('=') => {
                    out.push(format!("{w}\"{}\"", text(q)?));
                    it.next();
                }
                _ => out.push(w.clone()),
            },
            Token::Quoted(q) => out.push(format!("\"{}\"", text(q)?)),
            Token::Comma => {}
            Token::Open => {
                let mut items = Vec::new();
                loop {
                    match it.next() {
                        Some(Token::Close) => break,
                        Some(Token::Comma) => {}
                        Some(Token::Word(w)) => items.push(w.clone()),
                        Some(Token::Quoted(q)) => items.push(text(q)?),
                        Some(t) => {
                            return Err(format!("expected a list item, found {}", t.describe()))
                        }
                        None => return Err("a list is not closed with ]".into()),
                    }
                }
                out.push(serde_json::to_string(&items).expect("strings serialise"));
            }
            Token::Close => return Err("a ']' closes no list".into()),
            Token::Arrow => return Err("a second '=>' on one step".into()),
        }
    }
    Ok(out)
}

pub(super) fn unquote(w: &str) -> Result<String, String> {
    w.strip_prefix('"')
        .and_then(|w| w.strip_suffix('"'))
        .map(str::to_string)
        .ok_or_else(|| format!("expected a \"quoted string\", got {w}"))
}

/// A list word made by [`words`], its items as written.
pub(super) fn list(w: &str) -> Result<Vec<String>, String> {
    serde_json::from_str(w).map_err(|_| format!("expected a [list], got {}", clip(w)))
}

/// `1d`, `6d23h`, `30m`, `90s`, `250ms`, `-10d` (a backwards clock jump): the shared reader
/// (`scenario/units.rs`).
pub fn duration_ms(s: &str) -> Result<i64, String> {
    crate::scenario::units::duration_ms(s, crate::scenario::units::Sign::Either)
}

/// A path may be quoted (to carry spaces, control characters or an empty string) or bare.
pub(super) fn unquote_or(w: &str) -> String {
    unquote(w).unwrap_or_else(|_| w.to_string())
}

//! Splits one scenario line into tokens: words, quoted byte strings, `[`, `]`, `,` and `=>`.

use tidemark_sim::clip::{clip, clip_bytes};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Word(String),
    /// A double-quoted string, escapes decoded: `\n`, `\t`, `\\`, `\"`, `\xNN`.
    Quoted(Vec<u8>),
    Open,
    Close,
    Comma,
    Arrow,
}

impl Token {
    pub fn describe(&self) -> String {
        match self {
            Token::Word(w) => format!("'{}'", clip(w)),
            Token::Quoted(q) => format!("{:?}", clip_bytes(q)),
            Token::Open => "'['".into(),
            Token::Close => "']'".into(),
            Token::Comma => "','".into(),
            Token::Arrow => "'=>'".into(),
        }
    }
}

pub fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' => i += 1,
            b'[' => {
                out.push(Token::Open);
                i += 1;
            }
            b']' => {
                out.push(Token::Close);
                i += 1;
            }
            b',' => {
                out.push(Token::Comma);
                i += 1;
            }
            b'=' if b.get(i + 1) == Some(&b'>') => {
                out.push(Token::Arrow);
                i += 2;
            }
            b'"' => {
                let (bytes, next) = quoted(b, i + 1)?;
                out.push(Token::Quoted(bytes));
                i = next;
            }
            _ => {
                let start = i;
                while i < b.len()
                    && !matches!(b[i], b' ' | b'\t' | b'[' | b']' | b',' | b'"')
                    && !(b[i] == b'=' && b.get(i + 1) == Some(&b'>'))
                {
                    i += 1;
                }
                out.push(Token::Word(line[start..i].to_string()));
            }
        }
    }
    Ok(out)
}

fn quoted(b: &[u8], mut i: usize) -> Result<(Vec<u8>, usize), String> {
    let mut out = Vec::new();
    while i < b.len() {
        match b[i] {
            b'"' => return Ok((out, i + 1)),
            b'\\' => {
                let esc = *b.get(i + 1).ok_or("a '\\' at the end of the line")?;
                match esc {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'0' => out.push(0),
                    b'\\' => out.push(b'\\'),
                    b'"' => out.push(b'"'),
                    b'x' => {
                        let hex = b.get(i + 2..i + 4).ok_or("'\\x' needs two hex digits")?;
                        let s =
                            std::str::from_utf8(hex).map_err(|_| "'\\x' needs two hex digits")?;
                        out.push(
                            u8::from_str_radix(s, 16)
                                .map_err(|_| format!("'\\x{s}' is not two hex digits"))?,
                        );
                        i += 2;
                    }
                    other => {
                        return Err(format!(
                            "unknown escape '\\{}' (expected \\n, \\t, \\0, \\\\, \\\" or \\xNN)",
                            other as char
                        ))
                    }
                }
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Err("a quoted string is not closed (expected '\"' before the end of the line)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_line_splits_into_words_strings_and_an_arrow() {
        let t = tokenize(r#"alice@#g/T1 write "a b.md" "x\xff" => [@a/x, @b/y]"#).unwrap();
        assert_eq!(t[0], Token::Word("alice@#g/T1".into()));
        assert_eq!(t[2], Token::Quoted(b"a b.md".to_vec()));
        assert_eq!(t[3], Token::Quoted(vec![b'x', 0xff]));
        assert_eq!(t[4], Token::Arrow);
        assert_eq!(t[5], Token::Open);
        assert_eq!(t.last(), Some(&Token::Close));
    }
}

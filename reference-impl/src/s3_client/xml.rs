//! The XML the client reads and writes: S3's error bodies, ListObjectsV2 pages, DeleteObjects
//! requests and results. Read into a small element tree with quick-xml (already in the build
//! through s3s), so each response is a few lookups rather than a state machine.

use quick_xml::events::Event;
use quick_xml::Reader;

use super::{DeleteObjectError, DeleteObjectsOutput, ListPage, ListedObject};
use crate::clock::Timestamp;

/// One element: its local name, its text (entities resolved, whitespace kept: a key may be a
/// space) and its child elements in document order.
#[derive(Debug, Default)]
pub(super) struct Element {
    pub name: String,
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Every child named `name`, in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The text of the first child named `name`.
    pub fn text_of(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }
}

/// Parses a document into its root element.
pub(super) fn parse(body: &[u8]) -> Result<Element, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("XML at byte {}: {e}", reader.buffer_position()))?;
        match event {
            Event::Start(e) => stack.push(Element {
                name: local(e.local_name().as_ref()),
                ..Element::default()
            }),
            Event::Empty(e) => {
                let el = Element {
                    name: local(e.local_name().as_ref()),
                    ..Element::default()
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => return Ok(el),
                }
            }
            Event::End(_) => {
                let el = stack.pop().ok_or("an end tag without a start")?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => return Ok(el),
                }
            }
            Event::Text(t) => {
                if let Some(el) = stack.last_mut() {
                    el.text.push_str(&t.decode().map_err(|e| e.to_string())?);
                }
            }
            Event::CData(t) => {
                if let Some(el) = stack.last_mut() {
                    el.text.push_str(&t.decode().map_err(|e| e.to_string())?);
                }
            }
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref().map_err(|e| e.to_string())? {
                    Some(c) => c,
                    None => match r.decode().map_err(|e| e.to_string())?.as_ref() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => return Err(format!("unknown entity &{other};")),
                    },
                };
                if let Some(el) = stack.last_mut() {
                    el.text.push(resolved);
                }
            }
            Event::Eof => return Err("the document ends before its root element does".into()),
            _ => {}
        }
    }
}

fn local(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

/// Escapes text for an element's content. Carriage return, line feed and tab go as character
/// references, so no XML reader normalises them away: a key may hold any of them.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#xD;"),
            '\n' => out.push_str("&#xA;"),
            '\t' => out.push_str("&#x9;"),
            c => out.push(c),
        }
    }
    out
}

/// The `<Code>` and `<Message>` of an error body, when it has them.
pub(super) fn error_body(body: &[u8]) -> (Option<String>, Option<String>) {
    match parse(body) {
        Ok(root) => (
            root.text_of("Code").map(str::to_string),
            root.text_of("Message").map(str::to_string),
        ),
        Err(_) => (None, None),
    }
}

/// A ListObjectsV2 page (`<ListBucketResult>`).
pub(super) fn list_page(body: &[u8]) -> Result<ListPage, String> {
    let root = parse(body)?;
    let mut objects = Vec::new();
    for c in root.all("Contents") {
        objects.push(ListedObject {
            key: c
                .text_of("Key")
                .ok_or("an object without a key")?
                .to_string(),
            size: c
                .text_of("Size")
                .map(|s| {
                    s.trim()
                        .parse::<u64>()
                        .map_err(|e| format!("Size {s:?}: {e}"))
                })
                .transpose()?
                .unwrap_or(0),
            e_tag: c.text_of("ETag").map(str::to_string),
            last_modified: c.text_of("LastModified").and_then(iso8601),
        });
    }
    let common_prefixes = root
        .all("CommonPrefixes")
        .filter_map(|p| p.text_of("Prefix").map(str::to_string))
        .collect();
    Ok(ListPage {
        objects,
        common_prefixes,
        is_truncated: root.text_of("IsTruncated").map(str::trim) == Some("true"),
        next_continuation_token: root.text_of("NextContinuationToken").map(str::to_string),
        key_count: root
            .text_of("KeyCount")
            .and_then(|n| n.trim().parse::<u64>().ok()),
    })
}

/// An ISO 8601 instant as in a listing (`2009-10-12T17:50:30.000Z`).
fn iso8601(s: &str) -> Option<Timestamp> {
    s.trim()
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| Timestamp(t.as_millisecond()))
}

/// An HTTP date as in `Last-Modified` (`Wed, 21 Oct 2015 07:28:00 GMT`).
pub(super) fn http_date(s: &str) -> Option<Timestamp> {
    jiff::fmt::rfc2822::parse(s.trim())
        .ok()
        .map(|z| Timestamp(z.timestamp().as_millisecond()))
}

/// A DeleteObjects request body; quiet, only failures are reported back.
pub(super) fn delete_request<K: AsRef<str>>(keys: &[K], quiet: bool) -> String {
    let mut body = format!("<Delete><Quiet>{quiet}</Quiet>");
    for k in keys {
        body.push_str("<Object><Key>");
        body.push_str(&escape(k.as_ref()));
        body.push_str("</Key></Object>");
    }
    body.push_str("</Delete>");
    body
}

/// A DeleteObjects result (`<DeleteResult>`): the keys reported deleted (none when quiet) and
/// each key that was not.
pub(super) fn delete_result(body: &[u8]) -> Result<DeleteObjectsOutput, String> {
    let root = parse(body)?;
    Ok(DeleteObjectsOutput {
        deleted: root
            .all("Deleted")
            .filter_map(|d| d.text_of("Key").map(str::to_string))
            .collect(),
        errors: root
            .all("Error")
            .map(|e| DeleteObjectError {
                key: e.text_of("Key").map(str::to_string),
                code: e.text_of("Code").map(str::to_string),
                message: e.text_of("Message").map(str::to_string),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_entities_and_whitespace() {
        let body = b"<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>\
            <Contents><Key> a&amp;b&#xD;&#10;&lt;</Key><Size>3</Size>\
            <LastModified>2014-01-15T10:30:00.000Z</LastModified></Contents>\
            <NextContinuationToken>t</NextContinuationToken></ListBucketResult>";
        let page = list_page(body).unwrap();
        assert_eq!(page.objects[0].key, " a&b\r\n<");
        assert_eq!(page.objects[0].size, 3);
        assert_eq!(
            page.objects[0].last_modified,
            Some(Timestamp(1_389_781_800_000))
        );
        assert!(page.is_truncated);
        assert_eq!(page.next_continuation_token.as_deref(), Some("t"));
    }

    #[test]
    fn an_escaped_key_reads_back_whole() {
        let key = "a&<>\"'\r\n\t é";
        let body = format!("<Error><Key>{}</Key><Code>X</Code></Error>", escape(key));
        let doc = parse(body.as_bytes()).unwrap();
        assert_eq!(doc.text_of("Key"), Some(key));
    }

    #[test]
    fn http_dates_parse() {
        assert_eq!(
            http_date("Wed, 15 Jan 2014 10:30:00 GMT"),
            Some(Timestamp(1_389_781_800_000))
        );
    }
}

//! The one rule for quoting input or an implementation's output in a message, report, JSON or
//! JUnit field: at most [`QUOTE_MAX_BYTES`] bytes of it, then how many bytes were left out. A
//! 50 MB error message or a 1 GB scenario line therefore costs a report a few KiB, and the reader
//! still learns how large the original was.
//!
//! Also the bounds on scenario time that both grammars check at load, so no advance, duration or
//! sum of advances can overflow or leave the clock's range.

use std::borrow::Cow;

/// How many bytes of a quoted text a message keeps (documented in PROTOCOL.md and the grammar
/// READMEs).
pub const QUOTE_MAX_BYTES: usize = 4096;

/// How many bytes a whole message field keeps (a failure's expected or actual outcome, a load
/// error): room for a few clipped quotes and a stderr tail, so a field's own cut never lands on a
/// quote that was already cut (which would lose the quote's count of bytes left out).
pub const FIELD_MAX_BYTES: usize = 4 * QUOTE_MAX_BYTES;

/// [`clip_to`] at [`FIELD_MAX_BYTES`], for a whole message field.
pub fn clip_field(text: &str) -> Cow<'_, str> {
    clip_to(text, FIELD_MAX_BYTES)
}

/// `text` whole if it is at most [`QUOTE_MAX_BYTES`] bytes, else its first bytes (cut on a
/// character boundary) and `… (N more bytes)`.
pub fn clip(text: &str) -> Cow<'_, str> {
    clip_to(text, QUOTE_MAX_BYTES)
}

/// [`clip`] with another bound, for fields that are shorter by design (a table row).
pub fn clip_to(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let mut cut = max_bytes;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!(
        "{}… ({} more bytes)",
        &text[..cut],
        text.len() - cut
    ))
}

/// [`clip`] for bytes that may not be UTF-8: invalid sequences become U+FFFD, and the count left
/// out is of the original bytes.
pub fn clip_bytes(bytes: &[u8]) -> String {
    clip_prefix(bytes, bytes.len(), QUOTE_MAX_BYTES)
}

/// [`clip_bytes`] for a text of which only `prefix` was kept (a reader that stopped storing
/// bytes past a bound): `total_len` is the whole text's length in bytes.
pub fn clip_prefix(prefix: &[u8], total_len: usize, max_bytes: usize) -> String {
    if total_len <= max_bytes && prefix.len() == total_len {
        return String::from_utf8_lossy(prefix).into_owned();
    }
    let mut cut = max_bytes.min(prefix.len());
    // Back up over at most three continuation bytes so a character is not split.
    let limit = cut.saturating_sub(3);
    while cut > limit && cut < prefix.len() && (prefix[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    if cut == total_len {
        return String::from_utf8_lossy(prefix).into_owned();
    }
    format!(
        "{}… ({} more bytes)",
        String::from_utf8_lossy(&prefix[..cut]),
        total_len - cut
    )
}

/// The longest a scenario's clock may run from the pinned epoch, in either direction: 1000
/// years, far beyond any retention rule, and far inside `i64` milliseconds (so no sum of
/// checked steps can overflow while it stays within this bound).
pub const MAX_SCENARIO_SPAN_MS: i64 = 1000 * 366 * 86_400_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_whole_and_long_text_says_how_much_was_cut() {
        assert_eq!(clip("abc"), "abc");
        let long = "x".repeat(QUOTE_MAX_BYTES + 10);
        let c = clip(&long);
        assert!(c.ends_with("… (10 more bytes)"), "{c}");
        assert_eq!(c.len(), QUOTE_MAX_BYTES + "… (10 more bytes)".len());
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let long = "é".repeat(QUOTE_MAX_BYTES);
        let c = clip(&long);
        assert!(c.ends_with(&format!("… ({} more bytes)", long.len() - QUOTE_MAX_BYTES)));
        let mut bytes = "é".repeat(QUOTE_MAX_BYTES).into_bytes();
        bytes.insert(0, b'a');
        let c = clip_bytes(&bytes);
        assert!(!c.contains('\u{FFFD}'), "{c}");
        assert!(c.ends_with(&format!(
            "… ({} more bytes)",
            bytes.len() - QUOTE_MAX_BYTES + 1
        )));
    }
}

//! Refusals, each with a stable reason code (SPEC.md SP-2, SP-3, SP-4) and a message a model or a
//! person can act on.

use std::fmt;

/// The reason codes are part of the contract: scenarios and out-of-process implementations
/// compare them, so they never change spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Refusal {
    Unmounted,
    EmptyPath,
    AbsolutePath,
    NulByte,
    NotUtf8,
    Traversal,
    NonCanonical,
    Backslash,
    TooDeep,
    PathTooLong,
    SymlinkEscape,
    TooLarge,
    CeilingExceeded,
    NotFound,
    IsADirectory,
    NotADirectory,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Unmounted => "unmounted",
            Refusal::EmptyPath => "empty_path",
            Refusal::AbsolutePath => "absolute_path",
            Refusal::NulByte => "nul_byte",
            Refusal::NotUtf8 => "not_utf8",
            Refusal::Traversal => "traversal",
            Refusal::NonCanonical => "non_canonical",
            Refusal::Backslash => "backslash",
            Refusal::TooDeep => "too_deep",
            Refusal::PathTooLong => "path_too_long",
            Refusal::SymlinkEscape => "symlink_escape",
            Refusal::TooLarge => "too_large",
            Refusal::CeilingExceeded => "ceiling_exceeded",
            Refusal::NotFound => "not_found",
            Refusal::IsADirectory => "is_a_directory",
            Refusal::NotADirectory => "not_a_directory",
        }
    }
}

/// A refused operation: nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScratchError {
    pub refusal: Refusal,
    pub message: String,
}

impl ScratchError {
    pub fn new(refusal: Refusal, message: impl Into<String>) -> Self {
        ScratchError {
            refusal,
            message: message.into(),
        }
    }
    pub(crate) fn io(context: &str, e: std::io::Error) -> Self {
        // An I/O failure we did not predict is reported, never swallowed; it maps to the nearest
        // refusal so the caller sees a stable code.
        let refusal = match e.kind() {
            std::io::ErrorKind::NotFound => Refusal::NotFound,
            _ => Refusal::NotFound,
        };
        ScratchError::new(refusal, format!("{context}: {e}"))
    }
}

impl fmt::Display for ScratchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.refusal.code(), self.message)
    }
}

impl std::error::Error for ScratchError {}

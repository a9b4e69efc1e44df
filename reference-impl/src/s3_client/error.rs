//! The client's one error type: what a person needs to read (operation, status, S3's code and
//! message) and what a caller classifies on (the status and the code).

/// How far a request got before it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum S3ErrorKind {
    /// Refused by the client before sending (a key no URL can carry).
    Refused,
    /// Sent, but no answer came: no connection, a reset, a body cut short.
    Transport,
    /// No answer within the client's operation timeout.
    Timeout,
    /// The server answered with an error status.
    Response,
}

/// A failed S3 request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct S3Error {
    pub kind: S3ErrorKind,
    /// The operation's S3 name (`PutObject`).
    pub operation: &'static str,
    /// The HTTP status; `None` when the request never got an answer.
    pub status: Option<u16>,
    /// S3's error code from the XML body (`<Code>`), when the answer had one.
    pub code: Option<String>,
    /// Operation, status, code and the server's message, for a person.
    pub message: String,
}

impl S3Error {
    pub(super) fn refused(operation: &'static str, why: &str) -> S3Error {
        S3Error {
            kind: S3ErrorKind::Refused,
            operation,
            status: None,
            code: None,
            message: format!("{operation}: refused by the client before sending: {why}"),
        }
    }

    pub(super) fn transport(operation: &'static str, why: &str) -> S3Error {
        S3Error {
            kind: S3ErrorKind::Transport,
            operation,
            status: None,
            code: None,
            message: format!("{operation}: no answer: {why}"),
        }
    }

    pub(super) fn timeout(operation: &'static str, after: std::time::Duration) -> S3Error {
        S3Error {
            kind: S3ErrorKind::Timeout,
            operation,
            status: None,
            code: None,
            message: format!("{operation}: no answer within {after:?}"),
        }
    }

    /// An error answer: its code and message read from the body (a HEAD answer has none).
    pub(super) fn response(operation: &'static str, status: u16, body: &[u8]) -> S3Error {
        let (code, server_message) = super::xml::error_body(body);
        let mut message = format!("{operation}: HTTP {status}");
        if let Some(c) = &code {
            message.push_str(&format!(" {c}"));
        }
        if let Some(m) = server_message.filter(|m| !m.is_empty()) {
            message.push_str(&format!(": {m}"));
        }
        S3Error {
            kind: S3ErrorKind::Response,
            operation,
            status: Some(status),
            code,
            message,
        }
    }

    /// An answer the client could not read (a malformed listing, say).
    pub(super) fn unreadable(operation: &'static str, status: u16, why: &str) -> S3Error {
        S3Error {
            kind: S3ErrorKind::Response,
            operation,
            status: Some(status),
            code: None,
            message: format!("{operation}: HTTP {status}, an answer the client cannot read: {why}"),
        }
    }

    /// S3's error code, when the answer had one.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_answer_names_operation_status_code_and_message() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>\
            <Message>Please reduce your request rate.</Message></Error>";
        let e = S3Error::response("PutObject", 503, body);
        assert_eq!(e.status, Some(503));
        assert_eq!(e.code(), Some("SlowDown"));
        assert_eq!(
            e.to_string(),
            "PutObject: HTTP 503 SlowDown: Please reduce your request rate."
        );
    }

    #[test]
    fn a_head_answer_has_a_status_and_no_code() {
        let e = S3Error::response("HeadObject", 404, b"");
        assert_eq!((e.status, e.code()), (Some(404), None));
        assert_eq!(e.to_string(), "HeadObject: HTTP 404");
    }
}

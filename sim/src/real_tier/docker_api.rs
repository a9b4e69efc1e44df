//! The few Docker Engine API calls [`pg_container`](super::pg_container) makes, over the
//! daemon's Unix socket with hyper's HTTP/1.1 client: ping, inspect an image, create, start,
//! follow the logs, inspect, list by label, remove.
//!
//! Ours rather than bollard's: bollard's generated API models cost about 22 s of build CPU
//! (issue 25) for seven calls whose bodies are a few fields each, read here as JSON values.
//! One connection per request: a run makes a handful of calls.
//!
//! Every path carries [`API_VERSION`]: Debian's dockerd 20.10 accepts at most 1.41, and a
//! pinned version means a newer daemon keeps answering in the shape read here.

use bytes::{Buf, Bytes, BytesMut};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;

/// The Docker Engine API version every request names.
pub const API_VERSION: &str = "v1.41";

/// A call the daemon refused or that never reached it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status of a refusal; `None` when no answer came (socket, protocol, timeout).
    pub status: Option<StatusCode>,
    pub message: String,
}

impl ApiError {
    pub(crate) fn unanswered(message: impl Into<String>) -> ApiError {
        ApiError {
            status: None,
            message: message.into(),
        }
    }

    /// A non-2xx answer: its status and Docker's `message` field, else the body as text.
    pub fn from_answer(status: StatusCode, body: &[u8]) -> ApiError {
        let message = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("message")?.as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
        ApiError {
            status: Some(status),
            message,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status == Some(StatusCode::NOT_FOUND)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(status) => write!(f, "Docker answered {status}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ApiError {}

impl From<ApiError> for String {
    fn from(e: ApiError) -> String {
        e.to_string()
    }
}

/// The daemon at a Unix socket.
#[derive(Clone, Debug)]
pub struct Docker {
    socket: String,
}

impl Docker {
    pub fn new(socket: impl Into<String>) -> Docker {
        Docker {
            socket: socket.into(),
        }
    }

    /// `GET /_ping`.
    pub async fn ping(&self) -> Result<(), ApiError> {
        self.call(Method::GET, "/_ping", None).await.map(|_| ())
    }

    /// `GET /images/{name}/json`: a missing image is a 404 ([`ApiError::is_not_found`]).
    pub async fn inspect_image(&self, name: &str) -> Result<Value, ApiError> {
        self.call_json(Method::GET, &format!("/images/{name}/json"), None)
            .await
    }

    /// `POST /containers/create` with `body` (the API's container config); returns the id.
    pub async fn create_container(&self, body: &Value) -> Result<String, ApiError> {
        let created = self
            .call_json(Method::POST, "/containers/create", Some(body))
            .await?;
        created
            .get("Id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ApiError::unanswered(format!("create answered no Id: {created}")))
    }

    /// `POST /containers/{id}/start`.
    pub async fn start_container(&self, id: &str) -> Result<(), ApiError> {
        self.call(Method::POST, &format!("/containers/{id}/start"), None)
            .await
            .map(|_| ())
    }

    /// `GET /containers/{id}/logs?follow=true&stdout=true&stderr=true`: the body, to read
    /// with [`LogFrames`] (the container has no TTY, so the stream is multiplexed).
    pub async fn follow_logs(&self, id: &str) -> Result<Incoming, ApiError> {
        let path = format!("/containers/{id}/logs?follow=true&stdout=true&stderr=true");
        Ok(self.request(Method::GET, &path, None).await?.into_body())
    }

    /// `GET /containers/{id}/json`.
    pub async fn inspect_container(&self, id: &str) -> Result<Value, ApiError> {
        self.call_json(Method::GET, &format!("/containers/{id}/json"), None)
            .await
    }

    /// `GET /containers/json?all=true&filters=...`: every container (running or not)
    /// carrying `label` (`key` or `key=value`).
    pub async fn list_labelled(&self, label: &str) -> Result<Vec<Value>, ApiError> {
        let path = format!("/containers/json?all=true&{}", label_filter_query(label));
        match self.call_json(Method::GET, &path, None).await? {
            Value::Array(items) => Ok(items),
            other => Err(ApiError::unanswered(format!(
                "the container list is not an array: {other}"
            ))),
        }
    }

    /// `DELETE /containers/{id}?force=true&v=true`: stops it if running, and drops its
    /// anonymous volumes. A missing container is a 404 ([`ApiError::is_not_found`]).
    pub async fn remove_container(&self, id: &str) -> Result<(), ApiError> {
        self.call(
            Method::DELETE,
            &format!("/containers/{id}?force=true&v=true"),
            None,
        )
        .await
        .map(|_| ())
    }

    async fn call_json(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let bytes = self.call(method, path, body).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::unanswered(format!("reading Docker's answer to {path}: {e}")))
    }

    /// A request whose whole answer is read.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Bytes, ApiError> {
        let answer = self.request(method, path, body).await?;
        read_all(answer.into_body(), path).await
    }

    /// Sends one request on a connection of its own; a non-2xx answer is read and returned as
    /// an [`ApiError`], a 2xx one is returned with its body unread (logs stream).
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<http::Response<Incoming>, ApiError> {
        let stream = tokio::net::UnixStream::connect(&self.socket)
            .await
            .map_err(|e| {
                ApiError::unanswered(format!("no Docker daemon answers at {} ({e})", self.socket))
            })?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ApiError::unanswered(format!("HTTP handshake with Docker: {e}")))?;
        // Drives the connection until the answer's body is read or dropped.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("/{API_VERSION}{path}"))
            // HTTP/1.1 needs a Host; the daemon ignores its value on a Unix socket.
            .header(http::header::HOST, "docker");
        let payload = match body {
            Some(v) => {
                builder = builder.header(http::header::CONTENT_TYPE, "application/json");
                Bytes::from(v.to_string())
            }
            None => Bytes::new(),
        };
        let request = builder
            .body(Full::new(payload))
            .map_err(|e| ApiError::unanswered(format!("building the request for {path}: {e}")))?;
        let answer = sender
            .send_request(request)
            .await
            .map_err(|e| ApiError::unanswered(format!("Docker request {path}: {e}")))?;
        let status = answer.status();
        if status.is_success() {
            return Ok(answer);
        }
        let body = read_all(answer.into_body(), path).await?;
        Err(ApiError::from_answer(status, &body))
    }
}

async fn read_all(body: Incoming, path: &str) -> Result<Bytes, ApiError> {
    body.collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| ApiError::unanswered(format!("reading Docker's answer to {path}: {e}")))
}

/// Every byte but RFC 3986's unreserved characters is percent-encoded in a query value.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The `filters` query parameter selecting containers with `label`: the JSON object
/// `{"label":["<label>"]}`, percent-encoded.
pub fn label_filter_query(label: &str) -> String {
    let filters = serde_json::json!({ "label": [label] });
    format!(
        "filters={}",
        utf8_percent_encode(&filters.to_string(), QUERY_VALUE)
    )
}

/// Which of the container's streams a log frame came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogStream {
    Stdin,
    Stdout,
    Stderr,
}

/// Decodes Docker's multiplexed log stream: each frame is an 8-byte header (stream type, three
/// zero bytes, a big-endian u32 payload length) then the payload. Body chunks do not follow
/// frame boundaries, so bytes are buffered until a whole frame is in.
#[derive(Debug, Default)]
pub struct LogFrames {
    pending: BytesMut,
}

const FRAME_HEADER: usize = 8;

impl LogFrames {
    pub fn new() -> LogFrames {
        LogFrames::default()
    }

    /// Adds a chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.pending.extend_from_slice(chunk);
    }

    /// The next whole frame, if one is buffered. An unknown stream type is an error: the
    /// stream is not multiplexed (a TTY container) or out of step.
    pub fn next_frame(&mut self) -> Result<Option<(LogStream, Bytes)>, String> {
        if self.pending.len() < FRAME_HEADER {
            return Ok(None);
        }
        let stream = match self.pending[0] {
            0 => LogStream::Stdin,
            1 => LogStream::Stdout,
            2 => LogStream::Stderr,
            other => return Err(format!("log frame of unknown stream type {other}")),
        };
        let len = u32::from_be_bytes([
            self.pending[4],
            self.pending[5],
            self.pending[6],
            self.pending[7],
        ]) as usize;
        if self.pending.len() < FRAME_HEADER + len {
            return Ok(None);
        }
        self.pending.advance(FRAME_HEADER);
        Ok(Some((stream, self.pending.split_to(len).freeze())))
    }

    /// Bytes of a frame not yet complete (at the stream's end: a cut frame).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(stream: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![stream, 0, 0, 0];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn drain(frames: &mut LogFrames) -> Vec<(LogStream, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some((s, p)) = frames.next_frame().unwrap() {
            out.push((s, p.to_vec()));
        }
        out
    }

    #[test]
    fn frames_split_across_chunks_at_every_byte_are_decoded_whole() {
        let mut wire = frame(2, b"LOG:  database system is ready to accept connections\n");
        wire.extend(frame(1, b"out\n"));
        wire.extend(frame(2, b""));
        let expected = vec![
            (
                LogStream::Stderr,
                b"LOG:  database system is ready to accept connections\n".to_vec(),
            ),
            (LogStream::Stdout, b"out\n".to_vec()),
            (LogStream::Stderr, Vec::new()),
        ];
        for cut in 0..=wire.len() {
            for second_cut in cut..=wire.len() {
                let mut frames = LogFrames::new();
                let mut got = Vec::new();
                for chunk in [&wire[..cut], &wire[cut..second_cut], &wire[second_cut..]] {
                    frames.push(chunk);
                    got.extend(drain(&mut frames));
                }
                assert_eq!(got, expected, "cut at {cut} and {second_cut}");
                assert_eq!(frames.pending_len(), 0);
            }
        }
    }

    #[test]
    fn several_frames_in_one_chunk_come_out_in_order_with_their_streams() {
        let mut wire = frame(1, b"one");
        wire.extend(frame(2, b"two"));
        wire.extend(frame(1, b"three"));
        let mut frames = LogFrames::new();
        frames.push(&wire);
        assert_eq!(
            drain(&mut frames),
            vec![
                (LogStream::Stdout, b"one".to_vec()),
                (LogStream::Stderr, b"two".to_vec()),
                (LogStream::Stdout, b"three".to_vec()),
            ]
        );
    }

    #[test]
    fn a_half_frame_waits_for_the_rest() {
        let wire = frame(2, b"hello");
        let mut frames = LogFrames::new();
        frames.push(&wire[..10]);
        assert_eq!(frames.next_frame().unwrap(), None);
        assert_eq!(frames.pending_len(), 10);
        frames.push(&wire[10..]);
        assert_eq!(
            drain(&mut frames),
            vec![(LogStream::Stderr, b"hello".to_vec())]
        );
    }

    #[test]
    fn an_unknown_stream_type_is_an_error() {
        let mut frames = LogFrames::new();
        frames.push(b"2024-01-01 text from a TTY");
        assert!(frames.next_frame().is_err());
    }

    #[test]
    fn the_label_filter_is_a_percent_encoded_json_object() {
        assert_eq!(
            label_filter_query("tidemark.owner=abc-1"),
            "filters=%7B%22label%22%3A%5B%22tidemark.owner%3Dabc-1%22%5D%7D"
        );
    }

    #[test]
    fn a_refusal_carries_the_status_and_dockers_message() {
        let e = ApiError::from_answer(
            StatusCode::NOT_FOUND,
            br#"{"message":"No such image: tidemark-postgres:15"}"#,
        );
        assert!(e.is_not_found());
        assert_eq!(
            e.to_string(),
            "Docker answered 404 Not Found: No such image: tidemark-postgres:15"
        );
    }

    #[test]
    fn a_refusal_without_json_keeps_the_body_as_its_message() {
        let e = ApiError::from_answer(StatusCode::INTERNAL_SERVER_ERROR, b"daemon broke\n");
        assert!(!e.is_not_found());
        assert_eq!(
            e.to_string(),
            "Docker answered 500 Internal Server Error: daemon broke"
        );
    }
}

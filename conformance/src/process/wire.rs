//! The protocol lines exchanged with a running implementation: init and its reply, each request
//! and its reply, every read bounded in time and in length, and anything else the program prints
//! turned into a [`DriverError`] naming it. The process itself (spawn, kill, its stderr) is
//! `child.rs`.

use super::child::Adapter;
use super::{MAX_LINE_BYTES, RUNNING_GRACE};
use crate::driver::DriverError;
use crate::protocol::{
    FromImplementation, Init, InitOk, RequestEnvelope, ToImplementation, INIT_ID, PROTOCOL,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;
use tidemark_sim::clip::{clip, clip_bytes};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdout;
use tokio::time::Instant;

impl Adapter {
    /// Sends init and checks init_ok: the same protocol, and a well-formed claim.
    pub(super) async fn handshake(&mut self, init: Init) -> Result<InitOk, DriverError> {
        let bound = self.startup_timeout;
        self.send(&ToImplementation::<()>::Init(init), "init".into(), bound)
            .await?;
        // The init's answer carries no profile's body: a `reply` here, whatever its body, is
        // the wrong message rather than an unreadable line.
        match self
            .receive::<serde::de::IgnoredAny>(INIT_ID, "init", bound)
            .await?
        {
            FromImplementation::InitOk(ok) if ok.protocol == PROTOCOL => {
                match crate::variants::Declared::read(&ok.variants) {
                    Ok(_) => Ok(ok),
                    Err(e) => Err(self.failure(format!("the init_ok's variants: {e}")).await),
                }
            }
            FromImplementation::InitOk(ok) => Err(self
                .failure(format!(
                    "the implementation speaks {:?}, but the harness speaks {PROTOCOL:?}",
                    ok.protocol
                ))
                .await),
            FromImplementation::Error(e) => Err(self
                .failure(format!("the implementation refused init: {}", e.message))
                .await),
            other => Err(self
                .failure(format!(
                    "expected init_ok in answer to init, got {}",
                    other.type_name()
                ))
                .await),
        }
    }

    pub(super) async fn request<B: Serialize, O: DeserializeOwned>(
        &mut self,
        envelope: RequestEnvelope<B>,
        op: &str,
    ) -> Result<O, DriverError> {
        let id = envelope.id;
        let bound = self.reply_timeout;
        let what = format!("request {id} ({op})");
        self.send(&ToImplementation::Request(envelope), what, bound)
            .await?;
        match self.receive::<O>(id, op, bound).await? {
            FromImplementation::Reply(reply) => Ok(reply.body),
            FromImplementation::Error(e) => Err(self
                .failure(format!(
                    "the implementation reported an error for request {id} ({op}): {}",
                    clip(&e.message)
                ))
                .await),
            other => Err(self
                .failure(format!(
                    "expected a reply to request {id} ({op}), got {}",
                    other.type_name()
                ))
                .await),
        }
    }

    pub(super) async fn send<B: Serialize>(
        &mut self,
        message: &ToImplementation<B>,
        what: String,
        bound: Duration,
    ) -> Result<(), DriverError> {
        let mut line = serde_json::to_vec(message).expect("protocol messages always serialise");
        line.push(b'\n');
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(DriverError(format!(
                "cannot send {what}: the implementation's stdin is closed"
            )));
        };
        let written = tokio::time::timeout(bound, async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        })
        .await;
        match written {
            Ok(Ok(())) => Ok(()),
            // A broken pipe means the program has gone: say so, with what it printed last and how
            // it ended.
            Ok(Err(e)) => {
                let printed = self.unread_stdout_line().await;
                Err(self
                    .failure_on_exit(format!("cannot send {what}: {e}{printed}"))
                    .await)
            }
            Err(_) => Err(self
                .failure(format!(
                    "the implementation did not read {what} within {} ms (is it reading stdin?)",
                    bound.as_millis()
                ))
                .await),
        }
    }

    /// The first line a program that has gone left on its stdout, quoted, if any: often its
    /// reason for going.
    pub(super) async fn unread_stdout_line(&mut self) -> String {
        let mut line = Vec::new();
        match tokio::time::timeout(
            RUNNING_GRACE,
            read_bounded_line(&mut self.stdout, &mut line),
        )
        .await
        {
            Ok(Ok(LineRead::Line)) if !line.iter().all(u8::is_ascii_whitespace) => {
                format!("; it had printed {}", quote_line(&line))
            }
            _ => String::new(),
        }
    }

    /// Reads the next message, which must answer `id`. Blank lines are ignored; the whole wait,
    /// however many lines it takes, is bounded by `bound`.
    pub(super) async fn receive<O: DeserializeOwned>(
        &mut self,
        id: u64,
        op: &str,
        bound: Duration,
    ) -> Result<FromImplementation<O>, DriverError> {
        let awaited = if id == INIT_ID {
            "init".to_string()
        } else {
            format!("request {id} ({op})")
        };
        let deadline = Instant::now() + bound;
        loop {
            let mut line = Vec::new();
            let read =
                tokio::time::timeout_at(deadline, read_bounded_line(&mut self.stdout, &mut line))
                    .await;
            let read = match read {
                Ok(r) => r,
                Err(_) => {
                    return Err(self
                        .failure(format!(
                            "no answer to {awaited} within {} ms ({})",
                            bound.as_millis(),
                            if id == INIT_ID {
                                "the startup bound: at least 30 s, or --timeout-ms if longer"
                            } else {
                                "the bound is --timeout-ms"
                            }
                        ))
                        .await)
                }
            };
            match read {
                Err(e) => return Err(self.failure(format!("cannot read the answer to {awaited}: {e}")).await),
                Ok(LineRead::Eof) => {
                    return Err(self.failure_on_exit(format!("the implementation closed its stdout before answering {awaited}")).await)
                }
                Ok(LineRead::TooLong) => {
                    return Err(self
                        .failure(format!("the implementation printed a line longer than {MAX_LINE_BYTES} bytes while answering {awaited}"))
                        .await)
                }
                Ok(LineRead::Line) => {}
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = serde_json::from_slice(&line)
                .map_err(|e| e.to_string())
                .and_then(|m: FromImplementation<O>| match &m {
                    FromImplementation::InitOk(ok) => (self.claims_check)(ok).map(|()| m),
                    _ => Ok(m),
                });
            let message = match parsed {
                Ok(m) => m,
                Err(e) => {
                    return Err(self
                        .failure(format!(
                            "the implementation printed a line that is not a {PROTOCOL} message while the harness awaited the answer to {awaited} ({e}): {}",
                            quote_line(&line)
                        ))
                        .await)
                }
            };
            if message.in_reply_to() != id {
                return Err(self
                    .failure(format!(
                        "the implementation answered request {} but the harness awaited the answer to {awaited}",
                        message.in_reply_to()
                    ))
                    .await);
            }
            return Ok(message);
        }
    }
}

/// A line the program printed, quoted and cut by the shared rule ([`clip_bytes`]).
pub(super) fn quote_line(line: &[u8]) -> String {
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    format!("`{}`", clip_bytes(&line[..end]))
}

pub(super) enum LineRead {
    Line,
    Eof,
    TooLong,
}

/// Reads up to and excluding the next `\n` into `line`, refusing to hold more than
/// [`MAX_LINE_BYTES`]. A final line without a newline still counts as a line.
pub(super) async fn read_bounded_line(
    reader: &mut BufReader<ChildStdout>,
    line: &mut Vec<u8>,
) -> std::io::Result<LineRead> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        if let Some(newline) = available.iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&available[..newline]);
            reader.consume(newline + 1);
            return Ok(LineRead::Line);
        }
        let taken = available.len();
        line.extend_from_slice(available);
        reader.consume(taken);
        if line.len() > MAX_LINE_BYTES {
            return Ok(LineRead::TooLong);
        }
    }
}

//! The wire of every profile's turmoil world: JSON lines over turmoil's TCP, one request a
//! connection. A guest connects, writes one [`Envelope`] line and reads one answer line
//! ([`call`]); the host answers each connection through its handler ([`serve_lines`]). One
//! request a connection, so a broken connection loses one request or its answer, never more.

use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// One request line: who sent it (the guest's number), its number in that guest's sequence,
/// and the profile's operation.
#[derive(Serialize, Deserialize)]
pub struct Envelope<Op> {
    pub client: usize,
    pub seq: usize,
    pub op: Op,
}

/// Sends `op` to `host:port` and reads its answer. Any transport failure (refused, reset, a
/// partition) is an error; the caller puts its own timeout around it.
pub async fn call<Op: Serialize, Out: DeserializeOwned>(
    host: &str,
    port: u16,
    client: usize,
    seq: usize,
    op: Op,
) -> std::io::Result<Out> {
    let stream = turmoil::net::TcpStream::connect((host, port)).await?;
    call_over(stream, client, seq, op).await
}

/// [`call`] over a connection the caller opened: a guest that must know whether its request
/// could have reached the host (a connection never opened carried nothing) connects first.
pub async fn call_over<Op: Serialize, Out: DeserializeOwned>(
    mut stream: turmoil::net::TcpStream,
    client: usize,
    seq: usize,
    op: Op,
) -> std::io::Result<Out> {
    let mut line = serde_json::to_string(&Envelope { client, seq, op })?;
    line.push('\n');
    stream.write_all(line.as_bytes()).await?;
    let mut reader = BufReader::new(stream);
    let mut answer = String::new();
    reader.read_line(&mut answer).await?;
    serde_json::from_str(&answer)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// A host's accept loop on `port`: each connection's one line parsed as an envelope and
/// handed to `handler`, its answer written back as one line. A line that does not parse, and
/// a handler's `None`, close the connection unanswered.
pub async fn serve_lines<Op, Out, H, F>(port: u16, handler: H) -> turmoil::Result
where
    Op: DeserializeOwned + Send + 'static,
    Out: Serialize + Send,
    H: Fn(Envelope<Op>) -> F + Send + Sync + 'static,
    F: Future<Output = Option<Out>> + Send + 'static,
{
    let handler = Arc::new(handler);
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let handler = handler.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            if reader.read_line(&mut line).await.is_err() {
                return;
            }
            let Ok(env) = serde_json::from_str::<Envelope<Op>>(&line) else {
                return;
            };
            let Some(outcome) = handler(env).await else {
                return;
            };
            let mut out = serde_json::to_string(&outcome).unwrap_or_default();
            out.push('\n');
            let _ = reader.get_mut().write_all(out.as_bytes()).await;
        });
    }
}

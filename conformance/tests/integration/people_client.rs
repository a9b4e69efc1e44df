//! The harness as a client of the people's files API (SPEC part SF) against servers that
//! misbehave: each fails the step with a message naming the request and what came back, within
//! the client's timeout, and the harness never sends a request anywhere but loopback.

use std::time::Duration;

use tidemark_conformance::profiles::scoped::contract::PeopleCall;
use tidemark_conformance::profiles::scoped::people::PeopleClient;
use tidemark_conformance::profiles::scoped::ScopedOutcome;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SHORT: Duration = Duration::from_millis(300);
const LISTING: &str = "GET /v1/agent-sessions/s1/files";

/// A server on loopback that answers every connection with `answer` (after reading the
/// request head), then keeps the connection open (or, with `forever`, writes `answer` again and
/// again): its base URL.
async fn misbehaving(answer: &'static [u8], forever: bool) -> String {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                if stream.write_all(answer).await.is_err() {
                    return;
                }
                while forever && stream.write_all(b"5\r\nmore.\r\n").await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                tokio::time::sleep(Duration::from_secs(30)).await;
            });
        }
    });
    url
}

async fn listing_at(url: &str) -> Result<ScopedOutcome, String> {
    PeopleClient::with_timeout(SHORT)
        .send(url, 0, "anonymous", "s1", &PeopleCall::List)
        .await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_server_that_never_answers_fails_the_request_within_the_timeout() {
    runtime().block_on(async {
        let url = misbehaving(b"", false).await;
        let started = std::time::Instant::now();
        let e = listing_at(&url).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5), "{e}");
        assert!(
            e.starts_with(LISTING) && e.contains("no complete answer"),
            "{e}"
        );
    });
}

#[test]
fn an_answer_that_is_not_http_fails_the_request_naming_it() {
    runtime().block_on(async {
        let url = misbehaving(b"SSH-2.0-OpenSSH\r\n\r\n", false).await;
        let e = listing_at(&url).await.unwrap_err();
        assert!(
            e.starts_with(LISTING) && e.contains("no HTTP answer"),
            "{e}"
        );
    });
}

#[test]
fn a_redirect_is_never_followed() {
    runtime().block_on(async {
        let url = misbehaving(
            b"HTTP/1.1 302 Found\r\nLocation: http://192.0.2.1/files\r\nContent-Length: 0\r\n\r\n",
            false,
        )
        .await;
        let e = listing_at(&url).await.unwrap_err();
        assert!(e.starts_with(LISTING) && e.contains("redirect"), "{e}");
        assert!(
            e.contains("192.0.2.1"),
            "the message shows where it pointed: {e}"
        );
    });
}

#[test]
fn a_body_that_is_not_the_json_sf_names_fails_the_request_showing_it() {
    runtime().block_on(async {
        let url = misbehaving(
            b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n<html></html>",
            false,
        )
        .await;
        let e = listing_at(&url).await.unwrap_err();
        assert!(e.starts_with(LISTING) && e.contains("<html></html>"), "{e}");
        let url = misbehaving(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 45\r\n\r\n{\"error\":{\"reason\":\"traversal\",\"message\":\"\"}}",
            false,
        )
        .await;
        let e = listing_at(&url).await.unwrap_err();
        assert!(e.contains("status 404 for the reason traversal"), "{e}");
    });
}

#[test]
fn a_body_that_never_ends_is_cut_off_at_the_timeout() {
    runtime().block_on(async {
        let url = misbehaving(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            true,
        )
        .await;
        let started = std::time::Instant::now();
        let e = listing_at(&url).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5), "{e}");
        assert!(
            e.starts_with(LISTING) && e.contains("no complete answer"),
            "{e}"
        );
    });
}

#[test]
fn a_base_url_off_loopback_is_refused_before_anything_is_sent() {
    runtime().block_on(async {
        for url in [
            "http://192.0.2.1:80",
            "http://localhost:8080",
            "https://127.0.0.1:443",
        ] {
            let e = listing_at(url).await.unwrap_err();
            assert!(e.contains(url), "{e}");
        }
    });
}

//! The harness as a client of the people's files API (SPEC part SF): a person's request sent over
//! a real socket to the loopback address the implementation named, with the headers it minted
//! for that person, and the answer judged against SF's shapes before it becomes an outcome.
//!
//! A server that misbehaves fails the step with a message naming the request and what came
//! back: no answer, an answer that is not HTTP, a redirect (never followed), a body that is not
//! the JSON SF names, a status SF-1.5 does not give the reason, a body that never ends (cut at
//! [`REQUEST_TIMEOUT`] or [`MAX_BODY_BYTES`]). Nothing is sent anywhere but loopback.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::contract::{PeopleCall, ScopedOutcome, ANONYMOUS, PEOPLE_API_FIELD};
use tidemark_sim::clip::clip;

/// The longest a request may take, its whole body read.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an answer's body the harness reads.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// The header that hands each request its time (PROTOCOL.md, "The people's files API").
pub const NOW_HEADER: &str = "tidemark-now-ms";

/// SF-1.5: the status a refusal's reason is answered with.
pub fn status_for(reason: &str) -> u16 {
    match reason {
        "unauthenticated" => 401,
        "permission_denied" => 403,
        "not_found" | "unknown_entity" | "unknown_scope" => 404,
        "too_large" => 413,
        "storage_unavailable" | "database_unavailable" | "no_such_bucket" => 503,
        "config" => 500,
        _ => 400,
    }
}

/// Checks that `url` is `http://` to a loopback IP address with a port, and nothing else: the
/// harness sends people's requests only there. Answers the URL without a trailing `/`.
pub fn loopback_base_url(url: &str) -> Result<String, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("people_api {:?} is not a URL: {e}", clip(url)))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!(
            "people_api {:?} must be an http:// URL (loopback, no TLS)",
            clip(url)
        ));
    }
    let host = uri.host().unwrap_or_default();
    let ip: Option<IpAddr> = host.trim_matches(['[', ']']).parse().ok();
    if !ip.is_some_and(|ip| ip.is_loopback()) {
        return Err(format!(
            "people_api {:?} names the host {:?}; the harness sends requests only to a loopback IP address (127.0.0.1, ::1)",
            clip(url),
            clip(host)
        ));
    }
    if uri.port_u16().is_none() {
        return Err(format!("people_api {:?} names no port", clip(url)));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(format!(
            "people_api {:?} must be a base URL with no path",
            clip(url)
        ));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// The people's files API's base URL a program names in `init_ok` (`people_api`), checked at
/// every handshake: when named, a loopback URL ([`loopback_base_url`]). (A program answers the
/// probe's init, which names no profile, without one; a scenario's person step then fails if
/// its scoped init_ok names none.)
pub fn declared(claims: &crate::protocol::InitOk) -> Result<Option<String>, String> {
    claims
        .declared::<String>(PEOPLE_API_FIELD)?
        .map(|url| loopback_base_url(&url))
        .transpose()
}

/// People's credentials and a client for their requests.
pub struct PeopleClient {
    client: Client<HttpConnector, Full<Bytes>>,
    /// How long one request may take, its whole body read.
    timeout: Duration,
    /// Each person's headers, as the implementation minted them.
    people: BTreeMap<String, BTreeMap<String, String>>,
}

impl Default for PeopleClient {
    fn default() -> Self {
        PeopleClient::new()
    }
}

impl PeopleClient {
    pub fn new() -> PeopleClient {
        PeopleClient::with_timeout(REQUEST_TIMEOUT)
    }

    /// A client whose requests give up after `timeout` (tests of a misbehaving server use a
    /// short one).
    pub fn with_timeout(timeout: Duration) -> PeopleClient {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeout));
        PeopleClient {
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
            people: BTreeMap::new(),
        }
    }

    /// Keeps `person`'s credentials (a `credentials` outcome's headers).
    pub fn remember(&mut self, person: &str, headers: BTreeMap<String, String>) {
        self.people.insert(person.to_string(), headers);
    }

    /// Sends `call` as `person` to the API at `base_url` (checked by [`loopback_base_url`]) at
    /// `now_ms`. `Err` names the request and what came back; a refusal is an outcome.
    pub async fn send(
        &self,
        base_url: &str,
        now_ms: i64,
        person: &str,
        session: &str,
        call: &PeopleCall,
    ) -> Result<ScopedOutcome, String> {
        let base = loopback_base_url(base_url)?;
        let (method, target, body) = request_parts(session, call);
        let request_name = format!("{method} {target}");
        let fail = |what: String| format!("{request_name}: {what}");
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(format!("{base}{target}"))
            .header(NOW_HEADER, now_ms.to_string());
        if person != ANONYMOUS {
            let headers = self
                .people
                .get(person)
                .ok_or_else(|| fail(format!("no credentials were minted for {person:?}")))?;
            for (k, v) in headers {
                builder = builder.header(k.as_str(), v.as_str());
            }
        }
        let request = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| fail(format!("the request could not be built: {e}")))?;
        let answered = tokio::time::timeout(self.timeout, async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| format!("no HTTP answer: {e}"))?;
            let (parts, body) = response.into_parts();
            let bytes = Limited::new(body, MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|e| format!("the body could not be read: {e}"))?
                .to_bytes();
            Ok::<_, String>((parts, bytes))
        })
        .await
        .map_err(|_| fail(format!("no complete answer within {:?}", self.timeout)))?
        .map_err(fail)?;
        let (parts, bytes) = answered;
        judge(call, parts.status.as_u16(), &parts.headers, &bytes).map_err(fail)
    }
}

/// The method, request target and body of `call` to session `session` (SF-1.1): the URL path
/// after `/files/` exactly as the call spells it.
pub(crate) fn request_parts(session: &str, call: &PeopleCall) -> (&'static str, String, Vec<u8>) {
    let (method, url_path, body) = match call {
        PeopleCall::Upload { url_path, content } => {
            ("PUT", Some(url_path.as_str()), content.as_bytes().to_vec())
        }
        PeopleCall::Download { url_path } => ("GET", Some(url_path.as_str()), Vec::new()),
        PeopleCall::Remove { url_path } => ("DELETE", Some(url_path.as_str()), Vec::new()),
        PeopleCall::List | PeopleCall::UploadScopes => ("GET", None, Vec::new()),
    };
    let target = match url_path {
        Some(p) => format!("/v1/agent-sessions/{session}/files/{p}"),
        None => format!("/v1/agent-sessions/{session}/files"),
    };
    (method, target, body)
}

/// An answer judged against SF's shapes and turned into an outcome (the scoped world's person
/// guests judge theirs with it too).
pub(crate) fn judge(
    call: &PeopleCall,
    status: u16,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<ScopedOutcome, String> {
    let shown = || clip(&String::from_utf8_lossy(body)).to_string();
    if (300..400).contains(&status) {
        return Err(format!(
            "a redirect ({status}, location {:?}); SF answers directly and the harness follows no redirect",
            headers.get("location").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        ));
    }
    let json = || -> Result<Value, String> {
        serde_json::from_slice(body).map_err(|e| {
            format!(
                "status {status} with a body that is not JSON ({e}): {}",
                shown()
            )
        })
    };
    if !(200..300).contains(&status) {
        let v = json()?;
        let reason = v
            .pointer("/error/reason")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                format!(
                    "status {status} without SF-1.5's {{\"error\":{{\"reason\",\"message\"}}}}: {}",
                    shown()
                )
            })?;
        let message = v
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let expected = status_for(reason);
        if status != expected {
            return Err(format!(
                "status {status} for the reason {reason}; SF-1.5 answers it {expected}"
            ));
        }
        return Ok(ScopedOutcome::Refused {
            reason: reason.to_string(),
            message: message.to_string(),
        });
    }
    let file = |v: &Value| -> Result<(String, u64), String> {
        let path = v.get("path").and_then(Value::as_str);
        let scope = v.get("scope").and_then(Value::as_str);
        let size = v.get("size").and_then(Value::as_u64);
        match (path, scope, size) {
            (Some(p), Some(s), Some(n)) if p.split('/').next() == Some(s) => {
                Ok((p.to_string(), n))
            }
            _ => Err(format!(
                "a file that is not SF-1.2's {{\"path\",\"scope\",\"size\"}} with the path under its scope: {}",
                clip(&v.to_string())
            )),
        }
    };
    match call {
        PeopleCall::Upload { content, .. } => {
            if !matches!(status, 200 | 201) {
                return Err(format!(
                    "an upload answered {status}; SF-1.2 answers 200 or 201"
                ));
            }
            let (path, size) = file(&json()?)?;
            if size != content.len() as u64 {
                return Err(format!(
                    "the upload of {} bytes answered size {size}",
                    content.len()
                ));
            }
            Ok(ScopedOutcome::Written { path })
        }
        PeopleCall::Download { .. } => {
            if status != 200 {
                return Err(format!("a download answered {status}; SF-1.2 answers 200"));
            }
            let header = |name: &str| {
                headers
                    .get(name)
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
                    .unwrap_or_default()
            };
            if !header("content-disposition").starts_with("attachment") {
                return Err(format!(
                    "a download without Content-Disposition: attachment (SF-1.4); it has {:?}",
                    header("content-disposition")
                ));
            }
            if header("x-content-type-options") != "nosniff" {
                return Err("a download without X-Content-Type-Options: nosniff (SF-1.4)".into());
            }
            Ok(ScopedOutcome::Content {
                content: String::from_utf8_lossy(body).into_owned(),
            })
        }
        PeopleCall::Remove { .. } => {
            if !matches!(status, 200 | 204) {
                return Err(format!(
                    "a removal answered {status}; SF-1.2 answers 200 or 204"
                ));
            }
            Ok(ScopedOutcome::Ok)
        }
        PeopleCall::List | PeopleCall::UploadScopes => {
            if status != 200 {
                return Err(format!("a listing answered {status}; SF-1.2 answers 200"));
            }
            let v = json()?;
            let malformed = || {
                format!(
                    "a listing that is not SF-1.2's {{\"files\":[…],\"writable\":[…]}}: {}",
                    shown()
                )
            };
            let files = v
                .get("files")
                .and_then(Value::as_array)
                .ok_or_else(malformed)?;
            let writable = v
                .get("writable")
                .and_then(Value::as_array)
                .ok_or_else(malformed)?
                .iter()
                .map(|w| w.as_str().map(str::to_string).ok_or_else(malformed))
                .collect::<Result<Vec<_>, _>>()?;
            if matches!(call, PeopleCall::UploadScopes) {
                return Ok(ScopedOutcome::Listing { paths: writable });
            }
            Ok(ScopedOutcome::Listing {
                paths: files
                    .iter()
                    .map(|f| file(f).map(|(p, _)| p))
                    .collect::<Result<Vec<_>, _>>()?,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_ip_with_a_port_is_a_base_url() {
        assert_eq!(
            loopback_base_url("http://127.0.0.1:8080/").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert!(loopback_base_url("http://[::1]:8080").is_ok());
        for bad in [
            "http://example.com:80",
            "http://localhost:80",
            "http://10.0.0.1:80",
            "https://127.0.0.1:443",
            "http://127.0.0.1",
            "http://127.0.0.1:80/api",
            "not a url",
        ] {
            assert!(loopback_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_refusal_whose_status_disagrees_with_its_reason_is_not_an_outcome() {
        let h = http::HeaderMap::new();
        let body = br#"{"error":{"reason":"traversal","message":"m"}}"#;
        assert!(matches!(
            judge(&PeopleCall::List, 400, &h, body),
            Ok(ScopedOutcome::Refused { reason, .. }) if reason == "traversal"
        ));
        assert!(judge(&PeopleCall::List, 404, &h, body).is_err());
        assert!(judge(&PeopleCall::List, 302, &h, b"").is_err());
        assert!(judge(&PeopleCall::List, 200, &h, b"<html>").is_err());
    }
}

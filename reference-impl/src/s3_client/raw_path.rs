//! Presigning for keys a URL cannot carry the way rusty-s3 builds it: a key with a `.` or `..`
//! path segment (`p/../q`, `.`). rusty-s3 builds every URL with the `url` crate, which resolves
//! such segments away (and `%2E` ones too, as the URL standard says), so the request would
//! reach another key. S3 itself holds these keys as they are, and the harness's stores must too
//! (`sim/tests/integration/real_tier_keys.rs`). For them this module writes the path itself,
//! every byte but the unreserved ones and `/` percent-encoded, and signs it with AWS Signature
//! Version 4 exactly as [`rusty_s3::signing::sign`] does (a test checks the two agree on a key
//! both can carry). Every other request is signed by rusty-s3.

use rusty_s3::{Bucket, Credentials, Method};
use sha2::{Digest, Sha256};

/// Whether `key` has a path segment a URL would resolve away.
pub(super) fn has_dot_segment(key: &str) -> bool {
    key.split('/').any(|s| s == "." || s == "..")
}

/// AWS's URI encoding: every byte but `A-Z a-z 0-9 - . _ ~` as `%XX` (uppercase), and `/` too
/// unless it separates path segments.
fn uri_encode(s: &str, keep_slash: bool, out: &mut String) {
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// HMAC-SHA256 (RFC 2104), written out over sha2: the crate's `hmac` would bring a second
/// sha2 into this crate's dependencies for one function.
fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(data);
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// A presigned URL for `key` in `bucket`, signed at `time`, valid `expires` seconds. `headers`
/// (lowercase names, sorted) are signed with `host` and must be sent as given.
#[allow(clippy::too_many_arguments)] // The inputs of a signature, each one thing.
pub(super) fn presign(
    time: &jiff::Timestamp,
    method: Method,
    bucket: &Bucket,
    key: &str,
    credentials: &Credentials,
    expires: u64,
    headers: &[(&str, &str)],
) -> String {
    let base = bucket.base_url();
    let mut path = base.path().to_string();
    uri_encode(key, true, &mut path);
    let host = match base.port() {
        Some(port) => format!("{}:{port}", base.host_str().unwrap_or_default()),
        None => base.host_str().unwrap_or_default().to_string(),
    };
    let date = time.strftime("%Y%m%dT%H%M%SZ").to_string();
    let day = time.strftime("%Y%m%d").to_string();
    let scope = format!("{day}/{}/s3/aws4_request", bucket.region());
    let credential = format!("{}/{scope}", credentials.key());
    let mut signed: Vec<(&str, &str)> = vec![("host", &host)];
    signed.extend(headers.iter().copied());
    signed.sort();
    let signed_names = signed.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(";");
    let expires = expires.to_string();
    let mut query_pairs: Vec<(&str, &str)> = vec![
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
        ("X-Amz-Credential", &credential),
        ("X-Amz-Date", &date),
        ("X-Amz-Expires", &expires),
        ("X-Amz-SignedHeaders", &signed_names),
    ];
    if let Some(token) = credentials.token().filter(|t| !t.is_empty()) {
        query_pairs.push(("X-Amz-Security-Token", token));
        query_pairs.sort();
    }
    let mut query = String::new();
    for (k, v) in &query_pairs {
        if !query.is_empty() {
            query.push('&');
        }
        uri_encode(k, false, &mut query);
        query.push('=');
        uri_encode(v, false, &mut query);
    }
    let mut canonical_headers = String::new();
    for (k, v) in &signed {
        canonical_headers.push_str(k);
        canonical_headers.push(':');
        canonical_headers.push_str(&v.split_whitespace().collect::<Vec<_>>().join(" "));
        canonical_headers.push('\n');
    }
    let canonical = format!(
        "{}\n{path}\n{query}\n{canonical_headers}\n{signed_names}\nUNSIGNED-PAYLOAD",
        method.to_str()
    );
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let mut signing_key = hmac_sha256(
        format!("AWS4{}", credentials.secret()).as_bytes(),
        day.as_bytes(),
    );
    for part in [bucket.region(), "s3", "aws4_request"] {
        signing_key = hmac_sha256(&signing_key, part.as_bytes());
    }
    let signature = hex::encode(hmac_sha256(&signing_key, to_sign.as_bytes()));
    format!(
        "{}://{host}{path}?{query}&X-Amz-Signature={signature}",
        base.scheme()
    )
}

#[cfg(test)]
mod tests {
    use rusty_s3::actions::S3Action;
    use rusty_s3::UrlStyle;

    use super::*;

    fn signature_of(url: &str) -> &str {
        url.split("X-Amz-Signature=").nth(1).unwrap_or_default()
    }

    #[test]
    fn a_key_both_can_carry_is_signed_as_rusty_s3_signs_it() {
        let time = jiff::Timestamp::from_second(1_369_353_600).unwrap();
        let endpoint = "http://127.0.0.1:9000".parse().unwrap();
        let bucket = Bucket::new(endpoint, UrlStyle::Path, "b", "us-east-1").unwrap();
        let creds = Credentials::new("key", "secret");
        let key = "a b/é+&=%2F~x.y";
        let mut action = bucket.put_object(Some(&creds), key);
        action.headers_mut().insert("x-amz-meta-n", "1");
        let theirs = action
            .sign_with_time(std::time::Duration::from_secs(900), &time)
            .to_string();
        let ours = presign(
            &time,
            Method::Put,
            &bucket,
            key,
            &creds,
            900,
            &[("x-amz-meta-n", "1")],
        );
        assert_eq!(signature_of(&ours), signature_of(&theirs));
        assert_eq!(ours.split('?').next(), theirs.split('?').next());
    }

    #[test]
    fn dot_segments_stay_in_the_path() {
        let time = jiff::Timestamp::from_second(1_369_353_600).unwrap();
        let endpoint = "http://h:1".parse().unwrap();
        let bucket = Bucket::new(endpoint, UrlStyle::Path, "b", "r").unwrap();
        let creds = Credentials::new("k", "s");
        let url = presign(&time, Method::Get, &bucket, "p/../q", &creds, 60, &[]);
        assert!(url.starts_with("http://h:1/b/p/../q?"), "{url}");
        assert!(has_dot_segment("p/../q") && has_dot_segment(".") && !has_dot_segment("a..b"));
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}

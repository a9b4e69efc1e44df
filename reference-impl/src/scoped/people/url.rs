//! From a request's URL path to what the people's files API acts on (SPEC SF-3): the session id,
//! the scope segment and the guest path. The path is read exactly as it was sent; each segment is
//! percent-decoded exactly once, here, and nowhere else (the router never decodes it), so a
//! checked literal cannot become a separator or a dot in a later layer.

use percent_encoding::percent_decode;

use super::ApiError;
use crate::scoped::ScopedMutant;

/// The URL prefix every route of the API starts with.
pub const PREFIX: &str = "/v1/agent-sessions/";

/// What a request's path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `/v1/agent-sessions/{id}/files`: the listing.
    Listing { session: String },
    /// `/v1/agent-sessions/{id}/files/{scope}/{path}`: one file.
    File {
        session: String,
        /// The scope segment, decoded (SF-1.1: it must be exactly a scope's name).
        scope: String,
        /// The guest path `{scope}/{path}`, decoded once, or why it has none (SF-3.2). Kept
        /// for later: the session and the scope are checked before the path's shape (SF-2.5).
        path: Result<String, ApiError>,
        /// The path after `/files/` as the URL spelled it: only the `upload-echoes-raw-path`
        /// mutant answers with it.
        raw: String,
    },
}

/// Reads `raw_path` (the request target's path, without its query). `decode_twice` is the
/// `url-decoded-twice` mutant. `None`: no route of the API.
pub fn target(raw_path: &str, decode_twice: bool) -> Option<Result<Target, ApiError>> {
    let mutant = decode_twice.then_some(ScopedMutant::UrlDecodedTwice);
    target_with(raw_path, mutant)
}

/// [`target`] as the reference running `mutant` reads it: the decoding mutants are
/// `url-decoded-twice`, `encoded-slash-splits` (a decoded `%2F` taken as a separator) and
/// `plus-as-space` (a `+` read as a space, the rule of HTML forms, not of URL paths).
pub fn target_with(
    raw_path: &str,
    mutant: Option<ScopedMutant>,
) -> Option<Result<Target, ApiError>> {
    let decoding = Decoding {
        twice: mutant == Some(ScopedMutant::UrlDecodedTwice),
        plus_as_space: mutant == Some(ScopedMutant::PlusAsSpace),
    };
    let slash_splits = mutant == Some(ScopedMutant::EncodedSlashSplits);
    let rest = raw_path.strip_prefix(PREFIX)?;
    let (id, tail) = rest.split_once('/')?;
    let session = match decoded(id, decoding) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    if tail == "files" {
        return Some(Ok(Target::Listing { session }));
    }
    let after = tail.strip_prefix("files/")?;
    let (scope_raw, path_raw) = match after.split_once('/') {
        Some((s, p)) => (s, Some(p)),
        None => (after, None),
    };
    let scope = match decoded(scope_raw, decoding) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let path = match path_raw {
        // `…/files/session`: a bare scope, which SC-2.3 answers `empty_path`.
        None => Ok(scope.clone()),
        Some(p) => p
            .split('/')
            .map(|segment| {
                let d = decoded(segment, decoding)?;
                if d.contains('/') && !slash_splits {
                    // SF-3.2: the one decoding made a separator the path did not have.
                    return Err(ApiError::new(
                        "traversal",
                        format!("the segment {segment:?} holds an encoded slash"),
                    ));
                }
                Ok(d)
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|segments| format!("{scope}/{}", segments.join("/"))),
    };
    Some(Ok(Target::File {
        session,
        scope,
        path,
        raw: after.to_string(),
    }))
}

/// How a segment is decoded: once, as SF-3.1 says, unless a mutant says otherwise.
#[derive(Clone, Copy)]
struct Decoding {
    twice: bool,
    plus_as_space: bool,
}

/// One segment percent-decoded once (twice for the mutant); a `%` not followed by two
/// hexadecimal digits stays as it is. Bytes that are not UTF-8 are `invalid_encoding`.
fn decoded(segment: &str, how: Decoding) -> Result<String, ApiError> {
    let mut bytes: Vec<u8> = percent_decode(segment.as_bytes()).collect();
    if how.twice {
        bytes = percent_decode(&bytes).collect();
    }
    if how.plus_as_space {
        for b in bytes.iter_mut().filter(|b| **b == b'+') {
            *b = b' ';
        }
    }
    String::from_utf8(bytes).map_err(|_| {
        ApiError::new(
            "invalid_encoding",
            format!("the segment {segment:?} does not decode to UTF-8"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(url: &str) -> Result<String, String> {
        match target(url, false).unwrap().unwrap() {
            Target::File { path, .. } => path.map_err(|e| e.reason.to_string()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_segment_is_decoded_exactly_once() {
        let p = |s: &str| path(&format!("/v1/agent-sessions/s1/files/{s}"));
        assert_eq!(p("session/my%20notes.md").unwrap(), "session/my notes.md");
        assert_eq!(p("session/50%2541.md").unwrap(), "session/50%41.md");
        assert_eq!(p("session/%252e%252e/x").unwrap(), "session/%2e%2e/x");
        assert_eq!(p("session/%2e%2e/x").unwrap(), "session/../x");
        assert_eq!(p("session/100%.md").unwrap(), "session/100%.md");
        assert_eq!(p("session/dir/").unwrap(), "session/dir/");
        assert_eq!(p("session/a//b").unwrap(), "session/a//b");
        assert_eq!(p("session/a%2Fb.md").unwrap_err(), "traversal");
        assert_eq!(p("session/%FF.md").unwrap_err(), "invalid_encoding");
        assert_eq!(p("session").unwrap(), "session");
        assert_eq!(p("session/").unwrap(), "session/");
    }

    #[test]
    fn a_plus_is_a_plus_sign_and_a_space_only_for_the_mutant() {
        let raw = "/v1/agent-sessions/s1/files/session/a+b%20c.md";
        for (mutant, want) in [
            (None, "session/a+b c.md"),
            (Some(ScopedMutant::PlusAsSpace), "session/a b c.md"),
        ] {
            let Some(Ok(Target::File { path, .. })) = target_with(raw, mutant) else {
                panic!("{raw} is a file's URL");
            };
            assert_eq!(path.as_deref(), Ok(want), "{mutant:?}");
        }
    }

    #[test]
    fn decoding_twice_is_the_mutant_only() {
        let Target::File { path, .. } =
            target("/v1/agent-sessions/s1/files/session/50%2541.md", true)
                .unwrap()
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(path.unwrap(), "session/50A.md");
    }

    proptest::proptest! {
        /// Any name a person gives a file, percent-encoded by a client, is the name the store is
        /// handed: one decoding undoes one encoding, whatever the name holds (`%` and `/`
        /// included: an encoded `/` is refused, never split on).
        #[test]
        fn one_decoding_undoes_one_encoding(segments in proptest::collection::vec("\\PC{0,12}", 1..4)) {
            let url: Vec<String> = segments
                .iter()
                .map(|s| percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string())
                .collect();
            let raw = format!("/v1/agent-sessions/s1/files/session/{}", url.join("/"));
            let Some(Ok(Target::File { path, .. })) = target(&raw, false) else {
                panic!("{raw} is a file's URL");
            };
            if segments.iter().any(|s| s.contains('/')) {
                proptest::prop_assert_eq!(path.unwrap_err().reason, "traversal");
            } else {
                proptest::prop_assert_eq!(path.unwrap(), format!("session/{}", segments.join("/")));
            }
        }
    }

    #[test]
    fn the_listing_and_unknown_routes() {
        assert_eq!(
            target("/v1/agent-sessions/s1/files", false)
                .unwrap()
                .unwrap(),
            Target::Listing {
                session: "s1".into()
            }
        );
        assert!(target("/v1/agent-sessions/s1/other", false).is_none());
        assert!(target("/v2/x", false).is_none());
    }
}

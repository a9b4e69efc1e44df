//! Tests of `people_http.rs`: the generator's reach, and each mutant of the API's HTTP layer
//! failing one request the reference answers as SPEC says.

use super::*;
use crate::profiles::scoped::contract::ANONYMOUS;
use crate::profiles::scoped::model::{generate, run_ops, SequenceError, Tier};
use tidemark_reference::scoped::ScopedMutant;

/// A plain request of the member to session `a1/s1`.
fn member(action: u8) -> PeopleRequest {
    PeopleRequest {
        session: 0,
        caller: MEMBER,
        action,
        scope: 0,
        path: 0,
        spelling: None,
        addressed: Addressed::Session,
        body: Body::Small,
        after_interrupted_sweep: None,
    }
}

/// The member's `action` on the URL spelled `url` (one of SF-3's own spellings).
fn spelled(action: u8, url: &str) -> ModelOp {
    let k = people_urls::SF_URLS
        .iter()
        .position(|s| s.url == url)
        .unwrap_or_else(|| panic!("{url} is one of SF-3's spellings"));
    ModelOp::People(PeopleRequest {
        spelling: Some(k as u8),
        ..member(action)
    })
}

/// The agent of `a1/s1` writes its `notes.md`.
fn agent_writes() -> ModelOp {
    ModelOp::Write {
        session: 0,
        path: 0,
        agent_scope: false,
    }
}

/// Whether a request is of one kind.
type Kind = fn(&PeopleRequest) -> bool;

#[test]
fn the_generator_draws_every_kind_of_persons_request_within_a_few_seeds() {
    let requests: Vec<PeopleRequest> = (0..40)
        .flat_map(|seed| generate(seed, 80))
        .filter_map(|op| match op {
            ModelOp::People(r) => Some(r),
            _ => None,
        })
        .collect();
    let kinds: [(&str, Kind); 12] = [
        ("an SF-3 spelling", |r| {
            r.spelling
                .is_some_and(|k| (k as usize) < people_urls::SF_URLS.len())
        }),
        ("a hostile spelling", |r| {
            r.spelling
                .is_some_and(|k| (k as usize) >= people_urls::SF_URLS.len())
        }),
        ("no credentials", |r| r.caller() == ANONYMOUS),
        ("a forged token", |r| r.caller() == FORGER),
        ("the outsider", |r| r.caller() == "outsider"),
        ("a session nobody has", |r| {
            r.addressed == Addressed::Unknown
        }),
        ("an invalid id", |r| r.addressed == Addressed::Dotted),
        ("a body at the limit", |r| r.body == Body::AtLimit),
        ("a body past the limit", |r| r.body == Body::OverLimit),
        ("after an interrupted sweep", |r| {
            r.after_interrupted_sweep.is_some_and(|s| s.idle_days >= 30)
        }),
        ("the upload scopes", |r| r.action() == 4),
        ("a removal", |r| r.action() == REMOVE),
    ];
    for (kind, is) in kinds {
        assert!(requests.iter().any(is), "no {kind} in 40 seeds");
    }
    let json = serde_json::to_string(&requests).unwrap();
    let back: Vec<PeopleRequest> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, requests);
}

/// Each mutant of the API's HTTP layer is caught by one request the generator can draw,
/// which the reference answers as the model says: the check bites, and only where SPEC is
/// broken.
#[test]
fn each_http_layer_mutant_fails_one_request_the_reference_answers_as_spec_says() {
    let over = ModelOp::People(PeopleRequest {
        body: Body::OverLimit,
        ..member(UPLOAD)
    });
    let anonymous = ModelOp::People(PeopleRequest {
        caller: 4,
        addressed: Addressed::Unknown,
        ..member(LIST)
    });
    let dotted = ModelOp::People(PeopleRequest {
        addressed: Addressed::Dotted,
        ..member(LIST)
    });
    let after_sweep = ModelOp::People(PeopleRequest {
        after_interrupted_sweep: Some(InterruptedSweep {
            idle_days: 31,
            key_failure_percent: 100,
        }),
        ..member(LIST)
    });
    let cases = [
        (
            ScopedMutant::UploadEchoesRawPath,
            vec![spelled(UPLOAD, "session/my%20notes.md")],
        ),
        (
            ScopedMutant::UrlDecodedTwice,
            vec![spelled(UPLOAD, "session/50%2541.md")],
        ),
        (
            ScopedMutant::EncodedSlashSplits,
            vec![spelled(UPLOAD, "session/a%2Fb.md")],
        ),
        (
            ScopedMutant::PlusAsSpace,
            vec![spelled(UPLOAD, "session/a+b.md")],
        ),
        (
            ScopedMutant::LookalikeScopeAccepted,
            vec![spelled(UPLOAD, "Session/notes.md")],
        ),
        (
            ScopedMutant::PathRefusalIsServerError,
            vec![spelled(DOWNLOAD, "session/%2e%2e/notes.md")],
        ),
        (
            ScopedMutant::TrailingSlashTrimmed,
            vec![spelled(UPLOAD, "session/dir/")],
        ),
        (
            ScopedMutant::PermissionBeforeShape,
            vec![spelled(UPLOAD, "workspace/%2e%2e/session/notes.md")],
        ),
        (ScopedMutant::UploadUnbounded, vec![over]),
        (ScopedMutant::SessionBeforeCredentials, vec![anonymous]),
        (ScopedMutant::DottedIdsAccepted, vec![dotted]),
        (
            ScopedMutant::DownloadServedInline,
            vec![agent_writes(), ModelOp::People(member(DOWNLOAD))],
        ),
        (
            ScopedMutant::PersonSkipsUnfinishedSweep,
            vec![agent_writes(), after_sweep],
        ),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (m, ops) in cases {
        if let Err(e) = rt.block_on(run_ops(Tier::Memory, 3, &ops, None, None)) {
            panic!("the reference fails {ops:?}: {e}");
        }
        match rt.block_on(run_ops(Tier::Memory, 3, &ops, Some(m), None)) {
            Err(SequenceError::Diverged(d)) => {
                assert_eq!(d.step, ops.len() - 1, "{}: {}", m.id(), d.actual);
                // What the exchange showed names the request, never the loopback address and
                // port it went to: a divergence replays byte for byte.
                let shown = format!("{}{}{:?}", d.expected, d.actual, d.ops);
                assert!(!shown.contains("127.0.0.1"), "{shown}");
            }
            other => panic!("{} passes {ops:?}: {:?}", m.id(), other.err()),
        }
    }
}

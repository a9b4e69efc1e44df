//! The scoped world's people (SPEC part SF): host `app` serves the reference's people's files
//! API over turmoil's TCP ([`serve_people`], [`mint`]), and a person guest per agent guest sends
//! uploads, listings, downloads and removals to it over turmoil's network, as an HTTP client
//! ([`person`]), with credentials the API mints in its own scheme; its plan is
//! `person_plan`'s.
//!
//! Person `p<c>` belongs to the home workspace, is in the conversation of guest `c`'s kept,
//! active and shut sessions, and holds agent-files and workspace-files authorities drawn from
//! the seed. Its plan mixes URL spellings (SF-3.3's table, SF-3.1's `%25` and `+`, the hostile
//! guest paths of `model::hostile` encoded as a client encodes them), look-alike scopes,
//! uploads at and past the size limit, uploads to agent and workspace scope its authorities
//! may or may not allow, removals with read access only, and requests that must learn nothing:
//! without credentials, with another workspace's person's credentials, to a session nobody has.
//! Each answer is judged by the harness's own SF shapes (`people::judge`) and then by the
//! oracle the person shares with its agent guest (`person_oracle`): a person's upload is what
//! the agent lists and reads by the same name and bytes, and the agent's files are what the
//! person lists and downloads.
//!
//! Credentials live in the app's process: a restarted app mints anew (each boot its own
//! secret, as a deployment's), and a person told `unauthenticated` after a restart asks again.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tidemark_reference::scoped::people::{PeopleRoutes, Person};
use tidemark_reference::scoped::Access;
use tidemark_sim::seed::MasterSeed;

use super::oracle::Guest;
use super::paths::Ticket;
use super::person_plan::{person_plan, Grant, Target, Who};
use super::session::Sess;
use super::{Log, APP, CALL_TIMEOUT, EXPOSED, HOME};
use crate::profiles::scoped::contract::{PeopleCall, ScopedOp, ScopedOutcome, ANONYMOUS};
use crate::profiles::scoped::people::{judge, request_parts, MAX_BODY_BYTES};
use crate::profiles::scoped::uuid_ids::{op_with_uuid_ids, uuid_for};
use crate::world::lock;
use tidemark_sim::clip::clip_to;

/// The port `app` serves the people's API on.
pub(super) const PEOPLE_PORT: u16 = 8080;
/// The session id no session has: a request to it is `unknown_entity` (SF-2.2), never more.
const NOWHERE: &str = "gone";

/// The secret boot `boot` of the world's `app` mints tokens with: its own on every boot, as a
/// deployment hands each process its own.
pub(super) fn secret(seed: u64, boot: usize) -> String {
    format!("scoped-world-people/{seed}/{boot}")
}

/// `app`'s accept loop for the people's API on turmoil's TCP: each connection served by the
/// reference's own routes.
pub(super) async fn serve_people(routes: PeopleRoutes) -> std::io::Result<()> {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PEOPLE_PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let routes = routes.clone();
        tokio::spawn(async move { routes.serve_connection(stream).await });
    }
}

/// `app`'s answer to a `person` request (the protocol's way to ask for credentials, SF-2.1):
/// the headers the API minted, for the person with every short id made the UUID the store
/// knows.
pub(super) fn mint(routes: &PeopleRoutes, op: &ScopedOp) -> ScopedOutcome {
    let ScopedOp::Person {
        workspace,
        agent_files,
        workspace_files,
        sessions,
        ..
    } = op_with_uuid_ids(op, "scoped-world")
    else {
        return ScopedOutcome::Refused {
            reason: "config".into(),
            message: String::new(),
        };
    };
    ScopedOutcome::Credentials {
        headers: routes.mint(Person {
            workspace,
            agent_files,
            workspace_files,
            sessions: sessions.into_iter().collect(),
        }),
    }
}

/// Credentials the API minted, and the boot of `app` that was running when they were asked
/// for.
struct Minted {
    headers: BTreeMap<String, String>,
    boot: usize,
}

/// What a person guest shares with the world.
pub(super) struct PersonCtx {
    pub(super) c: usize,
    pub(super) master: MasterSeed,
    pub(super) guest: Arc<Mutex<Guest>>,
    pub(super) grant: Grant,
    pub(super) boots: Arc<AtomicUsize>,
    pub(super) clock: crate::world::clock::WorldClock,
    pub(super) log: Log,
    pub(super) violations: Arc<Mutex<Vec<String>>>,
}

/// The short session id a request names.
fn session_id(g: &Guest, target: Target) -> String {
    match target {
        Target::In(s) => g.turn(s).session,
        Target::Nowhere => NOWHERE.into(),
    }
}

/// The person's `person` request: `who`'s identity, with the sessions it claims to be in.
fn person_request(c: usize, who: Who) -> ScopedOp {
    let home = [format!("k{c}"), format!("s{c}"), format!("n{c}")];
    ScopedOp::Person {
        person: match who {
            Who::Foreign => format!("q{c}"),
            _ => format!("p{c}"),
        },
        workspace: if who == Who::Foreign { EXPOSED } else { HOME }.into(),
        agent_files: Some(Access::ReadWrite),
        workspace_files: Some(Access::ReadWrite),
        sessions: home.into(),
    }
}

/// Asks `app` for `who`'s credentials until it answers (or gives up).
async fn ask(ctx: &PersonCtx, who: Who, grant: Grant, seq: &mut usize) -> Option<Minted> {
    let mut op = person_request(ctx.c, who);
    if let (
        Who::Own,
        ScopedOp::Person {
            agent_files,
            workspace_files,
            ..
        },
    ) = (who, &mut op)
    {
        *agent_files = grant.agent_files;
        *workspace_files = grant.workspace_files;
    }
    for _ in 0..50 {
        *seq += 1;
        let boot = ctx.boots.load(Ordering::SeqCst);
        let answer = tokio::time::timeout(
            CALL_TIMEOUT,
            crate::world::net::call::<_, ScopedOutcome>(
                APP,
                super::PORT,
                10 + ctx.c,
                *seq,
                op.clone(),
            ),
        )
        .await;
        if let Ok(Ok(ScopedOutcome::Credentials { headers })) = answer {
            return Some(Minted { headers, boot });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// One HTTP exchange with `app` over turmoil's TCP: the status, headers and body, or why none
/// came.
async fn exchange(
    method: &str,
    target: &str,
    headers: &BTreeMap<String, String>,
    body: Vec<u8>,
    connected: &AtomicBool,
) -> Result<(u16, http::HeaderMap, Bytes), String> {
    let stream = turmoil::net::TcpStream::connect((APP, PEOPLE_PORT))
        .await
        .map_err(|e| e.to_string())?;
    connected.store(true, Ordering::SeqCst);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(target)
        .header("host", APP);
    for (k, v) in headers {
        request = request.header(k.as_str(), v.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = response.into_parts();
    let bytes = Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((parts.status.as_u16(), parts.headers, bytes))
}

/// What came back for one request.
pub(super) enum Answer {
    /// SF's shapes held: the outcome, and for a listing the scopes it says are writable.
    Outcome(ScopedOutcome, Option<Vec<String>>),
    /// An answer SF's shapes refuse (a status that disagrees with its reason, a download
    /// served inline, a body that is not SF's): a violation whatever the model says.
    Misshapen(String),
    /// No answer (the connection failed, or the time ran out): it may have happened.
    Unknown,
    /// The connection never opened: the request never reached `app`.
    Unsent,
}

/// A person guest: waits for its agent guest's sessions, then plays its plan.
pub(super) async fn person(ctx: PersonCtx) {
    for _ in 0..3_000 {
        let ready = {
            let g = lock(&ctx.guest);
            [Sess::Kept, Sess::Active, Sess::Shut]
                .iter()
                .all(|s| g.session(*s).last_activity.is_some())
        };
        if ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let plan = person_plan(ctx.master, &lock(&ctx.guest), ctx.grant);
    let mut minted: BTreeMap<&'static str, Minted> = BTreeMap::new();
    let mut seq = 0;
    for (i, op) in plan.into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(op.pause_ms)).await;
        let key = match op.who {
            Who::Own => "own",
            Who::Foreign => "foreign",
            Who::Anonymous => ANONYMOUS,
        };
        if op.who != Who::Anonymous && !minted.contains_key(key) {
            match ask(&ctx, op.who, ctx.grant, &mut seq).await {
                Some(m) => {
                    minted.insert(key, m);
                }
                None => continue,
            }
        }
        let no_headers = BTreeMap::new();
        let headers = minted.get(key).map_or(&no_headers, |m| &m.headers);
        let (session, short) = {
            let g = lock(&ctx.guest);
            let short = session_id(&g, op.target);
            (uuid_for("scoped-world", &short), short)
        };
        let (method, target, body) = request_parts(&session, &op.call);
        let ticket: Ticket = lock(&ctx.guest).person_begin(&op, ctx.grant);
        let sent = ctx.clock.rel();
        let connected = AtomicBool::new(false);
        let answered = tokio::time::timeout(
            CALL_TIMEOUT,
            exchange(method, &target, headers, body, &connected),
        )
        .await;
        let replied = ctx.clock.rel();
        let answer = match answered {
            Ok(Ok((status, h, bytes))) => match judge(&op.call, status, &h, &bytes) {
                Ok(out) => {
                    let writable = match (&op.call, &out) {
                        (PeopleCall::List, ScopedOutcome::Listing { .. }) => {
                            match judge(&PeopleCall::UploadScopes, status, &h, &bytes) {
                                Ok(ScopedOutcome::Listing { paths }) => Some(paths),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    Answer::Outcome(out, writable)
                }
                Err(e) => Answer::Misshapen(e),
            },
            _ if !connected.load(Ordering::SeqCst) => Answer::Unsent,
            _ => Answer::Unknown,
        };
        // A token refused after `app` restarted is a token of a process that is gone: ask
        // again before the next request.
        let stale = match (&answer, minted.get(key)) {
            (Answer::Outcome(ScopedOutcome::Refused { reason, .. }, _), Some(m))
                if reason == "unauthenticated" =>
            {
                Some(ctx.boots.load(Ordering::SeqCst) > m.boot)
            }
            _ => None,
        };
        if stale.is_some() {
            minted.remove(key);
        }
        let line = format!(
            "p{} #{i} {}{method} {short} {} => {}",
            ctx.c,
            match op.who {
                Who::Own => "",
                Who::Foreign => "(foreign) ",
                Who::Anonymous => "(anonymous) ",
            },
            url_shown(&op.call),
            shown(&answer)
        );
        let mut g = lock(&ctx.guest);
        g.person_observe(
            &op,
            ctx.grant,
            &ticket,
            (sent, replied),
            &answer,
            stale == Some(true),
        );
        let found: Vec<String> = g.violations.drain(..).collect();
        drop(g);
        let mut log = lock(&ctx.log);
        log.push((replied, line));
        for v in found {
            log.push((replied, format!("VIOLATION {v}")));
            lock(&ctx.violations).push(v);
        }
    }
}

/// The most of a URL or an answer one trace line shows (the key-length spelling is ~900 bytes).
const SHOWN_BYTES: usize = 120;

fn url_shown(call: &PeopleCall) -> String {
    let url = match call {
        PeopleCall::Upload { url_path, content } => {
            return format!(
                "{} ({} bytes)",
                clip_to(url_path, SHOWN_BYTES),
                content.len()
            )
        }
        PeopleCall::Download { url_path } | PeopleCall::Remove { url_path } => url_path,
        PeopleCall::List | PeopleCall::UploadScopes => "(listing)",
    };
    clip_to(url, SHOWN_BYTES).into_owned()
}

/// An answer as the trace shows it: no header, no date, no port, refusals by reason.
fn shown(a: &Answer) -> String {
    let whole = match a {
        Answer::Outcome(ScopedOutcome::Refused { reason, .. }, _) => format!("refused {reason}"),
        Answer::Outcome(ScopedOutcome::Listing { paths }, writable) => {
            let paths: Vec<_> = paths.iter().map(|p| clip_to(p, 40)).collect();
            format!(
                "listing {paths:?} writable {:?}",
                writable.clone().unwrap_or_default()
            )
        }
        Answer::Outcome(o, _) => format!("{o:?}"),
        Answer::Misshapen(e) => format!("misshapen: {e}"),
        Answer::Unknown => "no answer".into(),
        Answer::Unsent => "not connected".into(),
    };
    clip_to(&whole, 4 * SHOWN_BYTES).into_owned()
}

//! The people's files API served over HTTP (SPEC part SF): axum's router over the scoped store,
//! on a loopback listener, each connection served by hyper. The router only dispatches: the
//! path is read raw and decoded once by [`super::url`] (SF-3.1), so no layer decodes it first.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use axum::Router;
use http_body_util::{BodyExt, Limited};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use serde_json::json;

use super::credentials::{Credentials, Person};
use super::url::{self, Target};
use super::{ApiError, StoreSlot};
use crate::clock::{ManualClock, Timestamp};
use crate::scoped::mutants::ScopedMutant;
use crate::scoped::permissions::Scope;
use crate::scoped::store::ScopedStore;

/// The header through which a harness hands each request its time (PROTOCOL.md, "The people's
/// files API"): milliseconds since the epoch. Read only by an API built with a handed-in clock;
/// a deployment's API reads its own clock and ignores it.
pub const NOW_HEADER: &str = "tidemark-now-ms";

/// A running API: its base URL and the credentials it accepts. Dropping it stops the listener
/// and every connection it serves.
pub struct PeopleApi {
    base_url: String,
    routes: PeopleRoutes,
    task: tokio::task::JoinHandle<()>,
}

struct ApiState {
    store: StoreSlot,
    clock: Option<ManualClock>,
    credentials: Credentials,
}

impl Drop for PeopleApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PeopleApi {
    /// Serves the store in `store` on `127.0.0.1` (a port the system picks). `clock`, when
    /// given, is set from each request's [`NOW_HEADER`]: time handed in, as for every other
    /// operation of the profile. `secret` seeds the tokens [`PeopleApi::mint`] hands out.
    pub async fn serve(
        store: StoreSlot,
        clock: Option<ManualClock>,
        secret: &[u8],
    ) -> std::io::Result<PeopleApi> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let routes = PeopleRoutes::new(store, clock, secret);
        let serving = routes.clone();
        let task = tokio::spawn(async move {
            // Connections end with the listener: aborting this task drops the set.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let routes = serving.clone();
                connections.spawn(async move { routes.serve_connection(stream).await });
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(PeopleApi {
            base_url,
            routes,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`, with no trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Credentials for `person`: the headers their requests carry.
    pub fn mint(&self, person: Person) -> BTreeMap<String, String> {
        self.routes.mint(person)
    }
}

/// The API's routes and the credentials they accept, for whoever owns the listener:
/// [`PeopleApi::serve`] on loopback, or a simulation's host over its simulated network (the
/// scoped turmoil world serves them over turmoil's TCP). Clones share the credentials.
#[derive(Clone)]
pub struct PeopleRoutes {
    state: Arc<ApiState>,
    app: Router,
}

impl PeopleRoutes {
    /// The routes over the store in `store`; `clock` and `secret` as for [`PeopleApi::serve`].
    pub fn new(store: StoreSlot, clock: Option<ManualClock>, secret: &[u8]) -> PeopleRoutes {
        let state = Arc::new(ApiState {
            store,
            clock,
            credentials: Credentials::new(secret),
        });
        let app = Router::new()
            .route("/v1/agent-sessions/{id}/files", any(handle))
            .route("/v1/agent-sessions/{id}/files/{*path}", any(handle))
            .fallback(handle)
            .with_state(state.clone());
        PeopleRoutes { state, app }
    }

    /// Credentials for `person`: the headers their requests carry.
    pub fn mint(&self, person: Person) -> BTreeMap<String, String> {
        self.state.credentials.mint(person)
    }

    /// Serves one accepted connection (HTTP/1.1 or HTTP/2) until the client closes it.
    pub async fn serve_connection<I>(&self, io: I)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let service = TowerToHyperService::new(self.app.clone());
        let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(io), service)
            .await;
    }
}

async fn handle(State(api): State<Arc<ApiState>>, req: Request) -> Response {
    let mutant = api.store().config().mutant;
    match answer(&api, req).await {
        Ok(r) => r,
        Err(e) => error_response(&e, mutant),
    }
}

fn error_response(e: &ApiError, mutant: Option<ScopedMutant>) -> Response {
    let status = if mutant == Some(ScopedMutant::PathRefusalIsServerError) && e.status() == 400 {
        500
    } else {
        e.status()
    };
    json_response(status, &json!({"error": e}))
}

impl ApiState {
    /// The store as it is now.
    fn store(&self) -> Arc<ScopedStore> {
        self.store
            .read()
            .expect("the store slot is never poisoned")
            .clone()
    }
}

fn json_response(status: u16, body: &serde_json::Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("a status and a header always build")
}

async fn answer(api: &ApiState, req: Request) -> Result<Response, ApiError> {
    if let (Some(clock), Some(now)) = (
        &api.clock,
        req.headers()
            .get(NOW_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<i64>().ok()),
    ) {
        clock.set(Timestamp::from_millis(now));
    }
    let store = api.store();
    let mutant = store.config().mutant;
    let raw_path = req.uri().path().to_string();
    let target = url::target_with(&raw_path, mutant);
    if mutant == Some(ScopedMutant::SessionBeforeCredentials) {
        // The mutant answers an unknown session before it looks at the credentials.
        if let Some(Ok(Target::Listing { session } | Target::File { session, .. })) = &target {
            let named = store
                .metadata()
                .sessions_named(session)
                .await
                .map_err(ApiError::from)?;
            if named.is_empty() {
                return Err(ApiError::new("unknown_entity", "no such session"));
            }
        }
    }
    // SF-2.1: credentials before anything else is looked at.
    let person = api
        .credentials
        .person(
            req.headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok()),
        )
        .ok_or_else(|| ApiError::new("unauthenticated", "no credentials this API accepts"))?;
    let target = target.ok_or_else(|| ApiError::new("not_found", "no such route"))??;
    match target {
        Target::Listing { session } => {
            if req.method() != http::Method::GET {
                return Err(ApiError::new("not_found", "the listing is read with GET"));
            }
            let grant = person.grant_in(&session);
            let space = store
                .person_space(&person.workspace, &session, grant)
                .await?;
            let files = store.list(&space, None).await?;
            let perms = grant.permissions(mutant);
            let writable: Vec<&str> = Scope::FILE_SCOPES
                .iter()
                .filter(|s| perms.for_scope(**s, mutant).can_write())
                .map(|s| s.guest_name())
                .collect();
            let files: Vec<serde_json::Value> = files
                .iter()
                .map(|f| {
                    let scope = f.path.split('/').next().unwrap_or_default();
                    json!({"path": f.path, "scope": scope, "size": f.size})
                })
                .collect();
            Ok(json_response(
                200,
                &json!({"files": files, "writable": writable}),
            ))
        }
        Target::File {
            session,
            scope,
            path,
            raw,
        } => {
            let space = store
                .person_space(&person.workspace, &session, person.grant_in(&session))
                .await?;
            let scope = if mutant == Some(ScopedMutant::LookalikeScopeAccepted) {
                scope.to_ascii_lowercase()
            } else {
                scope
            };
            let path = match (mutant == Some(ScopedMutant::LookalikeScopeAccepted), path) {
                (true, Ok(p)) => Ok(match p.split_once('/') {
                    Some((_, rest)) => format!("{scope}/{rest}"),
                    None => scope.clone(),
                }),
                (_, p) => p,
            };
            if Scope::from_guest_name(&scope).is_none_or(|s| s == Scope::Skill) {
                return Err(ApiError::new(
                    "unknown_scope",
                    format!("{scope:?} is not session, agent or workspace"),
                ));
            }
            let method = req.method().clone();
            if method == http::Method::PUT {
                let limit = if mutant == Some(ScopedMutant::UploadUnbounded) {
                    u64::MAX
                } else {
                    store.config().max_upload_bytes
                };
                let body = read_limited(req, limit).await?;
                let path = path?;
                let size = body.len();
                let stored = store.write(&space, &path, body).await?;
                let named = if mutant == Some(ScopedMutant::UploadEchoesRawPath) {
                    raw
                } else {
                    stored.guest_path()
                };
                return Ok(json_response(
                    200,
                    &json!({"path": named, "scope": scope, "size": size}),
                ));
            }
            let path = path?;
            if method == http::Method::GET {
                let bytes = store.read(&space, &path).await?;
                let response = Response::builder()
                    .status(200)
                    .header("content-type", "application/octet-stream");
                let response = if mutant == Some(ScopedMutant::DownloadServedInline) {
                    response
                } else {
                    response
                        .header("content-disposition", "attachment")
                        .header("x-content-type-options", "nosniff")
                };
                return Ok(response
                    .body(Body::from(bytes))
                    .expect("a status and headers always build"));
            }
            if method == http::Method::DELETE {
                store.delete(&space, &path).await?;
                return Ok(json_response(200, &json!({"path": path, "scope": scope})));
            }
            Err(ApiError::new(
                "not_found",
                format!("{method} is not an operation on a file"),
            ))
        }
    }
}

/// The request's body, refused `too_large` past `limit` bytes (SF-4.3) without reading more.
async fn read_limited(req: Request, limit: u64) -> Result<Vec<u8>, ApiError> {
    let too_large = || ApiError::new("too_large", format!("an upload is at most {limit} bytes"));
    if req
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > limit)
    {
        return Err(too_large());
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    match Limited::new(req.into_body(), limit).collect().await {
        Ok(body) => Ok(body.to_bytes().to_vec()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(ApiError::new(
            "invalid_encoding",
            format!("the body could not be read: {e}"),
        )),
    }
}

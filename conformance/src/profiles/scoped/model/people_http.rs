//! People's requests in a model sequence over real HTTP (SPEC part SF; generator version 5): the
//! reference serves its people's files API (axum, on loopback, over the sequence's own store and
//! clock) as the scenarios' runner does, and the harness's client (`profiles/scoped/people.rs`,
//! hyper) sends each request with the headers the API minted, judging every answer against SF's
//! shapes (statuses, SF-1.5's error body, SF-1.4's download headers) before the model compares
//! it with what SPEC decides: the reason, the stored path an upload answers (SF-1.3), a listing
//! that leaves out unreadable scopes (SF-2.6) and the scopes it offers (SF-2.7), activity
//! (SF-4.2), the size limit (SF-4.3), a removal's access (SF-4.4).
//!
//! What makes the API's own mistakes observable: URL spellings ([`super::people_urls`]),
//! requests without credentials or with a token the API never minted to sessions that exist,
//! exist nowhere, or are named outside SC-1.3's alphabet (SF-2.1, SF-2.2), uploads at and past
//! the size knob, and, drawn from the seed, a request right after a sweep left a session
//! unfinished (SF-4.1).
//!
//! The request as data ([`PeopleRequest`]) is in `ops.rs`; this module draws and sends it.
//!
//! Determinism: nothing of the exchange reaches the trace but the operation's line and the
//! model's notes; the port, the tokens and the wall clock never do (each request carries the
//! simulated time in `tidemark-now-ms`, which the API's clock is set from).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, RwLock};

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tidemark_reference::clock::DAY_MS;
use tidemark_reference::scoped::people::{PeopleApi, Person, StoreSlot};
use tidemark_reference::scoped::{Access, ScopedError};
use tidemark_sim::real_tier::FaultPlan;

use super::hostile::Fit;
use super::ops::{
    path, session, Addressed, Body, InterruptedSweep, ModelOp, PeopleRequest, ACTIONS, CALLERS,
    DOWNLOAD, FORGED_TOKEN, FORGER, LIST, MEMBER, PEOPLE, PERSON_SCOPES, REMOVE, SESSIONS, UPLOAD,
    WORKSPACE,
};
use super::people::OUTSIDE;
use super::people_urls;
use super::{diverged, harness, Runner, Step};
use crate::profiles::scoped::contract::{PeopleCall, ScopedOutcome};
use crate::profiles::scoped::people::PeopleClient;

/// The `max_upload_bytes` knob the sequences run with (SF-4.3): small, so a body past it costs
/// nothing to send.
pub(super) const MAX_UPLOAD_BYTES: u64 = 64;

/// A person's request of a version-5 sequence (the `session` and `path` already drawn), out of
/// 20:
/// - 7 a plain request: any person, action and file, three times in four in the scope the
///   person holds an authority in;
/// - 8 a URL spelling, by the member three times in four: an upload, a download or a removal,
///   a spelling that names a file uploaded two times in three;
/// - 2 no credentials, a forged token, a session nobody has or an invalid id;
/// - 2 an upload at or one byte past the size knob, by the member three times in four;
/// - 1 a download, listing or upload by the member right after a sweep left sessions
///   unfinished, half the time after the clock moved past the idle TTL.
pub fn draw(rng: &mut ChaCha8Rng, session: u8, path: u8) -> ModelOp {
    let mut r = PeopleRequest {
        session,
        caller: rng.gen_range(0..PEOPLE.len() as u8),
        action: rng.gen_range(0..ACTIONS.len() as u8),
        scope: rng.gen_range(0..3),
        path,
        spelling: None,
        addressed: Addressed::Session,
        body: Body::Small,
        after_interrupted_sweep: None,
    };
    let mostly_member = |rng: &mut ChaCha8Rng, drawn: u8| {
        if rng.gen_bool(0.75) {
            MEMBER
        } else {
            drawn
        }
    };
    match rng.gen_range(0..20u32) {
        0..=6 => {
            // Mostly the scope the caller holds an authority in: the member's conversation,
            // the steward's and the reader's agent or workspace files.
            if rng.gen_bool(0.75) {
                r.scope = match r.caller {
                    MEMBER => 0,
                    1 => [1, 1, 2][rng.gen_range(0..3)],
                    // The reader holds agent files but not workspace files: either tells the
                    // two authorities apart.
                    2 => rng.gen_range(1..3),
                    _ => r.scope,
                };
            }
        }
        7..=14 => {
            // SF-3's own spellings two times in three, the hostile table's the third.
            let sf = people_urls::SF_URLS.len();
            let k = if rng.gen_bool(2.0 / 3.0) {
                rng.gen_range(0..sf)
            } else {
                rng.gen_range(sf..people_urls::count())
            };
            r.spelling = Some(k as u8);
            r.caller = mostly_member(rng, r.caller);
            // A name is mostly uploaded (what it is stored as shows in the answer); a refusal
            // shows in any action.
            r.action = if people_urls::names_a_file(k as u8) && rng.gen_bool(0.5) {
                UPLOAD
            } else {
                [UPLOAD, DOWNLOAD, REMOVE][rng.gen_range(0..3)]
            };
        }
        15..=16 => {
            r.caller = rng.gen_range(0..CALLERS.len() as u8);
            r.addressed = [
                Addressed::Session,
                Addressed::Unknown,
                Addressed::Unknown,
                Addressed::Dotted,
            ][rng.gen_range(0..4)];
        }
        17..=18 => {
            r.caller = mostly_member(rng, r.caller);
            r.action = UPLOAD;
            r.body = if rng.gen_bool(0.5) {
                Body::OverLimit
            } else {
                Body::AtLimit
            };
        }
        _ => {
            r.caller = MEMBER;
            r.action = [DOWNLOAD, LIST, UPLOAD][rng.gen_range(0..3)];
            r.scope = 0;
            r.after_interrupted_sweep = Some(InterruptedSweep {
                idle_days: if rng.gen_bool(0.5) {
                    rng.gen_range(30..=45)
                } else {
                    0
                },
                key_failure_percent: rng.gen_range(40..=100),
            });
        }
    }
    ModelOp::People(r)
}

/// The reference's people's files API on loopback and the harness's client holding every
/// caller's headers, started at a sequence's first person's request.
pub(super) struct PeopleHttp {
    api: PeopleApi,
    client: PeopleClient,
}

/// What SPEC says a request answers.
enum Expect {
    Refused(&'static str),
    /// An upload stored `{scope}/{name}` with `content`.
    Written {
        scope: &'static str,
        name: String,
        content: String,
    },
    Content(String),
    /// A removal of `{scope}/{name}`.
    Removed {
        scope: &'static str,
        name: String,
    },
    /// A listing's files, in SC-4.4's order.
    Files(BTreeSet<String>),
    /// A listing's `writable`, in SF-2.7's order.
    Scopes(Vec<&'static str>),
    /// Not sent: a body past the limit to a request another check refuses too (SF-2.5 lets
    /// either answer, and no harness sends one).
    Skip(&'static str),
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Refused(r) => write!(
                f,
                "refused {r} ({})",
                crate::profiles::scoped::people::status_for(r)
            ),
            Expect::Written { scope, name, .. } => write!(f, "written {scope}/{name}"),
            Expect::Content(c) => write!(f, "{c:?}"),
            Expect::Removed { .. } => write!(f, "removed"),
            Expect::Files(files) => write!(f, "{files:?}"),
            Expect::Scopes(scopes) => write!(f, "writable {scopes:?}"),
            Expect::Skip(why) => write!(f, "not sent: {why}"),
        }
    }
}

/// An answer as the divergence shows it: a refusal by its reason (its message is the
/// implementation's wording).
fn shown(got: &ScopedOutcome) -> String {
    match got {
        ScopedOutcome::Refused { reason, .. } => {
            format!(
                "refused {reason} ({})",
                crate::profiles::scoped::people::status_for(reason)
            )
        }
        ScopedOutcome::Written { path } => format!("written {path}"),
        ScopedOutcome::Content { content } => format!("{content:?}"),
        ScopedOutcome::Ok => "removed".to_string(),
        ScopedOutcome::Listing { paths } => format!("{paths:?}"),
        other => format!("{other:?}"),
    }
}

impl Runner<'_> {
    /// A person's request over HTTP; after an interrupted sweep when the operation says so.
    pub(super) async fn people(&mut self, step: usize, r: &PeopleRequest) -> Step {
        let Some(sweep) = r.after_interrupted_sweep else {
            return self.people_request(step, r).await;
        };
        let interrupted = self.interrupted_sweep(sweep).await?;
        if interrupted {
            self.people_request(step, r).await?;
        } else {
            self.note("skipped: what the failed sweep left is unknown until the healed one");
        }
        self.sweep_healing().await?;
        let now = self.clock_now();
        self.swept_files += self.model.sweep(now);
        self.check_bucket_and_ledger().await
    }

    fn clock_now(&self) -> i64 {
        use tidemark_reference::clock::Clock;
        self.clock.now().0
    }

    /// Moves the clock on and sweeps while some deleted keys fail, leaving what it found
    /// expired unfinished (SC-5.5); the model's sweep says those files are gone, as every
    /// request after it must find them (SF-4.1). False: the sweep failed outright, and what it
    /// did is unknown until the healed sweep.
    async fn interrupted_sweep(&mut self, s: InterruptedSweep) -> Result<bool, super::Stop> {
        self.clock.advance_ms(i64::from(s.idle_days) * DAY_MS);
        self.server.faults().set_plan(FaultPlan {
            delete_key_failure_rate: f64::from(s.key_failure_percent.min(100)) / 100.0,
            ..FaultPlan::default()
        });
        let swept = self.store.sweep().await;
        match &self.faults {
            Some(plan) => self.server.faults().set_plan(plan.clone()),
            None => self.server.faults().heal(),
        }
        match swept {
            Ok(r) => self.note(format!(
                "interrupted sweep: swept {} sessions, {} obligations; {} and {} left unfinished",
                r.sessions_swept,
                r.obligations_completed,
                r.sessions_retried_later,
                r.obligations_retried_later
            )),
            Err(ScopedError::Storage { .. }) => {
                self.note("interrupted sweep: failed: storage");
                return Ok(false);
            }
            Err(e) => return diverged("a sweep under key failures: Ok", format!("{e}")),
        }
        let now = self.clock_now();
        self.swept_files += self.model.sweep(now);
        Ok(true)
    }

    /// Starts the API and mints every person's credentials, once per sequence: the API serves a
    /// store of its own over the sequence's bucket, metadata and clock, as a separate process
    /// of the same deployment would.
    async fn start_people_http(&mut self) -> Step {
        if self.people_http.is_some() {
            return Ok(());
        }
        let store = Arc::new(self.open(self.config.clone()).await?);
        let slot: StoreSlot = Arc::new(RwLock::new(store));
        let secret = format!("tidemark-people-api/{}", self.config.bucket);
        let api = PeopleApi::serve(slot, Some(self.clock.clone()), secret.as_bytes())
            .await
            .map_err(harness)?;
        let mut client = PeopleClient::new();
        let sessions: Vec<String> = self.turns.iter().map(|t| t.session.to_string()).collect();
        for (name, in_conversation, agent_files, workspace_files, outsider) in PEOPLE {
            let workspace = self.ids.id(if outsider { OUTSIDE } else { WORKSPACE });
            let headers = api.mint(Person {
                workspace,
                agent_files: Some(agent_files),
                workspace_files: Some(workspace_files),
                sessions: if in_conversation {
                    sessions.iter().cloned().collect()
                } else {
                    BTreeSet::new()
                },
            });
            client.remember(name, headers);
        }
        client.remember(
            FORGER,
            BTreeMap::from([("authorization".to_string(), FORGED_TOKEN.to_string())]),
        );
        self.people_http = Some(PeopleHttp { api, client });
        Ok(())
    }

    /// What SPEC decides `r` answers in session `i`, in SF-2.5's order of checks.
    fn expect(
        &self,
        i: usize,
        r: &PeopleRequest,
        spelled: Option<&people_urls::Sent>,
        content: &str,
    ) -> Expect {
        let action = r.action();
        let over = action == UPLOAD && r.body == Body::OverLimit;
        let refused = |reason: &'static str| {
            if over {
                Expect::Skip("a body past the limit that another check refuses too")
            } else {
                Expect::Refused(reason)
            }
        };
        let Some(&(_, in_conversation, agent_files, workspace_files, outsider)) =
            PEOPLE.iter().find(|p| p.0 == r.caller())
        else {
            return refused("unauthenticated");
        };
        match r.addressed {
            Addressed::Dotted => return refused("invalid_id"),
            Addressed::Unknown => return refused("unknown_entity"),
            Addressed::Session if outsider || self.model.sessions[i].deleted => {
                return refused("unknown_entity")
            }
            Addressed::Session => {}
        }
        let access = |scope: &str| match scope {
            "session" if in_conversation => Access::ReadWrite,
            "session" => Access::None,
            "agent" => agent_files,
            _ => workspace_files,
        };
        let (a, _) = SESSIONS[i];
        if action == LIST {
            let mut files = BTreeSet::new();
            if access("session").can_read() {
                let held = self.model.sessions[i].files.keys();
                files.extend(held.map(|f| format!("session/{f}")));
            }
            if access("agent").can_read() {
                let held = self.model.agent_files.get(a).into_iter().flatten();
                files.extend(held.map(|(f, _)| format!("agent/{f}")));
            }
            if access("workspace").can_read() {
                // The workspace's files: promoted or written there (generator 6).
                let held = self.model.policy.workspace_files.keys();
                files.extend(held.map(|f| format!("workspace/{f}")));
            }
            return Expect::Files(files);
        }
        if action == 4 {
            return Expect::Scopes(
                PERSON_SCOPES
                    .into_iter()
                    .filter(|s| access(s).can_write())
                    .collect(),
            );
        }
        let (scope, name) = match spelled {
            Some(s) => match &s.judged {
                Err(reason) => return refused(reason),
                Ok(name) => ("session", name.clone()),
            },
            None => (r.scope(), path(r.path).to_string()),
        };
        let held = match scope {
            "session" => self.model.sessions[i].files.get(&name),
            "agent" => self.model.agent_files.get(a).and_then(|f| f.get(&name)),
            _ => self.model.policy.workspace_files.get(&name),
        };
        match action {
            UPLOAD if !access(scope).can_write() => refused("permission_denied"),
            UPLOAD if over => Expect::Refused("too_large"),
            UPLOAD => Expect::Written {
                scope,
                name,
                content: content.to_string(),
            },
            DOWNLOAD if !access(scope).can_read() => Expect::Refused("permission_denied"),
            DOWNLOAD => match held {
                Some(c) => Expect::Content(c.clone()),
                None => Expect::Refused("not_found"),
            },
            _ if !access(scope).can_write() => Expect::Refused("permission_denied"),
            _ if held.is_some() => Expect::Removed { scope, name },
            _ => Expect::Refused("not_found"),
        }
    }

    /// Sends `r` and judges the answer against [`Self::expect`]; a success changes the model
    /// as SPEC says (an upload or a removal is activity, SF-4.2).
    async fn people_request(&mut self, step: usize, r: &PeopleRequest) -> Step {
        self.start_people_http().await?;
        let i = session(r.session);
        let now = self.clock_now();
        let turn = &self.turns[i];
        let fit = Fit {
            prefix_bytes: format!(
                "sessions/{}/{}/{}/",
                turn.workspace, turn.agent, turn.session
            )
            .len(),
        };
        let tidy = self.takes("empty_and_dot_segments", "tidied");
        let spelled = r.spelling.map(|k| people_urls::sent(k, &fit, tidy));
        let content = match r.body {
            Body::Small => format!("p{step}"),
            Body::AtLimit => format!("{:x<1$}", format!("p{step}-"), MAX_UPLOAD_BYTES as usize),
            Body::OverLimit => {
                format!(
                    "{:x<1$}",
                    format!("p{step}-"),
                    MAX_UPLOAD_BYTES as usize + 1
                )
            }
        };
        let expect = self.expect(i, r, spelled.as_ref(), &content);
        if let Expect::Skip(why) = &expect {
            self.note(format!("skipped: {why}"));
            return Ok(());
        }
        let url_path = match &spelled {
            Some(s) => s.url.clone(),
            None => format!("{}/{}", r.scope(), path(r.path)),
        };
        let call = match r.action() {
            UPLOAD => PeopleCall::Upload { url_path, content },
            DOWNLOAD => PeopleCall::Download { url_path },
            LIST => PeopleCall::List,
            REMOVE => PeopleCall::Remove { url_path },
            _ => PeopleCall::UploadScopes,
        };
        let session_id = match r.addressed {
            Addressed::Session => turn.session.to_string(),
            Addressed::Unknown => self.ids.session_id("a9", "s9"),
            Addressed::Dotted => format!("{}.1", turn.session),
        };
        let http = self.people_http.as_ref().expect("started above");
        let got = http
            .client
            .send(http.api.base_url(), now, r.caller(), &session_id, &call)
            .await;
        let want = |e: &Expect| format!("{r}: {e}");
        let got = match got {
            Ok(o) => o,
            // The answer is not one SF allows (a status that disagrees with its reason, a
            // download served inline, no answer): the implementation's, so a divergence.
            Err(e) => return diverged(want(&expect), e),
        };
        // Under faults a request that reaches the store may fail for it (503); one refused
        // before (credentials, the session, the URL, the size) never does.
        let reaches_store = match &expect {
            Expect::Refused(r) => matches!(*r, "permission_denied" | "not_found"),
            _ => true,
        };
        if let ScopedOutcome::Refused { reason, .. } = &got {
            if self.faulty()
                && reaches_store
                && matches!(
                    reason.as_str(),
                    "storage_unavailable" | "database_unavailable"
                )
            {
                if r.action() == UPLOAD {
                    // A failed write clears the swept mark (SC-5.4).
                    self.model.sessions[i].write_failed();
                }
                self.note("failed: storage");
                return Ok(());
            }
        }
        let listing_any = self.takes("listing_order", "any");
        let (a, _) = SESSIONS[i];
        match (&expect, &got) {
            (Expect::Refused(want), ScopedOutcome::Refused { reason, .. }) if reason == want => {}
            (
                Expect::Written {
                    scope,
                    name,
                    content,
                },
                ScopedOutcome::Written { path },
            ) if *path == format!("{scope}/{name}") => {
                let files = match *scope {
                    "session" => &mut self.model.sessions[i].files,
                    _ => self.model.agent_files.entry(a).or_default(),
                };
                files.insert(name.clone(), content.clone());
                self.model.sessions[i].touched(now);
            }
            (Expect::Content(c), ScopedOutcome::Content { content }) if c == content => {}
            (Expect::Removed { scope, name }, ScopedOutcome::Ok) => {
                let files = match *scope {
                    "session" => &mut self.model.sessions[i].files,
                    _ => self.model.agent_files.entry(a).or_default(),
                };
                files.remove(name);
                self.model.sessions[i].touched(now);
            }
            (Expect::Files(want), ScopedOutcome::Listing { paths })
                if paths.len() == want.len()
                    && paths.iter().cloned().collect::<BTreeSet<_>>() == *want
                    && (listing_any || paths.iter().eq(want.iter())) => {}
            (Expect::Scopes(want), ScopedOutcome::Listing { paths })
                if paths.iter().map(String::as_str).eq(want.iter().copied()) => {}
            (expect, got) => return diverged(want(expect), shown(got)),
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "people_http_tests.rs"]
mod tests;

//! A person's answers judged against the model the person shares with its agent guest
//! ([`Guest`]): SPEC part SF's decisions (who may do what, the stored name, the listing, the
//! refusals), and the model's files (what the agent wrote is what the person downloads and
//! lists; what the person uploads is what the agent reads and lists, `super::oracle`).

use std::collections::{BTreeMap, BTreeSet};

use super::oracle::{is_infra, may_land, Guest};
use super::paths::{net_ms, Ticket};
use super::people::Answer;
use super::person_plan::{Expect, Grant, PersonOp, Target, Who};
use super::session::Sess;
use super::REF_PATH;
use crate::profiles::scoped::contract::{PeopleCall, ScopedOutcome};
use crate::world::lock;

/// The scope a guest path is in: its first segment.
fn scope_of(path: &str) -> &str {
    path.split('/').next().unwrap_or_default()
}

impl Guest {
    /// The person's own write or removal `op` sends, if its authorities allow it: `(session,
    /// path, value)`. Only the person writes these paths.
    fn person_write(&self, op: &PersonOp, grant: Grant) -> Option<(Sess, String, Option<String>)> {
        let (Who::Own, Target::In(s), Expect::File(path)) = (op.who, op.target, &op.expect) else {
            return None;
        };
        if !grant.access(scope_of(path)).can_write() {
            return None;
        }
        match &op.call {
            PeopleCall::Upload { content, .. } => Some((s, path.clone(), Some(content.clone()))),
            PeopleCall::Remove { .. } => Some((s, path.clone(), None)),
            _ => None,
        }
    }

    /// What the person's request takes as it is sent: its write registered, and what each
    /// path it may read holds now.
    pub(super) fn person_begin(&mut self, op: &PersonOp, grant: Grant) -> Ticket {
        let mut ticket = Ticket {
            sent_ms: net_ms(),
            ..Ticket::default()
        };
        if let Some((s, path, v)) = self.person_write(op, grant) {
            let at = ticket.sent_ms;
            self.with_path(s, &path, |m| m.send(v, at));
        }
        if let (Target::In(s), Who::Own | Who::Foreign) = (op.target, op.who) {
            // As `person_observe` records it: a request that reaches the session.
            self.sent(s, ticket.sent_ms);
        }
        if let (Who::Own, Target::In(s)) = (op.who, op.target) {
            match (&op.call, &op.expect) {
                (PeopleCall::Download { .. }, Expect::File(path)) => {
                    ticket.seen = self.seen(s, true, true);
                    ticket.seen.retain(|p, _| p == path);
                }
                (PeopleCall::List, _) => {
                    ticket.seen = self.seen(
                        s,
                        grant.access("agent").can_read(),
                        grant.access("workspace").can_read(),
                    );
                }
                _ => {}
            }
        }
        ticket
    }

    fn person_violation(&mut self, at: i64, what: String) {
        self.violations.push(format!("p{} at {at}: {what}", self.c));
    }

    /// Checks one answer of the person's against SF and the model, then applies its effect.
    /// `stale`: an `unauthenticated` answer came after `app` restarted since the credentials
    /// were minted.
    pub(super) fn person_observe(
        &mut self,
        op: &PersonOp,
        grant: Grant,
        ticket: &Ticket,
        (sent, replied): (i64, i64),
        answer: &Answer,
        stale: bool,
    ) {
        let write = self.person_write(op, grant);
        if let Some((s, path, _)) = &write {
            self.with_path(*s, path, |m| m.settle());
        }
        let name = match op.target {
            Target::In(s) => {
                let t = self.turn(s);
                format!("{}/{}/{}", t.workspace, t.agent, t.session)
            }
            Target::Nowhere => "a session nobody has".into(),
        };
        let request = match &op.call {
            PeopleCall::Upload { url_path, .. } => format!("PUT {url_path}"),
            PeopleCall::Download { url_path } => format!("GET {url_path}"),
            PeopleCall::Remove { url_path } => format!("DELETE {url_path}"),
            PeopleCall::List | PeopleCall::UploadScopes => "GET (listing)".into(),
        };
        if let (Target::In(s), Who::Own | Who::Foreign) = (op.target, op.who) {
            if matches!(answer, Answer::Unsent) {
                self.landed_or_unsent(s, ticket.sent_ms);
            } else {
                let answered = (!matches!(answer, Answer::Unknown)).then_some(replied);
                self.record(s, ticket, answered);
            }
        }
        let (out, writable) = match answer {
            Answer::Unsent => return,
            Answer::Unknown => {
                if let Some((s, path, v)) = write {
                    self.with_path(s, &path, |m| m.haunt(v));
                }
                if let Target::In(s) = op.target {
                    // It may land, and be activity, at any time (part SL's count).
                    self.person_unknown(s, &op.call);
                }
                return;
            }
            Answer::Misshapen(e) => {
                self.person_violation(replied, format!("{name}: {request}: {e}"));
                return;
            }
            Answer::Outcome(out, writable) => (out, writable),
        };
        let refused = match out {
            ScopedOutcome::Refused { reason, .. } => Some(reason.as_str()),
            _ => None,
        };
        if let (Some(r), Target::In(s)) = (refused, op.target) {
            if is_infra(r) && may_land(ticket) {
                // Refused after the store client's timeout: it may still land, as activity.
                self.person_unknown(s, &op.call);
            }
        }
        let shown = match out {
            ScopedOutcome::Refused { reason, .. } => format!("refused {reason}"),
            o => format!("{o:?}").chars().take(200).collect(),
        };
        if refused == Some("unauthenticated") && op.who != Who::Anonymous && stale {
            // Credentials of an `app` that has since restarted.
            return;
        }
        let unconfirmed = match op.target {
            Target::In(s) => self.session(s).last_activity.is_none(),
            Target::Nowhere => false,
        };
        if unconfirmed && op.who == Who::Own && refused == Some("unknown_entity") {
            // The agent guest never confirmed the session: it may not exist yet.
            return;
        }
        if let Expect::Refused(reason, rule) = op.expect {
            if refused != Some(reason) {
                let w = format!(
                    "{name}: {request} was answered {shown}, not refused {reason} ({rule})"
                );
                self.person_violation(replied, w);
            }
            return;
        }
        let Target::In(s) = op.target else {
            return;
        };
        if unconfirmed {
            return;
        }
        if refused == Some("unknown_entity") || refused == Some("unauthenticated") {
            let w = format!("{name}: {request} was refused {}, though the person is in the conversation and nobody deletes anything in the home workspace (SF-2.1, SF-2.2)", refused.unwrap_or_default());
            self.person_violation(replied, w);
            return;
        }
        // A sweep may have taken the session's files since its last confirmed activity.
        if self.session(s).expirable(replied) {
            for m in self.session_mut(s).paths.values_mut() {
                m.allowed.insert(None);
            }
        }
        // And so may the count (part SL).
        self.count_exposure(s);
        let verdict = match &op.expect {
            Expect::File(path) => self.person_file(s, op, grant, ticket, path, out),
            _ => self.person_listing(s, grant, ticket, out, writable.as_deref()),
        };
        if let Err(w) = verdict {
            self.person_violation(replied, format!("{name}: {request}: {w}"));
        }
        let activity = matches!(
            op.call,
            PeopleCall::Upload { .. } | PeopleCall::Remove { .. }
        );
        if activity && refused.is_none() {
            // SF-4.2: a successful upload or removal is activity of the session.
            let m = self.session_mut(s);
            m.last_activity = m.last_activity.max(Some(sent));
            if m.wait_confirmed {
                m.protected = true;
            }
            self.active_at(s, replied);
        }
    }

    /// An upload, download or removal of `path` through session `s`.
    fn person_file(
        &mut self,
        s: Sess,
        op: &PersonOp,
        grant: Grant,
        ticket: &Ticket,
        path: &str,
        out: &ScopedOutcome,
    ) -> Result<(), String> {
        let refused = match out {
            ScopedOutcome::Refused { reason, .. } => Some(reason.as_str()),
            _ => None,
        };
        let scope = scope_of(path);
        let access = grant.access(scope);
        let writes = !matches!(op.call, PeopleCall::Download { .. });
        let allowed = if writes {
            access.can_write()
        } else {
            access.can_read()
        };
        if !allowed {
            // SF-2.3, SF-4.4: refused for permission (or the store failed first, SF-4.1).
            return match refused {
                Some(r) if r == "permission_denied" || is_infra(r) => Ok(()),
                _ => Err(format!("with {scope} access {access:?} the answer was {out:?}, not permission_denied (SF-2.3, SF-4.4)")),
            };
        }
        if refused.is_some_and(is_infra) {
            // It may still land if the store timed out (`may_land`).
            if let (true, Some(v)) = (
                may_land(ticket),
                match &op.call {
                    PeopleCall::Upload { content, .. } => Some(Some(content.clone())),
                    PeopleCall::Remove { .. } => Some(None),
                    _ => None,
                },
            ) {
                self.with_path(s, path, |m| m.haunt(v));
            }
            return Ok(());
        }
        if path == REF_PATH {
            let Some(reference) = self.reference.clone() else {
                return Ok(());
            };
            return match out {
                ScopedOutcome::Content { content } if *content == reference => Ok(()),
                _ => Err(format!(
                    "{path} was answered {out:?}, not what setup wrote there"
                )),
            };
        }
        match (&op.call, out) {
            (PeopleCall::Upload { content, .. }, ScopedOutcome::Written { path: named }) => {
                if named != path {
                    return Err(format!("the upload stored as {path:?} was answered the name {named:?}: the name the agent lists and reads it by is the stored one (SF-1.3)"));
                }
                self.with_path(s, path, |m| {
                    if m.haunted {
                        m.written.insert(content.clone());
                    } else {
                        m.set(Some(content.clone()));
                    }
                });
                Ok(())
            }
            (PeopleCall::Download { .. }, _) => {
                let answer = match out {
                    ScopedOutcome::Content { content } => Some(content.clone()),
                    ScopedOutcome::Refused { reason, .. } if reason == "not_found" => None,
                    _ => return Err(format!("the download was answered {out:?}")),
                };
                if answer.is_some() && self.swept_away(s, ticket, path) {
                    return Err(format!("{path} downloads as {answer:?}, though a sweep claimed the session after its last write: a request finishes an interrupted sweep first (SF-4.1, SC-5.5)"));
                }
                let verdict = self.with_path(s, path, |m| {
                    let w = ticket.window(path, m);
                    let ok = w.accepts(&answer);
                    if ok && w.quiet && !m.haunted {
                        m.set(answer.clone());
                    }
                    (ok, w.values)
                });
                match verdict {
                    Some((false, values)) => Err(format!("{path} downloads as {answer:?}, expected one of {values:?} (what the agent or the person last wrote there, SF-1.2)")),
                    _ => Ok(()),
                }
            }
            (PeopleCall::Remove { .. }, ScopedOutcome::Ok) => {
                let nothing = self
                    .with_path(s, path, |m| {
                        let nothing = !m.haunted && m.allowed == BTreeSet::from([None]);
                        m.set(None);
                        nothing
                    })
                    .unwrap_or(false);
                if nothing {
                    return Err(format!(
                        "removing {path} succeeded, but nothing was there (SF-4.4)"
                    ));
                }
                Ok(())
            }
            (PeopleCall::Remove { .. }, ScopedOutcome::Refused { reason, .. })
                if reason == "not_found" =>
            {
                let holds = self.with_path(s, path, |m| {
                    if !m.accepts(&None) {
                        return Some(m.allowed.clone());
                    }
                    if !m.haunted {
                        m.set(None);
                    }
                    None
                });
                match holds.flatten() {
                    Some(held) => Err(format!(
                        "removing {path} found nothing, but it holds {held:?}"
                    )),
                    None => Ok(()),
                }
            }
            _ => Err(format!(
                "the person may do this, and the answer was {out:?}"
            )),
        }
    }

    /// A listing through session `s` (SF-1.2, SF-2.6, SF-2.7).
    fn person_listing(
        &mut self,
        s: Sess,
        grant: Grant,
        ticket: &Ticket,
        out: &ScopedOutcome,
        writable: Option<&[String]>,
    ) -> Result<(), String> {
        let paths = match out {
            ScopedOutcome::Listing { paths } => paths,
            ScopedOutcome::Refused { reason, .. } if is_infra(reason) => return Ok(()),
            ScopedOutcome::Refused { reason, .. } if reason == "permission_denied" => {
                return Err("the listing was refused permission_denied; a scope the person may not read is left out, never the reason to refuse (SF-2.6)".into());
            }
            _ => return Err(format!("the listing was answered {out:?}")),
        };
        let expected = grant.writable();
        if writable != Some(expected.as_slice()) {
            return Err(format!("the listing says {writable:?} are writable; the person may write {expected:?}, in that order (SF-2.3, SF-2.7)"));
        }
        if let Some(w) = paths
            .windows(2)
            .find(|w| w[0].as_bytes() >= w[1].as_bytes())
        {
            return Err(format!(
                "the listing lists {} before {}: ascending byte order, each once (SF-1.2, SC-4.4)",
                w[0], w[1]
            ));
        }
        let readable = |p: &str| grant.access(scope_of(p)).can_read();
        // Whether each path must be listed, and whether it must not be.
        let mut known: BTreeMap<String, (bool, bool)> = BTreeMap::new();
        let mut add = |p: &String, m: &super::paths::PathModel| {
            let w = ticket.window(p, m);
            let verdict = if self.swept_away(s, ticket, p) {
                (false, true)
            } else {
                (w.must_exist(), w.must_not_exist())
            };
            known.insert(p.clone(), verdict);
        };
        self.session(s).paths.iter().for_each(|(p, m)| add(p, m));
        if readable("agent/") {
            self.agent_scope(s).iter().for_each(|(p, m)| add(p, m));
        }
        if readable("workspace/") {
            lock(&self.curated).iter().for_each(|(p, m)| add(p, m));
            if self.reference.is_some() {
                known.insert(REF_PATH.to_string(), (true, false));
            }
        }
        let listed: BTreeSet<&str> = paths.iter().map(String::as_str).collect();
        for p in &listed {
            if !readable(p) {
                return Err(format!(
                    "the listing shows {p}, in a scope the person may not read (SF-2.3, SF-2.6)"
                ));
            }
            match known.get(*p) {
                None if self.may_list_unknown(p) => {}
                None => return Err(format!("the listing shows {p}, which nobody wrote")),
                Some((_, true)) => return Err(format!("the listing shows {p}, which is gone")),
                _ => {}
            }
        }
        for (p, (must_exist, _)) in &known {
            if *must_exist && !listed.contains(p.as_str()) {
                return Err(format!(
                    "the listing leaves out {p}, in a scope the person may read (SF-1.2)"
                ));
            }
        }
        Ok(())
    }
}

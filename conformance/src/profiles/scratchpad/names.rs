//! What the implementation calls its directories (SP-1.2), learned through the `names` request
//! and checked against the rules every name must keep. The runner resolves a scenario's `@name`
//! and `<caller>` with these answers, so no verdict depends on the implementation's hash.
//!
//! The rules checked on every answer: a name is one path segment; a session name carries the
//! `t-`/`c-` prefix of its kind and then `[a-z0-9]+`; no identifier a name is derived from is
//! inside it (ignoring ASCII case); one session
//! (or requester) has one name, however it is asked and after every restart; distinct sessions
//! (or requesters) have distinct names.

use crate::profiles::scratchpad::contract::Driver;
use crate::profiles::scratchpad::contract::{Caller, Outcome, Request};
use crate::profiles::scratchpad::script::{Action, Component, NameSource, Scenario, SessionKey};
use crate::profiles::scratchpad::variants;
use crate::variants::Declared;
use std::collections::{BTreeMap, BTreeSet};
use tidemark_reference::clock::Timestamp;
use tidemark_sim::clip::clip;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::trace::Trace;

/// Identifiers shorter than this are not looked for inside names: two letters occur by chance in
/// any encoding of a hash, and a verdict must not depend on luck (SP-1.2).
pub const IDENTIFIER_CHECKED_MIN_BYTES: usize = 3;

/// The names one scenario needs, and every answer the implementation gave for them.
#[derive(Debug, Default)]
pub struct NameBook {
    /// Whom to ask: every caller the scenario names, directly or through a placeholder.
    callers: BTreeSet<Caller>,
    /// Answers of the running process; replaced at each start.
    sessions: BTreeMap<SessionKey, (String, Caller)>,
    requesters: BTreeMap<String, String>,
    /// The first answer ever given for each, to hold later processes to it.
    first_sessions: BTreeMap<SessionKey, String>,
    first_requesters: BTreeMap<String, String>,
    /// A thread id names one session in every channel (`thread_identity=global`, SP-1.1).
    global_threads: bool,
}

impl NameBook {
    /// A book for `scenario`: its callers, plus a caller for each `@name` and `<caller>` it
    /// spells (a requester who never calls is asked about in the scenario's first channel).
    pub fn for_scenario(scenario: &Scenario, declared: &Declared) -> NameBook {
        let mut callers = BTreeSet::new();
        let mut requesters = BTreeSet::new();
        let mut first_channel = None;
        for step in &scenario.steps {
            if let Action::Call { call, .. } = &step.action {
                first_channel.get_or_insert_with(|| call.caller().channel.clone());
                callers.insert(call.caller().clone());
            }
            for path in step.paths() {
                for c in path.names() {
                    match c {
                        Component::Session(caller) => {
                            first_channel.get_or_insert_with(|| caller.channel.clone());
                            callers.insert(caller.clone());
                        }
                        Component::Requester(r) => {
                            requesters.insert(r.clone());
                        }
                        Component::Literal(_) => {}
                    }
                }
            }
        }
        let channel = first_channel.unwrap_or_else(|| "general".to_string());
        for r in requesters {
            if !callers.iter().any(|c| c.requester == r) {
                callers.insert(Caller {
                    requester: r,
                    channel: channel.clone(),
                    thread: None,
                });
            }
        }
        NameBook {
            callers,
            global_threads: declared.takes(variants::variant("thread_identity"), "global"),
            ..NameBook::default()
        }
    }

    /// Asks a freshly started implementation for every name and checks each answer. Errors are
    /// (expected, actual) for the runner's failure report.
    pub async fn learn(
        &mut self,
        driver: &mut dyn Driver,
        now: Timestamp,
        trace: &mut Trace,
    ) -> Result<(), (String, String)> {
        self.sessions.clear();
        self.requesters.clear();
        let callers: Vec<Caller> = self.callers.iter().cloned().collect();
        for caller in callers {
            let asked = format!("names of {}", caller.display());
            let out = driver
                .call(
                    now,
                    &Request::Names {
                        caller: caller.clone(),
                    },
                )
                .await
                .map_err(|e| (format!("an answer to {asked}"), e.to_string()))?;
            trace.record(
                now.as_millis() - EPOCH.as_millis(),
                format!("{asked} -> {}", out.summary()),
            );
            match out {
                Outcome::Names { session, requester } => {
                    self.record(&caller, session, requester)
                        .map_err(|broken| (format!("{asked} to follow SP-1.2"), broken))?
                }
                other => {
                    return Err((
                        format!("{asked}: a names outcome (PROTOCOL.md)"),
                        other.summary(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Checks one answer against SP-1.2 and everything answered before; the error names the rule.
    pub fn record(
        &mut self,
        caller: &Caller,
        session: String,
        requester: String,
    ) -> Result<(), String> {
        one_segment("session", &session)?;
        one_segment("requester", &requester)?;
        let prefix = if caller.thread.is_some() { "t-" } else { "c-" };
        let rest = session.strip_prefix(prefix).unwrap_or("");
        if rest.is_empty()
            || !rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            return Err(format!(
                "the session name {session:?} of {} must be {prefix} followed by [a-z0-9]+: the \
                 prefix carries the retention timer and the alphabet tells a session from an \
                 operator's directory (SP-1.2, SP-1.4, SP-5.4)",
                caller.display()
            ));
        }
        // Each name against the identifiers it is derived from (SP-1.2).
        let session_ids = match &caller.thread {
            Some(thread) => [&caller.channel, thread],
            None => [&caller.channel, &caller.requester],
        };
        for (what, name, ids) in [
            ("session", &session, &session_ids[..]),
            ("requester", &requester, &[&caller.requester][..]),
        ] {
            let lower = name.to_ascii_lowercase();
            for id in ids {
                if id.len() >= IDENTIFIER_CHECKED_MIN_BYTES
                    && lower.contains(&id.to_ascii_lowercase())
                {
                    return Err(format!(
                        "the {what} name {name:?} contains the identifier {id:?}: identifiers \
                         never reach a path (SP-1.2)"
                    ));
                }
            }
        }
        let key = SessionKey::of_with(caller, self.global_threads);
        check_one_name(
            &mut self.first_sessions,
            key.clone(),
            &session,
            "session",
            &caller.display(),
        )?;
        check_one_name(
            &mut self.first_requesters,
            caller.requester.clone(),
            &requester,
            "requester",
            &caller.requester,
        )?;
        if let Some((earlier, asked_as)) = self.sessions.get(&key) {
            if earlier != &session {
                return Err(format!(
                    "one session has two names: {} got {earlier:?} and {} got {session:?} \
                     (SP-1.1: everyone in a thread shares its session; a thread is one session in \
                     its channel, or in every channel under thread_identity=global)",
                    asked_as.display(),
                    caller.display()
                ));
            }
        }
        self.sessions.insert(key, (session, caller.clone()));
        self.requesters.insert(caller.requester.clone(), requester);
        Ok(())
    }
}

/// One identity, one name, for ever; one name, one identity.
fn check_one_name<K: Ord + Clone>(
    first: &mut BTreeMap<K, String>,
    key: K,
    name: &str,
    what: &str,
    who: &str,
) -> Result<(), String> {
    match first.get(&key) {
        Some(earlier) if earlier != name => Err(format!(
            "the {what} name of {who} changed from {earlier:?} to {name:?}: the same identity keeps \
             its name, after a restart too (SP-1.2)"
        )),
        Some(_) => Ok(()),
        None => {
            if first.values().any(|n| n == name) {
                return Err(format!(
                    "two different {what}s share the name {name:?}; distinct identities get \
                     distinct names (SP-1.2)"
                ));
            }
            first.insert(key, name.to_string());
            Ok(())
        }
    }
}

/// The longest directory name: a path segment is at most 255 bytes on the filesystems the
/// scratchpad runs on (`NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

/// A name that can be one directory: not empty, `.` or `..`, no `/` or NUL, at most
/// [`MAX_NAME_BYTES`]. Its error quotes the name cut (an answer may be any size).
pub(crate) fn one_segment(what: &str, name: &str) -> Result<(), String> {
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "the {what} name {:?} is {} bytes; a path segment is at most {MAX_NAME_BYTES} bytes \
             (SP-1.2)",
            clip(name),
            name.len()
        ));
    }
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(format!(
            "the {what} name {name:?} is not one path segment (SP-1.2)"
        ));
    }
    Ok(())
}

impl NameSource for NameBook {
    fn requester(&self, name: &str) -> String {
        self.requesters
            .get(name)
            .or_else(|| self.first_requesters.get(name))
            .cloned()
            .unwrap_or_else(|| format!("@{name}"))
    }

    fn session(&self, caller: &Caller) -> String {
        let key = SessionKey::of_with(caller, self.global_threads);
        self.sessions
            .get(&key)
            .map(|(n, _)| n.clone())
            .or_else(|| self.first_sessions.get(&key).cloned())
            .unwrap_or_else(|| format!("<{}>", caller.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(r: &str, c: &str, t: Option<&str>) -> Caller {
        Caller {
            requester: r.into(),
            channel: c.into(),
            thread: t.map(Into::into),
        }
    }

    #[test]
    fn a_name_that_breaks_sp_1_2_is_refused_naming_the_rule() {
        let mut book = NameBook::default();
        let alice_t1 = caller("alice", "general", Some("T1"));
        let messages = [
            book.record(&alice_t1, "t-a/b".into(), "r1".into()),
            book.record(&alice_t1, "c-abc".into(), "r1".into()),
            book.record(&alice_t1, "t-xgeneral".into(), "r1".into()),
            book.record(&alice_t1, "t-1".into(), "x-alice".into()),
            // Case does not hide an identifier.
            book.record(
                &caller("Carol", "general", None),
                "c-1".into(),
                "xcarolx".into(),
            ),
            book.record(&alice_t1, "t-1".into(), "..".into()),
        ]
        .map(|r| r.unwrap_err());
        insta::assert_snapshot!(messages.join("\n"));
    }

    #[test]
    fn names_must_be_stable_shared_in_a_thread_and_distinct() {
        let mut book = NameBook::default();
        let alice = caller("alice", "general", Some("T1"));
        let bob = caller("bob", "general", Some("T1"));
        let carol = caller("carol", "general", Some("T2"));
        book.record(&alice, "t-1".into(), "ra".into()).unwrap();
        book.record(&bob, "t-1".into(), "rb".into()).unwrap();
        let shared = book.record(&carol, "t-1".into(), "rc".into()).unwrap_err();
        let two = book.record(&bob, "t-2".into(), "rb".into()).unwrap_err();
        let same_requester_name = book.record(&carol, "t-3".into(), "ra".into()).unwrap_err();
        // A restart: the running answers go, the first answers stay.
        book.sessions.clear();
        book.requesters.clear();
        let changed = book.record(&alice, "t-9".into(), "ra".into()).unwrap_err();
        insta::assert_snapshot!([shared, two, same_requester_name, changed].join("\n"));
        assert_eq!(book.session(&bob), "t-1");
    }
}

//! People's requests in a model sequence (SPEC part SF), through the store's door for the
//! people's files API: the same files as the agents' (the workspace's too, once a generator-5
//! sequence promotes or writes some), a person's own access instead of the
//! settings cascade (SF-2.3, SF-2.4), only an upload or a removal as activity (SF-4.2), a
//! listing that leaves out what the person may not read (SF-2.6), and a session of another
//! workspace unknown (SF-2.2). Generator version 4 drew these; version 5 sends people's
//! requests over HTTP (`people_http.rs`), and this door stays so a version-4 sequence replays.

use std::collections::BTreeSet;

use tidemark_reference::scoped::{Access, PersonGrant, ScopedError};

use super::ops::{path, PEOPLE, PERSON_ACTIONS, PERSON_SCOPES, SESSIONS};
use super::{diverged, Runner, Step};

/// The workspace the outsider belongs to: never created, so none of the model's sessions is
/// theirs.
pub(super) const OUTSIDE: &str = "w9";

impl Runner<'_> {
    #[allow(clippy::too_many_arguments)] // One person's request, as the operation names it.
    pub(super) async fn person(
        &mut self,
        i: usize,
        who: u8,
        action: u8,
        p: u8,
        scope: u8,
        step: usize,
        now: i64,
    ) -> Step {
        let (name, in_conversation, agent_files, workspace_files, outsider) =
            PEOPLE[who as usize % PEOPLE.len()];
        let grant = PersonGrant {
            in_conversation,
            agent_files: Some(agent_files),
            workspace_files: Some(workspace_files),
        };
        let action = PERSON_ACTIONS[action as usize % 4];
        // Only a download reaches workspace scope: its files are the agents' (promoted, or
        // written where an agent's layer opened it).
        let scope = match (action, scope % 3) {
            ("download", s) => PERSON_SCOPES[s as usize],
            (_, s) => PERSON_SCOPES[s as usize % 2],
        };
        let file = path(p);
        let guest = format!("{scope}/{file}");
        let turn = &self.turns[i];
        if outsider {
            // SF-2.2: looked up in the person's own workspace, no session of this one exists.
            let r = self
                .store
                .person_space(&self.ids.id(OUTSIDE), turn.session.as_str(), grant)
                .await;
            return match r {
                Err(ScopedError::UnknownEntity { .. }) => Ok(()),
                Err(ScopedError::Storage { .. }) | Err(ScopedError::Database { .. })
                    if self.faulty() =>
                {
                    self.note("failed: storage");
                    Ok(())
                }
                r => diverged(
                    format!(
                        "{name} (of another workspace) reaches {}: UnknownEntity",
                        turn.session
                    ),
                    format!("{name}: {:?}", r.map(|_| ())),
                ),
            };
        }
        let space = turn.clone().for_person(grant);
        let (a, _) = SESSIONS[i];
        let access = |scope: &str| match scope {
            "session" if in_conversation => Access::ReadWrite,
            "session" => Access::None,
            "agent" => agent_files,
            _ => workspace_files,
        };
        let deleted = self.model.sessions[i].deleted;
        let faulty = self.faulty();
        let held = |model: &super::Model| -> Option<String> {
            match scope {
                "session" => model.sessions[i].files.get(file).cloned(),
                "agent" => model.agent_files.get(a).and_then(|f| f.get(file).cloned()),
                _ => model.policy.workspace_files.get(file).cloned(),
            }
        };
        let want = |outcome: &str| {
            format!(
                "{name} {action}s {guest} in {a}/{}: {outcome}",
                SESSIONS[i].1
            )
        };
        match action {
            "list" => {
                let r = self.store.list(&space, None).await;
                let mut expected = BTreeSet::new();
                if access("session").can_read() {
                    expected.extend(
                        self.model.sessions[i]
                            .files
                            .keys()
                            .map(|f| format!("session/{f}")),
                    );
                }
                if access("agent").can_read() {
                    if let Some(files) = self.model.agent_files.get(a) {
                        expected.extend(files.keys().map(|f| format!("agent/{f}")));
                    }
                }
                if access("workspace").can_read() {
                    let files = self.model.policy.workspace_files.keys();
                    expected.extend(files.map(|f| format!("workspace/{f}")));
                }
                match (r, deleted) {
                    (Err(ScopedError::Storage { .. }), _) if faulty => self.note("failed: storage"),
                    (Ok(files), false) => {
                        let got: BTreeSet<String> = files.into_iter().map(|f| f.path).collect();
                        if got != expected {
                            return diverged(want(&format!("{expected:?}")), format!("{got:?}"));
                        }
                        // A listing is not activity (SF-4.2).
                    }
                    (Err(ScopedError::UnknownEntity { .. }), true) => {}
                    (r, d) => {
                        let outcome = if d {
                            "UnknownEntity".to_string()
                        } else {
                            format!("Ok({expected:?})")
                        };
                        return diverged(want(&outcome), format!("{:?}", r.map(|_| ())));
                    }
                }
            }
            "download" => {
                let r = self.store.read(&space, &guest).await;
                let readable = access(scope).can_read();
                let had = held(&self.model);
                match (r, deleted, readable, had) {
                    (Err(ScopedError::Storage { .. }), _, _, _) if faulty => {
                        self.note("failed: storage")
                    }
                    (Ok(bytes), false, true, Some(c)) if bytes == c.as_bytes() => {}
                    (Err(ScopedError::NotFound { .. }), false, true, None) => {}
                    (Err(ScopedError::PermissionDenied { .. }), false, false, _) => {}
                    (Err(ScopedError::UnknownEntity { .. }), true, _, _) => {}
                    (r, d, readable, had) => {
                        let outcome = match (d, readable, had) {
                            (true, _, _) => "UnknownEntity".to_string(),
                            (false, false, _) => "PermissionDenied".to_string(),
                            (false, true, None) => "NotFound".to_string(),
                            (false, true, Some(c)) => format!("Ok({c:?})"),
                        };
                        return diverged(
                            want(&outcome),
                            format!("{:?}", r.map(|b| String::from_utf8_lossy(&b).into_owned())),
                        );
                    }
                }
            }
            _ => {
                let upload = action == "upload";
                let content = format!("p{step}");
                let r = if upload {
                    self.store
                        .write(&space, &guest, content.clone().into_bytes())
                        .await
                        .map(|_| ())
                } else {
                    self.store.delete(&space, &guest).await
                };
                let writable = access(scope).can_write();
                let had = held(&self.model).is_some();
                match (r, deleted, writable, upload || had) {
                    (Err(ScopedError::Storage { .. }), _, _, _) if faulty => {
                        if upload {
                            // A failed write clears the swept mark (SC-5.4).
                            self.model.sessions[i].write_failed();
                        }
                        self.note("failed: storage")
                    }
                    (Ok(()), false, true, true) => {
                        let files = if scope == "session" {
                            &mut self.model.sessions[i].files
                        } else {
                            self.model.agent_files.entry(a).or_default()
                        };
                        if upload {
                            files.insert(file.to_string(), content);
                        } else {
                            files.remove(file);
                        }
                        // An upload or a removal is activity (SF-4.2).
                        self.model.sessions[i].touched(now);
                    }
                    (Err(ScopedError::NotFound { .. }), false, true, false) => {}
                    (Err(ScopedError::PermissionDenied { .. }), false, false, _) => {}
                    (Err(ScopedError::UnknownEntity { .. }), true, _, _) => {}
                    (r, d, writable, present) => {
                        let outcome = match (d, writable, present) {
                            (true, _, _) => "UnknownEntity",
                            (false, false, _) => "PermissionDenied",
                            (false, true, false) => "NotFound",
                            (false, true, true) => "Ok",
                        };
                        return diverged(want(outcome), format!("{r:?}"));
                    }
                }
            }
        }
        Ok(())
    }
}

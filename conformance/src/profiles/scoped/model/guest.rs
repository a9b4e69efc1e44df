//! A guest's file calls against the model: writes, reads (plain and by a hostile spelling),
//! listings, extracted text and single-file deletes, each outcome compared with what SPEC part
//! SC decides in the model's state.

use std::collections::BTreeSet;

use tidemark_reference::scoped::ScopedError;

use super::hostile;
use super::ops::{path, SESSIONS};
use super::{diverged, Runner, Step};

impl Runner<'_> {
    pub(super) async fn write(
        &mut self,
        i: usize,
        name: &str,
        agent_scope: bool,
        content: String,
        now: i64,
    ) -> Step {
        let scope = if agent_scope { "agent" } else { "session" };
        self.write_spelled(
            i,
            &format!("{scope}/{name}"),
            name,
            agent_scope,
            content,
            now,
        )
        .await
    }

    /// [`Self::write`] of the file `name`, sent as the guest path `guest` (a spelling SPEC
    /// reads as that file: SC-2.3's variant tidies `session/dir//notes.md` into `dir/notes.md`).
    pub(super) async fn write_spelled(
        &mut self,
        i: usize,
        guest: &str,
        name: &str,
        agent_scope: bool,
        content: String,
        now: i64,
    ) -> Step {
        let (a, _) = SESSIONS[i];
        let scope = if agent_scope { "agent" } else { "session" };
        let r = self
            .store
            .write(&self.turns[i], guest, content.clone().into_bytes())
            .await;
        let deleted = self.model.sessions[i].deleted;
        let allowed = !agent_scope || self.model.access(a).can_write();
        match (r, deleted, allowed) {
            (Err(ScopedError::Storage { .. }), _, _) if self.faulty() => {
                // A failed write changed nothing: not the file, not the activity; it clears
                // the swept mark (SC-5.4).
                self.model.sessions[i].write_failed();
                self.note("failed: storage");
            }
            (Ok(_), false, true) => {
                let files = if agent_scope {
                    self.model.agent_files.entry(a).or_default()
                } else {
                    &mut self.model.sessions[i].files
                };
                files.insert(name.to_string(), content);
                self.model.sessions[i].touched(now);
            }
            (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
            (Err(ScopedError::PermissionDenied { .. }), false, false) => {}
            (r, d, allowed) => {
                let want = match (d, allowed) {
                    (true, _) => "UnknownEntity (the session is deleted)",
                    (false, false) => "PermissionDenied (the agent scope is not writable)",
                    (false, true) => "Ok (the session is live)",
                };
                return diverged(
                    format!("{scope} write: {want}"),
                    format!("{scope} write: {r:?}"),
                );
            }
        }
        Ok(())
    }

    /// A hostile spelling: refused with its SC-8 reason whatever the session's state (the path
    /// is resolved before anything else, SC-3.5), or a valid name written or read as any file.
    pub(super) async fn hostile(
        &mut self,
        i: usize,
        spelling: &hostile::Spelling,
        write: bool,
        step: usize,
        now: i64,
    ) -> Step {
        let t = &self.turns[i];
        let fit = hostile::Fit {
            prefix_bytes: format!("sessions/{}/{}/{}/", t.workspace, t.agent, t.session).len(),
        };
        let guest = spelling.guest_path(&fit);
        let tidy = self.takes("empty_and_dot_segments", "tidied");
        match spelling.judged(&fit, tidy) {
            // Sent as spelled: a name that only looks hostile, or one SC-2.3's variant tidies.
            (hostile::Verdict::Name, Some(name)) if write => {
                self.write_spelled(i, &guest, &name, false, format!("v{step}"), now)
                    .await
            }
            (hostile::Verdict::Name, Some(name)) => {
                self.read_spelled(i, &guest, &name, false, now).await
            }
            (verdict, _) => {
                let r = if write {
                    self.store
                        .write(&self.turns[i], &guest, b"hostile".to_vec())
                        .await
                        .map(|_| ())
                } else {
                    self.store.read(&self.turns[i], &guest).await.map(|_| ())
                };
                let hostile::Verdict::Refused(reason) = verdict else {
                    unreachable!("a valid spelling has a file name")
                };
                let reason = self.malformed_reason(i, reason);
                match r {
                    Err(e) if e.kind() == reason => Ok(()),
                    r => diverged(
                        format!(
                            "{guest:?} ({}): refused {reason} ({})",
                            spelling.what, spelling.rule
                        ),
                        format!("{:?}", r.map_err(|e| e.kind())),
                    ),
                }
            }
        }
    }

    pub(super) async fn read(&mut self, i: usize, name: &str, agent_scope: bool, now: i64) -> Step {
        let scope = if agent_scope { "agent" } else { "session" };
        self.read_spelled(i, &format!("{scope}/{name}"), name, agent_scope, now)
            .await
    }

    /// [`Self::read`] of the file `name`, sent as the guest path `guest`.
    pub(super) async fn read_spelled(
        &mut self,
        i: usize,
        guest: &str,
        name: &str,
        agent_scope: bool,
        now: i64,
    ) -> Step {
        let (a, _) = SESSIONS[i];
        let scope = if agent_scope { "agent" } else { "session" };
        let r = self.store.read(&self.turns[i], guest).await;
        let deleted = self.model.sessions[i].deleted;
        let readable = !agent_scope || self.model.access(a).can_read();
        let want = if agent_scope {
            self.model.agent_files.get(a).and_then(|f| f.get(name))
        } else {
            self.model.sessions[i].files.get(name)
        }
        .cloned();
        match (r, deleted, readable, want) {
            (Ok(b), false, true, Some(c)) if b == c.as_bytes() => {
                self.model.sessions[i].touched(now);
            }
            (Err(ScopedError::NotFound { .. }), false, true, None) => {}
            (Err(ScopedError::PermissionDenied { .. }), false, false, _) => {}
            (Err(ScopedError::UnknownEntity { .. }), true, _, _) => {}
            (Err(ScopedError::Storage { .. }), false, _, _) if self.faulty() => {
                self.note("failed: storage");
            }
            (r, deleted, readable, want) => {
                let want = match (deleted, readable, want) {
                    (true, _, _) => "UnknownEntity (the session is deleted)".to_string(),
                    (false, false, _) => "PermissionDenied (the agent scope is none)".to_string(),
                    (false, true, None) => "NotFound".to_string(),
                    (false, true, Some(c)) => format!("Ok({c:?})"),
                };
                let got = match r {
                    Ok(b) => format!("Ok({:?})", String::from_utf8_lossy(&b)),
                    Err(e) => format!("Err({e:?})"),
                };
                return diverged(
                    format!("{scope} read: {want}"),
                    format!("{scope} read: {got}"),
                );
            }
        }
        Ok(())
    }

    pub(super) async fn list(&mut self, i: usize, now: i64) -> Step {
        let r = self.store.list(&self.turns[i], None).await;
        match (r, self.model.sessions[i].deleted) {
            (Err(ScopedError::Storage { .. }), _) if self.faulty() => self.note("failed: storage"),
            (Ok(files), false) => {
                let listed: Vec<String> = files.into_iter().map(|f| f.path).collect();
                let got: BTreeSet<String> = listed.iter().cloned().collect();
                let want = self.model.listing(i);
                if got != want {
                    return diverged(format!("list: {want:?}"), format!("list: {got:?}"));
                }
                // SC-4.4: one listing in the byte order of its paths (the set's order), each
                // once; any order, each once, under its variant `listing_order=any`.
                if listed.len() != want.len() {
                    return diverged(
                        format!("list, each file once: {want:?}"),
                        format!("list: {listed:?}"),
                    );
                }
                if !self.takes("listing_order", "any") && !listed.iter().eq(want.iter()) {
                    return diverged(
                        format!("list in order: {:?}", want.iter().collect::<Vec<_>>()),
                        format!("list in order: {listed:?}"),
                    );
                }
                self.model.sessions[i].touched(now);
            }
            (Err(ScopedError::UnknownEntity { .. }), true) => {}
            (r, d) => {
                let want = if d {
                    "list: UnknownEntity (the session is deleted)"
                } else {
                    "list: Ok"
                };
                return diverged(want, format!("list: {r:?}"));
            }
        }
        Ok(())
    }

    pub(super) async fn text(&mut self, i: usize, p: u8, now: i64) -> Step {
        let r = self
            .store
            .read_text(&self.turns[i], &format!("session/{}", path(p)))
            .await;
        let faulty = self.faulty();
        let m = &mut self.model.sessions[i];
        let want = m.files.get(path(p)).cloned();
        match (r, m.deleted, want) {
            (Err(ScopedError::Storage { .. }), _, _) if faulty => {
                self.log.push("  (failed: storage)".into())
            }
            (Ok(Some(text)), false, Some(c)) if text == c => m.touched(now),
            (Err(ScopedError::NotFound { .. }), false, None) => {}
            (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
            (r, d, w) => {
                let want = match (d, w) {
                    (true, _) => "text: UnknownEntity (the session is deleted)".to_string(),
                    (false, None) => "text: NotFound (the file is gone, so is its text)".into(),
                    (false, Some(c)) => format!("text: Ok(Some({c:?}))"),
                };
                return diverged(want, format!("text: {r:?}"));
            }
        }
        Ok(())
    }

    pub(super) async fn delete(&mut self, i: usize, p: u8, now: i64) -> Step {
        let t = &self.turns[i];
        let guest = format!("session/{}", path(p));
        let r = self.store.delete(t, &guest).await;
        let had = self.model.sessions[i].files.contains_key(path(p));
        match (r, self.model.sessions[i].deleted, had) {
            (Err(ScopedError::Storage { .. }), _, _) if self.faulty() => {
                self.note("failed: storage")
            }
            (Ok(()), false, true) => {
                let m = &mut self.model.sessions[i];
                m.files.remove(path(p));
                m.touched(now);
                // The text goes with its file, at once (SC-4): a file the listing no longer
                // shows is not readable, not even as text.
                match self.store.read_text(t, &guest).await {
                    Err(ScopedError::NotFound { .. }) => {}
                    Err(ScopedError::Storage { .. }) if self.faulty() => {
                        self.note("failed: storage")
                    }
                    r => {
                        return diverged("text of a deleted file: NotFound", format!("text: {r:?}"))
                    }
                }
            }
            (Err(ScopedError::NotFound { .. }), false, false) => {}
            (Err(ScopedError::UnknownEntity { .. }), true, _) => {}
            (r, d, h) => {
                let want = match (d, h) {
                    (true, _) => "delete: UnknownEntity (the session is deleted)",
                    (false, true) => "delete: Ok",
                    (false, false) => "delete: NotFound",
                };
                return diverged(want, format!("delete: {r:?}"));
            }
        }
        Ok(())
    }
}

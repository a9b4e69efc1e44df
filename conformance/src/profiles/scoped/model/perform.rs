//! One operation performed and checked: `Runner::perform` sends each operation of the shared
//! core (writes, reads, waits, sweeps under faults, deletions, hostile spellings, people's
//! requests) to the call that performs it and each part's operations to that part's module
//! (`policies.rs`, `close.rs`, `erasure.rs`, ...). It is one `match` over [`ModelOp`]: every
//! operation has one arm, so the dispatch stays whole in this file.

use std::collections::BTreeMap;

use tidemark_reference::clock::{DAY_MS, HOUR_MS};
use tidemark_reference::scoped::{Access, CrashPoint, PathError, ScopeSettings, ScopedError};

use super::hostile;
use super::ops::{
    agent, path, session, traversal, IdStyle, ModelOp, SESSIONS, SKILL_FILES, WAIT_NAMES, WORKSPACE,
};
use super::state::kind;
use super::{diverged, erasure, Runner, Step};
use tidemark_sim::real_tier::FaultPlan;

impl Runner<'_> {
    /// Performs `op` at `now`, the clock's step taken: an erasure's staging (`erasure.rs`)
    /// performs a sweep this way after moving the clock itself.
    pub(super) async fn perform(&mut self, step: usize, op: &ModelOp, now: i64) -> Step {
        if let Some(i) = op.session_touched() {
            self.start_session(i, now).await?;
        }
        match *op {
            ModelOp::Write {
                session: s,
                path: p,
                agent_scope,
            } => {
                self.write(session(s), path(p), agent_scope, format!("v{step}"), now)
                    .await
            }
            ModelOp::Read {
                session: s,
                path: p,
                agent_scope,
            } => self.read(session(s), path(p), agent_scope, now).await,
            ModelOp::Activity { session: s } => {
                let i = session(s);
                let r = self.store.record_activity(&self.turns[i]).await;
                let m = &mut self.model.sessions[i];
                match (r, m.deleted) {
                    (Ok(()), false) => m.touched(now),
                    (Err(ScopedError::UnknownEntity { .. }), true) => {}
                    (r, d) => {
                        let want = if d { "UnknownEntity" } else { "Ok" };
                        return diverged(
                            format!("activity: {want} (deleted {d})"),
                            format!("activity: {r:?}"),
                        );
                    }
                }
                Ok(())
            }
            ModelOp::Wait {
                session: s,
                kind: k,
                id,
                add,
            } => {
                let i = session(s);
                let w = (k % 3, id % 2);
                let wid = format!("w{}", w.1);
                let t = &self.turns[i];
                let r = if add {
                    self.store.add_wait(t, kind(w.0), &wid).await
                } else {
                    self.store.remove_wait(t, kind(w.0), &wid).await
                };
                let m = &mut self.model.sessions[i];
                match (r, m.deleted, add) {
                    (Ok(()), false, true) => {
                        m.waits.insert(w);
                    }
                    (Ok(()), false, false) => {
                        m.waits.remove(&w);
                    }
                    (Ok(()), true, false) => {}
                    (Err(ScopedError::UnknownEntity { .. }), true, true) => {}
                    (r, d, a) => {
                        let want = if d && a { "UnknownEntity" } else { "Ok" };
                        return diverged(
                            format!(
                                "wait {}: {want} (deleted {d}, add {a})",
                                WAIT_NAMES[w.0 as usize]
                            ),
                            format!("wait: {r:?}"),
                        );
                    }
                }
                Ok(())
            }
            ModelOp::Advance { days, hours } => {
                self.clock
                    .advance_ms(i64::from(days) * DAY_MS + i64::from(hours) * HOUR_MS);
                Ok(())
            }
            ModelOp::Sweep => self.boxed_sweep(now).await,
            ModelOp::List { session: s } => self.list(session(s), now).await,
            ModelOp::Text {
                session: s,
                path: p,
            } => self.text(session(s), p, now).await,
            ModelOp::Traversal {
                session: s,
                path: p,
                encoded,
            } => {
                let spelled = traversal(p, encoded);
                let want = self.malformed_reason(session(s), "traversal");
                match self.store.read(&self.turns[session(s)], &spelled).await {
                    Err(e) if e.kind() == want => Ok(()),
                    r => diverged(
                        // The default's words are a saved failure's trace: kept as they were.
                        match want {
                            "traversal" => "read: refused as Traversal, never clamped".to_string(),
                            other => format!("read: refused {other}, never clamped"),
                        },
                        format!("read: {r:?}"),
                    ),
                }
            }
            ModelOp::Hostile {
                session: s,
                spelling,
                write,
            } => {
                self.hostile(session(s), hostile::spelling(spelling), write, step, now)
                    .await
            }
            ModelOp::Person {
                session: s,
                person,
                action,
                path: p,
                scope,
            } => {
                self.person(session(s), person, action, p, scope, step, now)
                    .await
            }
            ModelOp::People(ref r) => self.people(step, r).await,
            ModelOp::MissingScope {
                session: s,
                path: p,
            } => match self.store.read(&self.turns[session(s)], path(p)).await {
                Err(ScopedError::Path(PathError::MissingScope { corrections, .. }))
                    if corrections.len() == 3
                        && self.malformed_reason(session(s), "missing_scope")
                            == "missing_scope" =>
                {
                    Ok(())
                }
                Err(ScopedError::UnknownEntity { .. })
                    if self.malformed_reason(session(s), "missing_scope") == "unknown_entity" =>
                {
                    Ok(())
                }
                r => diverged(
                    format!(
                        "read: refused {}",
                        match self.malformed_reason(session(s), "missing_scope") {
                            "missing_scope" => "as MissingScope with three corrections",
                            other => other,
                        }
                    ),
                    format!("read: {r:?}"),
                ),
            },
            ModelOp::Delete {
                session: s,
                path: p,
            } => self.delete(session(s), p, now).await,
            ModelOp::WorkspaceWrite {
                session: s,
                path: p,
            } => {
                let i = session(s);
                let r = self
                    .store
                    .write(
                        &self.turns[i],
                        &format!("workspace/{}", path(p)),
                        b"shared".to_vec(),
                    )
                    .await;
                // Read-only by default; an agent's own layer may open it (generator 5).
                let writable = self
                    .model
                    .policy
                    .workspace_access(SESSIONS[i].0)
                    .can_write();
                match (r, self.model.sessions[i].deleted, writable) {
                    (Err(ScopedError::Storage { .. }), _, _) if self.faulty() => {
                        self.model.sessions[i].write_failed();
                        self.note("failed: storage");
                        Ok(())
                    }
                    (Err(ScopedError::PermissionDenied { .. }), false, false) => Ok(()),
                    (Ok(_), false, true) => {
                        let files = &mut self.model.policy.workspace_files;
                        files.insert(path(p).to_string(), "shared".to_string());
                        self.model.sessions[i].touched(now);
                        Ok(())
                    }
                    (Err(ScopedError::UnknownEntity { .. }), true, _) => Ok(()),
                    (r, d, w) => {
                        let want = match (d, w) {
                            (true, _) => "workspace write: UnknownEntity (the session is deleted)",
                            (false, false) => {
                                "workspace write: PermissionDenied (read-only by default)"
                            }
                            (false, true) => "workspace write: Ok (the agent's layer opens it)",
                        };
                        diverged(want, format!("workspace write: {r:?}"))
                    }
                }
            }
            ModelOp::SetAgentAccess { agent: a, access } => {
                let a = agent(a);
                if self.model.deleted_agents.contains(a) {
                    self.note("skipped: the agent is deleted");
                    return Ok(());
                }
                let access = [Access::None, Access::Read, Access::ReadWrite][access as usize % 3];
                // The agent's layer is replaced whole (SC-3.2): its workspace access, if a
                // generator-5 operation set one, is sent again.
                let settings = ScopeSettings {
                    agent: Some(access),
                    workspace: self.model.policy.workspace_layer.get(a).copied(),
                };
                if let Err(e) = self
                    .store
                    .create_agent(&self.ids.id(WORKSPACE), &self.ids.id(a), settings)
                    .await
                {
                    return diverged("agent settings: Ok", format!("agent settings: {e}"));
                }
                self.model.agent_access.insert(a, access);
                Ok(())
            }
            ModelOp::ReadSkill { session: s, file } => {
                let i = session(s);
                let (name, content) = SKILL_FILES[file as usize % SKILL_FILES.len()];
                let r = self
                    .store
                    .read(&self.turns[i], &format!("skill/kit/{name}"))
                    .await;
                let m = &mut self.model.sessions[i];
                match (r, m.deleted) {
                    (Ok(b), false) if b == content.as_bytes() => {
                        m.touched(now);
                        Ok(())
                    }
                    (Err(ScopedError::UnknownEntity { .. }), true) => Ok(()),
                    (Err(ScopedError::Storage { .. }), _) if self.faulty() => {
                        self.note("failed: storage");
                        Ok(())
                    }
                    (r, d) => diverged(
                        if d {
                            "skill read: UnknownEntity (the session is deleted)".to_string()
                        } else {
                            format!("skill read: Ok({content:?}) (skill versions are never swept)")
                        },
                        format!(
                            "skill read: {:?}",
                            r.map(|b| String::from_utf8_lossy(&b).into_owned())
                        ),
                    ),
                }
            }
            ModelOp::FaultySweep { percent } => {
                self.server.faults().set_plan(FaultPlan {
                    delete_key_failure_rate: f64::from(percent.min(100)) / 100.0,
                    ..FaultPlan::default()
                });
                let first = self.store.sweep().await;
                // What the failing keys left of an erasure: pending, or met with nothing left.
                Box::pin(self.check_erasures(now, erasure::Reading::Interim)).await?;
                self.server.faults().heal();
                match first {
                    Ok(r) => self.note(format!(
                        "swept {} sessions, {} obligations; {} and {} left for later",
                        r.sessions_swept,
                        r.obligations_completed,
                        r.sessions_retried_later,
                        r.obligations_retried_later
                    )),
                    Err(ScopedError::Storage { .. }) => self.note("failed: storage"),
                    Err(e) => return diverged("sweep under key failures: Ok", format!("{e}")),
                }
                let second = self.store.sweep().await;
                if let Some(plan) = &self.faults {
                    self.server.faults().set_plan(plan.clone());
                }
                self.complete(second, "the healed sweep")?;
                self.swept_files += self.model.sweep(now);
                self.check_bucket_and_ledger().await
            }
            ModelOp::CrashSweep { obligations } => {
                let point = if obligations {
                    CrashPoint::AfterObligationObjectsDeleted
                } else {
                    CrashPoint::AfterSessionObjectsDeleted
                };
                let mut config = self.config.clone();
                config.crash_at = Some(point);
                let doomed = self.open(config).await?;
                match doomed.sweep().await {
                    Ok(_) => self.note("the crash point was not reached"),
                    Err(ScopedError::Crashed(_)) => self.note("crashed"),
                    Err(ScopedError::Storage { .. }) if self.faulty() => {
                        self.note("failed: storage")
                    }
                    Err(e) => return diverged("sweep: Ok or a crash", format!("sweep: {e}")),
                }
                drop(doomed);
                // A new process sweeps at startup.
                self.store = self.open(self.config.clone()).await?;
                self.sweep_healing().await?;
                self.swept_files += self.model.sweep(now);
                self.check_bucket_and_ledger().await
            }
            ModelOp::WriteDuringSweep {
                session: s,
                path: p,
            } => {
                self.write_during_sweep(session(s), p, format!("v{step}"), now)
                    .await
            }
            ModelOp::DeleteSession { session: s } => {
                let i = session(s);
                if self.model.sessions[i].deleted {
                    self.note("skipped: already deleted");
                    return Ok(());
                }
                if let Err(e) = self.store.delete_session(&self.turns[i]).await {
                    return diverged("delete session: Ok", format!("{e}"));
                }
                self.model.sessions[i].deleted = true;
                self.model.sessions[i].waits.clear();
                Ok(())
            }
            ModelOp::StoreFaults {
                error_percent,
                key_failure_percent,
            } => {
                let plan = FaultPlan {
                    error_rate: f64::from(error_percent.min(100)) / 100.0,
                    delete_key_failure_rate: f64::from(key_failure_percent.min(100)) / 100.0,
                    ..FaultPlan::default()
                };
                self.server.faults().set_plan(plan.clone());
                self.faults = Some(plan);
                Ok(())
            }
            ModelOp::Heal => {
                self.server.faults().heal();
                self.faults = None;
                Ok(())
            }
            ModelOp::JumpBack { hours } => {
                self.clock.advance_ms(-i64::from(hours) * HOUR_MS);
                Ok(())
            }
            ModelOp::WorkspaceBeside => self.workspace_beside().await,
            ModelOp::SetCount { .. }
            | ModelOp::SetWorkspaceAccess { .. }
            | ModelOp::Promote { .. }
            | ModelOp::PromoteDuringSweep { .. }
            | ModelOp::ToolOutput { .. } => self.policy(step, op, now).await,
            // Generator 7's operations are built and boxed in a function of their own (see
            // `generator7`).
            ModelOp::Close { .. }
            | ModelOp::SetRetention { .. }
            | ModelOp::ApplyLifecycle { .. }
            | ModelOp::OverflowAgain { .. }
            | ModelOp::Erase { .. }
            | ModelOp::ErasureTouch { .. }
            | ModelOp::SweepsAtOnce { .. }
            | ModelOp::EmptiedThenCount { .. } => self.generator7(step, op, now).await,
            ModelOp::DeleteAgent { agent: a } => {
                let a = agent(a);
                if self.model.deleted_agents.contains(a) {
                    self.note("skipped: already deleted");
                    return Ok(());
                }
                if let Err(e) = self
                    .store
                    .delete_agent(&self.ids.id(WORKSPACE), &self.ids.id(a))
                    .await
                {
                    return diverged("delete agent: Ok", format!("{e}"));
                }
                self.model.deleted_agents.insert(a);
                for (j, (owner, _)) in SESSIONS.iter().enumerate() {
                    if *owner == a {
                        self.model.sessions[j].deleted = true;
                        self.model.sessions[j].waits.clear();
                    }
                }
                Ok(())
            }
        }
    }

    /// Two workspaces beside the model's, the first's id a prefix of the second's, each with
    /// the model's skill version published; then the first is deleted. After the next sweep its
    /// prefixes are empty (the ledger check) and the second's skill version is whole (SC-6.2).
    /// Run on a healed store: what a fault would do to it is the other operations' to explore.
    pub(super) async fn workspace_beside(&mut self) -> Step {
        if self.model.beside_deleted {
            self.note("skipped: already deleted");
            return Ok(());
        }
        if self.faulty() {
            self.server.faults().heal();
        }
        let result = async {
            let (gone, kept) = beside_workspaces(&self.ids);
            let skill: BTreeMap<String, Vec<u8>> = SKILL_FILES
                .iter()
                .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
                .collect();
            for w in [&gone, &kept] {
                if let Err(e) = self
                    .store
                    .create_workspace(w, ScopeSettings::default())
                    .await
                {
                    return diverged("create workspace: Ok", format!("{e}"));
                }
                match self.store.publish_skill_version(w, &skill).await {
                    Ok(sha) if sha == self.skill_sha => {}
                    Ok(sha) => {
                        return diverged(
                            format!("the same files publish as {}", self.skill_sha),
                            sha,
                        )
                    }
                    Err(e) => return diverged("publish skill: Ok", format!("{e}")),
                }
            }
            if let Err(e) = self.store.delete_workspace(&gone).await {
                return diverged("delete workspace: Ok", format!("{e}"));
            }
            self.model.beside_deleted = true;
            Ok(())
        }
        .await;
        if let Some(plan) = &self.faults {
            self.server.faults().set_plan(plan.clone());
        }
        result
    }
}

/// The two workspaces of [`ModelOp::WorkspaceBeside`]: the one deleted, whose id is a prefix of
/// the one kept, so a deletion by string prefix would take the kept one's too.
pub(super) fn beside_workspaces(ids: &IdStyle) -> (String, String) {
    let ws = ids.id(WORKSPACE);
    (format!("{ws}-n"), format!("{ws}-n2"))
}

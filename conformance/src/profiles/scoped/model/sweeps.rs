//! The sweep as the model checks it: a sweep that must complete (healed and swept again under
//! faults), its result judged, then the bucket compared with the model session by session,
//! agent by agent and skill by skill, and the deletion ledger checked; and a write racing a
//! sweep that holds its candidates.

use std::collections::BTreeSet;
use std::sync::Arc;

use tidemark_reference::clock::Clock;
use tidemark_reference::scoped::{ScopedError, SweepPause};

use super::ops::{path, AGENTS, SESSIONS, SKILL_FILES, WORKSPACE};
use super::perform::beside_workspaces;
use super::{diverged, erasure, harness, Runner, Step, Stop, BUCKET};
use crate::profiles::scoped::sweeps_at_once::race_against_sweep;
use tidemark_sim::real_tier::MemoryHandle;

impl Runner<'_> {
    /// A sweep that must complete: with no faults, nothing is left for later; under faults an
    /// incomplete or interrupted sweep is followed by a healed one that must finish the job.
    pub(super) async fn sweep_healing(&mut self) -> Step {
        let r = self.store.sweep().await;
        self.finish_sweep(r, "sweep").await.map(|_| ())
    }

    /// Judges a sweep's result; under faults an incomplete or interrupted sweep is followed by
    /// a healed one, which must finish the job. Answers whether it swept again.
    pub(super) async fn finish_sweep(
        &mut self,
        r: Result<tidemark_reference::scoped::SweepReport, ScopedError>,
        what: &str,
    ) -> Result<bool, Stop> {
        let mut incomplete = match &r {
            Ok(r) => r.sessions_retried_later > 0 || r.obligations_retried_later > 0,
            Err(e) => matches!(e, ScopedError::Storage { .. }),
        };
        if self.faulty() && self.model.erasure.active() {
            // An erasure the faults left pending is in no count of the report (SL-4).
            let now = self.clock.now().0;
            Box::pin(self.check_erasures(now, erasure::Reading::Interim)).await?;
            incomplete = incomplete || self.erasure_left_pending().await?;
        }
        if !(incomplete && self.faulty()) {
            return self.complete(r, what).map(|()| false);
        }
        self.note(format!(
            "{what}: incomplete under faults; healed and swept again"
        ));
        self.server.faults().heal();
        let r = self.store.sweep().await;
        if let Some(plan) = &self.faults {
            self.server.faults().set_plan(plan.clone());
        }
        self.complete(r, "the healed sweep").map(|()| true)
    }

    pub(super) fn complete(
        &mut self,
        r: Result<tidemark_reference::scoped::SweepReport, ScopedError>,
        what: &str,
    ) -> Step {
        match r {
            Ok(r) if r.sessions_retried_later == 0 && r.obligations_retried_later == 0 => {
                self.note(format!(
                    "{what}: swept {} sessions, {} obligations",
                    r.sessions_swept, r.obligations_completed
                ));
                Ok(())
            }
            Ok(r) => diverged(
                format!("{what}: nothing left for later (no faults)"),
                format!("{what}: {r:?}"),
            ),
            Err(e) => diverged(format!("{what}: Ok"), format!("{what}: {e}")),
        }
    }

    /// After a complete sweep: the bucket agrees with the model (sessions, agents, the skill),
    /// and the ledger is whole: every obligation met and recorded exactly once, nothing left
    /// under a recorded prefix.
    pub(super) async fn check_bucket_and_ledger(&mut self) -> Step {
        let model = &self.model;
        let id = |short: &str| self.ids.id(short);
        let ws = id(WORKSPACE);
        let turns = &self.turns;
        let sessions = SESSIONS.iter().enumerate().map(|(j, (a, s))| {
            (
                format!("sessions/{ws}/{}/{}/", turns[j].agent, turns[j].session),
                format!("{a}/{s}"),
                model.sessions[j].files.keys().cloned().collect(),
            )
        });
        let agents = AGENTS.iter().map(|a| {
            let files: BTreeSet<String> = model
                .agent_files
                .get(a)
                .map(|f| f.keys().cloned().collect())
                .unwrap_or_default();
            (
                format!("agents/{ws}/{}/", id(a)),
                format!("agent {a}"),
                files,
            )
        });
        let skill = std::iter::once((
            format!("skills/{ws}/{}/", self.skill_sha),
            "the skill version".to_string(),
            SKILL_FILES.iter().map(|(p, _)| p.to_string()).collect(),
        ))
        .chain(self.model.beside_deleted.then(|| {
            (
                format!(
                    "skills/{}/{}/",
                    beside_workspaces(&self.ids).1,
                    self.skill_sha
                ),
                "the skill version of the workspace beside the deleted one".to_string(),
                SKILL_FILES.iter().map(|(p, _)| p.to_string()).collect(),
            )
        }));
        let workspace = std::iter::once((
            format!("workspaces/{ws}/"),
            "the workspace".to_string(),
            self.model.policy.workspace_files.keys().cloned().collect(),
        ));
        for (prefix, name, want) in sessions
            .chain(agents)
            .chain(skill)
            .chain(workspace)
            .collect::<Vec<_>>()
        {
            let got = files_under(&self.mem, &prefix);
            if got != want {
                return diverged(
                    format!("after the sweep {name} holds {want:?}"),
                    format!("after the sweep {name} holds {got:?}"),
                );
            }
        }
        // A session the sweep emptied keeps nothing: no file, and no text a failed write left.
        for &j in &self.model.emptied {
            let (a, s) = SESSIONS[j];
            let t = &self.turns[j];
            let prefix = format!("sessions/{}/{}/{}/", t.workspace, t.agent, t.session);
            let left = self.mem.keys(BUCKET, &prefix);
            if !left.is_empty() {
                return diverged(
                    format!("after the sweep nothing under {a}/{s}"),
                    format!("{} object(s) left: {left:?}", left.len()),
                );
            }
        }
        self.check_lifecycle_kept()?;
        let obligations = self.store.deletion_obligations().await.map_err(harness)?;
        let records = self.store.deletion_records().await.map_err(harness)?;
        for o in &obligations {
            let recorded = records.iter().filter(|r| r.deletion_id == o.id).count();
            if o.done_at_ms.is_none() || recorded != 1 {
                return diverged(
                    format!("obligation {} met and recorded once", o.prefix),
                    format!(
                        "obligation {}: {}, {recorded} record(s)",
                        o.prefix,
                        if o.done_at_ms.is_some() {
                            "done"
                        } else {
                            "pending"
                        }
                    ),
                );
            }
        }
        for r in &records {
            if self.reused_by_a_subject(&r.prefix) {
                // An erased subject created again after its erasure was met (SL-4.6).
                continue;
            }
            let left = self.mem.keys(BUCKET, &r.prefix);
            if !left.is_empty() {
                return diverged(
                    format!("nothing under the recorded deletion {}", r.prefix),
                    format!("{} object(s) left: {left:?}", left.len()),
                );
            }
        }
        if !obligations.is_empty() {
            self.note(format!(
                "ledger: {} obligation(s), all recorded",
                obligations.len()
            ));
        }
        let now = self.clock.now().0;
        Box::pin(self.check_erasures(now, erasure::Reading::Swept)).await
    }

    /// A write raced against a sweep that has claimed its candidates and not yet deleted
    /// anything. The sweep must hold what it claimed, so the write lands after it: the model
    /// sweeps first, then writes, and the file survives.
    pub(super) async fn write_during_sweep(
        &mut self,
        i: usize,
        p: u8,
        content: String,
        now: i64,
    ) -> Step {
        let pause = Arc::new(SweepPause::default());
        let mut config = self.config.clone();
        config.sweep_pause = Some(pause.clone());
        let racing = self.open(config).await?;
        let t = self.turns[i].clone();
        let guest = format!("session/{}", path(p));
        let bytes = content.clone().into_bytes();
        let (swept, written, landed_first) =
            race_against_sweep(&racing, &pause, self.meta.as_ref(), || {
                racing.write(&t, &guest, bytes)
            })
            .await;
        drop(racing);
        let healed = self.finish_sweep(swept, "the raced sweep").await?;
        // A write that landed while the sweep was paused (its session not claimed) is activity
        // before the sweep's count policies rank the sessions (SL-2); a blocked one follows the
        // whole sweep.
        self.swept_files += if landed_first {
            self.model.sweep_idle(now)
        } else {
            self.model.sweep(now)
        };
        let deleted = self.model.sessions[i].deleted;
        match (written, deleted) {
            (Ok(_), false) => {
                let m = &mut self.model.sessions[i];
                m.files.insert(path(p).to_string(), content);
                m.touched(now);
                // Written after the sweep: the session holds this file and its text now.
                self.model.emptied.remove(&i);
            }
            (Err(ScopedError::UnknownEntity { .. }), true) => {}
            (Err(ScopedError::Storage { .. }), _) if self.faulty() => {
                // Its text may have landed after the sweep: the next sweep takes it.
                self.model.sessions[i].write_failed();
                self.model.emptied.remove(&i);
                self.note("failed: storage")
            }
            (r, d) => {
                return diverged(
                    if d {
                        "raced write: UnknownEntity (the session is deleted)"
                    } else {
                        "raced write: Ok"
                    },
                    format!("raced write: {r:?}"),
                )
            }
        }
        if landed_first {
            self.swept_files += self.model.sweep_policies(now);
        }
        if healed {
            // The healed sweep ran after the write: it takes what a failed write left in an
            // idle session (SC-5.4), and ranks the sessions with the write's activity (SL-2).
            self.swept_files += self.model.sweep(now);
        }
        self.check_bucket_and_ledger().await
    }
}

/// The guest-visible files under `prefix` in the model bucket: extracted text is not a file.
fn files_under(mem: &MemoryHandle, prefix: &str) -> BTreeSet<String> {
    mem.keys(BUCKET, prefix)
        .into_iter()
        .filter_map(|k| k.strip_prefix(prefix).map(str::to_string))
        .filter(|k| !k.starts_with(".tidemark-text/"))
        .collect()
}

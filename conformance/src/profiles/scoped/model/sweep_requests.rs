//! A plain sweep's DeleteObjects requests (SPEC SL-1.2, generator 7): the policy sweep deletes
//! the keys of every session it takes in batches of at most 1,000 keys across sessions, so a
//! sweep of a sequence (a few sessions of a few files each, `sweep_chunk` 1,000) sends at most
//! one DeleteObjects for the idle sessions, one for the policies' and one for the deletion
//! obligations met (SC-5.5, SL-1.2 and SC-6.3 keep each pass's batches its own), and one for
//! each erasure with keys left that the sweep met (SL-4.3 records an erasure's keys before it deletes them, and SPEC
//! does not ask erasures to share a batch with each other or with any pass). The in-memory
//! S3 counts the requests it serves; the model knows which passes emptied sessions, and the
//! sweep's report how many obligations it met, so the count is bounded from above.
//!
//! Only a sweep without store faults is counted (a retry sends its batch again, and a healed
//! second sweep its own).

use super::{diverged, Runner, Step};

/// The S3 operation counted.
const DELETE_OBJECTS: &str = "DeleteObjects";

/// Whether generator `version` counts a plain sweep's requests: from 7 (older sequences ran
/// without the check, and replay as they ran).
pub(super) fn counts_requests(version: u32) -> bool {
    version >= 7
}

impl Runner<'_> {
    /// [`super::ModelOp::Sweep`]: the sweep (healed and run again under faults), the model's
    /// sweep, the bucket and the ledger, and for generator 7 the bound on DeleteObjects.
    pub(super) async fn plain_sweep(&mut self, now: i64) -> Step {
        let sent = || {
            self.server
                .faults()
                .counts()
                .get(DELETE_OBJECTS)
                .copied()
                .unwrap_or(0)
        };
        let before = sent();
        let subjects_before = self.live_subject_keys();
        let erasures_pending = self.model.erasure.pending_with_keys();
        let r = self.store.sweep().await;
        // SC-6.3's pass: one batch across the obligations it meets.
        let obligations = matches!(&r, Ok(report) if report.obligations_completed > 0);
        let healed = self.finish_sweep(r, "sweep").await?;
        let after = sent();
        self.swept_files += self.model.sweep_idle(now);
        let model = &self.model;
        let idle = model.emptied.iter().any(|&i| !model.sessions[i].deleted);
        let emptied_idle = model.emptied.len();
        self.swept_files += self.model.sweep_policies(now);
        let policy = self.model.emptied.len() > emptied_idle;
        // An erasure's subject (`erasure.rs`) holds a session the model keeps no idle account
        // of: set up with files for its erasure and left live when the erasure was refused, it
        // is swept in its time, one more batch. The bucket, not the sweep's report, says so.
        let subjects_after = self.live_subject_keys();
        let untracked = subjects_before.iter().any(|k| !subjects_after.contains(k));
        self.check_bucket_and_ledger().await?;
        let erasures_met = erasures_pending.saturating_sub(self.model.erasure.pending_with_keys());
        if !self.counts_requests || self.faulty() || healed {
            return Ok(());
        }
        let bound = u64::from(idle)
            + u64::from(policy)
            + u64::from(obligations)
            + u64::from(untracked)
            + erasures_met as u64;
        if after - before > bound {
            return diverged(
                format!(
                    "sweep: at most {bound} DeleteObjects, one per pass that emptied sessions or met obligations (the idle pass {}, the policy pass {}, the obligations' pass {}, sessions the model does not follow {}) and one per erasure met ({erasures_met}), its keys batched across them (SL-1.2)",
                    if idle { "did" } else { "did not" },
                    if policy { "did" } else { "did not" },
                    if obligations { "did" } else { "did not" },
                    if untracked { "swept" } else { "none swept" }
                ),
                format!("sweep: {} DeleteObjects", after - before),
            );
        }
        Ok(())
    }
}

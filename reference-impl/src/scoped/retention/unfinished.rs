//! Sessions a sweep left unfinished, finished by the next sweep whatever swept them (SPEC
//! SL-2.4, SL-1.2): a session whose keys failed is expired all the same (SC-5.5), so what the
//! count or the idle TTL decided stands even once the count would keep the session again (a
//! newer session deleted, the count lowered or removed). The idle sweep alone would retry only
//! the sessions still past their TTL.

use crate::scoped::error::CrashPoint;
use crate::scoped::error::ScopedError;
use crate::scoped::retention::SweepReport;
use crate::scoped::store::{settle, ScopedStore};
use crate::scoped::ScopedMutant;

impl ScopedStore {
    /// Claims the sessions marked unfinished (rows another transaction holds are passed by,
    /// SL-1.3), deletes what is left under their prefixes in DeleteObjects batches of 1,000,
    /// and marks each swept in the same transaction, or leaves it unfinished for the next
    /// sweep if a key failed again. Chunk after chunk, stopping at the first chunk that leaves
    /// one unfinished (the next claim would pick it straight back up).
    ///
    /// It runs first in the sweep, so a session the idle sweep or the count leaves unfinished
    /// now is retried by the next sweep, not twice in this one; a session past its TTL that
    /// fails here again is tried once more by the idle sweep after it.
    pub(crate) async fn finish_unfinished_sweeps(
        &self,
        report: &mut SweepReport,
    ) -> Result<(), ScopedError> {
        if self.is(ScopedMutant::UnfinishedCountSweepLeft) {
            // The mutant leaves them to the idle sweep, which retries only those past the TTL.
            return Ok(());
        }
        let chunk = self.config().sweep_chunk;
        loop {
            let mut tx = self.metadata().begin().await?;
            let result: Result<bool, ScopedError> = async {
                let sessions = tx.claim_unfinished_sessions(chunk).await?;
                if sessions.is_empty() {
                    return Ok(false);
                }
                let incomplete = self.delete_sessions_objects(&sessions, report).await?;
                self.crash(CrashPoint::AfterSessionObjectsDeleted)?;
                let now = self.now().0;
                let mut again = false;
                for (session, incomplete) in sessions.iter().zip(incomplete) {
                    if incomplete {
                        tx.mark_sweep_unfinished(session, now).await?;
                        report.sessions_retried_later += 1;
                        again = true;
                    } else {
                        tx.mark_swept(session, now).await?;
                        report.sessions_swept += 1;
                    }
                }
                Ok(sessions.len() as i64 == chunk && !again)
            }
            .await;
            if !settle(tx, result, "commit unfinished sweeps").await? {
                return Ok(());
            }
        }
    }
}

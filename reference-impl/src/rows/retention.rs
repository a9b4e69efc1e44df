//! The reaper's tick (SPEC SR-7): it only calls the sweeps, each defined beside its rule, in a
//! fixed order, and reports what each removed. Every sweep deletes in bounded batches
//! (`batch.rs`).

use std::sync::atomic::Ordering;

use super::batch::ReapConfig;
use super::schema::ExpiringStore as S;
use super::{lock, Backend, RowsError, RowsMutant, RowsStore};
use crate::clock::{Timestamp, DAY_MS};

/// What one tick removed, per sweep, in the order the tick runs them (SR-7.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReapReport {
    pub streamed_events: u64,
    pub tool_invocations: u64,
    pub trigger_firings: u64,
    pub catalog_snapshots: u64,
    pub live_sessions: u64,
    pub refresh_tokens: u64,
    pub webhook_deliveries: u64,
    pub breaker_sightings: u64,
}

impl ReapReport {
    pub fn total(&self) -> u64 {
        self.streamed_events
            + self.tool_invocations
            + self.trigger_firings
            + self.catalog_snapshots
            + self.live_sessions
            + self.refresh_tokens
            + self.webhook_deliveries
            + self.breaker_sightings
    }
}

impl RowsStore {
    /// One tick of the reaper at `now`. A sweep that fails stops the tick with its error; the
    /// batches it and earlier sweeps committed stay committed (each is its own transaction), and
    /// the next tick picks up the rest, since every rule is a condition on the rows, not a
    /// to-do list (SR-7.4).
    pub async fn reap_tick(
        &self,
        now: Timestamp,
        cfg: &ReapConfig,
    ) -> Result<ReapReport, RowsError> {
        cfg.batches_run.0.store(0, Ordering::SeqCst);
        cfg.crash_before_start()?;
        // The mutant's reaper never lets its clock go back: it sweeps at the latest now it saw.
        let seen = self
            .reaper_clock()
            .fetch_max(now.as_millis(), Ordering::SeqCst);
        let now = if self.mutant(RowsMutant::ReaperClockNeverGoesBack) {
            Timestamp::from_millis(seen.max(now.as_millis()))
        } else {
            now
        };
        self.mutant_sweeps(now).await?;
        if self.mutant(RowsMutant::FailingSweepSkipped) {
            return Ok(self.tick_skipping_failures(now, cfg).await);
        }
        if self.mutant(RowsMutant::OneSweepForEveryStore) {
            let mut report = ReapReport {
                streamed_events: self.forget_streamed(now, cfg).await?,
                tool_invocations: self.forget_expired_invocations(now, cfg).await?,
                trigger_firings: self.forget_old_firings(now, cfg).await?,
                catalog_snapshots: self.forget_old_snapshots(cfg).await?,
                ..ReapReport::default()
            };
            for store in S::ALL {
                report.live_sessions += self.forget_expired(store, now, cfg).await?;
            }
            return Ok(report);
        }
        Ok(ReapReport {
            streamed_events: self.forget_streamed(now, cfg).await?,
            tool_invocations: self.forget_expired_invocations(now, cfg).await?,
            trigger_firings: self.forget_old_firings(now, cfg).await?,
            catalog_snapshots: self.forget_old_snapshots(cfg).await?,
            live_sessions: self.forget_expired(S::LiveSessions, now, cfg).await?,
            refresh_tokens: self.forget_expired(S::RefreshTokens, now, cfg).await?,
            webhook_deliveries: self.forget_expired(S::WebhookDeliveries, now, cfg).await?,
            breaker_sightings: if self.mutant(RowsMutant::TickSkipsBreakerSightings) {
                0
            } else {
                self.forget_expired(S::BreakerSightings, now, cfg).await?
            },
        })
    }

    /// [`RowsMutant::FailingSweepSkipped`]'s tick: a sweep that fails counts nothing and the
    /// tick goes on to the next.
    async fn tick_skipping_failures(&self, now: Timestamp, cfg: &ReapConfig) -> ReapReport {
        ReapReport {
            streamed_events: self.forget_streamed(now, cfg).await.unwrap_or(0),
            tool_invocations: self.forget_expired_invocations(now, cfg).await.unwrap_or(0),
            trigger_firings: self.forget_old_firings(now, cfg).await.unwrap_or(0),
            catalog_snapshots: self.forget_old_snapshots(cfg).await.unwrap_or(0),
            live_sessions: self
                .forget_expired(S::LiveSessions, now, cfg)
                .await
                .unwrap_or(0),
            refresh_tokens: self
                .forget_expired(S::RefreshTokens, now, cfg)
                .await
                .unwrap_or(0),
            webhook_deliveries: self
                .forget_expired(S::WebhookDeliveries, now, cfg)
                .await
                .unwrap_or(0),
            breaker_sightings: self
                .forget_expired(S::BreakerSightings, now, cfg)
                .await
                .unwrap_or(0),
        }
    }

    /// The sweeps only a mutant has: rows SR-6 keeps on purpose, removed by age. They report
    /// nothing, as a sweep that should not exist would not be in the report.
    async fn mutant_sweeps(&self, now: Timestamp) -> Result<(), RowsError> {
        let now_ms = now.as_millis();
        let pool = match self.backend() {
            Backend::Pg(pool) => pool,
            Backend::Memory(m) => {
                let mut t = lock(m);
                match self.config().mutant {
                    Some(RowsMutant::HeldRequestSwept) => t
                        .held
                        .retain(|_, h| h.held_at_ms.saturating_add(DAY_MS) > now_ms),
                    Some(RowsMutant::SettledItemsSwept) => {
                        let old: Vec<i64> = t
                            .items
                            .iter()
                            .filter(|(_, i)| {
                                i.settled_at_ms
                                    .is_some_and(|s| s.saturating_add(30 * DAY_MS) <= now_ms)
                            })
                            .map(|(id, _)| *id)
                            .collect();
                        for id in old {
                            t.delete_item(id);
                        }
                    }
                    _ => {}
                }
                return Ok(());
            }
        };
        let sql = match self.config().mutant {
            Some(RowsMutant::HeldRequestSwept) => {
                "DELETE FROM tidemark_rows.held_requests WHERE held_at_ms + $2 <= $1"
            }
            Some(RowsMutant::SettledItemsSwept) => {
                "DELETE FROM tidemark_rows.action_items
                  WHERE settled_at_ms IS NOT NULL AND settled_at_ms + 30 * $2 <= $1"
            }
            _ => return Ok(()),
        };
        sqlx::query(sql)
            .bind(now.as_millis())
            .bind(DAY_MS)
            .execute(pool)
            .await
            .map_err(RowsError::db("mutant sweep"))?;
        Ok(())
    }
}

//! The scoped reference implementation on a real tier that fails: crashes between a deletion and
//! its record, partly failed batches, dropped connections, throttles, a store or database that is
//! down. Split from `real_tier_scoped.rs` (which holds the world and the `scenario!` form these
//! use) so each file is one subject; every check is the same test, moved whole.

use std::sync::Arc;

use tidemark_reference::clock::Clock;
use tidemark_reference::scoped::CrashPoint;
use tidemark_reference::scoped::{ScopedError, ScopedMutant, ScopedStore, SweepPause};
use tidemark_sim::real_tier::faults::Throttle;
use tidemark_sim::real_tier::{FaultPlan, RealTier};

use super::real_tier_scoped::{ensure, ok, scenario, Check, World};

scenario!(
    an_obligation_survives_a_crash_between_deleting_and_recording,
    kills = [DeletionBeforeRecord],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/f.txt", b"f".to_vec()).await,
            "write",
        )?;
        ok(w.store.delete_session(&t).await, "delete session")?;
        let mut crashing = w.config.clone();
        crashing.crash_at = Some(CrashPoint::AfterObligationObjectsDeleted);
        w.restart(crashing).await;
        let r = w.store.sweep().await;
        ensure!(
            matches!(r, Err(ScopedError::Crashed(_))),
            "crash point not reached: {r:?}"
        );
        w.restart(w.config.clone()).await;
        ok(w.store.sweep().await, "sweep after restart")?;
        let records = ok(w.store.deletion_records().await, "records")?;
        ensure!(
            records.iter().any(|r| r.prefix == "sessions/w1/a1/s1/"),
            "the performed deletion was never recorded: {records:?}"
        );
        let pending: Vec<_> = ok(w.store.deletion_obligations().await, "obligations")?
            .into_iter()
            .filter(|o| o.done_at_ms.is_none())
            .collect();
        ensure!(pending.is_empty(), "obligation still pending: {pending:?}");
        ensure!(w.raw_keys("sessions/").await.is_empty(), "objects left");
        Ok(())
    }
);

scenario!(
    a_partly_failed_delete_batch_leaves_the_session_for_the_next_sweep,
    kills = [PartialBatchMarkedDone],
    |w| {
        let t = w.standard().await;
        for i in 0..20 {
            ok(
                w.store
                    .write(&t, &format!("session/f{i}.bin"), vec![0, 1, 2, 0])
                    .await,
                "write",
            )?;
        }
        w.days(31);
        w.tier.s3.faults().set_plan(FaultPlan {
            delete_key_failure_rate: 0.5,
            ..Default::default()
        });
        let r = ok(w.store.sweep().await, "sweep under faults")?;
        w.tier.s3.faults().heal();
        ensure!(
            r.sessions_swept == 0,
            "a partly deleted session was marked swept: {r:?}"
        );
        // Healed: the next sweep finishes the job (the session was not forgotten).
        ok(w.store.sweep().await, "sweep")?;
        ensure!(
            w.raw_keys("sessions/").await.is_empty(),
            "left after healing: {:?}",
            w.raw_keys("sessions/").await
        );
        Ok(())
    }
);

scenario!(
    a_write_racing_a_sweep_is_never_lost,
    kills = [SweepUnlocked],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/old.txt", b"old".to_vec()).await,
            "write",
        )?;
        w.days(31);
        let pause = Arc::new(SweepPause::default());
        let mut cfg = w.config.clone();
        cfg.sweep_pause = Some(pause.clone());
        w.restart(cfg).await;
        let store = &w.store;
        let race = async {
            pause.reached.notified().await;
            let write = store.write(&t, "session/new.txt", b"new".to_vec());
            tokio::pin!(write);
            // Give the write every chance to land while the sweep is between claim and delete.
            let landed =
                tidemark_conformance::profiles::scoped::sweeps_at_once::race_until_blocked(
                    &mut write, &w.db.pool,
                )
                .await;
            pause.resume.notify_one();
            match landed {
                Some(r) => r,
                None => write.await,
            }
        };
        let (swept, written) = tokio::join!(store.sweep(), race);
        ok(swept, "sweep")?;
        ok(written, "write")?;
        let got = w.store.read(&t, "session/new.txt").await;
        ensure!(
            got.is_ok(),
            "the write racing the sweep was lost: {:?}",
            got.err()
        );
        Ok(())
    }
);

scenario!(
    a_write_that_crashes_after_storing_its_text_leaves_nothing_readable,
    kills = [TextOutlivesFile, FileBeforeText],
    |w| {
        let t = w.standard().await;
        let mut crashing = w.config.clone();
        crashing.crash_at = Some(CrashPoint::AfterTextWritten);
        w.restart(crashing).await;
        let r = w
            .store
            .write(&t, "session/half.md", b"half written".to_vec())
            .await;
        ensure!(
            matches!(r, Err(ScopedError::Crashed(_))),
            "crash point not reached: {r:?}"
        );
        w.restart(w.config.clone()).await;
        let listed = w.paths(&t, None).await?;
        ensure!(listed.is_empty(), "a crashed write is listed: {listed:?}");
        let r = w.store.read_text(&t, "session/half.md").await;
        ensure!(
            matches!(r, Err(ScopedError::NotFound { .. })),
            "a crashed write's text is readable: {r:?}"
        );
        Ok(())
    }
);

scenario!(
    a_sweep_that_crashes_after_deleting_finishes_on_the_next_run,
    kills = [],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/a.txt", b"a".to_vec()).await,
            "write",
        )?;
        w.days(30);
        let mut crashing = w.config.clone();
        crashing.crash_at = Some(CrashPoint::AfterSessionObjectsDeleted);
        w.restart(crashing).await;
        let r = w.store.sweep().await;
        ensure!(
            matches!(r, Err(ScopedError::Crashed(_))),
            "crash point not reached: {r:?}"
        );
        w.restart(w.config.clone()).await;
        let r = ok(w.store.sweep().await, "sweep after restart")?;
        ensure!(
            r.sessions_swept == 1,
            "the interrupted session was not finished: {r:?}"
        );
        ensure!(w.raw_keys("sessions/").await.is_empty(), "objects left");
        Ok(())
    }
);

scenario!(
    dropped_database_connections_are_survived_without_half_writes,
    kills = [],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/a.txt", b"a".to_vec()).await,
            "write",
        )?;
        let killed: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()) t",
        )
        .fetch_one(&w.db.pool)
        .await
        .map_err(|e| e.to_string())?;
        ensure!(killed >= 1, "no connection was dropped");
        // The pool notices dead connections and reconnects; each operation either completes or
        // reports a database error, and a reported error wrote nothing.
        let mut outcomes = Vec::new();
        for i in 0..5 {
            let path = format!("session/b{i}.txt");
            match w.store.write(&t, &path, b"b".to_vec()).await {
                Ok(_) => outcomes.push((path, true)),
                Err(e) if e.kind() == "database_unavailable" => outcomes.push((path, false)),
                Err(e) => return Err(format!("unexpected error after dropped connections: {e}")),
            }
        }
        ensure!(
            outcomes.iter().any(|(_, ok)| *ok),
            "never recovered: {outcomes:?}"
        );
        Ok(())
    }
);

scenario!(
    an_overwrite_that_fails_between_its_two_puts_never_serves_the_other_versions_text,
    kills = [FailedWriteReportedWritten],
    |w| {
        let t = w.standard().await;
        ok(
            w.store
                .write(&t, "session/doc.md", b"first version".to_vec())
                .await,
            "write",
        )?;
        // The overwrite stores its text (PUT 1) and then fails storing the file (PUT 2).
        w.tier.s3.faults().set_plan(FaultPlan {
            fail_requests: vec![("PutObject".into(), 2)],
            ..Default::default()
        });
        let r = w
            .store
            .write(&t, "session/doc.md", b"second version".to_vec())
            .await;
        w.tier.s3.faults().heal();
        ensure!(
            r.as_ref().err().map(|e| e.kind()) == Some("storage_unavailable"),
            "the failed overwrite reported {:?}",
            r.map(|r| r.key)
        );
        let content = ok(w.store.read(&t, "session/doc.md").await, "read")?;
        let text = ok(w.store.read_text(&t, "session/doc.md").await, "read text")?;
        ensure!(
            content == b"first version",
            "content {:?}",
            String::from_utf8_lossy(&content)
        );
        ensure!(
            text.as_deref() == Some("first version"),
            "the file says \"first version\" but its text says {text:?}"
        );
        Ok(())
    }
);

scenario!(
    the_stores_error_classes_map_to_their_reasons,
    kills = [MissingBucketUnavailable, StoreDeniedAsPermission],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/a.md", b"v1".to_vec()).await,
            "write",
        )?;
        let kind = |r: Result<(), ScopedError>| r.err().map(|e| e.kind());
        let fault = |plan: FaultPlan| w.tier.s3.faults().set_plan(plan);
        // SC-8.3: NoSuchBucket (404) is no_such_bucket on a write and a listing.
        fault(FaultPlan {
            no_such_bucket: true,
            ..Default::default()
        });
        let wrote = kind(
            w.store
                .write(&t, "session/a.md", b"v2".to_vec())
                .await
                .map(|_| ()),
        );
        let listed = kind(w.store.list(&t, None).await.map(|_| ()));
        ensure!(
            wrote == Some("no_such_bucket") && listed == Some("no_such_bucket"),
            "a missing bucket: write {wrote:?}, list {listed:?}"
        );
        // AccessDenied (403) is storage_unavailable, never permission_denied.
        fault(FaultPlan {
            access_denied: true,
            ..Default::default()
        });
        let wrote = kind(
            w.store
                .write(&t, "session/a.md", b"v2".to_vec())
                .await
                .map(|_| ()),
        );
        let read = kind(w.store.read(&t, "session/a.md").await.map(|_| ()));
        ensure!(
            wrote == Some("storage_unavailable") && read == Some("storage_unavailable"),
            "access denied: write {wrote:?}, read {read:?}"
        );
        w.tier.s3.faults().heal();
        let content = ok(w.store.read(&t, "session/a.md").await, "read")?;
        ensure!(
            content == b"v1",
            "after the faults the file holds {:?}",
            String::from_utf8_lossy(&content)
        );
        Ok(())
    }
);

scenario!(
    a_throttle_within_three_attempts_is_not_seen_and_a_lasting_one_fails,
    kills = [ThrottleNotRetried],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/a.md", b"v1".to_vec()).await,
            "write",
        )?;
        let kind = |r: Result<(), ScopedError>| r.err().map(|e| e.kind());
        let fault = |plan: FaultPlan| w.tier.s3.faults().set_plan(plan);
        // SC-8.4: two throttles, then the third attempt is served; a lasting one fails.
        fault(FaultPlan {
            throttle: Throttle::Next(2),
            ..Default::default()
        });
        ok(
            w.store.write(&t, "session/a.md", b"v2".to_vec()).await,
            "a write throttled twice",
        )?;
        fault(FaultPlan {
            throttle: Throttle::Always,
            ..Default::default()
        });
        let wrote = kind(
            w.store
                .write(&t, "session/a.md", b"v3".to_vec())
                .await
                .map(|_| ()),
        );
        ensure!(
            wrote == Some("storage_unavailable"),
            "a lasting throttle: write {wrote:?}"
        );
        w.tier.s3.faults().heal();
        let content = ok(w.store.read(&t, "session/a.md").await, "read")?;
        ensure!(
            content == b"v2",
            "after the faults the file holds {:?}",
            String::from_utf8_lossy(&content)
        );
        Ok(())
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_is_down_or_a_bucket_that_does_not_exist_is_a_typed_error() {
    let w = World::new("down", None).await;
    let t = w.standard().await;
    w.tier.s3.faults().set_down(true);
    let e = w
        .store
        .write(&t, "session/a.txt", b"a".to_vec())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "storage_unavailable", "{e}");
    w.tier.s3.faults().heal();
    assert!(
        w.raw_keys("").await.is_empty(),
        "a failed write left an object"
    );

    let mut config = w.config.clone();
    config.bucket = "no-such-bucket".into();
    let clock: Arc<dyn Clock> = Arc::new(w.clock.clone());
    let s = ScopedStore::open(w.tier.s3.client(), w.db.pool.clone(), config, clock)
        .await
        .unwrap();
    let e = s
        .write(&t, "session/a.txt", b"a".to_vec())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "no_such_bucket", "{e}");
    let e = s.read(&t, "session/a.txt").await.unwrap_err();
    assert_eq!(e.kind(), "no_such_bucket", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_is_down_is_a_typed_error() {
    let w = World::new("pgdown", None).await;
    let t = w.standard().await;
    w.db.pool.close().await;
    let e = w
        .store
        .write(&t, "session/a.txt", b"a".to_vec())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "database_unavailable", "{e}");
    assert!(w.raw_keys("").await.is_empty());
}

//! The scoped reference implementation's retention on the real tier (disk S3 over HTTP, a real
//! PostgreSQL): which sessions the sweep takes and which it keeps, what a deletion records, and
//! what counts as activity. Split from `real_tier_scoped.rs` (which holds the world and the
//! `scenario!` form these use) so each file is one subject; every scenario is the same test,
//! moved whole.

use std::collections::BTreeMap;
use std::sync::Arc;

use tidemark_conformance::profiles::scoped::process::harness::lifecycle_rules;
use tidemark_reference::clock::Clock;
use tidemark_reference::scoped::lifecycle::LifecycleConfiguration;
use tidemark_reference::scoped::{
    Access, ScopeSettings, ScopedError, ScopedMutant, TurnSpace, WaitKind,
};
use tidemark_sim::real_tier::{FaultPlan, RealTier};

use super::real_tier_scoped::{ensure, ok, scenario, Check, World};

scenario!(
    extracted_text_goes_with_its_file,
    kills = [TextOutlivesFile],
    |w| {
        let t = w.standard().await;
        ok(
            w.store
                .write(&t, "session/report.md", b"quarterly numbers".to_vec())
                .await,
            "write",
        )?;
        ok(
            w.store
                .write(&t, "session/image.bin", vec![0, 159, 146, 150])
                .await,
            "write binary",
        )?;
        let text = ok(
            w.store.read_text(&t, "session/report.md").await,
            "read text",
        )?;
        ensure!(
            text.as_deref() == Some("quarterly numbers"),
            "text {text:?}"
        );
        let text = ok(
            w.store.read_text(&t, "session/image.bin").await,
            "read text",
        )?;
        ensure!(text.is_none(), "binary has text {text:?}");
        let listed = w.paths(&t, Some("session")).await?;
        ensure!(
            listed == vec!["session/image.bin", "session/report.md"],
            "listing shows {listed:?}"
        );
        ok(w.store.delete(&t, "session/report.md").await, "delete")?;
        let r = w.store.read_text(&t, "session/report.md").await;
        ensure!(
            matches!(r, Err(ScopedError::NotFound { .. })),
            "text after delete: {r:?}"
        );
        ensure!(
            w.raw_keys("sessions/w1/a1/s1/.tidemark-text/report.md")
                .await
                .is_empty(),
            "text object left behind"
        );
        Ok(())
    }
);

scenario!(
    a_conversation_older_than_the_ttl_but_still_active_keeps_its_uploads,
    kills = [AgeOnlyExpiry],
    |w| {
        let t = w.standard().await;
        ok(
            w.store
                .write(&t, "session/upload.pdf", b"contract".to_vec())
                .await,
            "upload",
        )?;
        for _ in 0..4 {
            w.days(10);
            ok(w.store.record_activity(&t).await, "activity")?;
            ok(w.store.sweep().await, "sweep")?;
        }
        // Forty days old, last active today: the upload is still there.
        let got = w.store.read(&t, "session/upload.pdf").await;
        ensure!(got.is_ok(), "upload lost mid-conversation: {:?}", got.err());
        // Idle for the TTL: swept, text and all.
        w.days(30);
        let r = ok(w.store.sweep().await, "sweep")?;
        ensure!(r.sessions_swept == 1, "sweep report {r:?}");
        ensure!(
            w.raw_keys("sessions/w1/a1/s1/").await.is_empty(),
            "left: {:?}",
            w.raw_keys("sessions/").await
        );
        Ok(())
    }
);

scenario!(
    a_session_one_day_short_of_the_ttl_is_kept_and_swept_on_the_day,
    kills = [],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/a.txt", b"a".to_vec()).await,
            "write",
        )?;
        w.days(29);
        ok(w.store.sweep().await, "sweep")?;
        ensure!(
            w.store.read(&t, "session/a.txt").await.is_ok(),
            "swept a day early"
        );
        // Reading counted as activity: the session is idle from now.
        w.days(30);
        ok(w.store.sweep().await, "sweep")?;
        ensure!(
            w.raw_keys("sessions/").await.is_empty(),
            "not swept at the TTL"
        );
        Ok(())
    }
);

scenario!(
    an_idle_session_with_work_queued_parked_or_waiting_is_not_swept,
    kills = [WaitsIgnored],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/a.txt", b"a".to_vec()).await,
            "write",
        )?;
        for (kind, id) in [
            (WaitKind::Queued, "m1"),
            (WaitKind::Parked, "turn7"),
            (WaitKind::Waiting, "wake"),
        ] {
            ok(w.store.add_wait(&t, kind, id).await, "add wait")?;
            w.days(31);
            ok(w.store.sweep().await, "sweep")?;
            ensure!(
                !w.raw_keys("sessions/").await.is_empty(),
                "swept while {kind:?}"
            );
            ok(w.store.remove_wait(&t, kind, id).await, "remove wait")?;
        }
        ok(w.store.sweep().await, "sweep")?;
        ensure!(
            w.raw_keys("sessions/").await.is_empty(),
            "not swept once nothing waits"
        );
        Ok(())
    }
);

scenario!(
    skill_versions_are_read_only_through_the_skill_table_and_never_swept,
    kills = [SkillsSwept, SkillsWritable],
    |w| {
        let t = w.standard().await;
        let files = BTreeMap::from([("README.md".to_string(), b"how to price".to_vec())]);
        let sha = ok(w.store.publish_skill_version("w1", &files).await, "publish")?;
        let t = t.with_skill("pricing", &sha);
        let got = ok(
            w.store.read(&t, "skill/pricing/README.md").await,
            "read skill",
        )?;
        ensure!(got == b"how to price", "skill read {got:?}");
        let e = w
            .store
            .write(&t, "skill/pricing/README.md", b"x".to_vec())
            .await
            .err()
            .map(|e| e.kind());
        ensure!(e == Some("read_only"), "skill write gave {e:?}");
        w.days(400);
        ok(w.store.sweep().await, "sweep")?;
        let got = ok(
            w.store.read(&t, "skill/pricing/README.md").await,
            "read skill after a year",
        )?;
        ensure!(got == b"how to price", "skill changed");
        Ok(())
    }
);

scenario!(
    deleting_a_workspace_records_every_prefix_by_trigger_and_the_sweep_empties_them,
    kills = [AppRecordedDeletions, WorkspaceDeletionSparesSkills],
    |w| {
        w.store
            .create_workspace(
                "w1",
                ScopeSettings {
                    agent: None,
                    workspace: Some(Access::ReadWrite),
                },
            )
            .await
            .unwrap();
        let files = BTreeMap::from([("SKILL.md".to_string(), b"s".to_vec())]);
        ok(w.store.publish_skill_version("w1", &files).await, "publish")?;
        for a in ["a1", "a2"] {
            w.store
                .create_agent("w1", a, ScopeSettings::default())
                .await
                .unwrap();
            for s in ["s1", "s2"] {
                let t = TurnSpace::new("w1", a, s).unwrap();
                ok(w.store.create_session(&t).await, "session")?;
                ok(
                    w.store.write(&t, "session/f.txt", b"f".to_vec()).await,
                    "write",
                )?;
                ok(
                    w.store.write(&t, "agent/g.txt", b"g".to_vec()).await,
                    "write",
                )?;
                ok(
                    w.store.write(&t, "workspace/h.txt", b"h".to_vec()).await,
                    "write",
                )?;
            }
        }
        // A neighbour that must survive.
        w.store
            .create_workspace("w2", ScopeSettings::default())
            .await
            .unwrap();
        w.store
            .create_agent("w2", "a1", ScopeSettings::default())
            .await
            .unwrap();
        let n = TurnSpace::new("w2", "a1", "s1").unwrap();
        ok(w.store.create_session(&n).await, "session")?;
        ok(
            w.store.write(&n, "session/keep.txt", b"k".to_vec()).await,
            "write",
        )?;

        ok(w.store.delete_workspace("w1").await, "delete workspace")?;
        let prefixes: Vec<String> = ok(w.store.deletion_obligations().await, "obligations")?
            .into_iter()
            .map(|o| o.prefix)
            .collect();
        for p in [
            "workspaces/w1/",
            "skills/w1/",
            "agents/w1/a1/",
            "agents/w1/a2/",
            "sessions/w1/a1/s1/",
            "sessions/w1/a1/s2/",
            "sessions/w1/a2/s1/",
            "sessions/w1/a2/s2/",
        ] {
            ensure!(
                prefixes.contains(&p.to_string()),
                "{p} not recorded; recorded {prefixes:?}"
            );
        }
        let r = ok(w.store.sweep().await, "sweep")?;
        ensure!(
            r.obligations_completed as usize == prefixes.len(),
            "report {r:?}"
        );
        let left = w.raw_keys("").await;
        ensure!(
            left.iter().all(|k| k.contains("/w2/")),
            "left after cascade: {left:?}"
        );
        ensure!(!left.is_empty(), "the neighbour workspace was swept too");
        let records = ok(w.store.deletion_records().await, "records")?;
        ensure!(records.len() == prefixes.len(), "records {records:?}");
        Ok(())
    }
);

scenario!(
    deleting_an_agent_records_its_sessions_and_spares_its_neighbours,
    kills = [AppRecordedDeletions],
    |w| {
        let t = w.standard().await;
        w.store
            .create_agent("w1", "a2", ScopeSettings::default())
            .await
            .unwrap();
        let t2 = TurnSpace::new("w1", "a1", "s2").unwrap();
        let n = TurnSpace::new("w1", "a2", "s1").unwrap();
        for turn in [&t, &t2, &n] {
            ok(w.store.create_session(turn).await, "session")?;
            ok(
                w.store.write(turn, "session/f.txt", b"f".to_vec()).await,
                "write",
            )?;
            ok(
                w.store.write(turn, "agent/g.txt", b"g".to_vec()).await,
                "write",
            )?;
        }
        ok(w.store.delete_agent("w1", "a1").await, "delete agent")?;
        let mut prefixes: Vec<String> = ok(w.store.deletion_obligations().await, "obligations")?
            .into_iter()
            .map(|o| o.prefix)
            .collect();
        prefixes.sort();
        ensure!(
            prefixes == vec!["agents/w1/a1/", "sessions/w1/a1/s1/", "sessions/w1/a1/s2/"],
            "recorded {prefixes:?}"
        );
        ok(w.store.sweep().await, "sweep")?;
        let left = w.raw_keys("").await;
        ensure!(
            left.iter().all(|k| !k.contains("/a1/")),
            "agent a1 left {left:?}"
        );
        ensure!(
            w.store.read(&n, "session/f.txt").await.is_ok()
                && w.store.read(&n, "agent/g.txt").await.is_ok(),
            "the neighbouring agent lost files"
        );
        let e = w
            .store
            .read(&t, "session/f.txt")
            .await
            .err()
            .map(|e| e.kind());
        ensure!(
            e == Some("unknown_entity"),
            "a deleted agent's session still answers: {e:?}"
        );
        Ok(())
    }
);

scenario!(
    a_clock_that_jumps_backwards_never_makes_a_session_look_older,
    kills = [],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/a.txt", b"a".to_vec()).await,
            "write",
        )?;
        w.days(20);
        ok(w.store.record_activity(&t).await, "activity on day 20")?;
        // The clock jumps back ten days; activity recorded now must not move the session back.
        w.days(-10);
        ok(w.store.record_activity(&t).await, "activity after the jump")?;
        // Day 45 by the clock: 25 days after the day-20 activity. Not yet idle for 30.
        w.days(35);
        ok(w.store.sweep().await, "sweep")?;
        ensure!(
            w.store.read(&t, "session/a.txt").await.is_ok(),
            "swept early after a clock jump"
        );
        Ok(())
    }
);

scenario!(
    the_lifecycle_configuration_read_back_expires_only_sessions_and_a_second_replaces_the_first,
    kills = [LifecycleMerged, KeptClassesExpire],
    |w| {
        let client = w.tier.s3.client();
        for days in [365, 400] {
            ok(
                w.store
                    .apply_lifecycle(&LifecycleConfiguration::for_profile(days, 7))
                    .await,
                "apply lifecycle",
            )?;
            let mut got = lifecycle_rules(&client, &w.config.bucket).await?;
            got.sort();
            let want = vec![
                "agents/ abort 7d".to_string(),
                format!("sessions/ expire {days}d abort 7d"),
                "workspaces/ abort 7d".to_string(),
            ];
            ensure!(
                got == want,
                "after applying {days} days the bucket has {got:?}"
            );
        }
        Ok(())
    }
);

scenario!(
    a_refused_operation_and_a_repeated_create_are_not_activity,
    kills = [RefusalIsActivity, RepeatedCreateIsActivity],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/a.txt", b"a".to_vec()).await,
            "write",
        )?;
        w.days(29);
        let r = w.store.read(&t, "session/missing.txt").await;
        ensure!(
            r.as_ref().err().map(|e| e.kind()) == Some("not_found"),
            "{r:?}"
        );
        ok(w.store.create_session(&t).await, "create the session again")?;
        // Idle since the write: thirty days later it is swept, the refused read and the
        // repeated create counting for nothing.
        w.days(1);
        let swept = ok(w.store.sweep().await, "sweep")?;
        ensure!(swept.sessions_swept == 1, "sweep report {swept:?}");
        Ok(())
    }
);

scenario!(
    a_write_that_fails_after_its_text_in_a_swept_session_leaves_nothing_past_retention,
    kills = [FailedWriteKeepsTheMark],
    |w| {
        let t = w.standard().await;
        ok(
            w.store.write(&t, "session/old.txt", b"old".to_vec()).await,
            "write",
        )?;
        w.days(31);
        ok(w.store.sweep().await, "sweep")?;
        w.tier.s3.faults().set_plan(FaultPlan {
            fail_requests: vec![("PutObject".into(), 2)],
            ..Default::default()
        });
        let r = w.store.write(&t, "session/new.txt", b"new".to_vec()).await;
        w.tier.s3.faults().heal();
        ensure!(r.is_err(), "the failed write reported success");
        w.days(31);
        ok(w.store.sweep().await, "sweep")?;
        let left = w.raw_keys("sessions/w1/a1/s1/").await;
        ensure!(left.is_empty(), "left past retention: {left:?}");
        Ok(())
    }
);

scenario!(
    the_session_backstop_is_checked_against_the_deployments_ttl,
    kills = [BackstopCheckedAgainstDefaultTtl],
    |w| {
        let mut config = w.config.clone();
        config.session_file_ttl_days = 7;
        w.restart(config).await;
        let refused = w
            .store
            .apply_lifecycle(&LifecycleConfiguration::for_profile(7, 7))
            .await;
        ensure!(
            refused.is_err(),
            "a 7-day backstop over a 7-day TTL was accepted"
        );
        ok(
            w.store
                .apply_lifecycle(&LifecycleConfiguration::for_profile(8, 7))
                .await,
            "an 8-day backstop over a 7-day TTL",
        )?;
        Ok(())
    }
);

scenario!(
    an_age_only_rule_ages_an_object_by_its_written_at_stamp,
    kills = [NoWrittenAtStamp],
    |w| {
        let t = w.standard().await;
        ok(
            w.store
                .write(&t, "session/upload.pdf", b"contract".to_vec())
                .await,
            "upload",
        )?;
        w.days(31);
        let rule = tidemark_sim::lifecycle::LifecycleExecutor::new(LifecycleConfiguration {
            rules: vec![tidemark_sim::lifecycle::Rule {
                id: "age".into(),
                enabled: true,
                filter: Some(tidemark_sim::lifecycle::Filter::Prefix("sessions/".into())),
                expiration_days: Some(30),
                abort_incomplete_multipart_days: None,
            }],
        })
        .map_err(|e| e.to_string())?;
        let deleted = rule
            .run_on_bucket(&w.tier.s3.client(), &w.config.bucket, w.clock.now())
            .await?;
        ensure!(
            deleted.contains(&"sessions/w1/a1/s1/upload.pdf".to_string()),
            "aged by the deployment's clock, 31 days on, the upload is due: deleted {deleted:?}"
        );
        Ok(())
    }
);

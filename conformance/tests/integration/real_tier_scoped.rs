//! The scoped reference implementation against the real tier: the disk S3 store over loopback HTTP
//! through the S3 client, and a real PostgreSQL. Each check is written once as a scenario function and run
//! against the correct implementation (it must pass) and against the mutants it is meant to
//! kill (each must fail it).
//!
//! This file holds the world, the `scenario!` form and the scopes, paths and listings; the
//! retention scenarios are in `real_tier_scoped_retention.rs` and the failing tier's in
//! `real_tier_scoped_faults.rs`, which use this file's world and forms.

use std::collections::BTreeMap;
use std::sync::Arc;

use tidemark_reference::clock::{Clock, ManualClock, DAY_MS};
use tidemark_reference::scoped::store::ListedFile;
use tidemark_reference::scoped::{
    Access, ScopeSettings, ScopedConfig, ScopedError, ScopedMutant, ScopedStore, TurnSpace,
};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::{RealTier, TestDatabase};

pub(super) type Check = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}
pub(crate) use ensure;

pub(super) fn ok<T>(r: Result<T, ScopedError>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

pub(super) struct World {
    pub(super) tier: Arc<RealTier>,
    pub(super) clock: ManualClock,
    pub(super) store: ScopedStore,
    pub(super) db: TestDatabase,
    pub(super) config: ScopedConfig,
}

impl World {
    pub(super) async fn new(name: &str, mutant: Option<ScopedMutant>) -> World {
        let tier = Arc::new(RealTier::start(42).await.expect("real tier starts"));
        World::on(tier, name, mutant).await
    }

    /// A fresh bucket and database on an existing tier.
    pub(super) async fn on(tier: Arc<RealTier>, name: &str, mutant: Option<ScopedMutant>) -> World {
        let clock = ManualClock::starting_at(EPOCH);
        let mut config = ScopedConfig::new("unset");
        config.mutant = mutant;
        let (store, db) = tier
            .scoped_store(name, config.clone(), Arc::new(clock.clone()))
            .await
            .expect("scoped store opens");
        let config = store.config().clone();
        World {
            tier,
            clock,
            store,
            db,
            config,
        }
    }

    /// A new process over what the old one persisted (bucket and database), with `config`.
    pub(super) async fn restart(&mut self, config: ScopedConfig) {
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        self.store = ScopedStore::open(self.tier.s3.client(), self.db.pool.clone(), config, clock)
            .await
            .expect("store reopens");
    }

    pub(super) fn days(&self, d: i64) {
        self.clock.advance_ms(d * DAY_MS);
    }

    /// Workspace w1 with agent a1 and session s1 (plus anything in `extra_sessions`).
    pub(super) async fn standard(&self) -> TurnSpace {
        self.store
            .create_workspace("w1", ScopeSettings::default())
            .await
            .unwrap();
        self.store
            .create_agent("w1", "a1", ScopeSettings::default())
            .await
            .unwrap();
        let t = TurnSpace::new("w1", "a1", "s1").unwrap();
        self.store.create_session(&t).await.unwrap();
        t
    }

    pub(super) async fn paths(
        &self,
        turn: &TurnSpace,
        prefix: Option<&str>,
    ) -> Result<Vec<String>, String> {
        let files: Vec<ListedFile> = ok(self.store.list(turn, prefix).await, "list")?;
        Ok(files.into_iter().map(|f| f.path).collect())
    }

    /// Every key in the bucket, straight from S3 (not through the implementation).
    pub(super) async fn raw_keys(&self, prefix: &str) -> Vec<String> {
        let request = tidemark_reference::s3_client::ListRequest {
            prefix: Some(prefix),
            ..Default::default()
        };
        let out = self
            .tier
            .s3
            .client()
            .list_objects_v2(&self.config.bucket, &request)
            .await
            .unwrap();
        out.objects.into_iter().map(|o| o.key).collect()
    }
}

/// Runs `check` on the correct implementation (must pass) and on each mutant (must fail).
macro_rules! scenario {
    ($name:ident, kills = [$($m:ident),*], |$w:ident| $body:block) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            async fn check($w: &mut World) -> Check $body
            let tier = Arc::new(RealTier::start(42).await.expect("real tier starts"));
            let mut w = World::on(tier.clone(), stringify!($name), None).await;
            if let Err(e) = check(&mut w).await {
                panic!("the reference implementation fails {}: {e}", stringify!($name));
            }
            $(
                // A check the mutant failed may have left its faults on: heal before the next
                // world's bucket is made.
                tier.s3.faults().heal();
                let mut w = World::on(tier.clone(), stringify!($name), Some(ScopedMutant::$m)).await;
                assert!(
                    check(&mut w).await.is_err(),
                    "mutant {} survives {}",
                    ScopedMutant::$m.id(),
                    stringify!($name)
                );
            )*
        }
    };
}
pub(crate) use scenario;

scenario!(
    files_round_trip_through_every_scope_and_the_bare_listing_shows_all_three,
    kills = [ListingOwnScopeOnly, SessionsUnderTheirAgent],
    |w| {
        let t = w.standard().await;
        w.store
            .create_agent(
                "w1",
                "admin",
                ScopeSettings {
                    agent: None,
                    workspace: Some(Access::ReadWrite),
                },
            )
            .await
            .unwrap();
        let admin = TurnSpace::new("w1", "admin", "s0").unwrap();
        ok(w.store.create_session(&admin).await, "admin session")?;
        ok(
            w.store
                .write(&t, "session/notes.md", b"hello".to_vec())
                .await,
            "write session",
        )?;
        ok(
            w.store
                .write(&t, "agent/procedures.md", b"steps".to_vec())
                .await,
            "write agent",
        )?;
        ok(
            w.store
                .write(&admin, "workspace/reference/pricing.csv", b"a,b".to_vec())
                .await,
            "write workspace",
        )?;
        let got = ok(
            w.store.read(&t, "workspace/reference/pricing.csv").await,
            "read workspace",
        )?;
        ensure!(got == b"a,b", "read back {got:?}");
        let all = w.paths(&t, None).await?;
        ensure!(
            all == vec![
                "agent/procedures.md",
                "session/notes.md",
                "workspace/reference/pricing.csv"
            ],
            "bare listing shows {all:?}"
        );
        let keys = w.raw_keys("").await;
        ensure!(
            keys.contains(&"sessions/w1/a1/s1/notes.md".to_string()),
            "scope-first layout: {keys:?}"
        );
        ensure!(
            keys.contains(&"workspaces/w1/reference/pricing.csv".to_string()),
            "scope-first layout: {keys:?}"
        );
        ok(w.store.delete(&t, "session/notes.md").await, "delete")?;
        let e = w
            .store
            .read(&t, "session/notes.md")
            .await
            .err()
            .map(|e| e.kind());
        ensure!(e == Some("not_found"), "deleted file reads as {e:?}");
        Ok(())
    }
);

scenario!(
    workspace_is_read_only_by_default_and_none_hides_a_scope,
    kills = [WorkspaceWritableByDefault, NoneStillReadable],
    |w| {
        let t = w.standard().await;
        let e = w
            .store
            .write(&t, "workspace/reference/pricing.csv", b"x".to_vec())
            .await
            .err()
            .map(|e| e.kind());
        ensure!(
            e == Some("permission_denied"),
            "workspace write by default gave {e:?}"
        );
        ensure!(
            w.raw_keys("workspaces/").await.is_empty(),
            "a refused write left an object"
        );
        // A triage agent with no business in agent or workspace files.
        w.store
            .create_agent(
                "w1",
                "triage",
                ScopeSettings {
                    agent: Some(Access::None),
                    workspace: Some(Access::None),
                },
            )
            .await
            .unwrap();
        let tri = TurnSpace::new("w1", "triage", "s9").unwrap();
        ok(w.store.create_session(&tri).await, "session")?;
        let e = w
            .store
            .read(&tri, "workspace/anything.md")
            .await
            .err()
            .map(|e| e.kind());
        ensure!(e == Some("permission_denied"), "none-scope read gave {e:?}");
        let listed = w.paths(&tri, None).await?;
        ensure!(
            listed.iter().all(|p| p.starts_with("session/")),
            "none scopes listed: {listed:?}"
        );
        let e = w
            .store
            .list(&tri, Some("agent"))
            .await
            .err()
            .map(|e| e.kind());
        ensure!(
            e == Some("permission_denied"),
            "listing a none scope gave {e:?}"
        );
        // Session is always read/write, whatever the settings say.
        ok(
            w.store
                .write(&tri, "session/scratch.txt", b"ok".to_vec())
                .await,
            "session write",
        )?;
        Ok(())
    }
);

scenario!(
    the_settings_cascade_lets_the_agent_layer_override_the_workspace_layer,
    kills = [],
    |w| {
        w.store
            .create_workspace(
                "w1",
                ScopeSettings {
                    agent: Some(Access::Read),
                    workspace: Some(Access::ReadWrite),
                },
            )
            .await
            .unwrap();
        w.store
            .create_agent(
                "w1",
                "a1",
                ScopeSettings {
                    agent: None,
                    workspace: Some(Access::Read),
                },
            )
            .await
            .unwrap();
        let t = TurnSpace::new("w1", "a1", "s1").unwrap();
        ok(w.store.create_session(&t).await, "session")?;
        let p = ok(w.store.permissions(&t).await, "permissions")?;
        ensure!(
            p.agent == Access::Read && p.workspace == Access::Read,
            "cascade gave {p:?}"
        );
        let e = w
            .store
            .write(&t, "agent/x.md", b"x".to_vec())
            .await
            .err()
            .map(|e| e.kind());
        ensure!(
            e == Some("permission_denied"),
            "agent write with agent=read gave {e:?}"
        );
        Ok(())
    }
);

scenario!(
    every_hostile_spelling_gets_its_verdict_through_the_real_stores,
    kills = [BackslashAccepted, LookalikeDotsAccepted, TextKeyUncounted],
    |w| {
        use tidemark_conformance::profiles::scoped::model::hostile::{Fit, Verdict, SPELLINGS};
        let t = w.standard().await;
        let fit = Fit {
            prefix_bytes: format!("sessions/{}/{}/{}/", t.workspace, t.agent, t.session).len(),
        };
        for s in SPELLINGS {
            let path = s.guest_path(&fit);
            let written = w.store.write(&t, &path, b"hostile".to_vec()).await;
            match s.verdict {
                Verdict::Refused(reason) => ensure!(
                    written.as_ref().err().map(|e| e.kind()) == Some(reason),
                    "{} ({path:?}) gave {:?}, not refused {reason}",
                    s.what,
                    written.map_err(|e| e.kind())
                ),
                Verdict::Name => {
                    ok(written, s.what)?;
                    let back = ok(w.store.read(&t, &path).await, s.what)?;
                    ensure!(back == b"hostile", "{} read back {back:?}", s.what);
                }
            }
        }
        Ok(())
    }
);

scenario!(
    traversal_is_refused_and_a_scopeless_path_is_answered_with_corrections,
    kills = [ClampingResolution, ScopeGuessed, EncodedTraversalAccepted],
    |w| {
        let t = w.standard().await;
        ok(
            w.store
                .write(&t, "session/b.md", b"session b".to_vec())
                .await,
            "write",
        )?;
        for p in [
            "session/a/../../b.md",
            "session/%2e%2e/b.md",
            "session/a/%2E%2E/b.md",
        ] {
            let r = w.store.read(&t, p).await;
            ensure!(
                matches!(
                    r,
                    Err(ScopedError::Path(
                        tidemark_reference::scoped::PathError::Traversal { .. }
                    ))
                ),
                "{p:?} gave {:?}",
                r.map(|b| String::from_utf8_lossy(&b).into_owned())
            );
        }
        match w.store.write(&t, "notes.md", b"x".to_vec()).await {
            Err(ScopedError::Path(tidemark_reference::scoped::PathError::MissingScope {
                corrections,
                ..
            })) => {
                ensure!(
                    corrections == vec!["session/notes.md", "agent/notes.md", "workspace/notes.md"],
                    "corrections {corrections:?}"
                );
            }
            other => return Err(format!("scopeless write gave {:?}", other.map(|r| r.key))),
        }
        ensure!(
            w.raw_keys("").await.len() == 2,
            "a refused write left objects: {:?}",
            w.raw_keys("").await
        );
        Ok(())
    }
);

scenario!(
    bad_input_is_refused_with_typed_errors_and_nothing_is_written,
    kills = [TrailingSlashTrimmed],
    |w| {
        let t = w.standard().await;
        let cases: [(&str, &str); 6] = [
            ("", "empty_path"),
            ("session/a\u{7}b", "control_character"),
            ("session/", "empty_path"),
            ("session/dir/", "directory_path"),
            ("tmp/x", "missing_scope"),
            ("Sessions/x", "unknown_scope"),
        ];
        for (p, kind) in cases {
            let e = w
                .store
                .write(&t, p, b"x".to_vec())
                .await
                .err()
                .map(|e| e.kind());
            ensure!(e == Some(kind), "{p:?} gave {e:?}, expected {kind}");
        }
        let long = format!("session/{}", "x".repeat(1100));
        let e = w
            .store
            .write(&t, &long, b"x".to_vec())
            .await
            .err()
            .map(|e| e.kind());
        ensure!(e == Some("key_too_long"), "long key gave {e:?}");
        ensure!(
            w.raw_keys("").await.is_empty(),
            "refused writes left objects"
        );
        Ok(())
    }
);

scenario!(
    a_skill_version_is_immutable_addressed_by_content_and_listed_only_through_its_slug,
    kills = [],
    |w| {
        let t = w.standard().await;
        let v1 = BTreeMap::from([
            ("README.md".to_string(), b"v1".to_vec()),
            ("lib/price.py".to_string(), b"x = 1".to_vec()),
        ]);
        let sha1 = ok(w.store.publish_skill_version("w1", &v1).await, "publish")?;
        let again = ok(
            w.store.publish_skill_version("w1", &v1).await,
            "publish again",
        )?;
        ensure!(
            sha1 == again,
            "the same content published twice is two versions"
        );
        let v2 = BTreeMap::from([("README.md".to_string(), b"v2".to_vec())]);
        let sha2 = ok(w.store.publish_skill_version("w1", &v2).await, "publish v2")?;
        ensure!(sha1 != sha2, "different content shares a version");
        // A turn sent v1 reads v1, whatever was published later.
        let t1 = t.clone().with_skill("pricing", &sha1);
        let got = ok(w.store.read(&t1, "skill/pricing/README.md").await, "read")?;
        ensure!(
            got == b"v1",
            "turn with v1 read {:?}",
            String::from_utf8_lossy(&got)
        );
        let listed = w.paths(&t1, Some("skill/pricing")).await?;
        ensure!(
            listed == vec!["skill/pricing/README.md", "skill/pricing/lib/price.py"],
            "listed {listed:?}"
        );
        let bare = w.paths(&t1, None).await?;
        ensure!(
            bare.iter().all(|p| !p.starts_with("skill/")),
            "a bare listing shows skills: {bare:?}"
        );
        let bad = BTreeMap::from([("../escape.md".to_string(), b"x".to_vec())]);
        let e = w
            .store
            .publish_skill_version("w1", &bad)
            .await
            .err()
            .map(|e| e.kind());
        ensure!(
            e == Some("traversal"),
            "a skill path that climbs out gave {e:?}"
        );
        Ok(())
    }
);

scenario!(
    a_listing_across_scopes_is_one_list_in_byte_order,
    kills = [ListingByScope],
    |w| {
        let t = w.standard().await;
        for p in ["session/a.md", "session/B.md", "agent/plan.md"] {
            ok(w.store.write(&t, p, b"x".to_vec()).await, p)?;
        }
        let got = w.paths(&t, None).await?;
        ensure!(
            got == ["agent/plan.md", "session/B.md", "session/a.md"],
            "the listing is {got:?}"
        );
        Ok(())
    }
);

scenario!(
    an_identifier_with_a_dot_is_refused_never_used,
    kills = [DottedIdsAccepted],
    |w| {
        w.standard().await;
        for bad in ["s.1", "..", "a/b"] {
            let r = w.store.turn_space("w1", "a1", bad);
            ensure!(
                r.as_ref().err().map(|e| e.kind()) == Some("invalid_id"),
                "session id {bad:?}: {:?}",
                r.map(|t| t.session)
            );
        }
        Ok(())
    }
);

scenario!(
    a_listing_prefix_names_a_folder_not_a_string_prefix,
    kills = [ListingStringPrefix],
    |w| {
        let t = w.standard().await;
        for p in ["session/reports/q1.csv", "session/reports-old.csv"] {
            ok(w.store.write(&t, p, b"x".to_vec()).await, "write")?;
        }
        let listed = w.paths(&t, Some("session/reports")).await?;
        ensure!(
            listed == vec!["session/reports/q1.csv".to_string()],
            "session/reports lists {listed:?}"
        );
        Ok(())
    }
);

scenario!(
    a_read_only_scope_refuses_a_deletion_and_keeps_the_file,
    kills = [DeleteNeedsOnlyRead],
    |w| {
        let t = w.standard().await;
        let admin_layer = ScopeSettings {
            workspace: Some(Access::ReadWrite),
            ..ScopeSettings::default()
        };
        ok(
            w.store.create_agent("w1", "admin", admin_layer).await,
            "agent",
        )?;
        let admin = TurnSpace::new("w1", "admin", "s0").unwrap();
        ok(w.store.create_session(&admin).await, "session")?;
        ok(
            w.store
                .write(&admin, "workspace/pricing.csv", b"v1".to_vec())
                .await,
            "admin write",
        )?;
        let r = w.store.delete(&t, "workspace/pricing.csv").await;
        ensure!(
            r.as_ref().err().map(|e| e.kind()) == Some("permission_denied"),
            "a read-only scope's deletion: {r:?}"
        );
        let kept = ok(w.store.read(&t, "workspace/pricing.csv").await, "read")?;
        ensure!(kept == b"v1", "the file changed");
        Ok(())
    }
);

scenario!(
    a_malformed_path_is_refused_for_its_shape_whatever_its_scopes_permission,
    kills = [PermissionBeforeShape],
    |w| {
        let t = w.standard().await;
        // Workspace scope is read-only by default: the write's shape answers, not its scope.
        let r = w
            .store
            .write(&t, "workspace/../session/x.md", b"x".to_vec())
            .await;
        ensure!(
            r.as_ref().err().map(|e| e.kind()) == Some("traversal"),
            "answered {:?}",
            r.map(|r| r.key)
        );
        Ok(())
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutant_is_named_in_a_killing_scenario_in_this_file() {
    // "This file" is the three files of the scoped real-tier scenarios, split by subject.
    let src = [
        include_str!("real_tier_scoped.rs"),
        include_str!("real_tier_scoped_retention.rs"),
        include_str!("real_tier_scoped_faults.rs"),
    ]
    .concat();
    // The mutants of parts SF (the people's files API, behind the HTTP door) and SL (retention
    // policies) came with scenarios of their own, which kill them on this same tier (disk S3
    // over HTTP, PostgreSQL) in the suites' `mutant::scoped::*` trials. A store-level check
    // here would repeat those scenarios.
    let later_parts = |m: &ScopedMutant| {
        m.rules()
            .iter()
            .all(|r| r.starts_with("SF-") || r.starts_with("SL-"))
    };
    for m in ScopedMutant::ALL.into_iter().filter(|m| !later_parts(m)) {
        let variant = format!("{m:?}");
        let named = src
            .lines()
            .any(|l| l.trim_start().starts_with("kills = [") && l.contains(&variant))
            || src.contains(&format!("kills = [{variant}"))
            || src.contains(&format!(", {variant}]"))
            || src.contains(&format!(", {variant},"));
        assert!(named, "mutant {} is killed by no scenario", m.id());
    }
}

//! The retention figures of `tidemark bench --profile scoped` (issue 23): the lifecycle rule
//! count of many workspaces with their own TTLs (SPEC SL-5.3, SL-5.4), and the policy sweeper at
//! scale (SL-1.2): S3 requests against the lower bound, wall time, and the longest wait of a
//! writer working beside it. Everything runs on the simulation tier's stores (the in-memory S3
//! over loopback HTTP, the in-memory metadata), so the figures measure the sweep, not a disk.
//! Timings come from the wall clock on purpose: they are measurements, never inputs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tidemark_reference::clock::{ManualClock, Timestamp, DAY_MS};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, SessionKey};
use tidemark_reference::scoped::{ScopeSettings, ScopedConfig, ScopedStore};
use tidemark_sim::real_tier::{MemoryHandle, S3Server};

use crate::profiles::scoped::uuid_ids::uuid_for;

const BUCKET: &str = "retention-bench";

/// The writer's pause between two writes.
const WRITE_EVERY: Duration = Duration::from_millis(2);

/// A fresh in-memory S3 over loopback HTTP with the bench's bucket, and a store on it over
/// `meta`, reading time from `clock`.
async fn stores(
    clock: &ManualClock,
    meta: Arc<dyn Metadata>,
    config: ScopedConfig,
) -> Result<(S3Server, MemoryHandle, ScopedStore), String> {
    let (server, mem) = S3Server::start_memory(Arc::new(clock.clone()), 23)
        .await
        .map_err(|e| e.to_string())?;
    server
        .client()
        .create_bucket(BUCKET)
        .await
        .map_err(|e| format!("CreateBucket: {e}"))?;
    let store = ScopedStore::with_metadata(server.client(), meta, config, Arc::new(clock.clone()))
        .await
        .map_err(|e| e.to_string())?;
    Ok((server, mem, store))
}

fn config() -> ScopedConfig {
    let mut c = ScopedConfig::new(BUCKET);
    c.session_file_ttl_days = 30;
    c
}

/// An identifier as a real system's: a seeded UUID.
fn id(short: &str) -> String {
    uuid_for("bench-retention", short)
}

/// The rules the bucket holds after `apply_lifecycle` at `workspaces` workspaces, `ttls` of
/// which (one per entry, the first workspaces) set their own TTL; `Err` if the configuration is
/// refused (by the store or by the S3 server, which refuses past 1,000 rules).
pub async fn lifecycle_rules_at(workspaces: usize, ttls: &[i64]) -> Result<usize, String> {
    let clock = ManualClock::starting_at(tidemark_sim::clock::EPOCH);
    let (server, _mem, store) = stores(&clock, Arc::new(MemoryMetadata::new()), config()).await?;
    for w in 0..workspaces {
        store
            .create_workspace(&id(&format!("w{w}")), ScopeSettings::default())
            .await
            .map_err(|e| e.to_string())?;
    }
    for (w, days) in ttls.iter().enumerate() {
        store
            .set_workspace_retention(&id(&format!("w{w}")), Some(*days))
            .await
            .map_err(|e| e.to_string())?;
    }
    store
        .apply_lifecycle_with_retention(365)
        .await
        .map_err(|e| format!("the configuration was refused: {e}"))?;
    Ok(
        crate::profiles::scoped::process::harness::lifecycle_rules(&server.client(), BUCKET)
            .await?
            .len(),
    )
}

/// The shape of the policy sweep's population.
#[derive(Clone, Copy, Debug)]
pub struct Population {
    pub workspaces: usize,
    pub agents_per_workspace: usize,
    pub sessions_per_agent: usize,
    /// Objects per session: a file and its extracted text.
    pub keys_per_session: usize,
    /// The count policy on each workspace's first agent (SL-2).
    pub keep_last: usize,
}

impl Population {
    /// The issue's scale: 100,000 sessions over 1,000 workspaces.
    pub const ISSUE: Population = Population {
        workspaces: 1000,
        agents_per_workspace: 4,
        sessions_per_agent: 25,
        keys_per_session: 2,
        keep_last: 5,
    };

    fn sessions(&self) -> usize {
        self.workspaces * self.agents_per_workspace * self.sessions_per_agent
    }

    /// Workspace `w`'s idle TTL in days: one in ten sets 7 days, one in ten 60, the rest keep
    /// the deployment's 30.
    fn ttl_days(w: usize) -> i64 {
        match w % 10 {
            0 => 7,
            1 => 60,
            _ => 30,
        }
    }

    /// How long session `s` of every agent has been idle: from none to 60 days, evenly.
    fn idle_ms(&self, s: usize) -> i64 {
        60 * DAY_MS * s as i64 / (self.sessions_per_agent.max(2) - 1) as i64
    }

    /// What the sweep must take, worked out here independently of the store: `(idle, count)`,
    /// the sessions past their workspace's TTL, and those of a counted agent past its newest
    /// `keep_last` that the idle sweep left.
    fn expected(&self) -> (u64, u64) {
        let (mut idle, mut count) = (0, 0);
        for w in 0..self.workspaces {
            let ttl = Population::ttl_days(w) * DAY_MS;
            for a in 0..self.agents_per_workspace {
                for s in 0..self.sessions_per_agent {
                    if self.idle_ms(s) >= ttl {
                        idle += 1;
                    } else if a == 0 && s >= self.keep_last {
                        // Sessions are ranked newest first, and `s` is the rank.
                        count += 1;
                    }
                }
            }
        }
        (idle, count)
    }

    /// What a sweep an hour later must take once each counted agent has started one new
    /// session: the session its count now puts past `keep_last`, where the first sweep left it
    /// (every other session is either kept or swept already, and none crosses its TTL in an
    /// hour at these ages).
    fn expected_an_hour_later(&self) -> u64 {
        (0..self.workspaces)
            .filter(|w| {
                self.keep_last >= 1
                    && self.idle_ms(self.keep_last - 1) + DAY_MS / 24
                        < Population::ttl_days(*w) * DAY_MS
            })
            .count() as u64
    }
}

/// What one policy sweep at scale measured.
#[derive(Clone, Debug)]
pub struct SweepFigures {
    pub sessions: usize,
    pub swept: u64,
    pub keys_deleted: u64,
    pub lists: u64,
    pub delete_objects: u64,
    /// One list per swept session and one DeleteObjects per 1,000 keys.
    pub lower_bound: u64,
    pub wall: Duration,
    pub writes: u64,
    /// The longest write to a session of an agent with a count policy, and of one without.
    pub longest_write_counted: Duration,
    pub longest_write_uncounted: Duration,
    pub mean_write: Duration,
    /// The steady state: a sweep an hour later, after each counted agent started a session.
    pub later_swept: u64,
    pub later_lists: u64,
    pub later_delete_objects: u64,
}

/// Seeds `p`'s sessions, policies and objects, then runs one sweep with a writer writing to the
/// newest sessions of counted and uncounted agents beside it, one write at a time, until the
/// sweep ends. The sweep's outcome is checked against [`Population::expected`] and the bucket.
pub async fn policy_sweep(p: Population) -> Result<SweepFigures, String> {
    let epoch = tidemark_sim::clock::EPOCH;
    let now = Timestamp::from_millis(epoch.as_millis() + 90 * DAY_MS);
    let clock = ManualClock::starting_at(now);
    let meta = Arc::new(MemoryMetadata::new());
    let (server, mem, store) = stores(&clock, meta.clone(), config()).await?;
    let e = |e: tidemark_reference::scoped::ScopedError| e.to_string();
    let mut targets = Vec::new();
    for w in 0..p.workspaces {
        let ws = id(&format!("w{w}"));
        store
            .create_workspace(&ws, ScopeSettings::default())
            .await
            .map_err(e)?;
        let ttl = Population::ttl_days(w);
        if ttl != 30 {
            store
                .set_workspace_retention(&ws, Some(ttl))
                .await
                .map_err(e)?;
        }
        for a in 0..p.agents_per_workspace {
            let agent = id(&format!("w{w}/a{a}"));
            if !meta
                .upsert_agent(&ws, &agent, ScopeSettings::default())
                .await
                .map_err(e)?
            {
                return Err(format!("agent {agent} not made"));
            }
            if a == 0 {
                store
                    .set_session_count(&ws, &agent, Some(p.keep_last as i64))
                    .await
                    .map_err(e)?;
            }
            for s in 0..p.sessions_per_agent {
                let session = id(&format!("w{w}/a{a}/s{s}"));
                let key = SessionKey::new(&ws, &agent, &session);
                let last = now.as_millis() - p.idle_ms(s);
                if !meta.insert_session(&key, last).await.map_err(e)? {
                    return Err(format!("session {session} not made"));
                }
                for (k, name) in ["notes.md", ".tidemark-text/notes.md"]
                    .iter()
                    .take(p.keys_per_session)
                    .enumerate()
                {
                    mem.seed(
                        BUCKET,
                        &format!("{}{name}", key.prefix()),
                        vec![b'x'; 100 + k],
                        BTreeMap::new(),
                        last,
                    );
                }
                // The writer writes to the newest session of a counted and an uncounted agent
                // in one workspace of twenty.
                if s == 0 && a < 2 && w % 20 == 0 {
                    targets.push((key, a == 0));
                }
            }
        }
    }
    let objects = mem.object_count(BUCKET);
    if objects != p.sessions() * p.keys_per_session {
        return Err(format!("{objects} objects seeded"));
    }

    // The writer is another process: its own store over the same bucket and metadata.
    let writer = ScopedStore::with_metadata(
        server.client(),
        meta.clone(),
        config(),
        Arc::new(clock.clone()),
    )
    .await
    .map_err(e)?;
    let done = Arc::new(AtomicBool::new(false));
    let writing = {
        let done = done.clone();
        async move {
            let (mut n, mut total) = (0u64, Duration::ZERO);
            let mut longest = [Duration::ZERO; 2];
            for (key, counted) in targets.iter().cycle() {
                if done.load(Ordering::SeqCst) {
                    break;
                }
                // A conversation's pace, not a flood: the sweep keeps the CPU it would have.
                tokio::time::sleep(WRITE_EVERY).await;
                let turn = writer
                    .turn_space(&key.workspace, &key.agent, &key.session)
                    .map_err(e)?;
                let started = Instant::now();
                writer
                    .write(&turn, "session/live.md", b"still talking".to_vec())
                    .await
                    .map_err(e)?;
                let took = started.elapsed();
                n += 1;
                total += took;
                let slot = &mut longest[usize::from(*counted)];
                *slot = (*slot).max(took);
            }
            Ok::<_, String>((n, longest, total))
        }
    };
    let sweeping = async {
        let started = Instant::now();
        let report = store.sweep().await;
        let wall = started.elapsed();
        done.store(true, Ordering::SeqCst);
        (report, wall)
    };
    let ((report, wall), written) = tokio::join!(sweeping, writing);
    let report = report.map_err(e)?;
    let (writes, longest, total) = written?;

    let (idle, count) = p.expected();
    if report.sessions_swept != idle + count {
        return Err(format!(
            "the sweep took {} sessions; {idle} idle and {count} past a count were expected",
            report.sessions_swept
        ));
    }
    let keys_deleted = (idle + count) * p.keys_per_session as u64;
    if report.objects_deleted != keys_deleted {
        return Err(format!(
            "the sweep deleted {} objects, not {keys_deleted}",
            report.objects_deleted
        ));
    }
    let requests = store.requests();

    // An hour later, each counted agent has started a new session: its count puts one more
    // session past it, which is what an hourly sweep meets once the backlog is gone.
    for w in 0..p.workspaces {
        let (ws, agent) = (id(&format!("w{w}")), id(&format!("w{w}/a0")));
        let key = SessionKey::new(&ws, &agent, &id(&format!("w{w}/a0/new")));
        let at = now.as_millis() + DAY_MS / 24;
        if !meta.insert_session(&key, at).await.map_err(e)? {
            return Err(format!("session {} not made", key.session));
        }
        mem.seed(
            BUCKET,
            &format!("{}notes.md", key.prefix()),
            vec![b'y'; 100],
            BTreeMap::new(),
            at,
        );
    }
    clock.set(Timestamp::from_millis(now.as_millis() + DAY_MS / 24));
    let later = store.sweep().await.map_err(e)?;
    let after = store.requests();
    let expected = p.expected_an_hour_later();
    if later.sessions_swept != expected {
        return Err(format!(
            "the sweep an hour later took {} sessions, not {expected}",
            later.sessions_swept
        ));
    }
    Ok(SweepFigures {
        later_swept: later.sessions_swept,
        later_lists: after.list - requests.list,
        later_delete_objects: after.delete_batch - requests.delete_batch,
        sessions: p.sessions(),
        swept: report.sessions_swept,
        keys_deleted,
        lists: requests.list,
        delete_objects: requests.delete_batch,
        lower_bound: report.sessions_swept + keys_deleted.div_ceil(1000),
        wall,
        writes,
        longest_write_counted: longest[1],
        longest_write_uncounted: longest[0],
        mean_write: total / u32::try_from(writes.max(1)).unwrap_or(u32::MAX),
    })
}

/// The figures at the issue's scale, as `tidemark bench --profile scoped` prints them.
pub async fn figures() -> Result<String, String> {
    let one_percent_shorter: Vec<i64> = (0..100).map(|i| 1 + i % 29).collect();
    let one_percent_mixed: Vec<i64> = (0..100)
        .map(|i| if i % 2 == 0 { 1 + i % 29 } else { 31 + i % 300 })
        .collect();
    let shorter = lifecycle_rules_at(10_000, &one_percent_shorter).await?;
    let mixed = lifecycle_rules_at(10_000, &one_percent_mixed).await?;
    let past_budget: Vec<i64> = (0..1200).map(|i| 1 + i % 29).collect();
    let budget = lifecycle_rules_at(1200, &past_budget).await?;
    let p = Population::ISSUE;
    let f = policy_sweep(p).await?;
    Ok(format!(
        "lifecycle rules at 10,000 workspaces, 1% with their own TTL: {shorter} rules when all 100 are shorter than the deployment, \
         {mixed} when half are longer (accepted by the S3 server); 1,200 shorter workspaces: {budget} rules (the budget, accepted)\n\
         policy sweep of {} sessions over {} workspaces (TTLs 7/30/60 days, a keep-last-{} count on one agent in {}; \
         in-memory S3 over loopback HTTP, in-memory metadata): {} sessions and {} keys swept in {:.2} s; \
         S3 requests {} lists + {} DeleteObjects = {} against a lower bound of {} (ratio {:.3}; DeleteObjects alone {} against {}); \
         a writer beside it (a write every {} ms): {} writes, longest {:.1} ms to a counted agent's session and {:.1} ms to another's, mean {:.2} ms; \
         an hour later, one new session per counted agent: {} sessions swept with {} lists + {} DeleteObjects",
        f.sessions,
        p.workspaces,
        p.keep_last,
        p.agents_per_workspace,
        f.swept,
        f.keys_deleted,
        f.wall.as_secs_f64(),
        f.lists,
        f.delete_objects,
        f.lists + f.delete_objects,
        f.lower_bound,
        (f.lists + f.delete_objects) as f64 / f.lower_bound as f64,
        f.delete_objects,
        f.keys_deleted.div_ceil(1000),
        WRITE_EVERY.as_millis(),
        f.writes,
        f.longest_write_counted.as_secs_f64() * 1000.0,
        f.longest_write_uncounted.as_secs_f64() * 1000.0,
        f.mean_write.as_secs_f64() * 1000.0,
        f.later_swept,
        f.later_lists,
        f.later_delete_objects,
    ))
}

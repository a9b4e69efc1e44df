//! The scoped profile through the process protocol (PROTOCOL.md, "The scoped profile"): each
//! `scenarios/scoped/*.tdm` scenario against a program started by `tidemark run --impl`.
//!
//! For each scenario the harness starts its own S3 server (the disk store behind the fault wrapper) and
//! makes a fresh PostgreSQL database, creates the bucket, and hands both to the program in
//! `init`. Steps the implementation answers are sent as requests carrying the simulated time;
//! the rest the harness performs itself ([`contract::side`]): faults and heal on its S3 server,
//! bucket listings straight from the bucket, the deletion ledger straight from the database (with
//! the read-only queries the program declared in `init_ok`, else SC-6.6's tables), an age-only lifecycle rule run with the lifecycle executor, and `restart`
//! (SIGKILL to the process group, then the same init again). `crash at` and `write … during
//! sweep` are sent only to a program claiming the `crash_points` / `write_during_sweep`
//! capability; a scenario needing one it lacks is skipped with the reason, not failed.
//!
//! Results are [`CaseReport`]s, so scoped scenarios read in the table, JSON and JUnit reports
//! exactly as scratchpad ones do.

pub mod harness;
pub mod service;

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ScopedOp, ScopedOutcome};
use crate::profiles::scoped::contract::{self, Side, PEOPLE_API_FIELD};
use crate::profiles::scoped::script::{self, Action, Expect, Script};
use futures::StreamExt;
use tidemark_reference::clock::Timestamp;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::server::{ACCESS_KEY, REGION, SECRET_KEY};
use tidemark_sim::real_tier::{PgProvider, RealTier, TestDatabase};
use tidemark_sim::trace::Trace;

use super::erasure::{subject_text, ErasureLedger, ErasureQueries};
use super::ledger::LedgerQueries;
use crate::driver::DriverError;
use crate::play::Failure;
use crate::process::{ProcessFactory, ProcessSession};
use crate::protocol::{Init, S3Endpoint, INIT_ID, PROTOCOL};
use crate::report::{CaseReport, Verdict};

/// The profile's name in `init` and `init_ok`.
pub const PROFILE: &str = "scoped";

/// The scoped scenarios under `dir` whose test names are in `only` (all when it is empty). A
/// name in `only` that names no scoped scenario is an error, so a mistyped replay command cannot
/// pass by running nothing. Citations are checked against `spec` (SPEC.md).
pub fn load(dir: &Path, only: &[String], spec: &Path) -> Result<Vec<Script>, String> {
    let rules = crate::spec::RuleIndex::load(spec)
        .map_err(|e| format!("{}: cannot read SPEC.md: {e}", spec.display()))?;
    let scripts = script::load_dir_with(dir, rules.id_set()).map_err(|e| e.to_string())?;
    for name in only {
        if !scripts.iter().any(|s| &s.test_name() == name) {
            return Err(format!(
                "no scenario is named {name:?}; scoped test names look like scoped::files_live_under_scope_first_keys"
            ));
        }
    }
    Ok(scripts
        .into_iter()
        .filter(|s| only.is_empty() || only.contains(&s.test_name()))
        .collect())
}

/// Why `script` does not run against the program, if it does not: the profile is not claimed,
/// a step it plays needs a capability the program does not claim, or the scenario is about a
/// variant's choice the program does not take.
pub fn skip_reason(factory: &ProcessFactory, script: &Script) -> Option<String> {
    let claims = factory.claims();
    if !claims.profiles.iter().any(|p| p == PROFILE) {
        return Some(format!(
            "the implementation does not claim the {PROFILE} profile"
        ));
    }
    let declared = claims.declared_variants();
    script
        .skip_reason(&declared)
        .or_else(|| missing_capability(&claims.capabilities, &script.as_played_by(&declared)))
}

/// The first step of `script` needing a capability not in `capabilities`, as a skip reason.
pub fn missing_capability(capabilities: &[String], script: &Script) -> Option<String> {
    script.steps.iter().find_map(|step| match &step.action {
        Action::Op(op) => match contract::capability_needed(op) {
            Some(capability) if !capabilities.iter().any(|c| c == capability) => {
                Some(format!(
                    "line {}: `{}` needs the capability {capability}, which the implementation does not claim",
                    step.line, step.text
                ))
            }
            _ => None,
        },
        Action::Advance(_) => None,
    })
}

/// Runs `scripts` in order against the program (up to `jobs` at once; the report keeps suite
/// order), each scenario in its own database on `pg`. Without `pg`, PostgreSQL is started
/// (`DATABASE_URL`, else an ephemeral cluster) only if some scenario will run; if none is
/// available the run cannot check anything and that is the error.
pub async fn check(
    factory: &ProcessFactory,
    scripts: &[Script],
    jobs: NonZeroUsize,
    pg: Option<Arc<PgProvider>>,
) -> Result<Vec<CaseReport>, String> {
    let runs = scripts.iter().any(|s| skip_reason(factory, s).is_none());
    let pg = match pg {
        Some(pg) => Some(pg),
        None if runs => Some(super::postgres().await?.0),
        None => None,
    };
    let pg = &pg;
    Ok(futures::stream::iter(scripts)
        .map(|script| async move {
            match (skip_reason(factory, script), pg) {
                (Some(reason), _) => case(script, Verdict::Skipped { reason }, &Trace::new()),
                (None, Some(pg)) => {
                    let mut trace = Trace::new();
                    // The steps the program's declared variants keep (SPEC.md's variants), its
                    // text area as it spells it (SC-1.4).
                    let claims = factory.claims();
                    let segment = super::text_segment::declared(claims)
                        .ok()
                        .flatten()
                        .unwrap_or_else(|| super::text_segment::DEFAULT.into());
                    let played = script
                        .as_played_by(&claims.declared_variants())
                        .with_text_segment(&segment);
                    let verdict = match play(factory, pg.clone(), &played, &mut trace).await {
                        Ok(()) => Verdict::Passed,
                        Err(f) => Verdict::Failed(f),
                    };
                    case(script, verdict, &trace)
                }
                (None, None) => unreachable!("PostgreSQL is started when a scenario runs"),
            }
        })
        .buffered(jobs.get())
        .collect()
        .await)
}

pub(crate) fn case(script: &Script, verdict: Verdict, trace: &Trace) -> CaseReport {
    let failed = matches!(verdict, Verdict::Failed(_));
    CaseReport {
        test_name: script.test_name(),
        name: script.name.clone(),
        profile: PROFILE.to_string(),
        file: crate::report::display_path(&script.file),
        rules: script.rules.clone(),
        verdict,
        trace_tail: if failed {
            trace.tail(crate::report::TRACE_KEPT_LINES).to_vec()
        } else {
            vec![]
        },
    }
}

pub(crate) fn rel(now: Timestamp) -> i64 {
    now.as_millis() - EPOCH.as_millis()
}

pub(crate) fn setup_failure(expected: &str, actual: impl ToString) -> Failure {
    Failure {
        line: 0,
        step: "(setup)".into(),
        expected: expected.into(),
        actual: actual.to_string(),
    }
}

/// What the harness provides one scenario: its S3 server, its database, its bucket.
struct Provided {
    tier: RealTier,
    db: TestDatabase,
    bucket: String,
}

async fn provide(pg: Arc<PgProvider>, script: &Script, name: &str) -> Result<Provided, Failure> {
    // The same seed the in-process runner uses, so fault rates draw the same numbers.
    let tier = RealTier::with_postgres(pg.clone(), script.fault_seed())
        .await
        .map_err(|e| setup_failure("a running S3 server", e))?;
    let db = pg
        .fresh_database(name)
        .await
        .map_err(|e| setup_failure("a fresh PostgreSQL database", e))?;
    let bucket = tier.next_bucket_name();
    tier.create_bucket(&bucket)
        .await
        .map_err(|e| setup_failure("a bucket on the harness's S3 server", e))?;
    Ok(Provided { tier, db, bucket })
}

async fn play(
    factory: &ProcessFactory,
    pg: Arc<PgProvider>,
    script: &Script,
    trace: &mut Trace,
) -> Result<(), Failure> {
    play_with(pg, script, trace, async |workdir: PathBuf, init: Init| {
        ProcessSession::start(factory, &workdir, init)
            .await
            .map_err(|e| e.to_string())
    })
    .await
}

/// Plays `script` against the implementation `start` brings up: the harness's S3 server,
/// bucket, database and directories are made here, handed over in an `init`, and removed after.
pub(crate) async fn play_with<E: Endpoint>(
    pg: Arc<PgProvider>,
    script: &Script,
    trace: &mut Trace,
    start: impl AsyncFnOnce(PathBuf, Init) -> Result<E, String>,
) -> Result<(), Failure> {
    let name = script
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let scratch = tidemark_sim::owner::tempdir("tidemark-")
        .map_err(|e| setup_failure("a temporary directory", e))?;
    let (root, workdir) = (scratch.path().join("root"), scratch.path().join("workdir"));
    for d in [&root, &workdir] {
        std::fs::create_dir(d).map_err(|e| setup_failure("a scratch directory", e))?;
    }
    let provided = provide(pg.clone(), script, &name).await?;
    let init = Init {
        id: INIT_ID,
        protocol: PROTOCOL.to_string(),
        profile: Some(PROFILE.to_string()),
        root: root.to_string_lossy().into_owned(),
        workdir: workdir.to_string_lossy().into_owned(),
        knobs: script.knobs.clone(),
        s3: Some(S3Endpoint {
            endpoint_url: provided.tier.s3.endpoint(),
            region: REGION.into(),
            bucket: provided.bucket.clone(),
            access_key_id: ACCESS_KEY.into(),
            secret_access_key: SECRET_KEY.into(),
        }),
        postgres_url: Some(provided.db.url.clone()),
    };
    let mut session = match start(workdir.clone(), init).await {
        Ok(session) => session,
        Err(e) => {
            let _ = pg.drop_database(provided.db).await;
            return Err(Failure {
                line: 0,
                step: "(start)".into(),
                expected: "the implementation to start".into(),
                actual: e,
            });
        }
    };
    trace.record(0, "start -> ok");
    let result = steps(&mut session, &provided, script, trace).await;
    session.stop().await;
    // Leave a DATABASE_URL server as it was found.
    let cleanup = pg.drop_database(provided.db).await;
    result?;
    cleanup.map_err(|e| setup_failure("the scenario's database dropped", e))
}

/// What the harness talks to while it plays a scenario: a program through the protocol
/// ([`ProcessSession`]) or a Rust implementation in process ([`super::gate`]).
#[allow(async_fn_in_trait)] // Used generically within this crate, never as `dyn`.
pub trait Endpoint {
    /// Sends one implementation step at `now_ms`.
    async fn call(&mut self, now_ms: i64, op: &ScopedOp) -> Result<ScopedOutcome, DriverError>;
    /// A crash: everything not persisted is lost; a new instance starts with the same init.
    async fn restart(&mut self) -> Result<(), DriverError>;
    /// The ledger queries the running instance declared, if any.
    fn ledger(&self) -> Result<Option<LedgerQueries>, String>;
    /// The erasure ledger's queries the running instance declared, if any (SL-4.7).
    fn erasure(&self) -> Result<Option<ErasureQueries>, String>;
    /// The base URL of the running instance's people's files API (`init_ok`'s `people_api`),
    /// if it named one.
    fn people_api(&self) -> Result<Option<String>, String>;
    /// How long one of a person's HTTP requests may take, its whole answer read.
    fn people_timeout(&self) -> std::time::Duration {
        super::people::REQUEST_TIMEOUT
    }
    /// The end of the scenario.
    async fn stop(&mut self);
}

impl Endpoint for ProcessSession {
    async fn call(&mut self, now_ms: i64, op: &ScopedOp) -> Result<ScopedOutcome, DriverError> {
        ProcessSession::call(self, now_ms, &contract::op_name(op), op).await
    }

    async fn restart(&mut self) -> Result<(), DriverError> {
        ProcessSession::restart(self).await
    }

    fn ledger(&self) -> Result<Option<LedgerQueries>, String> {
        Ok(self
            .claims()
            .map(LedgerQueries::declared)
            .transpose()?
            .flatten())
    }

    fn erasure(&self) -> Result<Option<ErasureQueries>, String> {
        Ok(self
            .claims()
            .map(ErasureQueries::declared)
            .transpose()?
            .flatten())
    }

    fn people_timeout(&self) -> std::time::Duration {
        self.reply_timeout()
    }

    fn people_api(&self) -> Result<Option<String>, String> {
        self.claims()
            .map(|c| c.declared::<String>(PEOPLE_API_FIELD))
            .transpose()
            .map(Option::flatten)
    }

    async fn stop(&mut self) {
        ProcessSession::stop(self).await
    }
}

async fn steps(
    session: &mut impl Endpoint,
    provided: &Provided,
    script: &Script,
    trace: &mut Trace,
) -> Result<(), Failure> {
    let mut now = EPOCH;
    // Skill names as the scenario spells them -> the sha256 the implementation published them
    // under: turns are sent with hashes (SC-2.6), which also survive a restart.
    let mut skills: BTreeMap<String, String> = BTreeMap::new();
    // People's credentials, and each person's `person` request, sent again after a restart: a
    // new process need not know the tokens the old one minted (PROTOCOL.md).
    let mut people = super::people::PeopleClient::with_timeout(session.people_timeout());
    let mut persons: BTreeMap<String, ScopedOp> = BTreeMap::new();
    // Paths the scenario names after the implementation chose them (`overflowed as OUT`).
    let mut bindings = script::bindings::Bindings::default();
    for step in &script.steps {
        let step = &bindings.resolve(step);
        let op = match &step.action {
            Action::Advance(ms) => {
                now = now.plus_ms(*ms);
                trace.record(rel(now), format!("advance {ms}ms"));
                continue;
            }
            Action::Op(op) => op,
        };
        let expected = expect_text(&step.expect);
        let fail = |actual: String| Failure {
            line: step.line,
            step: step.text.clone(),
            expected: expected.clone(),
            actual,
        };
        let got = match contract::side(op) {
            Side::People => {
                let ScopedOp::People {
                    person,
                    session: id,
                    call,
                } = op
                else {
                    unreachable!("only a people step is sent over HTTP")
                };
                let base = session
                    .people_api()
                    .map_err(|e| fail(format!("init_ok's people_api is malformed: {e}")))?
                    .ok_or_else(|| {
                        fail("the implementation claims people_api but names no people_api base URL in init_ok".into())
                    })?;
                people
                    .send(&base, now.as_millis(), person, id, call)
                    .await
                    .map_err(fail)?
            }
            Side::Harness => {
                let got = harness_step(session, provided, now, op)
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                if matches!(op, ScopedOp::Restart) {
                    remint(session, now, &persons, &mut people)
                        .await
                        .map_err(fail)?;
                }
                got
            }
            Side::Implementation | Side::ImplementationWith(_) => {
                let sent = contract::with_skill_hashes(op, &skills);
                let got: ScopedOutcome = session
                    .call(now.as_millis(), &sent)
                    .await
                    .map_err(|e| fail(format!("implementation error: {e}")))?;
                if let (ScopedOp::PublishSkill { name, .. }, ScopedOutcome::Published { sha256 }) =
                    (op, &got)
                {
                    skills.insert(name.clone(), sha256.clone());
                }
                if let ScopedOutcome::Crashed { .. } = got {
                    // It died there: what it persisted is all a new process gets.
                    session
                        .restart()
                        .await
                        .map_err(|e| fail(format!("implementation error on restart: {e}")))?;
                    remint(session, now, &persons, &mut people)
                        .await
                        .map_err(fail)?;
                }
                if let ScopedOp::Person { person, .. } = op {
                    let ScopedOutcome::Credentials { headers } = got else {
                        return Err(fail(format!(
                            "a `person` request answered {}; PROTOCOL.md answers it `credentials`",
                            outcome_text(&got)
                        )));
                    };
                    people.remember(person, headers);
                    persons.insert(person.clone(), op.clone());
                    ScopedOutcome::Ok
                } else {
                    got
                }
            }
        };
        trace.record(rel(now), format!("{} -> {}", step.text, outcome_text(&got)));
        if !step.expect.matches(&got) {
            return Err(fail(outcome_text(&got)));
        }
        bindings.observe(step, &got);
    }
    Ok(())
}

/// Asks the (restarted) implementation again for every person's credentials.
async fn remint(
    session: &mut impl Endpoint,
    now: Timestamp,
    persons: &BTreeMap<String, ScopedOp>,
    people: &mut super::people::PeopleClient,
) -> Result<(), String> {
    for (person, op) in persons {
        match session.call(now.as_millis(), op).await {
            Ok(ScopedOutcome::Credentials { headers }) => people.remember(person, headers),
            Ok(other) => {
                return Err(format!(
                    "after the restart, the `person` request for {person} answered {}",
                    outcome_text(&other)
                ))
            }
            Err(e) => {
                return Err(format!(
                    "implementation error minting credentials again: {e}"
                ))
            }
        }
    }
    Ok(())
}

/// A step the harness performs itself. `Err` is the harness's failure (or the program failing
/// to restart), reported at the step.
async fn harness_step(
    session: &mut impl Endpoint,
    provided: &Provided,
    now: Timestamp,
    op: &ScopedOp,
) -> Result<ScopedOutcome, DriverError> {
    let harness = |e: String| DriverError(format!("harness error: {e}"));
    let client = provided.tier.s3.client();
    Ok(match op {
        ScopedOp::Restart => {
            session
                .restart()
                .await
                .map_err(|e| DriverError(format!("implementation error on restart: {e}")))?;
            ScopedOutcome::Ok
        }
        ScopedOp::Faults { .. } => {
            if let Some(plan) = harness::fault_plan(op) {
                provided.tier.s3.faults().set_plan(plan);
            }
            ScopedOutcome::Ok
        }
        ScopedOp::Heal => {
            provided.tier.s3.faults().heal();
            ScopedOutcome::Ok
        }
        ScopedOp::BucketKeys { prefix } => ScopedOutcome::Keys {
            keys: harness::bucket_keys(&client, &provided.bucket, prefix)
                .await
                .map_err(harness)?,
        },
        ScopedOp::PendingDeletions => {
            let (queries, whose) = ledger_queries(session)?;
            ScopedOutcome::Prefixes {
                prefixes: queries
                    .pending_prefixes(&provided.db.pool)
                    .await
                    .map_err(|e| DriverError(format!("{whose}: {e}")))?,
            }
        }
        ScopedOp::DeletionRecords => {
            let (queries, whose) = ledger_queries(session)?;
            ScopedOutcome::Prefixes {
                prefixes: queries
                    .record_prefixes(&provided.db.pool)
                    .await
                    .map_err(|e| DriverError(format!("{whose}: {e}")))?,
            }
        }
        ScopedOp::LifecycleRules => ScopedOutcome::Rules {
            rules: harness::lifecycle_rules(&client, &provided.bucket)
                .await
                .map_err(harness)?,
        },
        ScopedOp::RunAgeRule { prefix, days } => ScopedOutcome::Keys {
            keys: harness::run_age_rule(&client, &provided.bucket, prefix, *days, now)
                .await
                .map_err(harness)?,
        },
        ScopedOp::ErasureStates { workspace, agent } => ScopedOutcome::Erasures {
            states: erasure_ledger(session, provided)
                .await?
                .states(&subject_text(workspace, agent.as_deref()), now.as_millis())
                .map_err(|e| DriverError(format!("the erasure ledger declared in init_ok: {e}")))?,
        },
        ScopedOp::ErasureProof { workspace, agent } => ScopedOutcome::Keys {
            keys: erasure_ledger(session, provided)
                .await?
                .proof(&subject_text(workspace, agent.as_deref()), now.as_millis())
                .map_err(|e| DriverError(format!("the erasure ledger declared in init_ok: {e}")))?,
        },
        other => {
            return Err(harness(format!(
                "{} is not a harness-side step",
                contract::op_name(other)
            )))
        }
    })
}

/// The queries the running program declared for its ledger, else SC-6.6's tables, and whose
/// they are (for a failure's message: a declared query's error is the program's, not the
/// harness's).
fn ledger_queries(session: &impl Endpoint) -> Result<(LedgerQueries, &'static str), DriverError> {
    let declared = session
        .ledger()
        .map_err(|e| DriverError(format!("the ledger declared in init_ok is malformed: {e}")))?;
    Ok(match declared {
        Some(declared) => (declared, "the ledger declared in init_ok"),
        None => (
            LedgerQueries::default(),
            "the ledger in SC-6.6's tables (declare `ledger` in init_ok if yours are named otherwise)",
        ),
    })
}

/// The erasure ledger read from the program's database with the queries it declared in
/// `init_ok` (SL-4.7): a program claiming `erasure_obligations` must declare them.
async fn erasure_ledger(
    session: &impl Endpoint,
    provided: &Provided,
) -> Result<ErasureLedger, DriverError> {
    let queries = session
        .erasure()
        .map_err(|e| DriverError(format!("the erasure ledger declared in init_ok is malformed: {e}")))?
        .ok_or_else(|| {
            DriverError(format!(
                "the implementation claims {} but declares no `{}` queries in init_ok (SL-4.7: the harness reads obligations and proofs with them)",
                contract::ERASURE_OBLIGATIONS,
                super::erasure::DECLARED_FIELD
            ))
        })?;
    queries
        .read(&provided.db.pool)
        .await
        .map_err(|e| DriverError(format!("the erasure ledger declared in init_ok: {e}")))
}

/// A list as a scenario spells it: an item that holds a comma, a bracket or a quote, or is
/// empty or padded, quoted, so two different lists never read alike.
fn list_text(items: &[String]) -> String {
    let item = |i: &String| {
        let plain = !i.is_empty() && i.trim() == i && !i.contains([',', '[', ']', '"']);
        if plain {
            i.clone()
        } else {
            format!("{i:?}")
        }
    };
    format!(
        "[{}]",
        items.iter().map(item).collect::<Vec<_>>().join(", ")
    )
}

/// An expectation as a scenario spells it.
pub fn expect_text(e: &Expect) -> String {
    match e {
        Expect::Ok => "ok".into(),
        Expect::Written(p) => format!("written {p}"),
        Expect::Content(c) => format!("{c:?}"),
        Expect::Text(Some(t)) => format!("text {t:?}"),
        Expect::Text(None) => "no text".into(),
        Expect::List(items) => list_text(items),
        Expect::Ordered(items) => format!("in order {}", list_text(items)),
        Expect::Refused(r) => format!("refused {r}"),
        Expect::Swept {
            sessions,
            deletions,
        } => format!("swept {sessions} sessions, {deletions} deletions"),
        Expect::Crashed => "crashed".into(),
        Expect::Published => "published".into(),
        Expect::Overflowed(None) => "overflowed".into(),
        Expect::Overflowed(Some(name)) => format!("overflowed as {name}"),
        Expect::Erasures(states) => list_text(states),
    }
}

/// An outcome in the same spelling as [`expect_text`], for traces and failure reports.
pub fn outcome_text(o: &ScopedOutcome) -> String {
    match o {
        ScopedOutcome::Ok => "ok".into(),
        ScopedOutcome::Written { path } => format!("written {path}"),
        ScopedOutcome::Content { content } => format!("{content:?}"),
        ScopedOutcome::Text { text: Some(t) } => format!("text {t:?}"),
        ScopedOutcome::Text { text: None } => "no text".into(),
        ScopedOutcome::Listing { paths } => list_text(paths),
        ScopedOutcome::Keys { keys } => list_text(keys),
        ScopedOutcome::Prefixes { prefixes } => list_text(prefixes),
        ScopedOutcome::Rules { rules } => list_text(rules),
        ScopedOutcome::Published { sha256 } => format!("published {sha256}"),
        ScopedOutcome::Swept {
            sessions,
            obligations,
        } => format!("swept {sessions} sessions, {obligations} deletions"),
        ScopedOutcome::Refused { reason, message } => format!("refused {reason} ({message})"),
        ScopedOutcome::Crashed { point } => format!("crashed at {point}"),
        // The headers carry a secret of the implementation's; a trace never shows them.
        ScopedOutcome::Credentials { headers } => {
            format!("credentials ({} headers)", headers.len())
        }
        ScopedOutcome::Erasures { states } => list_text(states),
    }
}

//! The scoped reference in process, behind the contract (`contract.rs`): what a conformance
//! adapter (and a scenario file) needs. One [`ScopedDriver`] is one scenario: its own bucket,
//! its own metadata (a fresh PostgreSQL database on the real tier, a fresh in-memory store on
//! the simulation tier), a clock set from each operation's timestamp, faults, crashes and
//! restarts from what was persisted, and inspection of the bucket and the obligations.

use std::collections::BTreeMap;
use std::sync::Arc;

use tidemark_reference::clock::{ManualClock, Timestamp};
use tidemark_reference::scoped::metadata::{MemoryMetadata, Metadata, PostgresMetadata};
use tidemark_reference::scoped::{ScopedConfig, ScopedError, ScopedMutant};

use super::contract::{op_name, side, with_skill_hashes, ScopedOp, ScopedOutcome, Side};
use super::erasure::subject_text;
use super::people::PeopleClient;
use super::process::harness::{bucket_keys, fault_plan, lifecycle_rules, run_age_rule};
use super::process::service::ScopedService;
use tidemark_sim::real_tier::{RealTier, RealTierError, S3Server, TestDatabase};

/// Plays scoped operations against the reference in process: the harness's steps on its own
/// stores, the implementation's through a [`ScopedService`] (as the reference adapter does).
pub struct ScopedDriver {
    tier: DriverTier,
    meta: Arc<dyn Metadata>,
    config: ScopedConfig,
    service: ScopedService,
    /// Skill names as the scenario spells them -> the sha256 each was published under.
    skills: BTreeMap<String, String>,
    /// People's credentials, and the client their requests go through over HTTP.
    people: PeopleClient,
}

/// Where a driver's bucket and metadata live.
enum DriverTier {
    /// The real tier's S3 server and a fresh PostgreSQL database.
    Real {
        tier: Arc<RealTier>,
        db: Box<TestDatabase>,
    },
    /// The in-memory S3 (behind the same fault wrapper, over loopback HTTP) and the in-memory
    /// metadata store: the simulation tier's stores, checked against the real tier.
    Sim { s3: S3Server },
}

impl DriverTier {
    fn s3(&self) -> &S3Server {
        match self {
            DriverTier::Real { tier, .. } => &tier.s3,
            DriverTier::Sim { s3 } => s3,
        }
    }
}

/// The store's configuration for a scenario: `mutant` switched on, the variants `variants`
/// declares taken, `knobs` applied (only `session_file_ttl_days` exists).
fn config_from(
    mutant: Option<ScopedMutant>,
    variants: &crate::variants::Declared,
    knobs: &BTreeMap<String, i64>,
) -> Result<ScopedConfig, RealTierError> {
    let mut config = ScopedConfig::new("unset");
    config.mutant = mutant;
    config.alternatives = super::variants::alternatives(variants);
    for (k, v) in knobs {
        match k.as_str() {
            "session_file_ttl_days" => {
                config.session_file_ttl_days = u32::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!(
                        "session_file_ttl_days = {v}"
                    )))
                })?
            }
            "max_upload_bytes" => {
                config.max_upload_bytes = u64::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!("max_upload_bytes = {v}")))
                })?
            }
            "tool_output_limit_bytes" => {
                config.tool_output_limit_bytes = u64::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!(
                        "tool_output_limit_bytes = {v}"
                    )))
                })?
            }
            "close_grace_days" => {
                config.close_grace_days = u32::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!("close_grace_days = {v}")))
                })?
            }
            "lifecycle_rule_limit" => {
                config.lifecycle_rule_limit = usize::try_from(*v).map_err(|_| {
                    RealTierError::Scoped(ScopedError::Config(format!(
                        "lifecycle_rule_limit = {v}"
                    )))
                })?
            }
            other => {
                return Err(RealTierError::Scoped(ScopedError::Config(format!(
                    "the scoped reference has no knob {other:?}"
                ))))
            }
        }
    }
    Ok(config)
}

impl ScopedDriver {
    /// A fresh bucket and database on `tier` for one scenario. `knobs` may set
    /// `session_file_ttl_days`.
    pub async fn start(
        tier: Arc<RealTier>,
        name: &str,
        mutant: Option<ScopedMutant>,
        variants: &crate::variants::Declared,
        knobs: &BTreeMap<String, i64>,
    ) -> Result<ScopedDriver, RealTierError> {
        let clock = ManualClock::default();
        let config = config_from(mutant, variants, knobs)?;
        let (store, db) = tier
            .scoped_store(name, config, Arc::new(clock.clone()))
            .await?;
        let config = store.config().clone();
        let meta: Arc<dyn Metadata> = Arc::new(PostgresMetadata::new(db.pool.clone()));
        let service = ScopedService::over(tier.s3.client(), meta.clone(), config.clone(), clock)
            .await
            .map_err(|e| RealTierError::Scoped(ScopedError::Config(e)))?;
        Ok(ScopedDriver {
            tier: DriverTier::Real {
                tier,
                db: Box::new(db),
            },
            meta,
            config,
            service,
            skills: BTreeMap::new(),
            people: PeopleClient::new(),
        })
    }

    /// The simulation tier's stores for one scenario: a fresh in-memory S3 (behind the fault
    /// wrapper, over loopback HTTP, faults seeded by `seed`) and a fresh in-memory metadata
    /// store. No PostgreSQL is needed.
    pub async fn start_sim(
        mutant: Option<ScopedMutant>,
        variants: &crate::variants::Declared,
        knobs: &BTreeMap<String, i64>,
        seed: u64,
    ) -> Result<ScopedDriver, RealTierError> {
        let mut config = config_from(mutant, variants, knobs)?;
        // LastModified of the in-memory store comes from this clock; the scoped reference
        // stamps its own write times, so a fixed instant is enough (as on the memory backend).
        let s3_clock = Arc::new(ManualClock::starting_at(tidemark_sim::clock::EPOCH));
        let (s3, _) = S3Server::start_memory(s3_clock, seed).await?;
        // A fresh server: its first bucket.
        let bucket = tidemark_sim::real_tier::bucket_name(1);
        s3.client()
            .create_bucket(&bucket)
            .await
            .map_err(|e| RealTierError::S3Client {
                message: format!("CreateBucket {bucket}: {e}"),
            })?;
        config.bucket = bucket;
        let meta: Arc<dyn Metadata> = Arc::new(MemoryMetadata::new());
        let service = ScopedService::over(
            s3.client(),
            meta.clone(),
            config.clone(),
            ManualClock::default(),
        )
        .await
        .map_err(|e| RealTierError::Scoped(ScopedError::Config(e)))?;
        Ok(ScopedDriver {
            tier: DriverTier::Sim { s3 },
            meta,
            config,
            service,
            skills: BTreeMap::new(),
            people: PeopleClient::new(),
        })
    }

    pub fn bucket(&self) -> &str {
        &self.config.bucket
    }

    /// The scenario's PostgreSQL database (`None` on the simulation tier).
    pub fn database(&self) -> Option<&TestDatabase> {
        match &self.tier {
            DriverTier::Real { db, .. } => Some(db),
            DriverTier::Sim { .. } => None,
        }
    }

    /// The metadata store the driver's store runs over.
    pub fn metadata(&self) -> &Arc<dyn Metadata> {
        &self.meta
    }

    /// Ends the scenario: drops its database, so a run against a `DATABASE_URL` server leaves
    /// it as it found it (an ephemeral cluster goes as a whole anyway).
    pub async fn finish(self) -> Result<(), RealTierError> {
        let ScopedDriver { tier, service, .. } = self;
        drop(service);
        match tier {
            DriverTier::Real { tier, db } => tier.pg.drop_database(*db).await,
            DriverTier::Sim { .. } => Ok(()),
        }
    }

    /// Performs one operation at simulated time `now`: the harness's steps here, every other
    /// step through the [`ScopedService`] exactly as the reference adapter performs it, with
    /// the scenario's skill names mapped to the hashes they were published under. `Err` is a
    /// harness or driver failure (not a refusal, which is an outcome).
    pub async fn call(&mut self, now: Timestamp, op: &ScopedOp) -> Result<ScopedOutcome, String> {
        if let ScopedOp::People {
            person,
            session,
            call,
        } = op
        {
            // Over real HTTP to the reference's people's files API, as for a program.
            let base = self.service.people_api().await?.base_url().to_string();
            return self
                .people
                .send(&base, now.as_millis(), person, session, call)
                .await;
        }
        if side(op) != Side::Harness {
            let out = self
                .service
                .call(now, &with_skill_hashes(op, &self.skills))
                .await?;
            if let (ScopedOp::PublishSkill { name, .. }, ScopedOutcome::Published { sha256 }) =
                (op, &out)
            {
                self.skills.insert(name.clone(), sha256.clone());
            }
            if let (ScopedOp::Person { person, .. }, ScopedOutcome::Credentials { headers }) =
                (op, &out)
            {
                self.people.remember(person, headers.clone());
                return Ok(ScopedOutcome::Ok);
            }
            return Ok(out);
        }
        match self.harness_step(now, op).await {
            Ok(o) => Ok(o),
            Err(Failure::Scoped(e)) => Ok(ScopedOutcome::Refused {
                reason: e.kind().to_string(),
                message: e.to_string(),
            }),
            Err(Failure::Harness(m)) => Err(m),
        }
    }

    /// The steps the harness performs on its own stores (PROTOCOL.md's harness side).
    async fn harness_step(
        &mut self,
        now: Timestamp,
        op: &ScopedOp,
    ) -> Result<ScopedOutcome, Failure> {
        let s = self.service.store();
        Ok(match op {
            ScopedOp::Restart => {
                self.service.restart().await?;
                ScopedOutcome::Ok
            }
            ScopedOp::Faults { .. } => {
                if let Some(plan) = fault_plan(op) {
                    self.tier.s3().faults().set_plan(plan);
                }
                ScopedOutcome::Ok
            }
            ScopedOp::Heal => {
                self.tier.s3().faults().heal();
                ScopedOutcome::Ok
            }
            ScopedOp::BucketKeys { prefix } => ScopedOutcome::Keys {
                keys: bucket_keys(&self.tier.s3().client(), &self.config.bucket, prefix)
                    .await
                    .map_err(Failure::Harness)?,
            },
            ScopedOp::PendingDeletions => ScopedOutcome::Prefixes {
                prefixes: s
                    .deletion_obligations()
                    .await?
                    .into_iter()
                    .filter(|o| o.done_at_ms.is_none())
                    .map(|o| o.prefix)
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            },
            ScopedOp::DeletionRecords => ScopedOutcome::Prefixes {
                prefixes: s
                    .deletion_records()
                    .await?
                    .into_iter()
                    .map(|r| r.prefix)
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            },
            ScopedOp::LifecycleRules => ScopedOutcome::Rules {
                rules: lifecycle_rules(&self.tier.s3().client(), &self.config.bucket)
                    .await
                    .map_err(Failure::Harness)?,
            },
            ScopedOp::RunAgeRule { prefix, days } => ScopedOutcome::Keys {
                keys: run_age_rule(
                    &self.tier.s3().client(),
                    &self.config.bucket,
                    prefix,
                    *days,
                    now,
                )
                .await
                .map_err(Failure::Harness)?,
            },
            ScopedOp::ErasureStates { workspace, agent } => ScopedOutcome::Erasures {
                states: self
                    .erasure_ledger()
                    .await?
                    .states(&subject_text(workspace, agent.as_deref()), now.as_millis())?,
            },
            ScopedOp::ErasureProof { workspace, agent } => ScopedOutcome::Keys {
                keys: self
                    .erasure_ledger()
                    .await?
                    .proof(&subject_text(workspace, agent.as_deref()), now.as_millis())?,
            },
            other => {
                return Err(Failure::Harness(format!(
                    "{} is not a harness step",
                    op_name(other)
                )))
            }
        })
    }
}

impl ScopedDriver {
    /// The erasure obligations and proofs as the reference keeps them: read with its declared
    /// queries from PostgreSQL (SL-4.7), or from the in-memory store on the simulation tier.
    async fn erasure_ledger(&self) -> Result<super::erasure::ErasureLedger, Failure> {
        Ok(match &self.tier {
            DriverTier::Real { db, .. } => {
                super::erasure::ErasureQueries::reference()
                    .read(&db.pool)
                    .await?
            }
            DriverTier::Sim { .. } => {
                super::erasure::ErasureLedger::of_metadata(self.meta.as_ref()).await?
            }
        })
    }
}

enum Failure {
    Scoped(ScopedError),
    Harness(String),
}

impl From<ScopedError> for Failure {
    fn from(e: ScopedError) -> Self {
        Failure::Scoped(e)
    }
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Harness(e)
    }
}

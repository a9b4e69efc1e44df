//! The bucket's lifecycle configuration (SPEC SC-7): validated, then put on the bucket.

use crate::s3_client::BucketLifecycle;
use crate::scoped::config::DEFAULT_TTL_DAYS;
use crate::scoped::error::ScopedError;
use crate::scoped::mutants::ScopedMutant;

use super::s3::must;
use super::ScopedStore;

impl ScopedStore {
    /// Validates the bucket's lifecycle configuration (the 1,000-rule cap, one filter per rule,
    /// no abort in a tag-filtered rule, a session backstop longer than the idle TTL) and puts
    /// it on the bucket. Nothing is sent if validation fails.
    pub async fn apply_lifecycle(
        &self,
        config: &crate::scoped::lifecycle::LifecycleConfiguration,
    ) -> Result<(), ScopedError> {
        let ttl_days = if self.is(ScopedMutant::BackstopCheckedAgainstDefaultTtl) {
            DEFAULT_TTL_DAYS
        } else {
            self.cfg.session_file_ttl_days
        };
        config
            .validate_for_ttl(ttl_days)
            .map_err(|e| ScopedError::Config(e.to_string()))?;
        let mut config = config.clone();
        if self.is(ScopedMutant::KeptClassesExpire) {
            let backstop = config.rules.iter().find_map(|r| r.expiration_days);
            for r in &mut config.rules {
                r.expiration_days = r.expiration_days.or(backstop);
            }
        }
        if self.is(ScopedMutant::LifecycleMerged) {
            // Keeps what the bucket has and adds this configuration's rules, with ids made
            // unique by the backstop they carry.
            let mut rules = self
                .send(|| self.s3.get_bucket_lifecycle(&self.cfg.bucket))
                .await
                .map(|got| got.rules)
                .unwrap_or_default();
            for mut r in BucketLifecycle::from_configuration(&config).rules {
                let days = r.expiration.as_ref().and_then(|e| e.days).unwrap_or(0);
                r.id = Some(format!("{}-{days}", r.id.unwrap_or_default()));
                if !rules.iter().any(|k| k.id == r.id) {
                    rules.push(r);
                }
            }
            let merged = BucketLifecycle { rules };
            return self
                .send(|| self.s3.put_bucket_lifecycle(&self.cfg.bucket, &merged))
                .await
                .map_err(|e| {
                    must(
                        "PutBucketLifecycleConfiguration",
                        &self.cfg.bucket,
                        self.mutant(),
                        e,
                    )
                });
        }
        let lifecycle = BucketLifecycle::from_configuration(&config);
        self.send(|| self.s3.put_bucket_lifecycle(&self.cfg.bucket, &lifecycle))
            .await
            .map_err(|e| {
                must(
                    "PutBucketLifecycleConfiguration",
                    &self.cfg.bucket,
                    self.mutant(),
                    e,
                )
            })?;
        Ok(())
    }
}

//! The bucket's lifecycle configuration (SPEC SC-7): validated, then put on the bucket.

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
            let kept = self
                .send(|| {
                    self.s3
                        .get_bucket_lifecycle_configuration()
                        .bucket(&self.cfg.bucket)
                        .send()
                })
                .await
                .map(|got| got.rules().to_vec())
                .unwrap_or_default();
            let mut aws = crate::scoped::lifecycle::to_aws(&config).map_err(ScopedError::Config)?;
            let mut rules = kept;
            for mut r in aws.rules().to_vec() {
                let days = r.expiration().and_then(|e| e.days()).unwrap_or(0);
                r.id = Some(format!("{}-{days}", r.id().unwrap_or_default()));
                if !rules.iter().any(|k| k.id() == r.id()) {
                    rules.push(r);
                }
            }
            aws = aws_sdk_s3::types::BucketLifecycleConfiguration::builder()
                .set_rules(Some(rules))
                .build()
                .map_err(|e| ScopedError::Config(e.to_string()))?;
            return self
                .send(|| {
                    self.s3
                        .put_bucket_lifecycle_configuration()
                        .bucket(&self.cfg.bucket)
                        .lifecycle_configuration(aws.clone())
                        .send()
                })
                .await
                .map(|_| ())
                .map_err(|e| {
                    must(
                        "PutBucketLifecycleConfiguration",
                        &self.cfg.bucket,
                        self.mutant(),
                        e,
                    )
                });
        }
        let aws = crate::scoped::lifecycle::to_aws(&config).map_err(ScopedError::Config)?;
        self.send(|| {
            self.s3
                .put_bucket_lifecycle_configuration()
                .bucket(&self.cfg.bucket)
                .lifecycle_configuration(aws.clone())
                .send()
        })
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

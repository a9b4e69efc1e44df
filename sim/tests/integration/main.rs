//! The sim crate's integration tests, one module per subject, in one test binary (each test
//! binary links the S3 and PostgreSQL clients again: about 9 s of build CPU apiece). Two stay
//! binaries of their own because they set environment variables, which every thread of a
//! process shares: `real_tier_no_postgres` and `real_tier_pg_template`.

mod lifecycle_aws;
mod metadata_differential;
mod policy_races;
mod real_tier_container;
mod real_tier_keys;
mod real_tier_lifecycle;
mod real_tier_memory;
mod real_tier_pg_pool;
mod real_tier_rows;
mod real_tier_smoke;
mod real_tier_sweep_scale;
mod real_tier_two_sweepers;
mod support;
mod turmoil_s3;

//! Deterministic simulation for Tidemark: the virtual clock, one master seed, and traces with
//! stable hashes. Later tiers (turmoil worlds, seeded faults) build on these three.

pub mod clip;
pub mod clock;
pub mod confine;
pub mod contain;
pub mod seed;
pub mod spec_rules;
pub mod trace;

pub mod guard;
pub mod lifecycle;
pub mod owner;
pub mod real_tier;
pub mod reap;
pub mod scenario_files;
pub mod turmoil_s3;

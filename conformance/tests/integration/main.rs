//! The conformance crate's integration tests, one module per subject, in one test binary: each
//! test binary links sqlx, s3s, turmoil and the S3 client again, about 9 s of build CPU apiece on
//! this project's 2-core machines (measured when the client was aws-sdk-s3), so the files are modules here rather than binaries of their
//! own (`cargo test --test integration <module>::` runs one file's tests). The suites whose
//! every scenario, mutant and saved failure is its own named test are in `tests/suites/`.

mod browser_check;
mod container_runs;
mod expectations;
mod exploration;
mod explore_known;
mod hostile_inputs;
mod hostile_inputs_loaders;
mod hostile_inputs_numbers;
mod hostile_inputs_survivors;
mod interrupted_runs;
mod malformed_scenarios;
mod module_circles;
mod parser_fuzz;
mod people_client;
mod policy_sweep;
mod process_erasure;
mod process_explore;
mod process_gate;
mod process_misbehaving;
mod process_names;
mod process_protocol_schema;
mod process_python;
mod process_reference;
mod process_rows;
mod process_scoped;
mod real_tier_cleanup;
mod real_tier_driver;
mod real_tier_scoped;
mod real_tier_scoped_faults;
mod real_tier_scoped_model;
mod real_tier_scoped_retention;
mod reports;
mod rows_exploration;
mod rows_world;
mod run_in_process;
mod sandbox;
mod scoped_uuid_ids;
mod scoped_world;
mod strict_harness;
mod support;
mod test_tiers;
mod workspace_retention_scale;
mod world;

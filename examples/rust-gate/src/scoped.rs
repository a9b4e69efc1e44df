//! The glue between the scoped profile and a Rust implementation: a [`ScopedImplementation`]
//! that starts an instance over the bucket and database the harness hands over, and answers
//! each request. The gate is one call in `tests/scoped_conformance.rs`.
//!
//! The implementation here is the reference (`tidemark_conformance::profiles::scoped::process::service::ScopedService`)
//! standing in for yours: replace it with your type and map each [`ScopedOp`] onto its API.
//! Two things to keep:
//!
//! - **Time is an input.** Each request carries `now_ms`; your code must read no other clock.
//! - **A restart is a crash.** The harness drops your instance without a word and starts a new
//!   one with the same init: what you persisted to S3 and PostgreSQL is all it gets.

use futures::future::BoxFuture;
use tidemark_conformance::profiles::scoped::contract::{
    CRASH_POINTS, PEOPLE_API, WRITE_DURING_SWEEP, WRITTEN_AT_STAMP,
};
use tidemark_conformance::profiles::scoped::gate::{ScopedImplementation, ScopedInstance};
use tidemark_conformance::profiles::scoped::ledger::LedgerQueries;
use tidemark_conformance::profiles::scoped::process::service::{S3Access, ScopedService};
use tidemark_conformance::profiles::scoped::{ScopedOp, ScopedOutcome};
use tidemark_conformance::protocol::Init;
use tidemark_reference::clock::Timestamp;

/// Declares what the implementation has, and starts instances.
pub struct MyScoped;

impl ScopedImplementation for MyScoped {
    fn name(&self) -> String {
        "my-scoped".into()
    }

    fn capabilities(&self) -> Vec<String> {
        // Claim only what is true: scenarios needing an unclaimed one are ignored tests.
        vec![
            CRASH_POINTS.into(),
            WRITE_DURING_SWEEP.into(),
            WRITTEN_AT_STAMP.into(),
            // It serves the people's files API (SPEC part SF) on loopback: see `people_api`.
            PEOPLE_API.into(),
        ]
    }

    fn start<'a>(
        &'a self,
        init: &'a Init,
    ) -> BoxFuture<'a, Result<Box<dyn ScopedInstance>, String>> {
        Box::pin(async move {
            let s3 = init
                .s3
                .as_ref()
                .ok_or("the init hands over no S3 endpoint")?;
            let url = init
                .postgres_url
                .as_deref()
                .ok_or("the init hands over no PostgreSQL database")?;
            let access = S3Access::from(s3);
            let mut service = ScopedService::open(&access, url, &init.knobs, None).await?;
            // The people's files API, on a loopback port of its own; its URL is `people_api`.
            service.people_api().await?;
            Ok(Box::new(MyInstance(service)) as Box<dyn ScopedInstance>)
        })
    }
}

struct MyInstance(ScopedService);

impl ScopedInstance for MyInstance {
    fn call<'a>(
        &'a mut self,
        now_ms: i64,
        op: &'a ScopedOp,
    ) -> BoxFuture<'a, Result<ScopedOutcome, String>> {
        Box::pin(self.0.call(Timestamp(now_ms), op))
    }

    fn ledger(&self) -> Option<LedgerQueries> {
        // The reference keeps its ledger in SC-6.6's default tables: nothing to declare.
        None
    }

    fn people_api(&self) -> Option<String> {
        self.0.people_base_url().map(str::to_string)
    }
}

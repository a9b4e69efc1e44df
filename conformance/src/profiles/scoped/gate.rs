//! The one call a Rust scoped implementation makes from its own `tests/conformance.rs`
//! (`harness = false`): every `scenarios/scoped/*.tdm` scenario becomes its own test, played
//! exactly as `tidemark run --impl` plays it through the protocol, without a process.
//!
//! The harness still provides everything per scenario (its own S3 server, bucket and a fresh
//! PostgreSQL database, from `DATABASE_URL` or an ephemeral cluster) and hands it over in the
//! same [`Init`] a program gets; it still performs its own steps (faults, bucket listings, the
//! ledger read with the queries the implementation declares). A crash is the instance dropped
//! without a word and a new one started over the same bucket and database.
//!
//! ```no_run
//! // tests/conformance.rs of a Rust scoped implementation
//! # struct MyScoped;
//! # impl tidemark_conformance::profiles::scoped::gate::ScopedImplementation for MyScoped {
//! #     fn name(&self) -> String { unimplemented!() }
//! #     fn start<'a>(&'a self, _: &'a tidemark_conformance::protocol::Init)
//! #         -> futures::future::BoxFuture<'a, Result<Box<dyn tidemark_conformance::profiles::scoped::gate::ScopedInstance>, String>> { unimplemented!() }
//! # }
//! fn main() {
//!     tidemark_conformance::profiles::scoped::gate::run_as_tests(MyScoped);
//! }
//! ```

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::{ScopedOp, ScopedOutcome};
use crate::profiles::scoped::script::Script;
use futures::future::BoxFuture;
use libtest_mimic::{Arguments, Failed, Trial};
use tidemark_sim::real_tier::PgProvider;
use tidemark_sim::trace::Trace;

use super::ledger::LedgerQueries;
use super::process::{self, Endpoint};
use crate::driver::DriverError;
use crate::protocol::Init;

/// A scoped implementation, as a Rust value.
pub trait ScopedImplementation: Send + Sync + 'static {
    /// A name for reports.
    fn name(&self) -> String;

    /// Optional behaviours it has (`crash_points`, `write_during_sweep`: PROTOCOL.md,
    /// "Capabilities"); a scenario needing one it lacks is an ignored test, never a failure.
    fn capabilities(&self) -> Vec<String> {
        Vec::new()
    }

    /// The SPEC.md variants it takes (PROTOCOL.md: `init_ok`'s `variants`); the scenarios
    /// follow them. Default: every variant at its default.
    fn variants(&self) -> crate::variants::Declared {
        crate::variants::Declared::defaults()
    }

    /// How it spells the extracted-text area under a scope's prefix (SC-1.4; PROTOCOL.md:
    /// `init_ok`'s `text_segment`). Default: the reference's, `.tidemark-text`.
    fn text_segment(&self) -> String {
        super::text_segment::DEFAULT.into()
    }

    /// Starts an instance over what `init` hands over (its `s3` and `postgres_url`, its knobs),
    /// at the start of a scenario and again after each crash.
    fn start<'a>(
        &'a self,
        init: &'a Init,
    ) -> BoxFuture<'a, Result<Box<dyn ScopedInstance>, String>>;
}

/// One running instance.
pub trait ScopedInstance: Send {
    /// Answers one request (the same bodies as PROTOCOL.md's scoped requests) at `now_ms`, the
    /// simulated time. An `Err` is the implementation failing, reported at the step.
    fn call<'a>(
        &'a mut self,
        now_ms: i64,
        op: &'a ScopedOp,
    ) -> BoxFuture<'a, Result<ScopedOutcome, String>>;

    /// The read-only queries for its ledger, if it keeps it outside SC-6.6's default tables.
    fn ledger(&self) -> Option<LedgerQueries> {
        None
    }

    /// The read-only queries for its erasure obligations and proofs (SPEC SL-4.7), which an
    /// implementation claiming `erasure_obligations` declares.
    fn erasure(&self) -> Option<super::erasure::ErasureQueries> {
        None
    }

    /// The base URL of its people's files API (SPEC part SF; PROTOCOL.md: `init_ok`'s
    /// `people_api`), if it serves one (and claims the `people_api` capability).
    fn people_api(&self) -> Option<String> {
        None
    }
}

/// An implementation being played: the running instance and how to start another.
struct InProcess<'a> {
    implementation: &'a dyn ScopedImplementation,
    init: Init,
    instance: Option<Box<dyn ScopedInstance>>,
}

impl<'a> InProcess<'a> {
    async fn start(
        implementation: &'a dyn ScopedImplementation,
        init: Init,
    ) -> Result<InProcess<'a>, String> {
        let instance = implementation.start(&init).await?;
        Ok(InProcess {
            implementation,
            init,
            instance: Some(instance),
        })
    }
}

impl Endpoint for InProcess<'_> {
    async fn call(&mut self, now_ms: i64, op: &ScopedOp) -> Result<ScopedOutcome, DriverError> {
        let instance = self
            .instance
            .as_mut()
            .ok_or_else(|| DriverError("a request arrived while no instance was running".into()))?;
        instance.call(now_ms, op).await.map_err(DriverError)
    }

    async fn restart(&mut self) -> Result<(), DriverError> {
        // Dropped first: nothing of the old instance may serve the new one.
        self.instance = None;
        self.instance = Some(
            self.implementation
                .start(&self.init)
                .await
                .map_err(DriverError)?,
        );
        Ok(())
    }

    fn ledger(&self) -> Result<Option<LedgerQueries>, String> {
        Ok(self.instance.as_ref().and_then(|i| i.ledger()))
    }

    fn erasure(&self) -> Result<Option<super::erasure::ErasureQueries>, String> {
        Ok(self.instance.as_ref().and_then(|i| i.erasure()))
    }

    fn people_api(&self) -> Result<Option<String>, String> {
        Ok(self.instance.as_ref().and_then(|i| i.people_api()))
    }

    async fn stop(&mut self) {
        self.instance = None;
    }
}

/// One runtime and one PostgreSQL for every trial of the test binary: trials run on libtest's
/// threads and block on this runtime, which owns the provider's connections.
struct Shared {
    runtime: tokio::runtime::Runtime,
    pg: tokio::sync::Mutex<Option<Arc<PgProvider>>>,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| Shared {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime for the scoped gate"),
        pg: tokio::sync::Mutex::new(None),
    })
}

/// The shared PostgreSQL, started by the first trial that needs it.
async fn postgres(shared: &Shared) -> Result<Arc<PgProvider>, String> {
    let mut pg = shared.pg.lock().await;
    if let Some(pg) = pg.as_ref() {
        return Ok(pg.clone());
    }
    let started = PgProvider::from_environment()
        .await
        .map_err(|e| format!("no PostgreSQL for the scoped suite: {e}"))?;
    Ok(pg.insert(Arc::new(started)).clone())
}

/// Stops the shared PostgreSQL (an ephemeral cluster and its directory go with it): statics
/// are never dropped, so without this every run of the gate would leave its cluster behind.
fn shutdown() {
    let shared = shared();
    shared.runtime.block_on(async {
        let pg = shared.pg.lock().await.take();
        drop(pg);
    });
}

/// Plays one scenario against `implementation`, as it declares itself (the steps its variants
/// keep, its text area's spelling); `Err` is the failure as a person reads it.
pub async fn play(
    implementation: &dyn ScopedImplementation,
    pg: Arc<PgProvider>,
    script: &Script,
) -> Result<(), String> {
    let mut trace = Trace::new();
    let played = script
        .as_played_by(&implementation.variants())
        .with_text_segment(&implementation.text_segment());
    let script = &played;
    process::play_with(pg, script, &mut trace, async |_: PathBuf, init: Init| {
        InProcess::start(implementation, init).await
    })
    .await
    .map_err(|f| {
        format!(
            "{}:{}: {}\n  expected: {}\n  actual:   {}\n  replay:   cargo test -- --exact {}\n  trace tail:\n    {}",
            crate::report::display_path(&script.file),
            f.line,
            f.step,
            f.expected,
            f.actual.replace('\n', "\n            "),
            script.test_name(),
            trace.tail(8).join("\n    ")
        )
    })
}

/// The scoped suite as libtest-mimic trials for `implementation`: one test per scenario, named
/// by its test name (`scoped::files_live_under_scope_first_keys`), played with the steps its
/// declared variants keep; a scenario needing a capability the implementation lacks, or about a
/// variant's choice it does not take, is an ignored test.
pub fn trials(implementation: impl ScopedImplementation) -> Result<Vec<Trial>, String> {
    let scripts = process::load(
        &crate::default_scenarios_dir().join(process::PROFILE),
        &[],
        &crate::default_spec_path(),
    )?;
    let implementation: Arc<dyn ScopedImplementation> = Arc::new(implementation);
    let capabilities = implementation.capabilities();
    let declared = implementation.variants();
    let text_segment = implementation.text_segment();
    if let Err(why) = super::text_segment::check(&text_segment) {
        return Err(format!("text_segment {text_segment:?} {why}"));
    }
    Ok(scripts
        .into_iter()
        .map(|script| {
            // `play` reads the scenario as the implementation declares itself.
            let ignored = script.skip_reason(&declared).is_some()
                || process::missing_capability(&capabilities, &script.as_played_by(&declared))
                    .is_some();
            let implementation = implementation.clone();
            Trial::test(script.test_name(), move || {
                let shared = shared();
                shared.runtime.block_on(async {
                    let pg = postgres(shared).await.map_err(Failed::from)?;
                    play(&*implementation, pg, &script)
                        .await
                        .map_err(Failed::from)
                })
            })
            .with_ignored_flag(ignored)
        })
        .collect())
}

/// The one call: every scoped scenario against `implementation`, each its own test; parses the
/// test binary's arguments and exits with libtest's status.
pub fn run_as_tests(implementation: impl ScopedImplementation) -> ! {
    let args = Arguments::from_args();
    match trials(implementation) {
        Ok(trials) => {
            let conclusion = libtest_mimic::run(&args, trials);
            shutdown();
            conclusion.exit()
        }
        Err(e) => {
            eprintln!("the scoped suite does not load: {e}");
            std::process::exit(101)
        }
    }
}

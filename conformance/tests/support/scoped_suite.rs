//! What the scoped scenario test binaries (`real_tier_scenarios`, `sim_tier_scenarios`) set up
//! alike: the suite loaded (or the binary exits 101 naming the file and line), one runtime, and
//! one PostgreSQL for the run, started only when a test first needs it and stopped before the
//! binary exits (libtest-mimic's exit skips destructors).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use libtest_mimic::{Arguments, Failed, Trial};
use tidemark_conformance::profiles::scoped::script::{self, Script};
use tidemark_sim::real_tier::PgProvider;

pub struct ScopedSuite {
    pub scripts: Vec<Script>,
    pub rt: Arc<tokio::runtime::Runtime>,
    pg: Arc<OnceLock<Result<Arc<PgProvider>, String>>>,
}

impl ScopedSuite {
    pub fn load() -> ScopedSuite {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/scoped");
        let scripts = match script::load_dir(&dir) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("the scoped scenarios do not load: {e}");
                std::process::exit(101);
            }
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        ScopedSuite {
            scripts,
            rt: Arc::new(rt),
            pg: Arc::new(OnceLock::new()),
        }
    }

    /// The run's PostgreSQL, for a trial to call: each scenario gets its own database on it and
    /// its own S3 server, so one scenario's faults never reach another.
    pub fn postgres(
        &self,
    ) -> impl Fn() -> Result<Arc<PgProvider>, Failed> + Clone + Send + 'static {
        let (rt, pg) = (self.rt.clone(), self.pg.clone());
        move || {
            pg.get_or_init(|| {
                rt.block_on(PgProvider::from_environment())
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(Failed::from)
        }
    }

    /// Runs the trials, stops PostgreSQL, and exits with libtest's status.
    pub fn run(self, args: &Arguments, trials: Vec<Trial>) -> ! {
        let conclusion = libtest_mimic::run(args, trials);
        drop(self);
        conclusion.exit()
    }
}

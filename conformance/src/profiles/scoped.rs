//! The scoped profile for `tidemark run` and `tidemark mutants`: its scenarios
//! (`scenarios/scoped/*.tdms`) run against the reference implementation on the real tier
//! (s3s-fs over loopback HTTP through aws-sdk-s3, and a real PostgreSQL from `DATABASE_URL`, an
//! ephemeral cluster, or a clear error naming every source tried). One PostgreSQL for the run;
//! each scenario gets its own database and its own S3 server, so its faults stay its own.
//!
//! The scenario format, the driver and the runner live in `tidemark_sim::real_tier`
//! (`script`, `scoped_driver`); this module is the CLI's entry point to them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tidemark_reference::scoped::ScopedMutant;
use tidemark_sim::real_tier::script::{self, ScriptResult};
use tidemark_sim::real_tier::{PgProvider, PgSourceKind};

/// `scenarios/scoped` under the repository root.
pub fn scenarios_dir() -> PathBuf {
    crate::spec::repo_root().join("scenarios/scoped")
}

/// A finished run of the scoped scenarios.
pub struct ScopedRun {
    pub results: Vec<ScriptResult>,
    /// Where PostgreSQL came from, for the report.
    pub postgres: String,
    /// Time to have PostgreSQL answering (an ephemeral cluster's initdb and start).
    pub postgres_start: Duration,
    pub total: Duration,
}

impl ScopedRun {
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.failure.is_none()).count()
    }
    pub fn failed(&self) -> usize {
        self.results.len() - self.passed()
    }
}

/// One PostgreSQL for a run, where it came from, and how long it took to answer.
pub async fn postgres() -> Result<(Arc<PgProvider>, String, Duration), String> {
    let t = Instant::now();
    let pg = PgProvider::from_environment()
        .await
        .map_err(|e| e.to_string())?;
    let source = match pg.kind() {
        PgSourceKind::DatabaseUrl => "DATABASE_URL".to_string(),
        PgSourceKind::EphemeralCluster { bin_dir } => {
            format!("ephemeral cluster from {}", bin_dir.display())
        }
    };
    Ok((Arc::new(pg), source, t.elapsed()))
}

/// Runs the scoped scenarios whose test name contains `filter` (all when `None`).
pub async fn run(dir: &Path, filter: Option<&str>) -> Result<ScopedRun, String> {
    let start = Instant::now();
    let scripts: Vec<_> = script::load_dir(dir)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|s| filter.is_none_or(|f| s.test_name().contains(f)))
        .collect();
    let (pg, postgres, postgres_start) = postgres().await?;
    let results = script::run_suite(pg, &scripts, None).await;
    Ok(ScopedRun {
        results,
        postgres,
        postgres_start,
        total: start.elapsed(),
    })
}

/// One scoped mutant and the scenario that killed it.
#[derive(Clone, Debug)]
pub struct ScopedMutantResult {
    pub id: &'static str,
    pub description: &'static str,
    pub killed_by: Option<String>,
}

/// Runs every scoped mutant (or only `only`) against the scenarios that name it in `kills:`.
pub async fn mutants(dir: &Path, only: Option<&str>) -> Result<Vec<ScopedMutantResult>, String> {
    let scripts = script::load_dir(dir).map_err(|e| e.to_string())?;
    let (pg, _, _) = postgres().await?;
    let mut out = Vec::new();
    for m in ScopedMutant::ALL {
        if only.is_some_and(|o| o != m.id()) {
            continue;
        }
        let mut killed_by = None;
        for s in scripts
            .iter()
            .filter(|s| s.kills.iter().any(|k| k == m.id()))
        {
            if script::run(pg.clone(), s, Some(m)).await.is_err() {
                killed_by = Some(s.test_name());
                break;
            }
        }
        out.push(ScopedMutantResult {
            id: m.id(),
            description: m.description(),
            killed_by,
        });
    }
    Ok(out)
}

/// Report lines in the shape of the scratchpad's: one per scenario, failures with their step.
pub fn report(run: &ScopedRun) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for r in &run.results {
        match &r.failure {
            None => {
                let _ = writeln!(s, "PASS  {}", r.test_name);
            }
            Some(f) => {
                let _ = writeln!(
                    s,
                    "FAIL  {}  ({})\n  {}:{f}",
                    r.test_name,
                    r.name,
                    r.file.display()
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "scoped: PostgreSQL from {} (ready in {:.2?}); {} scenarios in {:.2?}",
        run.postgres,
        run.postgres_start,
        run.results.len(),
        run.total
    );
    s
}

/// Mutant table lines in the shape of the scratchpad's.
pub fn mutant_table(results: &[ScopedMutantResult]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let width = results.iter().map(|r| r.id.len()).max().unwrap_or(0);
    for r in results {
        match &r.killed_by {
            Some(k) => {
                let _ = writeln!(s, "KILLED    {:<11} {:<width$}  by {k}", "scoped", r.id);
            }
            None => {
                let _ = writeln!(
                    s,
                    "SURVIVED  {:<11} {:<width$}  {}: no scenario fails",
                    "scoped", r.id, r.description
                );
            }
        }
    }
    s
}

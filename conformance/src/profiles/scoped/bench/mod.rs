//! The scoped profile's `tidemark bench` figures. Timings come from the wall clock here on
//! purpose: they are measurements, never inputs to a decision.

pub mod retention;

use std::time::Instant;

/// The scoped profile's figures, measured side by side in one run: exploration seeds per second
/// on the memory tier and on the PostgreSQL tier over the same seeds, their ratio, and the wall
/// time of the scoped suite (as `tidemark run --profile scoped` runs it, PostgreSQL's start
/// included), the people's files API's requests per second, and the retention figures
/// ([`retention`]).
pub fn scoped(seeds: u64, jobs: std::num::NonZeroUsize) -> Result<String, String> {
    use crate::explore::engine::explore_seeds;
    use crate::profiles::scoped::explore::ScopedExplorer;
    use crate::profiles::scoped::model::Tier;
    use std::fmt::Write;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))?;
    rt.block_on(async {
        let mut s = String::new();
        let scripts = crate::profiles::scoped::script::load_dir(
            &crate::profiles::scoped::scenarios_dir(),
        )
        .map_err(|e| e.to_string())?;
        let started = Instant::now();
        let cases = crate::profiles::scoped::check_in_process(
            &scripts,
            jobs,
            None,
            &crate::variants::Declared::defaults(),
        )
        .await?;
        let suite = started.elapsed();
        let failed = cases
            .iter()
            .filter(|c| !matches!(c.verdict, crate::report::Verdict::Passed))
            .count();
        if failed > 0 {
            return Err(format!("{failed} scoped scenario(s) failed; run tidemark run --profile scoped"));
        }
        let (pg, source, ready) = crate::profiles::scoped::postgres().await?;
        let mut per_second = Vec::new();
        for tier in [Tier::Memory, Tier::Postgres(&pg)] {
            let explorer = ScopedExplorer {
                tier,
                variants: crate::variants::Declared::defaults(),
            };
            let run = explore_seeds(&explorer, 0..seeds, None, 0, jobs.get(), &|| {}).await;
            if !run.failures.is_empty() {
                return Err(format!(
                    "{} scoped seed(s) failed on the {} tier; run tidemark explore --profile scoped",
                    run.failures.len(),
                    tier.name()
                ));
            }
            per_second.push(seeds as f64 / run.elapsed.as_secs_f64().max(1e-9));
        }
        let people = people_api(REQUESTS).await?;
        let retention = retention::figures().await?;
        let _ = writeln!(
            s,
            "scoped suite: {} scenarios in {:.2} s (--jobs {jobs}, PostgreSQL's start included)",
            cases.len(),
            suite.as_secs_f64()
        );
        let _ = writeln!(
            s,
            "scoped explore, seeds 0..{seeds}, --jobs {jobs}: memory tier {:.1} seeds/s, PostgreSQL tier {:.1} seeds/s ({source}, ready in {:.2} s): {:.0}% of the memory tier",
            per_second[0],
            per_second[1],
            ready.as_secs_f64(),
            100.0 * per_second[1] / per_second[0]
        );
        let _ = writeln!(s, "{people}");
        let _ = writeln!(s, "{retention}");
        Ok(s)
    })
}

/// Requests per kind the people's files API figure sends.
const REQUESTS: usize = 300;

/// Requests per second of the reference's people's files API (SPEC part SF) over loopback HTTP,
/// one at a time as a scenario sends them, by kind: the harness's client, axum and hyper, and
/// the store on the simulation tier's stores (the in-memory S3 over loopback HTTP, in-memory
/// metadata), so a request's figure includes its S3 round trips.
async fn people_api(n: usize) -> Result<String, String> {
    use crate::profiles::scoped::contract::{PeopleCall, ScopedOp, Turn};
    use crate::profiles::scoped::reference::ScopedDriver;
    use tidemark_reference::clock::Timestamp;
    let mut d = ScopedDriver::start_sim(
        None,
        &crate::variants::Declared::defaults(),
        &std::collections::BTreeMap::new(),
        0,
    )
    .await
    .map_err(|e| e.to_string())?;
    let now = tidemark_sim::clock::EPOCH;
    let turn = Turn::new("w1", "a1", "s1");
    for op in [
        ScopedOp::CreateWorkspace {
            workspace: "w1".into(),
            agent_access: None,
            workspace_access: None,
        },
        ScopedOp::CreateAgent {
            workspace: "w1".into(),
            agent: "a1".into(),
            agent_access: None,
            workspace_access: None,
        },
        ScopedOp::CreateSession { turn },
        ScopedOp::Person {
            person: "alice".into(),
            workspace: "w1".into(),
            agent_files: None,
            workspace_files: None,
            sessions: vec!["s1".into()],
        },
    ] {
        d.call(now, &op).await?;
    }
    let mut rates = Vec::new();
    for (kind, call) in [
        (
            "upload",
            PeopleCall::Upload {
                url_path: "session/report.txt".into(),
                content: "x".repeat(1024),
            },
        ),
        (
            "download",
            PeopleCall::Download {
                url_path: "session/report.txt".into(),
            },
        ),
        ("listing", PeopleCall::List),
    ] {
        let op = ScopedOp::People {
            person: "alice".into(),
            session: "s1".into(),
            call,
        };
        let started = Instant::now();
        for i in 0..n {
            let out = d
                .call(Timestamp::from_millis(now.as_millis() + i as i64), &op)
                .await?;
            if let crate::profiles::scoped::ScopedOutcome::Refused { reason, .. } = out {
                return Err(format!("a people's {kind} was refused {reason}"));
            }
        }
        rates.push(format!(
            "{kind} {:.0}/s",
            n as f64 / started.elapsed().as_secs_f64().max(1e-9)
        ));
    }
    let _ = d.finish().await;
    Ok(format!(
        "people's files API over loopback HTTP ({n} sequential requests each, 1 KiB files, simulation-tier stores): {}",
        rates.join(", ")
    ))
}

//! The reference implementation behind the `tidemark/1` protocol (PROTOCOL.md).
//!
//! Scratchpad: it drives the very same in-process driver `tidemark run` uses, so the suite
//! passing through `tidemark run --impl target/debug/tidemark-reference-adapter` proves the
//! process path adds nothing and loses nothing. Scoped: a `ScopedStore` on the bucket and
//! database the harness hands over in `init`, its clock set from each request's `now_ms`; it
//! claims the `crash_points` and `write_during_sweep` capabilities (and, for the scratchpad,
//! `sp12_digest` and `binary_content`). Rows: a `RowsStore` on the database handed over in
//! `init`, in the reference's own `tidemark_rows` schema (so it declares no queries), each
//! request answered as the in-process runner's endpoint answers it (`contract::answer`).
//! `--mutant <id>` switches on one mutant of any catalogue, so the process path can be shown to
//! catch a real bug too.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use tidemark_conformance::profiles::rows::contract::{ReferenceRows, RowsOp};
use tidemark_conformance::profiles::scoped::remote::{self, S3Access, ScopedService};
use tidemark_conformance::profiles::scoped::ScopedOp;
use tidemark_conformance::profiles::scratchpad::driver::{Driver, DriverFactory, Environment};
use tidemark_conformance::profiles::scratchpad::scenario::{Knobs, Profile};
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::protocol::{
    ErrorReply, FromImplementation, Init, InitOk, Reply, RequestEnvelope, ToImplementation,
    PROTOCOL,
};
use tidemark_reference::clock::Timestamp;
use tidemark_reference::rows::{RowsConfig, RowsMutant, RowsStore};
use tidemark_reference::scoped::ScopedMutant;
use tidemark_reference::scratchpad::ScratchpadMutant;

/// The scoped and rows profiles' names, and the optional behaviours this adapter has.
const SCOPED: &str = "scoped";
const ROWS: &str = "rows";
/// Scoped: the crash points and the raced write. Scratchpad: SP-1.2's recommended digest and
/// binary content (the in-process reference claims the same). Rows: a reap's batch size and
/// crash fault.
const CAPABILITIES: [&str; 5] = [
    remote::CRASH_POINTS,
    remote::WRITE_DURING_SWEEP,
    "sp12_digest",
    "binary_content",
    tidemark_conformance::profiles::rows::contract::REAP_BATCHES,
];

/// A mutant of one of the three catalogues.
#[derive(Clone, Copy, Default)]
struct Mutants {
    scratchpad: Option<ScratchpadMutant>,
    scoped: Option<ScopedMutant>,
    rows: Option<RowsMutant>,
}

/// The implementation a scenario's init selected.
enum Serving {
    /// A probe: no profile yet.
    Nothing,
    Scratchpad(Box<dyn Driver>),
    Scoped(Box<ScopedService>),
    Rows(Box<ReferenceRows>),
}

fn main() -> ExitCode {
    let mutants = match parse_args() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("tidemark-reference-adapter: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match rt.block_on(serve(mutants)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tidemark-reference-adapter: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args() -> Result<Mutants, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(Mutants::default()),
        [flag, id] if flag == "--mutant" => {
            if let Some(m) = ScratchpadMutant::from_id(id) {
                return Ok(Mutants {
                    scratchpad: Some(m),
                    ..Mutants::default()
                });
            }
            if let Some(m) = ScopedMutant::from_id(id) {
                return Ok(Mutants {
                    scoped: Some(m),
                    ..Mutants::default()
                });
            }
            if let Some(m) = RowsMutant::from_id(id) {
                return Ok(Mutants {
                    rows: Some(m),
                    ..Mutants::default()
                });
            }
            let ids: Vec<_> = ScratchpadMutant::ALL
                .iter()
                .map(|m| m.id())
                .chain(ScopedMutant::ALL.iter().map(|m| m.id()))
                .chain(RowsMutant::ALL.iter().map(|m| m.id()))
                .collect();
            Err(format!(
                "no mutant {id:?}; the catalogues have {}",
                ids.join(", ")
            ))
        }
        _ => Err("usage: tidemark-reference-adapter [--mutant <id>]".into()),
    }
}

/// Answers lines from stdin until it closes. A line it cannot understand is a harness bug: it
/// says so on stderr and exits, which the harness reports.
async fn serve(mutants: Mutants) -> Result<(), String> {
    let factory = ReferenceScratchpad {
        mutant: mutants.scratchpad,
    };
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut serving = Serving::Nothing;
    for line in stdin.lines() {
        let line = line.map_err(|e| format!("cannot read stdin: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        // The body's meaning depends on the profile of the init, so it is read after the envelope.
        let message: ToImplementation<serde_json::Value> = serde_json::from_str(&line)
            .map_err(|e| format!("not a {PROTOCOL} message ({e}): {line}"))?;
        let mut out = match message {
            ToImplementation::Init(init) => {
                line_of(&match start(&factory, mutants, &init).await {
                    Ok(s) => {
                        serving = s;
                        FromImplementation::<()>::InitOk(InitOk {
                            in_reply_to: init.id,
                            protocol: PROTOCOL.into(),
                            implementation: factory.name(),
                            profiles: vec![
                                Profile::Scratchpad.name().into(),
                                SCOPED.into(),
                                ROWS.into(),
                            ],
                            capabilities: CAPABILITIES.iter().map(|c| c.to_string()).collect(),
                            // SC-6.6's own tables and the rows reference's own schema: the
                            // defaults need no declaration.
                            declared: Default::default(),
                        })
                    }
                    Err(message) => FromImplementation::Error(ErrorReply {
                        in_reply_to: init.id,
                        message,
                    }),
                })
            }
            ToImplementation::Request(r) => answer(&mut serving, r).await,
        };
        out.push(b'\n');
        stdout
            .write_all(&out)
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write stdout: {e}"))?;
    }
    Ok(())
}

fn line_of<O: serde::Serialize>(message: &FromImplementation<O>) -> Vec<u8> {
    serde_json::to_vec(message).expect("protocol messages always serialise")
}

/// One request, answered by the implementation the init selected, as the line to print.
async fn answer(serving: &mut Serving, r: RequestEnvelope<serde_json::Value>) -> Vec<u8> {
    let now = Timestamp::from_millis(r.now_ms);
    let error = |message: String| {
        line_of(&FromImplementation::<()>::Error(ErrorReply {
            in_reply_to: r.id,
            message,
        }))
    };
    fn reply<O: serde::Serialize>(id: u64, body: O) -> Vec<u8> {
        line_of(&FromImplementation::Reply(Reply {
            in_reply_to: id,
            body,
        }))
    }
    match serving {
        Serving::Nothing => error("a request arrived before an init naming a profile".into()),
        Serving::Scratchpad(d) => match serde_json::from_value(r.body.clone()) {
            Err(e) => error(format!("not a scratchpad request ({e}): {}", r.body)),
            Ok(request) => match d.call(now, &request).await {
                Ok(outcome) => reply(r.id, outcome),
                Err(e) => error(e.to_string()),
            },
        },
        Serving::Scoped(service) => match serde_json::from_value::<ScopedOp>(r.body.clone()) {
            Err(e) => error(format!("not a scoped request ({e}): {}", r.body)),
            Ok(op) => match service.call(now, &op).await {
                Ok(outcome) => reply(r.id, outcome),
                Err(e) => error(e),
            },
        },
        Serving::Rows(rows) => match serde_json::from_value::<RowsOp>(r.body.clone()) {
            Err(e) => error(format!("not a rows request ({e}): {}", r.body)),
            Ok(op) => reply(r.id, rows.answer(now, &op).await),
        },
    }
}

/// The implementation for the init's profile, or nothing for a probe (an init naming no profile).
async fn start(
    factory: &ReferenceScratchpad,
    mutants: Mutants,
    init: &Init,
) -> Result<Serving, String> {
    if init.protocol != PROTOCOL {
        return Err(format!(
            "this adapter speaks {PROTOCOL}, not {}",
            init.protocol
        ));
    }
    let Some(name) = init.profile.as_deref() else {
        return Ok(Serving::Nothing);
    };
    if name == SCOPED {
        let (Some(s3), Some(url)) = (&init.s3, &init.postgres_url) else {
            return Err("the scoped profile needs `s3` and `postgres_url` in init".into());
        };
        let access = S3Access::from(s3);
        let service = ScopedService::open(&access, url, &init.knobs, mutants.scoped).await?;
        return Ok(Serving::Scoped(Box::new(service)));
    }
    if name == ROWS {
        let Some(url) = &init.postgres_url else {
            return Err("the rows profile needs `postgres_url` in init".into());
        };
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(4)
            .connect(url)
            .await
            .map_err(|e| format!("cannot reach the database handed over in init: {e}"))?;
        let store = RowsStore::open_with(
            pool,
            RowsConfig {
                mutant: mutants.rows,
            },
        )
        .await
        .map_err(|e| format!("cannot bring up the rows schema: {e}"))?;
        return Ok(Serving::Rows(Box::new(ReferenceRows::new(store))));
    }
    let profile = Profile::from_name(name)
        .filter(|p| factory.supports(*p))
        .ok_or_else(|| format!("no {name:?} profile here"))?;
    let env = Environment {
        root: init.root.clone().into(),
        workdir: init.workdir.clone().into(),
        knobs: Knobs {
            values: init.knobs.clone(),
            mounted: !init.root.is_empty(),
        },
    };
    factory
        .create(profile, &env)
        .map(Serving::Scratchpad)
        .map_err(|e| e.to_string())
}

//! The reference implementation behind the `tidemark/1` protocol (PROTOCOL.md).
//!
//! It drives the very same in-process driver `tidemark run` uses, so the suite passing through
//! `tidemark run --impl target/debug/tidemark-reference-adapter` proves the process path adds
//! nothing and loses nothing. `--mutant <id>` switches on one mutant of the catalogue, so the
//! process path can be shown to catch a real bug too.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use tidemark_conformance::driver::{Driver, DriverFactory, Environment};
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::protocol::{
    ErrorReply, FromImplementation, Init, InitOk, Reply, ToImplementation, PROTOCOL,
};
use tidemark_conformance::scenario::{Knobs, Profile};
use tidemark_reference::clock::Timestamp;
use tidemark_reference::scratchpad::ScratchpadMutant;

fn main() -> ExitCode {
    let mutant = match parse_args() {
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
    match rt.block_on(serve(mutant)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tidemark-reference-adapter: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args() -> Result<Option<ScratchpadMutant>, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(None),
        [flag, id] if flag == "--mutant" => {
            ScratchpadMutant::from_id(id).map(Some).ok_or_else(|| {
                let ids: Vec<_> = ScratchpadMutant::ALL.iter().map(|m| m.id()).collect();
                format!("no mutant {id:?}; the catalogue has {}", ids.join(", "))
            })
        }
        _ => Err("usage: tidemark-reference-adapter [--mutant <id>]".into()),
    }
}

/// Answers lines from stdin until it closes. A line it cannot understand is a harness bug: it
/// says so on stderr and exits, which the harness reports.
async fn serve(mutant: Option<ScratchpadMutant>) -> Result<(), String> {
    let factory = ReferenceScratchpad { mutant };
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut driver: Option<Box<dyn Driver>> = None;
    for line in stdin.lines() {
        let line = line.map_err(|e| format!("cannot read stdin: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let message: ToImplementation = serde_json::from_str(&line)
            .map_err(|e| format!("not a {PROTOCOL} message ({e}): {line}"))?;
        let answer = match message {
            ToImplementation::Init(init) => {
                let id = init.id;
                match init_driver(&factory, &init) {
                    Ok(d) => {
                        driver = d;
                        FromImplementation::InitOk(InitOk {
                            in_reply_to: id,
                            protocol: PROTOCOL.into(),
                            implementation: factory.name(),
                            profiles: vec![Profile::Scratchpad.name().into()],
                            capabilities: vec![],
                        })
                    }
                    Err(message) => FromImplementation::Error(ErrorReply {
                        in_reply_to: id,
                        message,
                    }),
                }
            }
            ToImplementation::Request(r) => match driver.as_mut() {
                None => FromImplementation::Error(ErrorReply {
                    in_reply_to: r.id,
                    message: "a request arrived before an init naming a profile".into(),
                }),
                Some(d) => match d.call(Timestamp::from_millis(r.now_ms), &r.body).await {
                    Ok(outcome) => FromImplementation::Reply(Reply {
                        in_reply_to: r.id,
                        body: outcome,
                    }),
                    Err(e) => FromImplementation::Error(ErrorReply {
                        in_reply_to: r.id,
                        message: e.to_string(),
                    }),
                },
            },
        };
        let mut out = serde_json::to_vec(&answer).expect("protocol messages always serialise");
        out.push(b'\n');
        stdout
            .write_all(&out)
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write stdout: {e}"))?;
    }
    Ok(())
}

/// The in-process driver for the init's profile, or `None` for a probe (an init naming no profile).
fn init_driver(
    factory: &ReferenceScratchpad,
    init: &Init,
) -> Result<Option<Box<dyn Driver>>, String> {
    if init.protocol != PROTOCOL {
        return Err(format!(
            "this adapter speaks {PROTOCOL}, not {}",
            init.protocol
        ));
    }
    let Some(name) = init.profile.as_deref() else {
        return Ok(None);
    };
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
        .map(Some)
        .map_err(|e| e.to_string())
}

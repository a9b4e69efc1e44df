//! The reference implementation behind the `tidemark/1` protocol (PROTOCOL.md).
//!
//! Scratchpad: it drives the very same in-process driver `tidemark run` uses, so the suite
//! passing through `tidemark run --impl target/debug/tidemark-reference-adapter` proves the
//! process path adds nothing and loses nothing. Scoped: a `ScopedStore` on the bucket and
//! database the harness hands over in `init`, its clock set from each request's `now_ms`; it
//! claims the `crash_points`, `write_during_sweep`, `written_at_stamp`, `people_api`,
//! `retention_policies` and `erasure_obligations` capabilities, declaring its erasure ledger's
//! queries (and, for the scratchpad, `sp12_digest` and `binary_content`). Rows: a `RowsStore` on the database handed over in
//! `init`, in the reference's own `tidemark_rows` schema (so it declares no queries), each
//! request answered as the in-process runner's endpoint answers it (`contract::answer`).
//! `--mutant <id>` switches on one mutant of any catalogue, so the process path can be shown to
//! catch a real bug too; `--variant <name>=<choice>` takes a SPEC.md variant's other choice (of
//! any profile) and declares it in `init_ok`, so the process path can be shown to follow a
//! declaration; `--text-segment <segment>` spells the scoped text area otherwise (SC-1.4) and
//! declares it, and `--text-segment-undeclared <segment>` takes it without a word, to show the
//! harness needs the word.

use std::io::Write;
use std::process::ExitCode;
use tidemark_conformance::profiles::rows::contract::RowsOp;
use tidemark_conformance::profiles::rows::reference::ReferenceRows;
use tidemark_conformance::profiles::scoped::contract;
use tidemark_conformance::profiles::scoped::erasure::{self, ErasureQueries};
use tidemark_conformance::profiles::scoped::process::service::{S3Access, ScopedService};
use tidemark_conformance::profiles::scoped::text_segment;
use tidemark_conformance::profiles::scoped::ScopedOp;
use tidemark_conformance::profiles::scratchpad::contract::{Driver, DriverFactory, Environment};
use tidemark_conformance::profiles::scratchpad::script::{Knobs, Profile};
use tidemark_conformance::profiles::scratchpad::ReferenceScratchpad;
use tidemark_conformance::protocol::{
    ErrorReply, FromImplementation, Init, InitOk, Reply, RequestEnvelope, ToImplementation,
    PROTOCOL,
};
use tidemark_conformance::variants::Declared;
use tidemark_reference::clock::Timestamp;
use tidemark_reference::rows::{RowsConfig, RowsMutant, RowsStore};
use tidemark_reference::scoped::ScopedMutant;
use tidemark_reference::scratchpad::ScratchpadMutant;

/// The scoped and rows profiles' names, and the optional behaviours this adapter has.
const SCOPED: &str = "scoped";
const ROWS: &str = "rows";
/// Scoped: the crash points, the raced write and the write stamps an age-only rule reads, part
/// SL's policies, a session's close and two sweeps at once. Rows:
/// a reap's batch size and crash fault. The scratchpad's (SP-1.2's recommended digest unless a
/// thread is named by its id alone, binary content) are the in-process reference's.
const OTHER_CAPABILITIES: [&str; 10] = [
    contract::CRASH_POINTS,
    contract::WRITE_DURING_SWEEP,
    contract::WRITTEN_AT_STAMP,
    contract::PEOPLE_API,
    contract::RETENTION_POLICIES,
    contract::SESSION_CLOSE,
    contract::CONCURRENT_SWEEPS,
    contract::ERASURE_OBLIGATIONS,
    contract::WORKSPACE_RETENTION,
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
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tidemark-reference-adapter: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match rt.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tidemark-reference-adapter: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The adapter's arguments: at most one mutant, the variants it takes, and how it spells the
/// scoped text area (declared, or, to show the harness needs the declaration, not).
struct Args {
    mutants: Mutants,
    variants: Declared,
    text_segment: Option<String>,
    declares_text_segment: bool,
}

const USAGE: &str = "usage: tidemark-reference-adapter [--mutant <id>] [--variant <name>=<choice>]... [--text-segment <segment> | --text-segment-undeclared <segment>]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        mutants: Mutants::default(),
        variants: Declared::defaults(),
        text_segment: None,
        declares_text_segment: false,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(flag) = raw.next() {
        let value = raw.next().ok_or_else(|| USAGE.to_string())?;
        match flag.as_str() {
            "--mutant" => args.mutants = mutant_named(&value)?,
            "--variant" => {
                let (name, choice) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--variant takes <name>=<choice>, not {value:?}"))?;
                let mut one = std::collections::BTreeMap::new();
                one.insert(name.to_string(), choice.to_string());
                Declared::read(&one)?;
                let variant = tidemark_conformance::variants::named(name).expect("just read");
                args.variants = args.variants.with(variant, choice);
            }
            "--text-segment" | "--text-segment-undeclared" => {
                text_segment::check(&value).map_err(|why| format!("{flag} {value:?} {why}"))?;
                args.declares_text_segment = flag == "--text-segment";
                args.text_segment = Some(value);
            }
            _ => return Err(USAGE.into()),
        }
    }
    Ok(args)
}

fn mutant_named(id: &str) -> Result<Mutants, String> {
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

/// Answers lines from stdin until it closes. A line it cannot understand is a harness bug: it
/// says so on stderr and exits, which the harness reports.
async fn serve(args: Args) -> Result<(), String> {
    let mutants = args.mutants;
    let factory = ReferenceScratchpad {
        mutant: mutants.scratchpad,
        variants: args.variants.clone(),
    };
    // Read without blocking the runtime: the people's files API (SPEC part SF) is served by
    // tasks of this runtime while the adapter waits for the harness's next line.
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = std::io::stdout().lock();
    let mut serving = Serving::Nothing;
    while let Some(line) = lines
        .next_line()
        .await
        .map_err(|e| format!("cannot read stdin: {e}"))?
    {
        if line.trim().is_empty() {
            continue;
        }
        // The body's meaning depends on the profile of the init, so it is read after the envelope.
        let message: ToImplementation<serde_json::Value> = serde_json::from_str(&line)
            .map_err(|e| format!("not a {PROTOCOL} message ({e}): {line}"))?;
        let mut out = match message {
            ToImplementation::Init(init) => {
                line_of(
                    &match start(&factory, mutants, args.text_segment.as_deref(), &init).await {
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
                                capabilities: OTHER_CAPABILITIES
                                    .iter()
                                    .map(|c| c.to_string())
                                    .chain(factory.capabilities())
                                    .collect(),
                                variants: args.variants.to_map(),
                                // SC-6.6's own tables and the rows reference's own schema: the
                                // defaults need no declaration (its erasure ledger's queries,
                                // which have no default, are declared below). A text area spelled otherwise is
                                // declared (SC-1.4), unless asked not to.
                                declared: args
                                    .text_segment
                                    .iter()
                                    .filter(|_| args.declares_text_segment)
                                    .map(|s| ("text_segment".to_string(), s.clone().into()))
                                    // The people's files API it serves on loopback (SF).
                                    .chain(match &serving {
                                        Serving::Scoped(service) => service
                                            .people_base_url()
                                            .map(|u| ("people_api".to_string(), u.into())),
                                        _ => None,
                                    })
                                    // Its erasure obligations and proofs (SL-4.7): a harness
                                    // reads them with the reference's own queries.
                                    .chain(matches!(serving, Serving::Scoped(_)).then(|| {
                                        (
                                            erasure::DECLARED_FIELD.to_string(),
                                            serde_json::to_value(ErasureQueries::reference())
                                                .expect("two strings serialise"),
                                        )
                                    }))
                                    .collect(),
                            })
                        }
                        Err(message) => FromImplementation::Error(ErrorReply {
                            in_reply_to: init.id,
                            message,
                        }),
                    },
                )
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
    text_segment: Option<&str>,
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
        let service = ScopedService::open_taking(
            &access,
            url,
            &init.knobs,
            mutants.scoped,
            &factory.variants,
            text_segment,
        )
        .await?;
        let mut service = service;
        service.people_api().await?;
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
        let config = tidemark_conformance::profiles::rows::variants::configured(
            RowsConfig::with_mutant(mutants.rows),
            &factory.variants,
        );
        let store = RowsStore::open_with(pool, config)
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
            // A root path where nothing exists reaches the reference as it is (SP-1.3).
            ..Knobs::default()
        },
    };
    factory
        .create(profile, &env)
        .map(Serving::Scratchpad)
        .map_err(|e| e.to_string())
}

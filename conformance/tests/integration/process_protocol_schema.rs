//! protocol.schema.json describes the protocol as it is actually spoken: every line of a real
//! run through the reference adapter, in both directions, validates against it. The same run is
//! the one that holds the reference behind the protocol to its in-process verdicts (every
//! profile's whole suite; the mutants and variants behind the protocol are in `process_*`).
//!
//! The validator covers exactly the JSON Schema keywords the file uses (`$ref`, `oneOf`, `anyOf`, `type`,
//! `const`, `enum`, `required`, `properties`, `items`, `additionalProperties`, `minimum`,
//! `pattern` as `^([0-9a-f]{2})*$` or `^[a-z][a-z0-9_]*$`), and fails on any other, so the
//! schema cannot grow a keyword this test silently ignores.

use serde_json::Value;
use std::process::Command;
use tidemark_conformance::spec::repo_root;

const TIDEMARK: &str = env!("CARGO_BIN_EXE_tidemark");
const ADAPTER: &str = env!("CARGO_BIN_EXE_tidemark-reference-adapter");

fn schema() -> Value {
    let text = std::fs::read_to_string(repo_root().join("conformance/protocol.schema.json"))
        .expect("the schema exists");
    serde_json::from_str(&text).expect("the schema is JSON")
}

fn resolve<'a>(root: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference.strip_prefix('#').expect("only local references");
    root.pointer(pointer)
        .unwrap_or_else(|| panic!("the schema has no {reference}"))
}

/// Why `value` does not match `schema`, if it does not.
fn check(root: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(keywords) = schema.as_object() else {
        return Err(format!("{at}: schema is not an object"));
    };
    for (keyword, arg) in keywords {
        match keyword.as_str() {
            "$schema" | "$id" | "$defs" | "title" | "description" => {}
            "$ref" => check(root, resolve(root, arg.as_str().unwrap()), value, at)?,
            "oneOf" => {
                let matching = arg
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|s| check(root, s, value, at).is_ok())
                    .count();
                if matching != 1 {
                    return Err(format!(
                        "{at}: {matching} alternatives of oneOf match {value}"
                    ));
                }
            }
            "anyOf" => {
                let alternatives = arg.as_array().unwrap();
                if !alternatives
                    .iter()
                    .any(|s| check(root, s, value, at).is_ok())
                {
                    return Err(format!("{at}: no alternative of anyOf matches {value}"));
                }
            }
            "type" => {
                let types: Vec<&str> = match arg {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
                    _ => return Err(format!("{at}: bad type keyword")),
                };
                let ok = types.iter().any(|t| match *t {
                    "object" => value.is_object(),
                    "array" => value.is_array(),
                    "string" => value.is_string(),
                    "integer" => value.is_i64() || value.is_u64(),
                    "null" => value.is_null(),
                    other => panic!("type {other} is not covered by this validator"),
                });
                if !ok {
                    return Err(format!("{at}: {value} is not {types:?}"));
                }
            }
            "const" if arg != value => return Err(format!("{at}: {value} is not {arg}")),
            "const" => {}
            "enum" if !arg.as_array().unwrap().contains(value) => {
                return Err(format!("{at}: {value} is not one of {arg}"))
            }
            "enum" => {}
            "required" => {
                for name in arg.as_array().unwrap() {
                    if value.get(name.as_str().unwrap()).is_none() {
                        return Err(format!("{at}: {name} is missing"));
                    }
                }
            }
            "properties" => {
                for (name, sub) in arg.as_object().unwrap() {
                    if let Some(v) = value.get(name) {
                        check(root, sub, v, &format!("{at}.{name}"))?;
                    }
                }
            }
            // The properties `properties` does not name: `false` refuses them.
            "additionalProperties" => {
                let named = keywords.get("properties").and_then(Value::as_object);
                for (name, v) in value.as_object().into_iter().flatten() {
                    if named.is_some_and(|n| n.contains_key(name)) {
                        continue;
                    }
                    match arg {
                        Value::Bool(false) => {
                            return Err(format!("{at}: {name} is not a property it may have"))
                        }
                        Value::Bool(true) => {}
                        _ => check(root, arg, v, &format!("{at}.{name}"))?,
                    }
                }
            }
            "propertyNames" => {
                for name in value.as_object().into_iter().flatten().map(|(n, _)| n) {
                    check(
                        root,
                        arg,
                        &Value::String(name.clone()),
                        &format!("{at}.{name}"),
                    )?;
                }
            }
            "items" => {
                for (i, v) in value.as_array().into_iter().flatten().enumerate() {
                    check(root, arg, v, &format!("{at}[{i}]"))?;
                }
            }
            "minimum" if value.as_i64().is_some_and(|v| v < arg.as_i64().unwrap()) => {
                return Err(format!("{at}: {value} < {arg}"))
            }
            "minimum" => {}
            "maximum" if value.as_i64().is_some_and(|v| v > arg.as_i64().unwrap()) => {
                return Err(format!("{at}: {value} > {arg}"))
            }
            "maximum" => {}
            "pattern" => {
                let s = value.as_str().unwrap_or_default();
                let ok = match arg.as_str().unwrap() {
                    "^([0-9a-f]{2})*$" => {
                        s.len().is_multiple_of(2)
                            && s.bytes()
                                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                    }
                    "^[a-z][a-z0-9_]*$" => {
                        s.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
                            && s.bytes()
                                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                    }
                    "^[tc]-[a-z0-9]+$" => {
                        (s.starts_with("t-") || s.starts_with("c-"))
                            && s.len() > 2
                            && s[2..]
                                .bytes()
                                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                    }
                    "^[^/\\u0000]+$" => !s.is_empty() && !s.contains(['/', '\0']),
                    other => panic!("pattern {other} is not covered by this validator"),
                };
                if !ok {
                    return Err(format!("{at}: {value} does not match {arg}"));
                }
            }
            other => panic!("keyword {other} is not covered by this validator"),
        }
    }
    Ok(())
}

/// Copies stdin to stdout line by line, appending each line to the file `out` names first. awk,
/// not Python: the run starts two recorders beside each adapter process, and awk starts in a
/// millisecond where Python takes forty. `-W interactive` is mawk's (Debian's awk): without it
/// mawk waits for a block of input before passing a line on, and holds back the `init` the
/// adapter waits for (the run then fails at init).
const RECORDER: &str = "{ print >> out; fflush(out); print; fflush() }\n";

/// The body definition of a request to a program started for `profile`.
fn request_body_definition(profile: Option<&str>) -> &'static str {
    match profile {
        Some("scoped") => "#/$defs/scoped_request_body",
        Some("scratchpad") => "#/$defs/request_body",
        Some("rows") => "#/$defs/rows_request_body",
        other => panic!("a request reached a program started for {other:?}"),
    }
}

/// The names of the scenarios a `tidemark run` printed as passed (`PASS  <name>  <rules>`).
fn passed(stdout: &[u8]) -> std::collections::BTreeSet<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("PASS "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// One run of the reference adapter through the protocol, every profile it claims (the
/// scratchpad suite; the scoped suite with the harness's S3 endpoint and a database in `init`;
/// the rows suite with its database, PostgreSQL as the real-tier tests get it), holds three
/// things: it passes exactly the scenarios the reference passes in process, its JUnit file is
/// well-formed and names them all, and every line it spoke, in both directions, validates
/// against the schema. (One run for the three: each is a whole suite through the protocol.)
#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_reference_behind_the_protocol_passes_what_it_passes_in_process_speaking_only_what_the_schema_allows(
) {
    let dir = tempfile::tempdir().unwrap();
    let (to_impl, from_impl) = (
        dir.path().join("to-impl.jsonl"),
        dir.path().join("from-impl.jsonl"),
    );
    let junit = dir.path().join("reference.xml");
    // A recording adapter: the reference, with both directions of its pipe copied to files. Each
    // line reaches its file before it is passed on (tee passes it on first), because the harness
    // kills the whole process group right after some answers (`crashed`), recorder included.
    let recorder = dir.path().join("record.awk");
    std::fs::write(&recorder, RECORDER).unwrap();
    let recording = format!(
        "sh -c 'awk -W interactive -f {rec} -v out={} | {ADAPTER} | awk -W interactive -f {rec} -v out={}'",
        to_impl.display(),
        from_impl.display(),
        rec = recorder.display()
    );
    let out = Command::new(TIDEMARK)
        .args(["run", "--impl", &recording, "--junit"])
        .arg(&junit)
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let in_process = Command::new(TIDEMARK)
        .arg("run")
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        in_process.status.success(),
        "the reference passes in process"
    );
    let in_process = passed(&in_process.stdout);
    for profile in ["scratchpad::", "scoped::", "rows::"] {
        assert!(
            in_process.iter().any(|n| n.starts_with(profile)),
            "the in-process run holds {profile} scenarios"
        );
    }
    assert_eq!(
        passed(&out.stdout),
        in_process,
        "passed through the protocol"
    );
    assert_eq!(
        super::support::read_junit(&junit).1,
        in_process,
        "the JUnit file's testcases"
    );

    let schema = schema();
    let mut checked = std::collections::BTreeSet::new();
    for (file, definition) in [
        (&to_impl, "#/$defs/to_implementation"),
        (&from_impl, "#/$defs/from_implementation"),
    ] {
        let lines = std::fs::read_to_string(file).unwrap();
        assert!(lines.lines().count() > 100, "the run was recorded");
        // Requests are checked against the body definition of the profile their program was
        // started for (the last init before them), not only against either profile's.
        let mut profile: Option<String> = None;
        for line in lines.lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            if let Err(e) = check(&schema, resolve(&schema, definition), &value, "$") {
                panic!("{line}\ndoes not validate as {definition}: {e}");
            }
            match value["type"].as_str() {
                Some("init") => profile = value["profile"].as_str().map(str::to_string),
                Some("request") => {
                    let body = request_body_definition(profile.as_deref());
                    if let Err(e) = check(&schema, resolve(&schema, body), &value["body"], "$.body")
                    {
                        panic!("{line}\ndoes not validate as {body}: {e}");
                    }
                    if matches!(profile.as_deref(), Some("scoped" | "rows")) {
                        assert!(
                            value["now_ms"].is_i64(),
                            "a scoped or rows request carries the simulated time: {line}"
                        );
                    }
                }
                _ => {}
            }
            if value["type"] == "init" && value["profile"] == "rows" {
                assert!(
                    value["postgres_url"].is_string(),
                    "a rows init hands over its database: {line}"
                );
            }
            if value["type"] == "init" && value["profile"] == "scoped" {
                for field in ["s3", "postgres_url"] {
                    assert!(
                        !value[field].is_null(),
                        "a scoped init hands over {field}: {line}"
                    );
                }
            }
            let tag = value["body"]
                .get("op")
                .or(value["body"].get("outcome"))
                .unwrap_or(&value["type"]);
            checked.insert(tag.as_str().unwrap().to_string());
        }
    }
    // The run exercised every message type, op and outcome of both profiles.
    let scratchpad = [
        "content", "init", "init_ok", "list", "listing", "read", "refused", "remove", "removed",
        "start", "swept", "tick", "write", "written",
    ];
    let scoped = [
        "create_workspace",
        "create_agent",
        "create_session",
        "activity",
        "add_wait",
        "remove_wait",
        "read_text",
        "delete",
        "publish_skill",
        "delete_session",
        "delete_agent",
        "delete_workspace",
        "sweep",
        "apply_lifecycle",
        "set_workspace_retention",
        "crash_at",
        "write_during_sweep",
        "close_session",
        "concurrent_sweeps",
        "ok",
        "text",
        "published",
        "crashed",
    ];
    let rows = [
        "create_session",
        "start_reply",
        "stream",
        "finish_reply",
        "interrupt_reply",
        "seal_reply",
        "delete_reply",
        "record_event",
        "add_prompt",
        "record_invocation",
        "fire_trigger",
        "keep",
        "take_snapshot",
        "name_snapshot",
        "drop_model",
        "open_item",
        "settle_item",
        "hold_request",
        "reap",
        "transcript",
        "snapshots",
        "made",
        "reaped",
    ];
    let expected: Vec<&str> = scratchpad
        .iter()
        .chain(&scoped)
        .chain(&rows)
        .copied()
        .collect();
    let missing: Vec<_> = expected.iter().filter(|t| !checked.contains(**t)).collect();
    assert!(missing.is_empty(), "not exercised: {missing:?}");
}

#[test]
fn the_schema_refuses_a_reply_without_its_id_and_a_path_that_is_not_hex() {
    let schema = schema();
    let from = resolve(&schema, "#/$defs/from_implementation");
    let to = resolve(&schema, "#/$defs/to_implementation");
    let no_id: Value = serde_json::json!({"type": "reply", "body": {"outcome": "removed"}});
    assert!(check(&schema, from, &no_id, "$").is_err());
    let not_hex: Value = serde_json::json!({"type": "request", "id": 1, "now_ms": 0,
        "body": {"op": "read", "caller": {"requester": "a", "channel": "c"}, "path": "notes.md"}});
    assert!(check(&schema, to, &not_hex, "$").is_err());
}

#[test]
fn harness_side_steps_are_not_scoped_requests_in_the_schema() {
    let schema = schema();
    let body = resolve(&schema, "#/$defs/scoped_request_body");
    for op in [
        "restart",
        "faults",
        "heal",
        "bucket_keys",
        "pending_deletions",
        "deletion_records",
        "run_age_rule",
        "erasure_states",
        "erasure_proof",
    ] {
        let value = serde_json::json!({"op": op, "prefix": "sessions/", "days": 1});
        assert!(
            check(&schema, body, &value, "$").is_err(),
            "{op} is performed by the harness, never sent"
        );
    }
    let sweep = serde_json::json!({"op": "sweep"});
    assert!(check(&schema, body, &sweep, "$").is_ok());
}

/// An `init_ok` declaring its ledger queries is valid, and the harness reads what the schema
/// says; one declaring only half of them is refused by both (the scoped profile reads its part).
#[test]
fn an_init_ok_declaring_its_ledger_queries_is_valid_and_needs_both() {
    use tidemark_conformance::profiles::scoped::ledger::LedgerQueries;
    use tidemark_conformance::protocol::{FromImplementation, InitOk};
    let init_ok = |v: serde_json::Value| -> InitOk {
        match serde_json::from_value::<FromImplementation<serde_json::Value>>(v).unwrap() {
            FromImplementation::InitOk(ok) => ok,
            _ => panic!("an init_ok"),
        }
    };
    let schema = schema();
    let from = resolve(&schema, "#/$defs/from_implementation");
    let declared = serde_json::json!({"type": "init_ok", "in_reply_to": 0, "protocol": "tidemark/1",
        "profiles": ["scoped"], "ledger": {
            "obligations": "SELECT key_prefix AS prefix, finished_at IS NULL AS pending FROM purge_jobs",
            "records": "SELECT key_prefix AS prefix FROM purge_receipts"}});
    check(&schema, from, &declared, "$").unwrap();
    assert_eq!(
        LedgerQueries::declared(&init_ok(declared))
            .unwrap()
            .unwrap()
            .records,
        "SELECT key_prefix AS prefix FROM purge_receipts"
    );
    let half = serde_json::json!({"type": "init_ok", "in_reply_to": 0, "protocol": "tidemark/1",
        "profiles": ["scoped"], "ledger": {"obligations": "SELECT 1"}});
    assert!(check(&schema, from, &half, "$").is_err());
    let half = init_ok(half);
    assert_eq!(
        LedgerQueries::declared(&half).unwrap_err(),
        "missing field `records`"
    );
    assert!(tidemark_conformance::profiles::check_claims(&half).is_err());
    // A key the harness does not read is refused by both, never ignored.
    let typo = serde_json::json!({"type": "init_ok", "in_reply_to": 0, "protocol": "tidemark/1",
        "profiles": ["scoped"], "ledger": {"obligations": "SELECT 1", "records": "SELECT 1",
        "record": "SELECT 1"}});
    assert!(check(&schema, from, &typo, "$").is_err());
    assert!(tidemark_conformance::profiles::check_claims(&init_ok(typo)).is_err());
}

/// An `init_ok` declaring its erasure ledger's queries (SL-4.7) is valid and read as declared;
/// one declaring half of them, or a key the harness does not read, is refused by the schema and
/// the handshake alike.
#[test]
fn an_init_ok_declaring_its_erasure_queries_is_valid_and_needs_both() {
    use tidemark_conformance::profiles::scoped::erasure::ErasureQueries;
    use tidemark_conformance::protocol::{FromImplementation, InitOk};
    let init_ok = |v: serde_json::Value| -> InitOk {
        match serde_json::from_value::<FromImplementation<serde_json::Value>>(v).unwrap() {
            FromImplementation::InitOk(ok) => ok,
            _ => panic!("an init_ok"),
        }
    };
    let schema = schema();
    let from = resolve(&schema, "#/$defs/from_implementation");
    let declared = serde_json::json!({"type": "init_ok", "in_reply_to": 0, "protocol": "tidemark/1",
        "profiles": ["scoped"], "capabilities": ["erasure_obligations"], "erasure": {
            "obligations": "SELECT id::text AS obligation, subject, deadline_ms, done_at_ms FROM erasures",
            "proofs": "SELECT erasure_id::text AS obligation, key, deleted_at_ms FROM erased_keys"}});
    check(&schema, from, &declared, "$").unwrap();
    assert_eq!(
        ErasureQueries::declared(&init_ok(declared))
            .unwrap()
            .unwrap()
            .proofs,
        "SELECT erasure_id::text AS obligation, key, deleted_at_ms FROM erased_keys"
    );
    for bad in [
        serde_json::json!({"obligations": "SELECT 1"}),
        serde_json::json!({"obligations": "SELECT 1", "proofs": "SELECT 1", "proof": "SELECT 1"}),
    ] {
        let v = serde_json::json!({"type": "init_ok", "in_reply_to": 0, "protocol": "tidemark/1",
            "profiles": ["scoped"], "erasure": bad});
        assert!(check(&schema, from, &v, "$").is_err(), "{v}");
        assert!(tidemark_conformance::profiles::check_claims(&init_ok(v)).is_err());
    }
}

/// The schema lists every variant SPEC.md has, with its choices in SPEC.md's order, and no
/// other: a declaration the schema accepts is one the handshake accepts.
#[test]
fn the_schema_lists_every_variant_with_its_choices() {
    let schema = schema();
    let listed = schema
        .pointer("/$defs/init_ok/properties/variants/properties")
        .and_then(Value::as_object)
        .expect("init_ok lists its variants");
    let in_schema: Vec<(String, Vec<String>)> = listed
        .iter()
        .map(|(name, s)| {
            let choices = s["enum"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect();
            (name.clone(), choices)
        })
        .collect();
    let mut registered: Vec<(String, Vec<String>)> = tidemark_conformance::variants::all()
        .into_iter()
        .map(|v| {
            (
                v.name.to_string(),
                v.choices.iter().map(|c| c.to_string()).collect(),
            )
        })
        .collect();
    registered.sort();
    let mut in_schema = in_schema;
    in_schema.sort();
    assert_eq!(in_schema, registered);
}

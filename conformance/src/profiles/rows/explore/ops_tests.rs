//! The generator's tests (`ops.rs`): a seed names the same sequence, a few seeds reach every
//! operation and fault, and an operation reads and round-trips as scenarios and saved failures
//! write it.

use super::*;

#[test]
fn a_seed_always_generates_the_same_operations_and_seeds_differ() {
    assert_eq!(generate(7, 80), generate(7, 80));
    assert_ne!(generate(7, 80).1, generate(8, 80).1);
}

#[test]
fn the_generator_reaches_every_kind_of_operation_and_fault_over_a_few_seeds() {
    let mut seen = std::collections::BTreeSet::new();
    let mut boundary_then_tick = false;
    let mut backwards = false;
    for seed in 0..40 {
        let (_, ops) = generate(seed, DEFAULT_STEPS);
        for (i, op) in ops.iter().enumerate() {
            let word = op.to_string();
            let key = match op {
                ExploreOp::CrashedReap { .. } => "crash".to_string(),
                _ => word.split(' ').take(2).collect::<Vec<_>>().join(" "),
            };
            seen.insert(key);
            if let ExploreOp::Step(Action::Advance(ms)) = op {
                backwards |= *ms < 0;
                boundary_then_tick |=
                    *ms == DAY_MS && ops.get(i + 1) == Some(&ExploreOp::Step(Action::Reap));
            }
        }
    }
    for key in [
        "crash",
        "stream r",
        "seal reply",
        "interrupt reply",
        "finish reply",
        "delete reply",
        "delete session",
        "delete workspace",
        "name snapshot",
        "drop model",
        "settle item",
        "hold request",
        "keep live_sessions",
        "keep breaker_sightings",
        "fire trigger",
        "invoke tool",
        "reap",
    ] {
        assert!(
            seen.iter().any(|s| s.starts_with(key)),
            "{key} never generated"
        );
    }
    assert!(backwards && boundary_then_tick);
}

#[test]
fn the_generator_streams_every_streamed_kind_and_records_every_conversation_kind() {
    let mut streamed = std::collections::BTreeSet::new();
    let mut recorded = std::collections::BTreeSet::new();
    for seed in 0..200 {
        for op in generate(seed, DEFAULT_STEPS).1 {
            match op {
                ExploreOp::Step(Action::Stream { kind, .. }) => {
                    streamed.insert(kind);
                }
                ExploreOp::Step(Action::Event { kind, .. }) => {
                    recorded.insert(kind);
                }
                _ => {}
            }
        }
    }
    for k in STREAMED {
        assert!(streamed.contains(k), "{k} is never streamed");
    }
    for k in CONVERSATION {
        assert!(
            recorded.contains(k),
            "{k} is never recorded as a conversation event"
        );
    }
}

#[test]
fn durations_and_quoted_payloads_read_as_the_scenarios_write_them() {
    assert_eq!(duration_text(DAY_MS - 1), "23h59m59s999ms");
    assert_eq!(duration_text(-30 * DAY_MS), "-30d");
    assert_eq!(duration_text(0), "0ms");
    let q = quote("a\"b\\\n\u{1}é");
    assert_eq!(q, "\"a\\\"b\\\\\\n\\x01é\"");
    let t = crate::scenario::lex::tokenize(&q).unwrap();
    assert_eq!(
        t[0],
        crate::scenario::lex::Token::Quoted("a\"b\\\n\u{1}é".as_bytes().to_vec())
    );
}

#[test]
fn an_operation_round_trips_through_json() {
    let (_, ops) = generate(3, DEFAULT_STEPS);
    let text = serde_json::to_string(&ops).unwrap();
    let back: Vec<ExploreOp> = serde_json::from_str(&text).unwrap();
    assert_eq!(ops, back);
}

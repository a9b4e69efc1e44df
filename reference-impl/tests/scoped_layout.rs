//! Properties of scoped path resolution that must hold for every input, not just the spellings
//! a person thought of.

use proptest::prelude::*;
use tidemark_reference::scoped::layout::{resolve, Purpose, TurnSpace};
use tidemark_reference::scoped::PathError;
use tidemark_reference::scoped::Scope;

fn turn() -> TurnSpace {
    TurnSpace::new("w1", "a1", "s1").unwrap().with_skill(
        "pricing",
        "0000000000000000000000000000000000000000000000000000000000000000",
    )
}

/// Segments biased towards the dangerous ones.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just("".to_string()),
        Just("%2e%2e".to_string()),
        Just("%2F".to_string()),
        Just("a\\..".to_string()),
        Just("\u{FF0E}\u{FF0E}".to_string()),
        Just(".tidemark-text".to_string()),
        Just("session".to_string()),
        "[a-zA-Z0-9._ -]{1,12}",
        "\\PC{1,6}",
    ]
}

fn guest_path() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("session/"),
            Just("agent/"),
            Just("workspace/"),
            Just("skill/pricing/"),
            Just(""),
            Just("/"),
        ],
        prop::collection::vec(segment(), 0..6),
        any::<bool>(),
    )
        .prop_map(|(scope, segs, trailing)| {
            let mut p = format!("{scope}{}", segs.join("/"));
            if trailing {
                p.push('/');
            }
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn no_resolved_key_ever_escapes_its_scope_prefix(path in guest_path()) {
        let t = turn();
        for purpose in [Purpose::File, Purpose::List] {
            if let Ok(r) = resolve(&path, &t, purpose, None) {
                let scope_prefix = t.scope_prefix(r.scope);
                prop_assert!(r.key.starts_with(&scope_prefix), "{path:?} -> {}", r.key);
                prop_assert!(r.key.starts_with(&r.prefix));
                prop_assert!(r.key.len() <= 1024);
                let rest = &r.key[r.prefix.len()..];
                for seg in rest.split('/') {
                    prop_assert!(seg != ".." && seg != ".", "{path:?} -> {}", r.key);
                }
                prop_assert!(!rest.contains('\\'));
                prop_assert!(!rest.to_ascii_lowercase().contains("%2e"));
                if purpose == Purpose::File {
                    prop_assert!(!rest.is_empty() && !rest.ends_with('/'));
                    prop_assert!(!rest.starts_with(".tidemark-text/"));
                }
            }
        }
    }

    #[test]
    fn a_path_with_a_parent_segment_is_refused_never_clamped(
        before in prop::collection::vec("[a-z]{1,5}", 0..3),
        after in prop::collection::vec("[a-z]{1,5}", 1..3),
        scope in prop_oneof![Just(Scope::Session), Just(Scope::Agent), Just(Scope::Workspace)],
    ) {
        let mut segs = before.clone();
        segs.push("..".into());
        segs.extend(after);
        let path = format!("{scope}/{}", segs.join("/"));
        let r = resolve(&path, &turn(), Purpose::File, None);
        let refused = matches!(r, Err(PathError::Traversal { .. }));
        prop_assert!(refused, "{path:?} gave {r:?}");
    }

    #[test]
    fn a_path_without_a_scope_offers_the_same_path_under_all_three(rest in "[a-z]{1,8}(/[a-z]{1,8}){0,3}") {
        prop_assume!(Scope::from_guest_name(rest.split('/').next().unwrap()).is_none());
        match resolve(&rest, &turn(), Purpose::File, None) {
            Err(PathError::MissingScope { corrections, .. })
            | Err(PathError::UnknownScope { corrections, .. }) => {
                prop_assert_eq!(corrections, vec![
                    format!("session/{rest}"),
                    format!("agent/{rest}"),
                    format!("workspace/{rest}"),
                ]);
            }
            other => prop_assert!(false, "{rest:?} gave {other:?}"),
        }
    }
}

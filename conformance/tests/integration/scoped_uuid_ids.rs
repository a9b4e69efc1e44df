//! Every scoped scenario runs with UUID identifiers: loading the suite replaces each short id
//! (`w1`, `a1`, `s1`) with a 36-byte UUID, and what reaches the bucket is keyed by them.

use tidemark_conformance::profiles::scoped::contract::{ScopedOp, ScopedOutcome};
use tidemark_conformance::profiles::scoped::runner::{self, Backend};
use tidemark_conformance::profiles::scoped::script::{self, Action};

fn scenarios_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/scoped")
}

#[test]
fn every_valid_identifier_in_the_loaded_suite_is_a_uuid() {
    let scripts = script::load_dir(&scenarios_dir()).expect("the suite loads");
    let mut ids = 0;
    for s in &scripts {
        for step in &s.steps {
            let Action::Op(op) = &step.action else {
                continue;
            };
            let named: Vec<&str> = match op {
                ScopedOp::CreateWorkspace { workspace, .. }
                | ScopedOp::DeleteWorkspace { workspace } => vec![workspace],
                ScopedOp::CreateAgent {
                    workspace, agent, ..
                }
                | ScopedOp::DeleteAgent { workspace, agent } => vec![workspace, agent],
                ScopedOp::CreateSession { turn }
                | ScopedOp::Write { turn, .. }
                | ScopedOp::Read { turn, .. } => {
                    vec![&turn.workspace, &turn.agent, &turn.session]
                }
                _ => vec![],
            };
            for id in named {
                let valid = tidemark_reference::scoped::layout::Id::new(id).is_ok();
                if valid {
                    ids += 1;
                    assert_eq!(id.len(), 36, "{}:{}: {id}", s.file.display(), step.line);
                    assert_eq!(id.matches('-').count(), 4, "{id}");
                }
            }
        }
    }
    assert!(ids > 100, "the suite names identifiers ({ids} seen)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenarios_bucket_keys_carry_its_uuids_and_still_meet_its_expectations() {
    let scripts = script::load_dir(&scenarios_dir()).expect("the suite loads");
    let s = scripts
        .iter()
        .find(|s| s.test_name() == "scoped::files_live_under_scope_first_keys")
        .expect("the layout scenario");
    let rec = runner::run_recorded(None, s, None, Backend::Sim).await;
    assert!(rec.result.is_ok(), "{:?}", rec.result);
    let (w, a, sess) = (s.uuid_of("w1"), s.uuid_of("a1"), s.uuid_of("s1"));
    let keys: Vec<&String> = rec
        .outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            ScopedOutcome::Keys { keys } => Some(keys),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(
        keys.contains(&&format!("sessions/{w}/{a}/{sess}/notes.md")),
        "{keys:?}"
    );
}

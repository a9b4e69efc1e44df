//! Scenarios spell identifiers short (`w1/a1/s1`) so they read well; real systems use UUIDs,
//! 36 bytes each, and a key with three of them is where a store's name limits show (s3s-fs,
//! which the real tier once used, refused `session/scratch.txt` under three UUIDs). So every
//! scenario loaded by [`super::script::load_dir`] runs with each short identifier replaced by a
//! UUID: v4-shaped, drawn from the seeded generator by the scenario's test name and the short
//! id, so the same scenario gets the same UUIDs on every tier, through the protocol and on
//! every run.
//!
//! Only what names an identifier is rewritten: the ids in operations, and the id segments of
//! bucket keys and prefixes (`sessions/<w>/<a>/<s>/…`, `agents/<w>/<a>/…`, `workspaces/<w>/…`,
//! `skills/<w>/…`) in the harness's own steps and their expectations. A guest's paths never
//! hold an identifier (SC-1.2). An id the identifier rule refuses (SC-1.3: `s.1`, `..`, 65
//! bytes) is left as written, so a scenario that expects `invalid_id` still gets it.
//! Expectations compare lists as sets, so the new order of keys changes nothing.

use std::collections::BTreeMap;

use rand::RngCore;
use tidemark_reference::scoped::layout::Id;

use super::contract::{ScopedOp, Turn};
use super::script::{Action, Expect, Script};
use tidemark_sim::seed::MasterSeed;

/// A UUID in the v4 layout (version nibble 4, variant `10`), lowercase, 36 bytes.
pub fn v4_shaped(rng: &mut impl RngCore) -> String {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The UUID standing for `short` in the scenario named `test_name`.
pub fn uuid_for(test_name: &str, short: &str) -> String {
    v4_shaped(&mut MasterSeed(0).stream(&format!("scoped-ids/{test_name}/{short}")))
}

/// Short id -> UUID for one scenario.
struct IdMap {
    test_name: String,
    map: BTreeMap<String, String>,
}

impl IdMap {
    /// The UUID for a valid identifier; an invalid one stays as written.
    fn id(&mut self, short: &str) -> String {
        if Id::new(short).is_err() {
            return short.to_string();
        }
        self.map
            .entry(short.to_string())
            .or_insert_with(|| uuid_for(&self.test_name, short))
            .clone()
    }

    fn turn(&mut self, t: &Turn) -> Turn {
        Turn {
            workspace: self.id(&t.workspace),
            agent: self.id(&t.agent),
            session: self.id(&t.session),
            skills: t.skills.clone(),
        }
    }

    /// A bucket key or prefix with its id segments mapped. Only segments the scenario named
    /// as identifiers elsewhere are ids; a partial segment (`sessions/w`) stays as written.
    fn key(&mut self, key: &str) -> String {
        let ids = match key.split('/').next() {
            Some("sessions") => 3,
            Some("agents") => 2,
            Some("workspaces" | "skills") => 1,
            _ => 0,
        };
        let parts: Vec<&str> = key.split('/').collect();
        let last = parts.len() - 1;
        parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                // A segment is whole when a `/` follows it or it was an id in an operation.
                let whole = i < last || self.map.contains_key(*p);
                if (1..=ids).contains(&i) && whole && !p.is_empty() {
                    self.id(p)
                } else {
                    p.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    fn op(&mut self, op: &ScopedOp) -> ScopedOp {
        use ScopedOp::*;
        match op.clone() {
            CreateWorkspace {
                workspace,
                agent_access,
                workspace_access,
            } => CreateWorkspace {
                workspace: self.id(&workspace),
                agent_access,
                workspace_access,
            },
            CreateAgent {
                workspace,
                agent,
                agent_access,
                workspace_access,
            } => CreateAgent {
                workspace: self.id(&workspace),
                agent: self.id(&agent),
                agent_access,
                workspace_access,
            },
            CreateSession { turn } => CreateSession {
                turn: self.turn(&turn),
            },
            Person {
                person,
                workspace,
                agent_files,
                workspace_files,
                sessions,
            } => Person {
                person,
                workspace: self.id(&workspace),
                agent_files,
                workspace_files,
                sessions: sessions.iter().map(|s| self.id(s)).collect(),
            },
            People {
                person,
                session,
                call,
            } => People {
                person,
                session: self.id(&session),
                call,
            },
            Activity { turn } => Activity {
                turn: self.turn(&turn),
            },
            AddWait { turn, kind, id } => AddWait {
                turn: self.turn(&turn),
                kind,
                id,
            },
            RemoveWait { turn, kind, id } => RemoveWait {
                turn: self.turn(&turn),
                kind,
                id,
            },
            Write {
                turn,
                path,
                content,
            } => Write {
                turn: self.turn(&turn),
                path,
                content,
            },
            WriteDuringSweep {
                turn,
                path,
                content,
            } => WriteDuringSweep {
                turn: self.turn(&turn),
                path,
                content,
            },
            Read { turn, path } => Read {
                turn: self.turn(&turn),
                path,
            },
            ReadText { turn, path } => ReadText {
                turn: self.turn(&turn),
                path,
            },
            List { turn, prefix } => List {
                turn: self.turn(&turn),
                prefix,
            },
            Delete { turn, path } => Delete {
                turn: self.turn(&turn),
                path,
            },
            PublishSkill {
                workspace,
                name,
                files,
            } => PublishSkill {
                workspace: self.id(&workspace),
                name,
                files,
            },
            DeleteSession { turn } => DeleteSession {
                turn: self.turn(&turn),
            },
            DeleteAgent { workspace, agent } => DeleteAgent {
                workspace: self.id(&workspace),
                agent: self.id(&agent),
            },
            DeleteWorkspace { workspace } => DeleteWorkspace {
                workspace: self.id(&workspace),
            },
            BucketKeys { prefix } => BucketKeys {
                prefix: self.key(&prefix),
            },
            RunAgeRule { prefix, days } => RunAgeRule {
                prefix: self.key(&prefix),
                days,
            },
            SetSessionCount {
                workspace,
                agent,
                keep_last,
            } => SetSessionCount {
                workspace: self.id(&workspace),
                agent: self.id(&agent),
                keep_last,
            },
            Promote { turn, from, to } => Promote {
                turn: self.turn(&turn),
                from,
                to,
            },
            ToolOutput { turn, content } => ToolOutput {
                turn: self.turn(&turn),
                content,
            },
            CloseSession { turn } => CloseSession {
                turn: self.turn(&turn),
            },
            RequestErasure {
                workspace,
                agent,
                deadline_ms,
            } => RequestErasure {
                workspace: self.id(&workspace),
                agent: agent.map(|a| self.id(&a)),
                deadline_ms,
            },
            ErasureStates { workspace, agent } => ErasureStates {
                workspace: self.id(&workspace),
                agent: agent.map(|a| self.id(&a)),
            },
            ErasureProof { workspace, agent } => ErasureProof {
                workspace: self.id(&workspace),
                agent: agent.map(|a| self.id(&a)),
            },
            SetWorkspaceRetention {
                workspace,
                session_file_ttl_days,
            } => SetWorkspaceRetention {
                workspace: self.id(&workspace),
                session_file_ttl_days,
            },
            other @ (Sweep
            | ConcurrentSweeps
            | CrashAt { .. }
            | Restart
            | Faults { .. }
            | Heal
            | PendingDeletions
            | DeletionRecords
            | LifecycleRules
            | ApplyLifecycle { .. }) => other,
        }
    }
}

/// `op` with each valid identifier replaced by the UUID [`uuid_for`] draws for it under
/// `namespace`: a host that takes short ids from its clients (the scoped world) gives the store
/// UUIDs while its clients, traces and logs keep the short names.
pub fn op_with_uuid_ids(op: &ScopedOp, namespace: &str) -> ScopedOp {
    IdMap {
        test_name: namespace.to_string(),
        map: BTreeMap::new(),
    }
    .op(op)
}

/// Whether an operation answers with bucket keys or prefixes (whose expectations name ids).
fn answers_keys(op: &ScopedOp) -> bool {
    matches!(
        op,
        ScopedOp::BucketKeys { .. }
            | ScopedOp::RunAgeRule { .. }
            | ScopedOp::PendingDeletions
            | ScopedOp::DeletionRecords
            | ScopedOp::ErasureProof { .. }
    )
}

impl Script {
    /// This scenario with every valid short identifier replaced by its UUID (see the module
    /// documentation). The steps' text stays as written, so reports quote the file.
    pub fn with_uuid_ids(mut self) -> Script {
        let mut ids = IdMap {
            test_name: self.test_name(),
            map: BTreeMap::new(),
        };
        // Operations first, so every id is known before a key's last segment is judged.
        for step in &mut self.steps {
            if let Action::Op(op) = &mut step.action {
                *op = ids.op(op);
            }
        }
        for step in &mut self.steps {
            if let (Action::Op(op), Expect::List(items)) = (&step.action, &mut step.expect) {
                if answers_keys(op) {
                    for item in items.iter_mut() {
                        *item = ids.key(item);
                    }
                }
                // A lifecycle rule is described from its prefix on (`sessions/w1/ expire 12d`):
                // a workspace's own rule names it (SPEC SL-5.3).
                if matches!(op, ScopedOp::LifecycleRules) {
                    for item in items.iter_mut() {
                        let (prefix, rest) = item.split_once(' ').unwrap_or((item.as_str(), ""));
                        let mapped = ids.key(prefix);
                        *item = if rest.is_empty() {
                            mapped
                        } else {
                            format!("{mapped} {rest}")
                        };
                    }
                }
            }
        }
        self
    }

    /// Short id -> UUID, as [`Script::with_uuid_ids`] maps them (for reports and tests).
    pub fn uuid_of(&self, short: &str) -> String {
        uuid_for(&self.test_name(), short)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Script {
        let rules = ["SC-1.1".to_string()].into_iter().collect();
        crate::profiles::scoped::script::parse_with(std::path::Path::new("ids.tdm"), text, &rules)
            .expect("parses")
    }

    #[test]
    fn short_ids_become_stable_distinct_v4_uuids_in_operations_and_key_expectations() {
        let s = parsed(
            "scenario: ids\nprofile: scoped\nrules: SC-1.1\n\n\
             create workspace w1\ncreate agent w1/a1\ncreate session w1/a1/s1\n\
             w1/a1/s1 write session/w1 \"x\" => written session/w1\n\
             bucket sessions/w1/ => [sessions/w1/a1/s1/w1]\n\
             create session w1/a1/s.1 => refused invalid_id\n",
        )
        .with_uuid_ids();
        let (w, a, sess) = (s.uuid_of("w1"), s.uuid_of("a1"), s.uuid_of("s1"));
        assert_eq!(w.len(), 36);
        assert_eq!(&w[14..15], "4", "version 4");
        assert!("89ab".contains(&w[19..20]), "RFC 4122 variant");
        assert_ne!(w, a);
        assert_eq!(w, uuid_for("scoped::ids", "w1"), "the same on every run");
        let Action::Op(ScopedOp::Write { turn, path, .. }) = &s.steps[3].action else {
            panic!("a write")
        };
        assert_eq!((&turn.workspace, &turn.session), (&w, &sess));
        assert_eq!(path, "session/w1", "a guest path is never rewritten");
        let Action::Op(ScopedOp::BucketKeys { prefix }) = &s.steps[4].action else {
            panic!("a bucket listing")
        };
        assert_eq!(prefix, &format!("sessions/{w}/"));
        // The file name `w1` at the end of the key is not an id position.
        assert_eq!(
            s.steps[4].expect,
            Expect::List(vec![format!("sessions/{w}/{a}/{sess}/w1")])
        );
        let Action::Op(ScopedOp::CreateSession { turn }) = &s.steps[5].action else {
            panic!("a create")
        };
        assert_eq!(turn.session, "s.1", "an invalid id stays as written");
        assert_eq!(
            s.steps[3].text,
            "w1/a1/s1 write session/w1 \"x\" => written session/w1"
        );
    }

    #[test]
    fn a_hosts_operations_reach_the_store_with_uuids_for_valid_ids_only() {
        let op = ScopedOp::DeleteAgent {
            workspace: "w1".into(),
            agent: "a.1".into(),
        };
        let ScopedOp::DeleteAgent { workspace, agent } = op_with_uuid_ids(&op, "scoped-world")
        else {
            panic!("the same operation")
        };
        assert_eq!(workspace, uuid_for("scoped-world", "w1"));
        assert_ne!(
            workspace,
            uuid_for("scoped::ids", "w1"),
            "namespaces differ"
        );
        assert_eq!(agent, "a.1");
    }
}

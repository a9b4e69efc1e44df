//! The seeded draw of a sequence: generator 7's mix of operations out of 340, each part's own
//! operations drawn by that part's module (`policies::one`, `close::one`, ...). It sits above
//! every part, so `ops.rs` (the operations as data) stays below them. Every range and every
//! call on the generator is as it was when each version's fixtures were saved: a seed's
//! sequence must not change.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::ops::{ModelOp, AGENTS, PATHS, SESSIONS, SETUP_SESSIONS, SKILL_FILES};

/// The `steps` operations of `seed`. The mix (out of 140): write 25 (agent scope 2 more),
/// read 18, activity 10, wait 10, advance 15 (one in five 30–60 days, else 0–19 days), sweep 17, list 4, text 2, traversal 2, missing
/// scope 1, single delete 1, workspace write 1, agent access 4, agent-scope read 3, skill read 2,
/// faulty sweep 2, crashing sweep 2, write during a sweep 5, session deletion 5, agent deletion 1,
/// store faults 3 (requests 5–20%, keys 10–40%), heal 3, clock jump back 4 (1–48 hours),
/// hostile spelling 7 (half writes), a workspace deleted beside published skills 1, a person's
/// request over HTTP 40 ([`super::people_http::draw`]), part SL's operations 30
/// ([`super::policies::one`]), and from generator 6 five more writes during a sweep, five more
/// sweeps, four more text reads and two more deletions (out of 236 in all); generator 7 adds
/// sessions' closes 16 ([`super::close::one`]) and workspaces' retention with lifecycle
/// configurations 28 ([`super::workspace_retention::one`]) and a tool result handed in again 8
/// ([`super::overflow_again::one`]), and ten more people's requests, one more agent access,
/// eight more of part SL's operations and one more faulty sweep, so what generator 6 drew keeps
/// its share of the mix, erasures 20 ([`super::erasure::one`]), two sweeps at once over
/// closes 6 ([`super::two_sweeps::one`]) and a count set after a sweep emptied a newer
/// session 6 ([`super::emptied_count::one`]; out of 340 in all).
pub fn generate(seed: u64, steps: usize) -> Vec<ModelOp> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..steps).map(|_| one(&mut rng)).collect()
}

fn one(rng: &mut ChaCha8Rng) -> ModelOp {
    // Three operations in four go to the sessions of setup, so each keeps enough files and
    // activity for the races and sweeps the generator is for; the fourth to any session.
    let session = if rng.gen_bool(0.75) {
        rng.gen_range(0..SETUP_SESSIONS as u8)
    } else {
        rng.gen_range(0..SESSIONS.len() as u8)
    };
    let p = rng.gen_range(0..PATHS.len() as u8);
    match rng.gen_range(0..340u32) {
        0..=24 => ModelOp::Write {
            session,
            path: p,
            agent_scope: false,
        },
        25..=42 => ModelOp::Read {
            session,
            path: p,
            agent_scope: false,
        },
        45..=54 => ModelOp::Activity { session },
        55..=64 => ModelOp::Wait {
            session,
            kind: rng.gen_range(0..3),
            id: rng.gen_range(0..2),
            add: rng.gen_bool(0.5),
        },
        65..=79 => ModelOp::Advance {
            // One advance in five is the sweeper down for longer than the retention period.
            days: if rng.gen_bool(0.2) {
                rng.gen_range(30..=60)
            } else {
                rng.gen_range(0..20)
            },
            hours: rng.gen_range(0..24),
        },
        80..=96 | 225..=229 => ModelOp::Sweep,
        97..=98 => ModelOp::Write {
            session,
            path: p,
            agent_scope: true,
        },
        99..=100 => ModelOp::List { session },
        101..=102 | 230..=233 => ModelOp::Text { session, path: p },
        103..=104 => ModelOp::Traversal {
            session,
            path: p,
            encoded: rng.gen_bool(0.5),
        },
        105 => ModelOp::MissingScope { session, path: p },
        106 | 234..=235 => ModelOp::Delete { session, path: p },
        107 => ModelOp::WorkspaceWrite { session, path: p },
        108..=111 | 298 => ModelOp::SetAgentAccess {
            agent: rng.gen_range(0..AGENTS.len() as u8),
            access: rng.gen_range(0..3),
        },
        112..=114 => ModelOp::Read {
            session,
            path: p,
            agent_scope: true,
        },
        115..=116 => ModelOp::ReadSkill {
            session,
            file: rng.gen_range(0..SKILL_FILES.len() as u8),
        },
        117..=118 | 307 => ModelOp::FaultySweep {
            percent: rng.gen_range(20..80),
        },
        119..=120 => ModelOp::CrashSweep {
            obligations: rng.gen_bool(0.5),
        },
        43..=44 | 121..=123 | 220..=224 => ModelOp::WriteDuringSweep { session, path: p },
        124..=128 => ModelOp::DeleteSession { session },
        129 => ModelOp::DeleteAgent {
            agent: rng.gen_range(0..AGENTS.len() as u8),
        },
        130..=132 => ModelOp::StoreFaults {
            error_percent: rng.gen_range(5..=20),
            key_failure_percent: rng.gen_range(10..=40),
        },
        133..=135 => ModelOp::Heal,
        136..=139 => ModelOp::JumpBack {
            hours: rng.gen_range(1..=48),
        },
        147 => ModelOp::WorkspaceBeside,
        148..=149 => ModelOp::List { session },
        150..=189 | 288..=297 => super::people_http::draw(rng, session, p),
        190..=219 | 299..=306 => super::policies::one(rng, session, p),
        236..=251 => super::close::one(rng),
        252..=279 => super::workspace_retention::one(rng),
        280..=287 => super::overflow_again::one(rng),
        308..=327 => super::erasure::one(rng),
        328..=333 => super::two_sweeps::one(rng),
        334..=339 => super::emptied_count::one(rng),
        _ => ModelOp::Hostile {
            session,
            spelling: rng.gen_range(0..super::hostile::SPELLINGS.len() as u8),
            write: rng.gen_bool(0.5),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_means_one_sequence_and_operations_round_trip_through_json() {
        let a = generate(7, 80);
        assert_eq!(a, generate(7, 80));
        assert_ne!(a, generate(8, 80));
        let json = serde_json::to_string(&a).unwrap();
        let back: Vec<ModelOp> = serde_json::from_str(&json).unwrap();
        assert_eq!(a, back);
    }
}

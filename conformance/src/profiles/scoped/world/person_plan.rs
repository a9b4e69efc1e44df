//! What each person guest of the scoped world asks (SPEC part SF), from its own stream: who it
//! is and what it may do ([`Grant`]), and its plan ([`person_plan`]) with what the oracle
//! expects of each request ([`Expect`]). The URL spellings are SF-3.3's table, SF-3.1's `%25`
//! and `+`, look-alike scopes (SF-1.1), and the guest paths of `model::hostile` encoded as a
//! client encodes a name; the names a person uploads are its own, so each path of the shared
//! model has one writer.

use rand::Rng;
use tidemark_reference::scoped::Access;
use tidemark_sim::seed::MasterSeed;

use super::names::{agent_file, content_for, refused_spellings, workspace_file, TRAVERSALS};
use super::oracle::Guest;
use super::session::Sess;
use super::{MAX_UPLOAD_BYTES, REF_PATH};
use crate::profiles::scoped::contract::PeopleCall;
use crate::profiles::scoped::uuid_ids::uuid_for;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

const OPS_PER_PERSON: usize = 24;

/// Who sends a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Who {
    /// The person, with their own credentials.
    Own,
    /// A person of the exposed workspace, in the same conversations by the ids it claims.
    Foreign,
    /// Nobody: no credentials.
    Anonymous,
}

/// Which session a request names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    In(Sess),
    /// An id no session has.
    Nowhere,
}

/// What the oracle expects of a request, beyond SF's shapes.
#[derive(Clone, Debug)]
pub(super) enum Expect {
    /// A file at this guest path, judged by the person's authorities and the model.
    File(String),
    /// The listing, judged by the authorities and the model.
    Listing,
    /// This refusal and no other (the reason, and the rule that decides it).
    Refused(&'static str, &'static str),
}

/// One request of a person's plan.
#[derive(Clone, Debug)]
pub(super) struct PersonOp {
    pub(super) pause_ms: u64,
    pub(super) who: Who,
    pub(super) target: Target,
    pub(super) call: PeopleCall,
    pub(super) expect: Expect,
}

/// A person's authorities (SF-2.3): `None` is no authority.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Grant {
    pub(super) agent_files: Option<Access>,
    pub(super) workspace_files: Option<Access>,
}

impl Grant {
    /// The person's access to `scope` in a session whose conversation they are in.
    pub(super) fn access(&self, scope: &str) -> Access {
        match scope {
            "session" => Access::ReadWrite,
            "agent" => self.agent_files.unwrap_or(Access::None),
            "workspace" => self.workspace_files.unwrap_or(Access::None),
            _ => Access::None,
        }
    }

    /// SF-2.7: the scopes the person may write, in order.
    pub(super) fn writable(&self) -> Vec<String> {
        ["session", "agent", "workspace"]
            .into_iter()
            .filter(|s| self.access(s).can_write())
            .map(String::from)
            .collect()
    }
}

/// Person `c`'s authorities, from the seed.
pub(super) fn grant(master: MasterSeed, c: usize) -> Grant {
    let mut rng = master.stream(&format!("scoped-world-person-{c}-grant"));
    let mut pick = || match rng.gen_range(0..3) {
        0 => None,
        1 => Some(Access::Read),
        _ => Some(Access::ReadWrite),
    };
    Grant {
        agent_files: pick(),
        workspace_files: pick(),
    }
}

/// A guest path's URL after `/files/`, each segment percent-encoded as a client building the
/// URL from a name does (a `+`, which needs no encoding in a path, is left as it is).
fn encoded(guest_path: &str) -> String {
    const SEGMENT: &AsciiSet = &CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'#')
        .add(b'%')
        .add(b'<')
        .add(b'>')
        .add(b'?')
        .add(b'\\')
        .add(b'^')
        .add(b'`')
        .add(b'{')
        .add(b'|')
        .add(b'}');
    guest_path
        .split('/')
        .map(|s| utf8_percent_encode(s, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// SF-3's spellings of a session file's name: the URLs after `/files/` that name it, and its
/// guest path. Only the person writes these names.
fn names(t: &crate::profiles::scoped::contract::Turn, c: usize) -> Vec<(Vec<String>, String)> {
    use crate::profiles::scoped::model::hostile::{Fit, Verdict, SPELLINGS};
    let mut out: Vec<(Vec<String>, String)> = [
        (
            vec![format!("session/p{c}-notes.md")],
            format!("session/p{c}-notes.md"),
        ),
        (
            vec!["session/my%20notes.md".into()],
            "session/my notes.md".into(),
        ),
        (
            vec!["session/100%25.md".into(), "session/100%.md".into()],
            "session/100%.md".into(),
        ),
        (vec!["session/50%2541.md".into()], "session/50%41.md".into()),
        (vec!["session/a+b.md".into()], "session/a+b.md".into()),
    ]
    .into();
    let id = |short: &str| uuid_for("scoped-world", short);
    let fit = Fit {
        prefix_bytes: format!(
            "sessions/{}/{}/{}/",
            id(&t.workspace),
            id(&t.agent),
            id(&t.session)
        )
        .len(),
    };
    for s in SPELLINGS.iter().filter(|s| s.verdict == Verdict::Name) {
        let p = s.guest_path(&fit);
        if !out.iter().any(|(_, g)| *g == p) {
            out.push((vec![encoded(&p)], p));
        }
    }
    out
}

/// URLs after `/files/` every implementation refuses, with the reason and rule: SF-3.3's
/// table, look-alike scopes (SF-1.1), and the guest paths SC-2 refuses (the traversals and the
/// hostile table's) encoded as a client encodes a name, which one decoding gives back.
fn refused_urls(
    t: &crate::profiles::scoped::contract::Turn,
) -> Vec<(String, &'static str, &'static str)> {
    let mut out: Vec<(String, &'static str, &'static str)> = [
        ("session/%2e%2e/x.md", "traversal", "SC-2.2"),
        ("session/../x.md", "traversal", "SC-2.2"),
        ("session/%252e%252e/x.md", "traversal", "SC-2.2"),
        ("session/a%2Fb.md", "traversal", "SF-3.2"),
        ("session/a%5Cb.md", "traversal", "SC-2.2"),
        ("session/dir/", "directory_path", "SC-2.5"),
        ("session/a//b.md", "empty_segment", "SC-2.3"),
        ("session/%20notes.md", "surrounding_whitespace", "SC-2.3"),
        ("session/a%09.md", "control_character", "SC-2.3"),
        ("session/.tidemark-text/x", "reserved_path", "SC-1.4"),
        ("session", "empty_path", "SC-2.3"),
        ("session/", "empty_path", "SC-2.3"),
        ("Session/x.md", "unknown_scope", "SF-1.1"),
        ("sessions/x.md", "unknown_scope", "SF-1.1"),
        ("skill/tools/README.md", "unknown_scope", "SF-1.1"),
    ]
    .iter()
    .map(|(u, r, rule)| (u.to_string(), *r, *rule))
    .collect();
    for (p, reason, rule) in refused_spellings(t) {
        let url = encoded(&p);
        let scope = p.split('/').next().unwrap_or_default();
        if !TRAVERSALS.contains(&p.as_str()) && scope != "session" {
            // The first segment is the scope segment: not exactly a scope's name, it is
            // refused as one (SF-1.1) before the path's shape is looked at (SF-2.5); an empty
            // one is the implementation's own (SF-1.1).
            if !scope.is_empty() {
                out.push((url, "unknown_scope", "SF-1.1"));
            }
            continue;
        }
        out.push((url, reason, rule));
    }
    out
}

/// `content` padded to exactly `bytes` bytes (some of them not ASCII).
fn sized(content: String, bytes: usize) -> String {
    let mut s = content;
    while s.len() + "·".len() <= bytes && s.len() < bytes / 2 {
        s.push('·');
    }
    while s.len() < bytes {
        s.push('x');
    }
    s
}

/// A request by someone who may learn nothing of the session (another workspace's person, or no
/// one signed in): a listing, a download or an upload, each refused alike.
fn must_learn_nothing(
    rng: &mut impl Rng,
    c: usize,
    upload: &mut impl FnMut(String, &str, Option<usize>) -> PeopleCall,
) -> PeopleCall {
    match rng.gen_range(0..3) {
        0 => PeopleCall::List,
        1 => PeopleCall::Download {
            url_path: "session/keep.md".into(),
        },
        _ => upload(
            format!("session/p{c}-notes.md"),
            &format!("session/p{c}-notes.md"),
            None,
        ),
    }
}

/// Person `c`'s plan, from its own stream.
pub(super) fn person_plan(master: MasterSeed, g: &Guest, grant: Grant) -> Vec<PersonOp> {
    let c = g.c;
    let mut rng = master.stream(&format!("scoped-world-person-{c}"));
    let mut n = 0;
    let mut plan = Vec::new();
    for _ in 0..OPS_PER_PERSON {
        let pause_ms = if rng.gen_bool(0.05) {
            rng.gen_range(800..1_500)
        } else {
            rng.gen_range(5..250)
        };
        let s = match rng.gen_range(0..10) {
            0..=4 => Sess::Active,
            5..=7 => Sess::Shut,
            _ => Sess::Kept,
        };
        let t = g.turn(s);
        let names = names(&t, c);
        let mut upload = |url: String, path: &str, bytes: Option<usize>| {
            n += 1;
            let content = content_for(&t, path, &format!("p{c}n{n}"));
            PeopleCall::Upload {
                url_path: url,
                content: match bytes {
                    Some(b) => sized(content, b),
                    None => content,
                },
            }
        };
        let file = |call: PeopleCall, path: String| (call, Expect::File(path));
        let (who, target, (call, expect)) = match rng.gen_range(0..100) {
            0..=24 => {
                let (urls, path) = &names[rng.gen_range(0..names.len())];
                let url = urls[rng.gen_range(0..urls.len())].clone();
                (
                    Who::Own,
                    Target::In(s),
                    file(upload(url, path, None), path.clone()),
                )
            }
            25..=36 => {
                let mut choices: Vec<(String, String)> = names
                    .iter()
                    .map(|(u, p)| (u[u.len() - 1].clone(), p.clone()))
                    .collect();
                // What the agent wrote: the person downloads the same bytes (SF-1.2).
                for p in [
                    "session/notes.md",
                    "session/data.md",
                    "session/keep.md",
                    "agent/mem.md",
                    "agent/keep.md",
                    REF_PATH,
                ] {
                    choices.push((encoded(p), p.to_string()));
                }
                choices.push((agent_file(c), agent_file(c)));
                choices.push((workspace_file(c), workspace_file(c)));
                let (url, path) = choices[rng.gen_range(0..choices.len())].clone();
                (
                    Who::Own,
                    Target::In(s),
                    file(PeopleCall::Download { url_path: url }, path),
                )
            }
            37..=43 => {
                let (urls, path) = &names[rng.gen_range(0..names.len())];
                let url = urls[rng.gen_range(0..urls.len())].clone();
                (
                    Who::Own,
                    Target::In(s),
                    file(PeopleCall::Remove { url_path: url }, path.clone()),
                )
            }
            44..=53 => (Who::Own, Target::In(s), (PeopleCall::List, Expect::Listing)),
            54..=63 => {
                let urls = refused_urls(&t);
                let (url, reason, rule) = urls[rng.gen_range(0..urls.len())].clone();
                let call = if rng.gen_bool(0.5) {
                    upload(url, "session/refused.md", None)
                } else {
                    PeopleCall::Download { url_path: url }
                };
                (
                    Who::Own,
                    Target::In(s),
                    (call, Expect::Refused(reason, rule)),
                )
            }
            64..=71 => {
                // Agent and workspace scope: the person's own file, or a removal of what
                // someone else put there when the person may only read it (SF-4.4).
                let agent = rng.gen_bool(0.5);
                let (own, theirs, access) = if agent {
                    (agent_file(c), "agent/keep.md", grant.agent_files)
                } else {
                    (workspace_file(c), REF_PATH, grant.workspace_files)
                };
                let read_only = !access.unwrap_or(Access::None).can_write();
                let call = match rng.gen_range(0..3) {
                    0 if read_only && !(agent && s == Sess::Shut) => PeopleCall::Remove {
                        url_path: theirs.to_string(),
                    },
                    0 | 1 => upload(own.clone(), &own, None),
                    _ => PeopleCall::Remove {
                        url_path: own.clone(),
                    },
                };
                let path = match &call {
                    PeopleCall::Remove { url_path } => url_path.clone(),
                    _ => own,
                };
                (Who::Own, Target::In(s), file(call, path))
            }
            72..=79 => {
                // Another workspace's person: told exactly what a session nobody has is told.
                let call = must_learn_nothing(&mut rng, c, &mut upload);
                let target = if rng.gen_bool(0.8) {
                    Target::In(s)
                } else {
                    Target::Nowhere
                };
                (
                    Who::Foreign,
                    target,
                    (call, Expect::Refused("unknown_entity", "SF-2.2")),
                )
            }
            80..=84 => {
                let call = if rng.gen_bool(0.5) {
                    PeopleCall::List
                } else {
                    PeopleCall::Download {
                        url_path: "session/keep.md".into(),
                    }
                };
                (
                    Who::Own,
                    Target::Nowhere,
                    (call, Expect::Refused("unknown_entity", "SF-2.2")),
                )
            }
            85..=91 => {
                let call = must_learn_nothing(&mut rng, c, &mut upload);
                let target = if rng.gen_bool(0.5) {
                    Target::In(s)
                } else {
                    Target::Nowhere
                };
                (
                    Who::Anonymous,
                    target,
                    (call, Expect::Refused("unauthenticated", "SF-2.1")),
                )
            }
            _ => {
                // At the limit, and one byte past it (SF-4.3).
                let path = format!("session/p{c}-big.md");
                let limit = MAX_UPLOAD_BYTES as usize;
                if rng.gen_bool(0.5) {
                    (
                        Who::Own,
                        Target::In(s),
                        file(upload(path.clone(), &path, Some(limit)), path),
                    )
                } else {
                    let call = upload(path.clone(), &path, Some(limit + 1));
                    (
                        Who::Own,
                        Target::In(s),
                        (call, Expect::Refused("too_large", "SF-4.3")),
                    )
                }
            }
        };
        plan.push(PersonOp {
            pause_ms,
            who,
            target,
            call,
            expect,
        });
    }
    plan
}

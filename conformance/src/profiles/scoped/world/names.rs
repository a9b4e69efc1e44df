//! What the scoped world's files are named and hold, as the guests' plans, the persons' plans
//! and the oracle all spell them: who wrote a file ([`content_for`], which the oracle's identity
//! check reads back), the paths every implementation must refuse ([`TRAVERSALS`],
//! [`refused_spellings`]), and the files a person writes that its agent guest reads by name
//! ([`readable_by_agent`]). Below the plans and the oracle, so each uses it one way.

use crate::profiles::scoped::contract::Turn;

/// Who wrote a file, and what: a read returning anything else saw another workspace, agent,
/// session or path.
pub(super) fn content_for(t: &Turn, path: &str, tag: &str) -> String {
    format!("{}/{}/{}/{path}#{tag}", t.workspace, t.agent, t.session)
}

/// Spellings of traversal every implementation must refuse (SC-2.2), whatever it stores.
pub(super) const TRAVERSALS: [&str; 4] = [
    "session/sub/../notes.md",
    "session/%2e%2e/notes.md",
    "agent/../session/notes.md",
    "session/./notes.md",
];

/// Paths every implementation must refuse, whatever it stores, with the reason and rule: the
/// traversals above and the hostile spellings SPEC refuses (`model::hostile`), the key-length
/// one fitted to `t`'s session.
pub(super) fn refused_spellings(t: &Turn) -> Vec<(String, &'static str, &'static str)> {
    use crate::profiles::scoped::model::hostile::{Fit, Verdict, SPELLINGS};
    // The store sees the UUIDs the host gives it (`apply`), not the clients' short names.
    let id = |short: &str| crate::profiles::scoped::uuid_ids::uuid_for("scoped-world", short);
    let fit = Fit {
        prefix_bytes: format!(
            "sessions/{}/{}/{}/",
            id(&t.workspace),
            id(&t.agent),
            id(&t.session)
        )
        .len(),
    };
    TRAVERSALS
        .iter()
        .map(|p| (p.to_string(), "traversal", "SC-2.2"))
        .chain(SPELLINGS.iter().filter_map(|s| match s.verdict {
            Verdict::Refused(reason) => Some((s.guest_path(&fit), reason, s.rule)),
            Verdict::Name => None,
        }))
        .collect()
}

/// Person `c`'s agent-scope and workspace-scope files (only the person writes them).
pub(super) fn agent_file(c: usize) -> String {
    format!("agent/p{c}-brief.md")
}

pub(super) fn workspace_file(c: usize) -> String {
    format!("workspace/p{c}-guide.md")
}

/// The files of person `c` its agent guest reads by name, through its kept or active session.
pub(super) fn readable_by_agent(c: usize) -> Vec<String> {
    let mut out: Vec<String> = vec![
        format!("session/p{c}-notes.md"),
        "session/my notes.md".into(),
        "session/100%.md".into(),
        "session/50%41.md".into(),
        "session/a+b.md".into(),
        format!("session/p{c}-big.md"),
    ];
    out.extend([agent_file(c), workspace_file(c)]);
    out
}

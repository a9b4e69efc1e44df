//! The implementation's directory names in an exploration (SP-1.2 leaves the naming function
//! to each implementation), so it judges behaviour, not a hash.
//!
//! After every start the implementation is asked the `names` of every caller the exploration
//! uses. The first answers rename the model's directories (eviction breaks ties by listing
//! path, which holds the names, so the model must compute with the implementation's own); later
//! answers must be the same (names never change, SP-1.2). Requests spelling another member's
//! directory (`@bob/…`) carry the implementation's name, links are planted where it keeps its
//! directories, and orders that follow names (a listing, the sessions a sweep names) are
//! compared as sets; eviction order is not a name order and stays exact.

use std::collections::BTreeMap;

use super::ops::{caller, PLACES, WHO};
use super::signature::NamesProblem;
use crate::profiles::scratchpad::contract::Driver;
use crate::profiles::scratchpad::contract::{Bytes, Caller, Outcome, Request};
use crate::profiles::scratchpad::model::ScratchpadModel;
use tidemark_reference::clock::Timestamp;

/// Oracle name -> implementation name, for session and requester directories.
#[derive(Clone, Debug, Default)]
pub struct NameMap {
    sessions: BTreeMap<String, String>,
    requesters: BTreeMap<String, String>,
    /// Whether a first start has been answered.
    learned: bool,
}

impl NameMap {
    /// Asks the running implementation for the names of every caller. The first time, the
    /// model is renamed to match; after that the answers must not change. An answer that is not
    /// a `names` outcome, two callers sharing a name, or a changed name is an error:
    /// (expected, actual, what is wrong).
    pub async fn learn(
        &mut self,
        model: &mut ScratchpadModel,
        driver: &mut dyn Driver,
        now: Timestamp,
    ) -> Result<(), (String, String, NamesProblem)> {
        let mut map = NameMap::default();
        for who in 0..WHO.len() as u8 {
            for place in 0..PLACES.len() as u8 {
                let c = caller(who, place);
                let (s0, r0) = model.recommended_names(&c);
                let theirs = driver
                    .call(now, &Request::Names { caller: c.clone() })
                    .await
                    .map_err(|e| {
                        (
                            format!("names of {}", c.display()),
                            e.to_string(),
                            NamesProblem::NotAnswered,
                        )
                    })?;
                match theirs {
                    Outcome::Names {
                        session: s1,
                        requester: r1,
                    } => {
                        map.insert(&c, s0, s1, true)?;
                        map.insert(&c, r0, r1, false)?;
                    }
                    other => {
                        return Err((
                            format!("names of {}: a names outcome (PROTOCOL.md)", c.display()),
                            other.summary(),
                            NamesProblem::NotAnswered,
                        ))
                    }
                }
            }
        }
        if self.learned {
            if map.sessions != self.sessions || map.requesters != self.requesters {
                return Err((
                    "the same names after a restart (SP-1.2)".into(),
                    format!(
                        "sessions {:?} and requesters {:?}, before {:?} and {:?}",
                        map.sessions.values().collect::<Vec<_>>(),
                        map.requesters.values().collect::<Vec<_>>(),
                        self.sessions.values().collect::<Vec<_>>(),
                        self.requesters.values().collect::<Vec<_>>()
                    ),
                    NamesProblem::Changed,
                ));
            }
            return Ok(());
        }
        model.rename(map.sessions.clone(), map.requesters.clone());
        *self = NameMap {
            learned: true,
            ..map
        };
        Ok(())
    }

    fn insert(
        &mut self,
        c: &Caller,
        ours: String,
        theirs: String,
        session: bool,
    ) -> Result<(), (String, String, NamesProblem)> {
        let (kind, table) = if session {
            ("session", &mut self.sessions)
        } else {
            ("requester", &mut self.requesters)
        };
        crate::profiles::scratchpad::names::one_segment(kind, &theirs).map_err(|broken| {
            (
                format!("names of {} to follow SP-1.2", c.display()),
                broken,
                NamesProblem::NotOneSegment,
            )
        })?;
        if let Some((other, _)) = table.iter().find(|(o, t)| **t == theirs && **o != ours) {
            return Err((
                format!(
                    "distinct {kind} names (SP-1.2): {} and the {kind} named {other} by the model",
                    c.display()
                ),
                format!("both named {theirs}"),
                NamesProblem::Shared,
            ));
        }
        if let Some(before) = table.get(&ours).filter(|before| **before != theirs) {
            return Err((
                format!(
                    "one {kind} name for {} however it is asked (SP-1.2)",
                    c.display()
                ),
                format!("named {before}, then {theirs}"),
                NamesProblem::Changed,
            ));
        }
        table.insert(ours, theirs);
        Ok(())
    }

    /// The implementation's name for the recommended session directory name `ours`.
    pub fn session<'a>(&'a self, ours: &'a str) -> &'a str {
        self.sessions.get(ours).map_or(ours, String::as_str)
    }

    /// The implementation's name for the recommended requester directory name `ours`.
    pub fn requester<'a>(&'a self, ours: &'a str) -> &'a str {
        self.requesters.get(ours).map_or(ours, String::as_str)
    }

    /// A path with every segment that is an oracle requester name translated: the member's own
    /// directory first, and a path that spells another member's directory inside it
    /// (`<alice>/<bob>/notes.md`, written as `@bob/notes.md` by alice: her own path wins).
    fn member_path(&self, path: &str) -> String {
        path.split('/')
            .map(|seg| self.requester(seg))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The request with the implementation's names, for the model and the implementation alike.
    pub fn request(&self, req: &Request) -> Request {
        let translate = |p: &Bytes| match std::str::from_utf8(&p.0) {
            Ok(s) => Bytes(self.member_path(s).into_bytes()),
            Err(_) => p.clone(),
        };
        match req {
            Request::Write {
                caller,
                path,
                content,
            } => Request::Write {
                caller: caller.clone(),
                path: translate(path),
                content: content.clone(),
            },
            Request::Read { caller, path } => Request::Read {
                caller: caller.clone(),
                path: translate(path),
            },
            Request::Remove { caller, path } => Request::Remove {
                caller: caller.clone(),
                path: translate(path),
            },
            Request::List {
                caller,
                path: Some(path),
            } => Request::List {
                caller: caller.clone(),
                path: Some(translate(path)),
            },
            other => other.clone(),
        }
    }
}

/// Whether the implementation's outcome is the expected one: a refusal by its reason alone, a
/// listing and a sweep's sessions as sets (their order follows names), all else exactly.
pub fn same(expected: &Outcome, actual: &Outcome) -> bool {
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    match (expected, actual) {
        (Outcome::Refused { reason: x, .. }, Outcome::Refused { reason: y, .. }) => x == y,
        (Outcome::Listing { entries: a }, Outcome::Listing { entries: b }) => {
            let key = |e: &[crate::profiles::scratchpad::contract::Entry]| {
                let mut v: Vec<(String, u64)> =
                    e.iter().map(|e| (e.path.clone(), e.size)).collect();
                v.sort();
                v
            };
            key(a) == key(b)
        }
        (Outcome::Swept { swept: a }, Outcome::Swept { swept: b }) => sorted(a) == sorted(b),
        _ => expected == actual,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::DriverError;
    use crate::profiles::scratchpad::model::ModelKnobs;

    /// Answers `names` with names made of `tag`: one per thread, pairing and requester, or, with
    /// `same`, one requester name for everyone.
    struct Namer {
        tag: &'static str,
        same: bool,
    }

    #[async_trait::async_trait]
    impl Driver for Namer {
        async fn call(&mut self, _: Timestamp, req: &Request) -> Result<Outcome, DriverError> {
            let Request::Names { caller } = req else {
                return Err(DriverError("only names here".into()));
            };
            let tag = self.tag;
            let session = match &caller.thread {
                Some(t) => format!("t-{tag}{}", t.to_lowercase()),
                None => format!("c-{tag}{}", caller.requester),
            };
            let requester = if self.same {
                "everyone".to_string()
            } else {
                format!("{tag}{}", caller.requester)
            };
            Ok(Outcome::Names { session, requester })
        }

        async fn stop(&mut self) -> Result<(), DriverError> {
            Ok(())
        }
    }

    fn now() -> Timestamp {
        tidemark_sim::clock::EPOCH
    }

    #[tokio::test]
    async fn the_first_answers_rename_the_model_and_later_ones_must_repeat_them() {
        let mut model = ScratchpadModel::new(ModelKnobs::default());
        let mut names = NameMap::default();
        let mut namer = Namer {
            tag: "x",
            same: false,
        };
        names.learn(&mut model, &mut namer, now()).await.unwrap();
        let alice = caller(0, 0);
        let Outcome::Names { session, .. } = model.apply(
            0,
            &Request::Names {
                caller: alice.clone(),
            },
        ) else {
            panic!("names")
        };
        assert_eq!(
            session, "t-xt1",
            "the model names alice's thread as the implementation does"
        );

        let mut renamer = Namer {
            tag: "y",
            same: false,
        };
        let (expected, actual, problem) = names
            .learn(&mut model, &mut renamer, now())
            .await
            .unwrap_err();
        assert_eq!(problem, NamesProblem::Changed);
        assert_eq!(expected, "the same names after a restart (SP-1.2)");
        assert!(
            actual.contains("t-yt1") && actual.contains("t-xt1"),
            "{actual}"
        );
    }

    #[tokio::test]
    async fn two_requesters_answered_with_one_name_are_refused() {
        let mut model = ScratchpadModel::new(ModelKnobs::default());
        let mut namer = Namer {
            tag: "z",
            same: true,
        };
        let (expected, actual, problem) = NameMap::default()
            .learn(&mut model, &mut namer, now())
            .await
            .unwrap_err();
        assert_eq!(problem, NamesProblem::Shared);
        assert!(
            expected.starts_with("distinct requester names (SP-1.2)"),
            "{expected}"
        );
        assert_eq!(actual, "both named everyone");
    }
}

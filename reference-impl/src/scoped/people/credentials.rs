//! The reference's credential scheme for the people's files API (SPEC SF-2.1): an opaque bearer
//! token the API mints for a person, standing for their workspace, their storage authorities
//! and the conversations they are in. Tokens live in the running process (a restarted one
//! mints again; PROTOCOL.md says the harness asks again after a restart).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::scoped::permissions::{Access, PersonGrant};

/// Who a person is to the API: what a deployment's identity system would say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub workspace: String,
    /// The `agent_files` storage authority (absent: none).
    #[serde(default)]
    pub agent_files: Option<Access>,
    /// The `workspace_files` storage authority (absent: none).
    #[serde(default)]
    pub workspace_files: Option<Access>,
    /// The sessions whose conversations the person is in.
    #[serde(default)]
    pub sessions: BTreeSet<String>,
}

impl Person {
    /// The person's grant in session `session` (SF-2.3).
    pub fn grant_in(&self, session: &str) -> PersonGrant {
        PersonGrant {
            in_conversation: self.sessions.contains(session),
            agent_files: self.agent_files,
            workspace_files: self.workspace_files,
        }
    }
}

/// The tokens this process minted. A token is the sha256 of a secret the deployment hands in
/// and a counter: unguessable without the secret, and the same on every run given the same one.
/// So every process needs a secret of its own: a restarted process given its predecessor's
/// secret mints that process's first token again, for whoever asks first, and a person's old
/// token would name someone else (the scoped world found it; it hands each boot its own secret).
pub struct Credentials {
    secret: Vec<u8>,
    issued: Mutex<BTreeMap<String, Person>>,
}

impl Credentials {
    pub fn new(secret: &[u8]) -> Credentials {
        Credentials {
            secret: secret.to_vec(),
            issued: Mutex::new(BTreeMap::new()),
        }
    }

    /// Mints a token for `person`; answers the headers a request carries it in.
    pub fn mint(&self, person: Person) -> BTreeMap<String, String> {
        let mut issued = self
            .issued
            .lock()
            .expect("the token table is never poisoned");
        let mut h = Sha256::new();
        h.update(&self.secret);
        h.update((issued.len() as u64).to_be_bytes());
        let token = format!("tdm_{}", hex::encode(h.finalize()));
        issued.insert(token.clone(), person);
        BTreeMap::from([("authorization".to_string(), format!("Bearer {token}"))])
    }

    /// The person an `Authorization` header's value stands for, if this process minted it.
    pub fn person(&self, authorization: Option<&str>) -> Option<Person> {
        let token = authorization?.strip_prefix("Bearer ")?;
        self.issued
            .lock()
            .expect("the token table is never poisoned")
            .get(token)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_token_names_its_person_and_nothing_else_does() {
        let c = Credentials::new(b"secret");
        let alice = Person {
            workspace: "w1".into(),
            ..Person::default()
        };
        let h = c.mint(alice.clone());
        let bob = c.mint(Person {
            workspace: "w2".into(),
            ..Person::default()
        });
        assert_ne!(h, bob);
        assert_eq!(
            c.person(h.get("authorization").map(String::as_str)),
            Some(alice)
        );
        assert_eq!(c.person(Some("Bearer tdm_0")), None);
        assert_eq!(c.person(None), None);
    }
}

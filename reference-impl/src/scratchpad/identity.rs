//! Session and requester identities, hashed before they reach a path (SP-1.2).
//!
//! A thread is one session for everyone in it; outside a thread the channel-and-user pairing is
//! the session, private to that user. The directory name carries the kind (`t-`/`c-`) so the
//! sweeper can pick the retention timer from the disk alone, with no separate state.

use sha2::{Digest, Sha256};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SessionKind {
    Thread,
    Pairing,
}

impl SessionKind {
    pub fn prefix(self) -> &'static str {
        match self {
            SessionKind::Thread => "t-",
            SessionKind::Pairing => "c-",
        }
    }
}

/// Who is asking and where: the context of one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallContext {
    pub requester: String,
    pub channel: String,
    /// `Some` inside a thread; `None` in the channel itself.
    pub thread: Option<String>,
}

/// Hex characters kept from the SHA-256 digest: 64 bits, enough that collisions within one
/// scratchpad are not a practical concern, short enough to read in a listing.
pub const HASH_HEX_LEN: usize = 16;

/// `hex(sha256(tag || 0x00 || part1 || 0x00 || part2 ...))[..16]` (SP-1.2).
pub fn digest(tag: &str, parts: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(tag.as_bytes());
    for p in parts {
        h.update([0u8]);
        h.update(p.as_bytes());
    }
    let mut s = hex::encode(h.finalize());
    s.truncate(HASH_HEX_LEN);
    s
}

impl CallContext {
    pub fn kind(&self) -> SessionKind {
        if self.thread.is_some() {
            SessionKind::Thread
        } else {
            SessionKind::Pairing
        }
    }

    /// The session directory name: `t-<hash>` or `c-<hash>`.
    pub fn session_dir(&self) -> String {
        match &self.thread {
            Some(t) => format!("t-{}", digest("thread", &[&self.channel, t])),
            None => format!("c-{}", digest("pairing", &[&self.channel, &self.requester])),
        }
    }

    /// The session directory name when a thread id names one session whatever its channel
    /// (SPEC.md's variant `thread_identity=global`): a pairing is named as always.
    pub fn global_thread_session_dir(&self) -> String {
        match &self.thread {
            Some(t) => format!("t-{}", digest("thread", &[t])),
            None => self.session_dir(),
        }
    }

    /// The requester directory name inside a session.
    pub fn requester_dir(&self) -> String {
        requester_dir(&self.requester)
    }
}

pub fn requester_dir(requester: &str) -> String {
    digest("requester", &[requester])
}

/// Whether a top-level directory name is one this scheme writes, and of which kind.
pub fn parse_session_dir(name: &str) -> Option<SessionKind> {
    let kind = match name.get(..2)? {
        "t-" => SessionKind::Thread,
        "c-" => SessionKind::Pairing,
        _ => return None,
    };
    let rest = &name[2..];
    let is_hash = rest.len() == HASH_HEX_LEN
        && rest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    is_hash.then_some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(req: &str, thread: Option<&str>) -> CallContext {
        CallContext {
            requester: req.into(),
            channel: "C1".into(),
            thread: thread.map(Into::into),
        }
    }

    #[test]
    fn a_thread_is_one_session_for_everyone_in_it() {
        assert_eq!(
            ctx("alice", Some("T")).session_dir(),
            ctx("bob", Some("T")).session_dir()
        );
    }

    #[test]
    fn a_channel_pairing_is_private_to_its_user() {
        assert_ne!(
            ctx("alice", None).session_dir(),
            ctx("bob", None).session_dir()
        );
    }

    #[test]
    fn the_kind_survives_the_round_trip_through_a_directory_name() {
        assert_eq!(
            parse_session_dir(&ctx("a", Some("T")).session_dir()),
            Some(SessionKind::Thread)
        );
        assert_eq!(
            parse_session_dir(&ctx("a", None).session_dir()),
            Some(SessionKind::Pairing)
        );
        assert_eq!(parse_session_dir("t-notahash"), None);
        assert_eq!(parse_session_dir("lost+found"), None);
    }

    #[test]
    fn the_hash_is_pinned_so_listings_agree_across_implementations() {
        // SP-1.2 fixes the function; this vector is repeated in SPEC.md.
        assert_eq!(requester_dir("alice"), "151d8375a7636540");
        assert_eq!(requester_dir("alice").len(), 16);
    }
}

//! Per-scope permissions from the settings cascade: deployment default < workspace settings <
//! agent settings, each layer overriding only what it sets. Session scope is always read/write
//! and skills always read-only; neither is settable, so no layer can say otherwise.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::mutants::ScopedMutant;

/// The three scopes a guest can write to, plus the read-only skill view: what a permission is
/// granted over (the keys each scope's files live under are [`super::layout`]'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Session,
    Agent,
    Workspace,
    /// `skill/<slug>/<path>`: read-only, resolved through the turn's skill table.
    Skill,
}

impl Scope {
    /// The writable scopes in the order a listing and a correction present them.
    pub const FILE_SCOPES: [Scope; 3] = [Scope::Session, Scope::Agent, Scope::Workspace];

    /// The guest-facing name (the first segment of a guest path).
    pub fn guest_name(self) -> &'static str {
        match self {
            Scope::Session => "session",
            Scope::Agent => "agent",
            Scope::Workspace => "workspace",
            Scope::Skill => "skill",
        }
    }

    pub fn from_guest_name(s: &str) -> Option<Scope> {
        match s {
            "session" => Some(Scope::Session),
            "agent" => Some(Scope::Agent),
            "workspace" => Some(Scope::Workspace),
            "skill" => Some(Scope::Skill),
            _ => None,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.guest_name())
    }
}

/// What an agent may do with a scope. Ordered: write implies read (there is no write-only
/// value, because a write extracts the file's text straight back out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    None,
    Read,
    ReadWrite,
}

impl Access {
    pub fn can_read(self) -> bool {
        self >= Access::Read
    }
    pub fn can_write(self) -> bool {
        self == Access::ReadWrite
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Access::None => "none",
            Access::Read => "read",
            Access::ReadWrite => "read-write",
        }
    }
    pub fn parse(s: &str) -> Option<Access> {
        match s {
            "none" => Some(Access::None),
            "read" => Some(Access::Read),
            "read-write" => Some(Access::ReadWrite),
            _ => None,
        }
    }
}

/// One layer of the cascade. `None` means "not set here; inherit".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeSettings {
    pub agent: Option<Access>,
    pub workspace: Option<Access>,
}

/// The effective permissions of one agent's turn, or of one person's request (SPEC SF-2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permissions {
    /// Always read/write for an agent's turn; for a person, read/write only in the
    /// conversation they are in.
    pub session: Access,
    pub agent: Access,
    pub workspace: Access,
}

/// What a person may do through the people's files API (SPEC SF-2.3): their own authorities,
/// never the agent's settings cascade (SF-2.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonGrant {
    /// Whether the person is in the session's conversation: session scope is read/write to
    /// them, else none.
    pub in_conversation: bool,
    /// The `agent_files` storage authority.
    pub agent_files: Option<Access>,
    /// The `workspace_files` storage authority.
    pub workspace_files: Option<Access>,
}

impl PersonGrant {
    /// The person's access to each scope. The `person-wrong-scope-authority` mutant checks
    /// workspace scope against the agent-files authority.
    pub fn permissions(&self, mutant: Option<ScopedMutant>) -> Permissions {
        let agent = self.agent_files.unwrap_or(Access::None);
        Permissions {
            session: if self.in_conversation {
                Access::ReadWrite
            } else {
                Access::None
            },
            agent,
            workspace: if mutant == Some(ScopedMutant::PersonWrongScopeAuthority) {
                agent
            } else {
                self.workspace_files.unwrap_or(Access::None)
            },
        }
    }
}

impl Permissions {
    /// The built-in default: agent read/write, workspace read-only (so a prompt that talks an
    /// agent into overwriting shared reference material finds it cannot).
    pub fn builtin_default(mutant: Option<ScopedMutant>) -> Permissions {
        Permissions {
            session: Access::ReadWrite,
            agent: Access::ReadWrite,
            workspace: if mutant == Some(ScopedMutant::WorkspaceWritableByDefault) {
                Access::ReadWrite
            } else {
                Access::Read
            },
        }
    }

    /// Applies the cascade: deployment, then workspace, then agent settings.
    pub fn cascade(
        deployment: ScopeSettings,
        workspace: ScopeSettings,
        agent: ScopeSettings,
        mutant: Option<ScopedMutant>,
    ) -> Permissions {
        let mut p = Permissions::builtin_default(mutant);
        for layer in [deployment, workspace, agent] {
            if let Some(a) = layer.agent {
                p.agent = a;
            }
            if let Some(w) = layer.workspace {
                p.workspace = w;
            }
        }
        p
    }

    /// The access granted to a scope.
    pub fn for_scope(&self, scope: Scope, mutant: Option<ScopedMutant>) -> Access {
        let a = match scope {
            Scope::Session => self.session,
            Scope::Agent => self.agent,
            Scope::Workspace => self.workspace,
            Scope::Skill => Access::Read,
        };
        if a == Access::None && mutant == Some(ScopedMutant::NoneStillReadable) {
            Access::Read
        } else {
            a
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_session_rw_agent_rw_workspace_read_only() {
        let p = Permissions::cascade(
            ScopeSettings::default(),
            ScopeSettings::default(),
            ScopeSettings::default(),
            None,
        );
        assert_eq!(p.for_scope(Scope::Session, None), Access::ReadWrite);
        assert_eq!(p.for_scope(Scope::Agent, None), Access::ReadWrite);
        assert_eq!(p.for_scope(Scope::Workspace, None), Access::Read);
        assert_eq!(p.for_scope(Scope::Skill, None), Access::Read);
    }

    #[test]
    fn the_agent_layer_overrides_the_workspace_layer_which_overrides_the_deployment() {
        let deployment = ScopeSettings {
            agent: Some(Access::Read),
            workspace: Some(Access::ReadWrite),
        };
        let workspace = ScopeSettings {
            agent: None,
            workspace: Some(Access::None),
        };
        let agent = ScopeSettings {
            agent: Some(Access::None),
            workspace: None,
        };
        let p = Permissions::cascade(deployment, workspace, agent, None);
        assert_eq!(p.agent, Access::None);
        assert_eq!(p.workspace, Access::None);
        let p = Permissions::cascade(
            deployment,
            ScopeSettings::default(),
            ScopeSettings::default(),
            None,
        );
        assert_eq!(p.agent, Access::Read);
        assert_eq!(p.workspace, Access::ReadWrite);
    }

    #[test]
    fn write_implies_read() {
        for a in [Access::None, Access::Read, Access::ReadWrite] {
            assert!(!a.can_write() || a.can_read());
        }
    }
}

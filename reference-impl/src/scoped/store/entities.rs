//! Workspaces, agents and sessions: created (with their settings layers) and deleted. A
//! deletion removes the rows; the database's triggers record the obligation to empty the
//! prefixes, which the sweep ([`crate::scoped::retention`]) meets.

use crate::scoped::error::ScopedError;
use crate::scoped::layout::{self, Id, TurnSpace};
use crate::scoped::metadata::{Creation, DeletionObligation, DeletionRecord, Entity};
use crate::scoped::mutants::ScopedMutant;
use crate::scoped::permissions::ScopeSettings;

use super::{session_key, settle, ScopedStore};

impl ScopedStore {
    pub async fn create_workspace(
        &self,
        ws: &str,
        settings: ScopeSettings,
    ) -> Result<(), ScopedError> {
        let ws = Id::new(ws)?;
        match self
            .meta
            .create_workspace_checked(ws.as_str(), settings, self.refuses_pending_erasure())
            .await?
        {
            Creation::ErasurePending => Err(ScopedError::ErasurePending(format!("workspace {ws}"))),
            Creation::Done | Creation::NoParent => Ok(()),
        }
    }

    pub async fn create_agent(
        &self,
        ws: &str,
        agent: &str,
        settings: ScopeSettings,
    ) -> Result<(), ScopedError> {
        let (ws, agent) = (Id::new(ws)?, Id::new(agent)?);
        match self
            .meta
            .create_agent_checked(
                ws.as_str(),
                agent.as_str(),
                settings,
                self.refuses_pending_erasure(),
            )
            .await?
        {
            Creation::Done => Ok(()),
            Creation::ErasurePending => {
                Err(ScopedError::ErasurePending(format!("agent {ws}/{agent}")))
            }
            Creation::NoParent => Err(ScopedError::UnknownEntity {
                kind: "workspace",
                id: ws.to_string(),
            }),
        }
    }

    /// A turn's space, its identifiers checked as this deployment checks them (SC-1.3).
    pub fn turn_space(
        &self,
        workspace: &str,
        agent: &str,
        session: &str,
    ) -> Result<TurnSpace, ScopedError> {
        Ok(TurnSpace::checked(
            workspace,
            agent,
            session,
            self.mutant(),
        )?)
    }

    /// The space of session `session` as a person of `workspace` holding `grant` reaches it
    /// through the people's files API (SPEC SF-2.2): the session is looked up in the person's
    /// workspace only, so a session of another workspace is `unknown_entity` exactly as one
    /// that does not exist. (The `foreign-session-served` mutant takes the first session of
    /// that id in any workspace.)
    pub async fn person_space(
        &self,
        workspace: &str,
        session: &str,
        grant: crate::scoped::permissions::PersonGrant,
    ) -> Result<TurnSpace, ScopedError> {
        let ws = Id::checked(workspace, self.mutant())?;
        let id = Id::checked(session, self.mutant())?;
        let named = self.meta.sessions_named(id.as_str()).await?;
        let found = if self.is(ScopedMutant::ForeignSessionServed) {
            named.into_iter().next()
        } else {
            named.into_iter().find(|k| k.workspace == ws.as_str())
        };
        let key = found.ok_or_else(|| ScopedError::UnknownEntity {
            kind: "session",
            id: session.to_string(),
        })?;
        Ok(self
            .turn_space(&key.workspace, &key.agent, &key.session)?
            .for_person(grant))
    }

    /// Opens a session; its activity clock starts now.
    pub async fn create_session(&self, turn: &TurnSpace) -> Result<(), ScopedError> {
        let key = session_key(turn);
        if !self.meta.create_session_checked(&key, self.now().0).await? {
            if !self.meta.session_exists(&key).await? {
                return Err(ScopedError::UnknownEntity {
                    kind: "agent",
                    id: turn.agent.to_string(),
                });
            }
            if self.is(ScopedMutant::RepeatedCreateIsActivity) {
                return self.record_activity(turn).await;
            }
        }
        Ok(())
    }

    pub(super) async fn delete_entity(
        &self,
        entity: Entity,
        kind: &'static str,
        app_prefix: String,
    ) -> Result<(), ScopedError> {
        let mut tx = self.meta.begin().await?;
        let result: Result<(), ScopedError> = async {
            let now = self.now().0;
            let (entity_id, id) = match &entity {
                Entity::Session(k) => (
                    k.session.clone(),
                    format!("{}/{}/{}", k.workspace, k.agent, k.session),
                ),
                Entity::Agent { workspace, agent } => {
                    (agent.clone(), format!("{workspace}/{agent}"))
                }
                Entity::Workspace(ws) => (ws.clone(), ws.clone()),
            };
            let app_records = self.is(ScopedMutant::AppRecordedDeletions);
            if app_records {
                // The bug: application code records the one prefix it knows about (and the
                // triggers stand down); the rows a cascade removes are never recorded.
                tx.record_deletion(&app_prefix, kind, &entity_id, now)
                    .await?;
            }
            if tx.delete_entity(&entity, now, !app_records).await? == 0 {
                return Err(ScopedError::UnknownEntity { kind, id });
            }
            Ok(())
        }
        .await;
        settle(tx, result, "commit deletion").await
    }

    /// Deletes a session; the trigger records its prefix for the sweep.
    pub async fn delete_session(&self, turn: &TurnSpace) -> Result<(), ScopedError> {
        self.delete_entity(
            Entity::Session(session_key(turn)),
            "session",
            layout::session_prefix(&turn.workspace, &turn.agent, &turn.session),
        )
        .await
    }

    /// Deletes an agent; the cascade removes its sessions and the triggers record every prefix.
    pub async fn delete_agent(&self, ws: &str, agent: &str) -> Result<(), ScopedError> {
        let (ws, agent) = (Id::new(ws)?, Id::new(agent)?);
        self.delete_entity(
            Entity::Agent {
                workspace: ws.to_string(),
                agent: agent.to_string(),
            },
            "agent",
            layout::agent_prefix(&ws, &agent),
        )
        .await
    }

    /// Deletes a workspace: its agents and sessions cascade, and the triggers record the
    /// workspace, skills, every agent and every session prefix.
    pub async fn delete_workspace(&self, ws: &str) -> Result<(), ScopedError> {
        let ws = Id::new(ws)?;
        self.delete_entity(
            Entity::Workspace(ws.to_string()),
            "workspace",
            layout::workspace_prefix(&ws),
        )
        .await
    }

    pub async fn deletion_obligations(&self) -> Result<Vec<DeletionObligation>, ScopedError> {
        self.meta.obligations().await
    }

    pub async fn deletion_records(&self) -> Result<Vec<DeletionRecord>, ScopedError> {
        self.meta.records().await
    }
}

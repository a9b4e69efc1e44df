//! Retention per workspace (SPEC SL-5): a workspace's own idle TTL, which replaces the
//! deployment's for its sessions (the idle sweep's candidate query reads it,
//! [`ScopedStore::CANDIDATES_SQL`]), and the bucket's lifecycle configuration rebuilt from every
//! workspace's retention: the three class rules of SC-7.1, and one `sessions/<ws>/` backstop rule
//! for each workspace shorter than the deployment, within the bucket's rule budget (the shortest
//! TTLs first). A workspace past the budget is sweeper-only: the idle sweep enforces its TTL and
//! the class backstop still bounds its files.

use crate::scoped::error::ScopedError;
use crate::scoped::layout::{self, Id};
use crate::scoped::lifecycle::{Filter, LifecycleConfiguration, Rule};
use crate::scoped::store::ScopedStore;
use crate::scoped::ScopedMutant;

/// The longest idle TTL a workspace may set (SL-1.4): past a century it is a typo, not a policy.
pub const MAX_TTL_DAYS: i64 = 36_500;

/// SC-7.1's session backstop, which a workspace's TTL is measured against (SL-5.2) until a
/// configuration has been put on the bucket.
pub const DEFAULT_SESSION_BACKSTOP_DAYS: i64 = 365;

/// SC-7.1's multipart abort, carried by every rule the reference puts.
pub const ABORT_INCOMPLETE_MULTIPART_DAYS: u32 = 7;

/// The class rules of SC-7.1 (`sessions/`, `agents/`, `workspaces/`): what the budget spends
/// before any workspace rule (SL-5.4).
pub const CLASS_RULES: usize = 3;

/// What the deployment is when the lifecycle configuration is built.
#[derive(Clone, Copy, Debug)]
pub struct Deployment {
    /// The session backstop being applied, in days.
    pub session_backstop_days: u32,
    /// The deployment's idle TTL (SC-5.3), in days.
    pub ttl_days: u32,
    /// The most rules the bucket may hold (S3's 1,000, or the knob).
    pub rule_limit: usize,
}

/// The whole lifecycle configuration for `retentions` (`(workspace, ttl days)`, in any order):
/// SC-7.1's three class rules, then a rule expiring `sessions/<ws>/` after the workspace's TTL
/// plus the deployment's margin (the backstop minus the deployment's TTL) for each workspace
/// whose TTL is shorter than the deployment's (SL-5.3), as many as the budget leaves, the
/// shortest TTLs first and ties by workspace id (SL-5.4). `mutant` may break it as its
/// description says.
pub fn configuration(
    deployment: Deployment,
    retentions: &[(String, i64)],
    mutant: Option<ScopedMutant>,
) -> LifecycleConfiguration {
    let mut config = LifecycleConfiguration::for_profile(
        deployment.session_backstop_days,
        ABORT_INCOMPLETE_MULTIPART_DAYS,
    );
    // The time a conversation's last file may outlive its idle TTL before the backstop takes
    // it; never negative (a backstop no longer than the TTL is refused by SC-7.2 anyway).
    let margin = i64::from(
        deployment
            .session_backstop_days
            .saturating_sub(deployment.ttl_days),
    );
    let at_default = mutant == Some(ScopedMutant::WorkspaceRuleAtDefault);
    let mut shorter: Vec<(i64, &str)> = retentions
        .iter()
        .filter(|(_, days)| at_default || *days < i64::from(deployment.ttl_days))
        .map(|(ws, days)| (*days, ws.as_str()))
        .collect();
    if mutant == Some(ScopedMutant::WorkspaceRulesById) {
        // The mutant fills the budget in workspace order, whatever the TTLs.
        shorter.sort_by_key(|(_, ws)| *ws);
    } else {
        shorter.sort();
    }
    let budget = if mutant == Some(ScopedMutant::WorkspaceRulesOverBudget) {
        usize::MAX
    } else {
        deployment.rule_limit.saturating_sub(CLASS_RULES)
    };
    for (days, ws) in shorter.into_iter().take(budget) {
        // A retention's workspace is a stored, checked id; one that is not cannot be a prefix.
        let Ok(id) = Id::new(ws) else { continue };
        config.rules.push(Rule {
            id: format!("sessions-ws-{ws}"),
            enabled: true,
            filter: Some(Filter::Prefix(layout::workspace_sessions_prefix(&id))),
            expiration_days: Some(u32::try_from(days + margin).unwrap_or(u32::MAX)),
            abort_incomplete_multipart_days: Some(ABORT_INCOMPLETE_MULTIPART_DAYS),
        });
    }
    config
}

impl ScopedStore {
    /// Replaces a workspace's retention whole (SL-5.1): `Some(days)` is its own idle TTL, `None`
    /// the deployment's again. A TTL outside 1..=[`MAX_TTL_DAYS`], or at or past the bucket's
    /// session backstop (SL-5.2), is `invalid_policy`; a workspace that does not exist
    /// `unknown_entity`; either changes nothing (SL-1.4).
    pub async fn set_workspace_retention(
        &self,
        ws: &str,
        ttl_days: Option<i64>,
    ) -> Result<(), ScopedError> {
        let ws = Id::checked(ws, self.config().mutant)?;
        let mut ttl_days = ttl_days;
        if let Some(days) = ttl_days {
            if !(1..=MAX_TTL_DAYS).contains(&days) {
                return Err(ScopedError::InvalidPolicy(format!(
                    "a workspace's idle TTL is from 1 to {MAX_TTL_DAYS} days, not {days}"
                )));
            }
            let backstop = self.bucket_session_backstop_days().await?;
            let past = if self.is(ScopedMutant::WorkspaceTtlAtBackstop) {
                days > backstop
            } else {
                days >= backstop
            };
            if past {
                return Err(ScopedError::InvalidPolicy(format!(
                    "a workspace's idle TTL of {days} days is not shorter than the bucket's \
                     {backstop}-day session backstop, which would delete files the workspace keeps"
                )));
            }
            if self.is(ScopedMutant::WorkspaceTtlOnlyShortens) {
                // The mutant clamps a longer TTL to the deployment's.
                ttl_days = Some(days.min(i64::from(self.config().session_file_ttl_days)));
            }
        } else if self.is(ScopedMutant::WorkspaceRetentionMerged) {
            // The mutant merges the PUT into what is there: an unset TTL keeps the old one.
            return if self.metadata().workspace_exists(ws.as_str()).await? {
                Ok(())
            } else {
                Err(unknown_workspace(&ws))
            };
        }
        if self
            .metadata()
            .set_workspace_retention(ws.as_str(), ttl_days)
            .await?
        {
            Ok(())
        } else {
            Err(unknown_workspace(&ws))
        }
    }

    /// The session backstop a workspace's TTL must stay under (SL-5.2): the one last put on the
    /// bucket, else SC-7.1's default.
    async fn bucket_session_backstop_days(&self) -> Result<i64, ScopedError> {
        Ok(self
            .metadata()
            .applied_session_backstop()
            .await?
            .unwrap_or(DEFAULT_SESSION_BACKSTOP_DAYS))
    }

    /// Builds the lifecycle configuration from every workspace's retention and puts it whole
    /// (SL-5.3, SC-7.5), then remembers its backstop for SL-5.2. Refused `config`, with nothing
    /// sent, when a workspace's TTL is not shorter than the backstop (SL-5.2 the other way
    /// round), when the rules pass the budget, or when SC-7.2 refuses the configuration.
    pub async fn apply_lifecycle_with_retention(
        &self,
        session_backstop_days: u32,
    ) -> Result<(), ScopedError> {
        let retentions = self.metadata().workspace_retentions().await?;
        if let Some((ws, days)) = retentions
            .iter()
            .find(|(_, days)| *days >= i64::from(session_backstop_days))
        {
            return Err(ScopedError::Config(format!(
                "a {session_backstop_days}-day session backstop would delete files workspace {ws} \
                 keeps for {days} days"
            )));
        }
        let config = configuration(
            Deployment {
                session_backstop_days,
                ttl_days: self.config().session_file_ttl_days,
                rule_limit: self.config().lifecycle_rule_limit,
            },
            &retentions,
            self.config().mutant,
        );
        if config.rules.len() > self.config().lifecycle_rule_limit {
            return Err(ScopedError::Config(format!(
                "{} lifecycle rules; the bucket holds at most {}",
                config.rules.len(),
                self.config().lifecycle_rule_limit
            )));
        }
        self.apply_lifecycle(&config).await?;
        self.metadata()
            .record_applied_session_backstop(i64::from(session_backstop_days))
            .await
    }
}

fn unknown_workspace(ws: &Id) -> ScopedError {
    ScopedError::UnknownEntity {
        kind: "workspace",
        id: ws.as_str().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(rule_limit: usize) -> Deployment {
        Deployment {
            session_backstop_days: 365,
            ttl_days: 30,
            rule_limit,
        }
    }

    fn workspace_rules(c: &LifecycleConfiguration) -> Vec<(String, u32)> {
        c.rules[CLASS_RULES..]
            .iter()
            .map(|r| match &r.filter {
                Some(Filter::Prefix(p)) => (p.clone(), r.expiration_days.unwrap()),
                other => panic!("a workspace rule filters by prefix: {other:?}"),
            })
            .collect()
    }

    fn retention(ws: &str, days: i64) -> (String, i64) {
        (ws.to_string(), days)
    }

    #[test]
    fn a_workspace_shorter_than_the_deployment_gets_one_rule_with_the_deployments_margin_and_one_at_or_above_it_none(
    ) {
        let c = configuration(
            deployment(1000),
            &[
                retention("short", 7),
                retention("at", 30),
                retention("long", 60),
            ],
            None,
        );
        assert_eq!(
            workspace_rules(&c),
            [("sessions/short/".to_string(), 7 + 335)]
        );
        c.validate_for_ttl(30).unwrap();
    }

    #[test]
    fn past_the_budget_the_shortest_ttls_get_the_rules_ties_by_workspace_id() {
        // 998 workspaces shorter than the deployment: the bucket's 1,000 rules hold 997 of them.
        let mut retentions: Vec<(String, i64)> = (0..998)
            .map(|i| retention(&format!("w{i:04}"), 1 + (i % 29)))
            .collect();
        retentions.reverse();
        let c = configuration(deployment(1000), &retentions, None);
        assert_eq!(c.rules.len(), 1000);
        c.validate_for_ttl(30).unwrap();
        let rules = workspace_rules(&c);
        // The longest TTL (29 days) among the last ids is the one left out: 998 = 29 * 34 + 12,
        // so TTL 29 is held by w0028, w0057, ..., w0985 (34 workspaces), the last of them out.
        assert!(!rules.iter().any(|(p, _)| p == "sessions/w0985/"));
        assert!(rules.iter().any(|(p, _)| p == "sessions/w0956/"));
        let days: Vec<u32> = rules.iter().map(|(_, d)| *d).collect();
        assert!(days.windows(2).all(|w| w[0] <= w[1]), "shortest TTLs first");
        // At the budget exactly, every workspace has its rule.
        let c = configuration(deployment(1000), &retentions[1..], None);
        assert_eq!(c.rules.len(), 1000);
    }

    #[test]
    fn the_mutants_spend_the_budget_on_nothing_pass_it_or_ignore_the_ttls() {
        let r = [retention("b", 3), retention("a", 9), retention("c", 60)];
        let at_default = configuration(
            deployment(1000),
            &r,
            Some(ScopedMutant::WorkspaceRuleAtDefault),
        );
        assert_eq!(workspace_rules(&at_default).len(), 3);
        let over = configuration(
            deployment(4),
            &r,
            Some(ScopedMutant::WorkspaceRulesOverBudget),
        );
        assert_eq!(over.rules.len(), 5);
        let by_id = configuration(deployment(4), &r, Some(ScopedMutant::WorkspaceRulesById));
        assert_eq!(workspace_rules(&by_id), [("sessions/a/".to_string(), 344)]);
        let right = configuration(deployment(4), &r, None);
        assert_eq!(workspace_rules(&right), [("sessions/b/".to_string(), 338)]);
    }
}

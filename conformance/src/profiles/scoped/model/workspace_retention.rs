//! Retention per workspace in a model sequence (SPEC SL-5, generator 7): workspaces put their
//! own idle TTL, take the deployment's back, and the lifecycle configuration built from every
//! retention is put on the bucket and read back.
//!
//! The model's sessions are workspace `w1`'s; two more workspaces (`w2` and `w3`, created when
//! first named) hold no session and exist for their lifecycle rules, and `w9` never exists.
//! What the model predicts:
//! - a retention put is accepted and replaces the one before it whole (`None`: the
//!   deployment's TTL again), unless its TTL is outside 1 to 36,500 days or not shorter than the
//!   bucket's session backstop (the last one put, else 365 days), `invalid_policy`, or its
//!   workspace does not exist, `unknown_entity` (SL-1.4, SL-5.1, SL-5.2);
//! - `w1`'s own TTL replaces the deployment's in the idle sweep (`Model::sweep_idle`), longer
//!   or shorter;
//! - a lifecycle configuration is refused `config` (and the bucket keeps the one before it)
//!   when its backstop is not longer than the deployment's TTL (SC-7.2) or than some
//!   workspace's TTL (SL-5.2); put, it holds SC-7.1's three class rules and one rule per
//!   workspace shorter than the deployment, its TTL plus the deployment's margin, as many as
//!   the budget [`RULE_LIMIT`] leaves, the shortest TTLs first, ties by workspace id (SL-5.3,
//!   SL-5.4), read back as `lifecycle rules` reads them;
//! - every sweep leaves the configuration on the bucket (SL-1.1: the backstop stays, whatever
//!   the policies sweep).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tidemark_reference::scoped::policies::workspace_retention::{
    CLASS_RULES, DEFAULT_SESSION_BACKSTOP_DAYS, MAX_TTL_DAYS,
};
use tidemark_reference::scoped::ScopeSettings;

use super::ops::{IdStyle, ModelOp, WORKSPACE};
use super::{diverged, harness, Runner, Step, BUCKET};

/// The workspaces a retention names: the model's, two without sessions, and one never
/// created. Two are enough to pass the rule budget ([`RULE_LIMIT`]) and to order the rules
/// other than by id, and few enough that one workspace's retention is put again soon.
pub const WORKSPACES: [&str; 4] = [WORKSPACE, "w2", "w3", "w9"];

/// The deployment's idle TTL the sequences run with, in days: what a workspace without its own
/// retention keeps its idle sessions for (SL-5.1).
pub(super) const TTL_DAYS: i64 = 30;

/// The workspace no operation creates: every retention put on it is `unknown_entity`.
const NEVER_CREATED: &str = "w9";

/// The `lifecycle_rule_limit` sequences run with (SL-5.4's knob, from 3; S3's 1,000 by
/// default): the three class rules and one workspace rule, so two workspaces shorter than the
/// deployment already pass the budget.
pub(super) const RULE_LIMIT: usize = 4;

/// The TTLs `w1` puts: its sessions live by them, so longer ones than the deployment's are
/// drawn as often as shorter ones (and one at the default backstop, refused).
const W1_TTLS: [Option<i64>; 10] = [
    None,
    None,
    Some(2),
    Some(5),
    Some(12),
    Some(45),
    Some(60),
    Some(90),
    Some(0),
    Some(365),
];

/// The TTLs the other workspaces put: mostly shorter than the deployment's (the rules), at it,
/// longer, at a backstop the sequence may put (365, 60) or absurd.
const TTLS: [Option<i64>; 16] = [
    None,
    None,
    None,
    Some(1),
    Some(2),
    Some(3),
    Some(5),
    Some(7),
    Some(14),
    Some(21),
    Some(29),
    Some(30),
    Some(60),
    Some(365),
    Some(-1),
    Some(MAX_TTL_DAYS + 1),
];

/// The session backstops a configuration is put with: 30 is the deployment's TTL (refused,
/// SC-7.2); 60 and 100 are refused while a workspace keeps as long.
const BACKSTOPS: [u16; 7] = [365, 365, 365, 400, 100, 60, 30];

/// What the model knows of SL-5's state.
#[derive(Clone, Debug, Default)]
pub(super) struct RetentionModel {
    /// Each workspace's own idle TTL, where it put one.
    ttls: BTreeMap<&'static str, i64>,
    /// Workspaces besides `w1` created so far.
    created: BTreeSet<&'static str>,
    /// The last configuration put on the bucket: its session backstop and its rules, as
    /// `lifecycle rules` describes them, sorted.
    applied: Option<(i64, Vec<String>)>,
}

impl RetentionModel {
    /// The idle TTL of the model's sessions: `w1`'s own, else the deployment's (SL-5.1).
    pub(super) fn idle_ttl_days(&self) -> i64 {
        self.ttls.get(WORKSPACE).copied().unwrap_or(TTL_DAYS)
    }

    /// Whether a configuration has been put on the bucket (it must stay, SL-1.1).
    pub(super) fn applied(&self) -> bool {
        self.applied.is_some()
    }

    /// The session backstop a workspace's TTL must stay under (SL-5.2).
    fn backstop_days(&self) -> i64 {
        self.applied
            .as_ref()
            .map_or(DEFAULT_SESSION_BACKSTOP_DAYS, |(b, _)| *b)
    }

    /// The rules a configuration with session backstop `backstop` holds (SL-5.3, SL-5.4),
    /// sorted, described as `process::harness::lifecycle_rules` describes them (a workspace rule's abort,
    /// the class rule's, is left out).
    fn rules(&self, backstop: i64, ids: IdStyle) -> Vec<String> {
        let mut rules = vec![
            format!("sessions/ expire {backstop}d abort 7d"),
            "agents/ abort 7d".to_string(),
            "workspaces/ abort 7d".to_string(),
        ];
        let margin = backstop - TTL_DAYS;
        let mut shorter: Vec<(i64, String)> = self
            .ttls
            .iter()
            .filter(|(_, days)| **days < TTL_DAYS)
            .map(|(w, days)| (*days, ids.id(w)))
            .collect();
        shorter.sort();
        rules.extend(
            shorter
                .into_iter()
                .take(RULE_LIMIT - CLASS_RULES)
                .map(|(days, ws)| format!("sessions/{ws}/ expire {}d", days + margin)),
        );
        rules.sort();
        rules
    }

    pub(super) fn state_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .ttls
            .iter()
            .map(|(w, days)| format!("workspace {w}: own idle TTL {days}d"))
            .collect();
        if let Some((backstop, rules)) = &self.applied {
            out.push(format!(
                "lifecycle configuration put with a {backstop}d session backstop: {rules:?}"
            ));
        }
        out
    }
}

/// One of SL-5's operations: a retention put three times in four, else a configuration.
pub(super) fn one(rng: &mut ChaCha8Rng) -> ModelOp {
    if rng.gen_bool(0.25) {
        return ModelOp::ApplyLifecycle {
            backstop_days: BACKSTOPS[rng.gen_range(0..BACKSTOPS.len())],
        };
    }
    // w1 one time in four, the workspaces without sessions most often, w9 seldom.
    let workspace = match rng.gen_range(0..20u8) {
        0..=4 => 0,
        5..=17 => rng.gen_range(1..=2),
        _ => 3,
    };
    let ttl_days = if workspace == 0 {
        W1_TTLS[rng.gen_range(0..W1_TTLS.len())]
    } else {
        TTLS[rng.gen_range(0..TTLS.len())]
    };
    ModelOp::SetRetention {
        workspace,
        ttl_days,
    }
}

fn workspace(i: u8) -> &'static str {
    WORKSPACES[i as usize % WORKSPACES.len()]
}

/// How `ModelOp`'s `Display` writes SL-5's operations.
pub(super) fn describe(op: &ModelOp, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match *op {
        ModelOp::SetRetention {
            workspace: w,
            ttl_days: Some(days),
        } => write!(f, "retention of {} ttl {days} days", workspace(w)),
        ModelOp::SetRetention {
            workspace: w,
            ttl_days: None,
        } => write!(f, "retention of {} default", workspace(w)),
        ModelOp::ApplyLifecycle { backstop_days } => {
            write!(
                f,
                "apply lifecycle {backstop_days}, then read its rules back"
            )
        }
        _ => unreachable!("not one of SL-5's operations: {op:?}"),
    }
}

impl Runner<'_> {
    /// Performs one of SL-5's operations.
    pub(super) async fn workspace_retention(&mut self, op: &ModelOp) -> Step {
        match *op {
            ModelOp::SetRetention {
                workspace: w,
                ttl_days,
            } => self.set_retention(workspace(w), ttl_days).await,
            ModelOp::ApplyLifecycle { backstop_days } => {
                // On a healed store, as the scenarios read rules: what a fault does to a
                // configuration is SC-8's, not SL-5's.
                if self.faulty() {
                    self.server.faults().heal();
                }
                let r = self.apply_lifecycle(i64::from(backstop_days)).await;
                if let Some(plan) = &self.faults {
                    self.server.faults().set_plan(plan.clone());
                }
                r
            }
            _ => unreachable!("not one of SL-5's operations: {op:?}"),
        }
    }

    /// SL-5.1, SL-5.2 and SL-1.4: a retention put on workspace `w` (created first if it is one
    /// of those without sessions, named for the first time).
    async fn set_retention(&mut self, w: &'static str, ttl_days: Option<i64>) -> Step {
        let ws = self.ids.id(w);
        if w != WORKSPACE && w != NEVER_CREATED && !self.model.retention.created.contains(w) {
            if let Err(e) = self
                .store
                .create_workspace(&ws, ScopeSettings::default())
                .await
            {
                return diverged(
                    format!("create workspace {w}: ok"),
                    format!("create workspace {w}: {e}"),
                );
            }
            self.model.retention.created.insert(w);
        }
        let r = self.store.set_workspace_retention(&ws, ttl_days).await;
        let backstop = self.model.retention.backstop_days();
        let absurd = ttl_days.is_some_and(|d| !(1..=MAX_TTL_DAYS).contains(&d) || d >= backstop);
        let gone = w == NEVER_CREATED;
        let what = match ttl_days {
            Some(d) => format!("retention of {w} ttl {d} days"),
            None => format!("retention of {w} default"),
        };
        match r {
            Ok(()) if !absurd && !gone => {
                match ttl_days {
                    Some(d) => self.model.retention.ttls.insert(w, d),
                    None => self.model.retention.ttls.remove(w),
                };
                Ok(())
            }
            // Both wrong: either reason (SL-1.4).
            Err(e) if absurd && e.kind() == "invalid_policy" => Ok(()),
            Err(e) if gone && e.kind() == "unknown_entity" => Ok(()),
            r => {
                let want = match (absurd, gone) {
                    (false, false) => "ok".to_string(),
                    (true, false) => format!(
                        "refused invalid_policy (SL-5.2, SL-1.4: TTLs from 1 to {MAX_TTL_DAYS} days, shorter than the {backstop}-day backstop)"
                    ),
                    (false, true) => "refused unknown_entity (no such workspace)".to_string(),
                    (true, true) => "refused invalid_policy or unknown_entity".to_string(),
                };
                diverged(
                    format!("{what}: {want}"),
                    format!("{what}: {:?}", r.map_err(|e| e.kind())),
                )
            }
        }
    }

    /// SL-5.3, SL-5.4, SL-5.2 and SC-7.2: the configuration put (or refused `config`, the
    /// bucket keeping the one before), then read back and compared with the model's.
    async fn apply_lifecycle(&mut self, backstop: i64) -> Step {
        let r = self
            .store
            .apply_lifecycle_with_retention(u32::try_from(backstop).unwrap_or(u32::MAX))
            .await;
        let retention = &self.model.retention;
        let too_short = backstop <= TTL_DAYS || retention.ttls.values().any(|d| *d >= backstop);
        let what = format!("apply lifecycle {backstop}");
        match r {
            Ok(()) if !too_short => {
                let rules = retention.rules(backstop, self.ids);
                self.model.retention.applied = Some((backstop, rules));
            }
            Err(e) if too_short && e.kind() == "config" => {}
            r => {
                return diverged(
                    format!(
                        "{what}: {}",
                        if too_short {
                            "refused config (a backstop not longer than a TTL, SC-7.2, SL-5.2)"
                        } else {
                            "ok"
                        }
                    ),
                    format!("{what}: {:?}", r.map_err(|e| e.kind())),
                )
            }
        }
        let mut got =
            crate::profiles::scoped::process::harness::lifecycle_rules(&self.client, BUCKET)
                .await
                .map_err(harness)?;
        got.sort();
        let want = self
            .model
            .retention
            .applied
            .as_ref()
            .map(|(_, rules)| rules.clone())
            .unwrap_or_default();
        if got != want {
            return diverged(
                format!("lifecycle rules: {want:?} (SL-5.3, SL-5.4)"),
                format!("lifecycle rules: {got:?}"),
            );
        }
        Ok(())
    }

    /// After a sweep: the configuration put stays on the bucket (SL-1.1).
    pub(super) fn check_lifecycle_kept(&self) -> Step {
        if self.model.retention.applied() && self.server.faults().lifecycle(BUCKET).is_none() {
            return diverged(
                "after the sweep the bucket keeps its lifecycle configuration (SL-1.1)",
                "after the sweep the bucket has no lifecycle configuration",
            );
        }
        Ok(())
    }
}

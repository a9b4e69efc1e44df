//! The scoped store's knobs: [`ScopedConfig`] (what a deployment sets, with SPEC's defaults)
//! and the harness's hooks into it (a crash point, the sweeps' pauses, a mutant, the variants
//! taken the other way). Read once when a store is built; nothing here acts.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::alternatives::Alternative;
use super::error::{CrashPoint, ScopedError};
use super::layout::{self, PathRules};
use super::lifecycle::MAX_RULES;
use super::mutants::ScopedMutant;
use super::permissions::ScopeSettings;
use crate::clock::DAY_MS;

/// The environment variable naming the idle TTL of session files, in days.
pub const TTL_ENV: &str = "OUTTURN_SESSION_FILE_TTL_DAYS";
pub const DEFAULT_TTL_DAYS: u32 = 30;

/// SL-7.1's default `tool_output_limit_bytes`.
pub const DEFAULT_TOOL_OUTPUT_LIMIT_BYTES: u64 = 65_536;

/// SL-3.1's default grace: a week after its close.
pub const DEFAULT_CLOSE_GRACE_DAYS: u32 = 7;

#[derive(Clone, Debug)]
pub struct ScopedConfig {
    pub bucket: String,
    /// Session files are swept once the session has been idle this long (and nothing waits).
    pub session_file_ttl_days: u32,
    /// The deployment layer of the settings cascade.
    pub deployment_settings: ScopeSettings,
    /// Sessions claimed per sweep transaction.
    pub sweep_chunk: i64,
    pub mutant: Option<ScopedMutant>,
    pub crash_at: Option<CrashPoint>,
    /// Harness hook: the session sweep stops after claiming its candidates and before listing
    /// them, until released, so a test can race a write against it deterministically.
    pub sweep_pause: Option<Arc<SweepPause>>,
    /// The variants this store takes the other way (SPEC.md's table); empty: the defaults.
    pub alternatives: BTreeSet<Alternative>,
    /// The first segment, under a scope's prefix, that holds extracted text (SC-1.4): its
    /// spelling is the implementation's own, declared to a harness in `init_ok`.
    pub text_segment: String,
    /// The longest upload the people's files API stores (SPEC SF-4.3), in bytes.
    pub max_upload_bytes: u64,
    /// A tool result larger than this is written to a session file (SPEC SL-7.1).
    pub tool_output_limit_bytes: u64,
    /// A closed session is swept this many days after its close (SPEC SL-3.1).
    pub close_grace_days: u32,
    /// Harness hook: the policy sweep stops after claiming its sessions and before listing
    /// them, until released, so a test can run a second sweep beside it (SPEC SL-1.3).
    pub policy_pause: Option<Arc<SweepPause>>,
    /// The most lifecycle rules the bucket may hold (SPEC SL-5.4): S3's 1,000, lowered only so
    /// a scenario can stage the budget with a few workspaces.
    pub lifecycle_rule_limit: usize,
}

/// SF-4.3's default upload limit: 25 MiB.
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 26_214_400;

/// A rendezvous inside the session sweep (see [`ScopedConfig::sweep_pause`]).
#[derive(Debug, Default)]
pub struct SweepPause {
    /// Notified when the sweep has claimed its candidates.
    pub reached: tokio::sync::Notify,
    /// The sweep waits for this before listing and deleting.
    pub resume: tokio::sync::Notify,
    /// Set once the sweep has stopped here.
    pub used: std::sync::atomic::AtomicBool,
}

impl ScopedConfig {
    pub fn new(bucket: impl Into<String>) -> ScopedConfig {
        ScopedConfig {
            bucket: bucket.into(),
            session_file_ttl_days: DEFAULT_TTL_DAYS,
            deployment_settings: ScopeSettings::default(),
            sweep_chunk: 1000,
            mutant: None,
            crash_at: None,
            sweep_pause: None,
            alternatives: BTreeSet::new(),
            text_segment: layout::TEXT_DIR.to_string(),
            max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
            tool_output_limit_bytes: DEFAULT_TOOL_OUTPUT_LIMIT_BYTES,
            close_grace_days: DEFAULT_CLOSE_GRACE_DAYS,
            policy_pause: None,
            lifecycle_rule_limit: MAX_RULES,
        }
    }

    /// Whether this store takes `a` rather than the variant's default.
    pub fn takes(&self, a: Alternative) -> bool {
        self.alternatives.contains(&a)
    }

    /// How this store reads a guest path.
    pub fn path_rules(&self) -> PathRules<'_> {
        PathRules {
            mutant: self.mutant,
            text_segment: &self.text_segment,
            tidy: self.takes(Alternative::SegmentsTidied),
        }
    }

    /// Reads `OUTTURN_SESSION_FILE_TTL_DAYS` (default 30). A value that is not a positive
    /// integer is a configuration error rather than a silent default.
    pub fn from_env(bucket: impl Into<String>) -> Result<ScopedConfig, ScopedError> {
        let mut c = ScopedConfig::new(bucket);
        if let Ok(v) = std::env::var(TTL_ENV) {
            c.session_file_ttl_days = parse_ttl_days(&v)?;
        }
        Ok(c)
    }

    pub(crate) fn ttl_ms(&self) -> i64 {
        i64::from(self.session_file_ttl_days) * DAY_MS
    }
}

/// Parses an `OUTTURN_SESSION_FILE_TTL_DAYS` value: a positive whole number of days.
pub fn parse_ttl_days(v: &str) -> Result<u32, ScopedError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|d| *d > 0)
        .ok_or_else(|| {
            ScopedError::Config(format!("{TTL_ENV}={v:?} is not a positive whole number"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttl_knob_takes_a_positive_whole_number_of_days_and_nothing_else() {
        assert_eq!(parse_ttl_days("30").unwrap(), 30);
        assert_eq!(parse_ttl_days(" 7 ").unwrap(), 7);
        for bad in ["0", "-1", "thirty", "1.5", ""] {
            assert_eq!(parse_ttl_days(bad).unwrap_err().kind(), "config", "{bad:?}");
        }
    }
}

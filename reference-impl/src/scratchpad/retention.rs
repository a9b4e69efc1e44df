//! The sweeper (SP-5): collects sessions whose newest file is older than their kind's timer.
//!
//! A session's age is its newest *file*. Directories are skipped on purpose: removing a file moves
//! its directory's timestamp, so counting directories would let eviction keep a dead session
//! alive forever. An empty session falls back to its own directory's time, so it still expires.
//! A directory whose name the scheme did not write is left alone.

use super::config::ScratchpadConfig;
use super::disk;
use super::error::ScratchError;
use super::identity::{parse_session_dir, SessionKind};
use super::mutants::ScratchpadMutant;
use crate::clock::Timestamp;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Session directories removed, in name order.
    pub collected: Vec<String>,
    /// Session directories examined and kept.
    pub kept: usize,
}

/// One sweep at `now`. `remembered`: the kinds of the sessions this process wrote since it
/// started, read only by the `kind-remembered-in-memory` mutant (the reference reads a
/// session's kind from its directory's prefix alone, SP-1.4).
pub fn sweep(
    root: &Path,
    cfg: &ScratchpadConfig,
    now: Timestamp,
    remembered: &BTreeMap<String, SessionKind>,
) -> Result<SweepReport, ScratchError> {
    let mut report = SweepReport::default();
    let mut names: Vec<String> = fs::read_dir(root)
        .map_err(|e| ScratchError::io("reading the scratchpad root", e))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    for name in names {
        let dir = root.join(&name);
        let Ok(meta) = fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let parsed = if cfg.is(ScratchpadMutant::SessionShapeByPrefix) {
            // The mutant takes anything that starts like a session for one.
            match name.get(..2) {
                Some("t-") => Some(SessionKind::Thread),
                Some("c-") => Some(SessionKind::Pairing),
                _ => None,
            }
        } else {
            parse_session_dir(&name)
        };
        let parsed = match parsed {
            Some(_) if cfg.is(ScratchpadMutant::KindRememberedInMemory) => Some(
                remembered
                    .get(&name)
                    .copied()
                    .unwrap_or(SessionKind::Thread),
            ),
            p => p,
        };
        let kind = match parsed {
            Some(k) => k,
            // Not ours: left alone (SP-5.6). The mutant treats it as a channel pairing.
            None if cfg.is(ScratchpadMutant::ForeignDirectorySwept) => SessionKind::Pairing,
            None => continue,
        };
        let walk = disk::walk(&dir).map_err(|e| ScratchError::io("walking a session", e))?;
        let newest_file = walk.files.iter().map(|f| f.mtime).max();
        let age_from = if cfg.is(ScratchpadMutant::DirMtimeCounted) {
            let newest_dir = walk
                .dirs
                .iter()
                .map(|d| d.1)
                .chain([disk::mtime(&meta)])
                .max();
            newest_file.max(newest_dir)
        } else {
            match newest_file {
                Some(t) => Some(t),
                None if cfg.is(ScratchpadMutant::EmptySessionKeptForever) => None,
                None if cfg.is(ScratchpadMutant::EmptySessionTimeFromMembers) => walk
                    .dirs
                    .iter()
                    .map(|d| d.1)
                    .chain([disk::mtime(&meta)])
                    .max(),
                None => Some(disk::mtime(&meta)),
            }
        };
        let Some(age_from) = age_from else {
            report.kept += 1;
            continue;
        };
        let ttl_ms = match kind {
            SessionKind::Thread => cfg.thread_quiet_ms,
            SessionKind::Pairing if cfg.is(ScratchpadMutant::OneTimerForBothKinds) => {
                cfg.thread_quiet_ms
            }
            SessionKind::Pairing => cfg.pairing_idle_ms,
        };
        if now.as_millis() - age_from.as_millis() >= ttl_ms {
            fs::remove_dir_all(&dir).map_err(|e| ScratchError::io("collecting a session", e))?;
            report.collected.push(name);
        } else {
            report.kept += 1;
        }
    }
    Ok(report)
}

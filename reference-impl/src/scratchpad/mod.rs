//! The scratchpad session workspace (SPEC.md part SP): a filesystem scratchpad laid out
//! `<root>/<t-|c-><session-hash>/<requester-hash>/<path>`.
//!
//! Reads span the session; writes land in the caller's subtree. A per-requester ceiling refuses;
//! a per-session cap evicts oldest-first inside the overflowing session only. Two retention
//! timers collect quiet threads and idle channel pairings; the sweeper runs at startup and then
//! on an interval. Time comes from the handed-in [`Clock`]; file and directory times are set
//! from it, so the disk tells the sweeper the truth in simulated time too.

mod alternatives;
mod config;
mod disk;
mod error;
mod eviction;
mod identity;
mod mutants;
mod order;
mod paths;
mod retention;
mod usage;

pub use alternatives::Alternative;
pub use config::{ScratchpadConfig, MIB};
pub use error::{Refusal, ScratchError};
pub use identity::{digest, parse_session_dir, requester_dir, CallContext, SessionKind};
pub use mutants::ScratchpadMutant;
pub use order::{EvictionOrder, Indexed};
pub use retention::SweepReport;
pub use usage::Usage;

use crate::clock::{Clock, Timestamp};
use paths::{GuestPath, Limits};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a successful write did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The path the session listing shows for the new file: `<requester-hash>/<path>`.
    pub listed_path: String,
    /// Every file the session cap evicted to make room, as listing paths, oldest first (SP-4.3).
    pub evicted: Vec<String>,
}

/// One entry of a listing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListEntry {
    /// Relative to the session: `<requester-hash>/<path>`.
    pub path: String,
    pub size: u64,
}

pub struct Scratchpad {
    cfg: ScratchpadConfig,
    clock: Arc<dyn Clock>,
    usage: Usage,
    /// Each session's files oldest first, so eviction reads only what it evicts (SP-4.2).
    order: EvictionOrder,
    next_sweep_at: Option<Timestamp>,
    /// The kinds of the sessions written since this process started: what the
    /// `kind-remembered-in-memory` mutant sweeps by (the reference reads the prefix).
    remembered: std::collections::BTreeMap<String, SessionKind>,
}

impl Scratchpad {
    /// Opens a scratchpad: measures what is already on disk once, so the running counts are right
    /// after a restart. An unmounted root opens, and then refuses every operation (SP-1.3).
    pub fn open(cfg: ScratchpadConfig, clock: Arc<dyn Clock>) -> Result<Scratchpad, ScratchError> {
        let mut pad = Scratchpad {
            cfg,
            clock,
            usage: Usage::default(),
            order: EvictionOrder::default(),
            next_sweep_at: None,
            remembered: Default::default(),
        };
        if let Ok(root) = pad.root() {
            if !pad.cfg.is(ScratchpadMutant::CountsForgottenAtRestart) {
                (pad.usage, pad.order) = measure(&root)?;
            }
        }
        Ok(pad)
    }

    pub fn config(&self) -> &ScratchpadConfig {
        &self.cfg
    }

    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// The eviction index, for tests that compare it with a fresh walk ([`measure`]).
    pub fn eviction_order(&self) -> &EvictionOrder {
        &self.order
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The time a write stamps on what it writes: now (the mutant's, in whole seconds).
    fn stamp(&self) -> Timestamp {
        let now = self.now();
        if self.cfg.is(ScratchpadMutant::TimesRoundedToSeconds) {
            return Timestamp::from_millis(now.as_millis().div_euclid(1000) * 1000);
        }
        now
    }

    /// Creates the directories `rel` names below `root`, stamped with `now` (SP-3.5).
    fn create_dirs(&self, root: &Path, rel: &[String], now: Timestamp) -> std::io::Result<()> {
        let stamp_parent = !self.cfg.is(ScratchpadMutant::EntryCreationKeepsDirTime);
        disk::create_dirs(root, rel, now, stamp_parent)
    }

    /// The mounted root, or a refusal. An empty root is never resolved to anything (SP-1.3):
    /// `EvalSymlinks("")` returning "." is how the source's scratchpad wrote into the repo.
    fn root(&self) -> Result<PathBuf, ScratchError> {
        if self.cfg.root.as_os_str().is_empty() {
            if self.cfg.is(ScratchpadMutant::EmptyRootIsWorkingDir) {
                return Ok(self.cfg.working_dir.clone());
            }
            return Err(ScratchError::new(
                Refusal::Unmounted,
                "the scratchpad is not mounted (its root is empty); nothing was written",
            ));
        }
        match fs::metadata(&self.cfg.root) {
            Ok(m) if m.is_dir() => Ok(self.cfg.root.clone()),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && self.cfg.is(ScratchpadMutant::MissingRootCreated)
                    && fs::create_dir_all(&self.cfg.root).is_ok() =>
            {
                Ok(self.cfg.root.clone())
            }
            _ => Err(ScratchError::new(
                Refusal::Unmounted,
                format!(
                    "the scratchpad root {} is not a directory; nothing was written",
                    self.cfg.root.display()
                ),
            )),
        }
    }

    fn limits(&self) -> Limits {
        let unlimited = self.cfg.takes(Alternative::NoPathLimits);
        Limits {
            max_depth: if unlimited {
                usize::MAX
            } else if self.cfg.is(ScratchpadMutant::MaxDepthKnobIgnored) {
                16
            } else {
                self.cfg.max_depth
            },
            max_path_bytes: if unlimited {
                usize::MAX
            } else {
                self.cfg.max_path_bytes
            },
            mutant: self.cfg.mutant,
            tidy: self.cfg.takes(Alternative::PathsTidied),
        }
    }

    /// The variant `caller_directories=on_every_operation` (SP-3.6): every file operation first
    /// makes the caller's session and requester directories, as a scratchpad that prepares the
    /// caller's subtree on every turn does. Best effort: whatever stands in the way (a link, a
    /// file) is left for the operation's own checks to refuse.
    fn prepare_caller_dirs(&self, root: &Path, ctx: &CallContext) {
        if !self.cfg.takes(Alternative::DirectoriesOnEveryOperation) {
            return;
        }
        let rel = [self.session_dir(ctx), self.requester_dir(ctx)];
        if disk::first_symlink(root, &rel).is_none() {
            let _ = self.create_dirs(root, &rel, self.now());
        }
    }

    /// SP-3.2's variant `read_through_a_file`: a candidate whose parent path crosses a regular
    /// file is `not_found` by default, `not_a_directory` for the alternative.
    fn crosses_a_file(&self, root: &Path, rel: &[String]) -> bool {
        let mut p = root.to_path_buf();
        for c in &rel[..rel.len().saturating_sub(1)] {
            p.push(c);
            match fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => continue,
                Ok(m) => return m.is_file(),
                Err(_) => return false,
            }
        }
        false
    }

    /// The refusal for a path that is neither a file nor a directory under any candidate.
    fn nothing_at(&self, crossed_a_file: bool, message: String) -> ScratchError {
        if crossed_a_file && self.cfg.takes(Alternative::ReadThroughFileNotADirectory) {
            ScratchError::new(
                Refusal::NotADirectory,
                format!("{message} (a file stands where a directory would be)"),
            )
        } else {
            ScratchError::new(Refusal::NotFound, message)
        }
    }

    fn session_dir(&self, ctx: &CallContext) -> String {
        if self.cfg.is(ScratchpadMutant::RawIdentifiersInPaths) {
            return match &ctx.thread {
                Some(t) => format!("t-{}-{}", ctx.channel, t),
                None => format!("c-{}-{}", ctx.channel, ctx.requester),
            };
        }
        if self.cfg.is(ScratchpadMutant::PairingSharedByChannel) && ctx.thread.is_none() {
            return format!("c-{}", digest("pairing", &[&ctx.channel]));
        }
        names_for(&self.cfg, ctx).0
    }

    fn requester_dir(&self, ctx: &CallContext) -> String {
        if self.cfg.is(ScratchpadMutant::RawIdentifiersInPaths) {
            return ctx.requester.clone();
        }
        ctx.requester_dir()
    }

    fn refuse_symlinks(&self, base: &Path, rel: &[String]) -> Result<(), ScratchError> {
        if self.cfg.is(ScratchpadMutant::SymlinksFollowed) {
            return Ok(());
        }
        match disk::first_symlink(base, rel) {
            Some(link) => Err(ScratchError::new(
                Refusal::SymlinkEscape,
                format!(
                    "{} is a symbolic link; the scratchpad never follows links",
                    link.strip_prefix(base).unwrap_or(&link).display()
                ),
            )),
            None => Ok(()),
        }
    }

    /// Writes `data` to `path` in the caller's own subtree (SP-3.1), enforcing the ceiling
    /// (refuses, SP-4.1) and then the session cap (evicts oldest-first in this session, SP-4.2).
    pub fn write(
        &mut self,
        ctx: &CallContext,
        path: &[u8],
        data: &[u8],
    ) -> Result<WriteOutcome, ScratchError> {
        let root = self.root()?;
        self.prepare_caller_dirs(&root, ctx);
        let gp = GuestPath::parse(path, &self.limits())?;
        let len = data.len() as u64;
        let session = self.session_dir(ctx);
        let requester = self.requester_dir(ctx);
        let mut rel: Vec<String> = vec![session.clone(), requester.clone()];
        rel.extend(gp.components().iter().cloned());
        if self.cfg.is(ScratchpadMutant::WriteResolvesLikeARead) {
            rel = self.resolved_like_a_read(&root, rel, &session, &gp);
        }
        let as_text;
        let data = if self.cfg.is(ScratchpadMutant::ContentAsText) {
            as_text = String::from_utf8_lossy(data).into_owned().into_bytes();
            &as_text[..]
        } else {
            data
        };
        let target = rel.iter().fold(root.clone(), |p, c| p.join(c));
        // The `overwrite-skips-*` mutants check sizes only when a file is created; the disk is
        // asked only when one of them is on.
        let mutant = self.cfg.mutant;
        let overwriting = matches!(
            mutant,
            Some(
                ScratchpadMutant::OverwriteSkipsSizeLimit
                    | ScratchpadMutant::OverwriteSkipsCeiling
                    | ScratchpadMutant::OverwriteSkipsCap
            )
        ) && fs::symlink_metadata(&target).is_ok_and(|m| m.is_file());
        let skips = |m: ScratchpadMutant| overwriting && mutant == Some(m);
        let largest = self.cfg.max_file_bytes.min(self.cfg.session_cap_bytes);
        if len > largest && !skips(ScratchpadMutant::OverwriteSkipsSizeLimit) {
            return Err(ScratchError::new(
                Refusal::TooLarge,
                format!("the file is {len} bytes; at most {largest} fit in a session"),
            ));
        }
        let now = self.stamp();
        self.refuse_symlinks(&root, &rel)?;
        if self
            .cfg
            .is(ScratchpadMutant::RefusedWriteLeavesItsDirectories)
        {
            // The mutant makes the parents before anything can refuse.
            let _ = self.create_dirs(&root, &rel[..rel.len() - 1], now);
        }
        self.remembered.insert(session.clone(), ctx.kind());
        // What is on disk at the path can refuse the write; every such check runs before anything
        // is evicted, so the refusal changes nothing (SP-6.2). The `late-refusal-evicts` mutant
        // holds the refusal until after eviction.
        let mut on_disk_refusal = None;
        let old_len = match fs::symlink_metadata(&target) {
            Ok(m) if m.is_dir() => {
                on_disk_refusal = Some(ScratchError::new(
                    Refusal::IsADirectory,
                    format!("{} is a directory", gp.as_string()),
                ));
                0
            }
            Ok(m) => m.len(),
            Err(_) => 0,
        };
        // A parent that exists as a file makes the write impossible.
        let mut parent = root.clone();
        for c in &rel[..rel.len() - 1] {
            parent.push(c);
            if let Ok(m) = fs::symlink_metadata(&parent) {
                if !m.is_dir() && on_disk_refusal.is_none() {
                    on_disk_refusal = Some(ScratchError::new(
                        Refusal::NotADirectory,
                        format!("a file stands where {} needs a directory", gp.as_string()),
                    ));
                }
            }
        }
        if let Some(refusal) = on_disk_refusal.take() {
            if !self.cfg.is(ScratchpadMutant::LateRefusalEvicts) {
                return Err(refusal);
            }
            on_disk_refusal = Some(refusal);
        }
        // An overwrite replaces bytes rather than adding them (SP-4.4).
        let credited = if self.cfg.is(ScratchpadMutant::OverwriteDoubleCounted) {
            0
        } else {
            old_len
        };
        let listed_path = format!("{requester}/{}", gp.as_string());

        // The ceiling first: over it, nothing changes at all (SP-4.1).
        let measured = if self.cfg.is(ScratchpadMutant::QuotaPerSession) {
            self.usage.session_bytes(&session)
        } else {
            self.usage.requester_bytes(&requester)
        };
        let mut evicted = Vec::new();
        if measured - credited.min(measured) + len > self.cfg.requester_ceiling_bytes
            && !skips(ScratchpadMutant::OverwriteSkipsCeiling)
        {
            if self.cfg.is(ScratchpadMutant::CeilingEvicts) {
                let need =
                    measured - credited.min(measured) + len - self.cfg.requester_ceiling_bytes;
                evicted.extend(self.evict_from_requester(&root, &requester, &listed_path, need)?);
            } else {
                return Err(ScratchError::new(
                    Refusal::CeilingExceeded,
                    format!(
                        "this write would take you to {} bytes across your sessions; the ceiling is {}. Remove files you no longer need",
                        measured - credited.min(measured) + len,
                        self.cfg.requester_ceiling_bytes
                    ),
                ));
            }
        }

        // Then the session cap: evict oldest-first inside this session only (SP-4.2).
        if !skips(ScratchpadMutant::OverwriteSkipsCap) {
            evicted.extend(self.evict_from_session(
                &root,
                &session,
                &listed_path,
                credited,
                len,
            )?);
        }
        if let Some(refusal) = on_disk_refusal {
            return Err(refusal);
        }

        let parent_rel = &rel[..rel.len() - 1];
        self.create_dirs(&root, parent_rel, now)
            .map_err(|e| ScratchError::new(Refusal::NotADirectory, e.to_string()))?;
        let is_new = old_len == 0 && fs::symlink_metadata(&target).is_err();
        fs::write(&target, data).map_err(|e| ScratchError::io("writing the file", e))?;
        disk::set_mtime(&target, now).map_err(|e| ScratchError::io("stamping the file", e))?;
        if is_new {
            let parent = target.parent().expect("target has a parent");
            disk::set_mtime(parent, now)
                .map_err(|e| ScratchError::io("stamping the directory", e))?;
        }
        if self.cfg.is(ScratchpadMutant::WriteRestampsItsDirectories) {
            let session_dir = root.join(&session);
            for dir in target.ancestors().skip(1) {
                let _ = disk::set_mtime(dir, now);
                if dir == session_dir {
                    break;
                }
            }
        }
        self.usage.subtract(&session, &requester, credited);
        self.usage.add(&session, &requester, len);
        self.order.upsert(&session, &listed_path, now, len);
        if self.cfg.is(ScratchpadMutant::EvictionNotNamed) {
            evicted.clear();
        }
        Ok(WriteOutcome {
            listed_path,
            evicted,
        })
    }

    /// Reads a file (SP-3.2): a bare path is the caller's own file if it exists (own path wins);
    /// otherwise the path is taken as the session listing shows it, `<requester-hash>/<path>`.
    pub fn read(&self, ctx: &CallContext, path: &[u8]) -> Result<Vec<u8>, ScratchError> {
        let root = self.root()?;
        self.prepare_caller_dirs(&root, ctx);
        let gp = GuestPath::parse(path, &self.limits())?;
        let session = self.session_dir(ctx);
        self.mutant_makes_the_directory(&root, ctx);
        let own: Vec<String> = [session.clone(), self.requester_dir(ctx)]
            .into_iter()
            .chain(gp.components().iter().cloned())
            .collect();
        let shared: Vec<String> = std::iter::once(session)
            .chain(gp.components().iter().cloned())
            .collect();
        let order = if self.cfg.is(ScratchpadMutant::SessionPathBeforeOwn) {
            [shared, own]
        } else {
            [own, shared]
        };
        let mut saw_dir = false;
        let mut crossed_a_file = false;
        for rel in order {
            self.refuse_symlinks(&root, &rel)?;
            let p = rel.iter().fold(root.clone(), |p, c| p.join(c));
            match fs::metadata(&p) {
                Ok(m) if m.is_file() => {
                    if self.cfg.takes(Alternative::LargeReadsRefused)
                        && m.len() > self.cfg.max_file_bytes
                    {
                        return Err(ScratchError::new(
                            Refusal::TooLarge,
                            format!(
                                "{} is {} bytes; files over {} are not read",
                                gp.as_string(),
                                m.len(),
                                self.cfg.max_file_bytes
                            ),
                        ));
                    }
                    return fs::read(&p).map_err(|e| ScratchError::io("reading the file", e));
                }
                Ok(m) if m.is_dir() => saw_dir = true,
                _ => crossed_a_file |= self.crosses_a_file(&root, &rel),
            }
        }
        if saw_dir {
            return Err(ScratchError::new(
                Refusal::IsADirectory,
                format!("{} is a directory; list it instead", gp.as_string()),
            ));
        }
        Err(self.nothing_at(
            crossed_a_file,
            format!(
                "no file {} in this session; list the root to see every member's files",
                gp.as_string()
            ),
        ))
    }

    /// Lists the session (SP-3.3). With no path, every member's files; with a path, that
    /// directory, resolved as a read is (own first).
    pub fn list(
        &self,
        ctx: &CallContext,
        path: Option<&[u8]>,
    ) -> Result<Vec<ListEntry>, ScratchError> {
        let root = self.root()?;
        self.prepare_caller_dirs(&root, ctx);
        // The path's shape is checked before the disk is looked at (SP-6.2).
        let gp = path
            .map(|raw| GuestPath::parse(raw, &self.limits()))
            .transpose()?;
        let session = self.session_dir(ctx);
        self.mutant_makes_the_directory(&root, ctx);
        let sdir = root.join(&session);
        if fs::symlink_metadata(&sdir).is_err() {
            return match path {
                None => Ok(Vec::new()),
                Some(_) => Err(ScratchError::new(
                    Refusal::NotFound,
                    "this session has no files yet",
                )),
            };
        }
        let own_only = self.cfg.is(ScratchpadMutant::RootListsOwnOnly);
        let start: PathBuf = match gp {
            None if own_only => sdir.join(self.requester_dir(ctx)),
            None => sdir.clone(),
            Some(gp) => {
                let own: Vec<String> = [session.clone(), self.requester_dir(ctx)]
                    .into_iter()
                    .chain(gp.components().iter().cloned())
                    .collect();
                let shared: Vec<String> = std::iter::once(session.clone())
                    .chain(gp.components().iter().cloned())
                    .collect();
                let mut found = None;
                let mut crossed_a_file = false;
                for rel in [own, shared] {
                    self.refuse_symlinks(&root, &rel)?;
                    let p = rel.iter().fold(root.clone(), |p, c| p.join(c));
                    if fs::symlink_metadata(&p).is_ok() {
                        found = Some(p);
                        break;
                    }
                    crossed_a_file |= self.crosses_a_file(&root, &rel);
                }
                found.ok_or_else(|| {
                    self.nothing_at(
                        crossed_a_file,
                        format!("nothing at {} in this session", gp.as_string()),
                    )
                })?
            }
        };
        let meta = match fs::symlink_metadata(&start) {
            Ok(m) => m,
            Err(_) => return Ok(Vec::new()),
        };
        let mut entries = Vec::new();
        if meta.is_file() && self.cfg.is(ScratchpadMutant::ListOfAFileIsEmpty) {
            // A walk of a file finds nothing below it (Python's os.walk of a file yields nothing).
        } else if meta.is_file() {
            let rel = start.strip_prefix(&sdir).expect("below the session");
            entries.push(ListEntry {
                path: rel.to_string_lossy().to_string(),
                size: meta.len(),
            });
        } else {
            let walk = disk::walk(&start).map_err(|e| ScratchError::io("listing", e))?;
            for f in walk.files {
                let rel = f.path.strip_prefix(&sdir).expect("below the session");
                entries.push(ListEntry {
                    path: rel.to_string_lossy().to_string(),
                    size: f.size,
                });
            }
        }
        entries.sort();
        Ok(entries)
    }

    /// Removes one of the caller's own files (SP-3.4). Another member's files are theirs.
    pub fn remove(&mut self, ctx: &CallContext, path: &[u8]) -> Result<(), ScratchError> {
        let root = self.root()?;
        self.prepare_caller_dirs(&root, ctx);
        let gp = GuestPath::parse(path, &self.limits())?;
        let session = self.session_dir(ctx);
        let requester = self.requester_dir(ctx);
        let mut rel: Vec<String> = [session.clone(), requester.clone()]
            .into_iter()
            .chain(gp.components().iter().cloned())
            .collect();
        if self.cfg.is(ScratchpadMutant::RemoveResolvesLikeARead) {
            rel = self.resolved_like_a_read(&root, rel, &session, &gp);
        }
        self.refuse_symlinks(&root, &rel)?;
        let crossed_a_file = self.crosses_a_file(&root, &rel);
        let target = rel.iter().fold(root, |p, c| p.join(c));
        match fs::symlink_metadata(&target) {
            Ok(m) if m.is_file() => {
                fs::remove_file(&target).map_err(|e| ScratchError::io("removing the file", e))?;
                if let Some(parent) = target.parent() {
                    let _ = disk::set_mtime(parent, self.now());
                }
                self.usage.subtract(&session, &requester, m.len());
                self.order
                    .remove(&session, &format!("{requester}/{}", gp.as_string()));
                Ok(())
            }
            Ok(_) => Err(ScratchError::new(
                Refusal::IsADirectory,
                format!("{} is a directory", gp.as_string()),
            )),
            Err(_) => Err(self.nothing_at(
                crossed_a_file,
                format!("you have no file {}", gp.as_string()),
            )),
        }
    }

    /// Startup: one sweep at once, so a restart after an outage does not hold expired files for
    /// a full interval (SP-5.5), then the timer.
    pub fn start(&mut self) -> Result<SweepReport, ScratchError> {
        let now = self.now();
        self.next_sweep_at = Some(now.plus_ms(self.cfg.sweep_interval_ms));
        if self.cfg.is(ScratchpadMutant::NoStartupSweep) {
            return Ok(SweepReport::default());
        }
        self.sweep()
    }

    /// The timer: sweeps when the interval has elapsed since the last sweep.
    pub fn tick(&mut self) -> Result<Option<SweepReport>, ScratchError> {
        let now = self.now();
        match self.next_sweep_at {
            Some(due) if now >= due => {
                let interval = self.cfg.sweep_interval_ms;
                self.next_sweep_at = Some(
                    if self.cfg.is(ScratchpadMutant::SweepOnFixedPeriod)
                        || self.cfg.takes(Alternative::SweepOnFixedPeriod)
                    {
                        // A ticker from startup: the next multiple of the interval, missed ones dropped.
                        due.plus_ms(
                            ((now.as_millis() - due.as_millis()) / interval.max(1) + 1) * interval,
                        )
                    } else {
                        now.plus_ms(interval)
                    },
                );
                self.sweep().map(Some)
            }
            Some(_) => Ok(None),
            None => self.start().map(Some),
        }
    }

    /// One sweep over the root (SP-5). Unmounted: nothing to sweep, and nothing is touched.
    pub fn sweep(&mut self) -> Result<SweepReport, ScratchError> {
        let root = match self.root() {
            Ok(r) if !self.cfg.root.as_os_str().is_empty() => r,
            _ => return Ok(SweepReport::default()),
        };
        let report = retention::sweep(&root, &self.cfg, self.now(), &self.remembered)?;
        for s in &report.collected {
            self.usage.drop_session(s);
            self.order.drop_session(s);
        }
        Ok(report)
    }
}

/// A scratchpad's directory names for a caller (SP-1.2): its session directory and its requester
/// directory, as the `names` request answers them. The recommended digest, with a thread named
/// by its id alone under `thread_identity=global`.
pub fn names_for(cfg: &ScratchpadConfig, ctx: &CallContext) -> (String, String) {
    let session = if cfg.takes(Alternative::ThreadsGlobal) {
        ctx.global_thread_session_dir()
    } else {
        ctx.session_dir()
    };
    (session, ctx.requester_dir())
}

impl Scratchpad {
    /// The `write-` and `remove-resolves-like-a-read` mutants' target: the caller's own path
    /// (`own`) unless it is no file and the path as the listing shows it (`<session>/P`) is one.
    fn resolved_like_a_read(
        &self,
        root: &Path,
        own: Vec<String>,
        session: &str,
        gp: &GuestPath,
    ) -> Vec<String> {
        let shared: Vec<String> = std::iter::once(session.to_string())
            .chain(gp.components().iter().cloned())
            .collect();
        let is_file = |rel: &[String]| {
            fs::symlink_metadata(rel.iter().fold(root.to_path_buf(), |p, c| p.join(c)))
                .is_ok_and(|m| m.is_file())
        };
        if !is_file(&own) && is_file(&shared) {
            shared
        } else {
            own
        }
    }

    /// The `reading-makes-the-directory` mutant's first step of a read or a listing: the
    /// caller's directory in the session, made (and stamped) if missing.
    fn mutant_makes_the_directory(&self, root: &Path, ctx: &CallContext) {
        if self.cfg.is(ScratchpadMutant::ReadingMakesTheDirectory) {
            let rel = [self.session_dir(ctx), self.requester_dir(ctx)];
            let _ = self.create_dirs(root, &rel, self.now());
        }
    }
}

fn list_dir_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// One walk of the root: bytes per (session, requester). Used at open, and by tests to check the
/// running counts against the disk.
pub fn measure_usage(root: &Path) -> Result<Usage, ScratchError> {
    Ok(measure(root)?.0)
}

/// One walk of the root: the byte counts (SP-4.5) and every session's eviction order (SP-4.2),
/// as the scratchpad rebuilds them when it opens. Files count when they lie below a requester
/// directory of a session directory, as the scratchpad's own writes do.
pub fn measure(root: &Path) -> Result<(Usage, EvictionOrder), ScratchError> {
    let mut usage = Usage::default();
    let mut order = EvictionOrder::default();
    for session in list_dir_names(root) {
        let (bytes, files) = measure_session(root, &session)?;
        for (requester, b) in bytes {
            usage.add(&session, &requester, b);
        }
        order.replace_session(&session, files);
    }
    Ok((usage, order))
}

/// One session measured: bytes per requester directory, and its files.
type SessionMeasure = (Vec<(String, u64)>, Vec<Indexed>);

/// One session's bytes per requester and its files, from a walk that follows no link.
fn measure_session(root: &Path, session: &str) -> Result<SessionMeasure, ScratchError> {
    let sdir = root.join(session);
    let mut bytes = Vec::new();
    let mut files = Vec::new();
    for requester in list_dir_names(&sdir) {
        let walk =
            disk::walk(&sdir.join(&requester)).map_err(|e| ScratchError::io("measuring", e))?;
        bytes.push((requester, walk.files.iter().map(|f| f.size).sum()));
        for f in walk.files {
            let rel = f.path.strip_prefix(&sdir).expect("a walk stays below");
            files.push(Indexed {
                listed: rel.to_string_lossy().to_string(),
                mtime: f.mtime,
                size: f.size,
            });
        }
    }
    Ok((bytes, files))
}

/// Whether the index's entry still describes the disk: a regular file at its listing path, with
/// no symbolic link on the way (a link planted where a directory was must never be followed), of
/// the size and time the index holds.
fn on_disk_as_indexed(root: &Path, session: &str, f: &Indexed) -> bool {
    let mut path = root.join(session);
    let mut meta = fs::symlink_metadata(&path);
    for c in f.listed.split('/') {
        match &meta {
            Ok(m) if m.is_dir() => {}
            _ => return false, // a link, a file or nothing where a directory should be
        }
        path.push(c);
        meta = fs::symlink_metadata(&path);
    }
    match meta {
        Ok(m) => m.is_file() && m.len() == f.size && disk::mtime(&m) == f.mtime,
        Err(_) => false,
    }
}

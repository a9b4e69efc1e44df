//! Eviction (SP-4.2, SP-4.5): what a write frees when it would pass its session's cap, oldest
//! first inside the overflowing session only, and what it frees of its own requester's files when
//! the requester's ceiling is the bound. The order comes from the index (`order.rs`) and the
//! counts from `usage.rs`; a file the index is wrong about costs one walk, never a wrong
//! eviction.

use std::fs;
use std::path::Path;

use super::{
    disk, list_dir_names, measure_session, on_disk_as_indexed, Alternative, Indexed, ScratchError,
    Scratchpad, ScratchpadMutant,
};

impl Scratchpad {
    /// Bytes the session must free before a write of `len` bytes replacing `credited` fits its
    /// cap, from the running counts.
    pub(super) fn cap_need(&self, session: &str, credited: u64, len: u64) -> u64 {
        let session_bytes = self.usage.session_bytes(session);
        (session_bytes - credited.min(session_bytes) + len)
            .saturating_sub(self.cfg.session_cap_bytes)
    }

    /// Removes files of `session`, oldest first (equal times by listing path), until a write of
    /// `len` bytes over `keep` (`credited` bytes now) fits the cap. Returns them as listing paths.
    ///
    /// The order comes from the index, so this reads only the files it evicts. The index knows
    /// only what this process did: before anything is removed, each chosen file is checked on
    /// disk (a regular file, no link on its path, the size and time the index holds). A file that
    /// someone else removed, replaced, touched or turned into a link makes the index and the
    /// counts of this session be rebuilt from a walk (as a restart would), and the choice is made
    /// again from what the walk saw; so a wrong index costs one walk, never a wrong eviction, and
    /// a link is never followed. A file placed by someone else is counted from the next walk (a
    /// restart, or such a rebuild), as the byte counts always were (SP-4.5).
    pub(super) fn evict_from_session(
        &mut self,
        root: &Path,
        session: &str,
        keep: &str,
        credited: u64,
        len: u64,
    ) -> Result<Vec<String>, ScratchError> {
        if self.cfg.is(ScratchpadMutant::EvictAcrossSessions)
            || self.cfg.is(ScratchpadMutant::EvictByName)
            || self.cfg.is(ScratchpadMutant::EvictNewestFirst)
        {
            let need = self.cap_need(session, credited, len);
            return self.evict_by_walk(root, session, keep, need);
        }
        let mut rebuilt = false;
        loop {
            let need = self.cap_need(session, credited, len);
            if need == 0 {
                return Ok(Vec::new());
            }
            let chosen = if self.cfg.is(ScratchpadMutant::EqualTimesByWriteOrder)
                || self.cfg.takes(Alternative::EvictionTiesByWriteOrder)
            {
                self.order.oldest_by_write_order(session, keep, need)
            } else if self.cfg.is(ScratchpadMutant::OverwriteEvictsItself) {
                self.order.oldest(session, None, need)
            } else {
                self.order.oldest(session, Some(keep), need)
            };
            if chosen.iter().all(|f| on_disk_as_indexed(root, session, f)) {
                return self.evict_indexed(root, session, chosen);
            }
            if rebuilt {
                return Err(ScratchError::io(
                    "making room in the session",
                    std::io::Error::other(
                        "its files changed on disk while room was being made; nothing was evicted or written",
                    ),
                ));
            }
            self.rebuild_session(root, session)?;
            rebuilt = true;
        }
    }

    /// Replaces this session's counts and index with what one walk of it sees.
    pub(super) fn rebuild_session(
        &mut self,
        root: &Path,
        session: &str,
    ) -> Result<(), ScratchError> {
        let (bytes, files) = measure_session(root, session)?;
        self.usage.drop_session(session);
        for (requester, b) in bytes {
            self.usage.add(session, &requester, b);
        }
        self.order.replace_session(session, files);
        Ok(())
    }

    pub(super) fn evict_indexed(
        &mut self,
        root: &Path,
        session: &str,
        chosen: Vec<Indexed>,
    ) -> Result<Vec<String>, ScratchError> {
        let now = self.now();
        let mut evicted = Vec::new();
        for f in chosen {
            let path = root.join(session).join(&f.listed);
            fs::remove_file(&path).map_err(|e| ScratchError::io("evicting a file", e))?;
            // Removing an entry moves its directory's time, exactly as the OS would (SP-5.3).
            if let Some(parent) = path.parent() {
                let _ = disk::set_mtime(parent, now);
            }
            let owner = f.listed.split('/').next().unwrap_or_default();
            self.usage.subtract(session, owner, f.size);
            self.order.remove(session, &f.listed);
            evicted.push(f.listed);
        }
        Ok(evicted)
    }

    /// The eviction of the mutants that change which files go (`evict-across-sessions`,
    /// `evict-by-name`, `evict-newest-first`): a walk, as the reference did before the index.
    pub(super) fn evict_by_walk(
        &mut self,
        root: &Path,
        session: &str,
        keep: &str,
        need: u64,
    ) -> Result<Vec<String>, ScratchError> {
        if need == 0 {
            return Ok(Vec::new());
        }
        let mut candidates: Vec<(String, String, disk::FileEntry)> = Vec::new();
        let sessions: Vec<String> = if self.cfg.is(ScratchpadMutant::EvictAcrossSessions) {
            list_dir_names(root)
        } else {
            vec![session.to_string()]
        };
        for s in &sessions {
            let sdir = root.join(s);
            let Ok(walk) = disk::walk(&sdir) else {
                continue;
            };
            for f in walk.files {
                let rel = f
                    .path
                    .strip_prefix(&sdir)
                    .expect("walk stays below its root");
                let listed = rel.to_string_lossy().to_string();
                if s == session && listed == keep {
                    continue; // the file being overwritten is replaced, not evicted
                }
                candidates.push((s.clone(), listed, f));
            }
        }
        self.order_for_eviction(&mut candidates);
        self.remove_until(candidates, need)
    }

    /// The `ceiling-evicts` mutant's eviction: the requester's own files, from any session.
    pub(super) fn evict_from_requester(
        &mut self,
        root: &Path,
        requester: &str,
        keep: &str,
        need: u64,
    ) -> Result<Vec<String>, ScratchError> {
        let mut candidates = Vec::new();
        for s in list_dir_names(root) {
            let rdir = root.join(&s).join(requester);
            let Ok(walk) = disk::walk(&rdir) else {
                continue;
            };
            for f in walk.files {
                let listed = f
                    .path
                    .strip_prefix(root.join(&s))
                    .expect("below")
                    .to_string_lossy()
                    .to_string();
                if listed != keep {
                    candidates.push((s.clone(), listed, f));
                }
            }
        }
        self.order_for_eviction(&mut candidates);
        self.remove_until(candidates, need)
    }

    pub(super) fn order_for_eviction(&self, c: &mut [(String, String, disk::FileEntry)]) {
        if self.cfg.is(ScratchpadMutant::EvictByName) {
            c.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        } else if self.cfg.is(ScratchpadMutant::EvictNewestFirst) {
            c.sort_by(|a, b| (b.2.mtime, &b.1).cmp(&(a.2.mtime, &a.1)));
        } else {
            // Oldest first; equal times broken by listing path so the choice is deterministic.
            c.sort_by(|a, b| (a.2.mtime, &a.0, &a.1).cmp(&(b.2.mtime, &b.0, &b.1)));
        }
    }

    pub(super) fn remove_until(
        &mut self,
        candidates: Vec<(String, String, disk::FileEntry)>,
        need: u64,
    ) -> Result<Vec<String>, ScratchError> {
        let now = self.now();
        let mut freed = 0u64;
        let mut evicted = Vec::new();
        for (session, listed, f) in candidates {
            if freed >= need {
                break;
            }
            fs::remove_file(&f.path).map_err(|e| ScratchError::io("evicting a file", e))?;
            // Removing an entry moves its directory's time, exactly as the OS would (SP-5.3).
            if let Some(parent) = f.path.parent() {
                let _ = disk::set_mtime(parent, now);
            }
            let owner = listed.split('/').next().unwrap_or_default().to_string();
            self.usage.subtract(&session, &owner, f.size);
            self.order.remove(&session, &listed);
            freed += f.size;
            evicted.push(listed);
        }
        Ok(evicted)
    }
}

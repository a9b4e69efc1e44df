//! The files API over the store (SPEC SC-2 to SC-4): a file written with its extracted text
//! (text first, so a file is never visible without it), read, read as text, deleted and
//! listed, each inside its session's transaction; and skill versions, published once and read
//! only.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::scoped::alternatives::Alternative;
use crate::scoped::error::{CrashPoint, PathError, ScopedError};
use crate::scoped::layout::{self, Id, Purpose, Resolved, TurnSpace};
use crate::scoped::mutants::ScopedMutant;
use crate::scoped::permissions::{Access, Scope};

use super::{session_key, ListedFile, ScopedStore};

/// Text extracted at write time: the file's bytes if they are UTF-8 without NUL (SPEC decision:
/// no content-type sniffing; binary files have no text).
pub fn extract_text(bytes: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(bytes).ok()?;
    (!s.contains('\0')).then_some(s)
}
impl ScopedStore {
    /// Writes a file. The extracted text is stored first and the file second, so a file is
    /// never visible without its text; an error means the file was not (re)written.
    pub async fn write(
        &self,
        turn: &TurnSpace,
        path: &str,
        bytes: Vec<u8>,
    ) -> Result<Resolved, ScopedError> {
        let r = self.resolve_for_change(path, turn).await?;
        let skill_writable = self.is(ScopedMutant::SkillsWritable);
        if r.scope == Scope::Skill && !skill_writable {
            return Err(ScopedError::ReadOnly {
                path: path.to_string(),
            });
        }
        let written = self
            .in_session(turn, "commit write", async |perms| {
                if !(r.scope == Scope::Skill && skill_writable) {
                    self.require(&perms, &r, Access::ReadWrite)?;
                }
                self.store_file(&r, bytes).await
            })
            .await;
        if let Err(ScopedError::Storage { .. }) = &written {
            if self.is(ScopedMutant::FailedWriteReportedWritten) {
                return Ok(r);
            }
            // The text may have landed before the file failed, and the rollback restored a
            // swept mark: let the next sweep look at the session again, or the text would
            // outlive the retention period unseen (found by the scoped world, seed 27).
            if !self.is(ScopedMutant::FailedWriteKeepsTheMark) {
                self.meta.unmark_swept(&session_key(turn)).await?;
            }
        }
        written?;
        Ok(r)
    }

    /// Stores a file and its extracted text at `r`, the text first, so a file is never visible
    /// without its text; each stamped with the file's sha256. The caller holds the session's
    /// lock and has checked the access ([`Self::write`]).
    pub(crate) async fn store_file(&self, r: &Resolved, bytes: Vec<u8>) -> Result<(), ScopedError> {
        let text_key = self.text_key(r);
        let sha = hex::encode(Sha256::digest(&bytes));
        if self.is(ScopedMutant::FileBeforeText) {
            // The mutant stores the file first: a crash before the text leaves a file
            // without it, after the text both (the crash point comes after both).
            self.put_tagged(&r.key, bytes.clone(), Some(&sha)).await?;
            if let Some(text) = extract_text(&bytes) {
                self.put_tagged(&text_key, text.as_bytes().to_vec(), Some(&sha))
                    .await?;
            }
            self.crash(CrashPoint::AfterTextWritten)?;
            return Ok(());
        }
        match extract_text(&bytes) {
            Some(text) => {
                self.put_tagged(&text_key, text.as_bytes().to_vec(), Some(&sha))
                    .await?
            }
            // Overwriting a text file with a binary one must not leave the old text behind.
            None => self.delete_one(&text_key).await?,
        }
        self.crash(CrashPoint::AfterTextWritten)?;
        self.put_tagged(&r.key, bytes, Some(&sha)).await
    }

    pub async fn read(&self, turn: &TurnSpace, path: &str) -> Result<Vec<u8>, ScopedError> {
        let r = self
            .resolve_checked(turn, path, Purpose::File, Access::Read)
            .await?;
        self.in_session(turn, "commit read", async |perms| {
            self.require(&perms, &r, Access::Read)?;
            self.get(&r.key)
                .await?
                .ok_or_else(|| ScopedError::NotFound {
                    path: path.to_string(),
                })
        })
        .await
    }

    /// The text extracted from a file when it was written; `None` for a binary file. A file
    /// that no longer exists has no readable text, whatever is left in the text area.
    pub async fn read_text(
        &self,
        turn: &TurnSpace,
        path: &str,
    ) -> Result<Option<String>, ScopedError> {
        let r = self.resolve(path, turn, Purpose::File).await?;
        self.in_session(turn, "commit read", async |perms| {
            self.require(&perms, &r, Access::Read)?;
            let outlives = self.is(ScopedMutant::TextOutlivesFile);
            let not_found = || ScopedError::NotFound {
                path: path.to_string(),
            };
            let file = self.head_stamp(&r.key).await?;
            if file.is_none() && !outlives {
                return Err(not_found());
            }
            let text = self.get_stamped(&self.text_key(&r)).await?;
            let lossy = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
            match (file, text) {
                // Only the mutant gets here: text served for a file that is gone.
                (None, Some((t, _))) => Ok(Some(lossy(t))),
                (None, None) => Err(not_found()),
                (Some(file_sha), Some((t, text_sha))) if outlives || file_sha == text_sha => {
                    Ok(Some(lossy(t)))
                }
                // Stale or missing text (an overwrite failed between its two PUTs, or the
                // file is binary): extract afresh rather than serve another version's text.
                (Some(_), _) => {
                    let bytes = self.get(&r.key).await?.ok_or_else(not_found)?;
                    Ok(extract_text(&bytes).map(str::to_string))
                }
            }
        })
        .await
    }

    /// Deletes a file and its text (text first: a crash in between leaves a file without text,
    /// never text without a file).
    pub async fn delete(&self, turn: &TurnSpace, path: &str) -> Result<(), ScopedError> {
        let r = self.resolve_for_change(path, turn).await?;
        if r.scope == Scope::Skill {
            return Err(ScopedError::ReadOnly {
                path: path.to_string(),
            });
        }
        let needed = if self.is(ScopedMutant::DeleteNeedsOnlyRead)
            || (turn.person.is_some() && self.is(ScopedMutant::PersonDeleteNeedsOnlyRead))
        {
            Access::Read
        } else {
            Access::ReadWrite
        };
        self.in_session(turn, "commit delete", async |perms| {
            self.require(&perms, &r, needed)?;
            if !self.exists(&r.key).await? {
                return Err(ScopedError::NotFound {
                    path: path.to_string(),
                });
            }
            if !self.is(ScopedMutant::TextOutlivesFile) {
                self.delete_one(&self.text_key(&r)).await?;
            }
            self.delete_one(&r.key).await
        })
        .await
    }

    /// Lists what the caller may see. With no prefix (or an empty one): all three scopes the
    /// agent may read. Skills are not listed; they are read through the turn's skill table.
    pub async fn list(
        &self,
        turn: &TurnSpace,
        prefix: Option<&str>,
    ) -> Result<Vec<ListedFile>, ScopedError> {
        // A prefix is resolved before the session row is looked up (SC-3.5).
        let named = match prefix.filter(|p| !p.is_empty()) {
            Some(p) => Some(self.resolve_listing(p, turn).await?),
            None => None,
        };
        self.in_session(turn, "commit list", async |perms| {
            let targets: Vec<Resolved> = match named {
                Some(named) => {
                    for r in &named {
                        self.require(&perms, r, Access::Read)?;
                    }
                    named
                }
                None => {
                    let scopes: &[Scope] = if self.is(ScopedMutant::ListingOwnScopeOnly) {
                        &[Scope::Session]
                    } else {
                        &Scope::FILE_SCOPES
                    };
                    let mut v = Vec::new();
                    for s in scopes {
                        if turn.person.is_some() && self.is(ScopedMutant::PeopleListingRefuses) {
                            // The mutant refuses a person's whole listing for one scope they
                            // may not read (SPEC SF-2.6 leaves it out).
                            let probe = Resolved {
                                scope: *s,
                                relative: String::new(),
                                key: String::new(),
                                prefix: String::new(),
                            };
                            self.require(&perms, &probe, Access::Read)?;
                        }
                        if perms.for_scope(*s, self.mutant()).can_read() {
                            let prefix = turn.scope_prefix(*s);
                            v.push(Resolved {
                                scope: *s,
                                relative: String::new(),
                                key: prefix.clone(),
                                prefix,
                            });
                        }
                    }
                    v
                }
            };
            let guest = |r: &Resolved, rel: &str| {
                if r.scope == Scope::Skill {
                    let slug = r.relative.split('/').next().unwrap_or_default();
                    format!("skill/{slug}/{rel}")
                } else {
                    format!("{}/{rel}", r.scope)
                }
            };
            let mut files = Vec::new();
            for r in targets {
                let under = r.relative.split_once('/').map_or("", |(_, inner)| inner);
                let names_something = if r.scope == Scope::Skill {
                    !under.is_empty()
                } else {
                    !r.relative.is_empty()
                };
                if names_something && self.cfg.takes(Alternative::FilePrefixListsTheFile) {
                    // `file_prefix_listings=the_file` (SC-2.7's variant): a prefix that names
                    // a file lists that file.
                    let file_key = r.key.trim_end_matches('/');
                    for (key, size) in self.list_keys(file_key).await? {
                        if key == file_key {
                            let rel = &key[r.prefix.len()..];
                            files.push(ListedFile {
                                path: guest(&r, rel),
                                size,
                            });
                        }
                    }
                }
                for (key, size) in self.list_keys(&r.key).await? {
                    // Directory markers (keys ending in `/`) made by other tools are not files.
                    if layout::is_text_key_in(&r.prefix, &key, &self.cfg.text_segment)
                        || key.ends_with('/')
                    {
                        continue;
                    }
                    let Some(rel) = key.strip_prefix(&r.prefix) else {
                        continue;
                    };
                    files.push(ListedFile {
                        path: guest(&r, rel),
                        size,
                    });
                }
            }
            // One listing in the order of its guest paths' bytes (SPEC SC-4.4), however many
            // scopes it spans; the mutant, and a store taking `listing_order=any`, leave each
            // scope's files where its listing put them.
            if !self.is(ScopedMutant::ListingByScope)
                && !self.cfg.takes(Alternative::ListingsByScope)
            {
                files.sort_by(|a, b| a.path.cmp(&b.path));
            }
            Ok(files)
        })
        .await
    }

    /// What a listing's prefix names: one folder, or under `bare_skill_listings=every_skill`
    /// (SC-2.7's variant) a bare `skill` names every skill of the turn's table.
    pub(super) async fn resolve_listing(
        &self,
        prefix: &str,
        turn: &TurnSpace,
    ) -> Result<Vec<Resolved>, ScopedError> {
        match self.resolve(prefix, turn, Purpose::List).await {
            Err(ScopedError::Path(PathError::Empty { .. }))
                if self.cfg.takes(Alternative::BareSkillListsEverySkill)
                    && prefix.split('/').filter(|s| !s.is_empty()).eq(["skill"]) =>
            {
                let mut all = Vec::new();
                for slug in turn.skills.keys() {
                    all.push(
                        self.resolve(&format!("skill/{slug}"), turn, Purpose::List)
                            .await?,
                    );
                }
                Ok(all)
            }
            r => r.map(|r| vec![r]),
        }
    }

    /// Publishes a skill version through the skills API (not the files API) and returns its
    /// sha256. The hash covers every path and its bytes in path order, so the same content is
    /// the same version; an existing version is never overwritten.
    pub async fn publish_skill_version(
        &self,
        ws: &str,
        files: &BTreeMap<String, Vec<u8>>,
    ) -> Result<String, ScopedError> {
        let ws = Id::new(ws)?;
        if !self.meta.workspace_exists(ws.as_str()).await? {
            return Err(ScopedError::UnknownEntity {
                kind: "workspace",
                id: ws.to_string(),
            });
        }
        // A version with no files names nothing a turn could read (SPEC SC-2.6), unless this
        // store publishes it anyway (`empty_skill_versions=published`).
        if files.is_empty() && !self.cfg.takes(Alternative::EmptySkillVersionsPublished) {
            return Err(ScopedError::Path(crate::scoped::error::PathError::Empty {
                path: "skill/<slug>/".to_string(),
            }));
        }
        let mut h = Sha256::new();
        for (path, bytes) in files {
            h.update((path.len() as u64).to_be_bytes());
            h.update(path.as_bytes());
            h.update((bytes.len() as u64).to_be_bytes());
            h.update(bytes);
        }
        let sha = hex::encode(h.finalize());
        let probe = TurnSpace {
            workspace: ws.clone(),
            agent: Id::new("skills")?,
            session: Id::new("skills")?,
            skills: BTreeMap::from([("v".to_string(), sha.clone())]),
            person: None,
        };
        // Validate every path before writing anything, so a bad path writes nothing.
        let mut keys = Vec::new();
        for path in files.keys() {
            let rules = layout::PathRules {
                mutant: None,
                ..self.cfg.path_rules()
            };
            let r =
                layout::resolve_with(&format!("skill/v/{path}"), &probe, Purpose::File, &rules)?;
            keys.push(r.key);
        }
        for (key, bytes) in keys.iter().zip(files.values()) {
            if !self.exists(key).await? {
                self.put(key, bytes.clone()).await?;
            }
        }
        Ok(sha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_extracted_from_utf8_without_nul_only() {
        assert_eq!(extract_text(b"hello"), Some("hello"));
        assert_eq!(extract_text(&[0xff, 0xfe]), None);
        assert_eq!(extract_text(b"a\0b"), None);
    }
}

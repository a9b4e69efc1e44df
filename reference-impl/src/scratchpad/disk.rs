//! Small filesystem helpers that keep the scheme's invariants: times come from the handed-in
//! clock (never from the operating system), walks never follow symlinks, and results are sorted
//! so nothing downstream depends on directory order.

use crate::clock::Timestamp;
use filetime::FileTime;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub fn set_mtime(path: &Path, t: Timestamp) -> io::Result<()> {
    filetime::set_symlink_file_times(
        path,
        FileTime::from_system_time(t.to_system_time()),
        FileTime::from_system_time(t.to_system_time()),
    )
}

pub fn mtime(meta: &fs::Metadata) -> Timestamp {
    Timestamp::from_system_time(meta.modified().unwrap_or(std::time::UNIX_EPOCH))
}

/// A regular file found by a walk.
#[derive(Clone, Debug)]
pub struct FileEntry {
    pub path: PathBuf,
    pub size: u64,
    pub mtime: Timestamp,
}

/// A walk's result: the regular files and the directories below `dir` (not `dir` itself).
#[derive(Clone, Debug, Default)]
pub struct Walk {
    pub files: Vec<FileEntry>,
    pub dirs: Vec<(PathBuf, Timestamp)>,
}

/// Walks `dir` without following symlinks. Sorted by path.
pub fn walk(dir: &Path) -> io::Result<Walk> {
    let mut out = Walk::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut names: Vec<_> = fs::read_dir(&d)?.collect::<Result<Vec<_>, _>>()?;
        names.sort_by_key(|e| e.file_name());
        for e in names {
            let meta = fs::symlink_metadata(e.path())?;
            if meta.is_dir() {
                out.dirs.push((e.path(), mtime(&meta)));
                stack.push(e.path());
            } else if meta.is_file() {
                out.files.push(FileEntry {
                    path: e.path(),
                    size: meta.len(),
                    mtime: mtime(&meta),
                });
            }
        }
    }
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
    out.dirs.sort();
    Ok(out)
}

/// The first symlink met walking from `base` down through `rel`, if any.
pub fn first_symlink(base: &Path, rel: &[String]) -> Option<PathBuf> {
    let mut p = base.to_path_buf();
    for c in rel {
        p.push(c);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => return Some(p),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
    None
}

/// Creates `dir` and any missing parents below `base`, stamping each new directory, and the
/// directory it was created in, with `now`: the operating system would stamp them with its own
/// clock, which in a simulation is the wrong clock. `stamp_parent: false` is the
/// `entry-creation-keeps-dir-time` mutant's, which leaves the directory created in as it was.
pub fn create_dirs(
    base: &Path,
    rel: &[String],
    now: Timestamp,
    stamp_parent: bool,
) -> io::Result<()> {
    let mut p = base.to_path_buf();
    for c in rel {
        let parent = p.clone();
        p.push(c);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a directory", p.display()),
                ))
            }
            Err(_) => {
                fs::create_dir(&p)?;
                set_mtime(&p, now)?;
                if stamp_parent {
                    set_mtime(&parent, now)?;
                }
            }
        }
    }
    Ok(())
}

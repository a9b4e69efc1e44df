//! Directories the harness reaches only through handles opened without following a symbolic
//! link, so that no path an implementation can change redirects what the harness writes, reads
//! or removes. The harness runs strangers' programs, as root in CI; a program may replace the
//! root it was handed with a link to anywhere.
//!
//! - [`Dir`]: an open directory; every operation is relative to it (`openat`, `mkdirat`,
//!   `symlinkat`, `utimensat`, `unlinkat`), and never follows a link at the name it is given.
//! - [`Handed`]: a directory the harness made and handed to an implementation (a scratch root,
//!   a working directory). It is known by what it was when made (device and inode) and opened
//!   afresh from the harness's own parent directory before each use; a directory found replaced
//!   (by a link, a file, another directory) or removed is an error naming it.
//! - [`remove_tree`]: removes a directory the harness owns without following a link, at its own
//!   path or anywhere inside.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Timespec, Timestamps};

/// What a name in a directory is, looked at without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Dir,
    File,
    Link,
    Other,
}

impl Kind {
    fn of(t: FileType) -> Kind {
        match t {
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        }
    }
}

/// An open directory.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// Opens `path` as a directory; a symlink as its last component is refused (`ELOOP`).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::open(path, DIR_FLAGS, Mode::empty())?;
        Ok(Dir { fd })
    }

    /// The child directory `name`, which must be a real directory: a symlink is refused
    /// (`ELOOP`), a file too (`ENOTDIR`).
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let fd = rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty())?;
        Ok(Dir { fd })
    }

    /// (device, inode): which directory this is.
    pub fn identity(&self) -> io::Result<(u64, u64)> {
        let st = rustix::fs::fstat(&self.fd)?;
        Ok((st.st_dev, st.st_ino))
    }

    /// What `name` is, not following it; `None` when nothing is there.
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<Kind>> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Kind::of(FileType::from_raw_mode(st.st_mode)))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub fn make_dir(&self, name: &OsStr) -> io::Result<()> {
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755))?;
        Ok(())
    }

    /// Writes `content` to the file `name` (created or truncated); a symlink at `name` is
    /// refused, never written through.
    pub fn write_file(&self, name: &OsStr, content: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?;
        std::fs::File::from(fd).write_all(content)
    }

    /// A symbolic link `name` holding `target`.
    pub fn symlink(&self, target: &OsStr, name: &OsStr) -> io::Result<()> {
        rustix::fs::symlinkat(target, &self.fd, name)?;
        Ok(())
    }

    /// Sets the access and modification times of `name` (a link itself, never its target), or
    /// with `None` of this directory, to `t`.
    pub fn stamp(&self, name: Option<&OsStr>, t: SystemTime) -> io::Result<()> {
        let ts = timespec(t);
        let times = Timestamps {
            last_access: ts,
            last_modification: ts,
        };
        match name {
            Some(n) => rustix::fs::utimensat(&self.fd, n, &times, AtFlags::SYMLINK_NOFOLLOW)?,
            None => rustix::fs::futimens(&self.fd, &times)?,
        }
        Ok(())
    }

    /// The names in this directory with what each is, sorted by name.
    pub fn entries(&self) -> io::Result<Vec<(OsString, Kind)>> {
        let mut out = Vec::new();
        for e in rustix::fs::Dir::read_from(&self.fd)? {
            let e = e?;
            let name = OsStr::from_bytes(e.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let kind = match e.file_type() {
                FileType::Unknown => self.kind(name)?.unwrap_or(Kind::Other),
                t => Kind::of(t),
            };
            out.push((name.to_os_string(), kind));
        }
        out.sort();
        Ok(out)
    }

    /// Every path below this directory, relative to it, sorted; links are listed, not entered.
    pub fn paths(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        let mut stack = vec![(PathBuf::new(), self.open_dir(OsStr::new("."))?)];
        while let Some((at, dir)) = stack.pop() {
            for (name, kind) in dir.entries()? {
                let rel = at.join(&name);
                out.push(rel.to_string_lossy().into_owned());
                if kind == Kind::Dir {
                    stack.push((rel, dir.open_dir(&name)?));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The path the kernel resolves to this very directory, whatever its name is now (`/proc`'s
    /// view of the open descriptor): a path that no rename or link can redirect.
    pub fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_fd().as_raw_fd()))
    }
}

fn timespec(t: SystemTime) -> Timespec {
    let (tv_sec, tv_nsec) = match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, i64::from(d.subsec_nanos())),
        Err(e) => {
            let d = e.duration();
            let nanos = i64::from(d.subsec_nanos());
            if nanos == 0 {
                (-(d.as_secs() as i64), 0)
            } else {
                (-(d.as_secs() as i64) - 1, 1_000_000_000 - nanos)
            }
        }
    };
    Timespec {
        tv_sec,
        tv_nsec: tv_nsec as _,
    }
}

/// A directory the harness made and handed to an implementation: re-checked before each use.
#[derive(Debug)]
pub struct Handed {
    parent: Dir,
    name: OsString,
    path: PathBuf,
    /// What it is, for errors: `root`, `working directory`.
    what: &'static str,
    identity: (u64, u64),
}

impl Handed {
    /// Makes `parent/name` (the harness's own `parent`, just made) and records which directory
    /// it is.
    pub fn make(parent: &Path, name: &str, what: &'static str) -> io::Result<Handed> {
        let parent_dir = Dir::open(parent)?;
        parent_dir.make_dir(OsStr::new(name))?;
        let identity = parent_dir.open_dir(OsStr::new(name))?.identity()?;
        Ok(Handed {
            parent: parent_dir,
            name: name.into(),
            path: parent.join(name),
            what,
            identity,
        })
    }

    /// Its path, as handed over.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory, opened afresh without following a link, if it is still the one the
    /// harness made; else an error naming it and what it became.
    pub fn open(&self) -> Result<Dir, String> {
        let replaced = |by: &str| {
            format!(
                "the {} {} was replaced {by}; the harness never follows or writes into what it \
                 did not make",
                self.what,
                self.path.display()
            )
        };
        match self.parent.kind(&self.name) {
            Ok(Some(Kind::Dir)) => {}
            Ok(Some(Kind::Link)) => return Err(replaced("by a symbolic link")),
            Ok(Some(_)) => return Err(replaced("by something that is not a directory")),
            Ok(None) => {
                return Err(format!(
                    "the {} {} was removed",
                    self.what,
                    self.path.display()
                ))
            }
            Err(e) => return Err(format!("the {} {}: {e}", self.what, self.path.display())),
        }
        let dir = self
            .parent
            .open_dir(&self.name)
            .map_err(|_| replaced("while the harness looked at it"))?;
        match dir.identity() {
            Ok(id) if id == self.identity => Ok(dir),
            Ok(_) => Err(replaced(
                "by another directory than the one the harness made",
            )),
            Err(e) => Err(format!("the {} {}: {e}", self.what, self.path.display())),
        }
    }
}

/// Removes `path` and everything in it, the names in `last` last (in that order), never
/// following a link: a link at `path` itself is removed, not followed. Gone already is not an
/// error.
pub fn remove_tree(path: &Path, last: &[&str]) -> io::Result<()> {
    let dir = match Dir::open(path) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        // A link (ELOOP) or a file (ENOTDIR) where the directory was: remove the name only.
        Err(e)
            if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return match std::fs::remove_file(path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                other => other,
            };
        }
        Err(e) => return Err(e),
    };
    remove_contents(&dir, last)?;
    for name in last {
        match rustix::fs::unlinkat(&dir.fd, *name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
    }
    drop(dir);
    match std::fs::remove_dir(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Removes every entry of `dir` but those named in `keep`. A subdirectory is removed through
/// the descriptor's own path (`/proc/self/fd/N/<name>`), which no rename of `dir` redirects, by
/// `std::fs::remove_dir_all`, which never follows a link inside it.
fn remove_contents(dir: &Dir, keep: &[&str]) -> io::Result<()> {
    for (name, kind) in dir.entries()? {
        if keep.iter().any(|k| name == *k) {
            continue;
        }
        let result = if kind == Kind::Dir {
            std::fs::remove_dir_all(dir.proc_path().join(&name))
        } else {
            rustix::fs::unlinkat(&dir.fd, &name, AtFlags::empty()).map_err(io::Error::from)
        };
        match result {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handed_directory_replaced_by_a_link_or_another_directory_is_named_and_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let root = Handed::make(tmp.path(), "root", "root").unwrap();
        root.open().unwrap().make_dir(OsStr::new("mine")).unwrap();
        std::fs::rename(root.path(), tmp.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.path()).unwrap();
        let e = root.open().unwrap_err();
        assert!(e.contains("the root") && e.contains("symbolic link"), "{e}");
        std::fs::remove_file(root.path()).unwrap();
        std::fs::create_dir(root.path()).unwrap();
        let e = root.open().unwrap_err();
        assert!(e.contains("another directory"), "{e}");
        std::fs::remove_dir(root.path()).unwrap();
        assert!(root.open().unwrap_err().contains("was removed"));
        std::fs::rename(tmp.path().join("moved"), root.path()).unwrap();
        assert_eq!(root.open().unwrap().paths().unwrap(), ["mine"]);
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_link_is_stamped_itself_and_writes_never_go_through_one() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target.txt");
        std::fs::write(&target, "x").unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        dir.symlink(target.as_os_str(), OsStr::new("link")).unwrap();
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600);
        dir.stamp(Some(OsStr::new("link")), t).unwrap();
        let link = std::fs::symlink_metadata(tmp.path().join("link")).unwrap();
        assert_eq!(link.modified().unwrap(), t);
        assert_ne!(std::fs::metadata(&target).unwrap().modified().unwrap(), t);
        assert!(dir.write_file(OsStr::new("link"), b"through").is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"x");
        assert_eq!(dir.kind(OsStr::new("link")).unwrap(), Some(Kind::Link));
        assert!(dir.open_dir(OsStr::new("link")).is_err());
    }

    #[test]
    fn removing_a_tree_never_follows_a_link_at_its_path_or_inside() {
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("keep.txt"), "kept").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let owned = tmp.path().join("owned");
        std::fs::create_dir_all(owned.join("a/b")).unwrap();
        std::fs::write(owned.join("a/b/f"), "x").unwrap();
        std::fs::write(owned.join("mark"), "x").unwrap();
        std::os::unix::fs::symlink(victim.path(), owned.join("a/link")).unwrap();
        remove_tree(&owned, &["mark"]).unwrap();
        assert!(!owned.exists());
        // The owned path itself swapped for a link to the victim.
        std::os::unix::fs::symlink(victim.path(), &owned).unwrap();
        remove_tree(&owned, &["mark"]).unwrap();
        assert!(std::fs::symlink_metadata(&owned).is_err());
        assert_eq!(
            std::fs::read(victim.path().join("keep.txt")).unwrap(),
            b"kept"
        );
    }
}

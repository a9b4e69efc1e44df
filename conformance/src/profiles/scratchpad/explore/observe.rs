//! What the harness can observe of an implementation's root, without following a link: whether a
//! caller's session and member directories exist (SP-3.6 is checked after every call), and the
//! whole state of the sessions (files with their contents and times, directories, links), from
//! which the model is re-derived after a known difference (`ScratchpadModel::adopt_disk`).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::profiles::scratchpad::model::{ObservedMember, ObservedSession};

/// Whether `path` is a directory itself (a link to one is not).
fn is_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Whether the session directory and the member directory below it exist on disk.
pub fn caller_dirs(root: &Path, session: &str, member: &str) -> (bool, bool) {
    let s = root.join(session);
    (is_dir(&s), is_dir(&s.join(member)))
}

/// A time on disk in whole milliseconds since the Unix epoch, truncated (SP-7.2).
fn millis(meta: &fs::Metadata) -> i64 {
    let t = meta
        .modified()
        .expect("file times are available on this platform");
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(before) => {
            let d = before.duration();
            -(d.as_millis() as i64) - i64::from(d.subsec_nanos() % 1_000_000 != 0)
        }
    }
}

/// The names in a directory, sorted (a walk's order must not depend on the file system's).
fn sorted_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The sessions on disk among `sessions` (the implementation's names for the exploration's
/// callers; any other entry of the root is not the scratchpad's, SP-5.4), each with its member
/// directories. Entries the model cannot hold (a file or a link directly in a session
/// directory, a FIFO) are left out, as SP-7.5 leaves them to no requester.
pub fn observe(root: &Path, sessions: &BTreeSet<String>) -> Vec<ObservedSession> {
    let mut out = Vec::new();
    for name in sorted_entries(root) {
        let dir = root.join(&name);
        if !sessions.contains(&name) || !is_dir(&dir) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(&dir) else {
            continue;
        };
        let mut members = Vec::new();
        for member in sorted_entries(&dir) {
            let mdir = dir.join(&member);
            if !is_dir(&mdir) {
                continue;
            }
            let mut m = ObservedMember {
                name: member,
                ..ObservedMember::default()
            };
            walk(&mdir, &mut Vec::new(), &mut m);
            members.push(m);
        }
        out.push(ObservedSession {
            name,
            dir_mtime: millis(&meta),
            members,
        });
    }
    out
}

fn walk(dir: &Path, prefix: &mut Vec<String>, m: &mut ObservedMember) {
    for name in sorted_entries(dir) {
        let path = dir.join(&name);
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        prefix.push(name);
        if meta.file_type().is_symlink() {
            m.links.push(prefix.clone());
        } else if meta.is_dir() {
            m.dirs.push(prefix.clone());
            walk(&path, prefix, m);
        } else if meta.is_file() {
            if let Ok(content) = fs::read(&path) {
                m.files.push((prefix.clone(), content, millis(&meta)));
            }
        }
        prefix.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_is_read_as_the_model_holds_it_links_unfollowed_foreign_entries_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let member = root.join("t-abc/m1");
        fs::create_dir_all(member.join("dir/deep")).unwrap();
        fs::write(member.join("notes.md"), "hello").unwrap();
        fs::write(member.join("dir/deep/d.txt"), "d").unwrap();
        std::os::unix::fs::symlink(tmp.path(), member.join("link")).unwrap();
        fs::create_dir_all(root.join("c-empty/m2")).unwrap();
        fs::create_dir_all(root.join("lost+found")).unwrap();
        let t = filetime::FileTime::from_unix_time(1_767_225_600, 7_500_000);
        filetime::set_file_mtime(member.join("notes.md"), t).unwrap();
        filetime::set_file_mtime(root.join("c-empty"), t).unwrap();

        let sessions: BTreeSet<String> = ["t-abc", "c-empty", "c-absent"].map(String::from).into();
        let seen = observe(root, &sessions);
        let names: Vec<&str> = seen.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["c-empty", "t-abc"]);
        assert_eq!(
            seen[0].dir_mtime, 1_767_225_600_007,
            "truncated to the millisecond"
        );
        assert_eq!(seen[0].members[0].name, "m2");
        let m = &seen[1].members[0];
        let v = |p: &str| p.split('/').map(String::from).collect::<Vec<_>>();
        assert_eq!(m.dirs, vec![v("dir"), v("dir/deep")]);
        assert_eq!(m.links, vec![v("link")]);
        assert_eq!(
            m.files[1],
            (v("notes.md"), b"hello".to_vec(), 1_767_225_600_007)
        );
        assert_eq!(caller_dirs(root, "t-abc", "m1"), (true, true));
        assert_eq!(caller_dirs(root, "t-abc", "m9"), (true, false));
        assert_eq!(caller_dirs(root, "c-absent", "m1"), (false, false));
    }
}

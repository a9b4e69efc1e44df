//! Finding a suite's scenario files, one way for every profile: every file under the suite's
//! directory whose name ends in one of the given extensions, each once, in path order. Nothing
//! outside the directory is ever opened: a symbolic link (to a file or to a folder) that leaves
//! it, or leads nowhere, is refused by name and never read; a link to a file inside the tree
//! counts as that file; a link to a folder inside the tree is not entered (its files are found
//! where they are, and a link back up the tree would otherwise find each file again at every
//! level). A scenario-named entry that is not a regular file (a FIFO, a device) is refused
//! rather than opened. Two files with one test name are an error, since a report or `--only`
//! could not tell them apart ([`duplicate_name`]).

use std::path::{Path, PathBuf};

/// What [`find`] found under a suite's directory.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The scenario files, in path order.
    pub files: Vec<FoundFile>,
    /// Entries refused by name, each with why, in path order.
    pub refused: Vec<(PathBuf, String)>,
}

/// One scenario file: where it was found, and the path to open, which holds no symlink.
#[derive(Debug, PartialEq, Eq)]
pub struct FoundFile {
    /// As found under the suite's directory (a link's own path, for a link).
    pub path: PathBuf,
    /// The file itself: `path`, or for a link inside the tree its resolved target.
    pub open: PathBuf,
}

/// Every file under `dir` whose name ends `.<ext>` for one of `extensions`. An error (a
/// sentence) when `dir` is missing or not a directory; `dir` itself may be a symlink, since
/// the person running the harness names it.
pub fn find(dir: &Path, extensions: &[&str]) -> Result<Found, String> {
    let root = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => std::fs::canonicalize(dir).map_err(|e| e.to_string())?,
        Ok(_) => {
            return Err(
                "not a directory; --scenarios names the folder holding the .tdm files".into(),
            )
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                "no such directory; --scenarios names the folder holding the .tdm files".into(),
            )
        }
        Err(e) => return Err(format!("cannot read the scenario directory: {e}")),
    };
    let mut found = Found::default();
    let named = |p: &Path| {
        p.extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| extensions.contains(&x))
    };
    collect(&root, dir, &named, &mut found)
        .map_err(|e| format!("cannot read the scenario directory: {e}"))?;
    found.files.sort_by(|a, b| a.path.cmp(&b.path));
    found.refused.sort();
    Ok(found)
}

fn collect(
    root: &Path,
    dir: &Path,
    named: &dyn Fn(&Path) -> bool,
    out: &mut Found,
) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        // The entry's own type: a symlink is looked at as a link, never followed here.
        let kind = e.file_type()?;
        if kind.is_dir() {
            collect(root, &p, named, out)?;
        } else if kind.is_symlink() {
            link(root, p, named, out);
        } else if named(&p) {
            if kind.is_file() {
                out.files.push(FoundFile {
                    open: p.clone(),
                    path: p,
                });
            } else {
                out.refused
                    .push((p, "not a regular file (a scenario is a text file)".into()));
            }
        }
    }
    Ok(())
}

/// A symlink at `p`: its target is resolved (every link on the way) and must stay in the tree.
fn link(root: &Path, p: PathBuf, named: &dyn Fn(&Path) -> bool, out: &mut Found) {
    let target = match std::fs::canonicalize(&p) {
        Ok(t) => t,
        Err(_) if named(&p) => {
            out.refused
                .push((p, "a symbolic link that leads nowhere".into()));
            return;
        }
        // A dangling link that names no scenario is not one.
        Err(_) => return,
    };
    let is_dir = std::fs::metadata(&target).is_ok_and(|m| m.is_dir());
    if !target.starts_with(root) {
        // A folder may hold scenarios; a file matters only if it is named like one.
        if is_dir || named(&p) {
            out.refused.push((
                p,
                "a symbolic link to somewhere outside the scenario directory; the harness reads \
                 nothing outside --scenarios (copy the file in, or name its folder with --scenarios)"
                    .into(),
            ));
        }
        return;
    }
    if is_dir || !named(&p) {
        // A folder inside the tree is walked where it is.
        return;
    }
    if std::fs::metadata(&target).is_ok_and(|m| m.is_file()) {
        out.files.push(FoundFile {
            path: p,
            open: target,
        });
    } else {
        out.refused.push((
            p,
            "a symbolic link to something that is not a regular file".into(),
        ));
    }
}

/// The first test name two files share, as `(name, first file, second file)`, in path order.
pub fn duplicate_name<'a, T>(
    items: &'a [T],
    name: impl Fn(&T) -> String,
    file: impl Fn(&'a T) -> &'a Path,
) -> Option<(String, &'a Path, &'a Path)> {
    duplicate_names(items, name, file).into_iter().next()
}

/// Every test name a file shares with an earlier one, as `(name, first file, this file)`, in
/// path order.
pub fn duplicate_names<'a, T>(
    items: &'a [T],
    name: impl Fn(&T) -> String,
    file: impl Fn(&'a T) -> &'a Path,
) -> Vec<(String, &'a Path, &'a Path)> {
    let mut seen = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for item in items {
        let n = name(item);
        match seen.get(&n) {
            Some(first) => out.push((n, *first, file(item))),
            None => {
                seen.insert(n, file(item));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_loop_is_walked_once_and_a_linked_file_counts() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/a.tdm"), "x").unwrap();
        std::os::unix::fs::symlink(d, d.join("sub/loop")).unwrap();
        std::os::unix::fs::symlink(d.join("sub/a.tdm"), d.join("b.tdm")).unwrap();
        let found = find(d, &["tdm"]).unwrap();
        let real = std::fs::canonicalize(d.join("sub/a.tdm")).unwrap();
        assert_eq!(
            found.files,
            vec![
                FoundFile {
                    path: d.join("b.tdm"),
                    open: real
                },
                FoundFile {
                    path: d.join("sub/a.tdm"),
                    open: d.join("sub/a.tdm")
                }
            ]
        );
        assert_eq!(found.refused, vec![]);
    }

    #[test]
    fn links_leaving_the_tree_or_leading_nowhere_are_refused_and_other_names_ignored() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.tdm"), "secret").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::os::unix::fs::symlink(outside.path().join("x.tdm"), d.join("out.tdm")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.join("folder")).unwrap();
        std::os::unix::fs::symlink("/nowhere/at/all", d.join("gone.tdm")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.tdm"), d.join("notes.md")).unwrap();
        let found = find(d, &["tdm"]).unwrap();
        assert_eq!(found.files, vec![]);
        let refused: Vec<&Path> = found.refused.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(
            refused,
            vec![d.join("folder"), d.join("gone.tdm"), d.join("out.tdm")]
        );
        assert!(find(&d.join("missing"), &["tdm"])
            .unwrap_err()
            .contains("no such directory"));
        assert!(find(&d.join("gone.tdm"), &["tdm"]).is_err());
    }
}

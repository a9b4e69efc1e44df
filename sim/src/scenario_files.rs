//! Finding scenario files under a directory, the same way for both grammars: each file once.
//! Directory symlinks are not followed (a link back up the tree would otherwise load every
//! scenario again at each level, about 41 times before the path grew too long); a symlink to a
//! file is a file. Two files with one test name are an error, since a report or `--only` could
//! not tell them apart.

use std::path::{Path, PathBuf};

/// Every file under `dir` whose name ends `.{extension}`, sorted by path. `dir` itself may be a
/// symlink; nothing below it that is a symlink to a directory is entered.
pub fn find(dir: &Path, extension: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    collect(dir, extension, &mut out)?;
    out.sort();
    Ok(out)
}

fn collect(dir: &Path, extension: &str, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        // `file_type` does not follow symlinks; `metadata` below does, for links only.
        let kind = e.file_type()?;
        if kind.is_dir() {
            collect(&p, extension, out)?;
            continue;
        }
        let is_file = kind.is_file()
            || (kind.is_symlink() && std::fs::metadata(&p).is_ok_and(|m| m.is_file()));
        if is_file && p.extension().is_some_and(|x| x == extension) {
            out.push(p);
        }
    }
    Ok(())
}

/// The first test name two files share, as `(name, first file, second file)`, in path order.
pub fn duplicate_name<'a, T>(
    items: &'a [T],
    name: impl Fn(&T) -> String,
    file: impl Fn(&'a T) -> &'a Path,
) -> Option<(String, &'a Path, &'a Path)> {
    let mut seen = std::collections::BTreeMap::new();
    for item in items {
        if let Some(first) = seen.insert(name(item), file(item)) {
            return Some((name(item), first, file(item)));
        }
    }
    None
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
        let found = find(d, "tdm").unwrap();
        assert_eq!(found, vec![d.join("b.tdm"), d.join("sub/a.tdm")]);
    }
}

//! Loading a suite's scenarios, one way for every profile: every `.tdm` file under the suite's
//! directory (`--scenarios`), found by `tidemark_sim::scenario_files` (a symlink leaving the
//! directory, or leading nowhere, is refused by name and never read), each read once, bounded
//! ([`MAX_FILE_BYTES`]) and as UTF-8; a file whose header names another registered profile is
//! left to that profile; the rest are handed to the profile's parser. A file in the older
//! grammar (`.tdms`) is named with what to do. Two files with one test name are refused. Every
//! error is a [`ScenarioFileError`], `file:line: message`, and a load reports all of them
//! ([`LoadErrors`]): each file's first, every file.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest scenario file read: a larger one is refused before it is read (the largest in
/// the repository is under 8 KiB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A scenario file that cannot be loaded: where (line 0 for the file, directory or SPEC.md as a
/// whole) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct ScenarioFileError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl ScenarioFileError {
    pub fn new(file: &Path, line: usize, message: impl Into<String>) -> Self {
        ScenarioFileError {
            file: file.to_path_buf(),
            line,
            message: message.into(),
        }
    }
}

/// Every error of a load, one per file that failed, in path order; never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadErrors(pub Vec<ScenarioFileError>);

impl LoadErrors {
    pub fn one(e: ScenarioFileError) -> LoadErrors {
        LoadErrors(vec![e])
    }

    /// The first error (in path order).
    pub fn first(&self) -> &ScenarioFileError {
        &self.0[0]
    }
}

impl From<ScenarioFileError> for LoadErrors {
    fn from(e: ScenarioFileError) -> Self {
        LoadErrors::one(e)
    }
}

impl fmt::Display for LoadErrors {
    /// One error per line; with more than one, a last line counting them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        if self.0.len() > 1 {
            write!(
                f,
                "\n{} scenario files failed to load; nothing ran",
                self.0.len()
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadErrors {}

/// A scenario's test name: `<profile>::<file stem>`, `-` read as `_`, so `cargo test eviction`
/// filters by file name.
pub fn test_name(profile: &str, file: &Path) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().replace('-', "_"))
        .unwrap_or_default();
    format!("{profile}::{stem}")
}

/// What to do with a file in the older grammar.
pub const OLDER_GRAMMAR: &str = "a scenario in the older scoped grammar (.tdms), which is no \
     longer read: rename it to .tdm, add 'profile: scoped' after its 'scenario:' line, put every \
     header line before the first step and quote list items holding a space or a comma \
     (scenarios/README.md)";

/// Every `profile` scenario under `dir`, parsed by `parse(file, text)`, in path order, each once
/// (see the module's doc for which files and how); `file_of` says which file a parsed scenario
/// came from, for its test name. On any error, every error of the load.
pub fn load_dir<S>(
    dir: &Path,
    profile: &str,
    parse: impl Fn(&Path, &str) -> Result<S, ScenarioFileError>,
    file_of: fn(&S) -> &Path,
) -> Result<Vec<S>, LoadErrors> {
    let found = tidemark_sim::scenario_files::find(dir, &["tdm", "tdms"])
        .map_err(|e| LoadErrors::one(ScenarioFileError::new(dir, 0, e)))?;
    let mut errors: Vec<ScenarioFileError> = found
        .refused
        .iter()
        .map(|(p, why)| ScenarioFileError::new(p, 0, why.clone()))
        .collect();
    let mut scenarios = Vec::new();
    for f in &found.files {
        if f.path.extension().is_some_and(|x| x == "tdms") {
            errors.push(ScenarioFileError::new(&f.path, 0, OLDER_GRAMMAR));
            continue;
        }
        let bytes = match read_bounded(&f.open) {
            Ok(b) => b,
            Err(message) => {
                errors.push(ScenarioFileError::new(&f.path, 0, message));
                continue;
            }
        };
        if belongs_elsewhere(&bytes, profile) {
            continue;
        }
        let parsed = super::header::utf8_text(&bytes)
            .map_err(|(line, message)| ScenarioFileError::new(&f.path, line, message))
            .and_then(|text| parse(&f.path, text));
        match parsed {
            Ok(s) => scenarios.push(s),
            Err(e) => errors.push(e),
        }
    }
    for (name, first, second) in tidemark_sim::scenario_files::duplicate_names(
        &scenarios,
        |s| test_name(profile, file_of(s)),
        file_of,
    ) {
        errors.push(ScenarioFileError::new(
            second,
            1,
            format!(
                "the test name {name} is taken by {} already; rename one of the files",
                first.display()
            ),
        ));
    }
    if errors.is_empty() {
        Ok(scenarios)
    } else {
        errors.sort();
        Err(LoadErrors(errors))
    }
}

/// The bytes of a scenario file, opened without following a symlink (the finder resolved any
/// link already) and without blocking (a FIFO swapped in since is refused, not waited on), at
/// most [`MAX_FILE_BYTES`].
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot read the file: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read the file: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file (a scenario is a text file)".into());
    }
    let too_big = || {
        format!(
            "the file is larger than a scenario may be: at most {MAX_FILE_BYTES} bytes ({} MiB)",
            MAX_FILE_BYTES >> 20
        )
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the file: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Whether a file's first `profile:` line names another registered profile than `profile`
/// (`crate::profiles::PROFILES`, the one registry). A file that names no profile or an unknown
/// one belongs to every loader, so its error is reported rather than skipped.
fn belongs_elsewhere(bytes: &[u8], profile: &str) -> bool {
    super::header::profile_named(&String::from_utf8_lossy(bytes))
        .is_some_and(|p| p != profile && crate::profiles::names().contains(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(dir: &Path) -> Result<Vec<PathBuf>, LoadErrors> {
        load_dir(
            dir,
            "demo",
            |f, text| {
                if text.contains("bad") {
                    Err(ScenarioFileError::new(f, 2, "bad"))
                } else {
                    Ok(f.to_path_buf())
                }
            },
            |p| p.as_path(),
        )
    }

    #[test]
    fn every_failing_file_is_reported_in_path_order_and_another_profiles_file_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("b.tdm"), "x\nbad\n").unwrap();
        std::fs::write(d.join("a.tdm"), "x\nbad\n").unwrap();
        std::fs::write(d.join("c.tdm"), "fine\n").unwrap();
        std::fs::write(d.join("d.tdm"), "profile: scoped\nbad\n").unwrap();
        std::fs::write(d.join("e.tdms"), "old\n").unwrap();
        let e = load(d).unwrap_err();
        let at: Vec<(String, usize)> =
            e.0.iter()
                .map(|e| {
                    (
                        e.file.file_name().unwrap().to_string_lossy().into_owned(),
                        e.line,
                    )
                })
                .collect();
        assert_eq!(
            at,
            [
                ("a.tdm".into(), 2),
                ("b.tdm".into(), 2),
                ("e.tdms".into(), 0)
            ]
        );
        assert!(e
            .to_string()
            .ends_with("3 scenario files failed to load; nothing ran"));
        std::fs::remove_file(d.join("a.tdm")).unwrap();
        std::fs::remove_file(d.join("b.tdm")).unwrap();
        std::fs::remove_file(d.join("e.tdms")).unwrap();
        assert_eq!(load(d).unwrap(), vec![d.join("c.tdm")]);
    }

    #[test]
    fn a_file_larger_than_a_scenario_may_be_is_refused_unread() {
        let tmp = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(tmp.path().join("huge.tdm")).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = load(tmp.path()).unwrap_err();
        assert_eq!(e.first().line, 0);
        assert!(e.first().message.contains("at most 1048576 bytes"), "{e}");
    }
}

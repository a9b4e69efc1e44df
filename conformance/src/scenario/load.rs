//! Loading a profile's scenario directory, the same way for every profile: its `.tdm` files in
//! path order, each once, those whose header names another profile left to that profile, each
//! read as UTF-8 and handed to the profile's parser, and two files with one test name refused.
//! Every error is a [`ScenarioFileError`], `file:line: message`.

use std::path::{Path, PathBuf};

/// A scenario file that cannot be loaded: where (line 0 for the file, directory or SPEC.md as a
/// whole) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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

/// A scenario's test name: `<profile>::<file stem>`, `-` read as `_`, so `cargo test eviction`
/// filters by file name.
pub fn test_name(profile: &str, file: &Path) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().replace('-', "_"))
        .unwrap_or_default();
    format!("{profile}::{stem}")
}

/// Every `profile` scenario under `dir`, parsed by `parse(file, text)`, in path order, each once
/// (directory symlinks are not followed); `file_of` says which file a parsed scenario came
/// from, for its test name. Two files with one test name are an error at the second.
pub fn load_dir<S>(
    dir: &Path,
    profile: &str,
    parse: impl Fn(&Path, &str) -> Result<S, ScenarioFileError>,
    file_of: fn(&S) -> &Path,
) -> Result<Vec<S>, ScenarioFileError> {
    let files = tidemark_sim::scenario_files::find(dir, "tdm").map_err(|e| {
        ScenarioFileError::new(dir, 0, format!("cannot read the scenario directory: {e}"))
    })?;
    let scenarios = files
        .iter()
        .filter(|f| !super::header::belongs_elsewhere(f, profile))
        .map(|f| {
            let text = super::header::read_text(f)
                .map_err(|(line, message)| ScenarioFileError::new(f, line, message))?;
            parse(f, &text)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some((name, first, second)) = tidemark_sim::scenario_files::duplicate_name(
        &scenarios,
        |s| test_name(profile, file_of(s)),
        file_of,
    ) {
        return Err(ScenarioFileError::new(
            second,
            1,
            format!(
                "the test name {name} is taken by {} already; rename one of the files",
                first.display()
            ),
        ));
    }
    Ok(scenarios)
}

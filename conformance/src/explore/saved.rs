//! The one saved-failure format, for every profile: a shrunk operation sequence, the seed and
//! generator version it came from, the implementation it failed against (the reference or a
//! named mutant), the profile's setting for the run, where it diverged, and the hash of the
//! failing run's trace, so a replay proves the failure recurs identically. A file names its
//! profile, and lives in that profile's folder, `fixtures/explore/<profile>/`; only `ops` and
//! `setting` are the profile's own.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The format's version: a file of another version is refused, not guessed at.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedFailure<Op, Setting> {
    pub version: u32,
    /// Whose failure this is; `tidemark replay` reads it to pick the profile.
    pub profile: String,
    pub seed: u64,
    /// The generator version the seed ran through, so `seed` names the workload the failure
    /// was shrunk from. Files saved before versions existed are 1. A replay runs `ops` and never
    /// regenerates.
    #[serde(default = "generator_version_1")]
    pub generator: u32,
    /// The mutant the failure was found against; `None`: the reference itself.
    pub mutant: Option<String>,
    /// What else the run was given (the scratchpad: an unmounted root; scoped: the tier).
    #[serde(flatten)]
    pub setting: Setting,
    pub ops: Vec<Op>,
    /// Where it diverged, as printed when found.
    pub divergence: String,
    pub trace_hash: String,
}

fn generator_version_1() -> u32 {
    1
}

/// Where `profile`'s saved failures live.
pub fn profile_dir(profile: &str) -> PathBuf {
    crate::spec::repo_root()
        .join("fixtures/explore")
        .join(profile)
}

/// The largest saved failure read: a shrunk failure is a few KiB; a larger file is refused
/// before it is read.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// A saved failure's text, at most [`MAX_FILE_BYTES`].
fn read_saved(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{}: larger than a saved failure may be ({MAX_FILE_BYTES} bytes)",
            path.display()
        ));
    }
    Ok(text)
}

/// The profile a saved failure names, without committing to any profile's operations.
pub fn profile_of(path: &Path) -> Option<String> {
    let text = read_saved(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("profile")?.as_str().map(str::to_string)
}

impl<Op: Serialize + DeserializeOwned, Setting: Serialize + DeserializeOwned>
    SavedFailure<Op, Setting>
{
    /// `<profile>-<mutant or reference>-seed-<seed>.json`.
    pub fn file_name(&self) -> String {
        format!(
            "{}-{}-seed-{}.json",
            self.profile,
            self.mutant.as_deref().unwrap_or("reference"),
            self.seed
        )
    }

    /// Saves under `dir` as [`Self::file_name`], never over a different saved failure: the same
    /// mutant and seed found in another setting (the other tier) or shrunk differently gets
    /// `-2`, `-3`, ... before `.json`; the same failure saved again is the same file.
    pub fn save(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_string_pretty(self).expect("a saved failure serialises") + "\n";
        let name = self.file_name();
        let stem = name.trim_end_matches(".json");
        for n in 1u32.. {
            let path = match n {
                1 => dir.join(&name),
                n => dir.join(format!("{stem}-{n}.json")),
            };
            match std::fs::read_to_string(&path) {
                Ok(existing) if existing == text => return Ok(path),
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::write(&path, text)?;
                    return Ok(path);
                }
                Err(e) => return Err(e),
            }
        }
        unreachable!("some numbered name is free")
    }

    /// Reads a saved failure of `profile`; another profile's, or another format version, is an
    /// error naming the file.
    pub fn load_as(path: &Path, profile: &str) -> Result<Self, String> {
        let text = read_saved(path)?;
        if let Some(other) = profile_of(path).filter(|p| p != profile) {
            return Err(format!(
                "{}: a saved failure of the {other} profile, not of {profile}",
                path.display()
            ));
        }
        let f: Self = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}: {e}", path.display(), e.line()))?;
        if f.version != FORMAT_VERSION {
            return Err(format!(
                "{}: saved failure format version {} is not {FORMAT_VERSION}",
                path.display(),
                f.version
            ));
        }
        Ok(f)
    }

    /// Every saved failure under `dir`, sorted by file name, each read by `load` (the
    /// profile's reader, which may check more).
    pub fn load_all_with(
        dir: &Path,
        load: impl Fn(&Path) -> Result<Self, String>,
    ) -> Result<Vec<(PathBuf, Self)>, String> {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Ok(Vec::new());
        };
        let mut paths: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|p| load(&p).map(|f| (p, f)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(tier: &str) -> SavedFailure<u8, serde_json::Value> {
        SavedFailure {
            version: FORMAT_VERSION,
            profile: "rows".into(),
            seed: 7,
            generator: 1,
            mutant: Some("seal-all-kinds".into()),
            setting: serde_json::json!({ "tier": tier }),
            ops: vec![1, 2],
            divergence: "at 1".into(),
            trace_hash: "abc".into(),
        }
    }

    #[test]
    fn the_same_failure_found_on_two_tiers_is_saved_twice_and_the_same_one_once() {
        let dir = tempfile::tempdir().unwrap();
        let postgres = failure("postgres").save(dir.path()).unwrap();
        let memory = failure("memory").save(dir.path()).unwrap();
        let again = failure("postgres").save(dir.path()).unwrap();
        assert_eq!(
            postgres.file_name().unwrap(),
            "rows-seal-all-kinds-seed-7.json"
        );
        assert_eq!(
            memory.file_name().unwrap(),
            "rows-seal-all-kinds-seed-7-2.json"
        );
        assert_eq!(again, postgres);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        let read = |p: &Path| SavedFailure::<u8, serde_json::Value>::load_as(p, "rows").unwrap();
        assert_eq!(read(&postgres), failure("postgres"));
        assert_eq!(read(&memory), failure("memory"));
    }
}

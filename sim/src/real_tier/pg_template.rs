//! `initdb` once per machine: the ephemeral cluster's data directory is a copy of a cached,
//! freshly initialised one.
//!
//! `initdb` runs PostgreSQL's bootstrap and a few hundred catalog statements in single-user
//! mode: 1.7–2.5 s on a loaded 2-core machine, most of a `tidemark run --profile scoped`.
//! Copying its output is a tenth of that. The copy is the same cluster `initdb` would have made
//! (same binaries, same arguments, same account), started from a clean shutdown, so a run still
//! gets a cluster no other run has touched.
//!
//! The cache is one directory per binary directory, `initdb` arguments, account and
//! `postgres` binary (size and modification time, so an upgrade makes a new one), under
//! `TIDEMARK_CACHE_DIR`, else `$XDG_CACHE_HOME/tidemark`, else `~/.cache/tidemark`. It is a
//! cache, not something a run leaves: it is never written after it is made, and deleting it
//! costs the next run one `initdb`. It is made through a directory marked with the run's token
//! (so a run killed while copying leaves nothing the next run's reap does not remove) and
//! appears under its final name in one rename, so a half-copied template is never used.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where templates are kept, if anywhere (no home directory: no cache, `initdb` every run).
pub fn cache_root() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TIDEMARK_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("tidemark"));
    }
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(|h| PathBuf::from(h).join(".cache/tidemark"))
}

/// The template for a cluster made by `initdb` from `bin` with `args`, run as `run_as` (or as
/// this process): its path whether or not it exists yet.
pub fn template_path(bin: &Path, args: &[&str], run_as: Option<(u32, u32)>) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let postgres = std::fs::metadata(bin.join("postgres")).ok()?;
    let key = format!(
        "{}|{}|{:?}|{}|{}",
        bin.display(),
        args.join(" "),
        run_as,
        postgres.size(),
        postgres.mtime()
    );
    // FNV-1a: stable across builds, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    Some(cache_root()?.join(format!("pg-data-{h:016x}")))
}

/// Whether `template` is a complete template (it only ever appears complete).
pub fn is_ready(template: &Path) -> bool {
    template.join("PG_VERSION").is_file()
}

/// Copies a directory tree keeping modes and owners (`cp -a`: the data directory must stay
/// 0700 and, when running as root, owned by the `postgres` account).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let out = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // A signal's sweep kills a copy still writing into a directory it removes.
        .env(
            crate::owner::RUN_ENV,
            crate::owner::Owner::current().run_env_value(0),
        )
        .output()
        .map_err(|e| format!("cp: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cp -a {} {}: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Keeps a copy of `data` (just made by `initdb`, never started) as `template`. Best effort: a
/// failure costs the next run an `initdb`, so it is reported and otherwise ignored. Two runs
/// saving at once are fine: the rename does not replace, and the second one's copy goes.
pub fn save(data: &Path, template: &Path) {
    let result = (|| -> Result<(), String> {
        let root = template.parent().ok_or("a template path has a parent")?;
        std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
        let staging = crate::owner::tempdir_in(root, "tidemark-pg-template-")
            .map_err(|e| format!("a staging directory in {}: {e}", root.display()))?;
        let copy = staging.path().join("data");
        copy_tree(data, &copy)?;
        match std::fs::rename(&copy, template) {
            Ok(()) => Ok(()),
            Err(_) if is_ready(template) => Ok(()),
            Err(e) => Err(format!("rename to {}: {e}", template.display())),
        }
    })();
    if let Err(e) = result {
        eprintln!("tidemark: not caching the initialised PostgreSQL cluster: {e}");
    }
}

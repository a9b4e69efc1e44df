//! Who owns what a run leaves on the machine, and whether that owner is still alive.
//!
//! Every process of the harness has one owner token ([`Owner::current`]): its pid, an `x`, and a
//! random suffix, all in `[a-z0-9]` (e.g. `4711xk3f9q2`), so it fits in database names and
//! container labels. Everything a run leaves behind carries it:
//!
//! - temporary directories are named `tidemark-...` and hold a file [`OWNER_FILE`] with the token
//!   ([`Owner::mark_dir`], [`tempdir`], [`tempdir_in`]);
//! - databases are named `tdm_<token>_...`;
//! - Docker containers carry the label `tidemark.owner=<token>`;
//! - processes an implementation starts carry `TIDEMARK_RUN=<token>-<n>` in their environment
//!   ([`RUN_ENV`]).
//!
//! A run is alive while it holds an exclusive `flock` on `<temp dir>/tidemark-locks/<token>.lock`
//! ([`LOCK_DIR_NAME`]); the kernel releases it when the process dies, however it dies. So a
//! token's owner is [`Liveness::Alive`] when that lock cannot be taken, [`Liveness::Dead`] when
//! the lock file exists and can be taken, and [`Liveness::Unknown`] when there is no lock file
//! (for instance a run that used another temp directory): what is unknown is never touched.
//! A pid alone is never trusted; pids are reused.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The file in a temporary directory that names the run owning it.
pub const OWNER_FILE: &str = ".tidemark-owner";

/// The directory, under the temp dir, holding one lock file per live (or dead, not yet reaped)
/// run. Its name starts with `tidemark-` like the directories it guards; reapers skip it.
pub const LOCK_DIR_NAME: &str = "tidemark-locks";

/// The environment variable every spawned implementation gets, `<token>-<n>`, so its
/// descendants can be found through `/proc/<pid>/environ` even after they leave its process
/// group or session.
pub const RUN_ENV: &str = "TIDEMARK_RUN";

/// This process's owner token and the lock that says it is alive.
pub struct Owner {
    token: String,
    /// Held (flock LOCK_EX) for the process's lifetime; `None` when the lock directory could
    /// not be created, in which case nothing of this run is ever judged dead by others.
    lock: Option<File>,
}

static CURRENT: OnceLock<Owner> = OnceLock::new();

/// Set by [`stop_marking`]: an interrupted run's sweep has begun, so no new directory of this
/// run may appear behind it.
static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on [`Owner::mark_dir`] (and so [`tempdir`]) fails: called when an interrupted run
/// starts removing what it owns, so work still running cannot create what the sweep would miss.
pub fn stop_marking() {
    STOPPED.store(true, std::sync::atomic::Ordering::SeqCst);
}

impl Owner {
    /// This process's owner, created (and its lock taken) on first use. It lives until the
    /// process exits, so the lock is released only by the kernel.
    pub fn current() -> &'static Owner {
        CURRENT.get_or_init(|| {
            let token = new_token();
            let lock = take_own_lock(&lock_dir(), &token).ok();
            Owner { token, lock }
        })
    }

    /// The token, `[a-z0-9]+`.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The descriptor holding this run's lock, if it holds one: the run's guard keeps it open
    /// (a forked descriptor shares the lock), so the run stays alive to others until the guard
    /// has cleaned up after it (`crate::guard`).
    pub fn lock_fd(&self) -> Option<std::os::unix::io::RawFd> {
        self.lock.as_ref().map(|f| f.as_raw_fd())
    }

    /// Whether this run holds its lock (so others can tell it is alive).
    pub fn holds_lock(&self) -> bool {
        self.lock.is_some()
    }

    /// Writes [`OWNER_FILE`] into `dir`, naming this run as its owner.
    pub fn mark_dir(&self, dir: &Path) -> std::io::Result<()> {
        if STOPPED.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the run was interrupted",
            ));
        }
        let mut f = File::create(dir.join(OWNER_FILE))?;
        writeln!(f, "{}", self.token)
    }

    /// The value of [`RUN_ENV`] for the `n`th implementation this run starts.
    pub fn run_env_value(&self, n: u64) -> String {
        format!("{}-{n}", self.token)
    }
}

/// Where runs make the directories that see the most writes (scratch roots, an ephemeral
/// PostgreSQL cluster): `TIDEMARK_TMPDIR`, else `/dev/shm` (memory-backed, so they cost
/// syscalls rather than disk writes, and never wait behind other processes' writeback), else
/// the system temporary directory. Reapers look here as well as in the temp dir.
pub fn scratch_base() -> PathBuf {
    if let Some(d) = std::env::var_os("TIDEMARK_TMPDIR") {
        return d.into();
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && tempfile::tempdir_in(shm).is_ok() {
        return shm.to_path_buf();
    }
    std::env::temp_dir()
}

/// `<temp dir>/tidemark-locks`, where run locks live.
pub fn lock_dir() -> PathBuf {
    std::env::temp_dir().join(LOCK_DIR_NAME)
}

/// The prefix of a directory being made by [`tempdir_in`]: marked, not yet renamed to its name.
pub const STAGING_PREFIX: &str = ".tidemark-staging-";

/// A temporary directory of this run, removed (with everything in it) when dropped.
#[derive(Debug)]
pub struct OwnedDir {
    path: PathBuf,
}

impl OwnedDir {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = remove_owned(&self.path);
    }
}

/// How long [`remove_owned`] keeps trying while something still writes into the directory.
const REMOVE_RETRY_MS: u64 = 2_000;

/// Removes `dir` and everything in it, its [`OWNER_FILE`] last. A process that was just killed
/// may still be finishing a write into it (an initdb, a postmaster), so a removal can fail
/// part-way; it is retried for a moment, and if it still fails the directory keeps its mark, so
/// a later sweep or the next run's reap finds it. (`remove_dir_all` alone can delete the mark
/// first and then fail, leaving a directory nobody will ever claim.) A directory already gone
/// is not an error.
///
/// Nothing is followed: an implementation handed a directory inside this one may have replaced
/// anything in it, or this directory itself, by a link to somewhere else; the removal works from
/// descriptors opened without following links (`crate::confine::remove_tree`).
pub fn remove_owned(dir: &Path) -> std::io::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(REMOVE_RETRY_MS);
    loop {
        match crate::confine::remove_tree(dir, &[OWNER_FILE]) {
            Ok(()) => return Ok(()),
            Err(e) if std::time::Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

/// A fresh temporary directory `tidemark-<what>-XXXX` in the temp dir, marked with this run's
/// token.
pub fn tempdir(prefix: &str) -> std::io::Result<OwnedDir> {
    tempdir_in(&std::env::temp_dir(), prefix)
}

/// Like [`tempdir`], under `base`. `prefix` must start with `tidemark-` so reapers find it.
///
/// The directory never exists under its name without its owner file: it is made as
/// `.tidemark-staging-<token>-*` (the name alone says whose it is, see [`staging_owner`]),
/// marked, then renamed (never over an existing one).
pub fn tempdir_in(base: &Path, prefix: &str) -> std::io::Result<OwnedDir> {
    debug_assert!(prefix.starts_with("tidemark-"), "{prefix}");
    let owner = Owner::current();
    let staging_prefix = format!("{STAGING_PREFIX}{}-", owner.token());
    let staging = tempfile::Builder::new()
        .prefix(&staging_prefix)
        .tempdir_in(base)?;
    owner.mark_dir(staging.path())?;
    let suffix = staging
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(staging_prefix.as_str()))
        .unwrap_or("x")
        .to_string();
    let mut attempt = 0u32;
    loop {
        let name = if attempt == 0 {
            format!("{prefix}{suffix}")
        } else {
            format!("{prefix}{suffix}{attempt}")
        };
        let target = base.join(name);
        match rename_noreplace(staging.path(), &target) {
            Ok(()) => {
                // The staging TempDir's path no longer exists; forget it without removing.
                let _ = staging.keep();
                return Ok(OwnedDir { path: target });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// rename(2) that fails with `AlreadyExists` instead of replacing an empty directory.
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: two valid NUL-terminated paths; renameat2 reads them only.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The token in a staging directory's name (`.tidemark-staging-<token>-XXXX`), if it is one.
pub fn staging_owner(name: &str) -> Option<&str> {
    let token = name.strip_prefix(STAGING_PREFIX)?.split('-').next()?;
    is_token(token).then_some(token)
}

/// The token in `dir`'s [`OWNER_FILE`], if it has a valid one.
pub fn dir_owner(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(OWNER_FILE)).ok()?;
    let token = text.trim();
    is_token(token).then(|| token.to_string())
}

/// Whether `s` has the exact shape of an owner token: a pid (digits), `x`, and
/// [`SUFFIX_LEN`] of `[a-z0-9]`. Anything else is not a run's: names of older runs
/// (`tdm_<pid>_<n>_...`) and names other code chose (`tdm_template_...`) are never reaped.
pub fn is_token(s: &str) -> bool {
    let Some((pid, suffix)) = s.split_once('x') else {
        return false;
    };
    !pid.is_empty()
        && pid.len() <= 10
        && pid.bytes().all(|b| b.is_ascii_digit())
        && suffix.len() == SUFFIX_LEN
        && suffix
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
}

/// The length of a token's random suffix.
pub const SUFFIX_LEN: usize = 6;

/// The token in a [`RUN_ENV`] value (`<token>-<n>`).
pub fn token_of_run_env(value: &str) -> Option<&str> {
    let (token, n) = value.rsplit_once('-')?;
    (is_token(token) && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(token)
}

/// Whether a token's run still holds its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The lock is held (by that run, or by a reaper cleaning up after it).
    Alive,
    /// The lock file exists and nobody holds it: what the token owns may be removed.
    Dead,
    /// No lock file here: the run used another temp directory, or was already reaped. Leave
    /// its things alone.
    Unknown,
}

/// Whether `token`'s run is alive, judged by its lock under [`lock_dir`].
pub fn liveness(token: &str) -> Liveness {
    liveness_in(&lock_dir(), token)
}

/// Like [`liveness`], with the lock directory given.
pub fn liveness_in(lock_dir: &Path, token: &str) -> Liveness {
    if !is_token(token) {
        return Liveness::Unknown;
    }
    if token == Owner::current().token() {
        return Liveness::Alive;
    }
    match claim_dead_in(lock_dir, token) {
        Claim::Dead(_) => Liveness::Dead,
        Claim::Alive => Liveness::Alive,
        Claim::Unknown => Liveness::Unknown,
    }
}

/// Holds a dead run's lock while its leftovers are removed, so two reapers never work on the
/// same run and the run is never judged dead twice. [`DeadRun::forget`] removes the lock file
/// once everything it guarded is gone.
pub struct DeadRun {
    token: String,
    path: PathBuf,
    _lock: File,
}

impl DeadRun {
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Removes the dead run's lock file: call it only when nothing it owned is left, since
    /// without the lock file its leftovers become [`Liveness::Unknown`] and stay.
    pub fn forget(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

enum Claim {
    Dead(DeadRun),
    Alive,
    Unknown,
}

/// Takes a dead run's lock, if `token`'s run is dead (see [`Liveness`]). `None` when it is
/// alive, unknown, or another reaper holds it.
pub fn claim_dead(token: &str) -> Option<DeadRun> {
    if !is_token(token) || token == Owner::current().token() {
        return None;
    }
    match claim_dead_in(&lock_dir(), token) {
        Claim::Dead(d) => Some(d),
        _ => None,
    }
}

/// Tokens with a lock file in the lock directory (alive or dead), sorted.
pub fn known_tokens() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(lock_dir())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let token = name.strip_suffix(".lock")?;
            is_token(token).then(|| token.to_string())
        })
        .collect();
    out.sort();
    out
}

fn claim_dead_in(lock_dir: &Path, token: &str) -> Claim {
    let path = lock_dir.join(format!("{token}.lock"));
    let file = match OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(_) => return Claim::Unknown,
    };
    if try_flock(&file) {
        Claim::Dead(DeadRun {
            token: token.to_string(),
            path,
            _lock: file,
        })
    } else {
        Claim::Alive
    }
}

/// Two 32-bit keys for `pg_advisory_lock(int, int)`: a constant namespace ("tdmk") and a hash
/// of the token. A run holds this lock on a connection it keeps open to a shared server; a
/// database `tdm_<token>_...` whose lock can be taken is stale. A hash collision can only make
/// a dead run look alive, never the other way round.
pub fn advisory_lock_keys(token: &str) -> (i32, i32) {
    let digest = Sha256::digest(token.as_bytes());
    let hash = i32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    (i32::from_be_bytes(*b"tdmk"), hash)
}

/// `<pid>x<6 random [a-z0-9]>`. The random part comes from the OS-seeded thread RNG (this is
/// naming, not simulation, so it never reaches a trace).
fn new_token() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::thread_rng();
    let suffix: String = (0..SUFFIX_LEN)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{}x{suffix}", std::process::id())
}

fn take_own_lock(dir: &Path, token: &str) -> std::io::Result<File> {
    std::fs::create_dir_all(dir)?;
    // Runs of several users may share the temp dir: let every user create lock files here.
    // The directory is sticky, like /tmp, so nobody removes another's lock.
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777));
    }
    let path = dir.join(format!("{token}.lock"));
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    if !try_flock(&file) {
        return Err(std::io::Error::other("own lock is held by someone else"));
    }
    // For a person looking at the directory; liveness never reads it.
    let _ = writeln!(file, "{}", std::process::id());
    Ok(file)
}

/// flock(LOCK_EX | LOCK_NB): true when taken.
fn try_flock(file: &File) -> bool {
    // SAFETY: flock on a valid open descriptor; no memory is shared.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owned_directory_is_removed_mark_last_without_following_links_out_of_it() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep.txt"), "kept").unwrap();
        let base = tempfile::tempdir().unwrap();
        let dir = tempdir_in(base.path(), "tidemark-test-").unwrap();
        std::fs::create_dir_all(dir.path().join("data/base")).unwrap();
        std::fs::write(dir.path().join("data/base/1"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        assert_eq!(
            dir_owner(dir.path()).as_deref(),
            Some(Owner::current().token())
        );
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists(), "the directory is gone");
        assert!(
            outside.path().join("keep.txt").exists(),
            "the link was not followed"
        );
        remove_owned(&path).expect("a directory already gone is not an error");
    }

    #[test]
    fn tokens_are_lowercase_alphanumeric_and_carry_the_pid() {
        let t = Owner::current().token();
        assert!(is_token(t), "{t}");
        assert!(t.starts_with(&format!("{}x", std::process::id())), "{t}");
        // Names of older runs, all digits, are not tokens.
        assert!(!is_token("4711"));
        assert!(!is_token("template"));
        assert!(!is_token("4711xab"));
        assert!(is_token("4711xab12cd"));
        assert!(!is_token("ab_c"));
        assert!(!is_token("ABC"));
        assert!(!is_token(""));
    }

    #[test]
    fn run_env_values_give_back_their_token() {
        let owner = Owner::current();
        let v = owner.run_env_value(7);
        assert_eq!(token_of_run_env(&v), Some(owner.token()));
        assert_eq!(token_of_run_env("12xabcdef-"), None);
        assert_eq!(token_of_run_env("12xabcdef"), None);
        assert_eq!(token_of_run_env("12xabcdef-4a"), None);
    }

    #[test]
    fn a_held_lock_is_alive_a_free_one_dead_and_a_missing_one_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let held = take_own_lock(dir.path(), "1xheld00").unwrap();
        assert_eq!(liveness_in(dir.path(), "1xheld00"), Liveness::Alive);
        drop(held);
        assert_eq!(liveness_in(dir.path(), "1xheld00"), Liveness::Dead);
        assert_eq!(liveness_in(dir.path(), "1xnever0"), Liveness::Unknown);
        // A reaper holding a dead run's lock makes it look alive to the next reaper.
        let Claim::Dead(claim) = claim_dead_in(dir.path(), "1xheld00") else {
            panic!("a free lock is dead");
        };
        assert_eq!(liveness_in(dir.path(), "1xheld00"), Liveness::Alive);
        claim.forget();
        assert_eq!(liveness_in(dir.path(), "1xheld00"), Liveness::Unknown);
    }

    #[test]
    fn this_run_is_alive_and_its_marked_directories_name_it() {
        let owner = Owner::current();
        assert!(owner.holds_lock());
        assert_eq!(liveness(owner.token()), Liveness::Alive);
        assert!(claim_dead(owner.token()).is_none());
        assert!(known_tokens().contains(&owner.token().to_string()));
        let dir = tempdir("tidemark-owner-test-").unwrap();
        assert_eq!(dir_owner(dir.path()).as_deref(), Some(owner.token()));
        let name = dir.path().file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("tidemark-owner-test-"), "{name}");
        // No staging directory is left behind.
        let staging = format!("{STAGING_PREFIX}{}-", owner.token());
        let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&staging))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(
            staging_owner(&format!("{STAGING_PREFIX}4711xab12cd-Q1w2")),
            Some("4711xab12cd")
        );
    }

    #[test]
    fn advisory_keys_are_stable_and_namespaced() {
        let (ns, a) = advisory_lock_keys("1xabc123");
        assert_eq!(ns, i32::from_be_bytes(*b"tdmk"));
        assert_eq!(advisory_lock_keys("1xabc123").1, a);
        assert_ne!(advisory_lock_keys("1xabd123").1, a);
    }
}

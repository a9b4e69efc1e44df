//! The out-of-process implementation: any program that speaks the `tidemark/1` protocol
//! (PROTOCOL.md) on stdin/stdout, whatever its profile. This module knows no profile's
//! operations: a [`ProcessSession`] sends request bodies of any serializable type and reads
//! replies of any deserializable type; each profile maps its steps onto it (the scratchpad in
//! `profiles/scratchpad/process.rs`, the scoped profile in `profiles/scoped/process.rs`).
//!
//! Each scenario gets its own process, started in the scenario's working directory, handed the
//! scenario's environment in an init exchange, and killed (SIGKILL, no shutdown) when the
//! scenario stops or restarts it, exactly as the in-process driver drops the reference. Killing
//! reaches every process it started, however it detached: it runs in a cgroup of its own where
//! the machine allows one (`tidemark_sim::contain`: a `setsid()`, a double fork or a scrubbed
//! environment does not leave it), and in any case its whole process group (even after the
//! group's leader exited) and every process carrying its `TIDEMARK_RUN` value. The kernel kills
//! it if the harness dies, and the run's guard (`tidemark_sim::guard`) kills what it started.
//! Every line the
//! harness waits for is bounded by [`ProcessOptions::reply_timeout`]; a program that prints
//! garbage, answers the wrong request, never answers or exits early becomes a [`DriverError`]
//! naming what happened and the last lines of its stderr, and is killed and reaped. The runner
//! attaches the scenario and step and moves on to the next scenario.
//!
//! This file is what a profile uses (the options, the command, the factory, the session); every
//! path that can leave a child process behind (spawn, kill, reap) is in `child.rs`, so the
//! guarantee that none is left is checked in one place, and the bounded protocol lines over its
//! pipes are in `wire.rs`.

mod child;
mod wire;

use child::Adapter;

use crate::driver::DriverError;
use crate::protocol::{Init, InitOk, RequestEnvelope, INIT_ID, PROTOCOL};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Numbers the implementations this process starts, for their `TIDEMARK_RUN` values. From 1:
/// `<token>-0` is what the run's own helpers carry (`initdb` and the template copy of an
/// ephemeral PostgreSQL), and killing an implementation kills every process carrying its value,
/// so the first implementation's kill must not reach a cluster being made at the same moment.
static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

/// The default bound on every wait for the program: its init_ok, each reply, its exit.
pub const DEFAULT_REPLY_TIMEOUT_MS: u64 = 10_000;

/// The longest line accepted from the program's stdout. A 1 MiB file read back is 2 MiB of hex;
/// the bound leaves room for large listings and stops a runaway program from exhausting memory.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// How long to wait, after the program's stdout closes or it is killed, for its exit status and
/// the rest of its stderr. Short: the process is already gone or going.
const EXIT_GRACE: Duration = Duration::from_millis(1_000);

/// How long to wait for the exit status of a program that misbehaved while still running (a
/// timeout, a garbage line): it usually is not exiting, so the report should not wait long.
const RUNNING_GRACE: Duration = Duration::from_millis(50);

/// How much of the program's stderr is kept for error messages: the last lines, each cut to a
/// bound (with the count of bytes cut, as [`clip_bytes`] does).
const STDERR_TAIL_LINES: usize = 12;
const STDERR_LINE_MAX_BYTES: usize = 400;

/// The least time a program gets to start and answer init, whatever the reply timeout: an
/// interpreter on a loaded CI machine, a JVM or `go run` can take seconds before its first line.
pub const MIN_STARTUP_TIMEOUT_MS: u64 = 30_000;

#[derive(Clone, Debug)]
pub struct ProcessOptions {
    /// Bounds every wait for an answer to a request (the `--timeout-ms` knob).
    pub reply_timeout: Duration,
    /// Reads the profiles' parts of an `init_ok` (`profiles::check_claims`): one that is
    /// malformed makes the line no protocol message, as a malformed envelope does.
    pub claims_check: ClaimsCheck,
}

/// Checks what the profiles declare in an `init_ok`; the error says what is malformed.
pub type ClaimsCheck = fn(&InitOk) -> Result<(), String>;

impl ProcessOptions {
    /// Bounds the wait from spawning the program to its init_ok.
    pub fn startup_timeout(&self) -> Duration {
        self.reply_timeout
            .max(Duration::from_millis(MIN_STARTUP_TIMEOUT_MS))
    }
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            reply_timeout: Duration::from_millis(DEFAULT_REPLY_TIMEOUT_MS),
            claims_check: |_| Ok(()),
        }
    }
}

/// A program and its arguments, split as a shell splits words (quotes respected) but not run
/// through a shell.
///
/// The program runs with the scenario's working directory as its current directory (so an
/// unmounted scratchpad that resolves `""` to `.` is caught writing there, SP-1.3). A command is
/// written relative to where `tidemark` is run, so every word that names an existing path
/// relative to that directory is made absolute first; a bare program name (`python3`) is looked
/// up on `PATH` as a shell would.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterCommand {
    program: OsString,
    args: Vec<OsString>,
    /// As the user wrote it: for reports and replay commands.
    text: String,
}

impl AdapterCommand {
    pub fn parse(text: &str, launch_dir: &Path) -> Result<AdapterCommand, DriverError> {
        let words = shlex::split(text).ok_or_else(|| {
            DriverError(format!(
                "cannot split the command {text:?} into words: a quote is not closed"
            ))
        })?;
        let Some((program, args)) = words.split_first() else {
            return Err(DriverError("the implementation command is empty".into()));
        };
        let resolve = |word: &str, is_program: bool| -> OsString {
            let path = Path::new(word);
            let looks_like_path = !is_program || word.contains('/');
            if looks_like_path
                && path.is_relative()
                && !word.starts_with('-')
                && launch_dir.join(path).exists()
            {
                launch_dir.join(path).into_os_string()
            } else {
                OsString::from(word)
            }
        };
        Ok(AdapterCommand {
            program: resolve(program, true),
            args: args.iter().map(|a| resolve(a, false)).collect(),
            text: text.to_string(),
        })
    }

    /// The command as the user wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// A program whose claims were learned by [`ProcessFactory::probe`]; each profile starts one
/// [`ProcessSession`] per scenario from it.
#[derive(Clone, Debug)]
pub struct ProcessFactory {
    command: AdapterCommand,
    options: ProcessOptions,
    claims: InitOk,
}

impl ProcessFactory {
    /// Starts the program once, with an init that names no profile, to learn which profiles and
    /// capabilities it claims; then closes its stdin and kills it. Scenarios of a profile it does
    /// not claim are skipped.
    pub async fn probe(
        command: AdapterCommand,
        options: ProcessOptions,
    ) -> Result<ProcessFactory, DriverError> {
        let scratch = tidemark_sim::owner::tempdir("tidemark-probe-").map_err(|e| {
            DriverError(format!(
                "cannot make a scratch directory for the probe: {e}"
            ))
        })?;
        let (root, workdir) = (scratch.path().join("root"), scratch.path().join("workdir"));
        for dir in [&root, &workdir] {
            std::fs::create_dir(dir)
                .map_err(|e| DriverError(format!("cannot make {}: {e}", dir.display())))?;
        }
        let init = init_message(None, &root, &workdir, &BTreeMap::new())?;
        let mut adapter = Adapter::spawn(&command, &workdir, &options)?;
        let claims = adapter.handshake(init).await;
        adapter.close_stdin();
        adapter.kill().await;
        Ok(ProcessFactory {
            command,
            options,
            claims: claims?,
        })
    }

    /// What the program said it supports.
    pub fn claims(&self) -> &InitOk {
        &self.claims
    }

    pub fn command(&self) -> &AdapterCommand {
        &self.command
    }

    /// The name the program gave itself, and the command that ran it: reports then say which
    /// version was checked, and how to run it again.
    pub fn name(&self) -> String {
        match self.claims.implementation.trim() {
            "" => self.command.text.clone(),
            named => format!("{named} via `{}`", self.command.text),
        }
    }
}

/// The init of a program given a scratch root and a working directory: for `profile`, or, with
/// `None`, to ask what it supports. Paths travel as JSON strings, so a path that is not UTF-8 is
/// an error rather than a lossy name.
pub fn init_message(
    profile: Option<&str>,
    root: &Path,
    workdir: &Path,
    knobs: &BTreeMap<String, i64>,
) -> Result<Init, DriverError> {
    let utf8 = |what: &str, p: &Path| {
        p.to_str().map(str::to_string).ok_or_else(|| {
            DriverError(format!(
                "the {what} {} is not UTF-8 and cannot be sent as JSON",
                p.display()
            ))
        })
    };
    Ok(Init {
        id: INIT_ID,
        protocol: PROTOCOL.to_string(),
        profile: profile.map(str::to_string),
        root: utf8("scratch root", root)?,
        workdir: utf8("working directory", workdir)?,
        knobs: knobs.clone(),
        s3: None,
        postgres_url: None,
    })
}

/// Spawns the program in `workdir`, sends `init` and checks that its init_ok claims `profile`.
/// On any failure the program is killed and the error says why.
async fn start_checked(
    command: &AdapterCommand,
    options: &ProcessOptions,
    workdir: &Path,
    init: Init,
    profile: &str,
) -> Result<(Adapter, InitOk), DriverError> {
    let mut adapter = Adapter::spawn(command, workdir, options)?;
    let claims = match adapter.handshake(init).await {
        Ok(claims) => claims,
        Err(e) => {
            adapter.kill().await;
            return Err(e);
        }
    };
    if !claims.profiles.iter().any(|p| p == profile) {
        let e = adapter
            .failure(format!(
                "the implementation was started for the {profile} profile but its init_ok claims only [{}]",
                claims.profiles.join(", ")
            ))
            .await;
        adapter.kill().await;
        return Err(e);
    }
    Ok((adapter, claims))
}

/// One scenario's program, for any profile: started with a given `init`, sent typed requests,
/// restarted (SIGKILL to its process group, then a new process with the same `init`) when the
/// scenario says it crashes. Request ids increase across restarts, so a reply from a previous
/// life cannot be mistaken for an answer. Every wait is bounded.
pub struct ProcessSession {
    command: AdapterCommand,
    options: ProcessOptions,
    workdir: PathBuf,
    init: Init,
    profile: String,
    adapter: Option<Adapter>,
    /// What the running program claimed in its latest `init_ok`.
    claims: Option<InitOk>,
    /// The variants the program declared when it was probed: the scenario's steps were chosen
    /// by them, so every start of the scenario must declare the same.
    variants: crate::variants::Declared,
    next_id: u64,
}

impl ProcessSession {
    /// The bound on every wait for this program (`--timeout-ms`): the scoped profile's people's
    /// requests over HTTP are held to it too.
    pub fn reply_timeout(&self) -> Duration {
        self.options.reply_timeout
    }

    /// Starts the program of `factory` with `init` (whose `profile` must be set) in `workdir`.
    pub async fn start(
        factory: &ProcessFactory,
        workdir: &Path,
        init: Init,
    ) -> Result<ProcessSession, DriverError> {
        let profile = init
            .profile
            .clone()
            .ok_or_else(|| DriverError("a session's init names no profile".into()))?;
        let mut session = ProcessSession {
            command: factory.command.clone(),
            options: factory.options.clone(),
            workdir: workdir.to_path_buf(),
            init,
            profile,
            adapter: None,
            claims: None,
            variants: factory.claims().declared_variants(),
            next_id: INIT_ID + 1,
        };
        session.restart().await?;
        Ok(session)
    }

    /// Kills the running program (a crash: SIGKILL to its process group, nothing flushed) and
    /// starts a new one with the same init.
    pub async fn restart(&mut self) -> Result<(), DriverError> {
        self.stop().await;
        let (mut adapter, claims) = start_checked(
            &self.command,
            &self.options,
            &self.workdir,
            self.init.clone(),
            &self.profile,
        )
        .await?;
        let declared = claims.declared_variants();
        if declared != self.variants {
            let e = adapter
                .failure(format!(
                    "the implementation declared the variants ({}) when probed, and ({declared}) \
                     when started for this scenario; the scenario's steps follow one \
                     declaration, so every start must make the same",
                    self.variants
                ))
                .await;
            adapter.kill().await;
            return Err(e);
        }
        self.adapter = Some(adapter);
        self.claims = Some(claims);
        Ok(())
    }

    /// What the running program claimed in its latest `init_ok` (a restarted program may claim
    /// differently; the latest is the one that counts).
    pub fn claims(&self) -> Option<&InitOk> {
        self.claims.as_ref()
    }

    /// Sends one request (`op` names it in error messages) at `now_ms` and returns its outcome.
    /// A program that misbehaves is killed: it is not trusted with another request.
    pub async fn call<B: Serialize, O: DeserializeOwned>(
        &mut self,
        now_ms: i64,
        op: &str,
        body: B,
    ) -> Result<O, DriverError> {
        let Some(adapter) = self.adapter.as_mut() else {
            return Err(DriverError(format!(
                "a {op} request arrived while the implementation was not running"
            )));
        };
        let id = self.next_id;
        self.next_id += 1;
        let result = adapter
            .request(RequestEnvelope { id, now_ms, body }, op)
            .await;
        if result.is_err() {
            if let Some(adapter) = self.adapter.take() {
                adapter.kill().await;
            }
        }
        result
    }

    /// Kills the program, if it runs.
    pub async fn stop(&mut self) {
        if let Some(adapter) = self.adapter.take() {
            adapter.kill().await;
        }
    }
}

/// The launch directory for [`AdapterCommand::parse`]: where `tidemark` was run.
pub fn launch_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

#[cfg(test)]
mod tests {
    use super::child::StderrState;
    use super::*;
    use tidemark_sim::owner::Owner;

    #[test]
    fn stderr_without_a_newline_is_shown_and_a_long_line_says_how_much_was_cut() {
        let mut st = StderrState::default();
        st.take(b"first\nno newline at the end");
        assert_eq!(st.shown(), vec!["first", "no newline at the end"]);
        let mut st = StderrState::default();
        st.take(&vec![b'x'; 1000]);
        st.take(b"\n");
        assert_eq!(
            st.shown(),
            vec![format!("{}… (600 more bytes)", "x".repeat(400))]
        );
    }

    #[test]
    fn a_command_is_split_like_a_shell_and_existing_relative_paths_are_made_absolute() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("impl.py"), "").unwrap();
        let c = AdapterCommand::parse("python3 -u 'impl.py' --name \"a b\"", dir.path()).unwrap();
        assert_eq!(c.program, OsString::from("python3"));
        assert_eq!(
            c.args,
            vec![
                OsString::from("-u"),
                dir.path().join("impl.py").into_os_string(),
                OsString::from("--name"),
                OsString::from("a b")
            ]
        );
        assert_eq!(c.text(), "python3 -u 'impl.py' --name \"a b\"");
    }

    /// Killing an implementation kills every process carrying its `TIDEMARK_RUN` value, so no
    /// implementation may carry `<token>-0`, the value of the run's own `initdb` and template
    /// copy: the first one's kill would take down a PostgreSQL cluster being made meanwhile.
    #[test]
    fn no_implementation_carries_the_run_env_value_of_the_runs_own_helpers() {
        let program = r#"python3 -c 'import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    print(json.dumps({"type": "init_ok", "in_reply_to": m["id"], "protocol": "tidemark/1", "implementation": os.environ["TIDEMARK_RUN"], "profiles": []}), flush=True)'"#;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let owner = Owner::current();
        for _ in 0..2 {
            let command = AdapterCommand::parse(program, Path::new("/")).unwrap();
            let factory = runtime
                .block_on(ProcessFactory::probe(command, ProcessOptions::default()))
                .unwrap();
            let value = &factory.claims().implementation;
            assert!(
                value.starts_with(&format!("{}-", owner.token()))
                    && *value != owner.run_env_value(0),
                "{value}"
            );
        }
    }

    #[test]
    fn an_unclosed_quote_or_an_empty_command_is_refused_with_a_reason() {
        assert!(AdapterCommand::parse("python3 'x", Path::new("/"))
            .unwrap_err()
            .0
            .contains("quote"));
        assert!(AdapterCommand::parse("   ", Path::new("/"))
            .unwrap_err()
            .0
            .contains("empty"));
    }
}

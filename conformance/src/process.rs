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
//! Why one file of this length: every path that can leave a child process behind (spawn,
//! bounded reads, kill, reap) is in one module, so the guarantee that none is left is checked in
//! one place.

use crate::driver::DriverError;
use crate::protocol::{
    FromImplementation, Init, InitOk, RequestEnvelope, ToImplementation, INIT_ID, PROTOCOL,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tidemark_sim::clip::{clip, clip_bytes, clip_prefix};
use tidemark_sim::owner::{Owner, RUN_ENV};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;
use tokio::time::Instant;

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

/// A running program: its pipes, the tail of its stderr, and the bound on every wait.
struct Adapter {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: StderrTail,
    reply_timeout: Duration,
    startup_timeout: Duration,
    claims_check: ClaimsCheck,
    /// Set once the process has been waited for, so it is never signalled after its pid may
    /// have been reused.
    reaped: bool,
    /// Its `TIDEMARK_RUN` value, which its descendants inherit.
    run_env: String,
    /// Its cgroup, where one could be made: every process it starts stays in it.
    cgroup: Option<tidemark_sim::contain::Cgroup>,
    /// Its process group (its own pid) and when it started (clock ticks since boot), so the
    /// group's members are killed even after the leader is gone, and a reused number never is.
    group: Option<(i32, u64)>,
}

impl Adapter {
    fn spawn(
        command: &AdapterCommand,
        workdir: &Path,
        options: &ProcessOptions,
    ) -> Result<Adapter, DriverError> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .current_dir(workdir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so that killing it also kills what it started (`go run`,
        // `sh -c`, `npm start` all run the real program as a child).
        #[cfg(unix)]
        cmd.process_group(0);
        // A value no other implementation has: its descendants inherit it, so they are found
        // and killed with it even after leaving its group or session (`kill_descendants`).
        let n = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
        let run_env = Owner::current().run_env_value(n);
        cmd.env(RUN_ENV, &run_env);
        // Its own cgroup, entered between fork and exec, so that everything it starts stays in
        // it whatever it does to detach (`setsid()`, a double fork, an empty environment).
        let cgroup = tidemark_sim::contain::Cgroup::new(n);
        let entrance = cgroup.as_ref().map(|c| c.entrance());
        // The kernel kills the implementation if the harness dies (even by SIGKILL), so a stuck
        // program never outlives it. Its descendants are reaped by the next run (by RUN_ENV).
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: prctl and getppid are async-signal-safe and touch no memory of the parent.
            unsafe {
                cmd.pre_exec(move || {
                    if let Some(entrance) = &entrance {
                        entrance.enter()?;
                    }
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // The harness died between fork and prctl: the signal was never armed.
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().map_err(|e| {
            DriverError(format!(
                "cannot start the implementation `{}`: {e}",
                command.text
            ))
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("all three pipes were requested");
        };
        // Its group, remembered while the leader is surely alive (not yet waited for), and told
        // to the guard, which kills its members if the harness dies.
        let group = child.id().and_then(|pid| {
            let pid = pid as i32;
            let (_, started) = tidemark_sim::reap::stat_fields(pid)?;
            tidemark_sim::guard::register_group(pid, started);
            Some((pid, started))
        });
        Ok(Adapter {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            stderr: StderrTail::capture(stderr),
            reply_timeout: options.reply_timeout,
            startup_timeout: options.startup_timeout(),
            claims_check: options.claims_check,
            reaped: false,
            run_env,
            cgroup,
            group,
        })
    }

    /// Sends init and checks init_ok: the same protocol, and a well-formed claim.
    async fn handshake(&mut self, init: Init) -> Result<InitOk, DriverError> {
        let bound = self.startup_timeout;
        self.send(&ToImplementation::<()>::Init(init), "init".into(), bound)
            .await?;
        // The init's answer carries no profile's body: a `reply` here, whatever its body, is
        // the wrong message rather than an unreadable line.
        match self
            .receive::<serde::de::IgnoredAny>(INIT_ID, "init", bound)
            .await?
        {
            FromImplementation::InitOk(ok) if ok.protocol == PROTOCOL => {
                match crate::variants::Declared::read(&ok.variants) {
                    Ok(_) => Ok(ok),
                    Err(e) => Err(self.failure(format!("the init_ok's variants: {e}")).await),
                }
            }
            FromImplementation::InitOk(ok) => Err(self
                .failure(format!(
                    "the implementation speaks {:?}, but the harness speaks {PROTOCOL:?}",
                    ok.protocol
                ))
                .await),
            FromImplementation::Error(e) => Err(self
                .failure(format!("the implementation refused init: {}", e.message))
                .await),
            other => Err(self
                .failure(format!(
                    "expected init_ok in answer to init, got {}",
                    other.type_name()
                ))
                .await),
        }
    }

    async fn request<B: Serialize, O: DeserializeOwned>(
        &mut self,
        envelope: RequestEnvelope<B>,
        op: &str,
    ) -> Result<O, DriverError> {
        let id = envelope.id;
        let bound = self.reply_timeout;
        let what = format!("request {id} ({op})");
        self.send(&ToImplementation::Request(envelope), what, bound)
            .await?;
        match self.receive::<O>(id, op, bound).await? {
            FromImplementation::Reply(reply) => Ok(reply.body),
            FromImplementation::Error(e) => Err(self
                .failure(format!(
                    "the implementation reported an error for request {id} ({op}): {}",
                    clip(&e.message)
                ))
                .await),
            other => Err(self
                .failure(format!(
                    "expected a reply to request {id} ({op}), got {}",
                    other.type_name()
                ))
                .await),
        }
    }

    async fn send<B: Serialize>(
        &mut self,
        message: &ToImplementation<B>,
        what: String,
        bound: Duration,
    ) -> Result<(), DriverError> {
        let mut line = serde_json::to_vec(message).expect("protocol messages always serialise");
        line.push(b'\n');
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(DriverError(format!(
                "cannot send {what}: the implementation's stdin is closed"
            )));
        };
        let written = tokio::time::timeout(bound, async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        })
        .await;
        match written {
            Ok(Ok(())) => Ok(()),
            // A broken pipe means the program has gone: say so, with what it printed last and how
            // it ended.
            Ok(Err(e)) => {
                let printed = self.unread_stdout_line().await;
                Err(self
                    .failure_on_exit(format!("cannot send {what}: {e}{printed}"))
                    .await)
            }
            Err(_) => Err(self
                .failure(format!(
                    "the implementation did not read {what} within {} ms (is it reading stdin?)",
                    bound.as_millis()
                ))
                .await),
        }
    }

    /// The first line a program that has gone left on its stdout, quoted, if any: often its
    /// reason for going.
    async fn unread_stdout_line(&mut self) -> String {
        let mut line = Vec::new();
        match tokio::time::timeout(
            RUNNING_GRACE,
            read_bounded_line(&mut self.stdout, &mut line),
        )
        .await
        {
            Ok(Ok(LineRead::Line)) if !line.iter().all(u8::is_ascii_whitespace) => {
                format!("; it had printed {}", quote_line(&line))
            }
            _ => String::new(),
        }
    }

    /// Reads the next message, which must answer `id`. Blank lines are ignored; the whole wait,
    /// however many lines it takes, is bounded by `bound`.
    async fn receive<O: DeserializeOwned>(
        &mut self,
        id: u64,
        op: &str,
        bound: Duration,
    ) -> Result<FromImplementation<O>, DriverError> {
        let awaited = if id == INIT_ID {
            "init".to_string()
        } else {
            format!("request {id} ({op})")
        };
        let deadline = Instant::now() + bound;
        loop {
            let mut line = Vec::new();
            let read =
                tokio::time::timeout_at(deadline, read_bounded_line(&mut self.stdout, &mut line))
                    .await;
            let read = match read {
                Ok(r) => r,
                Err(_) => {
                    return Err(self
                        .failure(format!(
                            "no answer to {awaited} within {} ms ({})",
                            bound.as_millis(),
                            if id == INIT_ID {
                                "the startup bound: at least 30 s, or --timeout-ms if longer"
                            } else {
                                "the bound is --timeout-ms"
                            }
                        ))
                        .await)
                }
            };
            match read {
                Err(e) => return Err(self.failure(format!("cannot read the answer to {awaited}: {e}")).await),
                Ok(LineRead::Eof) => {
                    return Err(self.failure_on_exit(format!("the implementation closed its stdout before answering {awaited}")).await)
                }
                Ok(LineRead::TooLong) => {
                    return Err(self
                        .failure(format!("the implementation printed a line longer than {MAX_LINE_BYTES} bytes while answering {awaited}"))
                        .await)
                }
                Ok(LineRead::Line) => {}
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = serde_json::from_slice(&line)
                .map_err(|e| e.to_string())
                .and_then(|m: FromImplementation<O>| match &m {
                    FromImplementation::InitOk(ok) => (self.claims_check)(ok).map(|()| m),
                    _ => Ok(m),
                });
            let message = match parsed {
                Ok(m) => m,
                Err(e) => {
                    return Err(self
                        .failure(format!(
                            "the implementation printed a line that is not a {PROTOCOL} message while the harness awaited the answer to {awaited} ({e}): {}",
                            quote_line(&line)
                        ))
                        .await)
                }
            };
            if message.in_reply_to() != id {
                return Err(self
                    .failure(format!(
                        "the implementation answered request {} but the harness awaited the answer to {awaited}",
                        message.in_reply_to()
                    ))
                    .await);
            }
            return Ok(message);
        }
    }

    /// A driver error: `what`, how the process ended if it has, and the tail of its stderr.
    async fn failure(&mut self, what: String) -> DriverError {
        self.describe_failure(what, RUNNING_GRACE).await
    }

    /// A driver error for a program that closed its end of a pipe: it is exiting, so its exit
    /// status is worth a longer wait.
    async fn failure_on_exit(&mut self, what: String) -> DriverError {
        self.describe_failure(what, EXIT_GRACE).await
    }

    async fn describe_failure(&mut self, what: String, grace: Duration) -> DriverError {
        let mut message = what;
        if let Some(status) = self.exit_status_within(grace).await {
            let _ = write!(
                message,
                "; the implementation exited ({})",
                describe_exit(status)
            );
            // It has exited, so its stderr is closing: let the capture collect the last lines.
            self.stderr.finish(EXIT_GRACE).await;
        } else {
            tokio::task::yield_now().await;
        }
        message.push_str(&self.stderr.render());
        DriverError(message)
    }

    /// The exit status if the process ends within `grace`.
    async fn exit_status_within(&mut self, grace: Duration) -> Option<ExitStatus> {
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => {
                self.reaped = true;
                Some(status)
            }
            _ => None,
        }
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// SIGKILL to the process and its group, then reap it: a crash, no shutdown.
    async fn kill(mut self) {
        self.stdin = None;
        if !self.reaped {
            // Where there is no cgroup, what is still below the leader is found by its parent
            // links before the leader dies (after, its orphans belong to the harness).
            let below = self.below_leader();
            self.kill_group();
            let _ = self.child.start_kill();
            let _ = self.exit_status_within(EXIT_GRACE).await;
            tidemark_sim::reap::kill_listed(&below);
        }
        self.kill_descendants();
        self.stderr.abort();
    }

    /// The live processes below the leader, when there is no cgroup to hold them.
    fn below_leader(&self) -> Vec<(i32, u64)> {
        match (&self.cgroup, self.group) {
            (None, Some((leader, _))) => tidemark_sim::reap::descendants(leader),
            _ => Vec::new(),
        }
    }

    /// SIGKILL to everything this implementation started, however it detached: its cgroup,
    /// the members of its process group (the leader may be long gone), and every process
    /// carrying its `TIDEMARK_RUN` value. Runs after the leader is reaped (or given up on), so
    /// it never races tokio for the leader's exit status.
    fn kill_descendants(&mut self) {
        let leader = (!self.reaped)
            .then(|| self.group.map(|(pid, _)| pid))
            .flatten();
        // Every member of its process group is in its cgroup (setsid() does not leave one):
        // once the cgroup is gone, so is the group.
        let contained = self.cgroup.as_mut().is_some_and(|c| c.kill(leader));
        if let (false, Some((pgid, started))) = (contained, self.group) {
            tidemark_sim::reap::kill_process_group(pgid, started, leader);
        }
        let value = self.run_env.as_str();
        tidemark_sim::reap::kill_run_processes(|v| v == value);
    }

    fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads; it
            // touches no memory. The group was created at spawn and the child is not yet reaped,
            // so the id cannot name anyone else's group.
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
            }
        }
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        // Error paths that never reach `kill` still take the program's children with it;
        // `kill_on_drop` covers the program itself and tokio reaps it.
        let below = if self.reaped {
            Vec::new()
        } else {
            self.below_leader()
        };
        if !self.reaped {
            self.kill_group();
        }
        tidemark_sim::reap::kill_listed(&below);
        self.kill_descendants();
        self.stderr.abort();
    }
}

fn describe_exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => status.to_string(),
    }
}

/// A line the program printed, quoted and cut by the shared rule ([`clip_bytes`]).
fn quote_line(line: &[u8]) -> String {
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    format!("`{}`", clip_bytes(&line[..end]))
}

enum LineRead {
    Line,
    Eof,
    TooLong,
}

/// Reads up to and excluding the next `\n` into `line`, refusing to hold more than
/// [`MAX_LINE_BYTES`]. A final line without a newline still counts as a line.
async fn read_bounded_line(
    reader: &mut BufReader<ChildStdout>,
    line: &mut Vec<u8>,
) -> std::io::Result<LineRead> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        if let Some(newline) = available.iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&available[..newline]);
            reader.consume(newline + 1);
            return Ok(LineRead::Line);
        }
        let taken = available.len();
        line.extend_from_slice(available);
        reader.consume(taken);
        if line.len() > MAX_LINE_BYTES {
            return Ok(LineRead::TooLong);
        }
    }
}

/// The last lines the program wrote to stderr, collected by a task that drains the pipe
/// continuously (a full pipe would block a chatty program mid-request). Text after the last
/// newline is kept too, so a program that never ends its line is still shown.
struct StderrTail {
    state: Arc<Mutex<StderrState>>,
    task: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct StderrState {
    /// Complete lines, each already cut.
    lines: VecDeque<String>,
    /// The start of the line being written (at most [`STDERR_LINE_MAX_BYTES`] + 3 bytes kept,
    /// so a cut can back up to a character boundary), and its whole length.
    partial: Vec<u8>,
    partial_len: usize,
}

impl StderrState {
    fn take(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                let line = render_stderr_line(&self.partial, self.partial_len);
                if self.lines.len() == STDERR_TAIL_LINES {
                    self.lines.pop_front();
                }
                self.lines.push_back(line);
                self.partial.clear();
                self.partial_len = 0;
            } else {
                if self.partial.len() < STDERR_LINE_MAX_BYTES + 3 {
                    self.partial.push(b);
                }
                self.partial_len += 1;
            }
        }
    }

    /// The tail as shown: complete lines, then the unfinished one if it has any text.
    fn shown(&self) -> Vec<String> {
        let mut out: Vec<String> = self.lines.iter().cloned().collect();
        if !self.partial.iter().all(u8::is_ascii_whitespace) {
            out.push(render_stderr_line(&self.partial, self.partial_len));
            if out.len() > STDERR_TAIL_LINES {
                out.remove(0);
            }
        }
        out
    }
}

fn render_stderr_line(kept: &[u8], total_len: usize) -> String {
    let line = clip_prefix(kept, total_len, STDERR_LINE_MAX_BYTES);
    line.trim_end().to_string()
}

impl StderrTail {
    fn capture(stderr: tokio::process::ChildStderr) -> StderrTail {
        let state = Arc::new(Mutex::new(StderrState::default()));
        let sink = state.clone();
        let task = tokio::spawn(async move {
            let mut stderr = stderr;
            let mut chunk = vec![0u8; 8 * 1024];
            loop {
                let n = match stderr.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                sink.lock()
                    .expect("the stderr tail is never poisoned")
                    .take(&chunk[..n]);
            }
        });
        StderrTail {
            state,
            task: Some(task),
        }
    }

    /// Waits (bounded) for the pipe to close, so the lines written just before an exit are kept.
    async fn finish(&mut self, grace: Duration) {
        if let Some(task) = self.task.as_mut() {
            if tokio::time::timeout(grace, task).await.is_ok() {
                self.task = None;
            }
        }
    }

    fn abort(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    fn render(&self) -> String {
        let lines = self
            .state
            .lock()
            .expect("the stderr tail is never poisoned")
            .shown();
        if lines.is_empty() {
            return "; its stderr was empty".into();
        }
        let mut s = format!("\nlast {} line(s) of its stderr:", lines.len());
        for l in lines.iter() {
            let _ = write!(s, "\n  | {l}");
        }
        s
    }
}

/// The launch directory for [`AdapterCommand::parse`]: where `tidemark` was run.
pub fn launch_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

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

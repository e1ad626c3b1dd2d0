//! Running one command to completion with bounded capture, a timeout,
//! cancellation and kill-tree.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use tokio_util::sync::CancellationToken;

use super::ProcessError;
use super::capture::{self, CaptureLimit, Captured, OutputCallback, OutputStream};
use super::env::EnvPolicy;
use super::tree::{self, KILL_ROUND, MARKER_VAR, ProcessTree};

/// The default time between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(1);

/// How long output readers may take to reach the end of their pipes once
/// every process of the tree is gone. Only a process that escaped the kill
/// (another user's, say) can hold a pipe open that long.
const READER_DEADLINE: Duration = Duration::from_secs(2);

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl Exit {
    pub(crate) fn from_status(status: std::process::ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Code(code),
            (None, Some(sig)) => Self::Signal(sig),
            (None, None) => Self::Code(-1),
        }
    }

    pub fn success(self) -> bool {
        self == Self::Code(0)
    }

    /// The exit code, shells' way: 128 + the signal for a killed process.
    pub fn code(self) -> i32 {
        match self {
            Self::Code(c) => c,
            Self::Signal(s) => 128 + s,
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(c) => write!(f, "exit code {c}"),
            Self::Signal(s) => write!(f, "killed by signal {s} ({})", signal_name(*s)),
        }
    }
}

/// The usual name of a signal number.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        _ => "signal",
    }
}

/// What a finished command did.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub exit: Exit,
    /// The timeout fired and the tree was killed.
    pub timed_out: bool,
    /// The cancellation token fired and the tree was killed.
    pub cancelled: bool,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
    /// Processes of the tree still running when the leader exited on its
    /// own (background jobs it did not wait for); they were killed.
    pub leftovers_killed: usize,
}

/// Builds and runs one command.
///
/// ```no_run
/// use std::time::Duration;
/// use wield_sandbox::process::{CaptureLimit, Runner};
/// # async fn demo() -> Result<(), wield_sandbox::process::ProcessError> {
/// let out = Runner::new(["bash", "-c", "make test"])
///     .cwd("/srv/project")
///     .timeout(Some(Duration::from_secs(30)))
///     .capture(CaptureLimit::head_and_tail(768 << 10, 256 << 10))
///     .run()
///     .await?;
/// println!("{} after {:?}", out.exit, out.duration);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runner {
    argv: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Option<Vec<(OsString, OsString)>>,
    timeout: Option<Duration>,
    grace: Duration,
    cancel: Option<CancellationToken>,
    stdout_limit: CaptureLimit,
    stderr_limit: CaptureLimit,
    on_output: Option<OutputCallback>,
    scope_signals: bool,
    leader_reaps: bool,
}

impl Runner {
    /// A command from its argument vector (the program first, found on the
    /// command's `PATH`).
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            argv: argv.into_iter().map(Into::into).collect(),
            cwd: None,
            env: None,
            timeout: None,
            grace: DEFAULT_GRACE,
            cancel: None,
            stdout_limit: CaptureLimit::default(),
            stderr_limit: CaptureLimit::default(),
            on_output: None,
            scope_signals: false,
            leader_reaps: false,
        }
    }

    /// The program adopts its own tree's orphans and outlives them (the
    /// Landlock backend's keeper, [`SandboxPlan::leader_reaps`]): it is
    /// killed only after everything else of its tree.
    ///
    /// [`SandboxPlan::leader_reaps`]: super::SandboxPlan::leader_reaps
    #[must_use]
    pub fn leader_reaps(mut self, yes: bool) -> Self {
        self.leader_reaps = yes;
        self
    }

    pub(crate) fn tree(&self, pid: u32, marker: String) -> ProcessTree {
        ProcessTree::new(pid, marker).leader_reaps(self.leader_reaps)
    }

    /// Keep the command's signals to itself: it may signal its own
    /// processes only (where the kernel can scope signals, Landlock ABI 6).
    /// For a command in a sandbox that does not do so itself (bubblewrap);
    /// a set-user-ID program is never scoped.
    #[must_use]
    pub fn scope_signals(mut self, scope: bool) -> Self {
        self.scope_signals = scope;
        self
    }

    /// The working directory (default: wield's).
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The command's complete environment (default: [`EnvPolicy::default`]
    /// applied to wield's, which passes only the core variables).
    #[must_use]
    pub fn env(mut self, vars: Vec<(OsString, OsString)>) -> Self {
        self.env = Some(vars);
        self
    }

    /// Kill the tree after this long (`None`: never).
    #[must_use]
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Time between SIGTERM and SIGKILL (default 1 s).
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Kill the tree when this token is cancelled.
    #[must_use]
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// The same capture limit for both streams.
    #[must_use]
    pub fn capture(mut self, limit: CaptureLimit) -> Self {
        self.stdout_limit = limit;
        self.stderr_limit = limit;
        self
    }

    #[must_use]
    pub fn stdout_limit(mut self, limit: CaptureLimit) -> Self {
        self.stdout_limit = limit;
        self
    }

    #[must_use]
    pub fn stderr_limit(mut self, limit: CaptureLimit) -> Self {
        self.stderr_limit = limit;
        self
    }

    /// Called with every piece of output as it arrives (before capping).
    #[must_use]
    pub fn on_output(mut self, callback: OutputCallback) -> Self {
        self.on_output = Some(callback);
        self
    }

    /// A tokio command for this runner's program, arguments, directory and
    /// environment, tagged with `marker`, in its own process group, stdin
    /// from /dev/null.
    pub(crate) fn command(&self, marker: &str) -> Result<tokio::process::Command, ProcessError> {
        let (program, args) = self.argv.split_first().ok_or(ProcessError::EmptyCommand)?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .env_clear()
            .envs(self.env.clone().unwrap_or_else(|| EnvPolicy::default().build()))
            .env(MARKER_VAR, marker)
            .stdin(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if self.scope_signals
            && !super::signal_scope::setuid(program)
            && let Some(ruleset) = super::signal_scope::ruleset()
        {
            // SAFETY: the hook only makes system calls (see `enter`).
            unsafe {
                cmd.pre_exec(move || {
                    super::signal_scope::enter(&ruleset);
                    Ok(())
                });
            }
        }
        Ok(cmd)
    }

    pub(crate) fn program(&self) -> String {
        self.argv
            .first()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Run the command to completion.
    pub async fn run(self) -> Result<RunOutput, ProcessError> {
        let started = Instant::now();
        tree::ensure_subreaper();
        let marker = tree::new_marker();
        let (out_read, out_write) = capture::output_pipe().map_err(ProcessError::Pipe)?;
        let (err_read, err_write) = capture::output_pipe().map_err(ProcessError::Pipe)?;
        let mut cmd = self.command(&marker)?;
        cmd.stdout(Stdio::from(out_write)).stderr(Stdio::from(err_write));
        let spawned = cmd.spawn();
        // The command object holds the pipes' write ends: drop it now, or
        // the readers would never see the end of the streams.
        drop(cmd);
        let mut child = spawned.map_err(|source| ProcessError::Spawn {
            program: self.program(),
            source,
        })?;
        let pid = tree::io_pid(child.id()).map_err(|source| ProcessError::Spawn {
            program: self.program(),
            source,
        })?;
        let tree = self.tree(pid, marker);
        let guard = KillOnDrop(Some(tree.clone()));

        let stop = CancellationToken::new();
        let readers = [
            (out_read, OutputStream::Stdout, self.stdout_limit),
            (err_read, OutputStream::Stderr, self.stderr_limit),
        ]
        .map(|(fd, stream, limit)| {
            tokio::spawn(capture::read_stream(
                fd,
                stream,
                limit,
                self.on_output.clone(),
                stop.clone(),
            ))
        });

        let timeout = async {
            match self.timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let cancel = self.cancel.clone().unwrap_or_default();
        enum Ending {
            Exited(std::io::Result<std::process::ExitStatus>),
            TimedOut,
            Cancelled,
        }
        let ending = tokio::select! {
            status = child.wait() => Ending::Exited(status),
            () = timeout => Ending::TimedOut,
            () = cancel.cancelled() => Ending::Cancelled,
        };
        let (timed_out, cancelled) = (matches!(ending, Ending::TimedOut), matches!(ending, Ending::Cancelled));
        let mut leftovers_killed = 0;
        let status = match ending {
            Ending::Exited(status) => {
                leftovers_killed = tree.kill_leftovers(self.grace).await;
                status
            }
            Ending::TimedOut | Ending::Cancelled => terminate(&tree, &mut child, self.grace).await,
        }
        .map_err(ProcessError::Wait)?;
        guard.disarm();
        tree.reap_stragglers_later();

        let reader_deadline = tokio::time::sleep(READER_DEADLINE);
        tokio::pin!(reader_deadline);
        let mut results = Vec::with_capacity(2);
        for handle in readers {
            tokio::pin!(handle);
            let joined = tokio::select! {
                r = &mut handle => r,
                () = &mut reader_deadline => {
                    stop.cancel();
                    handle.await
                }
            };
            results.push(match joined {
                Ok(Ok(captured)) => captured,
                Ok(Err(e)) => return Err(ProcessError::Read(e)),
                Err(e) => return Err(ProcessError::Read(std::io::Error::other(e))),
            });
        }
        let stderr = results.pop().unwrap_or_default();
        let stdout = results.pop().unwrap_or_default();
        Ok(RunOutput {
            exit: Exit::from_status(status),
            timed_out,
            cancelled,
            stdout,
            stderr,
            duration: started.elapsed(),
            leftovers_killed,
        })
    }
}

/// SIGTERM the tree, wait up to `grace` for the leader and every
/// descendant to go, then SIGKILL whatever is left.
pub(crate) async fn terminate(
    tree: &ProcessTree,
    child: &mut tokio::process::Child,
    grace: Duration,
) -> std::io::Result<std::process::ExitStatus> {
    tree.signal(Signal::TERM);
    // A stopped process only acts on SIGTERM once continued.
    tree.signal(Signal::CONT);
    let deadline = tokio::time::Instant::now() + grace;
    let mut status = None;
    loop {
        if status.is_none() {
            status = child.try_wait()?;
        }
        if status.is_some() && !tree.alive(true) {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if status.is_none() {
        status = Some(kill_and_wait(tree, child).await?);
    }
    tree.kill_all(true).await;
    status.ok_or_else(|| std::io::Error::other("no exit status"))
}

/// SIGKILL the tree until its leader has exited (a leader that reaps its
/// tree is spared while the rest lives: see [`ProcessTree::leader_reaps`]).
pub(crate) async fn kill_and_wait(
    tree: &ProcessTree,
    child: &mut tokio::process::Child,
) -> std::io::Result<std::process::ExitStatus> {
    loop {
        tree.signal(Signal::KILL);
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        tokio::time::sleep(KILL_ROUND).await;
    }
}

/// Kills the tree if a run is abandoned midway (its future dropped).
struct KillOnDrop(Option<ProcessTree>);

impl KillOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(tree) = self.0.take() {
            tree.kill_now();
            tree.reap_abandoned_later();
        }
    }
}

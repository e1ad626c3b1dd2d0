//! The process of a local (stdio) server: starting it in its own process
//! group, noticing when it exits, and stopping it.
//!
//! A server's exit is noticed by waiting on the process itself, not only by
//! its stdout closing: a server that crashes while something it started
//! still holds the pipe (a shell wrapper's helper, a child it spawned) would
//! otherwise look alive until every call timed out. When the leader exits,
//! what is left of its group is killed and [`Health::exited`] fires, so
//! pending calls fail at once and the next use starts the server again.
//!
//! Stopping follows the MCP lifecycle for stdio: close the server's stdin,
//! give it a moment to exit, then SIGTERM its group, then SIGKILL. A server
//! that exits on end of input costs only the time it takes to do so.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use wield_sandbox::process::{MARKER_VAR, ProcessTree, ensure_subreaper, new_marker};

use super::stderr::StderrTail;
use crate::compat::client::Long;

/// How long a server gets to exit after its stdin is closed, and again
/// after SIGTERM, before the next step. Together they bound how long wield
/// waits for a server on its way out.
pub(crate) const EXIT_GRACE: Duration = Duration::from_millis(500);

/// How long a server whose output closed has to be seen exiting, so that
/// its exit status and stderr, rather than the closed pipe, explain the
/// failure. Waiting ends as soon as the exit is seen; the bound matters
/// only on a loaded machine (or for a server that closes its output and
/// lives on).
pub const EXIT_AFTER_CLOSE: Duration = Duration::from_secs(1);

/// The most wield reads as one message from a server; a longer reply
/// fails the call it answers ([`Health::oversized_reply`]).
pub(crate) use crate::compat::client::MAX_MESSAGE;

/// The most of a server's output kept while its tools are listed
/// ([`Health::capture`]); past it, the rest of the listing is not kept.
const MAX_CAPTURE: usize = 64 * 1024 * 1024;

/// What wield knows about a server besides its messages: whether its
/// process exited (and how), whether it sent a message too large to read,
/// and the end of its stderr. Servers reached over HTTP have no process:
/// their health never changes.
#[derive(Default)]
pub struct Health {
    exited: CancellationToken,
    status: OnceLock<String>,
    oversized: Notify,
    /// The ids of the replies too large to be read, in order (`None`: a
    /// reply whose id was not at its start).
    oversized_replies: Mutex<Vec<Option<String>>>,
    pub stderr: StderrTail,
    /// Whether [`Health::capture`] keeps what the server writes.
    capturing: AtomicBool,
    captured: Mutex<Vec<u8>>,
}

impl Health {
    /// Resolves when the server's process has exited.
    pub async fn exited(&self) {
        self.exited.cancelled().await;
    }

    pub fn has_exited(&self) -> bool {
        self.exited.is_cancelled()
    }

    /// How the process ended ("exit status: 3", "signal: 9 (SIGKILL)").
    pub fn status(&self) -> Option<&str> {
        self.status.get().map(String::as_str)
    }

    /// Resolves once the process has exited and what it wrote to stderr
    /// has been read, or a moment after its exit if something it started
    /// keeps stderr open: [`Health::exit_reason`] then says all it can.
    /// What it left behind is killed right after its exit, so stderr
    /// closes then; the bound is for a loaded machine and for what escaped.
    pub async fn settled(&self) {
        self.exited().await;
        let _ = tokio::time::timeout(EXIT_AFTER_CLOSE, self.stderr.closed()).await;
    }

    /// `exited (exit status: 3)` and what its stderr ended with.
    pub fn exit_reason(&self) -> String {
        let status = self.status().map(|s| format!(" ({s})")).unwrap_or_default();
        format!("exited{status}{}", self.stderr.suffix())
    }

    /// How many replies too large to be read the server has sent so far;
    /// taken before a request, for [`Health::oversized_reply`].
    pub fn oversized_count(&self) -> usize {
        self.oversized_replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Resolves when a reply too large to be read arrives for the request
    /// whose id is put in `id` once it is sent, or one whose id cannot be
    /// told, counting from the `since`-th ([`Health::oversized_count`]).
    /// Another request's reply leaves it waiting.
    pub async fn oversized_reply(&self, id: &OnceLock<String>, since: usize) {
        loop {
            let notified = self.oversized.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let mine = self
                .oversized_replies
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .skip(since)
                .any(|reply| reply.as_ref().is_none_or(|r| id.get() == Some(r)));
            if mine {
                return;
            }
            notified.await;
        }
    }

    /// Keep what a local server writes from now until the returned guard
    /// is taken ([`Capture::take`]): the SDK's types drop the parts of a
    /// message it does not model (a tool's `execution`), which the raw
    /// text still has. At most [`MAX_CAPTURE`] bytes; a server reached over
    /// HTTP has no output to keep. One capture at a time: a second one
    /// started while the first runs keeps nothing.
    pub fn capture(&self) -> Capture<'_> {
        let own = !self.capturing.swap(true, Ordering::SeqCst);
        Capture { health: self, own }
    }

    fn keep(&self, bytes: &[u8]) {
        if self.capturing.load(Ordering::Relaxed) {
            let mut kept = self.captured.lock().unwrap_or_else(PoisonError::into_inner);
            let room = MAX_CAPTURE.saturating_sub(kept.len());
            kept.extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
    }

    /// The server sent a line longer than [`MAX_MESSAGE`], which is
    /// dropped: a reply wakes the call it answers.
    pub(crate) fn note_long(&self, long: Long) {
        match long {
            Long::Reply(id) => {
                self.oversized_replies
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(id);
                self.oversized.notify_waiters();
            }
            Long::Message => {
                tracing::warn!("an MCP server sent a request or notification of more than 16 MiB; it was dropped");
            }
        }
    }

    fn set_exited(&self, status: &io::Result<ExitStatus>) {
        let text = match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("cannot tell how: {e}"),
        };
        let _ = self.status.set(text);
        self.exited.cancel();
    }
}

/// What a local server wrote while its tools were listed.
pub struct Capture<'a> {
    health: &'a Health,
    own: bool,
}

impl Capture<'_> {
    /// Stop keeping the server's output, and have what was kept.
    pub fn take(self) -> Vec<u8> {
        if !self.own {
            return Vec::new();
        }
        std::mem::take(&mut *self.health.captured.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for Capture<'_> {
    fn drop(&mut self) {
        if self.own {
            self.health.capturing.store(false, Ordering::SeqCst);
            self.health
                .captured
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
    }
}

/// The process group of a local server: the server and whatever it starts
/// (`npx`, `uvx` and shell wrappers start the real server as a child). It
/// is signalled while its leader is unreaped or right after reaping it,
/// while the rest of the group still holds the id: a group's id is not
/// reused while any member lives.
struct Group {
    pgid: Option<Pid>,
    /// The group and what left it: a process the server started that made
    /// a session of its own (`setsid`) still carries the server's marker,
    /// and wield, a subreaper, is its parent once the server is gone.
    tree: Option<ProcessTree>,
    killed: Mutex<bool>,
    /// Every group of the servers of one [`super::McpClients`].
    groups: Arc<ProcessGroups>,
}

/// The process groups of the local servers of one [`super::McpClients`],
/// started and not killed yet, and whether wield is told to stop.
#[derive(Default)]
pub(crate) struct ProcessGroups {
    /// Each group's id and its tree, for [`ProcessGroups::stop_stragglers`].
    live: Mutex<Vec<(Pid, Option<ProcessTree>)>>,
    /// Set once wield is told to stop (Ctrl-C, SIGTERM, SIGHUP): servers
    /// are stopped with SIGTERM at once rather than first given time to
    /// exit on the end of their input.
    hurry: AtomicBool,
}

impl ProcessGroups {
    /// wield is on its way out at a signal: stop servers without the grace
    /// they get for the end of their input.
    pub(crate) fn hurry(&self) {
        self.hurry.store(true, Ordering::SeqCst);
    }

    /// How long a server has to exit after its stdin closes.
    pub(super) fn input_grace(&self) -> Duration {
        if self.hurry.load(Ordering::SeqCst) {
            Duration::ZERO
        } else {
            EXIT_GRACE
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Pid, Option<ProcessTree>)>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// For the very end of the process, after the async runtime is gone:
    /// the servers whose stop never ran or never finished (wield was
    /// interrupted while they were starting, and the runtime dropped what
    /// held them) get SIGTERM, up to `grace` to exit, then SIGKILL, each
    /// group whole.
    pub(crate) fn stop_stragglers(&self, grace: Duration) {
        let groups = std::mem::take(&mut *self.lock());
        if groups.is_empty() {
            return;
        }
        for (pgid, _) in &groups {
            let _ = rustix::process::kill_process_group(*pgid, Signal::TERM);
        }
        let deadline = Instant::now() + grace;
        // A leader that exited stays a zombie, and its group seems alive,
        // until it is reaped: nothing else is left to reap it.
        let gone = |pgid: Pid| {
            while let Ok(Some(_)) =
                rustix::process::waitid(WaitId::Pgid(Some(pgid)), WaitIdOptions::EXITED | WaitIdOptions::NOHANG)
            {
            }
            rustix::process::test_kill_process_group(pgid).is_err()
        };
        while Instant::now() < deadline && !groups.iter().all(|(p, _)| gone(*p)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for (pgid, tree) in &groups {
            let _ = rustix::process::kill_process_group(*pgid, Signal::KILL);
            if let Some(tree) = tree {
                tree.kill_now();
            }
        }
    }
}

impl Group {
    fn new(pgid: Option<Pid>, marker: String, groups: Arc<ProcessGroups>) -> Self {
        let tree = pgid
            .and_then(|p| u32::try_from(p.as_raw_pid()).ok())
            .map(|leader| ProcessTree::new(leader, marker));
        if let Some(pgid) = pgid {
            groups.lock().push((pgid, tree.clone()));
        }
        Self {
            pgid,
            tree,
            killed: Mutex::new(false),
            groups,
        }
    }

    fn signal(&self, signal: Signal) {
        let killed = self.killed.lock().unwrap_or_else(PoisonError::into_inner);
        if let (false, Some(pgid)) = (*killed, self.pgid) {
            let _ = rustix::process::kill_process_group(pgid, signal);
        }
    }

    fn kill(&self) {
        let mut killed = self.killed.lock().unwrap_or_else(PoisonError::into_inner);
        if let (false, Some(pgid)) = (*killed, self.pgid) {
            let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
            if let Some(tree) = &self.tree {
                tree.kill_now();
            }
            self.groups.lock().retain(|(p, _)| *p != pgid);
        }
        *killed = true;
    }
}

/// A running local server. Dropping it stops the server ([`stop_all`]);
/// [`ServerProcess::stop`] does the same without blocking a thread.
pub struct ServerProcess {
    pid: Option<Pid>,
    /// Lets a blocking stop see the exit even when the runtime cannot run
    /// the task that waits on the process (it is shutting down, or it is
    /// the thread doing the stop). `None` where pidfds are not available.
    pidfd: Option<OwnedFd>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    group: Arc<Group>,
    health: Arc<Health>,
    stopped: AtomicBool,
}

/// A started server: its process, and the two ends of its stdio to speak
/// MCP over.
pub struct Spawned {
    pub process: ServerProcess,
    pub output: WatchedOutput,
    pub input: ServerInput,
}

/// Start `command` in a new process group, its stderr read into
/// `health`, a task waiting for its exit.
pub fn spawn(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: &std::path::Path,
    health: Arc<Health>,
    groups: Arc<ProcessGroups>,
) -> Result<Spawned, String> {
    // What the server starts and leaves behind (a `setsid` child) is
    // re-parented to wield and known by the marker, so it goes too.
    ensure_subreaper();
    let marker = new_marker();
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(env)
        .env(MARKER_VAR, &marker)
        .current_dir(cwd)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Stopping is ours (stdin closed first); the runtime dropping the
        // waiting task at exit must not kill the server before that.
        .kill_on_drop(false);
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        // A command with a `/` is a path, relative to the server's `cwd`.
        io::ErrorKind::NotFound if command.contains('/') => format!(
            "cannot start `{command}`: no such file (a path in `command` is relative to the server's `cwd`, {})",
            cwd.display()
        ),
        io::ErrorKind::NotFound => format!("cannot start `{command}`: command not found (check `command` and PATH)"),
        _ => format!("cannot start `{command}`: {e}"),
    })?;
    let pid = child.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw);
    let pidfd = pid.and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    let group = Arc::new(Group::new(pid, marker, groups));
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        group.kill();
        return Err(format!("cannot start `{command}`: its stdio could not be set up"));
    };
    if let Some(stderr) = child.stderr.take() {
        StderrTail::read(Arc::clone(&health), stderr);
    }
    let stdin = Arc::new(Mutex::new(Some(stdin)));
    {
        let group = Arc::clone(&group);
        let health = Arc::clone(&health);
        tokio::spawn(async move {
            let status = child.wait().await;
            // The exit is known before what the server left behind is
            // killed: that closes its stdout (the last holder goes), and a
            // call failing on the closed pipe must find the exit already
            // told, however long the kill takes on a loaded machine.
            health.set_exited(&status);
            // Killing polls until the tree is gone: not on a runtime
            // thread. (Should the runtime be shutting down, the group is
            // still among its `ProcessGroups` for `stop_stragglers`.)
            let _ = tokio::task::spawn_blocking(move || group.kill()).await;
        });
    }
    Ok(Spawned {
        process: ServerProcess {
            pid,
            pidfd,
            stdin: Arc::clone(&stdin),
            group,
            health: Arc::clone(&health),
            stopped: AtomicBool::new(false),
        },
        output: WatchedOutput::new(stdout, health),
        input: ServerInput(stdin),
    })
}

impl ServerProcess {
    /// Whether the server's process has exited, asking the kernel when
    /// the waiting task has not said so yet.
    fn has_exited(&self) -> bool {
        if self.health.has_exited() {
            return true;
        }
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        let by_fd = self
            .pidfd
            .as_ref()
            .map(|fd| rustix::process::waitid(WaitId::PidFd(fd.as_fd()), options))
            // Kernels before 5.4 open pidfds but cannot wait on them.
            .filter(|r| !matches!(r, Err(Errno::INVAL)));
        let outcome = match (by_fd, self.pid) {
            (Some(r), _) => r,
            (None, Some(pid)) => rustix::process::waitid(WaitId::Pid(pid), options),
            (None, None) => return true,
        };
        // No such child: it was reaped, so it has exited.
        matches!(outcome, Ok(Some(_)) | Err(Errno::CHILD))
    }

    fn close_input(&self) {
        drop(self.stdin.lock().unwrap_or_else(PoisonError::into_inner).take());
    }

    /// Stop the server without blocking: close its stdin, wait for it to
    /// exit, SIGTERM its group, wait again, SIGKILL the group.
    pub async fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        self.close_input();
        if tokio::time::timeout(self.group.groups.input_grace(), self.health.exited())
            .await
            .is_err()
        {
            self.group.signal(Signal::TERM);
            let _ = tokio::time::timeout(EXIT_GRACE, self.health.exited()).await;
        }
        self.group.kill();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        stop_all(&[self]);
    }
}

/// Stop several servers at once, blocking (for `Drop`, the only hook there
/// is on the way out): every stdin is closed, then each server has the same
/// grace to exit before its group gets SIGTERM, and the same again before
/// SIGKILL. At most twice [`EXIT_GRACE`] in all, however many servers;
/// servers that exit on end of input cost only the time they take. A
/// server whose stop already began elsewhere (a task the runtime dropped
/// on its way out) is killed at once.
pub fn stop_all(processes: &[&ServerProcess]) {
    let pending: Vec<&ServerProcess> = processes
        .iter()
        .copied()
        .filter(|p| !p.stopped.swap(true, Ordering::SeqCst))
        .collect();
    for p in &pending {
        p.close_input();
    }
    // The servers of one `McpClients` share its groups, and so its hurry.
    let grace = pending
        .iter()
        .map(|p| p.group.groups.input_grace())
        .min()
        .unwrap_or(EXIT_GRACE);
    let mut alive = wait_blocking(pending.clone(), grace);
    if !alive.is_empty() {
        for p in &alive {
            p.group.signal(Signal::TERM);
        }
        alive = wait_blocking(alive, EXIT_GRACE);
        for p in &alive {
            tracing::debug!(
                "MCP server process {:?} ignored the end of its input and SIGTERM; killing it",
                p.pid.map(Pid::as_raw_pid)
            );
        }
    }
    for p in processes {
        p.group.kill();
    }
}

/// The processes of `waiting` still running after `limit`. Polled every
/// millisecond (one `waitid` each): an exit is seen within a millisecond,
/// for a few hundred system calls at most.
fn wait_blocking(mut waiting: Vec<&ServerProcess>, limit: Duration) -> Vec<&ServerProcess> {
    let deadline = Instant::now() + limit;
    loop {
        waiting.retain(|p| !p.has_exited());
        let left = deadline.saturating_duration_since(Instant::now());
        if waiting.is_empty() || left.is_zero() {
            return waiting;
        }
        std::thread::sleep(left.min(Duration::from_millis(1)));
    }
}

/// The server's stdin, shared with its [`ServerProcess`] so that stopping
/// the server closes it whoever else holds the transport.
pub struct ServerInput(Arc<Mutex<Option<ChildStdin>>>);

impl ServerInput {
    fn with<T>(&self, f: impl FnOnce(Pin<&mut ChildStdin>) -> Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        let mut stdin = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match stdin.as_mut() {
            Some(s) => f(Pin::new(s)),
            None => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the server's stdin is closed",
            ))),
        }
    }
}

impl AsyncWrite for ServerInput {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.with(|s| s.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with(|s| s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with(|s| s.poll_shutdown(cx))
    }
}

/// The server's stdout, kept while [`Health::capture`] asks.
pub struct WatchedOutput {
    inner: ChildStdout,
    health: Arc<Health>,
}

impl WatchedOutput {
    fn new(inner: ChildStdout, health: Arc<Health>) -> Self {
        Self { inner, health }
    }

    pub(crate) fn health(&self) -> Arc<Health> {
        Arc::clone(&self.health)
    }
}

impl AsyncRead for WatchedOutput {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            self.health.keep(&buf.filled()[before..]);
        }
        polled
    }
}

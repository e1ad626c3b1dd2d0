//! Background processes: `process_start`, `process_status`,
//! `process_output`, `process_kill`, `process_list`.
//!
//! They live in the session ([`Processes`] is a session extension): each
//! writes stdout and stderr to a log file in a per-session directory, and
//! dropping the session drops them, which kills every process tree.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use wield_core::{
    AUTO_APPROVE_IF_SANDBOXED, Context, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits, human_duration, one_line,
};
use wield_sandbox::process::{Background, Exit, RunGuard, Runner, StopSignal};

use super::git_watch::{Snapshot, report, snapshot};
use super::settings::ShellService;
use super::{Prepared, command_preview, prepare, service};

/// Lines of output `process_status` shows.
const STATUS_TAIL_LINES: usize = 20;
/// How long `process_start` watches for an immediate failure.
const START_WATCH: Duration = Duration::from_millis(200);

/// One background process of the session.
struct Entry {
    id: String,
    command: String,
    label: Option<String>,
    log: PathBuf,
    pid: u32,
    process: tokio::sync::Mutex<Background>,
    /// What the sandbox needs while the process may live (until the
    /// session drops its entry).
    _sandbox: RunGuard,
    /// The git repositories under the workspace as last reported (at the
    /// start, then at each status or kill), to tell what the process set
    /// there that git runs later.
    git_seen: tokio::sync::Mutex<Snapshot>,
}

impl Entry {
    /// What changed in the repositories under the workspace since the last
    /// look, and the snapshot of now.
    async fn git_changes(&self, svc: &ShellService) -> (Vec<String>, Snapshot) {
        let mut seen = self.git_seen.lock().await;
        let now = snapshot(svc).await;
        let changes = seen.changes(&now, svc.workspace());
        *seen = now.clone();
        (changes, now)
    }
}

/// The session's background processes. Dropping it kills them all.
#[derive(Default)]
pub struct Processes {
    next: AtomicU64,
    /// Starts under way (counted against `process.max_background` until
    /// their entry is in `entries`), and the lock that makes the check and
    /// the count one step, so parallel starts cannot all pass the check.
    starting: std::sync::atomic::AtomicUsize,
    start_check: tokio::sync::Mutex<()>,
    entries: Mutex<BTreeMap<u64, Arc<Entry>>>,
    dir: OnceLock<Result<tempfile::TempDir, String>>,
}

impl Processes {
    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn log_dir(&self) -> Result<&Path, String> {
        self.dir
            .get_or_init(|| {
                // The logs hold what commands printed: the owner's alone.
                tempfile::Builder::new()
                    .prefix("wield-processes-")
                    .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                    .tempdir()
                    .map_err(|e| format!("cannot create a directory for process logs: {e}"))
            })
            .as_ref()
            .map(tempfile::TempDir::path)
            .map_err(Clone::clone)
    }

    /// Kill every background process now (SIGKILL to each whole tree) and
    /// forget them all: for a front-end whose session has ended while the
    /// session itself may live on a little (its calls winding down), so
    /// that its processes do not wait for it to be dropped.
    pub async fn stop_all(&self) {
        let entries = std::mem::take(&mut *self.entries());
        for entry in entries.into_values() {
            let _ = entry.process.lock().await.stop(StopSignal::Kill, Duration::ZERO).await;
        }
    }

    /// The ids of the processes still running.
    async fn running(&self) -> Vec<String> {
        let entries: Vec<Arc<Entry>> = self.entries().values().cloned().collect();
        let mut ids = Vec::new();
        for e in entries {
            if e.process.lock().await.try_exit().is_none() {
                ids.push(e.id.clone());
            }
        }
        ids
    }

    fn get(&self, id: &str) -> Result<Arc<Entry>, ToolResult> {
        let n = id.trim().trim_start_matches('p').parse::<u64>().ok();
        n.and_then(|n| self.entries().get(&n).cloned()).ok_or_else(|| {
            let known: Vec<String> = self.entries().values().map(|e| e.id.clone()).collect();
            ToolResult::error(if known.is_empty() {
                format!("no background process `{id}`: none was started in this session (use process_start)")
            } else {
                format!("no background process `{id}`; this session has: {}", known.join(", "))
            })
        })
    }
}

/// One start under way, counted until dropped (its entry inserted, or the
/// start failed).
struct Starting<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Starting<'a> {
    fn new(count: &'a std::sync::atomic::AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Processes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processes")
            .field("count", &self.entries().len())
            .finish()
    }
}

fn processes(ctx: &Context) -> Arc<Processes> {
    ctx.session.extension(Processes::default)
}

fn id_of(input: &Value) -> String {
    input.get("id").and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn state_text(exit: Option<Exit>) -> String {
    match exit {
        None => "running".into(),
        Some(Exit::Code(c)) => format!("exited (exit code: {c})"),
        Some(sig @ Exit::Signal(_)) => format!("exited ({sig})"),
    }
}

fn describe(entry: &Entry) -> String {
    match &entry.label {
        Some(l) => format!("$ {} # {l}", entry.command),
        None => format!("$ {}", entry.command),
    }
}

fn spec(name: &str, title: &str, description: &str, properties: Value, required: &[&str]) -> ToolSpec {
    ToolSpec::new(
        name,
        description,
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        }),
    )
    .title(title)
    .strict(true)
}

fn runtime_traits(read_only: bool) -> ToolTraits {
    ToolTraits {
        read_only,
        sandboxable: !read_only,
        groups: vec!["runtime".into()],
        capabilities: if read_only {
            Vec::new()
        } else {
            vec![AUTO_APPROVE_IF_SANDBOXED.into()]
        },
        ..ToolTraits::default()
    }
}

macro_rules! tool_struct {
    ($name:ident) => {
        pub struct $name {
            base: ToolBase,
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }
    };
}

tool_struct!(ProcessStartTool);
tool_struct!(ProcessStatusTool);
tool_struct!(ProcessOutputTool);
tool_struct!(ProcessKillTool);
tool_struct!(ProcessListTool);

impl ProcessStartTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                spec(
                    "process_start",
                    "Start a background process",
                    "Start a long-running command (a server, a watcher, a slow build) in the background and return \
                 its id at once. Its stdout and stderr go to a log file; read them with process_output, check \
                 it with process_status, stop it with process_kill. It runs with the same sandbox and \
                 environment rules as bash and is killed, with everything it started, when the session ends.",
                    json!({
                        "command": {"type": "string", "description": "The command line, run with bash -c."},
                        "workdir": {"type": ["string", "null"], "description": "Directory to run in, relative to the workspace (default: the workspace)."},
                        "label": {"type": ["string", "null"], "description": "A few words saying what the process is for."}
                    }),
                    &["command", "workdir", "label"],
                ),
                runtime_traits(false),
            ),
        }
    }
}

#[async_trait]
impl Tool for ProcessStartTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        one_line(&command_preview("process_start", input), width)
    }

    fn approval_subject(&self, input: &Value) -> wield_core::approval::Subject {
        super::approval_subject(input)
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let Prepared {
            input,
            svc,
            workdir,
            argv,
            sandbox,
        } = match prepare("process_start", input, ctx) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let procs = processes(ctx);
        let max = svc.settings.max_background;
        let slot = {
            let _check = procs.start_check.lock().await;
            let running = procs.running().await;
            let starting = procs.starting.load(Ordering::Acquire);
            if running.len() + starting >= max {
                return ToolResult::error(format!(
                    "process_start refused: {} background process(es) are already running in this session, the \
                     most allowed (process.max_background = {max}). Stop one with process_kill (running: {}) or \
                     wait for one to exit (process_status), then start this one again.",
                    running.len() + starting,
                    running.join(", ")
                ))
                .with_meta("refused", true);
            }
            Starting::new(&procs.starting)
        };
        let n = procs.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("p{n}");
        let log = match procs.log_dir() {
            Ok(dir) => dir.join(format!("{id}.log")),
            Err(e) => return ToolResult::error(e),
        };
        let git_before = snapshot(&svc).await;
        let runner = Runner::new(argv)
            .scope_signals(svc.scope_signals())
            .leader_reaps(svc.leader_reaps());
        let mut bg = match runner.cwd(&workdir).env(svc.env()).spawn_background(&log) {
            Ok(b) => b,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        // A command that fails at once (a typo, a missing program) is
        // reported now rather than at the first status check.
        let early = tokio::time::timeout(START_WATCH, bg.wait())
            .await
            .ok()
            .and_then(Result::ok);
        let entry = Arc::new(Entry {
            id: id.clone(),
            command: input.command.clone(),
            label: input.label.clone(),
            log: log.clone(),
            pid: bg.pid(),
            process: tokio::sync::Mutex::new(bg),
            _sandbox: sandbox,
            git_seen: tokio::sync::Mutex::new(git_before),
        });
        procs.entries().insert(n, Arc::clone(&entry));
        drop(slot);
        let mut text = format!(
            "started {id} (pid {}): {}\nlog: {}\n",
            entry.pid,
            describe(&entry),
            log.display()
        );
        if let Some(exit) = early {
            text.push_str(&format!(
                "it already {}; output:\n{}",
                state_text(Some(exit)),
                tail_lines(&log, STATUS_TAIL_LINES).unwrap_or_default()
            ));
        }
        ToolResult::ok(text)
            .with_meta("id", id)
            .with_meta("pid", entry.pid)
            .with_meta("log", log.display().to_string())
            .with_meta("running", early.is_none())
    }
}

impl ProcessStatusTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                spec(
                    "process_status",
                    "Background process status",
                    "Whether a background process is running or has exited (with its exit code), how long it has \
                 run, and the last lines of its output.",
                    json!({"id": {"type": "string", "description": "The id process_start returned, e.g. p1."}}),
                    &["id"],
                ),
                runtime_traits(true),
            ),
        }
    }
}

#[async_trait]
impl Tool for ProcessStatusTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let entry = match processes(ctx).get(&id_of(&input)) {
            Ok(e) => e,
            Err(e) => return e,
        };
        let (exit, runtime) = {
            let mut p = entry.process.lock().await;
            (p.try_exit(), p.runtime())
        };
        let tail = tail_lines(&entry.log, STATUS_TAIL_LINES).unwrap_or_default();
        let text = format!(
            "{}: {} after {} (pid {})\n{}\nlog: {}\nlast {} lines of output:\n{}",
            entry.id,
            state_text(exit),
            human_duration(runtime),
            entry.pid,
            describe(&entry),
            entry.log.display(),
            STATUS_TAIL_LINES,
            if tail.is_empty() {
                "(no output yet)\n".into()
            } else {
                tail
            }
        );
        let (code, signal) = match exit {
            Some(Exit::Code(c)) => (Some(c), None),
            Some(Exit::Signal(s)) => (None, Some(s)),
            None => (None, None),
        };
        let result = ToolResult::ok(text)
            .with_meta("running", exit.is_none())
            .with_meta("exit_code", code)
            .with_meta("signal", signal)
            .with_meta("runtime_ms", u64::try_from(runtime.as_millis()).unwrap_or(u64::MAX))
            .with_meta("pid", entry.pid);
        let (changes, now) = entry.git_changes(&service(ctx)).await;
        report(result, &changes, &now, ctx)
    }
}

impl ProcessOutputTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                spec(
                    "process_output",
                    "Read a background process's output",
                    "Read a background process's output log by lines: offset is the first line (1-based, default \
                 1), limit the number of lines (default 200). The result says which offset reads on.",
                    json!({
                        "id": {"type": "string", "description": "The id process_start returned, e.g. p1."},
                        "offset": {"type": ["integer", "null"], "minimum": 1, "description": "First line to read, 1-based."},
                        "limit": {"type": ["integer", "null"], "minimum": 1, "description": "Most lines to read (default 200)."}
                    }),
                    &["id", "offset", "limit"],
                ),
                runtime_traits(true),
            ),
        }
    }
}

#[async_trait]
impl Tool for ProcessOutputTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let entry = match processes(ctx).get(&id_of(&input)) {
            Ok(e) => e,
            Err(e) => return e,
        };
        let offset = input.get("offset").and_then(Value::as_u64).unwrap_or(1).max(1);
        let limit = input.get("limit").and_then(Value::as_u64).unwrap_or(200).max(1);
        let running = entry.process.lock().await.try_exit().is_none();
        let log = entry.log.clone();
        let max_bytes = ctx.limits.max_bytes;
        let read = tokio::task::spawn_blocking(move || read_lines(&log, offset, limit, max_bytes)).await;
        let page = match read {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => return ToolResult::error(format!("cannot read the log {}: {e}", entry.log.display())),
            Err(e) => return ToolResult::error(format!("cannot read the log: {e}")),
        };
        let mut text = page.text;
        let last = offset + page.lines - 1;
        let notice = if page.lines == 0 {
            format!("[no lines from {offset}: the log has {} lines]", page.total)
        } else if last < page.total {
            format!(
                "[lines {offset}-{last} of {}; call again with offset {} for more]",
                page.total,
                last + 1
            )
        } else if running {
            format!(
                "[lines {offset}-{last} of {}; the process is still running]",
                page.total
            )
        } else {
            format!("[lines {offset}-{last} of {}; end of output]", page.total)
        };
        text.push_str(&notice);
        ToolResult::ok(text)
            .with_meta("total_lines", page.total)
            .with_meta("running", running)
            .with_meta("truncated", false)
    }
}

impl ProcessKillTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                spec(
                    "process_kill",
                    "Stop a background process",
                    "Stop a background process and everything it started. TERM (default) asks it to stop and kills \
                 it a second later if it has not; KILL kills at once.",
                    json!({
                        "id": {"type": "string", "description": "The id process_start returned, e.g. p1."},
                        "signal": {"type": ["string", "null"], "enum": ["TERM", "KILL", null], "description": "TERM (default) or KILL."}
                    }),
                    &["id", "signal"],
                ),
                runtime_traits(false),
            ),
        }
    }
}

#[async_trait]
impl Tool for ProcessKillTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let entry = match processes(ctx).get(&id_of(&input)) {
            Ok(e) => e,
            Err(e) => return e,
        };
        let signal = match input.get("signal").and_then(Value::as_str) {
            None | Some("TERM") => StopSignal::Term,
            Some("KILL") => StopSignal::Kill,
            Some(other) => return ToolResult::error(format!("unknown signal `{other}`: use \"TERM\" or \"KILL\"")),
        };
        let grace = service(ctx).settings.grace;
        let mut p = entry.process.lock().await;
        let already = p.try_exit();
        let exit = match p.stop(signal, grace).await {
            Ok(e) => e,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        let text = match already {
            Some(_) => format!(
                "{} had already {}; anything it left running was stopped",
                entry.id,
                state_text(Some(exit))
            ),
            None => format!("{} stopped: {exit} after {}", entry.id, human_duration(p.runtime())),
        };
        drop(p);
        let (changes, now) = entry.git_changes(&service(ctx)).await;
        report(ToolResult::ok(text).with_meta("pid", entry.pid), &changes, &now, ctx)
    }
}

impl ProcessListTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                spec(
                    "process_list",
                    "List background processes",
                    "The background processes of this session: id, state, runtime and command.",
                    json!({}),
                    &[],
                ),
                runtime_traits(true),
            ),
        }
    }
}

#[async_trait]
impl Tool for ProcessListTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, _input: Value, ctx: &Context) -> ToolResult {
        let entries: Vec<Arc<Entry>> = processes(ctx).entries().values().cloned().collect();
        if entries.is_empty() {
            return ToolResult::ok("no background processes in this session\n").with_meta("count", 0);
        }
        let mut text = String::new();
        for e in &entries {
            let (exit, runtime) = {
                let mut p = e.process.lock().await;
                (p.try_exit(), p.runtime())
            };
            text.push_str(&format!(
                "{}  {}  {}  pid {}  {}\n",
                e.id,
                state_text(exit),
                human_duration(runtime),
                e.pid,
                describe(e)
            ));
        }
        ToolResult::ok(text).with_meta("count", entries.len())
    }
}

/// The last `n` lines of a file (reads at most its last 256 KiB).
fn tail_lines(path: &Path, n: usize) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(256 * 1024);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let keep = &lines[lines.len().saturating_sub(n)..];
    let mut out = keep.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

struct Page {
    text: String,
    lines: u64,
    total: u64,
}

/// Lines `offset..offset+limit` (1-based) within `max_bytes`, and the
/// number of lines in the file.
fn read_lines(path: &Path, offset: u64, limit: u64, max_bytes: usize) -> std::io::Result<Page> {
    let mut reader = BufReader::new(std::fs::File::open(path)?);
    let mut buf = Vec::new();
    let mut page = Page {
        text: String::new(),
        lines: 0,
        total: 0,
    };
    let mut full = false;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        page.total += 1;
        if page.total < offset || full {
            continue;
        }
        let mut line = String::from_utf8_lossy(&buf).into_owned();
        if line.len() > max_bytes {
            let mut end = max_bytes;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
            line.push_str(" [... line cut ...]\n");
        }
        if page.lines >= limit || (page.lines > 0 && page.text.len() + line.len() > max_bytes) {
            full = true;
            continue;
        }
        page.text.push_str(&line);
        if !page.text.ends_with('\n') {
            page.text.push('\n');
        }
        page.lines += 1;
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the logs' directory was readable by every user.
    #[test]
    fn the_logs_are_their_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let processes = Processes::default();
        let dir = processes.log_dir().unwrap();
        let mode = std::fs::metadata(dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }
}

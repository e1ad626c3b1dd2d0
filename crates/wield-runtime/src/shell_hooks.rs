//! User hooks from config: shell commands run before or after tool calls.
//!
//! ```toml
//! [hooks.fmt]
//! event = "post"            # "pre" or "post"
//! matcher = "write|edit"    # regex on the tool name (whole name, any case); default: every tool
//! files = "*.rs"            # glob on the call's paths (file name unless it has a `/`); default: any call
//! command = "rustfmt --edition 2024 \"$WIELD_FILE\""
//! timeout = "10s"
//! ```
//!
//! The command runs under `sh -c` in the workspace, in its own process group
//! (killed whole on timeout), with JSON on stdin: `hook_event`, `tool: {name,
//! input, output?, success?, error?}`, `cwd`, `file_paths`. Exit 0 may print
//! JSON `{message?, deny?, reason?, input?}` (a pre hook may rewrite `input`;
//! the executor validates it again; other stdout is passed on as a message);
//! exit 2 blocks a pre hook with stderr as the reason; any other exit passes
//! stderr back to the model as feedback. A hook that times out is reported
//! and the call goes on. Hooks run in name order.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use wield_core::hooks::{Hook, HookCall, PreHookOutcome};
use wield_core::{Config, ToolResult, human_duration};

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes kept from each of stdout and stderr; the rest is read and dropped.
const OUTPUT_CAP: usize = 256 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Pre,
    Post,
}

impl Event {
    fn as_str(self) -> &'static str {
        match self {
            Self::Pre => "pre",
            Self::Post => "post",
        }
    }
}

pub struct ShellHook {
    name: String,
    event: Event,
    matcher: Option<regex::Regex>,
    files: Option<(globset::GlobMatcher, bool)>,
    command: String,
    timeout: Duration,
}

/// The hooks of a configuration, in name order. Errors name the key.
pub fn from_config(config: &Config) -> Result<Vec<Arc<dyn Hook>>, crate::Error> {
    let table = config.table_at("hooks");
    let mut names: Vec<&String> = table.keys().collect();
    names.sort();
    let mut hooks: Vec<Arc<dyn Hook>> = Vec::new();
    for name in names {
        let Some(t) = table.get(name).and_then(toml::Value::as_table) else {
            return Err(crate::Error::usage(format!(
                "`hooks.{name}` must be a table with `event` and `command`"
            )));
        };
        hooks.push(Arc::new(ShellHook::parse(name, t).map_err(crate::Error::Usage)?));
    }
    Ok(hooks)
}

/// The scripts the configured hooks run that lie in the workspace (a word
/// of a hook's command, unquoted, naming an existing file of the workspace:
/// `hooks/check.py`, `./fmt.sh`, `check.sh`), guarded from tools and commands for as long as the runtime
/// lives: a hook runs outside the sandbox, so a call that rewrote its
/// script would run what it liked with the next call's hook. A word that is
/// not a workspace file (a program found on `PATH`, an option, a variable)
/// is left alone.
///
/// A script reached through a symbolic link is refused: a sandbox keeps
/// what a link leads to read-only, not the link, so a command could point
/// it elsewhere.
pub(crate) fn script_files(config: &Config, workspace: &Path) -> Result<Vec<wield_sandbox::fs::Guarded>, String> {
    let Ok(ws) = std::fs::canonicalize(workspace) else {
        return Ok(Vec::new());
    };
    let table = config.table_at("hooks");
    let mut out = Vec::new();
    for (name, hook) in &table {
        let Some(command) = hook.get("command").and_then(toml::Value::as_str) else {
            continue;
        };
        for word in command.split_whitespace() {
            let word = word.trim_matches(|c| matches!(c, '"' | '\'' | ';' | '&' | '|' | '(' | ')'));
            if word.is_empty() || word.starts_with('-') || word.contains('$') {
                continue;
            }
            let path = ws.join(word);
            if let Ok(real) = std::fs::canonicalize(&path)
                && real.starts_with(&ws)
                && real.is_file()
            {
                if let Some(link) = crate::links::linked(&path, &ws) {
                    return Err(format!(
                        "hooks.{name} runs {word}, and {} is a symbolic link: a command could point it elsewhere and \
                         have the hook run what it likes outside the sandbox; name the script itself",
                        link.display()
                    ));
                }
                out.push(wield_sandbox::fs::Guarded::new(
                    real,
                    format!("a script the hook hooks.{name} runs outside the sandbox"),
                ));
            }
        }
    }
    Ok(out)
}

impl ShellHook {
    fn parse(name: &str, t: &toml::Table) -> Result<Self, String> {
        let key = |k: &str| format!("hooks.{name}.{k}");
        let string = |k: &str| -> Result<Option<String>, String> {
            match t.get(k) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(format!("`{}` must be a string, got {}", key(k), v.type_str())),
            }
        };
        let event = match string("event")?.as_deref() {
            Some("pre") => Event::Pre,
            Some("post") => Event::Post,
            Some(other) => return Err(format!("`{}` must be \"pre\" or \"post\", got {other:?}", key("event"))),
            None => return Err(format!("`{}` is missing: set it to \"pre\" or \"post\"", key("event"))),
        };
        let command = string("command")?
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| format!("`{}` is missing or empty", key("command")))?;
        let matcher = match string("matcher")? {
            None => None,
            Some(m) => Some(
                regex::Regex::new(&format!("(?i)^(?:{m})$"))
                    .map_err(|e| format!("`{}` is not a valid regex: {e}", key("matcher")))?,
            ),
        };
        let files = match string("files")? {
            None => None,
            Some(f) => {
                let glob = globset::GlobBuilder::new(f.trim_start_matches("./"))
                    .literal_separator(true)
                    .build()
                    .map_err(|e| format!("`{}` is not a valid glob: {e}", key("files")))?;
                Some((glob.compile_matcher(), f.contains('/')))
            }
        };
        let timeout = match t.get("timeout") {
            None => DEFAULT_TIMEOUT,
            Some(toml::Value::Integer(n)) if *n > 0 => Duration::from_secs(n.unsigned_abs()),
            Some(toml::Value::String(s)) => wield_core::config::parse_duration(s)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    format!(
                        "`{}` must be a duration like \"10s\" or \"2m\", got {s:?}",
                        key("timeout")
                    )
                })?,
            Some(v) => return Err(format!("`{}` must be a duration like \"10s\", got {v}", key("timeout"))),
        };
        Ok(Self {
            name: name.to_owned(),
            event,
            matcher,
            files,
            command,
            timeout,
        })
    }

    fn applies(&self, call: &HookCall<'_>) -> bool {
        if self.matcher.as_ref().is_some_and(|m| !m.is_match(call.tool)) {
            return false;
        }
        match &self.files {
            None => true,
            Some((glob, whole_path)) => call.file_paths.iter().any(|p| {
                let path = Path::new(p);
                if *whole_path {
                    let rel = path.strip_prefix(call.cwd).unwrap_or(path);
                    glob.is_match(rel.strip_prefix("./").unwrap_or(rel))
                } else {
                    path.file_name().is_some_and(|f| glob.is_match(f))
                }
            }),
        }
    }

    fn payload(&self, call: &HookCall<'_>, result: Option<&ToolResult>) -> Value {
        let mut tool = json!({"name": call.tool, "input": call.input});
        if let Some(r) = result {
            tool["output"] = json!(r.output);
            tool["success"] = json!(r.success);
            tool["error"] = json!(r.error);
        }
        json!({
            "hook_event": self.event.as_str(),
            "hook_name": self.name,
            "tool": tool,
            "cwd": call.cwd,
            "file_paths": call.file_paths,
        })
    }

    async fn run(&self, call: &HookCall<'_>, payload: &Value) -> Run {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg(&self.command)
            .current_dir(call.cwd)
            .env("WIELD_HOOK_NAME", &self.name)
            .env("WIELD_HOOK_EVENT", self.event.as_str())
            .env("WIELD_TOOL_NAME", call.tool)
            .env("WIELD_FILE", call.file_paths.first().map(String::as_str).unwrap_or(""))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return Run::Failed(format!("cannot start `sh`: {e}")),
        };
        let pid = child.id();
        let input = payload.to_string().into_bytes();
        let stdin = child.stdin.take();
        let feed = async move {
            if let Some(mut s) = stdin {
                // A hook that does not read its input closes the pipe early; that is fine.
                let _ = s.write_all(&input).await;
                let _ = s.shutdown().await;
            }
        };
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            return Run::Failed("the hook's output pipes are missing".into());
        };
        let work = async {
            let ((), stdout, stderr, status) = tokio::join!(feed, capped(out), capped(err), child.wait());
            (stdout, stderr, status)
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok((stdout, stderr, Ok(status))) => Run::Exited {
                code: status.code(),
                stdout,
                stderr,
            },
            Ok((_, _, Err(e))) => Run::Failed(format!("waiting for the hook failed: {e}")),
            Err(_) => {
                kill_group(pid);
                Run::TimedOut
            }
        }
    }

    fn tag(&self) -> String {
        format!("[hook {}]", self.name)
    }
}

fn kill_group(pid: Option<u32>) {
    let Some(pid) = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    // The child leads its own group (process_group(0)), so this reaches
    // everything it started that did not leave the group.
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

async fn capped(mut r: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).trim().to_owned()
}

enum Run {
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    TimedOut,
    Failed(String),
}

/// What the hook's answer means, for either event.
#[derive(Default)]
struct Answer {
    block: Option<String>,
    input: Option<Value>,
    feedback: Vec<String>,
}

impl ShellHook {
    fn interpret(&self, run: Run) -> Answer {
        let mut a = Answer::default();
        match run {
            Run::TimedOut => {
                let msg = format!(
                    "hook `{}` timed out after {} and was stopped; the call was not affected",
                    self.name,
                    human_duration(self.timeout)
                );
                tracing::warn!("{msg}");
                a.feedback.push(msg);
            }
            Run::Failed(e) => {
                tracing::warn!("hook `{}`: {e}", self.name);
                a.feedback.push(format!("hook `{}` could not run: {e}", self.name));
            }
            Run::Exited {
                code: Some(0), stdout, ..
            } => {
                if stdout.is_empty() {
                    return a;
                }
                match serde_json::from_str::<Value>(&stdout) {
                    Ok(Value::Object(o)) => {
                        let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
                        if let Some(m) = text("message") {
                            a.feedback.push(m);
                        }
                        if o.get("deny").and_then(Value::as_bool) == Some(true) {
                            a.block = Some(
                                text("reason")
                                    .or_else(|| text("message"))
                                    .unwrap_or_else(|| "denied by the hook".into()),
                            );
                        }
                        a.input = o.get("input").cloned();
                    }
                    _ => a.feedback.push(stdout),
                }
            }
            Run::Exited {
                code: Some(2), stderr, ..
            } if self.event == Event::Pre => {
                a.block = Some(if stderr.is_empty() {
                    format!("hook `{}` exited with status 2", self.name)
                } else {
                    stderr
                });
            }
            Run::Exited { code, stderr, .. } => {
                let status = code.map_or_else(
                    || "was killed by a signal".into(),
                    |c| format!("exited with status {c}"),
                );
                a.feedback.push(if stderr.is_empty() {
                    format!("hook `{}` {status}", self.name)
                } else {
                    format!("hook `{}` {status}: {stderr}", self.name)
                });
            }
        }
        a
    }
}

#[async_trait]
impl Hook for ShellHook {
    fn name(&self) -> &str {
        &self.name
    }

    async fn pre(&self, call: &HookCall<'_>) -> PreHookOutcome {
        if self.event != Event::Pre || !self.applies(call) {
            return PreHookOutcome::default();
        }
        let run = self.run(call, &self.payload(call, None)).await;
        let a = self.interpret(run);
        PreHookOutcome {
            block: a.block,
            input: a.input,
            feedback: a.feedback.into_iter().map(|f| format!("{}: {f}", self.name)).collect(),
        }
    }

    async fn post(&self, call: &HookCall<'_>, result: &mut ToolResult) {
        if self.event != Event::Post || !self.applies(call) {
            return;
        }
        let run = self.run(call, &self.payload(call, Some(result))).await;
        let a = self.interpret(run);
        // After the fact a hook cannot stop the call: a denial becomes feedback.
        let lines = a.feedback.into_iter().chain(a.block.map(|b| format!("objection: {b}")));
        for line in lines {
            if !result.output.is_empty() && !result.output.ends_with('\n') {
                result.output.push('\n');
            }
            result.output.push_str(&format!("{} {line}", self.tag()));
        }
    }
}

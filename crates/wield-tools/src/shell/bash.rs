//! The `bash` tool.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use wield_core::{
    AUTO_APPROVE_IF_SANDBOXED, ConfigKey, Context, HANDLES_TIMEOUT, TIMEOUT_ARGUMENT, Tool, ToolBase, ToolResult,
    ToolSpec, ToolTraits, one_line,
};
use wield_sandbox::process::{CaptureLimit, Runner, denial_hints};

use super::git_watch::{report, snapshot};
use super::output::{Streamer, body, status_line};
use super::{Prepared, command_preview, prepare};

pub struct BashTool {
    base: ToolBase,
}

impl Default for BashTool {
    fn default() -> Self {
        Self::new()
    }
}

impl BashTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "bash",
                    "Run a shell command (bash -c) in the workspace and return its output: stdout, then stderr \
                     under [stderr], then `exit code: N` (or `timed out after 30s`). A non-zero exit is a failure \
                     with the output kept. Output longer than 200 lines is cut in the middle; the full output is \
                     saved to a file named in the result. Commands get no stdin, a scrubbed environment and, when \
                     the sandbox is on, may write only inside the workspace and $TMPDIR (private to the session) and cannot reach the \
                     network. Use process_start for servers and other long-running commands.",
                    json!({
                        "type": "object",
                        "properties": {
                            "command": {"type": "string", "description": "The command line, run with bash -c."},
                            "workdir": {"type": ["string", "null"], "description": "Directory to run in, relative to the workspace (default: the workspace)."},
                            "timeout": {"type": ["number", "null"], "description": "Seconds before the command and everything it started are killed (default 30)."},
                            "label": {"type": ["string", "null"], "description": "A few words saying what the command is for, shown to the person approving it."}
                        },
                        "required": ["command", "workdir", "timeout", "label"],
                        "additionalProperties": false
                    }),
                )
                .title("Run a shell command")
                .strict(true),
                ToolTraits {
                    // Commands can change the workspace: run them one at a time.
                    parallel: false,
                    sandboxable: true,
                    groups: vec!["runtime".into()],
                    capabilities: vec![
                        AUTO_APPROVE_IF_SANDBOXED.into(),
                        HANDLES_TIMEOUT.into(),
                        TIMEOUT_ARGUMENT.into(),
                    ],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for BashTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        one_line(&command_preview("bash", input), width)
    }

    fn approval_subject(&self, input: &Value) -> wield_core::approval::Subject {
        super::approval_subject(input)
    }

    fn config_keys(&self) -> Vec<ConfigKey> {
        super::settings::config_keys()
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        // `_sandbox` lives until the command's processes are gone.
        let Prepared {
            input,
            svc,
            workdir,
            argv,
            sandbox: _sandbox,
        } = match prepare("bash", input, ctx) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let settings = &svc.settings;
        if let Some(t) = input.timeout.filter(|t| t.is_nan() || *t <= 0.0) {
            return ToolResult::error(format!(
                "`timeout` must be a positive number of seconds, got {t}; leave it out for the default ({})",
                wield_core::human_duration(settings.timeout)
            ));
        }
        let timeout = settings.timeout_for(input.timeout);
        // Each stream keeps its first `max_output_bytes`; the rest is counted
        // and drained inside the kernel (spliced to /dev/null), so a command
        // printing gigabytes costs neither memory nor a copy.
        let cap = settings.max_output_bytes;
        let mut runner = Runner::new(argv)
            .scope_signals(svc.scope_signals())
            .leader_reaps(svc.leader_reaps())
            .cwd(&workdir)
            .env(svc.env())
            .timeout(Some(timeout))
            .grace(settings.grace)
            .cancel(ctx.cancel.clone())
            .capture(CaptureLimit::head(cap));
        let streamer = ctx.events.has_listeners().then(|| Arc::new(Streamer::new(ctx)));
        if let Some(s) = &streamer {
            runner = runner.on_output(s.callback());
        }
        // Nested repositories the command may create or change: what git
        // would run from them later is reported (see `git_watch`).
        let workspace = svc.workspace().to_path_buf();
        let watch = settings.git_watch;
        let git_before = snapshot(watch, workspace.clone()).await;
        let ticker = streamer.as_ref().map(Streamer::start);
        let result = runner.run().await;
        drop(ticker);
        if let Some(s) = &streamer {
            s.flush(true);
        }
        let git_after = snapshot(watch, workspace.clone()).await;
        let git_changes = git_before.changes(&git_after, &workspace);
        let out = match result {
            Ok(o) => o,
            Err(e) => return report(ToolResult::error(e.to_string()), &git_changes, &git_after, ctx),
        };

        let full = body(&out);
        let total_lines = memchr::memchr_iter(b'\n', full.as_bytes()).count();
        let mut text;
        let mut truncation = None;
        if total_lines > settings.max_lines || full.len() > ctx.limits.max_bytes {
            let mut t = ctx.truncate_middle(&full, settings.head_lines, settings.tail_lines);
            text = std::mem::take(&mut t.text);
            truncation = Some(t);
        } else {
            text = full;
        }
        let status = status_line(&out, timeout);
        let ok = out.exit.success() && !out.timed_out && !out.cancelled;
        let plan = svc.plan().ok().flatten();
        let hints = match plan {
            Some(plan) => denial_hints(&out.stderr.to_text(), &workdir, plan),
            _ => Vec::new(),
        };
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        // The middle cut above may hide the capture's own marker: say
        // plainly how much the command printed and how much was kept.
        for (name, c) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            if !c.is_complete() {
                text.push_str(&if c.tail.is_empty() {
                    format!(
                        "[{name} was {} bytes; only the first {} bytes were kept (bash.max_output_bytes)]\n",
                        c.total,
                        c.head.len()
                    )
                } else {
                    format!(
                        "[{name} was {} bytes; only the first {} and last {} bytes were kept]\n",
                        c.total,
                        c.head.len(),
                        c.tail.len()
                    )
                });
            }
        }
        text.push_str(&status);
        for h in &hints {
            text.push_str("\n[sandbox] ");
            text.push_str(h);
        }
        if out.leftovers_killed > 0 {
            text.push('\n');
            text.push_str(&wield_sandbox::process::sandbox::leftover_note(out.leftovers_killed));
        }

        let mut result = if ok {
            ToolResult::ok(text)
        } else {
            ToolResult::failed_with_output(text, status)
        };
        let (code, signal) = match out.exit {
            wield_sandbox::process::Exit::Code(c) => (Some(c), None),
            wield_sandbox::process::Exit::Signal(s) => (None, Some(s)),
        };
        result = result
            .with_meta("exit_code", code)
            .with_meta("signal", signal)
            .with_meta("timed_out", out.timed_out)
            .with_meta("cancelled", out.cancelled)
            .with_meta(
                "duration_ms",
                u64::try_from(out.duration.as_millis()).unwrap_or(u64::MAX),
            )
            .with_meta("stdout_bytes", out.stdout.total)
            .with_meta("stderr_bytes", out.stderr.total)
            .with_meta("workdir", workdir.display().to_string())
            .with_meta(
                "sandbox",
                plan.map_or_else(|| "none".to_owned(), |p| p.backend().to_string()),
            );
        if out.leftovers_killed > 0 {
            result = result.with_meta("leftovers_killed", out.leftovers_killed);
        }
        if !hints.is_empty() {
            result = result.with_meta("sandbox_denials", hints);
        }
        result = report(result, &git_changes, &git_after, ctx);
        match truncation {
            Some(t) => result.metadata.extend(t.metadata()),
            None => {
                result.metadata.insert("truncated".into(), false.into());
            }
        }
        result
    }
}

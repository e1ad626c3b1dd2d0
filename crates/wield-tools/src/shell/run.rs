//! Running one argv the way every command of wield runs: the shell
//! service's scrubbed environment, its process scoping, a timeout and the
//! call's cancellation, output capped per stream and streamed as it comes,
//! then shaped for the model (cut in the middle when long, the status line,
//! the sandbox's denial hints). `bash` runs its shell line through it, and
//! command tools each of their argvs.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wield_core::truncate::Truncated;
use wield_core::{Context, ToolResult};
use wield_sandbox::process::{CaptureLimit, Exit, RunOutput, Runner, denial_hints};

use super::output::{Streamer, body, status_line};
use super::settings::ShellService;

/// A command that ran (or was stopped): what it printed, shaped.
pub(crate) struct Ran {
    pub out: RunOutput,
    /// The output for the model: stdout, stderr, capture notes, the status
    /// line, sandbox hints.
    pub text: String,
    /// `exit code: N`, `timed out after 30s`, …
    pub status: String,
    /// Exited 0, neither timed out nor cancelled.
    pub ok: bool,
    pub truncation: Option<Truncated>,
    hints: Vec<String>,
    backend: String,
    workdir: String,
}

/// How long a command may run, and the limit its status line names when it
/// runs out (the whole call's, for a command that got what an earlier one
/// left of it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limit {
    pub left: Duration,
    pub stated: Duration,
}

impl Limit {
    pub(crate) fn whole(timeout: Duration) -> Self {
        Self {
            left: timeout,
            stated: timeout,
        }
    }
}

/// Run `argv` (already wrapped in the sandbox) in `workdir`.
pub(crate) async fn run(
    svc: &ShellService,
    argv: Vec<OsString>,
    workdir: &Path,
    limit: Limit,
    ctx: &Context,
) -> Result<Ran, String> {
    let settings = &svc.settings;
    // Each stream keeps its first `max_output_bytes`; the rest is counted
    // and drained inside the kernel (spliced to /dev/null), so a command
    // printing gigabytes costs neither memory nor a copy.
    let cap = settings.max_output_bytes;
    let mut runner = Runner::new(argv)
        .scope_signals(svc.scope_signals())
        .leader_reaps(svc.leader_reaps())
        .cwd(workdir)
        .env(svc.env())
        .timeout(Some(limit.left))
        .grace(settings.grace)
        .cancel(ctx.cancel.clone())
        .capture(CaptureLimit::head(cap));
    let streamer = ctx.events.has_listeners().then(|| Arc::new(Streamer::new(ctx)));
    if let Some(s) = &streamer {
        runner = runner.on_output(s.callback());
    }
    let ticker = streamer.as_ref().map(Streamer::start);
    let result = runner.run().await;
    drop(ticker);
    if let Some(s) = &streamer {
        s.flush(true);
    }
    let out = result.map_err(|e| e.to_string())?;

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
    let status = status_line(&out, limit.stated);
    let ok = out.exit.success() && !out.timed_out && !out.cancelled;
    let plan = svc.plan().ok().flatten();
    let hints = match plan {
        Some(plan) => denial_hints(&out.stderr.to_text(), workdir, plan),
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
    Ok(Ran {
        text,
        status,
        ok,
        truncation,
        hints,
        backend: plan.map_or_else(|| "none".to_owned(), |p| p.backend().to_string()),
        workdir: workdir.display().to_string(),
        out,
    })
}

impl Ran {
    /// The exit code, or `None` when a signal ended the command.
    pub(crate) fn exit_code(&self) -> Option<i32> {
        match self.out.exit {
            Exit::Code(c) => Some(c),
            Exit::Signal(_) => None,
        }
    }

    /// A result with the command's facts as metadata: exit code or signal,
    /// timeout, cancellation, duration, bytes printed, directory, sandbox
    /// (what was cut is [`truncation_facts`](Self::truncation_facts)).
    pub(crate) fn describe(&self, mut result: ToolResult) -> ToolResult {
        let signal = match self.out.exit {
            Exit::Code(_) => None,
            Exit::Signal(s) => Some(s),
        };
        result = result
            .with_meta("exit_code", self.exit_code())
            .with_meta("signal", signal)
            .with_meta("timed_out", self.out.timed_out)
            .with_meta("cancelled", self.out.cancelled)
            .with_meta(
                "duration_ms",
                u64::try_from(self.out.duration.as_millis()).unwrap_or(u64::MAX),
            )
            .with_meta("stdout_bytes", self.out.stdout.total)
            .with_meta("stderr_bytes", self.out.stderr.total)
            .with_meta("workdir", self.workdir.clone())
            .with_meta("sandbox", self.backend.clone());
        if self.out.leftovers_killed > 0 {
            result = result.with_meta("leftovers_killed", self.out.leftovers_killed);
        }
        if !self.hints.is_empty() {
            result = result.with_meta("sandbox_denials", self.hints.clone());
        }
        result
    }

    /// `result` with what of the output was cut, if anything.
    pub(crate) fn truncation_facts(&self, mut result: ToolResult) -> ToolResult {
        match &self.truncation {
            Some(t) => result.metadata.extend(t.metadata()),
            None => {
                result.metadata.insert("truncated".into(), false.into());
            }
        }
        result
    }
}

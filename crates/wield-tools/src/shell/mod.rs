//! Commands: `bash` and background processes (`process_start`,
//! `process_status`, `process_output`, `process_kill`, `process_list`).
//!
//! Both run through the same path: `bash.rewrite` applied to the command,
//! the shell's argv (`bash -c`), the sandbox wrapper (Landlock helper or
//! bubblewrap, resolved once per process from `[sandbox]`), a scrubbed
//! environment (`[bash.env]`), the workspace or a `workdir` inside the
//! roots. The [`ShellService`] installed by [`install_services`] carries the
//! settings; without it (a bare library embedding) the defaults apply over
//! the context's workspace.
//!
//! `bash` waits for the command with a timeout and kills its whole process
//! tree on timeout or cancellation; background processes live in the
//! session (a session extension) and are all killed when it ends.
//!
//! Programs embedding these tools with the Landlock backend must dispatch
//! `__sandbox-exec` to [`wield_sandbox::process::sandbox_exec_main`] at the
//! top of their `main` (the wield binary does), or point the plan at a
//! wield binary.

// Helpers fail with the `ToolResult` the model will read: a cold path.
#![allow(clippy::result_large_err)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use wield_core::{Config, Context, Services, ToolRef, ToolResult};
use wield_sandbox::fs::{Access, Confinement};
use wield_sandbox::process::RunGuard;

use crate::SetupError;

mod bash;
mod command_line;
pub(crate) mod git_watch;
mod output;
mod processes;
mod protected_globs;
pub(crate) mod run;
mod session_hooks;
pub(crate) mod settings;

pub use bash::BashTool;
pub use processes::{
    ProcessKillTool, ProcessListTool, ProcessOutputTool, ProcessStartTool, ProcessStatusTool, Processes,
};
pub use session_hooks::ShellSessionHooks;
pub use settings::{CONFIG_KEYS, ShellService, ShellSettings, sandbox_settings};

pub fn tools() -> Vec<ToolRef> {
    vec![
        Arc::new(BashTool::new()),
        Arc::new(ProcessStartTool::new()),
        Arc::new(ProcessStatusTool::new()),
        Arc::new(ProcessOutputTool::new()),
        Arc::new(ProcessKillTool::new()),
        Arc::new(ProcessListTool::new()),
    ]
}

/// Install the [`ShellService`] built from `[bash]` and `[sandbox]`.
/// `guarded` paths are read-only to sandboxed commands, as protected ones
/// are.
pub fn install_services(
    services: &mut Services,
    config: &Config,
    workspace: &Path,
    guarded: &[wield_sandbox::fs::Guarded],
) -> Result<(), SetupError> {
    let mut service = ShellService::from_config(config, workspace)?;
    service
        .sandbox
        .protected
        .extend(guarded.iter().map(|g| workspace.join(&g.path)));
    services.insert(Arc::new(service));
    services.add_session_hooks(Arc::new(ShellSessionHooks));
    Ok(())
}

pub(crate) fn service(ctx: &Context) -> Arc<ShellService> {
    ctx.service::<ShellService>().unwrap_or_else(|| {
        Arc::new(ShellService::new(
            ShellSettings::default(),
            wield_sandbox::process::SandboxSettings::for_workspace(&ctx.cwd),
            &ctx.cwd,
        ))
    })
}

/// What approval rules see of a `bash` or `process_start` call: its command
/// line, parsed (see [`command_line`]). For tools of other crates that run a
/// `command` argument with bash too.
pub fn approval_subject(input: &Value) -> wield_core::approval::Subject {
    match input.get("command").and_then(Value::as_str) {
        Some(cmd) => wield_core::approval::Subject::Command(command_line::analyse(cmd)),
        None => wield_core::approval::Subject::None,
    }
}

/// The input shared by `bash` and `process_start`.
pub(crate) struct CommandInput {
    pub command: String,
    pub workdir: Option<String>,
    pub timeout: Option<f64>,
    pub label: Option<String>,
}

impl CommandInput {
    pub(crate) fn parse(tool: &str, input: Value) -> Result<Self, ToolResult> {
        let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
        let command = text("command").unwrap_or_default();
        if command.trim().is_empty() {
            return Err(ToolResult::error(format!(
                "{tool}: `command` is empty; give the command line to run"
            )));
        }
        Ok(Self {
            command,
            workdir: text("workdir").filter(|w| !w.trim().is_empty()),
            timeout: input.get("timeout").and_then(Value::as_f64),
            label: text("label").filter(|l| !l.trim().is_empty()),
        })
    }
}

/// `bash: $ make test # running tests`
pub(crate) fn command_preview(tool: &str, input: &Value) -> String {
    let command = input.get("command").and_then(Value::as_str).unwrap_or("");
    let mut line = format!("{tool}: $ {command}");
    if let Some(dir) = input.get("workdir").and_then(Value::as_str).filter(|d| !d.is_empty()) {
        line = format!("{tool}: ({dir}) $ {command}");
    }
    if let Some(label) = input.get("label").and_then(Value::as_str).filter(|l| !l.is_empty()) {
        line.push_str(" # ");
        line.push_str(label);
    }
    line
}

/// A command ready to spawn: its parsed input, the shell service, the
/// directory it runs in and its argv (rewritten, handed to the shell,
/// wrapped in the sandbox).
pub(crate) struct Prepared {
    pub input: CommandInput,
    pub svc: Arc<ShellService>,
    pub workdir: PathBuf,
    pub argv: Vec<std::ffi::OsString>,
    /// Held while the command's processes live.
    pub sandbox: RunGuard,
}

/// What bash and process_start do before spawning, or the error result.
pub(crate) fn prepare(tool: &str, input: Value, ctx: &Context) -> Result<Prepared, ToolResult> {
    let input = CommandInput::parse(tool, input)?;
    let svc = service(ctx);
    let workdir = resolve_workdir(ctx, input.workdir.as_deref())?;
    let (argv, sandbox) = svc.argv(&input.command, &workdir).map_err(ToolResult::error)?;
    Ok(Prepared {
        input,
        svc,
        workdir,
        argv,
        sandbox,
    })
}

/// The directory a command runs in: the workspace, or `workdir` when it is
/// an existing directory inside the roots.
pub(crate) fn resolve_workdir(ctx: &Context, workdir: Option<&str>) -> Result<PathBuf, ToolResult> {
    let svc = service(ctx);
    let Some(dir) = workdir else {
        return Ok(svc.workspace().to_path_buf());
    };
    let confinement = match ctx.service::<Confinement>() {
        Some(c) => c,
        None => Arc::new(
            Confinement::builder(svc.workspace())
                .build()
                .map_err(|e| ToolResult::error(format!("cannot confine the workspace: {e}")))?,
        ),
    };
    confinement
        .real_dir(dir, Access::Read)
        .map_err(|e| ToolResult::error(format!("workdir: {e}")))
}

#[cfg(test)]
mod tests;

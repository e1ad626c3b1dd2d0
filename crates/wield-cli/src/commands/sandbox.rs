//! `wield sandbox check` and the hidden Landlock helper `wield __sandbox-exec`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use wield_sandbox::process::sandbox::{BwrapStatus, SANDBOX_EXEC_SUBCOMMAND, probe};
use wield_sandbox::process::{Backend, sandbox_exec_main};
use wield_tools::shell::ShellService;

use crate::app::{Runtime, Servers};
use crate::cli::{GlobalArgs, SandboxCommand};

/// `wield __sandbox-exec ...`: restrict this process, then exec the
/// command. `None` when the binary was started for anything else.
pub fn exec_helper() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != SANDBOX_EXEC_SUBCOMMAND {
        return None;
    }
    let code = sandbox_exec_main(args);
    Some(ExitCode::from(u8::try_from(code).unwrap_or(126)))
}

pub async fn run(global: &GlobalArgs, cmd: SandboxCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SandboxCommand::Check { json } => check(global, json).await,
    }
}

async fn check(global: &GlobalArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let rt = Runtime::load_servers(global, Servers::None).await?;
    let probe = tokio::task::spawn_blocking(probe).await?;
    let configured = match rt.services.get::<ShellService>() {
        Some(svc) => svc.plan().map(|p| p.map(|p| p.backend())),
        None => Err("the command runner is not installed".to_owned()),
    };
    let auto = probe.auto_backend();
    let name = |b: Option<Backend>| b.map_or_else(|| "none".to_owned(), |b| b.to_string());
    let mut out = std::io::stdout().lock();
    if as_json {
        let (bwrap_path, bwrap_works, bwrap_error) = match &probe.bwrap {
            BwrapStatus::Missing => (None, false, Some("not installed".to_owned())),
            BwrapStatus::Broken { path, error } => (Some(path.display().to_string()), false, Some(error.clone())),
            BwrapStatus::Works { path } => (Some(path.display().to_string()), true, None),
        };
        let v = json!({
            "landlock": {"available": probe.landlock_abi.is_some(), "abi": probe.landlock_abi},
            "seccomp": probe.seccomp,
            "bwrap": {"path": bwrap_path, "works": bwrap_works, "error": bwrap_error},
            "subreaper": probe.subreaper,
            "proc_children": probe.proc_children,
            "auto": auto.map(|b| b.to_string()),
            "configured": {
                "backend": configured.as_ref().ok().map(|b| name(*b)),
                "error": configured.as_ref().err(),
            },
        });
        writeln!(out, "{v}")?;
    } else {
        let landlock = match probe.landlock_abi {
            None => "not available (kernel without Landlock, or disabled)".to_owned(),
            Some(abi) => {
                let mut parts = vec!["file system"];
                if abi >= 3 {
                    parts.push("truncation");
                }
                if abi >= 4 {
                    parts.push("TCP bind/connect");
                }
                if abi >= 6 {
                    parts.push("signal and abstract-socket scoping");
                }
                format!("available, ABI {abi} ({})", parts.join(", "))
            }
        };
        let seccomp = if probe.seccomp { "available" } else { "not available" };
        let bwrap = match &probe.bwrap {
            BwrapStatus::Missing => "not installed (Debian/Ubuntu: apt-get install bubblewrap)".to_owned(),
            BwrapStatus::Broken { path, error } => format!("{} does not work here: {error}", path.display()),
            BwrapStatus::Works { path } => format!("{} (works)", path.display()),
        };
        let kill = if probe.subreaper && probe.proc_children {
            "child subreaper, process trees walked through /proc"
        } else if probe.subreaper {
            "child subreaper; no /proc children lists: only process groups are killed"
        } else {
            "not a subreaper: double-forked processes may escape kill-tree"
        };
        writeln!(out, "landlock   {landlock}")?;
        writeln!(out, "seccomp    {seccomp}")?;
        writeln!(out, "bwrap      {bwrap}")?;
        writeln!(out, "kill-tree  {kill}")?;
        writeln!(out, "auto       {}", name(auto))?;
        match &configured {
            Ok(b) => writeln!(out, "configured {}", name(*b))?,
            Err(e) => writeln!(out, "configured error: {e}")?,
        }
    }
    out.flush()?;
    Ok(if configured.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

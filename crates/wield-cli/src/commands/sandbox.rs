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
    let configured = match rt.services().get::<ShellService>() {
        Some(svc) => svc.plan().map(|p| p.map(|p| p.backend())),
        None => Err("the command runner is not installed".to_owned()),
    };
    let auto = probe.auto_backend();
    let name = |b: Option<Backend>| b.map_or_else(|| "none".to_owned(), |b| b.to_string());
    let protections = Protections::of(&probe);
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
            "protections": protections.json(),
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
        for (name, line) in protections.lines() {
            writeln!(out, "{name:<10} {line}")?;
        }
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

/// What this machine can enforce against the ways out of a sandbox: what
/// `sandbox check` reports besides the backends.
struct Protections {
    /// wield's memory and environment are closed to its commands.
    non_dumpable: bool,
    /// seccomp refuses `connect` (any Unix socket) with the network off.
    unix_connect_refused: bool,
    /// Landlock ABI 6: abstract Unix sockets and signals scoped.
    scoping: bool,
    /// Bubblewrap runs commands in their own PID namespace.
    pid_namespace: bool,
    /// Commands run under a keeper that adopts their orphans.
    keeper: bool,
    /// The session's own temp dir (`TMPDIR`), when it is one.
    private_tmp: Option<String>,
}

impl Protections {
    fn of(probe: &wield_sandbox::process::Probe) -> Self {
        let tmp = std::env::temp_dir();
        let private = tmp
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("wield-session-"));
        Self {
            non_dumpable: !wield_sandbox::process::sandbox::is_dumpable(),
            unix_connect_refused: probe.seccomp,
            scoping: probe.landlock_abi.is_some_and(|abi| abi >= 6),
            pid_namespace: probe.bwrap.works(),
            keeper: probe.subreaper && probe.proc_children,
            private_tmp: private.then(|| tmp.display().to_string()),
        }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "non_dumpable": self.non_dumpable,
            "capabilities_dropped": true,
            "unix_sockets": {
                "connect_refused": self.unix_connect_refused,
                "abstract_scoped": self.scoping || self.pid_namespace,
                "host_run_hidden": self.pid_namespace,
            },
            "signal_scoping": self.scoping,
            "pid_namespace": self.pid_namespace,
            "keeper": self.keeper,
            "private_tmp": {"dir": self.private_tmp, "host_tmp_hidden": self.pid_namespace},
            "protected_paths_rename_safe": true,
        })
    }

    fn lines(&self) -> Vec<(&'static str, String)> {
        let yes_no = |b: bool, yes: &str, no: &str| if b { yes.to_owned() } else { no.to_owned() };
        vec![
            (
                "memory",
                yes_no(
                    self.non_dumpable,
                    "wield is non-dumpable; sandboxed commands hold no capability",
                    "wield could not make itself non-dumpable: commands of its user may read its memory",
                ),
            ),
            (
                "sockets",
                format!(
                    "{}; abstract sockets {}",
                    yes_no(
                        self.unix_connect_refused,
                        "with the network off, connect is refused (any Unix socket; sandbox.allow_unix_sockets lifts it)",
                        "no seccomp: Unix sockets cannot be refused",
                    ),
                    yes_no(
                        self.scoping || self.pid_namespace,
                        "cut (network namespace under bwrap, Landlock scoping)",
                        "reachable under Landlock (kernel before ABI 6)",
                    )
                ),
            ),
            (
                "processes",
                format!(
                    "{}; {}",
                    yes_no(
                        self.keeper,
                        "each command runs under a keeper that adopts and ends its orphans",
                        "no keeper (no subreaper or /proc children lists)",
                    ),
                    yes_no(
                        self.pid_namespace,
                        "a PID namespace per command under bwrap",
                        "no PID namespace (bwrap does not work here)",
                    )
                ),
            ),
            (
                "signals",
                yes_no(
                    self.scoping,
                    "scoped to the command's own processes (Landlock ABI 6)",
                    "not scoped (kernel before Landlock ABI 6)",
                ),
            ),
            (
                "temp",
                match &self.private_tmp {
                    Some(dir) => format!(
                        "private session dir {dir}{}",
                        if self.pid_namespace {
                            "; the host's /tmp hidden under bwrap"
                        } else {
                            ""
                        }
                    ),
                    None => "no private temp dir (it could not be created): the shared one is used".to_owned(),
                },
            ),
            (
                "protected",
                "read-only against writes and renames of any ancestor (both backends)".to_owned(),
            ),
        ]
    }
}

//! Turning command-line settings into a [`wield_runtime::Runtime`], and the
//! errors that map to exit codes.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use wield_core::policy::{PolicyOptions, RuleList};
use wield_core::{Approver, Executor, approval};
use wield_runtime::RuntimeOptions;
pub use wield_runtime::Servers;

use crate::cli::GlobalArgs;

/// An error that is the user's to fix on the command line: exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A stop signal arrived before the command could begin (while bridged MCP
/// servers were starting): wield exits with 130 at once.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// The workspace `-C DIR` names (the current directory by default),
/// canonical: a usage error when it is missing or no directory.
pub fn workspace(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    let workspace = match &global.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    wield_runtime::canonical_workspace(&workspace).map_err(exit_error)
}

/// The runtime a command runs on: [`wield_runtime::Runtime`] loaded from
/// the command line's options, and the approver its calls get.
#[derive(Clone)]
pub struct Runtime {
    pub global: GlobalArgs,
    pub inner: wield_runtime::Runtime,
}

impl std::ops::Deref for Runtime {
    type Target = wield_runtime::Runtime;
    fn deref(&self) -> &wield_runtime::Runtime {
        &self.inner
    }
}

impl Runtime {
    pub async fn load(global: &GlobalArgs) -> anyhow::Result<Self> {
        Self::load_with(global, None, Servers::All, Vec::new()).await
    }

    /// As [`Runtime::load`], starting only the MCP servers `servers` names.
    pub async fn load_servers(global: &GlobalArgs, servers: Servers) -> anyhow::Result<Self> {
        Self::load_with(global, None, servers, Vec::new()).await
    }

    /// As [`Runtime::load_servers`], with `front` answering the sampling
    /// and elicitation requests of the external MCP servers, and the
    /// front-end's own `tools` registered with the built-in ones.
    pub async fn load_with(
        global: &GlobalArgs,
        front: Option<Arc<dyn wield_mcp::client::FrontEnd>>,
        servers: Servers,
        tools: Vec<wield_core::ToolRef>,
    ) -> anyhow::Result<Self> {
        Self::load_adjusted(global, front, servers, tools, |_| Ok(())).await
    }

    /// As [`Runtime::load_with`], with the options adjusted by `adjust`
    /// before loading (a `.chat` document's settings).
    pub async fn load_adjusted(
        global: &GlobalArgs,
        front: Option<Arc<dyn wield_mcp::client::FrontEnd>>,
        servers: Servers,
        mut tools: Vec<wield_core::ToolRef>,
        adjust: impl FnOnce(&mut RuntimeOptions) -> anyhow::Result<()>,
    ) -> anyhow::Result<Self> {
        let workspace = workspace(global)?;
        let stop = tokio_util::sync::CancellationToken::new();
        let on_signal = stop.clone();
        let watcher = tokio::spawn(async move {
            crate::commands::stop_signal().await;
            on_signal.cancel();
        });
        tools.extend(crate::test_hooks::debug_tools());
        let mut builder = RuntimeOptions::builder()
            .env(std::env::vars())
            .set(global.set.iter().cloned())
            .policy(policy_options(global)?)
            .servers(servers)
            .tools(tools)
            // Model providers and the agent are configured in the same files.
            .config_keys(&[wield_llm::settings::CONFIG_KEYS, wield_agent::CONFIG_KEYS].concat())
            .stop(stop);
        if let Some(file) = &global.config {
            builder = builder.config_file(file);
        }
        if let Some(audit) = &global.audit {
            builder = builder.audit(audit);
        }
        if let Some(front) = front {
            builder = builder.front_end(front);
        }
        let mut options = builder.build();
        adjust(&mut options)?;
        let loaded = wield_runtime::Runtime::load(&workspace, options).await;
        watcher.abort();
        let inner = loaded.map_err(exit_error)?;
        // wield ends what the bridged servers started on its way out.
        crate::commands::shut_down_after(&inner);
        Ok(Self {
            global: global.clone(),
            inner,
        })
    }

    /// The approver for one call a person typed: `--yes`; else (in a build
    /// with test hooks) the scripted test approver when
    /// `WIELD_TEST_APPROVER` is set; else a person at the terminal when
    /// stdin and stderr are terminals; else a headless refusal.
    pub fn approver(&self) -> anyhow::Result<Arc<dyn Approver>> {
        use std::io::IsTerminal;
        if self.global.yes {
            return Ok(Arc::new(approval::YesApprover));
        }
        if let Some(scripted) = crate::test_hooks::scripted_approver()? {
            return Ok(scripted);
        }
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            return Ok(Arc::new(crate::terminal_approver::TerminalApprover::for_a_person()));
        }
        Ok(Arc::new(approval::HeadlessApprover))
    }

    /// An executor asking this process's approver.
    pub fn executor(&self) -> anyhow::Result<Executor> {
        self.inner.executor(self.approver()?).map_err(exit_error)
    }
}

/// A runtime error as the error [`crate::commands::main`] maps to its exit
/// code: a usage error exits 2, an interruption 130, the rest 1.
pub fn exit_error(e: wield_runtime::Error) -> anyhow::Error {
    match e {
        wield_runtime::Error::Interrupted => anyhow::Error::new(Interrupted),
        e if e.is_usage() => usage(e.to_string()),
        e => anyhow::Error::new(e),
    }
}

/// The policy selections of the command line. `--include-tools` /
/// `--exclude-tools` and their environment variables are told apart so a
/// decision names the one that applied.
fn policy_options(global: &GlobalArgs) -> anyhow::Result<PolicyOptions> {
    let on_command_line =
        |flag: &str| std::env::args().any(|a| a == flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')));
    let list = |entries: &[String], flag: &str, var: &str| -> anyhow::Result<Option<RuleList>> {
        let entries: Vec<&str> = entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()).collect();
        if entries.is_empty() {
            return Ok(None);
        }
        let source = if on_command_line(flag) { flag } else { var };
        RuleList::parse(source, &entries)
            .map(Some)
            .map_err(|e| usage(e.to_string()))
    };
    Ok(PolicyOptions {
        profile: global.profile.clone().filter(|p| !p.trim().is_empty()),
        agent: global.agent.clone(),
        mode: global.mode.clone(),
        task: global.task.clone(),
        include: list(&global.include_tools, "--include-tools", "WIELD_INCLUDE_TOOLS")?,
        exclude: list(&global.exclude_tools, "--exclude-tools", "WIELD_EXCLUDE_TOOLS")?,
        add: None,
    })
}

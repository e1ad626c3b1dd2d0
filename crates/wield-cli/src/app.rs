//! Turning command-line settings into library objects: the workspace, the
//! merged configuration, the registry, the services and the executor.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use wield_core::policy::{PolicyBuilder, PolicyOptions, RuleList};
use wield_core::{
    Approver, Config, ConfigLoader, Executor, ExecutorBuilder, KeyTree, Registered, Registry, Services, approval,
    events::AuditLog,
};

use crate::cli::GlobalArgs;
use crate::tool_set::{SharedTools, ToolSet};

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
    let workspace =
        std::fs::canonicalize(&workspace).map_err(|e| usage(format!("workspace {}: {e}", workspace.display())))?;
    if !workspace.is_dir() {
        return Err(usage(format!("workspace {} is not a directory", workspace.display())));
    }
    Ok(workspace)
}

/// Everything a command needs, built once per process.
pub struct Runtime {
    pub global: GlobalArgs,
    pub workspace: PathBuf,
    pub config: Arc<Config>,
    pub services: Services,
    /// The registry and the policy decided over it (which tools are
    /// visible, and why), as they are now: replaced whole when a bridged
    /// server changes its tools under `wield mcp serve`.
    pub tools: SharedTools,
}

/// Which configured MCP servers a command starts (all of them are still
/// known to `wield mcp list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Servers<'a> {
    All,
    /// Commands that use no bridged tool (`wield sandbox check`, a call of
    /// a built-in tool): nothing waits for a slow server.
    None,
    /// The one server a call of `mcp__NAME__tool` needs.
    Only(&'a str),
}

impl<'a> Servers<'a> {
    /// What a call of `tool` needs: its own server for a bridged tool,
    /// every server for `load_tools` (deferred tools are bridged ones too),
    /// none for the rest.
    pub fn for_tool(tool: &'a str) -> Self {
        if tool == "load_tools" {
            return Self::All;
        }
        // Server names never contain `__`.
        match tool.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
            Some((server, _)) => Self::Only(server),
            None => Self::None,
        }
    }

    fn starts(self, server: &str) -> bool {
        match self {
            Self::All => true,
            Self::None => false,
            Self::Only(name) => name == server,
        }
    }
}

impl Runtime {
    pub async fn load(global: &GlobalArgs) -> anyhow::Result<Self> {
        Self::load_with(global, None, Servers::All).await
    }

    /// As [`Runtime::load`], starting only the MCP servers `servers` names.
    pub async fn load_servers(global: &GlobalArgs, servers: Servers<'_>) -> anyhow::Result<Self> {
        Self::load_with(global, None, servers).await
    }

    /// As [`Runtime::load_servers`], with `front` answering the sampling
    /// and elicitation requests of the external MCP servers.
    pub async fn load_with_front_end(
        global: &GlobalArgs,
        front: Option<Arc<dyn wield_mcp::client::FrontEnd>>,
        servers: Servers<'_>,
    ) -> anyhow::Result<Self> {
        Self::load_with(global, front, servers).await
    }

    async fn load_with(
        global: &GlobalArgs,
        front: Option<Arc<dyn wield_mcp::client::FrontEnd>>,
        servers: Servers<'_>,
    ) -> anyhow::Result<Self> {
        let workspace = workspace(global)?;

        // Saved full outputs stay with the project (and its own tools' roots),
        // not in a temp dir every project's tools can read.
        wield_core::truncate::set_saved_output_dir(workspace.join(".wield").join("outputs"));

        let mut registry = Registry::new();
        registry
            .register_many(crate::tool_set::local_tools())
            .context("registering the built-in tools")?;

        let mut known = KeyTree::core();
        for r in registry.list() {
            known.insert_under(&r.tool.spec().name, &r.tool.config_keys());
        }
        let mut loader = ConfigLoader::new().standard_files(&workspace);
        if let Some(file) = &global.config {
            loader = loader.file(file);
        }
        loader = loader.env(std::env::vars());
        let overrides = overrides_table(&global.set)?;
        if !overrides.is_empty() {
            loader = loader.overrides("--set", overrides);
        }
        let config = loader.load(&known).map_err(|e| usage(e.to_string()))?;

        let mut services = Services::new();
        wield_tools::install_services(&mut services, &config, &workspace).map_err(|e| usage(e.to_string()))?;
        // External MCP servers are async registry sources: all start at once,
        // each within its timeout; one that fails is a warning (its tools are
        // absent, `wield mcp list` and `wield tools debug` say why).
        let mcp = wield_mcp::McpClients::with_front_end(
            wield_mcp::ServerConfig::all_from(&config, &workspace).map_err(|e| usage(e.to_string()))?,
            front,
        );
        crate::commands::finish_on_exit(mcp.exit());
        if !mcp.is_empty() {
            mcp.add_sources(&mut registry, |name| servers.starts(name));
            // A stop signal does not wait for slow servers: their starts
            // are dropped, which stops their processes.
            let warnings = tokio::select! {
                warnings = registry.load_sources() => warnings,
                () = crate::commands::stop_signal() => return Err(anyhow::Error::new(Interrupted)),
            };
            for warning in warnings {
                tracing::warn!("{}", warning.message);
            }
            crate::tool_set::warn_left_out(&mut registry, &mcp);
        }
        services.insert(mcp);
        let options = policy_options(global)?;
        let policy = Arc::new(
            PolicyBuilder::from_config(&config, &options)
                .map_err(|e| usage(e.to_string()))?
                .build(&registry),
        );
        let config = Arc::new(config);
        let tools = SharedTools::new(
            ToolSet {
                registry: Arc::new(registry),
                policy,
            },
            Arc::clone(&config),
            options,
        );

        Ok(Self {
            global: global.clone(),
            workspace,
            config,
            services,
            tools,
        })
    }

    /// The approver for this process: `--yes`; else the scripted test
    /// approver when `WIELD_TEST_APPROVER` is set; else a person at the
    /// terminal when stdin and stderr are terminals; else a headless refusal.
    pub fn approver(&self) -> anyhow::Result<Arc<dyn Approver>> {
        use std::io::IsTerminal;
        if self.global.yes {
            return Ok(Arc::new(approval::YesApprover));
        }
        if let Some(script) = std::env::var_os("WIELD_TEST_APPROVER") {
            let script = script.to_string_lossy();
            return Ok(Arc::new(
                crate::terminal_approver::ScriptedApprover::parse(&script).map_err(usage)?,
            ));
        }
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            return Ok(Arc::new(crate::terminal_approver::TerminalApprover::new()));
        }
        Ok(Arc::new(approval::HeadlessApprover))
    }

    /// Whether commands run in a process sandbox, for the sandbox resolver:
    /// the command runner's resolved `[sandbox]` (a configured backend that
    /// does not work here means no sandbox, and commands fail with why).
    pub fn sandboxed(&self) -> bool {
        self.services
            .get::<wield_tools::shell::ShellService>()
            .is_some_and(|s| s.sandbox_active())
    }

    pub fn executor(&self) -> anyhow::Result<Executor> {
        let make = self.executor_factory()?;
        Ok(make(
            self.approver()?,
            self.services.clone(),
            wield_core::EventSink::default(),
        ))
    }

    /// Builds executors that share this runtime's registry, policy, hooks and
    /// audit log and differ in approver, services and event sink: one per
    /// MCP session. Remembered approvals are read again whenever their files
    /// change, so a pattern added while a session runs applies to its next
    /// call.
    pub fn executor_factory(
        &self,
    ) -> anyhow::Result<impl Fn(Arc<dyn Approver>, Services, wield_core::EventSink) -> Executor + Send + Sync + 'static>
    {
        let hooks = crate::shell_hooks::from_config(&self.config)?;
        let audit_file = self.global.audit.clone().or_else(|| self.config.audit.file.clone());
        let audit = match audit_file {
            Some(path) => Some(Arc::new(
                AuditLog::open(&path).with_context(|| format!("opening audit log {}", path.display()))?,
            )),
            None => None,
        };
        let tools = self.tools.clone();
        let config = Arc::clone(&self.config);
        let workspace = self.workspace.clone();
        let sandboxed = self.sandboxed();
        let ask_paths = wield_tools::fs::ask_path_globs(&self.config, &self.workspace)?;
        Ok(
            move |approver: Arc<dyn Approver>, mut services: Services, events: wield_core::EventSink| {
                // The tool set as it is now; `load_tools` reads the policy
                // from the services.
                let current = tools.current();
                let registry = Arc::clone(&current.registry);
                let policy = Arc::clone(&current.policy);
                services.insert(Arc::clone(&policy));
                let store = Arc::new(crate::approvals_store::FileApprovalStore::new(&workspace));
                let mut chain = approval::standard_chain(&config.approval, Vec::new());
                chain.add(Arc::new(approval::RulesResolver::from_store(
                    Arc::clone(&store) as Arc<dyn approval::ApprovalStore>
                )));
                // Paths outside the roots are refused before approval is asked.
                let guard = services.get::<wield_sandbox::fs::Confinement>();
                if let Some(conf) = &guard {
                    let below = chain.clone();
                    chain.add(Arc::new(wield_tools::fs::AskPathsResolver::new(
                        Arc::clone(&registry),
                        Arc::clone(conf),
                        ask_paths.clone(),
                        below,
                    )));
                }
                let mut builder = ExecutorBuilder::new(Arc::clone(&registry), Arc::clone(&config), &workspace)
                    .approver(approver)
                    .services(services)
                    .events(events)
                    .visibility(Arc::clone(&policy) as Arc<dyn wield_core::policy::Visibility>)
                    .chain(chain)
                    .store(store)
                    .sandboxed(sandboxed);
                if let Some(conf) = guard {
                    builder = builder.path_guard(Arc::new(wield_tools::fs::ConfinementGuard(conf)));
                }
                for hook in &hooks {
                    builder = builder.hook(Arc::clone(hook));
                }
                if let Some(log) = &audit {
                    builder = builder.audit(Arc::clone(log));
                }
                builder.build()
            },
        )
    }

    /// The tools a model sees with their schemas (the policy's `in` tools;
    /// deferred ones are listed by name only), in name order.
    pub fn visible(&self) -> Vec<Arc<Registered>> {
        self.tools.current().visible()
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
    })
}

fn overrides_table(sets: &[String]) -> anyhow::Result<toml::Table> {
    let mut table = toml::Table::new();
    for s in sets {
        let Some((key, value)) = s.split_once('=') else {
            return Err(usage(format!("--set expects KEY=VALUE, got `{s}`")));
        };
        wield_core::config::set_path(&mut table, key.trim(), wield_core::config::parse_scalar(value.trim()))
            .map_err(|e| usage(e.to_string()))?;
    }
    Ok(table)
}

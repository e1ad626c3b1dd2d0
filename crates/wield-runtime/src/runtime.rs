//! [`Runtime`]: the workspace, the merged configuration, the registry and
//! its policy, the services, and the executors every front-end builds from
//! them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wield_core::events::AuditLog;
use wield_core::policy::{PolicyBuilder, PolicyOptions};
use wield_core::truncate::SavedOutputs;
use wield_core::{
    Approver, Config, ConfigLoader, EventSink, Executor, ExecutorBuilder, KeyTree, Registered, Services, Session,
    ToolRef, approval,
};

use crate::approvals::FileApprovalStore;
use crate::tool_set::{SharedTools, ToolSet};
use crate::{Error, shell_hooks};

/// Which configured MCP servers [`Runtime::load`] starts (all of them are
/// still known, for listing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Servers {
    #[default]
    All,
    /// Nothing waits for a slow server: for work that uses no bridged tool,
    /// or for a front-end that starts them in the background itself.
    None,
    /// The one server a call of `mcp__NAME__tool` needs.
    Only(String),
}

impl Servers {
    /// What a call of `tool` needs: its own server for a bridged tool,
    /// every server for `load_tools` (deferred tools are bridged ones too),
    /// none for the rest.
    pub fn for_tool(tool: &str) -> Self {
        if tool == "load_tools" {
            return Self::All;
        }
        // Server names never contain `__`.
        match tool.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
            Some((server, _)) => Self::Only(server.to_owned()),
            None => Self::None,
        }
    }

    #[cfg(feature = "mcp")]
    pub(crate) fn starts(&self, server: &str) -> bool {
        match self {
            Self::All => true,
            Self::None => false,
            Self::Only(name) => name == server,
        }
    }
}

/// How to build a [`Runtime`]: the layers above the configuration files,
/// and what the front-end brings.
#[derive(Default)]
pub struct RuntimeOptions {
    /// One more configuration file, above the user's and the project's.
    pub config_file: Option<PathBuf>,
    /// The environment `WIELD_*` settings are read from (usually
    /// `std::env::vars()`; empty for none).
    pub env: Vec<(String, String)>,
    /// `KEY=VALUE` settings, the highest layer (`--set`).
    pub set: Vec<String>,
    /// Profile, agent, mode, task and tool selections for the policy.
    pub policy: PolicyOptions,
    /// Where to append the audit log (else `audit.file` from the
    /// configuration, else none).
    pub audit: Option<PathBuf>,
    /// Which bridged MCP servers to start while loading.
    pub servers: Servers,
    /// Who answers the sampling and elicitation requests of bridged MCP
    /// servers.
    #[cfg(feature = "mcp")]
    pub front_end: Option<Arc<dyn wield_mcp::client::FrontEnd>>,
    /// The front-end's own tools, registered with the built-in ones.
    pub tools: Vec<ToolRef>,
    /// Configuration keys the front-end reads itself (dotted paths; `*` is
    /// any name, a trailing `**` any content), so that they are not refused
    /// as unknown.
    pub config_keys: Vec<&'static str>,
    /// Cancelled to stop loading while bridged servers start
    /// ([`Error::Interrupted`]): those that started are stopped, in a
    /// hurry, before the error returns.
    pub stop: Option<CancellationToken>,
    /// Approval resolvers of the front-end, in every executor's chain
    /// beside the configured ones (a `.chat` document's frontmatter, at
    /// priority 90).
    pub resolvers: Vec<Arc<dyn approval::Resolver>>,
    /// Paths the front-end protects while it runs, with their reasons (the
    /// `.chat` document a cycle works on, its lock, replies and results):
    /// file tools refuse to write them, sandboxed commands get them
    /// read-only. The policy files wield executes are guarded too, by the
    /// runtime itself.
    pub guarded: Vec<wield_sandbox::fs::Guarded>,
    /// wield's global configuration directory (its `config.toml`, tools,
    /// skills, memory, approvals and trust list): by default the one the
    /// process's environment names.
    pub global_dir: wield_core::config::GlobalDir,
}

impl RuntimeOptions {
    /// Options built a piece at a time, the rest left at their defaults:
    /// `RuntimeOptions::builder().tools(mine).set(["bash.timeout=30"]).build()`.
    pub fn builder() -> RuntimeOptionsBuilder {
        RuntimeOptionsBuilder(Self::default())
    }
}

/// Builds [`RuntimeOptions`]; each method sets one of its fields (see
/// there), those that take a list add to it.
#[must_use]
#[derive(Default)]
pub struct RuntimeOptionsBuilder(RuntimeOptions);

impl RuntimeOptionsBuilder {
    /// wield's global configuration directory, instead of the one the
    /// environment names (`GlobalDir::Nowhere` for none).
    pub fn global_dir(mut self, dir: wield_core::config::GlobalDir) -> Self {
        self.0.global_dir = dir;
        self
    }

    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.0.config_file = Some(path.into());
        self
    }

    /// The environment `WIELD_*` settings are read from.
    pub fn env(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.0.env.extend(vars);
        self
    }

    /// `KEY=VALUE` settings, the highest layer.
    pub fn set<S: Into<String>>(mut self, settings: impl IntoIterator<Item = S>) -> Self {
        self.0.set.extend(settings.into_iter().map(Into::into));
        self
    }

    pub fn policy(mut self, policy: PolicyOptions) -> Self {
        self.0.policy = policy;
        self
    }

    pub fn audit(mut self, path: impl Into<PathBuf>) -> Self {
        self.0.audit = Some(path.into());
        self
    }

    pub fn servers(mut self, servers: Servers) -> Self {
        self.0.servers = servers;
        self
    }

    #[cfg(feature = "mcp")]
    pub fn front_end(mut self, front: Arc<dyn wield_mcp::client::FrontEnd>) -> Self {
        self.0.front_end = Some(front);
        self
    }

    /// The front-end's own tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = ToolRef>) -> Self {
        self.0.tools.extend(tools);
        self
    }

    /// Configuration keys the front-end reads itself.
    pub fn config_keys(mut self, keys: &[&'static str]) -> Self {
        self.0.config_keys.extend_from_slice(keys);
        self
    }

    pub fn stop(mut self, stop: CancellationToken) -> Self {
        self.0.stop = Some(stop);
        self
    }

    /// An approval resolver of the front-end's.
    pub fn resolver(mut self, resolver: Arc<dyn approval::Resolver>) -> Self {
        self.0.resolvers.push(resolver);
        self
    }

    /// A path the front-end protects while it runs.
    pub fn guard(mut self, guarded: wield_sandbox::fs::Guarded) -> Self {
        self.0.guarded.push(guarded);
        self
    }

    pub fn build(self) -> RuntimeOptions {
        self.0
    }
}

/// How a [`Runtime::shutdown`] ends the bridged servers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ending {
    /// Each local server gets time to exit on the end of its input, then
    /// after SIGTERM.
    #[default]
    Graceful,
    /// wield is stopping at a signal: SIGTERM at once.
    Hurried,
}

/// Builds an executor from a runtime for one approver, services and event
/// sink (one per session of a long-running front-end).
pub type ExecutorFactory = dyn Fn(Arc<dyn Approver>, Services, EventSink) -> Executor + Send + Sync;

/// Everything a front-end needs to run tool calls, built once. Cheap to
/// clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) workspace: PathBuf,
    pub(crate) config: Arc<Config>,
    pub(crate) services: Services,
    /// The registry and the policy decided over it, as they are now:
    /// replaced whole when a bridged server changes its tools.
    pub(crate) tools: SharedTools,
    audit: Option<PathBuf>,
    /// The Lua approval resolvers (`.wield/resolvers/*.lua`, Lua files in
    /// `approval.auto_approve`) and the front-end's.
    resolvers: Vec<Arc<dyn approval::Resolver>>,
}

impl Runtime {
    /// Loads the configuration layers of `workspace` (built-in defaults,
    /// the user's file, the project's `.wield/config.toml`, the options'
    /// file, environment and settings), registers the built-in tools, the
    /// front-end's, the user's command tools and the bridged MCP servers' (those `options.servers`
    /// names start now, each within its timeout; one that fails is a
    /// warning), and decides the policy.
    pub async fn load(workspace: impl AsRef<Path>, options: RuntimeOptions) -> Result<Self, Error> {
        let workspace = canonical_workspace(workspace.as_ref())?;

        // `batch` runs its calls through this runtime's executors.
        let batch_runtime = crate::batch::RuntimeCell::default();
        // The front-end's own tools, `batch`, and the built-in ones this
        // workspace has (`skill`, when it has skills), registered with the
        // others.
        let mut local_tools = options.tools.clone();
        local_tools.push(Arc::new(crate::batch::Batch::new(Arc::clone(&batch_runtime))));
        // wield's global configuration directory, as the options say: the
        // same for everything this runtime reads there.
        let global_dir = options.global_dir.resolve();
        local_tools.extend(wield_tools::workspace_tools(&workspace, global_dir.as_deref()));
        let mut registry = crate::tool_set::first_registry(&local_tools)
            .map_err(|e| Error::usage(format!("registering the built-in tools: {e}")))?;
        // Lua tools: each file's are registered with the local tools, or
        // left out with a warning (a file that fails, a name taken).
        let lua = crate::lua::load_tools(&workspace, global_dir.as_deref(), &mut registry, &mut local_tools);
        let mut known = KeyTree::core();
        wield_tools::register_config_keys(&mut known);
        crate::bridge::register_config_keys(&mut known);
        crate::lua::register_config_keys(&mut known, &lua.tool_names);
        for r in registry.list() {
            known.insert_under(&r.tool.spec().name, &r.tool.config_keys());
        }
        for key in &options.config_keys {
            known.insert(key);
        }
        let mut loader = ConfigLoader::new().standard_files(&workspace, global_dir.as_deref());
        if let Some(file) = &options.config_file {
            loader = loader.file(file);
        }
        loader = loader.env(options.env.iter().cloned());
        let overrides = overrides_table(&options.set, &known)?;
        if !overrides.is_empty() {
            loader = loader.overrides("--set", overrides);
        }
        let config = loader.load(&known).map_err(Error::usage)?;
        // The user's command tools, from the configuration and tool files.
        let command_tools = wield_tools::command::tools(
            &config,
            &workspace,
            registry
                .list()
                .map(|r| (r.tool.spec().name.as_str(), r.source.as_str())),
        )
        .map_err(Error::usage)?;
        crate::tool_set::register_commands(&mut registry, &command_tools)
            .map_err(|e| Error::usage(format!("registering the command tools: {e}")))?;

        let mut services = Services::new();
        // Saved full outputs stay with the project (and its own tools'
        // roots), not in a temp dir every project's tools can read. The
        // directory is this runtime's, in its services, so that another
        // runtime loaded later in the same process keeps its own.
        services.insert(Arc::new(SavedOutputs::in_dir(workspace.join(".wield").join("outputs"))));
        // What wield executes as policy is out of every tool's reach, as
        // `.wield/` is: a call must not rewrite what approves the next one.
        let mut guarded = options.guarded.clone();
        guarded.extend(crate::lua::policy_files(&config, &workspace).map_err(Error::usage)?);
        guarded.extend(shell_hooks::script_files(&config, &workspace).map_err(Error::usage)?);
        wield_tools::install_services(&mut services, &config, &workspace, &guarded).map_err(Error::usage)?;
        let bridged = crate::bridge::Bridged::from_config(&config, &workspace, &options).map_err(Error::usage)?;
        let lua_sources = crate::lua::add_sources(lua.sources, &mut registry);
        if !bridged.is_empty() || lua_sources {
            bridged.add_sources(&mut registry, &options.servers);
            let stop = options.stop.clone().unwrap_or_default();
            // A stop does not wait for slow servers: their starts are
            // dropped, which stops their processes.
            let loaded = tokio::select! {
                warnings = registry.load_sources() => Some(warnings),
                () = stop.cancelled() => None,
            };
            let Some(warnings) = loaded else {
                bridged.end(Ending::Hurried).await;
                return Err(Error::Interrupted);
            };
            for warning in warnings {
                crate::lua::report_source_warning(&warning);
            }
            crate::lua::keep_source_tools(&registry, &mut local_tools);
        }
        bridged.warn_left_out(&mut registry);
        bridged.install(&mut services);
        let mut resolvers = crate::lua::install(&mut services, &config, &workspace).map_err(Error::usage)?;
        resolvers.extend(options.resolvers);
        let policy = PolicyBuilder::from_config(&config, &options.policy)
            .map_err(Error::usage)?
            .build(&registry);
        let config = Arc::new(config);
        let tools = SharedTools::new(
            ToolSet {
                registry: Arc::new(registry),
                policy: Arc::new(policy),
            },
            Arc::clone(&config),
            options.policy,
            local_tools,
            command_tools,
        );
        let audit = options.audit.or_else(|| config.audit.file.clone());
        let inner = Arc::new(Inner {
            workspace,
            config,
            services,
            tools,
            audit,
            resolvers,
        });
        let _ = batch_runtime.set(Arc::downgrade(&inner));
        Ok(Self { inner })
    }

    /// Ends what the runtime started that would outlive it: the bridged
    /// MCP servers (wield's sessions with `url` servers end with their HTTP
    /// `DELETE`; local servers are stopped by the end of their input, then
    /// SIGTERM, then SIGKILL, each group whole). `ending` says whether to
    /// give them their grace. Call it once a front-end is done with the
    /// runtime, from every clone's owner that may be last; the runtime
    /// stays usable (a later call of a bridged tool starts its server
    /// again). The background processes of a session end with the session
    /// ([`wield_core::end_session`]).
    pub async fn shutdown(&self, ending: Ending) {
        crate::bridge::shutdown(&self.inner.services, ending).await;
    }

    /// The workspace, canonical.
    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// The merged configuration.
    pub fn config(&self) -> &Arc<Config> {
        &self.inner.config
    }

    /// The services tools find in their context (file confinement, command
    /// runner, bridged MCP servers, where cut outputs are saved, …).
    pub fn services(&self) -> &Services {
        &self.inner.services
    }

    /// The registry and its policy, as they are now.
    pub fn tools(&self) -> &SharedTools {
        &self.inner.tools
    }

    /// This runtime with `tools` instead of its own tool set: the same
    /// configuration, services, hooks, audit log and approval resolvers.
    pub(crate) fn with_tools(&self, tools: SharedTools) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                workspace: inner.workspace.clone(),
                config: Arc::clone(&inner.config),
                services: inner.services.clone(),
                tools,
                audit: inner.audit.clone(),
                resolvers: inner.resolvers.clone(),
            }),
        }
    }

    /// The bridged MCP servers.
    #[cfg(feature = "mcp")]
    pub fn mcp(&self) -> Option<Arc<wield_mcp::McpClients>> {
        self.inner.services.get::<wield_mcp::McpClients>()
    }

    /// The tools a model sees with their schemas (the policy's `in` tools;
    /// deferred ones are listed by name only), in name order.
    pub fn visible(&self) -> Vec<Arc<Registered>> {
        self.inner.tools.current().visible()
    }

    /// Whether commands run in a process sandbox: the command runner's
    /// resolved `[sandbox]` (a configured backend that does not work here
    /// means no sandbox, and commands fail saying why).
    pub fn sandboxed(&self) -> bool {
        self.inner
            .services
            .get::<wield_tools::shell::ShellService>()
            .is_some_and(|s| s.sandbox_active())
    }

    /// A new session whose calls `driver` chooses.
    pub fn session(&self, id: impl Into<String>, driver: wield_core::Driver) -> Arc<Session> {
        Arc::new(Session::driven_by(id, driver))
    }

    /// An executor with this runtime's services and no event sink, asking
    /// `approver` when a call needs approval.
    pub fn executor(&self, approver: Arc<dyn Approver>) -> Result<Executor, Error> {
        let make = self.executor_factory()?;
        Ok(make(approver, self.inner.services.clone(), EventSink::default()))
    }

    /// Builds executors that share this runtime's registry, policy, hooks and
    /// audit log and differ in approver, services and event sink. The
    /// approval chain: the configuration's rules, remembered approvals
    /// (read again whenever their files change, so a pattern added while a
    /// session runs applies to its next call), the paths that always ask,
    /// and the sandbox.
    pub fn executor_factory(&self) -> Result<Arc<ExecutorFactory>, Error> {
        let inner = &self.inner;
        let hooks = shell_hooks::from_config(&inner.config)?;
        let audit = match &inner.audit {
            Some(path) => Some(Arc::new(AuditLog::open(path).map_err(|source| Error::Io {
                what: "opening audit log",
                path: path.clone(),
                source,
            })?)),
            None => None,
        };
        let tools = inner.tools.clone();
        let config = Arc::clone(&inner.config);
        let workspace = inner.workspace.clone();
        let sandboxed = self.sandboxed();
        let ask_paths = wield_tools::fs::ask_path_globs(&inner.config, &inner.workspace).map_err(Error::usage)?;
        let resolvers = inner.resolvers.clone();
        let approval_config = crate::lua::without_lua_entries(&inner.config.approval);
        let saved_outputs = inner.services.get::<SavedOutputs>();
        let global_dir = inner.config.global_dir.clone();
        Ok(Arc::new(
            move |approver: Arc<dyn Approver>, mut services: Services, events: EventSink| {
                // Services a front-end made itself still save cut outputs in
                // this runtime's workspace, not the temp dir.
                if services.get::<SavedOutputs>().is_none()
                    && let Some(saved) = &saved_outputs
                {
                    services.insert(Arc::clone(saved));
                }
                // The tool set as it is now; `load_tools` reads the policy
                // from the services.
                let current = tools.current();
                let registry = Arc::clone(&current.registry);
                let policy = Arc::clone(&current.policy);
                services.insert(Arc::clone(&policy));
                let store = Arc::new(FileApprovalStore::new(&workspace, global_dir.as_deref()));
                let mut chain = approval::standard_chain(&approval_config, Vec::new());
                for r in &resolvers {
                    chain.add(Arc::clone(r));
                }
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
                // `requires_approval = true` asks above every approve rule.
                let below = chain.clone();
                chain.add(Arc::new(wield_tools::command::AlwaysAskResolver::new(
                    Arc::clone(&registry),
                    below,
                )));
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
        ))
    }
}

/// `workspace`, canonical, when it is a directory (a usage error saying
/// which, otherwise).
pub fn canonical_workspace(workspace: &Path) -> Result<PathBuf, Error> {
    let canonical = std::fs::canonicalize(workspace)
        .map_err(|e| Error::usage(format!("workspace {}: {e}", workspace.display())))?;
    if !canonical.is_dir() {
        return Err(Error::usage(format!(
            "workspace {} is not a directory",
            canonical.display()
        )));
    }
    Ok(canonical)
}

/// `KEY=VALUE` settings as a configuration layer. Each is checked alone
/// first, so that a mistake names the key as it was typed: the whole of
/// `foo.bar` (not its first unknown part), and `executor.max_parallel` (not
/// the section whose value failed).
fn overrides_table(sets: &[String], known: &KeyTree) -> Result<toml::Table, Error> {
    use wield_core::config::{ConfigError, parse_scalar, set_path};
    let mut table = toml::Table::new();
    for s in sets {
        let (key, value) = match s.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => (key.trim(), parse_scalar(value.trim())),
            _ => return Err(Error::usage(format!("--set expects KEY=VALUE, got `{s}`"))),
        };
        let origin = format!("--set {s}");
        let mut one = toml::Table::new();
        set_path(&mut one, key, value.clone()).map_err(Error::usage)?;
        match known.check(&one, &origin) {
            Err(ConfigError::UnknownKey { .. }) => {
                return Err(Error::usage(ConfigError::UnknownKey {
                    path: key.to_owned(),
                    origin,
                    suggestion: known.closest_key(key),
                }));
            }
            Err(e) => return Err(Error::usage(e)),
            Ok(()) => {}
        }
        // The core's sections are typed here; the other keys where they
        // are read, whose errors name them.
        if let Err(ConfigError::Invalid { message, .. }) = Config::from_table(one) {
            return Err(Error::usage(format!(
                "invalid value for `{key}` in {origin}: {message}"
            )));
        }
        set_path(&mut table, key, value).map_err(|e| Error::usage(format!("{origin}: {e}")))?;
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wield_core::config::GlobalDir;

    /// Options with no global configuration directory: a test never reads
    /// the settings of whoever runs it.
    fn isolated() -> RuntimeOptions {
        RuntimeOptions {
            global_dir: GlobalDir::Nowhere,
            ..RuntimeOptions::default()
        }
    }

    #[test]
    fn the_builder_sets_each_field_and_adds_to_the_lists() {
        let options = RuntimeOptions::builder()
            .set(["a=1"])
            .set(["b=2"])
            .config_keys(&["x.y"])
            .servers(Servers::None)
            .audit("/tmp/audit")
            .guard(wield_sandbox::fs::Guarded::new("doc.chat", "a document"))
            .build();
        assert_eq!(options.set, ["a=1", "b=2"]);
        assert_eq!(options.config_keys, ["x.y"]);
        assert_eq!(options.servers, Servers::None);
        assert_eq!(options.audit.as_deref(), Some(Path::new("/tmp/audit")));
        assert_eq!(options.guarded.len(), 1);
        assert!(options.tools.is_empty() && options.config_file.is_none());
    }

    /// Whether a live process has `VAR=value` in its environment.
    #[cfg(feature = "mcp")]
    fn running_with(var: &str) -> bool {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return false;
        };
        dir.filter_map(Result::ok).any(|e| {
            let live = std::fs::read_to_string(e.path().join("stat"))
                .is_ok_and(|s| !s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
            live && std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == var.as_bytes()))
        })
    }

    /// A front-end that is done with a runtime ends its bridged servers
    /// itself, whoever else still holds the runtime: gracefully (the end
    /// of their input), and the runtime stays usable.
    #[cfg(feature = "mcp")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_stops_the_bridged_servers_while_the_runtime_lives() {
        let deps = std::env::var_os("WIELD_TEST_DEPS").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps"),
            PathBuf::from,
        );
        let python = deps.join("venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run `bash scripts/test-deps.sh`",
            python.display()
        );
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wield-mcp/tests/peers/server.py");
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("PEER_VALUE=shutdown-{}", std::process::id());
        std::fs::create_dir_all(dir.path().join(".wield")).unwrap();
        std::fs::write(
            dir.path().join(".wield/config.toml"),
            format!(
                "[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ PEER_VALUE = {:?} }}\ntimeout = \"30s\"\n",
                python.display().to_string(),
                script.display().to_string(),
                marker.trim_start_matches("PEER_VALUE="),
            ),
        )
        .unwrap();
        let rt = Runtime::load(dir.path(), isolated()).await.unwrap();
        let held = rt.clone();
        assert!(rt.visible().iter().any(|t| t.tool.spec().name.starts_with("mcp__py__")));
        assert!(running_with(&marker), "the server did not start");
        rt.shutdown(Ending::Graceful).await;
        assert!(!running_with(&marker), "the server outlived the shutdown");
        // Still usable: the tools are known, a shutdown again does nothing.
        assert!(
            held.visible()
                .iter()
                .any(|t| t.tool.spec().name.starts_with("mcp__py__"))
        );
        held.shutdown(Ending::Hurried).await;
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn a_call_starts_only_the_servers_it_needs() {
        assert_eq!(Servers::for_tool("read"), Servers::None);
        assert_eq!(Servers::for_tool("load_tools"), Servers::All);
        assert_eq!(
            Servers::for_tool("mcp__everything__echo"),
            Servers::Only("everything".into())
        );
        assert!(Servers::Only("a".into()).starts("a") && !Servers::Only("a".into()).starts("b"));
    }

    #[tokio::test]
    async fn mistakes_in_the_options_or_the_configuration_are_usage_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Runtime::load(dir.path().join("nope"), isolated()).await;
        assert!(missing.is_err_and(|e| e.is_usage() && e.to_string().contains("nope")));

        let set = RuntimeOptions {
            set: vec!["approval.auto_approve".into()],
            ..isolated()
        };
        let bad_set = Runtime::load(dir.path(), set).await;
        assert!(bad_set.is_err_and(|e| e.is_usage() && e.to_string().contains("KEY=VALUE")));

        std::fs::create_dir_all(dir.path().join(".wield")).unwrap();
        std::fs::write(
            dir.path().join(".wield/config.toml"),
            "[hooks.x]\nevent = \"during\"\ncommand = \"true\"\n",
        )
        .unwrap();
        let rt = Runtime::load(dir.path(), isolated()).await.unwrap();
        let hooks = rt.executor(Arc::new(approval::HeadlessApprover));
        assert!(hooks.is_err_and(|e| e.is_usage() && e.to_string().contains("hooks.x.event")));
    }

    #[tokio::test]
    async fn a_front_end_s_own_tools_are_registered_and_visible() {
        let dir = tempfile::tempdir().unwrap();
        let options = RuntimeOptions {
            tools: vec![Arc::new(shout())],
            ..isolated()
        };
        let rt = Runtime::load(dir.path(), options).await.unwrap();
        assert!(rt.visible().iter().any(|r| r.tool.spec().name == "shout"));
        assert_eq!(rt.workspace(), std::fs::canonicalize(dir.path()).unwrap());
    }

    /// Regression: the saved-output directory was a process global set by
    /// the last `Runtime::load`, so a call in the first of two workspaces
    /// saved its full output into the second's `.wield/outputs`.
    #[tokio::test]
    async fn each_runtime_saves_cut_outputs_in_its_own_workspace() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let options = || RuntimeOptions {
            tools: vec![Arc::new(loud())],
            ..isolated()
        };
        let first = Runtime::load(a.path(), options()).await.unwrap();
        std::fs::write(first.workspace().join("many.txt"), loud_text()).unwrap();
        let second = Runtime::load(b.path(), options()).await.unwrap();
        let (first_outputs, second_outputs) = (
            first.workspace().join(".wield/outputs"),
            second.workspace().join(".wield/outputs"),
        );

        let executor = first.executor(Arc::new(approval::YesApprover)).unwrap();
        let session = first.session("s", wield_core::Driver::Model);
        let cancel = CancellationToken::new();
        // Cut by the executor's result-size guard, by the tool through its
        // context, and by a file tool's listing.
        let calls = [
            ("loud", serde_json::json!({ "cut": false }), Some(loud_text())),
            ("loud", serde_json::json!({ "cut": true }), Some(loud_text())),
            (
                "grep",
                serde_json::json!({ "pattern": "^line", "path": "many.txt", "limit": 5000 }),
                None,
            ),
        ];
        for (tool, input, full) in calls {
            let call = wield_core::Call::new("c", tool, input.clone());
            let result = executor.run_one(call, &session, &cancel).await;
            assert!(result.success, "{tool} {input}: {result:?}");
            assert_eq!(
                result.metadata.get("truncated"),
                Some(&serde_json::Value::Bool(true)),
                "{tool} {input}: {:?}",
                result.metadata
            );
            let saved = result.metadata.get("full_output").and_then(|v| v.as_str());
            let saved = std::path::Path::new(saved.unwrap_or_else(|| panic!("{tool}: {:?}", result.metadata)));
            assert!(
                saved.starts_with(&first_outputs),
                "{tool} {input}: saved in {}",
                saved.display()
            );
            assert!(result.output.contains(&saved.display().to_string()));
            // The tool's own text, or grep's listing of the 3000 lines.
            let text = std::fs::read_to_string(saved).unwrap();
            match full {
                Some(full) => assert_eq!(text, full, "{tool} {input}"),
                None => assert_eq!(text.lines().count(), 3000, "{tool}"),
            }
        }
        assert!(!second_outputs.exists(), "the second workspace got outputs");

        // The second runtime's own calls stay in the second workspace.
        let executor = second.executor(Arc::new(approval::YesApprover)).unwrap();
        let call = wield_core::Call::new("c", "loud", serde_json::json!({ "cut": true }));
        let result = executor
            .run_one(call, &second.session("s", wield_core::Driver::Model), &cancel)
            .await;
        let saved = result.metadata["full_output"].as_str().unwrap_or_default();
        assert!(std::path::Path::new(saved).starts_with(&second_outputs), "{saved}");
    }

    /// Each runtime reads the global configuration directory its options
    /// name, not the process's `HOME`: two in one process keep their own
    /// settings and skills, and each protects its own directory from the
    /// file tools.
    #[tokio::test]
    async fn each_runtime_has_its_own_global_configuration_directory() {
        let ws = tempfile::tempdir().unwrap();
        // Both in the workspace, so that only protection keeps a file tool
        // out of them.
        let (a, b) = (ws.path().join("global-a"), ws.path().join("global-b"));
        for (dir, timeout, skill) in [(&a, 11, "alpha"), (&b, 22, "beta")] {
            let skill_dir = dir.join("skills").join(skill);
            std::fs::create_dir_all(&skill_dir).unwrap();
            std::fs::write(dir.join("config.toml"), format!("[bash]\ntimeout = {timeout}\n")).unwrap();
            std::fs::write(
                skill_dir.join("SKILL.md"),
                format!("---\nname: {skill}\ndescription: the {skill} skill\n---\nDo {skill}.\n"),
            )
            .unwrap();
        }
        let load = |dir: GlobalDir| Runtime::load(ws.path(), RuntimeOptions::builder().global_dir(dir).build());
        let first = load(GlobalDir::At(a.clone())).await.unwrap();
        let second = load(GlobalDir::At(b.clone())).await.unwrap();
        let neither = load(GlobalDir::Nowhere).await.unwrap();
        let skills = |rt: &Runtime| {
            rt.visible()
                .iter()
                .find(|r| r.tool.spec().name == "skill")
                .map(|r| r.tool.spec().description.clone())
                .unwrap_or_default()
        };
        for (rt, timeout, mine, theirs) in [(&first, 11, "alpha", "beta"), (&second, 22, "beta", "alpha")] {
            assert_eq!(
                rt.config().value("bash.timeout").and_then(toml::Value::as_integer),
                Some(timeout)
            );
            assert!(
                skills(rt).contains(mine) && !skills(rt).contains(theirs),
                "{}",
                skills(rt)
            );
        }
        assert_eq!(neither.config().value("bash.timeout"), None);
        assert_eq!(neither.config().global_dir, None);
        assert!(neither.visible().iter().all(|r| r.tool.spec().name != "skill"));

        // A runtime's file tools refuse to write its own global directory,
        // and only its own.
        let write = |rt: &Runtime, path: std::path::PathBuf| {
            let rt = rt.clone();
            async move {
                let executor = rt.executor(Arc::new(approval::YesApprover)).unwrap();
                let input = serde_json::json!({ "path": path, "content": "x = 1\n" });
                executor
                    .run_one(
                        wield_core::Call::new("c", "write", input),
                        &rt.session("s", wield_core::Driver::Person),
                        &CancellationToken::new(),
                    )
                    .await
            }
        };
        let refused = write(&first, a.join("planted.toml")).await;
        assert!(
            !refused.success && refused.error.as_deref().unwrap_or_default().contains("protected"),
            "{refused:?}"
        );
        assert!(!a.join("planted.toml").exists());
        let written = write(&second, a.join("planted.toml")).await;
        assert!(written.success, "{written:?}");
        let refused = write(&second, b.join("planted.toml")).await;
        assert!(
            !refused.success && refused.error.as_deref().unwrap_or_default().contains("protected"),
            "{refused:?}"
        );
    }

    /// 3000 numbered lines: more than the default 2000-line limit.
    fn loud_text() -> String {
        (1..=3000).map(|i| format!("line {i}\n")).collect()
    }

    /// A front-end's tool that prints more than the output limits: as it
    /// is (`cut` false, for the executor to cut), or cut by itself through
    /// its context.
    fn loud() -> FrontEndTool {
        let schema = serde_json::json!({"type": "object", "properties": {"cut": {"type": "boolean"}}});
        FrontEndTool::new("loud", "Print 3000 lines", schema, |input, ctx| {
            if input["cut"] == true {
                let cut = ctx.truncate_head(&loud_text());
                let mut result = wield_core::ToolResult::ok(cut.text.clone());
                result.metadata.extend(cut.metadata());
                result
            } else {
                wield_core::ToolResult::ok(loud_text())
            }
        })
    }

    /// A front-end's tool that answers at once.
    fn shout() -> FrontEndTool {
        let schema = serde_json::json!({"type": "object"});
        FrontEndTool::new("shout", "Upper-case a text", schema, |_, _| {
            wield_core::ToolResult::ok("HEY")
        })
    }

    /// A read-only tool of the front-end's own, answering with `run`.
    struct FrontEndTool {
        base: wield_core::ToolBase,
        run: fn(&serde_json::Value, &wield_core::Context) -> wield_core::ToolResult,
    }

    impl FrontEndTool {
        fn new(
            name: &str,
            description: &str,
            schema: serde_json::Value,
            run: fn(&serde_json::Value, &wield_core::Context) -> wield_core::ToolResult,
        ) -> Self {
            let traits = wield_core::ToolTraits {
                read_only: true,
                ..wield_core::ToolTraits::default()
            };
            Self {
                base: wield_core::ToolBase::new(wield_core::ToolSpec::new(name, description, schema), traits),
                run,
            }
        }
    }

    #[async_trait::async_trait]
    impl wield_core::Tool for FrontEndTool {
        fn base(&self) -> &wield_core::ToolBase {
            &self.base
        }
        async fn execute(&self, input: serde_json::Value, ctx: &wield_core::Context) -> wield_core::ToolResult {
            (self.run)(&input, ctx)
        }
    }
}

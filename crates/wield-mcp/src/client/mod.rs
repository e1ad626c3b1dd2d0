//! External MCP servers as wield tools.
//!
//! Each enabled `[mcp.servers.NAME]` becomes an async registry source
//! ([`McpClients::add_sources`]): at start-up every server is started at
//! once, each bounded by its `timeout`; a server that fails to start, hangs
//! or lists no usable tools becomes a registry warning and its tools are
//! simply absent. Its state and the reason stay visible in
//! [`McpClients::status`] (`wield mcp list`).
//!
//! Tools are named `mcp__NAME__tool` ([`bridge::tool_name`]); a call that
//! finds its server gone (crashed, closed) starts it again first. A local
//! server's exit is seen by waiting on its process, not only by its output
//! closing, and the calls it leaves waiting fail at once; a local server is
//! stopped as the MCP lifecycle asks, end of input first (`process`).
//!
//! A long-running front-end (`wield mcp serve`) [`McpClients::watch`]es the
//! servers: a server's `notifications/tools/list_changed`, or a restart,
//! has its tools listed again, and a server that failed to start is tried
//! again in the background (after 1 s, then twice as long each time, at
//! most every minute); each change of the tool set calls the front-end
//! back, and [`McpClients::tools`] has the tools as they are now.
//!
//! A server may ask its client for a completion (sampling) or for its user's
//! input (elicitation). wield refuses both with a "not supported" error
//! unless the front-end hands [`McpClients::with_front_end`] a [`FrontEnd`]
//! that answers them.

mod bridge;
mod callers;
mod config;
mod connect;
mod exit;
mod http_link;
mod listing;
mod process;
mod progress;
mod raw_result;
mod result;
mod stderr;
mod stdio_link;

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;
use wield_core::{Registry, SourceMeta, ToolRef};

pub use bridge::{McpTool, tool_name, tool_names};
pub use callers::{RouteToCallers, SessionFrontEnd};
pub use config::{CONFIG_KEYS, DEFAULT_TIMEOUT, ServerConfig, Transport};
pub use connect::{BridgeClient, FrontEnd, MAX_FORWARDED};
pub use exit::ClientsExit;
pub use result::map_result;

use connect::{Connection, Link, StartError, connect};

/// Where a configured server stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// `enabled = false`.
    Disabled,
    /// Not started yet, or starting.
    Starting,
    /// Connected; its tools are registered.
    Ready,
    /// Failed to start; its tools are absent.
    Failed,
    /// It was ready and has exited since; the next call restarts it.
    Exited,
}

impl ServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Exited => "exited",
        }
    }
}

/// One line of `wield mcp list`.
#[derive(Clone, Debug, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub transport: String,
    pub state: ServerState,
    /// Tools registered from this server.
    pub tools: usize,
    pub deferred: bool,
    /// Why it failed or exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tools it lists that wield leaves out, and why; for a disabled
    /// server, that it is disabled (so an unknown-tool error says so).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The server's `instructions` (how to use its tools, for the model's
    /// prompt), cut at [`MAX_INSTRUCTIONS`] bytes, once it has started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// The most of a server's `instructions` kept (as Claude Code keeps).
pub const MAX_INSTRUCTIONS: usize = 2048;

/// What a watching front-end is called with when the tool set changed.
type OnChange = Arc<dyn Fn() + Send + Sync>;

/// Longest wait between two tries of a server that failed to start.
const RETRY_MAX: Duration = Duration::from_secs(60);

/// One configured server and its connection.
pub(crate) struct ServerEntry {
    pub(crate) config: ServerConfig,
    /// Where it stands, and why it failed or exited.
    status: Mutex<(ServerState, Option<String>)>,
    conn: tokio::sync::Mutex<Option<Connection>>,
    front: Option<Arc<dyn FrontEnd>>,
    /// Its tools as last listed, with their wield names. Not the wield
    /// tools themselves: they hold their server, and a front-end's tool set
    /// holds them, so the server holding them would be a cycle that keeps
    /// the server's process alive past wield's exit.
    tools: Mutex<Vec<Listed>>,
    /// The process groups of every local server of its [`McpClients`].
    groups: Arc<process::ProcessGroups>,
    /// Set by [`McpClients::watch`], shared by every server.
    on_change: Arc<OnceLock<OnChange>>,
    /// (a listing runs, another is wanted after it).
    relisting: Mutex<(bool, bool)>,
    /// Every name given to a tool of this server: server name → wield name.
    names: Mutex<std::collections::HashMap<String, String>>,
    /// Why tools of its last listing were left out.
    warnings: Mutex<Vec<String>>,
    /// What it said to do with its tools, from its last start.
    instructions: Mutex<Option<String>>,
    /// Held while its tools are listed: one listing at a time, so the last
    /// one asked for is the last one kept, and each sees the server's raw
    /// output whole (for what the SDK's types drop).
    listing: tokio::sync::Mutex<()>,
}

impl ServerEntry {
    fn set(&self, state: ServerState, error: Option<String>) {
        *self.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = (state, error);
    }

    fn state(&self) -> ServerState {
        self.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner).0
    }

    fn set_warnings(&self, warnings: Vec<String>) {
        *self.warnings.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = warnings;
    }

    fn set_tools(&self, tools: Vec<Listed>) {
        *self.tools.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = tools;
    }

    fn watched(&self) -> bool {
        self.on_change.get().is_some()
    }

    /// List the tools again in the background (a watching front-end only),
    /// and call it back when they changed. One listing at a time: requests
    /// that come while one runs make one more run after it, so the last
    /// listing kept is never older than the last request.
    fn relist_later(self: &Arc<Self>) {
        if !self.watched() {
            return;
        }
        {
            let mut r = self.relisting.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            r.1 = true;
            if r.0 {
                return;
            }
            r.0 = true;
        }
        let entry = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                {
                    let mut r = entry
                        .relisting
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if !r.1 {
                        r.0 = false;
                        return;
                    }
                    r.1 = false;
                }
                match list_tools(&entry).await {
                    Ok(tools) => entry.replace_tools(tools),
                    Err(e) => tracing::warn!("{e}"),
                }
            }
        });
    }

    /// Keep `tools` as the server's tools; a change is told to the front-end.
    fn replace_tools(&self, tools: Vec<Listed>) {
        let changed = *self.tools.lock().unwrap_or_else(std::sync::PoisonError::into_inner) != tools;
        self.set_tools(tools);
        if changed && let Some(call) = self.on_change.get() {
            tracing::info!("MCP server `{}` changed its tools", self.config.name);
            call();
        }
    }

    async fn start(self: &Arc<Self>) -> Result<Connection, String> {
        let name = &self.config.name;
        // The server's `notifications/tools/list_changed` has it listed again.
        let weak: Weak<ServerEntry> = Arc::downgrade(self);
        let on_list_changed: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
            if let Some(entry) = weak.upgrade() {
                entry.relist_later();
            }
        });
        // The start is bounded here and not only by the registry: a local
        // server that does not make it in time is stopped (stdin closed,
        // then signals).
        match connect(
            &self.config,
            self.front.clone(),
            Some(on_list_changed),
            self.config.timeout,
            Arc::clone(&self.groups),
        )
        .await
        {
            Ok(c) => Ok(c),
            Err(StartError::Failed(e)) => Err(format!("MCP server `{name}` failed to start: {e}")),
            Err(StartError::TimedOut) => Err(format!(
                "MCP server `{name}` did not complete its start within {} (raise mcp.servers.{name}.timeout if it is slow)",
                wield_core::human_duration(self.config.timeout)
            )),
        }
    }

    /// The server's connection, restarting the server when it has exited.
    pub(crate) async fn link(self: &Arc<Self>) -> Result<Link, String> {
        let mut conn = self.conn.lock().await;
        let mut restart = false;
        if let Some(c) = conn.take() {
            if c.is_alive() {
                let link = c.link();
                *conn = Some(c);
                return Ok(link);
            }
            let why = c.exit_reason();
            tracing::warn!("MCP server `{}` {why}; restarting it", self.config.name);
            self.set(ServerState::Exited, Some(why));
            c.close().await;
            restart = true;
        }
        match self.start().await {
            Ok(c) => {
                let link = c.link();
                *self
                    .instructions
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = c.instructions(MAX_INSTRUCTIONS);
                *conn = Some(c);
                self.set(ServerState::Ready, None);
                drop(conn);
                if restart {
                    // A new process may offer other tools.
                    self.relist_later();
                }
                Ok(link)
            }
            Err(e) => {
                self.set(ServerState::Exited, Some(e.clone()));
                Err(e)
            }
        }
    }

    /// Drop the connection after a transport failure or the server's exit,
    /// stopping what is left of the server, so the next call starts it
    /// again.
    pub(crate) async fn forget(&self, why: &str) {
        let mut conn = self.conn.lock().await;
        if let Some(c) = conn.take() {
            self.set(ServerState::Exited, Some(why.to_owned()));
            c.close().await;
        }
    }
}

/// The configured external servers.
pub struct McpClients {
    servers: Vec<Arc<ServerEntry>>,
    /// Servers of [`McpClients::start_in_background`] whose first start has
    /// not ended yet.
    starting: tokio::sync::watch::Sender<usize>,
    /// What is left to do for its servers on the way out.
    exit: ClientsExit,
}

impl McpClients {
    /// The servers of `configs`, with no front-end: sampling and
    /// elicitation requests are refused.
    pub fn new(configs: Vec<ServerConfig>) -> Arc<Self> {
        Self::with_front_end(configs, None)
    }

    /// The servers of `configs`, whose sampling and elicitation requests go
    /// to `front` (when it answers them).
    pub fn with_front_end(configs: Vec<ServerConfig>, front: Option<Arc<dyn FrontEnd>>) -> Arc<Self> {
        let on_change = Arc::new(OnceLock::new());
        let groups = Arc::new(process::ProcessGroups::default());
        let servers = configs
            .into_iter()
            .map(|config| {
                let state = if config.enabled {
                    ServerState::Starting
                } else {
                    ServerState::Disabled
                };
                Arc::new(ServerEntry {
                    config,
                    status: Mutex::new((state, None)),
                    conn: tokio::sync::Mutex::new(None),
                    front: front.clone(),
                    groups: Arc::clone(&groups),
                    tools: Mutex::new(Vec::new()),
                    on_change: Arc::clone(&on_change),
                    relisting: Mutex::new((false, false)),
                    names: Mutex::new(std::collections::HashMap::new()),
                    warnings: Mutex::new(Vec::new()),
                    instructions: Mutex::new(None),
                    listing: tokio::sync::Mutex::new(()),
                })
            })
            .collect::<Vec<Arc<ServerEntry>>>();
        let url_servers = servers
            .iter()
            .filter(|e| matches!(e.config.transport, Transport::Http { .. }))
            .map(Arc::downgrade)
            .collect();
        Arc::new(Self {
            servers,
            starting: tokio::sync::watch::Sender::new(0),
            exit: ClientsExit::new(groups, url_servers),
        })
    }

    /// What is left to do for these servers on wield's way out, for the
    /// front-end to keep past the clients ([`ClientsExit::end_sessions`],
    /// [`ClientsExit::stop_stragglers`]).
    pub fn exit(&self) -> ClientsExit {
        self.exit.clone()
    }

    /// Ends every server's connection, all at once: wield's sessions with
    /// `url` servers with their HTTP `DELETE` (within `limit`), and local
    /// servers by the end of their input, then SIGTERM, then SIGKILL, each
    /// step with its grace (none after [`ClientsExit::hurry`]). A call
    /// still running on a server ends with it; a later call starts it
    /// again.
    pub async fn shutdown(&self, limit: std::time::Duration) {
        let locals = futures::future::join_all(
            self.servers
                .iter()
                .filter(|e| !matches!(e.config.transport, Transport::Http { .. }))
                .map(|e| async move {
                    let conn = e.conn.lock().await.take();
                    if let Some(c) = conn {
                        c.end().await;
                    }
                }),
        );
        // A connection held by a server that is still starting is not
        // waited for past its stop's own bound: the groups' kill
        // ([`ClientsExit::stop_stragglers`]) ends what is left.
        let locals = tokio::time::timeout(limit + 2 * process::EXIT_GRACE, locals);
        let _ = futures::future::join(locals, self.exit.end_sessions(limit)).await;
    }

    /// For a long-running front-end: from now on, list a server's tools
    /// again when it says they changed or when it was restarted, try the
    /// servers that failed to start again in the background, and call
    /// `on_change` whenever the tool set changed ([`McpClients::tools`]).
    /// Only the first call counts.
    pub fn watch(self: &Arc<Self>, on_change: impl Fn() + Send + Sync + 'static) {
        let Some(first) = self.servers.first() else {
            return;
        };
        if first.on_change.set(Arc::new(on_change)).is_err() {
            return;
        }
        for entry in self
            .servers
            .iter()
            .filter(|e| e.config.enabled && e.state() == ServerState::Failed)
        {
            let weak = Arc::downgrade(entry);
            tokio::spawn(retry(weak));
        }
    }

    /// Every tool of every server that is ready, as `(source, tool)` with
    /// the source named as in [`McpClients::add_sources`] (`mcp:NAME`).
    pub fn tools(&self) -> Vec<(String, ToolRef)> {
        self.servers
            .iter()
            .filter(|e| e.config.enabled)
            .flat_map(|e| {
                let source = format!("mcp:{}", e.config.name);
                let listed = e
                    .tools
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone();
                wield_tools_of(e, listed)
                    .into_iter()
                    .map(|t| (source.clone(), t))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Describe each server's source (`mcp:NAME`) to `registry`: its tools
    /// are loaded by the server's name and deferred when the server's
    /// `deferred` setting says so. A registry built anew (a tool-set
    /// rebuild) is described again.
    pub fn describe_sources(&self, registry: &mut Registry) {
        for entry in &self.servers {
            let name = &entry.config.name;
            registry.describe_source(
                format!("mcp:{name}"),
                SourceMeta {
                    label: Some(name.clone()),
                    deferred_by: entry
                        .config
                        .deferred
                        .then(|| format!("mcp.servers.{name}.deferred = true")),
                },
            );
        }
    }

    /// Queue every enabled server that `start` picks (by name) as an async
    /// source of `registry`; they start in [`Registry::load_sources`]. The
    /// registry's own deadline is a little later than the server's, so the
    /// server's own, more precise message is what gets reported.
    pub fn add_sources(self: &Arc<Self>, registry: &mut Registry, start: impl Fn(&str) -> bool) {
        self.describe_sources(registry);
        for entry in self
            .servers
            .iter()
            .filter(|e| e.config.enabled && start(&e.config.name))
        {
            let entry = Arc::clone(entry);
            let deadline = entry.config.timeout + Duration::from_secs(1);
            registry.add_source(
                format!("mcp:{}", entry.config.name),
                deadline,
                Box::new(move |register, done| {
                    tokio::spawn(async move {
                        match list_tools(&entry).await {
                            Ok(listed) => {
                                entry.set_tools(listed.clone());
                                for t in wield_tools_of(&entry, listed) {
                                    register.register(t);
                                }
                                done.done(Ok(()));
                            }
                            Err(e) => {
                                entry.set(ServerState::Failed, Some(e.clone()));
                                done.done(Err(e));
                            }
                        }
                    });
                }),
            );
        }
    }

    /// Start every enabled server that `start` picks without waiting for
    /// any (a long-running front-end that should answer at once): each one
    /// that comes up calls back the [`McpClients::watch`] callback with its
    /// tools; one that fails is a warning and is tried again in the
    /// background. Call [`McpClients::watch`] first.
    pub fn start_in_background(self: &Arc<Self>, start: impl Fn(&str) -> bool) {
        let picked: Vec<&Arc<ServerEntry>> = self
            .servers
            .iter()
            .filter(|e| e.config.enabled && start(&e.config.name))
            .collect();
        self.starting.send_modify(|n| *n += picked.len());
        for entry in picked {
            let weak = Arc::downgrade(entry);
            // Counted down however the start ends, a panic included, so
            // `started` cannot wait for ever.
            let counted = StartCounted(self.starting.clone());
            tokio::spawn(async move {
                let Some(e) = weak.upgrade() else { return };
                match list_tools(&e).await {
                    Ok(tools) => e.set_tools(tools),
                    Err(why) => {
                        tracing::warn!("{why}");
                        e.set(ServerState::Failed, Some(why));
                    }
                }
                // The front-end's tool set takes the tools, or says why they
                // are absent or left out, even when there are none.
                if let Some(call) = e.on_change.get() {
                    call();
                }
                drop(counted);
                if e.state() == ServerState::Failed {
                    drop(e);
                    retry(weak).await;
                }
            });
        }
    }

    /// When every server of [`McpClients::start_in_background`] has
    /// started or failed its first start (each within its `timeout`).
    pub async fn started(&self) {
        let mut rx = self.starting.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Every configured server, in name order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|e| {
                let (state, error) = e
                    .status
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone();
                let tools = e.tools.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len();
                let mut warnings = e
                    .warnings
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone();
                if !e.config.enabled {
                    let n = &e.config.name;
                    warnings.push(format!(
                        "MCP server `{n}` is disabled in the config (mcp.servers.{n}.enabled = false), so its tools \
                         (mcp__{n}__*) are not offered"
                    ));
                }
                ServerStatus {
                    name: e.config.name.clone(),
                    transport: e.config.transport.summary(),
                    state,
                    tools,
                    deferred: e.config.deferred,
                    error,
                    warnings,
                    instructions: e
                        .instructions
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .clone(),
                }
            })
            .collect()
    }
}

impl Drop for McpClients {
    /// Stop every local server at once: all stdins are closed together and
    /// the servers share one grace period, so wield's exit waits for the
    /// slowest server, not for the sum of them. A server being started
    /// right now is stopped by its own connection when that is dropped.
    fn drop(&mut self) {
        let mut conns: Vec<_> = self.servers.iter().filter_map(|e| e.conn.try_lock().ok()).collect();
        // A `url` server's session is ended on the way out.
        for conn in &mut conns {
            if conn.as_ref().is_some_and(|c| c.process().is_none())
                && let Some(c) = conn.take()
            {
                c.park(&self.exit);
            }
        }
        let processes: Vec<&process::ServerProcess> = conns
            .iter()
            .filter_map(|c| c.as_ref().and_then(Connection::process))
            .collect();
        process::stop_all(&processes);
    }
}

/// One start of [`McpClients::start_in_background`] under way; dropping it
/// counts it as ended.
struct StartCounted(tokio::sync::watch::Sender<usize>);

impl Drop for StartCounted {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Try a server that failed to start again, waiting 1 s, then twice as long
/// each time (at most [`RETRY_MAX`]), until it starts or is dropped.
async fn retry(entry: Weak<ServerEntry>) {
    let mut wait = Duration::from_secs(1);
    loop {
        tokio::time::sleep(wait).await;
        let Some(e) = entry.upgrade() else { return };
        match list_tools(&e).await {
            Ok(tools) => {
                tracing::info!("MCP server `{}` started on a later try", e.config.name);
                e.replace_tools(tools);
                return;
            }
            Err(why) => {
                e.set(ServerState::Failed, Some(why));
                wait = (wait * 2).min(RETRY_MAX);
            }
        }
    }
}

/// One tool as the server listed it, and its wield name.
#[derive(Clone, Debug, PartialEq)]
struct Listed {
    tool: rmcp::model::Tool,
    name: String,
}

/// The wield tools of `listed` (each holds its server).
fn wield_tools_of(entry: &Arc<ServerEntry>, listed: Vec<Listed>) -> Vec<ToolRef> {
    listed
        .into_iter()
        .map(|l| Arc::new(McpTool::new(Arc::clone(entry), l.tool, l.name)) as ToolRef)
        .collect()
}

/// Start the server and list its tools, each with its wield name. Tools
/// wield cannot offer (a name listed twice, an empty name, arguments that
/// are not an object, a tool that must be called as a task) are left out
/// with a warning, kept for [`McpClients::status`].
async fn list_tools(entry: &Arc<ServerEntry>) -> Result<Vec<Listed>, String> {
    let started = Instant::now();
    let _one = entry.listing.lock().await;
    let link = entry.link().await?;
    let name = &entry.config.name;
    // A server that does not offer tools is ready with none: asking it
    // for them is an error the MCP spec tells clients not to provoke.
    if link
        .peer
        .peer_info()
        .is_some_and(|info| info.capabilities.tools.is_none())
    {
        entry.set_warnings(Vec::new());
        entry.set(ServerState::Ready, None);
        return Ok(Vec::new());
    }
    let left = entry.config.timeout.saturating_sub(started.elapsed());
    let capture = link.health.capture();
    let listed = tokio::select! {
        listed = tokio::time::timeout(left, listing::list_all(&link, name)) => match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                // A server that crashed closes its output before wield
                // sees it exit: its exit status and stderr say more than
                // the closed connection.
                if matches!(entry.config.transport, Transport::Stdio { .. }) {
                    let _ = tokio::time::timeout(process::EXIT_AFTER_CLOSE, link.health.settled()).await;
                }
                if link.health.has_exited() {
                    let why = format!("MCP server `{name}` {} while listing its tools", link.health.exit_reason());
                    entry.forget(&why).await;
                    return Err(why);
                }
                return Err(e);
            }
            Err(_) => {
                return Err(format!(
                    "MCP server `{name}` did not list its tools within {} (its `timeout`; raise it under \
                     [mcp.servers.{name}] if the server is slow to answer)",
                    wield_core::human_duration(entry.config.timeout)
                ));
            }
        },
        () = link.health.exited() => {
            link.health.settled().await;
            let why = format!("MCP server `{name}` {} while listing its tools", link.health.exit_reason());
            entry.forget(&why).await;
            return Err(why);
        }
    };
    let mut tasks_only = listing::task_required(&capture.take());
    tasks_only.extend(listed.tasks_only);
    let mut warnings: Vec<String> = listed
        .unreadable
        .iter()
        .map(|why| format!("MCP server `{name}`: {why}"))
        .collect();
    // Compiling the schemas is CPU work a server decides the size of: done
    // off the runtime's threads, within what is left of the server's
    // `timeout`.
    let left = entry.config.timeout.saturating_sub(started.elapsed());
    let tools = listed.tools;
    let checked = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + left;
        let mut unusable = Vec::with_capacity(tools.len());
        for tool in &tools {
            if Instant::now() > deadline {
                return Err(unusable.len());
            }
            unusable.push(bridge::unusable_schema(tool));
        }
        Ok((tools, unusable))
    })
    .await;
    let (tools, unusable) = match checked {
        Ok(Ok(checked)) => checked,
        Ok(Err(done)) => {
            return Err(format!(
                "MCP server `{name}` lists tools whose input schemas took longer than its `timeout` ({}) to \
                 check (after {done} tools); raise the timeout under [mcp.servers.{name}] if they are meant \
                 to be that large",
                wield_core::human_duration(entry.config.timeout)
            ));
        }
        Err(e) => return Err(format!("MCP server `{name}`: checking its tools' schemas failed: {e}")),
    };
    let mut unusable = unusable.into_iter();
    let mut seen = std::collections::HashSet::new();
    let usable: Vec<rmcp::model::Tool> = tools
        .into_iter()
        .filter(|tool| {
            let unusable_schema = unusable.next().flatten();
            if tool.name.is_empty() {
                warnings.push(format!(
                    "MCP server `{name}` lists a tool with an empty name; it is left out"
                ));
                return false;
            }
            if !seen.insert(tool.name.clone()) {
                warnings.push(format!(
                    "MCP server `{name}` lists `{}` twice; keeping the first",
                    tool.name
                ));
                return false;
            }
            if let Some(why) = unusable_schema {
                warnings.push(format!("MCP server `{name}`: tool `{}` is left out: {why}", tool.name));
                return false;
            }
            if tasks_only.contains(tool.name.as_ref()) {
                warnings.push(format!(
                    "MCP server `{name}`: tool `{}` is left out: it can only be called as a task \
                     (`execution.taskSupport` is \"required\"), and wield calls tools directly",
                    tool.name
                ));
                return false;
            }
            true
        })
        .collect();
    // Not a failure: said where tools are looked into (`wield mcp list`,
    // `wield tools debug`, the error for a call of one), not on every run.
    for w in &warnings {
        tracing::debug!("{w}");
    }
    entry.set_warnings(warnings);
    // Names handed out before keep pointing at the same tools.
    let names = {
        let mut given = entry.names.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let names = bridge::tool_names(name, usable.iter().map(|t| t.name.as_ref()), &given);
        for (tool, wield_name) in usable.iter().zip(&names) {
            given.insert(tool.name.to_string(), wield_name.clone());
        }
        names
    };
    entry.set(ServerState::Ready, None);
    Ok(usable
        .into_iter()
        .zip(names)
        .map(|(tool, name)| Listed { tool, name })
        .collect())
}

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
//! finds its server gone (crashed, closed) starts it again first.
//!
//! A server may ask its client for a completion (sampling) or for its user's
//! input (elicitation). wield refuses both with a "not supported" error
//! unless the front-end hands [`McpClients::with_front_end`] a [`FrontEnd`]
//! that answers them.

mod bridge;
mod config;
mod connect;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient};
use serde::Serialize;
use wield_core::{Registry, ToolRef};

pub use bridge::{McpTool, map_result, tool_name, tool_names};
pub use config::{DEFAULT_TIMEOUT, ServerConfig, Transport};
pub use connect::{BridgeClient, FrontEnd};

use connect::{Connection, connect};

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
}

/// One configured server and its connection.
pub(crate) struct ServerEntry {
    pub(crate) config: ServerConfig,
    status: Mutex<(ServerState, usize, Option<String>)>,
    conn: tokio::sync::Mutex<Option<Connection>>,
    front: Option<Arc<dyn FrontEnd>>,
}

impl ServerEntry {
    fn set(&self, state: ServerState, error: Option<String>) {
        let mut s = self.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        s.0 = state;
        s.2 = error;
    }

    fn set_tools(&self, n: usize) {
        self.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner).1 = n;
    }

    async fn start(&self) -> Result<Connection, String> {
        let name = &self.config.name;
        match tokio::time::timeout(self.config.timeout, connect(&self.config, self.front.clone())).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(format!("MCP server `{name}` failed to start: {e}")),
            Err(_) => Err(format!(
                "MCP server `{name}` did not complete its start within {} (raise mcp.servers.{name}.timeout if it is slow)",
                wield_core::human_duration(self.config.timeout)
            )),
        }
    }

    /// The server's peer, restarting the server when it has exited.
    pub(crate) async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut conn = self.conn.lock().await;
        if let Some(c) = conn.as_ref() {
            if c.is_alive() {
                return Ok(c.peer());
            }
            let why = format!("it exited{}", c.stderr.suffix());
            tracing::warn!("MCP server `{}` {why}; restarting it", self.config.name);
            self.set(ServerState::Exited, Some(why));
        }
        *conn = None;
        match self.start().await {
            Ok(c) => {
                let peer = c.peer();
                *conn = Some(c);
                self.set(ServerState::Ready, None);
                Ok(peer)
            }
            Err(e) => {
                self.set(ServerState::Exited, Some(e.clone()));
                Err(e)
            }
        }
    }

    /// Drop the connection after a transport failure, so the next call
    /// starts the server again.
    pub(crate) async fn forget(&self, why: &str) {
        let mut conn = self.conn.lock().await;
        if conn.take().is_some() {
            self.set(ServerState::Exited, Some(why.to_owned()));
        }
    }
}

/// The configured external servers.
pub struct McpClients {
    servers: Vec<Arc<ServerEntry>>,
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
                    status: Mutex::new((state, 0, None)),
                    conn: tokio::sync::Mutex::new(None),
                    front: front.clone(),
                })
            })
            .collect();
        Arc::new(Self { servers })
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Queue every enabled server that `start` picks (by name) as an async
    /// source of `registry`; they start in [`Registry::load_sources`]. The
    /// registry's own deadline is a little later than the server's, so the
    /// server's own, more precise message is what gets reported.
    pub fn add_sources(self: &Arc<Self>, registry: &mut Registry, start: impl Fn(&str) -> bool) {
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
                            Ok(tools) => {
                                entry.set_tools(tools.len());
                                for t in tools {
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

    /// Every configured server, in name order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|e| {
                let (state, tools, error) = e
                    .status
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone();
                ServerStatus {
                    name: e.config.name.clone(),
                    transport: e.config.transport.summary(),
                    state,
                    tools,
                    deferred: e.config.deferred,
                    error,
                }
            })
            .collect()
    }
}

/// Start the server and list its tools as wield tools.
async fn list_tools(entry: &Arc<ServerEntry>) -> Result<Vec<ToolRef>, String> {
    let started = Instant::now();
    let peer = entry.peer().await?;
    let name = &entry.config.name;
    let left = entry.config.timeout.saturating_sub(started.elapsed());
    let listed = match tokio::time::timeout(left, peer.list_all_tools()).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => return Err(format!("MCP server `{name}` failed to list its tools: {e}")),
        Err(_) => return Err(format!("MCP server `{name}` did not list its tools in time")),
    };
    let names = bridge::tool_names(name, listed.iter().map(|t| t.name.as_ref()));
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<ToolRef> = Vec::with_capacity(listed.len());
    for (tool, wield_name) in listed.into_iter().zip(names) {
        if seen.insert(wield_name.clone()) {
            out.push(Arc::new(McpTool::new(Arc::clone(entry), tool, wield_name)));
        } else {
            // Only a server that lists one name twice gets here.
            tracing::warn!("MCP server `{name}` lists `{}` twice; keeping the first", tool.name);
        }
    }
    entry.set(ServerState::Ready, None);
    Ok(out)
}

//! The bridged MCP servers of a runtime (the `mcp` feature): their clients,
//! their tool sources, and how they end.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wield_core::{Config, KeyTree, Registry, Services};
use wield_mcp::McpClients;

use crate::runtime::{Ending, RuntimeOptions, Servers};

/// How long the sessions with `url` servers have to end.
const URL_LIMIT: Duration = Duration::from_millis(500);

/// How long a local server whose stop never finished has after SIGTERM.
const STRAGGLER_GRACE: Duration = Duration::from_millis(500);

/// `[mcp]`.
pub(crate) fn register_config_keys(known: &mut KeyTree) {
    wield_mcp::register_config_keys(known);
}

/// The configured servers' clients, not started yet.
pub(crate) struct Bridged(Arc<McpClients>);

impl Bridged {
    /// The servers of `config`, whose sampling and elicitation requests go
    /// to the options' front-end.
    pub(crate) fn from_config(config: &Config, workspace: &Path, options: &RuntimeOptions) -> Result<Self, String> {
        let servers = wield_mcp::ServerConfig::all_from(config, workspace).map_err(|e| e.to_string())?;
        Ok(Self(McpClients::with_front_end(servers, options.front_end.clone())))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Queue the servers' tool sources; those `servers` names start while
    /// the registry loads its sources.
    pub(crate) fn add_sources(&self, registry: &mut Registry, servers: &Servers) {
        self.0.add_sources(registry, |name| servers.starts(name));
    }

    /// Say in the registry which servers' tools are left out, and why.
    pub(crate) fn warn_left_out(&self, registry: &mut Registry) {
        crate::tool_set::warn_left_out(registry, &self.0);
    }

    pub(crate) async fn end(&self, ending: Ending) {
        end_servers(&self.0, ending).await;
    }

    /// The clients become a service the bridged tools find.
    pub(crate) fn install(self, services: &mut Services) {
        services.insert(self.0);
    }
}

/// Ends the bridged servers of `services`, if any.
pub(crate) async fn shutdown(services: &Services, ending: Ending) {
    if let Some(mcp) = services.get::<McpClients>() {
        end_servers(&mcp, ending).await;
    }
}

/// Ends `mcp`'s servers. Gracefully: their connections end, then the
/// process group of any local server whose stop did not finish (one still
/// starting, say) is killed. In a hurry: `url` sessions end while every
/// local server's group gets SIGTERM at once and SIGKILL after a grace,
/// without waiting for a start in progress to let go of its connection.
async fn end_servers(mcp: &McpClients, ending: Ending) {
    let exit = mcp.exit();
    match ending {
        Ending::Graceful => {
            mcp.shutdown(URL_LIMIT).await;
            kill_stragglers(exit).await;
        }
        Ending::Hurried => {
            exit.hurry();
            futures::future::join(exit.end_sessions(URL_LIMIT), kill_stragglers(exit.clone())).await;
        }
    }
}

/// The process groups of `exit`'s local servers whose stop did not finish,
/// killed off the async runtime.
async fn kill_stragglers(exit: wield_mcp::client::ClientsExit) {
    let _ = tokio::task::spawn_blocking(move || exit.stop_stragglers(STRAGGLER_GRACE)).await;
}

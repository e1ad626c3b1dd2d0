//! MCP left out (the `mcp` feature off): configured servers are not
//! started, and the registry says so.

use std::path::Path;

use wield_core::{Config, KeyTree, Registry, Services};

use crate::runtime::{Ending, RuntimeOptions, Servers};

/// The `[mcp]` keys, still known: a configuration shared with builds that
/// bridge servers loads here too.
const CONFIG_KEYS: &[&str] = &["mcp.**"];

pub(crate) fn register_config_keys(known: &mut KeyTree) {
    known.register(CONFIG_KEYS);
}

/// No clients; a warning in the registry when servers are configured.
pub(crate) struct Bridged {
    configured: Vec<String>,
}

impl Bridged {
    pub(crate) fn from_config(config: &Config, _workspace: &Path, _options: &RuntimeOptions) -> Result<Self, String> {
        Ok(Self {
            configured: config.table_at("mcp.servers").keys().cloned().collect(),
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        true
    }

    pub(crate) fn add_sources(&self, _registry: &mut Registry, _servers: &Servers) {}

    pub(crate) fn warn_left_out(&self, registry: &mut Registry) {
        for name in &self.configured {
            registry.warn(
                format!("mcp:{name}"),
                format!("the MCP server `{name}` is not started: this build of wield has no MCP (the `mcp` feature)"),
            );
        }
    }

    pub(crate) async fn end(&self, _ending: Ending) {}

    pub(crate) fn install(self, _services: &mut Services) {}
}

pub(crate) async fn shutdown(_services: &Services, _ending: Ending) {}

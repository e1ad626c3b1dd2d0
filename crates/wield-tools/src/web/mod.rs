//! Web tools: `web_fetch` (one page as Markdown, text or HTML) and
//! `web_search` (a query to a search backend).
//!
//! Both go through one guarded HTTP exchange ([`http`]): the SSRF guard
//! ([`guard`]) resolves each host once, refuses internal addresses
//! (loopback, private, link-local and metadata, CGNAT, unique-local,
//! unspecified, multicast, and the IPv6 forms embedding them) unless the
//! tool's `allow` list names them, pins the connection to the checked
//! addresses, and follows redirects by hand, checking each hop. Bodies are
//! capped (`max_bytes`) and exchanges time-limited (`timeout`). Both tools
//! reach the network, so they are not read-only and need approval by
//! default.

use std::sync::Arc;

use wield_core::{Config, ToolRef};

use crate::SetupError;

mod fetch;
pub mod guard;
mod html;
pub mod http;
pub mod search;
mod settings;

pub use fetch::WebFetchTool;
pub use search::{SearchBackend, WebSearchTool};
pub use settings::{DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT};

pub fn tools() -> Vec<ToolRef> {
    vec![Arc::new(WebFetchTool::new()), Arc::new(WebSearchTool::new())]
}

/// Refuse a malformed `[web_fetch]` or `[web_search]` when the
/// configuration loads (an allow entry that is no host, port or network, a
/// cap that is no size, an unknown backend), not at the first call. API
/// keys are looked up at the call, when they are needed.
pub fn check_config(config: &Config) -> Result<(), SetupError> {
    for tool in ["web_fetch", "web_search"] {
        settings::limits(tool, &config.table_at(tool), DEFAULT_TIMEOUT).map_err(SetupError::Invalid)?;
    }
    search::check_backend(&config.table_at("web_search")).map_err(|e| SetupError::Invalid(e.to_string()))
}

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

use wield_core::ToolRef;

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

//! Listing a server's tools, page by page, within bounds, and telling which
//! of them wield cannot call.
//!
//! A server that always answers with a `nextCursor` would have wield ask
//! for pages, and hold their tools, until the start timed out; the listing
//! stops instead at [`MAX_PAGES`] pages, at [`MAX_TOOLS`] tools, or at a
//! cursor the server already sent, and the server fails with that reason.

use std::collections::HashSet;

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use super::connect::with_causes;

/// The most pages read from one server's listing.
pub const MAX_PAGES: usize = 1_000;
/// The most tools taken from one server.
pub const MAX_TOOLS: usize = 10_000;

/// Every page of `server`'s `tools/list`, within [`MAX_PAGES`] and
/// [`MAX_TOOLS`]; a cursor sent twice ends it as an error too.
pub async fn list_all(peer: &Peer<RoleClient>, server: &str) -> Result<Vec<Tool>, String> {
    let mut tools: Vec<Tool> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut cursor: Option<String> = None;
    for page in 1..=MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let listed = peer
            .list_tools(Some(params))
            .await
            .map_err(|e| format!("MCP server `{server}` failed to list its tools: {}", with_causes(&e)))?;
        tools.extend(listed.tools);
        if tools.len() > MAX_TOOLS {
            return Err(format!(
                "MCP server `{server}` lists more than {MAX_TOOLS} tools (after {page} pages); wield stops reading there \
                 and leaves the server out"
            ));
        }
        match listed.next_cursor {
            None => return Ok(tools),
            Some(next) => {
                if !seen.insert(next.clone()) {
                    return Err(format!(
                        "MCP server `{server}` sent the same `nextCursor` twice while listing its tools (page {page}), \
                         so its listing would never end; wield leaves the server out"
                    ));
                }
                cursor = Some(next);
            }
        }
    }
    Err(format!(
        "MCP server `{server}` was still sending pages of tools after {MAX_PAGES} pages; wield stops reading there \
         and leaves the server out"
    ))
}

/// The names of the tools that must be called as tasks
/// (`"execution": {"taskSupport": "required"}`, MCP 2025-11-25), found in
/// `raw`, what the server wrote while listing them, one message a line. wield
/// calls tools directly, never as tasks, so a call of one of them always
/// fails; the SDK's types leave `execution` out, hence the raw text.
pub fn task_required(raw: &[u8]) -> HashSet<String> {
    let mut names = HashSet::new();
    for line in raw.split(|&b| b == b'\n') {
        if memchr::memmem::find(line, b"\"taskSupport\"").is_none() {
            continue;
        }
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let tools = message
            .pointer("/result/tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for tool in tools {
            if tool.pointer("/execution/taskSupport").and_then(Value::as_str) == Some("required")
                && let Some(name) = tool.get("name").and_then(Value::as_str)
            {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_that_require_tasks_are_found_in_the_raw_listing() {
        let raw = concat!(
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"taskSupport":"required"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{}},"#,
            r#"{"name":"research","inputSchema":{},"execution":{"taskSupport":"required"}},"#,
            r#"{"name":"maybe","inputSchema":{},"execution":{"taskSupport":"optional"}}]}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"cut"#,
        );
        let names = task_required(raw.as_bytes());
        assert_eq!(names, HashSet::from(["research".to_owned()]));
    }
}

//! Listing a server's tools, page by page, within bounds, and telling which
//! of them wield cannot call.
//!
//! A server that always answers with a `nextCursor` would have wield ask
//! for pages, and hold their tools, until the start timed out; the listing
//! stops instead at [`MAX_PAGES`] pages, at [`MAX_TOOLS`] tools, or at a
//! cursor the server already sent, and the server fails with that reason.

use std::collections::HashSet;
use std::sync::OnceLock;

use rmcp::model::{ClientRequest, CustomResult, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;

use super::connect::{Link, with_causes};
use super::process::{Health, MAX_MESSAGE};

/// The most pages read from one server's listing.
pub const MAX_PAGES: usize = 1_000;
/// The most tools taken from one server.
pub const MAX_TOOLS: usize = 10_000;

/// What a server listed: the tools wield can read, and those it could not,
/// each with why (a tool without an `inputSchema`, a name that is not a
/// string), to be left out with a warning rather than lose the server.
#[derive(Debug, Default)]
pub struct Listing {
    pub tools: Vec<Tool>,
    pub unreadable: Vec<String>,
    /// Tools that must be called as tasks, found where the listing was read
    /// as plain JSON (see [`task_required`] for the rest).
    pub tasks_only: HashSet<String>,
}

/// Every page of `server`'s `tools/list`, within [`MAX_PAGES`] and
/// [`MAX_TOOLS`]; a cursor sent twice ends it as an error too.
pub async fn list_all(link: &Link, server: &str) -> Result<Listing, String> {
    let mut listing = Listing::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut cursor: Option<String> = None;
    for page in 1..=MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let next_cursor = match own_page(link, &params, &mut listing).await {
            Some(read) => read.map_err(|why| format!("MCP server `{server}` failed to list its tools: {why}"))?,
            None => list_page(&link.peer, &link.health, server, params, &mut listing).await?,
        };
        if listing.tools.len() + listing.unreadable.len() > MAX_TOOLS {
            return Err(format!(
                "MCP server `{server}` lists more than {MAX_TOOLS} tools (after {page} pages); wield stops reading there \
                 and leaves the server out"
            ));
        }
        // Some servers mark the last page with an empty cursor (the
        // TypeScript SDK's clients stop there too).
        match next_cursor {
            None => return Ok(listing),
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

/// A page of a `url` server's tools asked for by wield itself and read as
/// plain JSON, which keeps what the SDK's types drop (a tool that must be
/// called as a task); `None` when that cannot be done (a local server, or
/// the request failed), and the SDK is to ask.
async fn own_page(
    link: &Link,
    params: &PaginatedRequestParams,
    listing: &mut Listing,
) -> Option<Result<Option<String>, String>> {
    let http = link.http.as_ref()?;
    let version = link.peer.peer_info()?.protocol_version.as_str().to_owned();
    let params = serde_json::to_value(params).ok()?;
    let result = http.request("tools/list", params, &version, MAX_MESSAGE).await?;
    Some(read_raw_page(&result, listing))
}

/// One `tools/list` request, its tools added to `listing`; the cursor of
/// the next page, if any. A page the SDK's types read is taken as is; one
/// they cannot (a single tool without an `inputSchema` makes the whole page
/// fail to read) arrives as plain JSON and is read tool by tool.
async fn list_page(
    peer: &Peer<RoleClient>,
    health: &Health,
    server: &str,
    params: PaginatedRequestParams,
    listing: &mut Listing,
) -> Result<Option<String>, String> {
    let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
    let failed = |why: String| format!("MCP server `{server}` failed to list its tools: {why}");
    let since = health.oversized_count();
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| failed(with_causes(&e)))?;
    let sent = OnceLock::from(handle.id.to_string());
    let answer = tokio::select! {
        answer = handle.await_response() => answer.map_err(|e| failed(with_causes(&e)))?,
        () = health.oversized_reply(&sent, since) => {
            return Err(failed(format!(
                "its answer is more than {} MiB, more than wield reads in one message",
                MAX_MESSAGE >> 20
            )));
        }
    };
    match answer {
        ServerResult::ListToolsResult(page) => {
            listing.tools.extend(page.tools);
            Ok(page.next_cursor.filter(|c| !c.is_empty()))
        }
        ServerResult::CustomResult(CustomResult(raw)) => read_raw_page(&raw, listing).map_err(failed),
        ServerResult::EmptyResult(_) => Ok(None),
        _ => Err(failed("its answer is not a list of tools".to_owned())),
    }
}

/// A page of tools as plain JSON: `{"tools": [...], "nextCursor": "..."}`.
fn read_raw_page(raw: &Value, listing: &mut Listing) -> Result<Option<String>, String> {
    let tools = raw
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("its answer has no `tools` list: {}", clip(&raw.to_string())))?;
    for (i, tool) in tools.iter().enumerate() {
        let name = tool.get("name").and_then(Value::as_str);
        match serde_json::from_value::<Tool>(tool.clone()) {
            Ok(read) => {
                if tool.pointer("/execution/taskSupport").and_then(Value::as_str) == Some("required") {
                    listing.tasks_only.insert(read.name.to_string());
                }
                listing.tools.push(read);
            }
            Err(e) => {
                let what = match name {
                    Some(n) => format!("tool `{n}`"),
                    None => format!("tool number {} of the page", i + 1),
                };
                let why = match tool.get("inputSchema") {
                    None if name.is_some() => "it has no `inputSchema` (MCP requires one)".to_owned(),
                    _ => format!("it cannot be read: {e}"),
                };
                listing.unreadable.push(format!("{what} is left out: {why}"));
            }
        }
    }
    match raw.get("nextCursor") {
        None | Some(Value::Null) => Ok(None),
        // Some servers mark the last page with an empty cursor.
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "its `nextCursor` is not a string: {}",
            clip(&other.to_string())
        )),
    }
}

/// The start of a long text, for an error message.
fn clip(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
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

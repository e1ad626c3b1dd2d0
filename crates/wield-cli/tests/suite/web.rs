//! web_fetch and web_search as the command line reaches them, against a
//! local server only: the approval they need by default, over MCP, from
//! the agent, and their settings checked at start. What the tools do
//! (encodings, sizes, redirects, the SSRF guard, search backends) is
//! wield-tools' suite (`crates/wield-tools/tests/web.rs`).

// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::json;
use wield_test_support::pages::Server;

use crate::common::Env;

#[test]
fn web_fetch_needs_approval_by_default() {
    let (e, srv) = (Env::new(), Server::start());
    let out = e
        .wield()
        .args(["--set", r#"web_fetch.allow=["127.0.0.1"]"#, "call", "web_fetch"])
        .arg(json!({"url": srv.url("/utf8")}).to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("approval required"),
        "{out:?}"
    );
    assert_eq!(srv.hits(), 0);
}

/// Over MCP the tools are listed with their network nature, and a call runs
/// through the same guard.
#[test]
fn mcp_lists_and_calls_the_web_tools() {
    use crate::shell::support::{Mcp, Ws};
    let (ws, srv) = (Ws::new(), Server::start());
    let mut mcp = Mcp::start(&ws, &["-y", "--set", r#"web_fetch.allow=["127.0.0.1"]"#]);
    let list = mcp.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    for name in ["web_fetch", "web_search"] {
        let t = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {list}"));
        assert_eq!(t["annotations"]["openWorldHint"], true, "{t}");
        assert_ne!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    let (is_error, text) = mcp.call("web_fetch", json!({"url": srv.url("/latin1")}));
    assert!(!is_error, "{text}");
    assert!(text.contains("Café crème brûlée"), "{text}");
    let (is_error, text) = mcp.call("web_fetch", json!({"url": "http://[::ffff:127.0.0.1]/"}));
    assert!(is_error && text.contains("blocked by the SSRF guard"), "{text}");
}

/// The agent offers web_fetch to the model, runs the call it asks for
/// (approved here by `-y`; headless it would be refused for approval) and
/// hands the page back.
#[test]
fn the_agent_fetches_a_page_the_model_asks_for() {
    use crate::scripted_provider::{Scripted, Turn};
    let srv = Server::start();
    let provider = Scripted::start(vec![
        Turn::Call("web_fetch", json!({"url": srv.url("/sjis")})),
        Turn::Text("The page says 日本語."),
    ]);
    let e = Env::new();
    e.put(
        ".wield/config.toml",
        &format!("{}\n[web_fetch]\nallow = [\"127.0.0.1\"]\n", provider.config()),
    );
    let out = e
        .wield()
        .args(["-y", "run", "--headless", "-p", "What does the page say?"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "The page says 日本語.\n");
    let requests = provider.requests();
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"web_fetch") && offered.contains(&"web_search"),
        "{offered:?}"
    );
    let tool = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    let content = tool["content"].as_str().unwrap();
    assert!(
        content.starts_with(&format!("Fetched: {} (text/html", srv.url("/sjis"))),
        "{content}"
    );
    assert!(content.contains("日本語"), "{content}");
}

/// A malformed web setting is a usage error when wield starts, naming the key.
#[test]
fn malformed_web_settings_are_refused_at_start() {
    let e = Env::new();
    for (set, want) in [
        (r#"web_fetch.allow=["not a host"]"#, "web_fetch.allow: `not a host`"),
        (r#"web_search.allow=["10.0.0.0/40"]"#, "web_search.allow: `10.0.0.0/40`"),
        (
            "web_fetch.max_bytes=-1",
            "web_fetch.max_bytes must be a positive number",
        ),
        (r#"web_search.backend="bing""#, "web_search.backend `bing` is unknown"),
        (r#"web_search.backend="searxng""#, "needs web_search.base_url"),
    ] {
        let out = e
            .wield()
            .args(["-y", "--set", set, "call", "web_search", r#"{"query":"x"}"#])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{set}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{set}: {stderr}");
    }
}

//! A runtime built without Lua and MCP (`--no-default-features`, as
//! scripts/test.sh runs this file): what those features would have run is
//! refused or reported, never silently left out. With the features on,
//! this file holds no test.
#![cfg(not(any(feature = "lua", feature = "mcp")))]
#![allow(clippy::unwrap_used)]

use std::path::Path;

use wield_runtime::{Runtime, RuntimeOptions};

fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    dir
}

async fn load(dir: &Path) -> Result<Runtime, wield_runtime::Error> {
    Runtime::load(
        dir,
        RuntimeOptions::builder()
            .global_dir(wield_core::config::GlobalDir::Nowhere)
            .build(),
    )
    .await
}

/// A Lua resolver may refuse calls: without Lua, wield does not run as if
/// it were not there.
#[tokio::test]
async fn a_lua_resolver_is_an_error_without_lua() {
    let ws = workspace(&[(".wield/resolvers/deny.lua", "return function() return 'deny' end")]);
    let err = load(ws.path()).await.err().unwrap();
    assert!(err.is_usage(), "{err}");
    assert!(err.to_string().contains("the `lua` feature"), "{err}");
}

/// Nor is a Lua file in `approval.auto_approve` read as a pattern.
#[tokio::test]
async fn a_lua_auto_approve_entry_is_an_error_without_lua() {
    let ws = workspace(&[(
        ".wield/config.toml",
        "[approval]\nauto_approve = [\"policy/check.lua\"]\n",
    )]);
    let err = load(ws.path()).await.err().unwrap();
    assert!(err.to_string().contains("policy/check.lua"), "{err}");
}

/// Lua tool files and configured MCP servers are left out with a warning
/// each, and the `[lua]` and `[mcp]` keys still load.
#[tokio::test]
async fn lua_tools_and_mcp_servers_are_reported_left_out() {
    let ws = workspace(&[
        (".wield/tools/hello.lua", "return {}"),
        (
            ".wield/config.toml",
            "[lua]\nmemory_limit = \"8MB\"\n\n[mcp.servers.files]\ncommand = \"files-server\"\n",
        ),
    ]);
    let rt = load(ws.path()).await.unwrap();
    let current = rt.tools().current();
    let warnings: Vec<String> = current.registry.warnings().iter().map(|w| w.message.clone()).collect();
    assert!(
        warnings.iter().any(|w| w.contains("Lua tools") && w.contains("no Lua")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("`files`") && w.contains("no MCP")),
        "{warnings:?}"
    );
    assert!(rt.visible().iter().all(|t| !t.tool.spec().name.starts_with("mcp__")));
}

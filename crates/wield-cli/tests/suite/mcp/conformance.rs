//! The official MCP conformance suite against `wield mcp serve --http`.
//!
//! Scenarios that call fixture tools, resources or prompts wield does not
//! have are listed, each with its reason, in
//! `crates/wield-mcp/tests/conformance-expected-failures.yml`; the suite
//! fails on any other failure and on a listed scenario that passes.

use std::time::Duration;

use super::support::{Ws, conformance, node, repo_root, run};
use crate::peer_cmd::peer_command;

#[test]
fn conformance_suite_passes_with_the_expected_failures() {
    let ws = Ws::new("");
    let (mut server, url) = super::support::serve_http(&ws, &[]);

    let expected = repo_root().join("crates/wield-mcp/tests/conformance-expected-failures.yml");
    let node_dir = node().parent().unwrap().to_path_buf();
    let mut cmd = peer_command(node());
    cmd.arg("--import")
        .arg(repo_root().join("crates/wield-mcp/tests/peers/conformance-auth.mjs"))
        .arg(conformance())
        .args(["server", "--url", &url, "--expected-failures"])
        .arg(&expected)
        .env("WIELD_TEST_TOKEN", super::support::TOKEN)
        .env(
            "PATH",
            format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default()),
        );
    let (ok, text) = run(cmd, Duration::from_secs(120));
    let _ = server.kill();
    let _ = server.wait();
    assert!(ok, "conformance suite:\n{text}");
    for must in ["server-initialize", "ping", "tools-list", "logging-set-level"] {
        assert!(text.contains(&format!("✓ {must}:")), "{must} did not pass:\n{text}");
    }
}

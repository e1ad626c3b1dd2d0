//! `wield mcp serve` driven by the official Python MCP SDK.

use crate::support::python_scenarios;

const CORE: &[&str] = &["tools", "denied", "elicit", "escapes", "roots", "cancel_sleep"];

#[test]
fn python_sdk_over_stdio() {
    python_scenarios("stdio", CORE);
}

#[test]
fn python_sdk_over_http() {
    python_scenarios("http", CORE);
}

#[test]
fn http_token_host_origin_and_sessions() {
    python_scenarios("http", &["http_security", "http_sessions"]);
}

#[test]
fn bash_progress_and_cancel_over_stdio() {
    python_scenarios("stdio", &["bash_progress", "bash_cancel"]);
}

#[test]
fn bash_progress_and_cancel_over_http() {
    python_scenarios("http", &["bash_progress", "bash_cancel"]);
}

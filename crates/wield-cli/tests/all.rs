//! wield-cli's integration tests, one test binary: each module under
//! `suite/` drives the real `wield` binary (commands, the patch and shell
//! tools, MCP against real peers, policy and approval, attacks on the
//! sandboxes, completions and the agent against model servers).
//! `.config/nextest.toml` picks the process-heavy modules out by name.

#[path = "suite/agent_tools.rs"]
mod agent_tools;
#[path = "suite/batch.rs"]
mod batch;
#[path = "suite/chat.rs"]
mod chat;
#[path = "suite/chat_cycle.rs"]
mod chat_cycle;
#[path = "suite/command_line.rs"]
mod command_line;
#[path = "suite/command_tools.rs"]
mod command_tools;
#[path = "suite/common/mod.rs"]
mod common;
#[path = "suite/complete.rs"]
mod complete;
#[path = "suite/core_cli.rs"]
mod core_cli;
use wield_test_support::http_request;
#[path = "suite/exit_codes.rs"]
mod exit_codes;
#[path = "suite/init.rs"]
mod init;
#[path = "suite/interactive.rs"]
mod interactive;
use wield_test_support::local_model;
#[path = "suite/lua_tools.rs"]
mod lua_tools;
#[path = "suite/mcp/mod.rs"]
mod mcp;
#[path = "suite/patch.rs"]
mod patch;
#[path = "suite/support/peer_cmd.rs"]
mod peer_cmd;
#[path = "suite/policy/mod.rs"]
mod policy;
#[path = "suite/providers.rs"]
mod providers;
#[path = "suite/run_agent.rs"]
mod run_agent;
use wield_test_support::scripted as scripted_provider;
#[path = "suite/security/mod.rs"]
mod security;
#[path = "suite/shell/mod.rs"]
mod shell;
#[path = "suite/web.rs"]
mod web;
#[path = "suite/support/wield_cmd.rs"]
mod wield_cmd;

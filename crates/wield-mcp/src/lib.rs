//! MCP for wield, in both directions, on the official `rmcp` SDK.
//!
//! **Server** ([`server`]): `wield mcp serve` exposes the tools the policy
//! leaves visible to any MCP client, over stdio or streamable HTTP. Nothing
//! about a call is special because it came over MCP: each `tools/call` runs
//! through the same [`wield_core::Executor`] as `wield call` — validation,
//! hooks, approval, sandbox, timeouts, truncation, the audit log — in a
//! model-driven [`wield_core::Session`] that lives as long as the MCP
//! connection. What MCP adds is wiring: approval prompts become elicitation
//! requests, `OutputDelta` events become progress notifications,
//! `notifications/cancelled` cancels the call, and client roots can narrow
//! (never widen) where file tools may write. Every refusal or failure is a
//! result with `isError: true` that tells the model why.
//!
//! **Client** ([`client`]): servers configured under `[mcp.servers.NAME]`
//! become registry sources whose tools are named `mcp__NAME__tool`. They
//! start in parallel with a timeout; one that fails is a warning, never an
//! error, and one that crashes later is restarted on its next use. Their
//! sampling and elicitation requests go to a [`client::FrontEnd`] when the
//! front-end gives one ([`ForwardToClient`] passes them on to the client of
//! a stdio session) and are refused as not supported otherwise.

mod compat;
mod error;

pub mod client;
pub mod server;
mod wire;

pub use client::{McpClients, ServerConfig, ServerState, ServerStatus, Transport};
pub use error::McpError;
pub use server::{
    ApprovalMode, DeferredNote, ExecutorFactory, ForwardToClient, HttpOptions, HttpServer, McpServer, ServedRuntime,
    SessionParts, Token, ToolCatalog, ToolsReady, WeakMcpServer, write_token_file,
};

/// Register the `[mcp.servers.NAME]` config keys.
pub fn register_config_keys(known: &mut wield_core::KeyTree) {
    known.register(client::CONFIG_KEYS);
}

//! Errors of the MCP front-end and client.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum McpError {
    /// A setting is wrong (an address, a missing token, a server entry).
    #[error("{0}")]
    Config(String),
    /// The MCP session could not start (the handshake failed).
    #[error("MCP session failed to start: {0}")]
    Start(String),
    /// The connection broke.
    #[error("MCP transport error: {0}")]
    Transport(String),
}

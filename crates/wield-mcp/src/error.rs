//! Errors of the MCP front-end and client.
//!
//! An error that has a cause keeps it as its [`source`](std::error::Error::source)
//! rather than folding it into the message: the message says what failed,
//! the source why (`wield_core::error_chain` or anyhow's `{:#}` show both).

use thiserror::Error;
use wield_core::BoxError;

#[derive(Debug, Error)]
pub enum McpError {
    /// A setting is wrong (an address, a missing token, a server entry).
    #[error("{0}")]
    Config(String),
    /// A file or socket could not be used: `what` says which and for what.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The MCP session could not start (the handshake failed).
    #[error("MCP session failed to start")]
    Start(#[source] BoxError),
    /// The connection broke.
    #[error("MCP transport error")]
    Transport(#[source] BoxError),
}

impl McpError {
    /// An I/O failure while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_stay_sources_and_are_shown_once() {
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "address in use");
        let e = McpError::io("cannot listen on 127.0.0.1:80", io);
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("address in use"));
        assert_eq!(
            wield_core::error_chain(&e),
            "cannot listen on 127.0.0.1:80: address in use"
        );
        let e = McpError::Transport("reset by peer".into());
        assert_eq!(wield_core::error_chain(&e), "MCP transport error: reset by peer");
    }
}

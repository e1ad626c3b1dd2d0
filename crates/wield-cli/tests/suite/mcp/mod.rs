//! MCP against real peers, through the real binary:
//! - the official Python `mcp` SDK as a client of `wield mcp serve` over
//!   stdio and streamable HTTP (tools, approval, elicitation, path escapes,
//!   client roots, cancellation, progress, HTTP security, sessions);
//! - `@modelcontextprotocol/server-everything` as a server for wield's
//!   client, and servers that fail or hang at start-up;
//! - the official conformance suite against `wield mcp serve --http`.
//!
//! The peers are installed by `scripts/test-deps.sh` under
//! `target/test-deps` (or `$WIELD_TEST_DEPS`). A missing peer fails the
//! test with the command that installs it; nothing is skipped.

mod client;
mod conformance;
mod server;
mod server_processes;
mod support;

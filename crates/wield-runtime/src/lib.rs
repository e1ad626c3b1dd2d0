//! The composition root every wield front-end shares.
//!
//! A [`Runtime`] is what makes `wield call`, `wield mcp serve` and a program
//! embedding wield behave alike: it loads the configuration layers, builds
//! the registry (the built-in tools, the front-end's own, and the tools of
//! the bridged MCP servers), decides the policy over it, and builds
//! executors whose approval chain holds the configuration's rules, the
//! remembered approvals (`.wield/approvals.toml` and the global file, under
//! a file lock), the paths that always ask and the sandbox, with the
//! configured shell hooks and audit log. A front-end brings only what is
//! its own: who approves (a person at a terminal, an MCP client, a
//! program), where events go, and how results are shown.
//!
//! The README's "Rust library" section shows a whole program: build a
//! runtime, open a session, run calls through the pipeline with a custom
//! approver. It is tested with this crate.

mod approvals;
mod batch;
#[cfg_attr(not(feature = "mcp"), path = "bridge_off.rs")]
mod bridge;
mod error;
mod links;
#[cfg_attr(not(feature = "lua"), path = "lua_off.rs")]
mod lua;
mod runtime;
#[cfg(feature = "mcp")]
mod serve;
mod shell_hooks;
mod subagent;
mod tool_set;

pub use approvals::{ApprovalsError, FileApprovalStore, check_pattern, update_file, write_atomic};
pub use error::Error;
pub use runtime::{
    Ending, ExecutorFactory, Runtime, RuntimeOptions, RuntimeOptionsBuilder, Servers, canonical_workspace,
};
#[cfg(feature = "mcp")]
pub use serve::ServeOptions;
pub use tool_set::{SharedTools, ToolSet};

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

//! The bash tool, the process sandbox (bubblewrap, Landlock, off) and
//! background processes through the runtime's pipeline, as a person-driven
//! `wield call` (or an MCP session, for background processes) runs them,
//! in the test's process. The test binary is the sandbox's helper, as the
//! `wield` binary is: Landlock re-executes it to confine a command, and
//! bubblewrap and unsandboxed commands run under its keeper.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

wield_test_support::sandbox_helper!();

// The shared layout; its `call` is not needed here.
#[allow(unused_imports)]
#[path = "support/mod.rs"]
mod support;

#[path = "shell/bash.rs"]
mod bash;
#[path = "shell/harness.rs"]
mod harness;
#[path = "shell/processes.rs"]
mod processes;
#[path = "shell/sandbox.rs"]
mod sandbox;

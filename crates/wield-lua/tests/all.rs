//! wield-lua's integration tests, one test binary: the Lua files of a
//! workspace (tools, async sources, approval resolvers, the
//! `auto_approve` function file) loaded by a runtime in this process, and
//! called through its pipeline as `wield call --json` calls them. How the
//! command line, MCP and the agent reach them are the CLI's and
//! wield-agent's suites.

#[path = "suite/resolvers.rs"]
mod resolvers;
#[path = "suite/support.rs"]
mod support;
#[path = "suite/tools.rs"]
mod tools;

//! The built-in tools of wield.
//!
//! Each family lives in its own module and only reaches the outside world
//! through services the front-end installs in the executor (the file
//! confinement, the command runner settings): a tool never decides on its own
//! which paths are allowed.
//!
//! - [`calculator`]: an expression evaluator, the pipeline's smallest proof;
//! - [`fs`]: read, write, edit, ls, mkdir, glob, grep on a confined workspace;
//! - [`shell`]: bash and background processes;
//! - [`command`]: tools a user defines as a list of commands, run like
//!   bash's without a shell;
//! - [`web`]: web_fetch and web_search behind an SSRF guard;
//! - [`patch`]: multi-file patches applied completely or not at all;
//! - [`load_tools`]: loads deferred tools' schemas for the rest of a session;
//! - [`todo`]: the session's todo list; [`memory`]: notes kept across
//!   sessions, searchable; [`skill`]: skills loaded on demand;
//!   [`system_info`]: the machine and setup the tools run in.

use std::path::Path;

use wield_core::{Config, KeyTree, Services, ToolRef};

pub mod calculator;
pub mod command;
#[cfg(feature = "debug-tools")]
pub mod debug;
pub mod fs;
pub mod load_tools;
#[cfg(feature = "memory")]
pub mod memory;
pub mod patch;
pub mod shell;
pub mod skill;
pub mod system_info;
pub mod todo;
#[cfg(feature = "web")]
pub mod web;

/// Errors while preparing the services the tools need.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Invalid(String),
}

/// Every built-in tool.
pub fn builtin_tools() -> Vec<ToolRef> {
    let mut tools: Vec<ToolRef> = vec![std::sync::Arc::new(calculator::Calculator::new())];
    tools.extend(fs::tools());
    tools.extend(patch::tools());
    tools.extend(shell::tools());
    #[cfg(feature = "web")]
    tools.extend(web::tools());
    tools.push(std::sync::Arc::new(load_tools::LoadTools::new()));
    tools.extend(todo::tools());
    #[cfg(feature = "memory")]
    tools.extend(memory::tools());
    tools.push(std::sync::Arc::new(system_info::SystemInfo::new()));
    tools
}

/// The built-in tools that exist only for some workspaces (`skill`, when
/// the workspace has a skill, in it or in the global configuration
/// directory `global`).
pub fn workspace_tools(workspace: &Path, global: Option<&Path>) -> Vec<ToolRef> {
    skill::tools(workspace, global)
}

/// Register the config keys the built-in tools read outside their own
/// `[tool]` tables (`sandbox.*`, `process.*`, `read_before.*`,
/// `tools.command`).
pub fn register_config_keys(known: &mut KeyTree) {
    known.register(shell::CONFIG_KEYS);
    known.register(fs::CONFIG_KEYS);
    known.register(command::CONFIG_KEYS);
}

/// wield's global configuration directory of the runtime a call runs in
/// (`Config::global_dir`), a service for the tools that keep data there
/// (the global memory). Absent, or `None`: there is none.
pub struct GlobalConfigDir(pub Option<std::path::PathBuf>);

/// Install the services the built-in tools need (file confinement, command
/// settings, …) for a workspace and a configuration.
///
/// `guarded` are paths the front-end or the runtime protects while it runs
/// (a `.chat` document, a policy file wield executes): file tools refuse to
/// write them, saying why, and sandboxed commands get them read-only.
pub fn install_services(
    services: &mut Services,
    config: &Config,
    workspace: &Path,
    guarded: &[wield_sandbox::fs::Guarded],
) -> Result<(), SetupError> {
    services.insert(std::sync::Arc::new(GlobalConfigDir(config.global_dir.clone())));
    fs::install_services(services, config, workspace, guarded)?;
    shell::install_services(services, config, workspace, guarded)?;
    #[cfg(feature = "web")]
    web::check_config(config)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// MCP clients show a tool's title; each built-in tool has a real one.
    #[test]
    fn every_builtin_tool_has_a_title() {
        for tool in super::builtin_tools() {
            let spec = tool.spec();
            assert!(
                spec.title.as_deref().is_some_and(|t| !t.is_empty()),
                "{} has no title",
                spec.name
            );
        }
    }
}

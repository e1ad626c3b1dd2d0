//! Command tools: tools a user defines in configuration as a list of
//! commands whose arguments are filled from the model's input — no code,
//! and no shell:
//!
//! ```toml
//! [[tools.command]]
//! name = "run_tests"
//! description = "Run the project's tests for one package"
//! input_schema = { type = "object", properties = { package = { type = "string" } }, required = ["package"] }
//! cmds = [["cargo", "test", "-p", "${package}"], ["echo", "done"]]
//! requires_approval = true
//! timeout = "120s"
//! preview = "cargo test -p ${package}"
//! ```
//!
//! - [`template`]: how `${field}` becomes arguments (each value one whole
//!   argument, never parsed by a shell);
//! - [`definition`]: one tool's table, checked at load (unknown fields,
//!   the name, placeholders naming no property of the schema);
//! - [`sources`]: config layers and tool files, and name clashes;
//! - [`CommandTool`]: runs the commands in order through the `bash` tool's
//!   runner (sandbox, environment, timeout, output limits); the first
//!   failure stops the list;
//! - [`AlwaysAskResolver`]: `requires_approval = true`.

mod approval;
pub mod definition;
pub mod sources;
pub mod template;
mod tool;

use std::path::Path;
use std::sync::Arc;

pub use approval::{AlwaysAskResolver, PRIORITY_ALWAYS_ASK};
pub use definition::CommandDef;
pub use sources::check_clashes;
pub use tool::{ALWAYS_ASKS, CommandTool};
use wield_core::{Config, ToolRef};

use crate::SetupError;

/// The registry source of command tools (`wield tools show` names it).
pub const SOURCE: &str = "command";

/// The config key command tools are defined under (a list of tables,
/// whose fields [`definition`] checks).
pub const CONFIG_KEYS: &[&str] = &["tools.command"];

/// The command tools defined for `workspace` (see [`sources`]); an error
/// when one has the name of a tool in `registered` (names with where they
/// come from).
pub fn tools<'a>(
    config: &Config,
    workspace: &Path,
    registered: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<ToolRef>, SetupError> {
    let defs = sources::definitions(config, workspace)?;
    check_clashes(&defs, registered)?;
    Ok(defs
        .into_iter()
        .map(|d| Arc::new(CommandTool::new(d)) as ToolRef)
        .collect())
}

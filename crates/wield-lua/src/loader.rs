//! Finding and loading `*.lua` files: tools from `.wield/tools/` of the
//! workspace and `tools/` of wield's global config directory, resolvers
//! from `.wield/resolvers/`. A file that fails is a warning naming it
//! (and the line, when Lua knows it), never an error of the whole load.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mlua::{Table, Value};
use wield_core::ToolRef;

use crate::error::LuaError;
use crate::sandbox::{Limits, Sandbox};
use crate::source::AsyncSource;
use crate::tool::{LuaTool, Script};

/// What the tool directories hold.
#[derive(Default)]
pub struct Loaded {
    pub tools: Vec<ToolRef>,
    pub sources: Vec<AsyncSource>,
    /// One line per file that failed: `file:line: what`.
    pub warnings: Vec<String>,
}

/// The directories Lua tools are read from, in order: the workspace's
/// `.wield/tools`, then `tools` in wield's global config directory
/// `global`, when there is one.
pub fn tool_dirs(workspace: &Path, global: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![workspace.join(".wield").join("tools")];
    if let Some(global) = global {
        dirs.push(global.join("tools"));
    }
    dirs
}

/// The `*.lua` files directly in `dir`, sorted by name.
pub(crate) fn lua_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lua") && p.is_file())
        .collect();
    files.sort();
    files
}

/// Load every tool file of `dirs` with `limits`.
pub fn load_tools(dirs: &[PathBuf], limits: Limits) -> Loaded {
    let mut loaded = Loaded::default();
    for dir in dirs {
        for file in lua_files(dir) {
            if let Err(e) = load_tool_file(&file, dir, limits, &mut loaded) {
                loaded.warnings.push(format!("Lua tool file {}: {e}", file.display()));
            }
        }
    }
    loaded
}

fn load_tool_file(file: &Path, dir: &Path, limits: Limits, loaded: &mut Loaded) -> Result<(), LuaError> {
    let sandbox = Sandbox::new(limits, Some(dir))?;
    let value = sandbox.run_file(file)?;
    let where_ = file.display().to_string();
    let script = Script::new(sandbox, where_.clone());
    let Value::Table(t) = value else {
        return Err(LuaError::shape(
            &where_,
            format!(
                "the file returned a {}; it must return a tool definition, a list of them, or {{ resolve = function(register, done) ... end }}",
                value.type_name()
            ),
        ));
    };
    if let Value::Function(resolve) = t.get::<Value>("resolve")? {
        let timeout = match t.get::<Value>("timeout")? {
            Value::Integer(n) if n > 0 => Duration::from_secs(n.unsigned_abs()),
            Value::Number(n) if n > 0.0 && n.is_finite() => Duration::from_secs_f64(n.min(3600.0)),
            Value::Nil => wield_core::DEFAULT_SOURCE_TIMEOUT,
            other => {
                return Err(LuaError::shape(
                    &where_,
                    format!(
                        "`timeout` must be a positive number of seconds, not {}",
                        crate::sandbox::display(&other)
                    ),
                ));
            }
        };
        loaded.sources.push(AsyncSource {
            name: format!("lua:{}", file.display()),
            timeout,
            script,
            resolve,
        });
        return Ok(());
    }
    let defs: Vec<Table> = if t.contains_key("name")? {
        vec![t]
    } else {
        t.sequence_values::<Value>()
            .enumerate()
            .map(|(i, v)| match v? {
                Value::Table(d) => Ok(d),
                other => Err(LuaError::shape(
                    &where_,
                    format!(
                        "item {} of the returned list is a {}, not a tool definition",
                        i + 1,
                        other.type_name()
                    ),
                )),
            })
            .collect::<Result<_, _>>()?
    };
    if defs.is_empty() {
        return Err(LuaError::shape(
            &where_,
            "the file returned an empty table: no tool definition in it",
        ));
    }
    for def in defs {
        match LuaTool::from_table(&script, &def, &where_) {
            Ok(tool) => loaded.tools.push(Arc::new(tool)),
            Err(e) => loaded.warnings.push(format!("Lua tool file {where_}: {e}")),
        }
    }
    Ok(())
}

//! Where command tools are defined: `[[tools.command]]` in every
//! configuration layer (the user's file, the project's
//! `.wield/config.toml`, `--config`, …: they add up, they do not replace
//! each other), and tool files: `.wield/tools/*.toml` in the workspace and
//! `tools/*.toml` in the user's config directory, each file one tool (its
//! fields at the top level).

use std::path::{Path, PathBuf};

use wield_core::Config;
use wield_core::config::{enclosing_project, trust};

use super::definition::CommandDef;
use crate::SetupError;

/// The largest tool file read.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Every command tool defined for `workspace`, checked, with no two of the
/// same name (ignoring case, as approval rules do).
pub fn definitions(config: &Config, workspace: &Path) -> Result<Vec<CommandDef>, SetupError> {
    let mut defs = Vec::new();
    for (origin, value) in config.layered_values("tools.command") {
        let toml::Value::Array(items) = value else {
            return Err(SetupError::Invalid(format!(
                "tools.command in {origin} must be a list of tables: write each tool as [[tools.command]]"
            )));
        };
        for item in items {
            let Some(table) = item.as_table() else {
                return Err(SetupError::Invalid(format!(
                    "tools.command in {origin} must be a list of tables: write each tool as [[tools.command]]"
                )));
            };
            defs.push(CommandDef::from_table(table, origin)?);
        }
    }
    let mut dirs = Vec::new();
    if let Some(dir) = &config.global_dir {
        dirs.push((dir.join("tools"), false));
    }
    dirs.push((workspace.join(".wield").join("tools"), true));
    for (dir, in_workspace) in dirs {
        for file in tool_files(&dir)? {
            let text = read(&file)?;
            if in_workspace {
                check_plantable(&file, workspace, config.global_dir.as_deref(), &text)?;
            }
            let origin = file.display().to_string();
            let table: toml::Table =
                toml::from_str(&text).map_err(|e| SetupError::Invalid(format!("invalid TOML in {origin}: {e}")))?;
            defs.push(CommandDef::from_table(&table, &origin)?);
        }
    }
    for (i, def) in defs.iter().enumerate() {
        if let Some(first) = defs[..i].iter().find(|d| d.name.eq_ignore_ascii_case(&def.name)) {
            return Err(SetupError::Invalid(format!(
                "command tool `{}` is defined twice: in {} and in {}; rename or remove one",
                def.name, first.origin, def.origin
            )));
        }
    }
    Ok(defs)
}

/// The `*.toml` files of a tools directory, by name; none when it does not
/// exist.
fn tool_files(dir: &Path) -> Result<Vec<PathBuf>, SetupError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SetupError::Invalid(format!("cannot list {}: {e}", dir.display()))),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

fn read(file: &Path) -> Result<String, SetupError> {
    use std::io::Read;
    let fail = |e: std::io::Error| SetupError::Invalid(format!("cannot read the tool file {}: {e}", file.display()));
    let mut text = String::new();
    std::fs::File::open(file)
        .map_err(fail)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(fail)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(SetupError::Invalid(format!(
            "the tool file {} is larger than {MAX_FILE_BYTES} bytes",
            file.display()
        )));
    }
    Ok(text)
}

/// A tool file of a workspace nested in another wield project is refused
/// unless trusted, as its `.wield/config.toml` is: that project's sandboxed
/// commands could have written it.
fn check_plantable(file: &Path, workspace: &Path, global: Option<&Path>, text: &str) -> Result<(), SetupError> {
    match enclosing_project(workspace) {
        Some(enclosing) if !trust::is_trusted(global, file, text.as_bytes()) => Err(SetupError::Invalid(format!(
            "refusing to load the tool file {}: it lies in the workspace of the wield project {}, whose sandboxed \
             commands may write there. If you wrote it, define the tool in a file you pass with --config instead",
            file.display(),
            enclosing.display()
        ))),
        _ => Ok(()),
    }
}

/// An error when a command tool has the name of another tool (ignoring
/// case): `others` are the registered tools with where they come from.
pub fn check_clashes<'a>(
    defs: &[CommandDef],
    others: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), SetupError> {
    for (name, source) in others {
        if let Some(def) = defs.iter().find(|d| d.name.eq_ignore_ascii_case(name)) {
            let what = if source == "builtin" {
                format!("the built-in tool `{name}`")
            } else {
                format!("the tool `{name}` of {source}")
            };
            return Err(SetupError::Invalid(format!(
                "command tool `{}` in {} has the name of {what}; rename it",
                def.name, def.origin
            )));
        }
    }
    Ok(())
}

//! `wield config trust [--remove]`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use wield_core::config::{enclosing_project, trust};

use crate::app::usage;
use crate::cli::{ConfigCommand, GlobalArgs};

pub fn run(global: &GlobalArgs, cmd: ConfigCommand) -> anyhow::Result<ExitCode> {
    let ConfigCommand::Trust { remove } = cmd;
    // Not through the runtime: loading the configuration is what fails
    // until the file is trusted.
    let workspace = match &global.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace =
        std::fs::canonicalize(&workspace).map_err(|e| usage(format!("workspace {}: {e}", workspace.display())))?;
    let file = workspace.join(".wield").join("config.toml");
    let mut out = std::io::stdout().lock();
    if remove {
        let list = trust::set_trusted(&file, None)?;
        writeln!(out, "no longer trusted: {} (in {})", file.display(), list.display())?;
        return Ok(ExitCode::SUCCESS);
    }
    let content = std::fs::read(&file).map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?;
    let list = trust::set_trusted(&file, Some(&content))?;
    writeln!(
        out,
        "trusted {} as it is now (sha256 {}), in {}; if it changes, wield refuses it again",
        file.display(),
        trust::digest(&content),
        list.display()
    )?;
    if enclosing_project(&workspace).is_none() {
        writeln!(
            out,
            "(this workspace is in no other wield project's workspace: its config loads without trust)"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

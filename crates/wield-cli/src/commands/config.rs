//! `wield config trust [--remove]`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use wield_core::config::{enclosing_project, trust};

use crate::app::{usage, workspace};
use crate::cli::{ConfigCommand, GlobalArgs};
use wield_runtime::update_file;

pub fn run(global: &GlobalArgs, cmd: ConfigCommand) -> anyhow::Result<ExitCode> {
    let ConfigCommand::Trust { remove } = cmd;
    // Not through the runtime: loading the configuration is what fails
    // until the file is trusted.
    let workspace = workspace(global)?;
    let file = workspace.join(".wield").join("config.toml");
    let list = wield_core::config::global_config_dir()
        .map(|d| trust::list_in(&d))
        .context("no global config directory: set HOME or XDG_CONFIG_HOME")?;
    let content = if remove {
        None
    } else {
        Some(std::fs::read(&file).map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?)
    };
    update_file(&list, |text| -> anyhow::Result<_> {
        Ok(Some(trust::with_trust(text, &list, &file, content.as_deref())?))
    })?;
    let mut out = std::io::stdout().lock();
    let Some(content) = content else {
        writeln!(out, "no longer trusted: {} (in {})", file.display(), list.display())?;
        return Ok(ExitCode::SUCCESS);
    };
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

//! `wield patch apply FILE|-`: the patch tool, for people.

use std::io::Read;
use std::process::ExitCode;

use serde_json::json;

use super::call::run_tool;
use crate::app::usage;
use crate::cli::{GlobalArgs, PatchCommand};

pub async fn run(global: &GlobalArgs, cmd: PatchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PatchCommand::Apply { file, json } => {
            let text = if file == "-" {
                let mut s = String::new();
                std::io::stdin()
                    .read_to_string(&mut s)
                    .map_err(|e| usage(format!("cannot read the patch from stdin: {e}")))?;
                s
            } else {
                // The file is named from where the command runs, not the workspace (-C).
                std::fs::read_to_string(&file).map_err(|e| usage(format!("cannot read the patch file {file}: {e}")))?
            };
            run_tool(global, "patch".to_owned(), json!({ "patch": text }), json).await
        }
    }
}

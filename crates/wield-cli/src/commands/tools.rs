//! `wield tools list | show | schema`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use wield_core::approval::printable;
use wield_core::schema::export_tools;
use wield_core::{ExportFormat, names::closest};

use crate::app::{Runtime, usage};
use crate::cli::{GlobalArgs, ToolsCommand};

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    match line.find(". ") {
        Some(i) => &line[..=i],
        None => line,
    }
}

pub async fn run(global: &GlobalArgs, cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    let rt = Runtime::load(global).await?;
    let mut out = std::io::stdout().lock();
    match cmd {
        ToolsCommand::List { json } => {
            let visible = rt.visible();
            if json {
                let items: Vec<_> = visible
                    .iter()
                    .map(|r| {
                        let s = r.tool.spec();
                        json!({"name": s.name, "api_name": r.api_name, "description": s.description})
                    })
                    .collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&items)?)?;
            } else {
                list(&visible, &mut out)?;
            }
        }
        ToolsCommand::Show { name } => {
            let tools = rt.tools().current();
            let Some(r) = tools.registry.lookup(&name) else {
                let hint = closest(&name, tools.registry.names())
                    .map(|c| format!(" Did you mean `{c}`?"))
                    .unwrap_or_default();
                return Err(usage(format!("unknown tool `{name}`.{hint}")));
            };
            let s = r.tool.spec();
            writeln!(out, "{}", s.name)?;
            if r.api_name != s.name {
                writeln!(out, "API name: {}", r.api_name)?;
            }
            // A bridged tool's description is the server's text: shown, never
            // obeyed by the terminal.
            writeln!(out, "source: {}\n\n{}\n", r.source, printable(&s.description))?;
            writeln!(
                out,
                "input schema:\n{}\n",
                serde_json::to_string_pretty(&s.input_schema)?
            )?;
            writeln!(out, "strict: {}", s.strict)?;
            writeln!(out, "traits:\n{}", serde_json::to_string_pretty(r.tool.traits())?)?;
        }
        ToolsCommand::Debug { json } => super::tools_debug::print(&rt, json, &mut out)?,
        ToolsCommand::Schema { format } => {
            let format: ExportFormat = format.parse().map_err(usage)?;
            let visible = rt.visible();
            let payload = export_tools(visible.iter().map(|r| (r.tool.spec(), r.api_name.as_str())), format);
            writeln!(out, "{}", serde_json::to_string_pretty(&payload)?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per tool: its name and the first sentence of its description
/// (`wield tools list` and the interactive agent's `/tools`).
pub fn list(visible: &[std::sync::Arc<wield_core::Registered>], out: &mut impl Write) -> std::io::Result<()> {
    let width = visible.iter().map(|r| r.tool.spec().name.len()).max().unwrap_or(0);
    for r in visible {
        let s = r.tool.spec();
        writeln!(out, "{:width$}  {}", s.name, printable(first_line(&s.description)))?;
    }
    Ok(())
}

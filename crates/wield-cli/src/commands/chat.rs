//! `wield chat new | status | approve | reject`: a `.chat` document's state
//! and the decisions a person writes into it (Flemma's `tool:approve` and
//! `tool:reject`). Every change is written atomically, and only if the file
//! is still what was read: a person editing it at the same time loses
//! nothing.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use wield_chat::{CallStatus, Status};

use crate::app::usage;
use crate::cli::ChatCommand;

pub fn run(cmd: ChatCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ChatCommand::New { file, system } => {
            if file.exists() {
                return Err(usage(format!(
                    "{} exists already; `wield chat status {}` shows it",
                    file.display(),
                    file.display()
                )));
            }
            let mut text = String::new();
            if let Some(system) = system.filter(|s| !s.trim().is_empty()) {
                text.push_str(&format!("@System:\n{}\n\n", system.trim_end()));
            }
            text.push_str(wield_chat::write::new_prompt().trim_start_matches('\n'));
            wield_runtime::write_atomic(&file, text.as_bytes())
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
            writeln!(std::io::stdout().lock(), "started {}", file.display())?;
        }
        ChatCommand::Status { file, json } => {
            let text = read(&file)?;
            let doc = wield_chat::parse(&text);
            let state = doc.state();
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&state)?)?;
            } else {
                writeln!(out, "{} messages", state.messages.len())?;
                for call in &state.tool_uses {
                    writeln!(
                        out,
                        "line {:>5}  {:<9} {} ({})",
                        call.line,
                        status_word(call.status),
                        call.name,
                        call.id
                    )?;
                }
                for d in &state.diagnostics {
                    writeln!(out, "{d}")?;
                }
                if state.blocked {
                    writeln!(out, "blocked: an error above stops the document from being sent")?;
                }
            }
        }
        ChatCommand::Approve { file, ids, all } => {
            let text = read(&file)?;
            let doc = wield_chat::parse(&text);
            let calls = doc.tool_calls();
            let ids: Vec<String> = if all {
                calls
                    .iter()
                    .filter(|c| c.status == CallStatus::Pending)
                    .map(|c| c.id.clone())
                    .collect()
            } else if ids.is_empty() {
                return Err(usage("name the tool-use ids to approve, or give --all"));
            } else {
                ids
            };
            let mut new = text.clone();
            for id in &ids {
                let Some(call) = calls.iter().find(|c| &c.id == id) else {
                    return Err(usage(unknown(id, &calls)));
                };
                if call.status == CallStatus::Missing {
                    return Err(usage(format!(
                        "`{id}` has no result block yet: give it a `**Tool Result:** `{id}` (approved)` block, or let \
                         the next cycle write its placeholder"
                    )));
                }
                new = wield_chat::parse(&new).with_status(id, Some(Status::Approved))?;
            }
            replace(&file, &text, &new)?;
            let what = if ids.is_empty() {
                "nothing (no call is pending)".into()
            } else {
                ids.join(", ")
            };
            writeln!(std::io::stdout().lock(), "approved {what}")?;
        }
        ChatCommand::Reject { file, id, message } => {
            let text = read(&file)?;
            let doc = wield_chat::parse(&text);
            let calls = doc.tool_calls();
            let Some(call) = calls.iter().find(|c| c.id == id) else {
                return Err(usage(unknown(&id, &calls)));
            };
            if call.status.is_final() {
                return Err(usage(format!("`{id}` has its result already")));
            }
            let new = if call.status == CallStatus::Missing {
                return Err(usage(format!(
                    "`{id}` has no result block yet: let the next cycle write its placeholder, then reject it"
                )));
            } else {
                doc.with_result(&id, Some(Status::Rejected), message.as_deref().unwrap_or(""))?
            };
            replace(&file, &text, &new)?;
            writeln!(std::io::stdout().lock(), "rejected {id}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn status_word(status: CallStatus) -> &'static str {
    match status {
        CallStatus::Missing => "no result",
        CallStatus::Pending => "pending",
        CallStatus::Approved => "approved",
        CallStatus::Denied => "denied",
        CallStatus::Rejected => "rejected",
        CallStatus::Aborted => "aborted",
        CallStatus::Done => "done",
        CallStatus::Error => "error",
    }
}

fn unknown(id: &str, calls: &[wield_chat::ToolCall]) -> String {
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    if ids.is_empty() {
        format!("no tool use `{id}`: the document has no tool calls")
    } else {
        format!("no tool use `{id}`; the document's: {}", ids.join(", "))
    }
}

fn read(file: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(file).map_err(|e| usage(format!("cannot read {}: {e}", file.display())))
}

/// Writes `new` over `file` if it still holds `old` (the cycle's own
/// compare-and-swap: atomic, the file's permissions kept).
fn replace(file: &Path, old: &str, new: &str) -> anyhow::Result<()> {
    let written = wield_chat::cycle::replace(file, old, new, true)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
    if !written {
        anyhow::bail!(
            "{} changed while wield read it; nothing was written: run the command again",
            file.display()
        );
    }
    Ok(())
}

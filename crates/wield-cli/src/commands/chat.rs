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
            writeln!(
                std::io::stdout().lock(),
                "started {f}: write your message under `@You:`, then run `wield chat {f}`",
                f = file.display()
            )?;
        }
        ChatCommand::Status { file, json } => {
            let text = read(&file)?;
            let doc = wield_chat::parse(&text);
            let state = doc.state();
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&state)?)?;
            } else {
                let n = state.messages.len();
                writeln!(out, "{n} message{}", if n == 1 { "" } else { "s" })?;
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
                writeln!(out, "next: {}", next_step(&file, &state))?;
            }
            // A document with an error is not acted on: say so to scripts.
            if state
                .diagnostics
                .iter()
                .any(|d| d.severity == wield_chat::Severity::Error)
            {
                return Ok(ExitCode::from(1));
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
            if !ids.is_empty() {
                writeln!(
                    std::io::stdout().lock(),
                    "next: `wield chat {}` runs {} and sends the model the result",
                    file.display(),
                    if ids.len() == 1 { "it" } else { "them" }
                )?;
            }
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
            writeln!(
                std::io::stdout().lock(),
                "next: `wield chat {}` tells the model, which goes on without it",
                file.display()
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What the person does next with the document in `state`, in words.
fn next_step(file: &Path, state: &wield_chat::State) -> String {
    let f = file.display();
    if state.blocked {
        return format!("fix the error above, then run `wield chat {f}`");
    }
    if !state.pending.is_empty() {
        return format!(
            "`wield chat approve {f} {}` (or --all) or `wield chat reject {f} ID`, then `wield chat {f}`",
            state.pending.join(" ")
        );
    }
    match state.messages.last().map(|m| m.role.as_str()) {
        Some("you") if !state.unresolved.is_empty() => format!("`wield chat {f}` runs the approved calls"),
        Some("you") => format!("`wield chat {f}` sends your message to the model"),
        _ => format!("write your message under `@You:`, then run `wield chat {f}`"),
    }
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
    if !file.exists() {
        return Err(usage(format!(
            "{f} does not exist; `wield chat new {f}` starts a document there",
            f = file.display()
        )));
    }
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

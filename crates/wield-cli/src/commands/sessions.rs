//! `wield sessions list [--json]`.

use std::io::Write;
use std::process::ExitCode;
use std::time::SystemTime;

use serde_json::json;

use crate::app::workspace;
use crate::cli::{GlobalArgs, SessionsCommand};

pub fn run(global: &GlobalArgs, cmd: SessionsCommand) -> anyhow::Result<ExitCode> {
    let SessionsCommand::List { json } = cmd;
    // Not through the runtime: listing files needs no configuration.
    let workspace = workspace(global)?;
    let listed = wield_agent::session::list(&workspace);
    let mut out = std::io::stdout().lock();
    if json {
        let rows: Vec<serde_json::Value> = listed
            .iter()
            .map(|l| {
                let s = &l.session;
                json!({
                    "id": s.id,
                    "path": l.path,
                    "saved": l.modified.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
                    "stop": s.stop,
                    "error": s.error,
                    "resumable": s.resumable(),
                    "provider": s.provider,
                    "model": s.model,
                    "steps": s.steps,
                    "messages": s.messages.len(),
                    "tokens": s.usage.total_input() + s.usage.output,
                    "bytes": l.bytes,
                    "task": s.task(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&json!({ "sessions": rows }))?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if listed.is_empty() {
        writeln!(
            out,
            "No saved sessions in {}.\nnext: `wield run` saves one for each run (unless --ephemeral)",
            wield_agent::session::sessions_dir(&workspace).display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let now = SystemTime::now();
    for l in &listed {
        let s = &l.session;
        let outcome: String = s.outcome().chars().take(60).collect();
        let task: String = s.task().chars().take(50).collect();
        writeln!(
            out,
            "{}  {:>8}  {outcome}  {} step{}, {} message{}, {}  {task}",
            s.id,
            ago(now, l.modified),
            s.steps,
            if s.steps == 1 { "" } else { "s" },
            s.messages.len(),
            if s.messages.len() == 1 { "" } else { "s" },
            size(l.bytes),
        )?;
    }
    let next = match listed.iter().find(|l| l.session.resumable()) {
        Some(l) => format!("next: `wield run --resume` goes on with {}", l.session.id),
        None => "next: no run ended well enough to resume without an id; `wield run --resume ID` takes one".into(),
    };
    writeln!(out, "{next}")?;
    Ok(ExitCode::SUCCESS)
}

/// How long ago `then` was, in the largest unit that fits.
fn ago(now: SystemTime, then: SystemTime) -> String {
    let secs = now.duration_since(then).map(|d| d.as_secs()).unwrap_or(0);
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3_600 => format!("{} min ago", secs / 60),
        3_600..86_400 => format!("{} h ago", secs / 3_600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// A byte count for people.
fn size(bytes: u64) -> String {
    match bytes {
        0..1_024 => format!("{bytes} B"),
        1_024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1_024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

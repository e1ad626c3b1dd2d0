//! `wield call TOOL [ARGS|-]`: one call through the whole pipeline.

use std::io::{Read, Write};
use std::process::ExitCode;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_core::Call;

use crate::app::{Runtime, Servers, usage};
use crate::cli::{CallArgs, GlobalArgs};

/// The arguments of a call of `tool`: a JSON object, `-` for stdin, none
/// for `{}`.
pub fn parse_args(tool: &str, raw: Option<&str>) -> anyhow::Result<Value> {
    let text = match raw {
        None => return Ok(json!({})),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| usage(format!("cannot read arguments from stdin: {e}")))?;
            s
        }
        Some(s) => s.to_owned(),
    };
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "invalid JSON arguments at line {} column {}: {e}. Pass one JSON object in single quotes, e.g. \
             `wield call {tool} '{{\"name\": \"value\"}}'`; `wield tools schema {tool}` shows what {tool} takes",
            e.line(),
            e.column()
        ))
    })
}

pub async fn run(global: &GlobalArgs, args: CallArgs) -> anyhow::Result<ExitCode> {
    let input = parse_args(&args.tool, args.args.as_deref())?;
    run_tool(global, args.tool, input, args.json).await
}

/// One call of `tool` with `input` in a person-driven session of its own,
/// printed as `wield call` prints it; shared by commands that are a tool
/// under another name (`wield patch apply`).
pub async fn run_tool(global: &GlobalArgs, tool: String, input: Value, json: bool) -> anyhow::Result<ExitCode> {
    let rt = Runtime::load_servers(global, Servers::for_tool(&tool)).await?;
    let executor = rt.executor()?;
    // A person drives `wield call`: model-honesty checks (read-before-write) are off.
    let session = rt.session("call", wield_core::Driver::Person);
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        super::stop_signal().await;
        on_signal.cancel();
    });
    let result = executor
        .run_one(Call::new("call-1", tool, input), &session, &cancel)
        .await;
    let mut stdout = std::io::stdout().lock();
    if json {
        let v = json!({
            "success": result.success,
            "output": result.output,
            "error": result.error,
            "metadata": result.metadata,
        });
        writeln!(stdout, "{v}")?;
    } else {
        if !result.output.is_empty() {
            write!(stdout, "{}", result.output)?;
            if !result.output.ends_with('\n') {
                writeln!(stdout)?;
            }
        }
        if let Some(e) = &result.error {
            eprintln!("error: {e}");
        }
    }
    stdout.flush()?;
    drop(session);
    Ok(if result.success {
        ExitCode::SUCCESS
    } else if cancel.is_cancelled() {
        // Interrupted (Ctrl-C, SIGTERM): as every command reports it.
        ExitCode::from(130)
    } else {
        ExitCode::from(1)
    })
}

//! `wield complete [PROMPT|-]`: one model turn, streamed; nothing is run.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wield_llm::settings::ToolProtocol;
use wield_llm::{Message, Request, Role, StreamEvent, ToolChoice};

use super::providers::choose;
use crate::app::{Runtime, Servers, usage};
use crate::cli::{CompleteArgs, GlobalArgs};

/// `--input`: a conversation in wield's conversation model.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Conversation {
    #[serde(default)]
    system: Option<String>,
    messages: Vec<Message>,
}

pub async fn run(global: &GlobalArgs, args: CompleteArgs) -> anyhow::Result<ExitCode> {
    let conversation = conversation(&args)?;
    let servers = if args.tools { Servers::All } else { Servers::None };
    let rt = Runtime::load_servers(global, servers).await?;
    let (settings, provider) = choose(&rt, args.provider.as_deref(), args.model.as_deref())?;

    // Tools go on the wire under their provider-safe names.
    let visible = if args.tools { rt.visible() } else { Vec::new() };
    let tools = wield_agent::tool_defs(&visible);
    let mut system = args.system.clone().or(conversation.system);
    let xml = settings.tool_protocol == ToolProtocol::Xml && !tools.is_empty();
    if xml {
        let described = wield_llm::xml::describe_tools(&tools);
        system = Some(match system {
            Some(s) => format!("{s}\n\n{described}"),
            None => described,
        });
    }
    let request = Request {
        system,
        messages: conversation.messages,
        tools: if xml { Vec::new() } else { tools.clone() },
        tool_choice: if tools.is_empty() {
            ToolChoice::Auto
        } else {
            settings.tool_choice.clone()
        },
        parallel_tool_calls: None,
        max_tokens: settings.max_tokens,
        temperature: settings.temperature,
        foreign_thinking: settings.foreign_thinking,
    };

    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        super::stop_signal().await;
        on_signal.cancel();
    });
    let stdout = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let streamed = {
        let stdout = Arc::clone(&stdout);
        let json = args.json;
        provider
            .stream(&request, &cancel, move |event| {
                if let (false, StreamEvent::TextDelta { text }) = (json, event) {
                    let mut out = stdout.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let _ = out.write_all(text.as_bytes());
                    let _ = out.flush();
                }
            })
            .await
    };
    let mut response = match streamed {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {}: {e}", settings.name);
            return Ok(ExitCode::from(1));
        }
    };
    if xml {
        response = wield_llm::xml::read_reply(response, &tools, "call_");
    }
    wield_agent::registry_names(&mut response, &visible);
    let mut out = stdout.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if args.json {
        let calls: Vec<serde_json::Value> = response
            .tool_calls()
            .map(|(id, name, input)| json!({ "id": id, "name": name, "input": input }))
            .collect();
        let v = json!({
            "provider": settings.name,
            "model": settings.model,
            "content": response.content,
            "tool_calls": calls,
            "usage": response.usage,
            "stop": response.stop.as_str(),
        });
        writeln!(out, "{v}")?;
    } else {
        if !response.text().is_empty() && !response.text().ends_with('\n') {
            writeln!(out)?;
        }
        for (id, name, input) in response.tool_calls() {
            writeln!(out, "[tool call {id}] {name} {input}")?;
        }
        for bad in &response.bad_calls {
            eprintln!("warning: {}", bad.message());
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The conversation to send: `--input`, or PROMPT (`-`: stdin) as one user
/// message.
fn conversation(args: &CompleteArgs) -> anyhow::Result<Conversation> {
    if let Some(path) = &args.input {
        let text = std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
        let c: Conversation = serde_json::from_str(&text).map_err(|e| {
            usage(format!(
                "{} is not a conversation: {e}. Write {{\"system\": \"…\", \"messages\": [{{\"role\": \"user\", \
                 \"content\": [{{\"type\": \"text\", \"text\": \"…\"}}]}}]}}",
                path.display()
            ))
        })?;
        if c.messages.is_empty() {
            return Err(usage(format!("{} has no messages", path.display())));
        }
        return Ok(c);
    }
    let text = match args.prompt.as_deref() {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| usage(format!("cannot read the prompt from stdin: {e}")))?;
            s
        }
        Some(p) => p.to_owned(),
        None => return Err(usage("give a PROMPT, `-` to read it from stdin, or --input FILE")),
    };
    if text.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    Ok(Conversation {
        system: None,
        messages: vec![Message::text(Role::User, text)],
    })
}

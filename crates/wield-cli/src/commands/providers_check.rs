//! `wield providers check [NAME]`: whether a provider can run the agent —
//! it answers, wield's first request fits its context, it calls tools —
//! with each problem named and how to fix it.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use wield_agent::{AgentSession, AgentTools};
use wield_llm::settings::ProviderSettings;
use wield_llm::{Kind, Message, Request, Role, ToolChoice, ToolDef};

use super::providers::connect;
use crate::app::{Runtime, Servers};
use crate::cli::GlobalArgs;

/// Room left in the context for a reply, at the least.
const REPLY_ROOM: u64 = 1_024;

pub async fn run(global: &GlobalArgs, name: Option<&str>) -> anyhow::Result<ExitCode> {
    // The session `wield run` would build, for the request it would send.
    let agent_tools = AgentTools::new();
    let rt = Runtime::load_with(global, None, Servers::None, agent_tools.tools()).await?;
    let session = AgentSession::builder(&rt.inner)
        .tools(&agent_tools)
        .agent(global.agent.as_deref())
        .provider(name)
        .build()
        .map_err(super::session_error)?;
    let mut settings = session.provider().clone();
    // A check says what is wrong soon rather than retrying for long.
    settings.max_retries = settings.max_retries.min(1);
    let provider = connect(&settings)?;
    let first = session.agent().first_request("List the files of the workspace.");
    let name = settings.name.as_str();
    let cancel = CancellationToken::new();
    let mut out = std::io::stdout().lock();
    let mut problems = 0;

    // It answers.
    let started = Instant::now();
    if let Err(e) = provider.stream(&Request::probe(), &cancel, |_| {}).await {
        writeln!(out, "{name}: problem: {e}")?;
        writeln!(out, "  fix: {}", unanswered_fix(&settings))?;
        return Ok(ExitCode::from(1));
    }
    writeln!(
        out,
        "{name}: {} ({} at {}) answered in {} ms",
        settings.model,
        settings.kind.name(),
        settings.base_url,
        started.elapsed().as_millis()
    )?;

    // wield's first request fits the context.
    let needed = request_tokens(&first);
    let tools = first.tools.len();
    let context = match settings.context_window {
        Some(c) => Some(c),
        None if settings.kind == Kind::OpenAiCompatible => {
            wield_llm::discover::discover(&settings.base_url, Duration::from_secs(5))
                .await
                .ok()
                .and_then(|d| d.context)
        }
        None => None,
    };
    let what = format!("about {needed} tokens: the system prompt and {tools} tools");
    let too_small = |out: &mut std::io::StdoutLock<'_>, context: String| -> std::io::Result<()> {
        writeln!(
            out,
            "{name}: problem: wield's first request ({what}) does not fit the model's context ({context}) with room for a reply"
        )?;
        writeln!(out, "  fix: {}", context_fix(&settings, needed))
    };
    match context {
        Some(c) if needed + REPLY_ROOM > c => {
            too_small(&mut out, format!("{c} tokens"))?;
            problems += 1;
        }
        _ => {
            let probe = Request {
                max_tokens: Some(1),
                tool_choice: ToolChoice::Auto,
                ..first.clone()
            };
            match provider.stream(&probe, &cancel, |_| {}).await {
                Ok(_) => {
                    let of = context.map_or_else(
                        || "its context size is not known: set context_window so wield compacts in time".to_owned(),
                        |c| format!("the context is {c} tokens"),
                    );
                    writeln!(out, "{name}: wield's first request ({what}) was accepted; {of}")?;
                }
                Err(e) if e.is_context_overflow() => {
                    too_small(&mut out, "the server refused it as too long".to_owned())?;
                    problems += 1;
                }
                Err(e) => {
                    writeln!(out, "{name}: problem: wield's first request ({what}) was refused: {e}")?;
                    problems += 1;
                }
            }
        }
    }

    // It calls tools: one trivial tool the model must call.
    let ping = Request {
        messages: vec![Message::text(Role::User, "Call the ping tool.")],
        max_tokens: Some(64),
        tools: vec![ToolDef {
            name: "ping".into(),
            description: "Answers pong.".into(),
            input_schema: json!({ "type": "object", "properties": {} }),
            strict: false,
        }],
        tool_choice: ToolChoice::Required,
        ..Request::default()
    };
    match provider.stream(&ping, &cancel, |_| {}).await {
        Ok(r) if r.tool_calls().any(|(_, called, _)| called == "ping") => {
            writeln!(out, "{name}: tool calling works")?;
        }
        Ok(_) => {
            writeln!(
                out,
                "{name}: problem: the model answered without calling the tool it was told to call"
            )?;
            writeln!(out, "  fix: {}", tool_calling_fix(&settings))?;
            problems += 1;
        }
        Err(e) => {
            writeln!(out, "{name}: problem: a request with a tool failed: {e}")?;
            writeln!(out, "  fix: {}", tool_calling_fix(&settings))?;
            problems += 1;
        }
    }
    if problems == 0 {
        writeln!(out, "{name}: ready; next: `wield run`")?;
        Ok(ExitCode::SUCCESS)
    } else {
        writeln!(
            out,
            "{name}: {problems} problem{}: the agent will not work well until {} fixed",
            if problems == 1 { "" } else { "s" },
            if problems == 1 { "it is" } else { "they are" }
        )?;
        Ok(ExitCode::from(1))
    }
}

/// The tokens of a request, estimated: the system prompt, the tools'
/// names, descriptions and schemas, the messages.
fn request_tokens(request: &Request) -> u64 {
    let system = request.system.as_deref().map_or(0, wield_agent::estimate_tokens);
    let tools: usize = request
        .tools
        .iter()
        .map(|t| wield_agent::estimate_tokens(&format!("{}{}{}", t.name, t.description, t.input_schema)))
        .sum();
    let messages = wield_agent::conversation_tokens(&request.messages);
    u64::try_from(system + tools + messages).unwrap_or(u64::MAX)
}

/// What to do when the provider does not answer at all.
fn unanswered_fix(settings: &ProviderSettings) -> String {
    if settings.kind == Kind::OpenAiCompatible {
        format!(
            "start the model server (docs/local-models.md has the commands for llama.cpp, Ollama and LM Studio), \
             or correct providers.{}.base_url ({})",
            settings.name, settings.base_url
        )
    } else {
        format!(
            "check the key ({}) and that {} is reachable from here",
            settings.api_key_env.as_deref().unwrap_or("none"),
            settings.base_url
        )
    }
}

/// What to do when wield's first request does not fit.
fn context_fix(settings: &ProviderSettings, needed: u64) -> String {
    // The next power of two with room for the work itself.
    let want = (needed * 3).next_power_of_two().max(16_384);
    let server = if settings.kind == Kind::OpenAiCompatible {
        format!(
            "start the server with a context of {want} tokens or more (llama-server -c {want}; Ollama: \
             OLLAMA_CONTEXT_LENGTH={want}; LM Studio: the model's context length), then set \
             providers.{}.context_window = {want}; or ",
            settings.name
        )
    } else {
        String::new()
    };
    format!("{server}offer fewer tools (--profile minimal, or --exclude-tools)")
}

/// What to do when the model does not call tools.
fn tool_calling_fix(settings: &ProviderSettings) -> String {
    if settings.kind == Kind::OpenAiCompatible {
        format!(
            "llama-server needs --jinja (and a model whose chat template has tool calls, or \
             --chat-template-file); Ollama and LM Studio need a model that supports tools; or set \
             providers.{}.tool_protocol = \"xml\" for a model without tool calling",
            settings.name
        )
    } else {
        "choose a model that supports tool calling".to_owned()
    }
}

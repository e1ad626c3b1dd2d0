//! The Anthropic Messages request body.

use serde_json::{Map, Value, json};

use crate::conversation::{Block, ForeignThinking, Message, ResultPart, Role};
use crate::request::{Request, ToolChoice, paired};

/// How an Anthropic model thinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnthropicThinking {
    Off,
    /// Extended thinking with this budget of tokens.
    Budget(u32),
    /// The model decides how much to think (models that take it).
    Adaptive,
}

/// Output tokens when the request names none (the API requires a number).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The body of a streamed Messages request for `model` of provider kind
/// `kind`. Thinking goes back with its signature (or redacted data) only to
/// the provider and model that made it; otherwise as text or not at all.
/// Prompt-caching marks go on the system prompt, the last tool and the last
/// message.
pub fn anthropic_body(kind: &str, model: &str, request: &Request, thinking: AnthropicThinking) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    body.insert("stream".into(), json!(true));
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert(
            "system".into(),
            json!([{ "type": "text", "text": system, "cache_control": { "type": "ephemeral" } }]),
        );
    }
    let mut messages: Vec<Value> = paired(&request.messages)
        .iter()
        .filter_map(|m| encode_message(kind, model, request.foreign_thinking, m))
        .collect();
    if let Some(last) = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|c| c.last_mut())
    {
        last["cache_control"] = json!({ "type": "ephemeral" });
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                let mut tool = json!({ "name": t.name, "description": t.description, "input_schema": t.input_schema });
                if t.strict {
                    tool["strict"] = json!(true);
                }
                tool
            })
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = json!({ "type": "ephemeral" });
        }
        body.insert("tools".into(), Value::Array(tools));
        let mut choice = match &request.tool_choice {
            ToolChoice::Auto => json!({ "type": "auto" }),
            ToolChoice::Required => json!({ "type": "any" }),
            ToolChoice::None => json!({ "type": "none" }),
            ToolChoice::Tool(name) => json!({ "type": "tool", "name": name }),
        };
        if request.parallel_tool_calls == Some(false) && request.tool_choice != ToolChoice::None {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        body.insert("tool_choice".into(), choice);
    }
    // Thinking is incompatible with a non-default temperature.
    match thinking {
        AnthropicThinking::Budget(budget) => {
            body.insert("thinking".into(), json!({ "type": "enabled", "budget_tokens": budget }));
        }
        AnthropicThinking::Adaptive => {
            body.insert("thinking".into(), json!({ "type": "adaptive" }));
        }
        AnthropicThinking::Off => {
            if let Some(t) = request.temperature {
                body.insert("temperature".into(), json!(t));
            }
        }
    }
    Value::Object(body)
}

fn encode_message(kind: &str, model: &str, foreign: ForeignThinking, message: &Message) -> Option<Value> {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        // Only the top-level `system` exists; a system message mid-way is
        // told to the model as the user's.
        Role::System => "user",
    };
    let mut content: Vec<Value> = message
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } if text.is_empty() => None,
            Block::Text { text } => Some(json!({ "type": "text", "text": text })),
            Block::Image { media_type, data } => Some(json!({
                "type": "image", "source": { "type": "base64", "media_type": media_type, "data": data }
            })),
            Block::Document { media_type, data } => Some(json!({
                "type": "document", "source": { "type": "base64", "media_type": media_type, "data": data }
            })),
            Block::ToolUse { id, name, input } => {
                Some(json!({ "type": "tool_use", "id": id, "name": name, "input": input }))
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let parts: Vec<Value> = content
                    .iter()
                    .map(|p| match p {
                        ResultPart::Text { text } => json!({ "type": "text", "text": text }),
                        ResultPart::Image { media_type, data } => json!({
                            "type": "image", "source": { "type": "base64", "media_type": media_type, "data": data }
                        }),
                    })
                    .collect();
                let mut r = json!({ "type": "tool_result", "tool_use_id": tool_use_id, "content": parts });
                if *is_error {
                    r["is_error"] = json!(true);
                }
                Some(r)
            }
            Block::Thinking(t) if t.made_by(kind, model) => match (&t.redacted_data, &t.signature) {
                (Some(data), _) => Some(json!({ "type": "redacted_thinking", "data": data })),
                (None, Some(sig)) => Some(json!({ "type": "thinking", "thinking": t.text, "signature": sig })),
                // Without a signature the API refuses it: as text.
                (None, None) => (!t.text.is_empty()).then(|| json!({ "type": "text", "text": t.text })),
            },
            Block::Thinking(t) => match foreign {
                ForeignThinking::Text if !t.text.is_empty() => Some(json!({ "type": "text", "text": t.text })),
                _ => None,
            },
        })
        .collect();
    // Thinking blocks open an assistant message.
    content.sort_by_key(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")));
    (!content.is_empty()).then(|| json!({ "role": role, "content": content }))
}

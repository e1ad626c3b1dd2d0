//! The Chat Completions request body.

use serde_json::{Map, Value, json};

use crate::conversation::{Block, Message, Role};
use crate::request::{Request, ToolChoice, paired};

/// The body of a streamed Chat Completions request for `model` of provider
/// kind `kind`. Tool results become `role: tool` messages right after the
/// assistant message that called them, one per call; reasoning is not sent
/// (this format has no place for it that every server takes), except a
/// thought signature that came with a call from this model, which goes back
/// with it (Gemini's compatible endpoint).
pub fn chat_body(kind: &str, model: &str, request: &Request) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({ "role": "system", "content": system }));
    }
    for message in paired(&request.messages) {
        encode_message(kind, model, &message, &mut messages);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                let mut function = json!({
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                });
                if t.strict {
                    function["strict"] = json!(true);
                }
                json!({ "type": "function", "function": function })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert(
            "tool_choice".into(),
            match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
            },
        );
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_tokens".into(), json!(max));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    Value::Object(body)
}

fn encode_message(kind: &str, model: &str, message: &Message, out: &mut Vec<Value>) {
    match message.role {
        Role::System => out.push(json!({ "role": "system", "content": message.joined_text() })),
        Role::Assistant => {
            let text = message.joined_text();
            let mut calls: Vec<Value> = Vec::new();
            let mut signature: Option<&str> = None;
            for block in &message.content {
                match block {
                    Block::Thinking(t) if t.text.is_empty() && t.made_by(kind, model) => {
                        signature = t.signature.as_deref();
                    }
                    Block::ToolUse { id, name, input } => {
                        let mut call = json!({
                            "id": id,
                            "type": "function",
                            "function": { "name": name, "arguments": input.to_string() },
                        });
                        if let Some(sig) = signature.take() {
                            call["extra_content"] = json!({ "google": { "thought_signature": sig } });
                        }
                        calls.push(call);
                    }
                    _ => signature = None,
                }
            }
            let mut m =
                json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) } });
            if !calls.is_empty() {
                m["tool_calls"] = Value::Array(calls);
            }
            out.push(m);
        }
        Role::User => {
            // Results first, each a message of its own.
            for block in &message.content {
                if let Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } = block
                {
                    let text = super::result_text(content, *is_error);
                    out.push(json!({ "role": "tool", "tool_call_id": tool_use_id, "content": text }));
                }
            }
            let parts: Vec<Value> = message
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(json!({ "type": "text", "text": text })),
                    Block::Image { media_type, data } => Some(json!({
                        "type": "image_url",
                        "image_url": { "url": format!("data:{media_type};base64,{data}") },
                    })),
                    Block::Document { media_type, data } => Some(json!({
                        "type": "file",
                        "file": { "file_data": format!("data:{media_type};base64,{data}") },
                    })),
                    _ => None,
                })
                .collect();
            match parts.as_slice() {
                [] => {}
                // Plain text as a string: every server takes that.
                [only] if only["type"] == "text" => {
                    out.push(json!({ "role": "user", "content": only["text"] }));
                }
                _ => out.push(json!({ "role": "user", "content": parts })),
            }
        }
    }
}

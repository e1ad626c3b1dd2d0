//! The Gemini `generateContent` request body.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::conversation::{Block, ForeignThinking, Message, ResultPart, Role};
use crate::request::{Request, ToolChoice, paired};

/// The body of a streamed Gemini request for `model` of provider kind
/// `kind`. A thought signature goes back on the part it came with (the call
/// after it), only to the model that made it; function responses name
/// their call's function, as the API wants.
pub fn gemini_body(kind: &str, model: &str, request: &Request, thinking_budget: Option<i64>) -> Value {
    let mut body = Map::new();
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert("systemInstruction".into(), json!({ "parts": [{ "text": system }] }));
    }
    let messages = paired(&request.messages);
    // Function responses carry the function's name: from the calls.
    let names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::ToolUse { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    let contents: Vec<Value> = messages
        .iter()
        .filter_map(|m| encode_message(kind, model, request.foreign_thinking, m, &names))
        .collect();
    body.insert("contents".into(), Value::Array(contents));
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "parameters": gemini_schema(&t.input_schema) }))
            .collect();
        body.insert("tools".into(), json!([{ "functionDeclarations": declarations }]));
        let config = match &request.tool_choice {
            ToolChoice::Auto => json!({ "mode": "AUTO" }),
            ToolChoice::Required => json!({ "mode": "ANY" }),
            ToolChoice::None => json!({ "mode": "NONE" }),
            ToolChoice::Tool(name) => json!({ "mode": "ANY", "allowedFunctionNames": [name] }),
        };
        body.insert("toolConfig".into(), json!({ "functionCallingConfig": config }));
    }
    let mut generation = Map::new();
    if let Some(max) = request.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = request.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(budget) = thinking_budget {
        generation.insert(
            "thinkingConfig".into(),
            json!({ "thinkingBudget": budget, "includeThoughts": budget != 0 }),
        );
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

fn encode_message(
    kind: &str,
    model: &str,
    foreign: ForeignThinking,
    message: &Message,
    names: &HashMap<&str, &str>,
) -> Option<Value> {
    let role = match message.role {
        Role::Assistant => "model",
        Role::User | Role::System => "user",
    };
    let mut parts = Vec::new();
    // A signature waiting for the part it belongs to.
    let mut signature: Option<&str> = None;
    for block in &message.content {
        let mut part = match block {
            Block::Text { text } if text.is_empty() => continue,
            Block::Text { text } => json!({ "text": text }),
            Block::Image { media_type, data } | Block::Document { media_type, data } => {
                json!({ "inlineData": { "mimeType": media_type, "data": data } })
            }
            Block::ToolUse { id, name, input } => json!({ "functionCall": { "id": id, "name": name, "args": input } }),
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let text: String = content
                    .iter()
                    .filter_map(|p| match p {
                        ResultPart::Text { text } => Some(text.as_str()),
                        ResultPart::Image { .. } => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let key = if *is_error { "error" } else { "content" };
                let name = names.get(tool_use_id.as_str()).copied().unwrap_or("unknown");
                json!({ "functionResponse": { "id": tool_use_id, "name": name, "response": { key: text } } })
            }
            Block::Thinking(t) if t.made_by(kind, model) => {
                if let Some(sig) = &t.signature {
                    if t.text.is_empty() {
                        signature = Some(sig);
                        continue;
                    }
                    json!({ "text": t.text, "thought": true, "thoughtSignature": sig })
                } else if t.text.is_empty() {
                    continue;
                } else {
                    json!({ "text": t.text, "thought": true })
                }
            }
            Block::Thinking(t) => match foreign {
                ForeignThinking::Text if !t.text.is_empty() => json!({ "text": t.text }),
                _ => continue,
            },
        };
        if let Some(sig) = signature.take() {
            part["thoughtSignature"] = json!(sig);
        }
        parts.push(part);
    }
    (!parts.is_empty()).then(|| json!({ "role": role, "parts": parts }))
}

/// A JSON schema in the subset Gemini takes: no `additionalProperties`,
/// `$schema`, `$id` or `strict` keys, at any depth.
fn gemini_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "additionalProperties" | "$schema" | "$id" | "strict"))
                .map(|(k, v)| (k.clone(), gemini_schema(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(gemini_schema).collect()),
        other => other.clone(),
    }
}

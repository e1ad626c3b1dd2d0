//! The OpenAI Responses request body.

use serde_json::{Map, Value, json};

use crate::conversation::{Block, ForeignThinking, Message, Role};
use crate::request::{Request, ToolChoice, paired};

/// The body of a streamed Responses request for `model` of provider kind
/// `kind`: nothing stored on the server (`store: false`), so reasoning items
/// go back whole with their encrypted content — to the model that made
/// them; another gets their text or nothing.
pub fn responses_body(kind: &str, model: &str, request: &Request, effort: Option<&str>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert("instructions".into(), json!(system));
    }
    let mut input = Vec::new();
    for message in paired(&request.messages) {
        encode_message(kind, model, request.foreign_thinking, &message, &mut input);
    }
    body.insert("input".into(), Value::Array(input));
    if let Some(effort) = effort {
        body.insert("reasoning".into(), json!({ "effort": effort, "summary": "auto" }));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function", "name": t.name, "description": t.description,
                    "parameters": t.input_schema, "strict": t.strict,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert(
            "tool_choice".into(),
            match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
            },
        );
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(t) = request.temperature.filter(|_| effort.is_none()) {
        body.insert("temperature".into(), json!(t));
    }
    Value::Object(body)
}

fn encode_message(kind: &str, model: &str, foreign: ForeignThinking, message: &Message, out: &mut Vec<Value>) {
    let mut parts: Vec<Value> = Vec::new();
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let text_type = if message.role == Role::Assistant {
        "output_text"
    } else {
        "input_text"
    };
    let flush = |parts: &mut Vec<Value>, out: &mut Vec<Value>| {
        if !parts.is_empty() {
            out.push(json!({ "type": "message", "role": role, "content": std::mem::take(parts) }));
        }
    };
    for block in &message.content {
        match block {
            Block::Text { text } if !text.is_empty() => parts.push(json!({ "type": text_type, "text": text })),
            Block::Text { .. } => {}
            Block::Image { media_type, data } => parts.push(json!({
                "type": "input_image", "image_url": format!("data:{media_type};base64,{data}")
            })),
            Block::Document { media_type, data } => parts.push(json!({
                "type": "input_file", "filename": "document.pdf",
                "file_data": format!("data:{media_type};base64,{data}")
            })),
            Block::ToolUse { id, name, input } => {
                flush(&mut parts, out);
                out.push(
                    json!({ "type": "function_call", "call_id": id, "name": name, "arguments": input.to_string() }),
                );
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                flush(&mut parts, out);
                let text = super::result_text(content, *is_error);
                out.push(json!({ "type": "function_call_output", "call_id": tool_use_id, "output": text }));
            }
            Block::Thinking(t) if t.made_by(kind, model) && t.redacted_data.is_some() => {
                flush(&mut parts, out);
                let summary: Vec<Value> = if t.text.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({ "type": "summary_text", "text": t.text })]
                };
                let mut item = json!({
                    "type": "reasoning", "encrypted_content": t.redacted_data, "summary": summary,
                });
                if let Some(id) = &t.item_id {
                    item["id"] = json!(id);
                }
                out.push(item);
            }
            Block::Thinking(t) => {
                if foreign == ForeignThinking::Text && !t.text.is_empty() {
                    parts.push(json!({ "type": text_type, "text": t.text }));
                }
            }
        }
    }
    flush(&mut parts, out);
}

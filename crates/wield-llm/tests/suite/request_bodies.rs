//! The request body of every provider kind for one conversation that has
//! it all: a system prompt, an image, reasoning from this model and from
//! another, parallel calls of which one has no result (it gets an error
//! result, so every call is answered exactly once), a result that answers
//! no call (dropped), strict and non-strict tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use wield_llm::encode::{AnthropicThinking, anthropic_body, chat_body, gemini_body, responses_body};
use wield_llm::{Block, ForeignThinking, Message, Origin, Request, ResultPart, Role, Thinking, ToolChoice, ToolDef};

fn thinking(provider: &str, model: &str, text: &str, signature: Option<&str>, data: Option<&str>) -> Block {
    Block::Thinking(Thinking {
        text: text.into(),
        signature: signature.map(Into::into),
        redacted_data: data.map(Into::into),
        item_id: data.map(|_| "rs_1".into()),
        origin: Some(Origin {
            provider: provider.into(),
            model: model.into(),
        }),
    })
}

fn request(own: &str) -> Request {
    Request {
        system: Some("You are terse.".into()),
        messages: vec![
            Message {
                role: Role::User,
                content: vec![
                    Block::Text {
                        text: "What is in these?".into(),
                    },
                    Block::Image {
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    // From another provider: as text, or dropped.
                    thinking("other", "x", "Earlier musing.", Some("FOREIGN-SIG"), None),
                    // From this model: back with its opaque parts.
                    thinking(own, "model-1", "Read both.", Some("OWN-SIG"), Some("OWN-DATA")),
                    Block::Text {
                        text: "Reading.".into(),
                    },
                    Block::ToolUse {
                        id: "call_1".into(),
                        name: "read".into(),
                        input: json!({ "path": "a.txt" }),
                    },
                    Block::ToolUse {
                        id: "call_2".into(),
                        name: "read".into(),
                        input: json!({ "path": "b.txt" }),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::Text { text: "Go on.".into() },
                    Block::ToolResult {
                        tool_use_id: "call_9".into(),
                        content: vec![ResultPart::Text { text: "orphan".into() }],
                        is_error: false,
                    },
                    Block::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: vec![ResultPart::Text { text: "alpha".into() }],
                        is_error: false,
                    },
                ],
            },
        ],
        tools: vec![
            ToolDef {
                name: "read".into(),
                description: "Read a file".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": { "path": { "type": "string" } },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                strict: true,
            },
            ToolDef {
                name: "mcp__srv__echo".into(),
                description: "Echo".into(),
                input_schema: json!({ "type": "object", "properties": {} }),
                strict: false,
            },
        ],
        tool_choice: ToolChoice::Auto,
        parallel_tool_calls: Some(false),
        max_tokens: Some(1000),
        temperature: Some(0.2),
        foreign_thinking: ForeignThinking::Text,
    }
}

/// Every tool use in `uses` is answered exactly once in `results`.
fn assert_paired(uses: &[String], results: &[String]) {
    let mut r = results.to_vec();
    r.sort();
    let mut u = uses.to_vec();
    u.sort();
    assert_eq!(u, r, "every call answered exactly once");
}

fn strings(v: &Value, pointer_items: &str, field: &str) -> Vec<String> {
    v.pointer(pointer_items)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get(field).and_then(Value::as_str).map(str::to_owned))
        .collect()
}

#[test]
fn chat_completions() {
    let body = chat_body("openai", "model-1", &request("openai"));
    let calls: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["id"].as_str().map(str::to_owned))
        .collect();
    assert_paired(&calls, &strings(&body, "/messages", "tool_call_id"));
    insta::assert_json_snapshot!(body);
}

#[test]
fn anthropic_messages() {
    let body = anthropic_body("anthropic", "model-1", &request("anthropic"), AnthropicThinking::Off);
    let blocks: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .collect();
    let uses: Vec<String> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap().to_owned())
        .collect();
    let results: Vec<String> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap().to_owned())
        .collect();
    assert_paired(&uses, &results);
    // The signature goes back to its own model only.
    let text = body.to_string();
    assert!(text.contains("OWN-DATA") && !text.contains("FOREIGN-SIG"), "{text}");
    insta::assert_json_snapshot!(body);
}

#[test]
fn anthropic_thinking_budget_drops_the_temperature() {
    let body = anthropic_body(
        "anthropic",
        "model-1",
        &request("anthropic"),
        AnthropicThinking::Budget(4096),
    );
    assert_eq!(body["thinking"], json!({ "type": "enabled", "budget_tokens": 4096 }));
    assert!(body.get("temperature").is_none());
    let body = anthropic_body(
        "anthropic",
        "model-1",
        &request("anthropic"),
        AnthropicThinking::Adaptive,
    );
    assert_eq!(body["thinking"], json!({ "type": "adaptive" }));
    assert!(body.get("temperature").is_none());
}

#[test]
fn openai_responses() {
    let body = responses_body(
        "openai-responses",
        "model-1",
        &request("openai-responses"),
        Some("medium"),
    );
    assert_paired(
        &body["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "function_call")
            .map(|i| i["call_id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>(),
        &body["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| i["call_id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>(),
    );
    let text = body.to_string();
    assert!(text.contains("OWN-DATA") && !text.contains("FOREIGN-SIG"), "{text}");
    insta::assert_json_snapshot!(body);
}

#[test]
fn gemini() {
    let body = gemini_body("gemini", "model-1", &request("gemini"), Some(1024));
    let parts: Vec<&Value> = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .collect();
    let uses: Vec<String> = parts
        .iter()
        .filter_map(|p| p.pointer("/functionCall/id"))
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let results: Vec<String> = parts
        .iter()
        .filter_map(|p| p.pointer("/functionResponse/id"))
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_paired(&uses, &results);
    let text = body.to_string();
    assert!(!text.contains("additionalProperties"), "{text}");
    insta::assert_json_snapshot!(body);
}

#[test]
fn foreign_thinking_can_be_dropped() {
    let mut r = request("anthropic");
    r.foreign_thinking = ForeignThinking::Drop;
    let text = anthropic_body("anthropic", "model-1", &r, AnthropicThinking::Off).to_string();
    assert!(!text.contains("Earlier musing."), "{text}");
    r.foreign_thinking = ForeignThinking::Text;
    let text = anthropic_body("anthropic", "model-1", &r, AnthropicThinking::Off).to_string();
    assert!(
        text.contains("Earlier musing.") && !text.contains("FOREIGN-SIG"),
        "{text}"
    );
}

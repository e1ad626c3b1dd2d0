//! What is asked of a model, whatever the provider.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::{Block, ForeignThinking, Message, Role};

/// One request: a conversation and the tools the model may call.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Request {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef>,
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one turn (`None`: the
    /// provider's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// What to do with reasoning another provider or model produced.
    #[serde(default)]
    pub foreign_thinking: ForeignThinking,
}

impl Request {
    /// The smallest request a model answers: one short message, one token
    /// back. It checks that a provider serves a model, and how fast.
    pub fn probe() -> Self {
        Self {
            messages: vec![Message::text(Role::User, "Say OK.")],
            max_tokens: Some(1),
            ..Self::default()
        }
    }
}

/// A tool as the model sees it. `name` is already in its provider-safe
/// form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// Ask the provider to hold the arguments to the schema exactly.
    #[serde(default)]
    pub strict: bool,
}

/// Whether the model must, may or must not call a tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    #[default]
    Auto,
    Required,
    None,
    /// This tool, by name.
    Tool(String),
}

/// The conversation made well-formed for the strictest provider: every
/// tool use of an assistant message answered by exactly one result in the
/// next user message (results listed first, in call order; a missing one
/// becomes an error result saying so; results that answer no call are
/// dropped), and no empty messages.
pub fn paired(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    let mut k = 0;
    while k < messages.len() {
        let message = &messages[k];
        let calls: Vec<&str> = match message.role {
            Role::Assistant => message
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, .. } => Some(id.as_str()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if message.role != Role::Assistant || calls.is_empty() {
            // Results that answer no call of the message before are dropped.
            let content: Vec<Block> = message
                .content
                .iter()
                .filter(|b| !matches!(b, Block::ToolResult { .. }))
                .cloned()
                .collect();
            if !content.is_empty() {
                out.push(Message {
                    role: message.role,
                    content,
                });
            }
            k += 1;
            continue;
        }
        out.push(message.clone());
        let next = messages.get(k + 1).filter(|m| m.role == Role::User);
        let mut content = Vec::with_capacity(calls.len());
        for id in &calls {
            let result = next.and_then(|m| {
                m.content
                    .iter()
                    .find(|b| matches!(b, Block::ToolResult { tool_use_id, .. } if tool_use_id == id))
            });
            content.push(result.cloned().unwrap_or_else(|| Block::ToolResult {
                tool_use_id: (*id).to_owned(),
                content: vec![crate::conversation::ResultPart::Text {
                    text: "no result was recorded for this call: it did not run".into(),
                }],
                is_error: true,
            }));
        }
        if let Some(next) = next {
            content.extend(
                next.content
                    .iter()
                    .filter(|b| !matches!(b, Block::ToolResult { .. }))
                    .cloned(),
            );
            k += 1;
        }
        out.push(Message {
            role: Role::User,
            content,
        });
        k += 1;
    }
    out
}

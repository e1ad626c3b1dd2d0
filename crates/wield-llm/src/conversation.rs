//! The conversation model every provider reads and writes: messages made of
//! content blocks, and a model's response with its usage and stop reason.
//! Serialized as JSON it is the shape `wield complete --input` takes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    /// A message of one text block.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// The text blocks, joined.
    pub fn joined_text(&self) -> String {
        joined_text(&self.content)
    }
}

/// The text blocks of `content`, joined.
fn joined_text(content: &[Block]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A piece of a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    /// An image, its bytes base64-encoded.
    Image {
        media_type: String,
        data: String,
    },
    /// A document (PDF), its bytes base64-encoded.
    Document {
        media_type: String,
        data: String,
    },
    /// A call the model asks for. `input` is always a JSON object.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// The answer to one [`Block::ToolUse`].
    ToolResult {
        tool_use_id: String,
        content: Vec<ResultPart>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// The model's reasoning, with what the provider needs to accept it back.
    Thinking(Thinking),
}

/// A part of a tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResultPart {
    Text { text: String },
    Image { media_type: String, data: String },
}

/// Reasoning, and the opaque data that lets the model that made it take it
/// back: an Anthropic signature or redacted block, a Responses reasoning
/// item's `encrypted_content`, a Gemini thought signature. Only that
/// provider and model get the opaque parts; another gets the text or
/// nothing ([`ForeignThinking`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Thinking {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// An Anthropic `redacted_thinking` block's `data`, or a Responses
    /// reasoning item's `encrypted_content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted_data: Option<String>,
    /// The provider's id for the item (a Responses reasoning item's `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// Which provider kind and model produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// The provider kind and model that produced a block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub provider: String,
    pub model: String,
}

/// What to do with reasoning another provider or model produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForeignThinking {
    /// Send its text as plain text.
    #[default]
    Text,
    /// Leave it out.
    Drop,
}

impl Thinking {
    /// Whether `origin` is the provider and model that made this.
    pub fn made_by(&self, provider: &str, model: &str) -> bool {
        self.origin
            .as_ref()
            .is_some_and(|o| o.provider == provider && o.model == model)
    }
}

/// Token counts of one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
    #[serde(default)]
    pub reasoning: u64,
}

impl Usage {
    /// Every input token, cached or not.
    pub fn total_input(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }

    /// Adds `more` (another request's usage) to these totals.
    pub fn add(&mut self, more: Usage) {
        self.input += more.input;
        self.output += more.output;
        self.cache_read += more.cache_read;
        self.cache_write += more.cache_write;
        self.reasoning += more.reasoning;
    }
}

/// Why a turn ended, the same for every provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    EndTurn,
    ToolUse,
    MaxTokens,
    Refusal,
    /// The reply was cut off by the caller.
    Cancelled,
    /// Anything else, as the provider said it.
    Other(String),
}

impl Stop {
    pub fn as_str(&self) -> &str {
        match self {
            Stop::EndTurn => "end_turn",
            Stop::ToolUse => "tool_use",
            Stop::MaxTokens => "max_tokens",
            Stop::Refusal => "refusal",
            Stop::Cancelled => "cancelled",
            Stop::Other(raw) => raw,
        }
    }
}

/// A model's reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Thinking, text and tool-use blocks in the order they came.
    pub content: Vec<Block>,
    pub usage: Usage,
    pub stop: Stop,
    /// Calls whose arguments were not valid JSON: each needs an error
    /// result carrying this message, so the model can correct itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bad_calls: Vec<BadCall>,
}

impl Response {
    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }

    /// The text blocks, joined.
    pub fn text(&self) -> String {
        joined_text(&self.content)
    }
}

/// A tool call whose arguments could not be read. It stays in the
/// conversation (as a call with `{}` input) so that its error result pairs
/// with it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model sent them.
    pub raw: String,
    /// What is wrong with them.
    pub error: String,
}

impl BadCall {
    /// The error result the model gets for this call.
    pub fn message(&self) -> String {
        format!(
            "the arguments of this `{}` call are not valid JSON ({}); they were: {}. Send the call again with a \
             JSON object as its arguments.",
            self.name, self.error, self.raw
        )
    }
}

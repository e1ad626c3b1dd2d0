//! Conversations with language models.
//!
//! - [`conversation`]: the one conversation model every provider reads and
//!   writes (messages of text, images, documents, tool uses and results,
//!   thinking tagged with the provider and model that made it), and a
//!   reply with its usage and a normalized stop reason.
//! - [`event`]: the one streaming event model.
//! - [`decode`]: a decoder per wire format (Anthropic Messages, OpenAI Chat
//!   Completions and the servers that speak it, OpenAI Responses, Gemini)
//!   over a real SSE decoder, feeding a [`Turn`] that keeps tool calls
//!   apart whatever a server does with indexes and ids, and turns
//!   arguments that are not JSON into a call the model is told about.
//! - [`request`] and [`encode`]: what is asked, and its body per wire
//!   format, with every tool use paired with exactly one result.
//! - [`provider`]: sending it and streaming the reply, with retries while
//!   nothing has reached the caller, and cancellation.
//! - [`xml`]: the XML tool protocol for models without native tool calls.
//! - [`settings`]: providers as configured (`[providers.NAME]`), or from
//!   the official SDKs' environment variables.

pub mod conversation;
pub mod decode;
pub mod discover;
pub mod encode;
pub mod error;
pub mod event;
pub mod provider;
pub mod request;
pub mod settings;
mod turn;
pub mod xml;

pub use conversation::{
    BadCall, Block, ForeignThinking, Message, Origin, Response, ResultPart, Role, Stop, Thinking, Usage,
};
pub use error::{ErrorClass, LlmError};
pub use event::StreamEvent;
pub use provider::{Endpoint, Kind, Provider, ThinkingLevel};
pub use request::{Request, ToolChoice, ToolDef};
pub use turn::{Args, Turn};

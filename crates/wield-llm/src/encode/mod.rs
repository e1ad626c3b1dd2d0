//! Request bodies, one encoder per wire format. Every encoder sends the
//! conversation as [`crate::request::paired`] makes it: each tool use
//! answered by exactly one result.

mod anthropic;
mod chat;
mod gemini;
mod responses;

pub use anthropic::{AnthropicThinking, DEFAULT_MAX_TOKENS, anthropic_body};
pub use chat::chat_body;
pub use gemini::gemini_body;
pub use responses::responses_body;

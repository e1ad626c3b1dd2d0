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

/// A tool result as one text, for formats whose results are text only: its
/// text parts joined, marked as an error when it is one.
fn result_text(content: &[crate::conversation::ResultPart], is_error: bool) -> String {
    let text = content
        .iter()
        .filter_map(|p| match p {
            crate::conversation::ResultPart::Text { text } => Some(text.as_str()),
            crate::conversation::ResultPart::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if is_error && !text.starts_with("Error") {
        format!("Error: {text}")
    } else {
        text
    }
}

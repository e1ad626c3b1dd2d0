//! The result guard: a result too big for the conversation is replaced by
//! an error that says how big it was, the limit, and what to do.

use wield_core::ToolResult;
use wield_llm::{Block, Message, ResultPart, ToolDef};

use crate::Limits;

/// Tokens in a text, estimated (about four bytes a token).
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// The estimated tokens of a conversation's text.
pub fn conversation_tokens(messages: &[Message]) -> usize {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            Block::Text { text } => estimate_tokens(text),
            Block::ToolUse { input, .. } => estimate_tokens(&input.to_string()),
            Block::ToolResult { content, .. } => content
                .iter()
                .map(|p| match p {
                    ResultPart::Text { text } => estimate_tokens(text),
                    ResultPart::Image { .. } => 1_000,
                })
                .sum(),
            Block::Thinking(t) => estimate_tokens(&t.text),
            Block::Image { .. } | Block::Document { .. } => 1_000,
        })
        .sum()
}

/// The estimated tokens of a request: its system prompt, its messages and
/// its tools' schemas.
pub(crate) fn request_tokens(system: Option<&str>, messages: &[Message], tools: &[ToolDef]) -> usize {
    system.map_or(0, estimate_tokens)
        + conversation_tokens(messages)
        + tools
            .iter()
            .map(|t| {
                estimate_tokens(&t.name)
                    + estimate_tokens(&t.description)
                    + estimate_tokens(&t.input_schema.to_string())
            })
            .sum::<usize>()
}

/// `result`, or the error that replaces it when it is over the limits.
pub(crate) fn guard(result: &ToolResult, used: usize, limits: &Limits) -> ToolResult {
    let size = estimate_tokens(&result.output) + result.error.as_deref().map_or(0, estimate_tokens);
    let over_size = size > limits.result_max_tokens;
    let room = limits
        .context_window
        .map(|w| (w as usize).saturating_mul(usize::from(limits.result_max_percentage)) / 100);
    let over_window = room.is_some_and(|room| used + size > room);
    if !over_size && !over_window {
        return result.clone();
    }
    let limit = if over_size {
        format!("the limit for one result is {} tokens", limits.result_max_tokens)
    } else {
        format!(
            "it would take the conversation ({used} tokens) past {}% of the model's context window",
            limits.result_max_percentage
        )
    };
    ToolResult::error(format!(
        "the result was about {size} tokens, too large to show: {limit}. Ask for less: narrow the request (a more \
         specific pattern or path), or read part of it (offset and limit), or filter the output."
    ))
    .with_meta("guarded", true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_over_the_limit_is_replaced_by_an_error_saying_what_to_do() {
        let limits = Limits {
            result_max_tokens: 10,
            ..Limits::default()
        };
        let small = ToolResult::ok("fine");
        assert_eq!(guard(&small, 0, &limits).output, "fine");
        let big = ToolResult::ok("x".repeat(400));
        let e = guard(&big, 0, &limits);
        assert!(!e.success);
        let said = e.error.unwrap_or_default();
        assert!(
            said.contains("about 100 tokens") && said.contains("limit for one result is 10"),
            "{said}"
        );
        assert!(said.contains("offset and limit"), "{said}");
    }

    #[test]
    fn a_result_that_would_fill_the_window_is_refused_too() {
        let limits = Limits {
            context_window: Some(1_000),
            ..Limits::default()
        };
        let r = ToolResult::ok("x".repeat(400));
        assert!(guard(&r, 800, &limits).success);
        let e = guard(&r, 900, &limits);
        assert!(
            e.error
                .unwrap_or_default()
                .contains("past 95% of the model's context window")
        );
    }
}

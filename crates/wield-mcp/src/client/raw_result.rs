//! A tool call's result that the SDK's types cannot read, read as plain
//! JSON instead.
//!
//! One content block of a kind newer than the SDK, an image without its
//! `mimeType`, an `isError` sent as a string: any of these makes the SDK
//! reject the whole result, and every other block in it with it. Read here
//! block by block, what can be read is kept as it is, and what cannot is
//! kept as JSON text that says what it is, so the model still sees it.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// The most of an unreadable block's (or result's) JSON kept in its text.
const MAX_SHOWN: usize = 2_000;

/// `raw`, the `result` of a `tools/call`, as a [`CallToolResult`].
pub fn read(raw: Value) -> CallToolResult {
    let Value::Object(mut fields) = raw else {
        return CallToolResult::error(vec![ContentBlock::text(format!(
            "the MCP server answered the call with `{}`, which is not a tool result (an object with `content`)",
            clip(&raw.to_string())
        ))]);
    };
    let content = match fields.remove("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(blocks)) => blocks.into_iter().map(block).collect(),
        Some(Value::String(text)) => vec![ContentBlock::text(text)],
        Some(other @ Value::Object(_)) => vec![block(other)],
        Some(other) => vec![ContentBlock::text(other.to_string())],
    };
    let is_error = match fields.remove("isError") {
        Some(Value::Bool(b)) => Some(b),
        Some(Value::String(s)) => Some(s.trim().eq_ignore_ascii_case("true")),
        Some(Value::Number(n)) => Some(n.as_f64().is_some_and(|n| n != 0.0)),
        _ => None,
    };
    let mut result = CallToolResult::success(content);
    result.is_error = is_error;
    result.structured_content = fields.remove("structuredContent").filter(|v| !v.is_null());
    result
}

/// One content block: as the SDK reads it when it can; a text whose `text`
/// is not a string, as that value's JSON; anything else as its JSON, after
/// a note of what it is and why it could not be read.
fn block(raw: Value) -> ContentBlock {
    let read = serde_json::from_value::<ContentBlock>(raw.clone());
    match read {
        Ok(b) => b,
        Err(e) => {
            let kind = raw.get("type").and_then(Value::as_str).unwrap_or("untyped").to_owned();
            if kind == "text"
                && let Some(text) = raw.get("text")
            {
                return ContentBlock::text(text.to_string());
            }
            ContentBlock::text(format!(
                "[a `{kind}` content block wield cannot read ({e}): {}]",
                clip(&raw.to_string())
            ))
        }
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_SHOWN) {
        Some((at, _)) => format!("{}… ({} bytes in all)", &text[..at], text.len()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::map_result;

    fn mapped(raw: Value) -> (bool, String) {
        let r = map_result(read(raw));
        let text = if r.success {
            r.output
        } else {
            r.error.unwrap_or_default()
        };
        (r.success, text)
    }

    #[test]
    fn what_can_be_read_is_kept_and_the_rest_said() {
        let (ok, text) = mapped(json!({"content": [
            {"type": "text", "text": "kept"},
            {"type": "hologram", "frames": 3},
            {"type": "image", "data": "AAAA"},
            {"type": "text", "text": 42},
        ]}));
        assert!(ok);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "kept");
        assert!(
            lines[1].starts_with("[a `hologram` content block wield cannot read") && lines[1].contains("\"frames\":3")
        );
        assert!(
            lines[2].contains("`image`") && lines[2].contains("mimeType"),
            "{}",
            lines[2]
        );
        assert_eq!(lines[3], "42");
    }

    #[test]
    fn odd_is_error_values_are_read_for_what_they_mean() {
        for (is_error, failed) in [
            (json!("true"), true),
            (json!("false"), false),
            (json!(1), true),
            (json!(0), false),
            (json!([]), false),
        ] {
            let (ok, text) = mapped(json!({"content": "said", "isError": is_error}));
            assert_eq!(ok, !failed, "{is_error}");
            assert_eq!(text, "said");
        }
    }

    #[test]
    fn a_result_that_is_not_an_object_is_an_error_that_says_so() {
        for raw in [json!(null), json!("text"), json!([1])] {
            let (ok, text) = mapped(raw.clone());
            assert!(!ok);
            assert!(
                text.contains("not a tool result") && text.contains(&raw.to_string()),
                "{text}"
            );
        }
        let (ok, text) = mapped(json!({"content": 5, "structuredContent": {"a": 1}}));
        assert!(ok);
        assert!(text.starts_with('5') && text.contains("\"a\": 1"), "{text}");
    }

    #[test]
    fn long_blocks_are_clipped() {
        let (_, text) = mapped(json!({"content": [{"type": "image", "data": "A".repeat(100_000)}]}));
        assert!(text.len() < MAX_SHOWN + 200, "{}", text.len());
        assert!(text.contains("bytes in all"));
    }
}

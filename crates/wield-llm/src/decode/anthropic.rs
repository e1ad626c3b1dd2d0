//! Anthropic Messages: `message_start`, content blocks (text, thinking with
//! its signature, redacted thinking, tool use with `input_json_delta`
//! fragments), `message_delta` (stop reason, cumulative output tokens),
//! `message_stop`; `ping` at any time; an `error` event inside a 200
//! stream.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{Flow, WireDecoder, count, error_of, json, str_of};
use crate::conversation::{Stop, Usage};
use crate::error::LlmError;
use crate::turn::{Args, Turn};

#[derive(Default)]
pub struct Anthropic {
    /// The tool-use block indexes seen, to finish them at their stop.
    tool_blocks: Vec<u64>,
}

/// The fields of the frequent events (deltas), read without building a
/// JSON tree; the rest are read as [`Value`]s.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: u64,
    #[serde(default, borrow)]
    delta: Option<DeltaHead<'a>>,
}

#[derive(Deserialize)]
struct DeltaHead<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
}

impl WireDecoder for Anthropic {
    fn event(&mut self, _name: &str, data: &str, turn: &mut Turn) -> Result<Flow, LlmError> {
        if let Ok(head) = serde_json::from_str::<Head<'_>>(data)
            && head.kind == "content_block_delta"
            && let Some(delta) = head.delta
        {
            match delta.kind.as_deref().unwrap_or_default() {
                "text_delta" => turn.text(delta.text.as_deref().unwrap_or_default()),
                "thinking_delta" => turn.thinking(delta.thinking.as_deref().unwrap_or_default()),
                "signature_delta" => turn.thinking_signature(delta.signature.as_deref().unwrap_or_default()),
                "input_json_delta" => turn.call_piece(
                    Some(head.index),
                    None,
                    None,
                    Args::Text(delta.partial_json.as_deref().unwrap_or_default()),
                ),
                _ => {}
            }
            return Ok(Flow::Continue);
        }
        let v = json(data)?;
        // The data's own `type` says what it is; `event:` lines may be absent.
        match str_of(&v, "type").unwrap_or_default() {
            "message_start" => {
                if let Some(u) = v.get("message").and_then(|m| m.get("usage")) {
                    turn.usage(usage(u));
                }
            }
            "content_block_start" => {
                let index = count(&v, "index");
                let block = v.get("content_block").unwrap_or(&Value::Null);
                match str_of(block, "type").unwrap_or_default() {
                    "text" => turn.text(str_of(block, "text").unwrap_or_default()),
                    "thinking" => {
                        turn.new_thinking();
                        turn.thinking(str_of(block, "thinking").unwrap_or_default());
                        if let Some(sig) = str_of(block, "signature").filter(|s| !s.is_empty()) {
                            turn.thinking_signature(sig);
                        }
                    }
                    "redacted_thinking" => turn.opaque_thinking(None, str_of(block, "data"), ""),
                    "tool_use" | "server_tool_use" => {
                        self.tool_blocks.push(index);
                        // `input` is `{}` here; the real one comes in fragments.
                        let input = block
                            .get("input")
                            .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()));
                        turn.call_piece(
                            Some(index),
                            str_of(block, "id"),
                            str_of(block, "name"),
                            Args::from_json(input),
                        );
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = count(&v, "index");
                if self.tool_blocks.contains(&index) {
                    turn.finish_index(index);
                }
            }
            "message_delta" => {
                if let Some(reason) = v.get("delta").and_then(|d| str_of(d, "stop_reason")) {
                    turn.stop(stop(reason));
                }
                if let Some(u) = v.get("usage") {
                    turn.usage(usage(u));
                }
            }
            "message_stop" => return Ok(Flow::Done),
            "error" => return Err(error_of(v.get("error").unwrap_or(&Value::Null), None)),
            // `ping` and whatever comes later.
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn end(&mut self, turn: &mut Turn) -> Result<(), LlmError> {
        if turn.has_stop() {
            // `message_delta` came: the reply is whole, only the last event is missing.
            return Ok(());
        }
        Err(LlmError::Truncated("`message_stop`".into()))
    }
}

fn usage(u: &Value) -> Usage {
    Usage {
        input: count(u, "input_tokens"),
        output: count(u, "output_tokens"),
        cache_read: count(u, "cache_read_input_tokens"),
        cache_write: count(u, "cache_creation_input_tokens"),
        reasoning: 0,
    }
}

fn stop(reason: &str) -> Stop {
    match reason {
        "end_turn" | "stop_sequence" => Stop::EndTurn,
        "tool_use" => Stop::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => Stop::MaxTokens,
        "refusal" => Stop::Refusal,
        other => Stop::Other(other.to_owned()),
    }
}

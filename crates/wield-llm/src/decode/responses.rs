//! OpenAI Responses: typed events without `[DONE]`. Text from
//! `response.output_text.delta`; reasoning summaries and raw reasoning as
//! thinking deltas, the reasoning item itself (its id, encrypted content
//! and summary) from `response.output_item.done`; function calls whole from
//! `response.output_item.done` (argument deltas are only for display);
//! `response.completed` (usage), `response.incomplete`, `response.failed`
//! and `error`. A body that ends without `response.completed` is an error.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{Flow, WireDecoder, count, error_of, json, str_of};
use crate::conversation::{Stop, Usage};
use crate::error::LlmError;
use crate::turn::{Args, Turn};

#[derive(Default)]
pub struct Responses {
    /// A reasoning item's text streamed so far (its summary or raw text).
    reasoning_open: bool,
}

/// The fields of the frequent events (deltas), read without building a
/// JSON tree.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
}

impl WireDecoder for Responses {
    fn event(&mut self, name: &str, data: &str, turn: &mut Turn) -> Result<Flow, LlmError> {
        if let Ok(Head {
            kind: Some(kind),
            delta: Some(delta),
        }) = serde_json::from_str::<Head<'_>>(data)
        {
            match kind.as_ref() {
                "response.output_text.delta" | "response.refusal.delta" => {
                    turn.text(&delta);
                    return Ok(Flow::Continue);
                }
                "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                    if !self.reasoning_open {
                        turn.new_thinking();
                        self.reasoning_open = true;
                    }
                    turn.thinking(&delta);
                    return Ok(Flow::Continue);
                }
                // Argument deltas are only for display: the call comes whole.
                "response.function_call_arguments.delta" => return Ok(Flow::Continue),
                _ => {}
            }
        }
        let v = json(data)?;
        let kind = str_of(&v, "type").unwrap_or(name);
        match kind {
            "response.output_item.done" => {
                let item = v.get("item").unwrap_or(&Value::Null);
                match str_of(item, "type").unwrap_or_default() {
                    "function_call" => turn.whole_call(
                        str_of(item, "call_id"),
                        str_of(item, "name").unwrap_or_default(),
                        Args::from_json(item.get("arguments")),
                    ),
                    "reasoning" => {
                        let summary = summary_text(item);
                        if self.reasoning_open {
                            turn.close_reasoning(str_of(item, "id"), str_of(item, "encrypted_content"), &summary);
                        } else {
                            turn.opaque_thinking(str_of(item, "id"), str_of(item, "encrypted_content"), &summary);
                        }
                        self.reasoning_open = false;
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = v.get("response").unwrap_or(&Value::Null);
                if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
                    turn.usage(usage(u));
                }
                if kind == "response.incomplete" {
                    let reason = response
                        .get("incomplete_details")
                        .and_then(|d| str_of(d, "reason"))
                        .unwrap_or("incomplete");
                    turn.stop(match reason {
                        "max_output_tokens" => Stop::MaxTokens,
                        "content_filter" => Stop::Refusal,
                        other => Stop::Other(other.to_owned()),
                    });
                } else {
                    turn.stop(Stop::EndTurn);
                }
                return Ok(Flow::Done);
            }
            "response.failed" => {
                let error = v.get("response").and_then(|r| r.get("error")).unwrap_or(&Value::Null);
                return Err(error_of(error, None));
            }
            "error" => return Err(error_of(v.get("error").unwrap_or(&v), None)),
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn end(&mut self, _turn: &mut Turn) -> Result<(), LlmError> {
        Err(LlmError::Truncated("`response.completed`".into()))
    }
}

/// A reasoning item's summary parts, joined.
fn summary_text(item: &Value) -> String {
    item.get("summary")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| str_of(p, "text"))
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .unwrap_or_default()
}

fn usage(u: &Value) -> Usage {
    let cached = u
        .get("input_tokens_details")
        .map(|d| count(d, "cached_tokens"))
        .unwrap_or(0);
    Usage {
        input: count(u, "input_tokens").saturating_sub(cached),
        output: count(u, "output_tokens"),
        cache_read: cached,
        cache_write: 0,
        reasoning: u
            .get("output_tokens_details")
            .map(|d| count(d, "reasoning_tokens"))
            .unwrap_or(0),
    }
}

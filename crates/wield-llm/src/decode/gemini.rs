//! Gemini `streamGenerateContent?alt=sse` (the Generative Language API and
//! Vertex): each event a `GenerateContentResponse` whose candidate's parts
//! are text, thought text (`thought: true`), or whole function calls
//! without ids (made up here) whose `thoughtSignature` must go back with
//! them; `finishReason`; `usageMetadata`; errors as `{"error": {"code",
//! "message", "status"}}`. The body simply ends.

use serde_json::Value;

use super::{Flow, WireDecoder, count, error_of, json, str_of};
use crate::conversation::{Stop, Usage};
use crate::error::LlmError;
use crate::turn::{Args, Turn};

#[derive(Default)]
pub struct Gemini;

impl WireDecoder for Gemini {
    fn event(&mut self, _name: &str, data: &str, turn: &mut Turn) -> Result<Flow, LlmError> {
        let v = json(data)?;
        if let Some(error) = v.get("error") {
            let status = error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok());
            return Err(error_of(error, status));
        }
        let candidate = v
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .unwrap_or(&Value::Null);
        let parts = candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            let signature = str_of(part, "thoughtSignature");
            if let Some(call) = part.get("functionCall") {
                // The signature belongs with the call: it is kept as an
                // empty thinking block just before it.
                if let Some(sig) = signature {
                    turn.new_thinking();
                    turn.thinking_signature(sig);
                }
                turn.whole_call(
                    str_of(call, "id"),
                    str_of(call, "name").unwrap_or_default(),
                    Args::from_json(call.get("args")),
                );
            } else if let Some(text) = str_of(part, "text") {
                if part.get("thought").and_then(Value::as_bool) == Some(true) {
                    turn.thinking(text);
                    if let Some(sig) = signature {
                        turn.thinking_signature(sig);
                    }
                } else {
                    turn.text(text);
                    if let Some(sig) = signature {
                        turn.new_thinking();
                        turn.thinking_signature(sig);
                    }
                }
            } else if let Some(sig) = signature {
                turn.new_thinking();
                turn.thinking_signature(sig);
            }
        }
        if let Some(reason) = str_of(candidate, "finishReason") {
            turn.stop(stop(reason));
        }
        if let Some(u) = v.get("usageMetadata") {
            let cached = count(u, "cachedContentTokenCount");
            turn.usage(Usage {
                input: count(u, "promptTokenCount").saturating_sub(cached),
                output: count(u, "candidatesTokenCount"),
                cache_read: cached,
                cache_write: 0,
                reasoning: count(u, "thoughtsTokenCount"),
            });
        }
        Ok(Flow::Continue)
    }

    fn end(&mut self, _turn: &mut Turn) -> Result<(), LlmError> {
        Ok(())
    }
}

fn stop(reason: &str) -> Stop {
    match reason {
        "STOP" => Stop::EndTurn,
        "MAX_TOKENS" => Stop::MaxTokens,
        "SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII" | "IMAGE_SAFETY" => Stop::Refusal,
        other => Stop::Other(other.to_owned()),
    }
}

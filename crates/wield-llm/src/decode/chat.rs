//! OpenAI Chat Completions, and the servers that speak it (llama.cpp,
//! Ollama's compatible endpoint, vLLM, LM Studio, OpenRouter): `choices[0]
//! .delta` with `content`, reasoning in `reasoning_content` or `reasoning`
//! (a string, or an object with `text` or `content`), `tool_calls` pieces
//! keyed by `index` (see [`Turn::call_piece`] for the rules that survive
//! servers' mistakes), `finish_reason`, usage in a last chunk with empty
//! `choices` (or `null` on every chunk), `data: [DONE]` or just the end of
//! the body, and errors as `{"error": …}` (a string or an object, numeric
//! codes).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{Flow, WireDecoder, count, error_of, json, str_of};
use crate::conversation::{Stop, Usage};
use crate::error::LlmError;
use crate::turn::{Args, Turn};

#[derive(Default)]
pub struct Chat;

/// A chunk, read without building a JSON tree for its frequent parts.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u64,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    /// Some servers send a whole `message` instead of a delta.
    #[serde(default, borrow)]
    message: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    reasoning_content: Option<Value>,
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallPiece<'a>>>,
}

#[derive(Deserialize)]
struct CallPiece<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<Function<'a>>,
    /// Gemini's compatible endpoint: `{"google": {"thought_signature": …}}`.
    #[serde(default)]
    extra_content: Option<Value>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    /// A string, an object (Ollama) or null; read once its kind is known.
    #[serde(default, borrow)]
    arguments: Option<&'a serde_json::value::RawValue>,
    /// Old llama.cpp builds put these here.
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
}

impl WireDecoder for Chat {
    fn event(&mut self, _name: &str, data: &str, turn: &mut Turn) -> Result<Flow, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            // Not a chunk: JSON of another shape is an error body or
            // nonsense, anything else is not JSON at all.
            Err(_) => {
                let v = json(data)?;
                return Err(match v.get("error") {
                    Some(error) => error_of(error, None),
                    None => LlmError::Malformed(format!("a chunk of an unknown shape: {}", shorten(data))),
                });
            }
        };
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(error_of(error, None));
        }
        if let Some(choice) = chunk.choices.iter().find(|c| c.index == 0) {
            // The delta first: some servers send the last piece and the
            // finish reason in one chunk.
            if let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) {
                read_delta(delta, turn);
            }
            if let Some(reason) = &choice.finish_reason {
                turn.stop(stop(reason));
            }
        }
        if let Some(u) = chunk.usage.as_ref().filter(|u| u.is_object()) {
            turn.usage(usage(u));
        }
        Ok(Flow::Continue)
    }

    fn end(&mut self, _turn: &mut Turn) -> Result<(), LlmError> {
        // Many servers close the body without `[DONE]`.
        Ok(())
    }
}

fn shorten(data: &str) -> String {
    data.chars().take(200).collect()
}

fn read_delta(delta: &Delta<'_>, turn: &mut Turn) {
    for reasoning in [&delta.reasoning_content, &delta.reasoning].into_iter().flatten() {
        match reasoning {
            Value::String(s) => turn.thinking(s),
            obj @ Value::Object(_) => {
                if let Some(s) = str_of(obj, "text").or_else(|| str_of(obj, "content")) {
                    turn.thinking(s);
                }
            }
            _ => {}
        }
    }
    if let Some(text) = &delta.content {
        turn.text(text);
    }
    for call in delta.tool_calls.iter().flatten() {
        let function = call.function.as_ref();
        let index = call.index.or_else(|| function.and_then(|f| f.index));
        let id = call.id.as_deref().or_else(|| function.and_then(|f| f.id.as_deref()));
        let name = function.and_then(|f| f.name.as_deref());
        let raw = function.and_then(|f| f.arguments).map(serde_json::value::RawValue::get);
        // Usually a string fragment: read it without a JSON tree.
        if let Some(text) = raw.and_then(|r| serde_json::from_str::<Cow<'_, str>>(r).ok()) {
            turn.call_piece(index, id, name, Args::Text(&text));
            continue;
        }
        let value = raw.and_then(|r| serde_json::from_str::<Value>(r).ok());
        turn.call_piece(index, id, name, Args::from_json(value.as_ref()));
    }
    // A signature may come in a piece of its own, without arguments.
    for call in delta.tool_calls.iter().flatten() {
        if let Some(sig) = call
            .extra_content
            .as_ref()
            .and_then(|e| e.pointer("/google/thought_signature"))
            .and_then(Value::as_str)
        {
            let index = call.index.or_else(|| call.function.as_ref().and_then(|f| f.index));
            turn.call_signature(index, sig);
        }
    }
}

fn usage(u: &Value) -> Usage {
    let cached = u
        .get("prompt_tokens_details")
        .map(|d| count(d, "cached_tokens"))
        .unwrap_or(0);
    Usage {
        input: count(u, "prompt_tokens").saturating_sub(cached),
        output: count(u, "completion_tokens"),
        cache_read: cached,
        cache_write: 0,
        reasoning: u
            .get("completion_tokens_details")
            .map(|d| count(d, "reasoning_tokens"))
            .unwrap_or(0),
    }
}

fn stop(reason: &str) -> Stop {
    match reason {
        "stop" | "eos" => Stop::EndTurn,
        "tool_calls" | "function_call" => Stop::ToolUse,
        // The output limit, not the context (a server that cut the input
        // silently looks the same, but says nothing).
        "length" => Stop::MaxTokens,
        "content_filter" => Stop::Refusal,
        other => Stop::Other(other.to_owned()),
    }
}

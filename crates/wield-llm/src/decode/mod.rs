//! One decoder per wire format, over a real SSE decoder.
//!
//! A [`WireDecoder`] takes the stream's SSE events one at a time and feeds
//! a [`Turn`]; [`Decoding`] drives one over the bytes of a response body,
//! split at any byte, and yields [`StreamEvent`]s.

mod anthropic;
mod chat;
mod gemini;
mod responses;

use std::collections::VecDeque;

use futures::{Stream, StreamExt};
use serde_json::Value;

pub use anthropic::Anthropic;
pub use chat::Chat;
pub use gemini::Gemini;
pub use responses::Responses;

use crate::conversation::Response;
use crate::error::LlmError;
use crate::event::StreamEvent;
use crate::turn::Turn;

/// Whether the stream said it is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Done,
}

/// A wire format's stream decoder.
pub trait WireDecoder: Send {
    /// One SSE event: its `event:` name (empty when the event had none) and
    /// its data.
    fn event(&mut self, name: &str, data: &str, turn: &mut Turn) -> Result<Flow, LlmError>;

    /// The body ended without a terminal event: an error when the format
    /// has one that must come.
    fn end(&mut self, turn: &mut Turn) -> Result<(), LlmError>;
}

/// Parses an event's data as JSON, or says what came instead.
pub(crate) fn json(data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data).map_err(|e| {
        let shown: String = data.chars().take(200).collect();
        LlmError::Malformed(format!("an event's data is not JSON ({e}): {shown}"))
    })
}

/// A `u64` field, or 0.
pub(crate) fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A string field.
pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// An error object as providers send it: `{"message", "type"|"code"|"status"}`,
/// or a bare string.
pub(crate) fn error_of(error: &Value, status: Option<u16>) -> LlmError {
    let message = match error {
        Value::String(s) => s.clone(),
        _ => str_of(error, "message").unwrap_or("no message").to_owned(),
    };
    let code = ["code", "type", "status"].iter().find_map(|k| match error.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    });
    LlmError::provider(status, code, message)
}

/// A response body being decoded: SSE framing, then the wire decoder.
pub struct Decoding {
    decoder: Box<dyn WireDecoder>,
    turn: Turn,
    done: bool,
}

impl Decoding {
    pub fn new(decoder: Box<dyn WireDecoder>, turn: Turn) -> Self {
        Self {
            decoder,
            turn,
            done: false,
        }
    }

    /// One SSE event; the stream events it produced go to `out`.
    pub fn event(&mut self, name: &str, data: &str, out: &mut VecDeque<StreamEvent>) -> Result<Flow, LlmError> {
        if self.done {
            return Ok(Flow::Done);
        }
        let name = if name == "message" { "" } else { name };
        let flow = self.decoder.event(name, data, &mut self.turn)?;
        out.extend(self.turn.drain_events());
        if flow == Flow::Done {
            self.done = true;
        }
        Ok(flow)
    }

    /// The body ended: the reply, with its last events in `out`.
    pub fn finish(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<Response, LlmError> {
        if !self.done {
            self.decoder.end(&mut self.turn)?;
        }
        let response = self.turn.finish();
        out.extend(self.turn.drain_events());
        Ok(response)
    }

    /// The reply so far, marked cancelled (the caller stopped reading).
    pub fn cancel(&mut self) -> Response {
        self.turn.stop(crate::conversation::Stop::Cancelled);
        let mut response = self.turn.finish();
        if response.stop == crate::conversation::Stop::ToolUse {
            // Calls cut off mid-way are not to be run.
            response.stop = crate::conversation::Stop::Cancelled;
        }
        response
    }
}

/// Decodes a whole response body given as a stream of byte chunks: every
/// stream event, then the reply.
pub async fn decode_body<S, B, E>(body: S, mut decoding: Decoding) -> Result<(Vec<StreamEvent>, Response), LlmError>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    use eventsource_stream::Eventsource;
    let mut sse = body.eventsource();
    let mut out = VecDeque::new();
    while let Some(item) = sse.next().await {
        let event = item.map_err(|e| LlmError::Truncated(format!("its end (reading the body failed: {e})")))?;
        if decoding.event(&event.event, &event.data, &mut out)? == Flow::Done {
            break;
        }
    }
    let response = decoding.finish(&mut out)?;
    Ok((out.into_iter().collect(), response))
}

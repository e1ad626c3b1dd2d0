//! The streaming event model, the same for every provider.

use serde::Serialize;
use serde_json::Value;

use crate::conversation::{Stop, Usage};

/// One thing that happened while a reply streamed. A stream of them ends
/// with [`StreamEvent::Done`]; a failure ends it with an error instead.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    /// A tool call began; its arguments follow in pieces.
    ToolCallStarted {
        id: String,
        name: String,
    },
    ToolCallDelta {
        id: String,
        fragment: String,
    },
    /// A tool call is complete. `input` is the parsed arguments (`{}` when
    /// they were not valid JSON; the response's `bad_calls` say why).
    ToolCallFinished {
        id: String,
        name: String,
        input: Value,
    },
    Usage {
        usage: Usage,
    },
    Done {
        stop: Stop,
    },
    /// The request failed before anything streamed and is sent again after
    /// `delay_ms`: this is attempt `attempt` of at most `of`.
    Retrying {
        attempt: u32,
        of: u32,
        delay_ms: u64,
        reason: String,
    },
}

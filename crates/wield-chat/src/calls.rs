//! Queries over a document's tool calls: each tool use with the state of
//! its result. Results pair with tool uses by id across the whole
//! document, not by position; when an id has several results the last one
//! counts.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::syntax::{Document, LineRange, Segment, Speaker, Status, ToolResult};

/// Where a tool call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// No result block yet.
    Missing,
    Pending,
    Approved,
    Denied,
    Rejected,
    Aborted,
    /// A final result.
    Done,
    /// A final error result (`(error)`).
    Error,
}

impl CallStatus {
    /// Whether the call has its final result (plain or error).
    pub fn is_final(self) -> bool {
        matches!(self, CallStatus::Done | CallStatus::Error)
    }

    fn of(result: Option<&ToolResult>) -> Self {
        match result.map(|r| r.status) {
            None => CallStatus::Missing,
            Some(None) => CallStatus::Done,
            Some(Some(s)) => s.into(),
        }
    }
}

impl From<Status> for CallStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Pending => CallStatus::Pending,
            Status::Approved => CallStatus::Approved,
            Status::Denied => CallStatus::Denied,
            Status::Rejected => CallStatus::Rejected,
            Status::Aborted => CallStatus::Aborted,
            Status::Error => CallStatus::Error,
        }
    }
}

/// A tool use and what became of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// `null` when the input is not a JSON object (a diagnostic says why).
    pub input: Option<Value>,
    /// The header's line.
    pub line: usize,
    pub lines: LineRange,
    pub status: CallStatus,
    /// The lines of its result block, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_lines: Option<LineRange>,
    /// What the person typed in its placeholder (a user-provided result, a
    /// rejection message), or its final result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// When the reply that made the call ends with an abort marker: its
    /// message. Such a call's placeholder is `(aborted)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
}

impl Document<'_> {
    /// Every tool use, in document order, with the state of its result.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        let mut results: HashMap<&str, &ToolResult> = HashMap::new();
        for m in &self.messages {
            for s in &m.segments {
                if let Segment::ToolResult(r) = s {
                    results.insert(&r.id, r);
                }
            }
        }
        let mut calls = Vec::new();
        for m in self.messages.iter().filter(|m| m.speaker == Speaker::Assistant) {
            let aborted = m
                .segments
                .iter()
                .rev()
                .find(|s| !matches!(s, Segment::Text(t) if t.text.trim().is_empty()))
                .and_then(|s| match s {
                    Segment::Aborted(a) => Some(a.message.to_string()),
                    _ => None,
                });
            for s in &m.segments {
                let Segment::ToolUse(u) = s else { continue };
                let result = results.get(u.id.as_ref()).copied();
                calls.push(ToolCall {
                    id: u.id.to_string(),
                    name: u.name.to_string(),
                    input: u.input(),
                    line: u.lines.start,
                    lines: u.lines,
                    status: CallStatus::of(result),
                    result_lines: result.map(|r| r.lines),
                    result: result.filter(|r| r.fence.is_some()).map(|r| r.content().to_string()),
                    aborted: aborted.clone(),
                });
            }
        }
        calls
    }

    /// The tool calls without a final result, in document order.
    pub fn unresolved(&self) -> Vec<ToolCall> {
        self.tool_calls().into_iter().filter(|c| !c.status.is_final()).collect()
    }

    /// The tool calls whose placeholder says `(pending)`.
    pub fn pending(&self) -> Vec<ToolCall> {
        self.tool_calls()
            .into_iter()
            .filter(|c| c.status == CallStatus::Pending)
            .collect()
    }

    /// The status of the call `id`, if there is such a tool use.
    pub fn status_of(&self, id: &str) -> Option<CallStatus> {
        self.tool_calls().into_iter().find(|c| c.id == id).map(|c| c.status)
    }

    /// The error-severity diagnostics: while there is one, the document
    /// must not be sent.
    pub fn blocking(&self) -> Vec<&Diagnostic> {
        self.diagnostics.iter().filter(|d| d.blocks_sending()).collect()
    }
}

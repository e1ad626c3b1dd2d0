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

#[cfg(test)]
mod tests {
    use crate::parse;

    use super::*;

    const TWO_CALLS: &str = "@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{}\n```\n**Tool Use:** `b` (`y`)\n```json\n{}\n```\n@You:\n**Tool Result:** `x` (pending)\n```\n```\n**Tool Result:** `y` (error)\n```\nfailed\n```\n";

    /// A call is aborted only when its reply ends with the abort marker
    /// (blank text after it aside).
    #[test]
    fn a_call_is_aborted_only_by_a_marker_ending_its_reply() {
        let reply = |after: &str| {
            format!("@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{{}}\n```\n<!-- wield:aborted: stop -->\n{after}")
        };
        let aborted = |text: &str| parse(text).tool_calls()[0].aborted.clone();
        assert_eq!(aborted(&reply("\n\n")), Some("stop".to_string()));
        assert_eq!(aborted(&reply("but it went on\n")), None);
        assert_eq!(
            aborted("@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{}\n```\n"),
            None
        );
    }

    /// The pending, unresolved and blocking lists and one call's status.
    #[test]
    fn queries_over_the_calls() {
        let doc = parse(TWO_CALLS);
        let ids = |calls: Vec<ToolCall>| calls.into_iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(ids(doc.pending()), ["x"]);
        assert_eq!(ids(doc.unresolved()), ["x"]);
        assert_eq!(doc.status_of("y"), Some(CallStatus::Error));
        assert_eq!(doc.status_of("x"), Some(CallStatus::Pending));
        assert_eq!(doc.status_of("z"), None);
        assert!(doc.blocking().is_empty());
        let calls = doc.tool_calls();
        assert_eq!(calls[1].result.as_deref(), Some("failed"));
        assert_eq!(calls[1].result_lines, Some(LineRange::new(14, 17)));
        assert_eq!((calls[1].line, calls[1].lines), (6, LineRange::new(6, 9)));
        assert_eq!(parse("@You:\n**Tool Result:** `q`\n```\n```\n").blocking().len(), 1);
    }

    /// Every status but the final ones leaves a call unresolved.
    #[test]
    fn only_done_and_error_are_final() {
        use CallStatus::*;
        for status in [Missing, Pending, Approved, Denied, Rejected, Aborted] {
            assert!(!status.is_final(), "{status:?}");
        }
        assert!(Done.is_final() && Error.is_final());
        let doc =
            parse("@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{}\n```\n@You:\n**Tool Result:** `x`\n```\n3\n```\n");
        assert_eq!(doc.status_of("x"), Some(Done));
        assert!(doc.unresolved().is_empty());
        let missing = parse("@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{}\n```\n");
        assert_eq!(missing.tool_calls()[0].status, Missing);
        assert_eq!(missing.tool_calls()[0].result, None);
    }

    /// A result without a fenced block gives its call a status but no
    /// result text.
    #[test]
    fn a_result_without_a_fence_has_no_text() {
        let doc = parse(
            "@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{}\n```\n@You:\n**Tool Result:** `x` (denied)\nno fence\n",
        );
        let call = &doc.tool_calls()[0];
        assert_eq!((call.status, call.result.as_deref()), (CallStatus::Denied, None));
    }
}

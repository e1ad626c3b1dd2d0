//! The machine-readable state of a document (what `wield chat status
//! --json` prints): its messages with their line ranges, every tool call
//! with its status, the pending ones, the file references and the
//! diagnostics.

use serde::Serialize;

use crate::calls::ToolCall;
use crate::diagnostic::Diagnostic;
use crate::syntax::{Document, FileRef, LineRange, Segment, Speaker, ThinkingKind};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct State {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<FrontmatterState>,
    pub messages: Vec<MessageState>,
    pub tool_uses: Vec<ToolCall>,
    /// The ids whose placeholder is `(pending)`.
    pub pending: Vec<String>,
    /// The ids without a final result (pending or not).
    pub unresolved: Vec<String>,
    pub file_refs: Vec<FileRef>,
    pub diagnostics: Vec<Diagnostic>,
    /// Whether an error-severity diagnostic blocks sending.
    pub blocked: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrontmatterState {
    pub language: String,
    pub lines: LineRange,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MessageState {
    pub role: String,
    pub lines: LineRange,
    pub segments: Vec<SegmentState>,
}

/// A segment: its kind, lines, and for tool blocks the id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SegmentState {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub lines: LineRange,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A tool result's status, a signed thinking block's provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Document<'_> {
    /// The document's state.
    pub fn state(&self) -> State {
        let tool_uses = self.tool_calls();
        let messages = self
            .messages
            .iter()
            .map(|m| MessageState {
                role: match &m.speaker {
                    Speaker::Other(name) => name.clone(),
                    known => known.name().to_ascii_lowercase(),
                },
                lines: m.lines,
                segments: m.segments.iter().map(segment_state).collect(),
            })
            .collect();
        let file_refs = self
            .messages
            .iter()
            .flat_map(|m| &m.segments)
            .filter_map(|s| match s {
                Segment::Text(t) => Some(t.file_refs.iter().cloned()),
                _ => None,
            })
            .flatten()
            .collect();
        State {
            frontmatter: self.frontmatter.as_ref().map(|f| FrontmatterState {
                language: f.language.to_string(),
                lines: f.fence.lines,
            }),
            messages,
            pending: tool_uses
                .iter()
                .filter(|c| c.status == crate::CallStatus::Pending)
                .map(|c| c.id.clone())
                .collect(),
            unresolved: tool_uses
                .iter()
                .filter(|c| !c.status.is_final())
                .map(|c| c.id.clone())
                .collect(),
            tool_uses,
            file_refs,
            blocked: self.diagnostics.iter().any(Diagnostic::blocks_sending),
            diagnostics: self.diagnostics.clone(),
        }
    }
}

fn segment_state(s: &Segment) -> SegmentState {
    let (kind, id, detail) = match s {
        Segment::Text(_) => ("text", None, None),
        Segment::ToolUse(u) => ("tool_use", Some(u.id.to_string()), Some(u.name.to_string())),
        Segment::ToolResult(r) => (
            "tool_result",
            Some(r.id.to_string()),
            r.status.map(|s| s.as_str().to_string()),
        ),
        Segment::Thinking(t) => (
            "thinking",
            None,
            match &t.kind {
                ThinkingKind::Plain => None,
                ThinkingKind::Redacted => Some("redacted".to_string()),
                ThinkingKind::Signed { provider, .. } => Some(provider.to_string()),
            },
        ),
        Segment::Aborted(_) => ("aborted", None, None),
    };
    SegmentState {
        kind,
        lines: s.lines(),
        id,
        detail,
    }
}

//! The cycle's edits of a document's text, without I/O: where phase 1's
//! placeholders go, what phase 2 finds to do, and its results written in.

use crate::calls::{CallStatus, ToolCall};
use crate::error::ChatError;
use crate::syntax::{Document, Segment, Speaker, Status};
use crate::write::{new_prompt, tool_result_block};

/// What phase 1 writes for a call without a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// A placeholder with this status.
    Placeholder(Status),
    /// A final error result at once (a call that cannot run: an unknown
    /// tool, invalid input).
    Refused(String),
}

/// The block phase 1 writes for `id`.
pub(crate) fn placement_block(id: &str, placement: &Placement) -> String {
    match placement {
        Placement::Placeholder(status) => crate::write::placeholder(id, *status),
        Placement::Refused(message) => tool_result_block(id, Some(Status::Error), "", message),
    }
}

/// The text with `blocks` (a tool-use id and a result block each) written
/// after their tool uses: at the start of the person's message that
/// follows the reply, or in a new `@You:` message after it. Blocks whose
/// tool use is gone are left out.
pub(crate) fn insert_blocks(text: &str, doc: &Document<'_>, blocks: &[(String, String)]) -> String {
    let starts = line_starts(text);
    let offset = |line: usize| starts.get(line - 1).copied().unwrap_or(text.len());
    // Insertion points, each with what goes there.
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for (i, m) in doc.messages.iter().enumerate() {
        if m.speaker != Speaker::Assistant {
            continue;
        }
        let mine: Vec<&str> = m
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::ToolUse(u) => blocks.iter().find(|(id, _)| *id == u.id).map(|(_, b)| b.as_str()),
                _ => None,
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        let body: String = mine.iter().map(|b| format!("{b}\n")).collect();
        match doc.messages.get(i + 1) {
            Some(next) if next.speaker == Speaker::You && !next.inline => {
                inserts.push((offset(next.lines.start + 1), body));
            }
            next => {
                let at = next.map_or(text.len(), |n| offset(n.lines.start));
                let mut piece = String::from(blank_line_after(&text[..at]));
                piece.push_str("@You:\n");
                piece.push_str(&body);
                inserts.push((at, piece));
            }
        }
    }
    let mut out = String::with_capacity(text.len() + inserts.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut at = 0;
    inserts.sort_by_key(|(o, _)| *o);
    for (o, piece) in &inserts {
        out.push_str(&text[at..*o]);
        out.push_str(piece);
        at = *o;
    }
    out.push_str(&text[at..]);
    out
}

/// The byte offset of each line's start.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1).filter(|&i| i < text.len()));
    starts
}

/// What phase 2 finds in a document.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// `(pending)` with text in it: the person's answer is the result.
    pub user_provided: Vec<ToolCall>,
    pub denied: Vec<ToolCall>,
    pub rejected: Vec<ToolCall>,
    pub aborted: Vec<ToolCall>,
    /// To run.
    pub approved: Vec<ToolCall>,
    /// `(approved)` with text the person wrote in it: not run.
    pub edited: Vec<ToolCall>,
    /// Empty `(pending)`: waiting for the person.
    pub waiting: Vec<ToolCall>,
    /// No result block at all (phase 1 has not run).
    pub missing: Vec<ToolCall>,
}

impl Plan {
    pub(crate) fn of(doc: &Document<'_>) -> Self {
        Self::from_calls(doc.tool_calls())
    }

    /// The plan for `calls`, the document's tool calls.
    pub(crate) fn from_calls(calls: Vec<ToolCall>) -> Self {
        let mut plan = Self::default();
        for call in calls {
            let typed = call.result.as_deref().is_some_and(|r| !r.trim().is_empty());
            match call.status {
                CallStatus::Pending if typed => plan.user_provided.push(call),
                CallStatus::Pending => plan.waiting.push(call),
                CallStatus::Approved if typed => plan.edited.push(call),
                CallStatus::Approved => plan.approved.push(call),
                CallStatus::Denied => plan.denied.push(call),
                CallStatus::Rejected => plan.rejected.push(call),
                CallStatus::Aborted => plan.aborted.push(call),
                CallStatus::Missing => plan.missing.push(call),
                CallStatus::Done | CallStatus::Error => {}
            }
        }
        plan
    }

    /// Whether anything can be resolved without a person.
    pub(crate) fn actionable(&self) -> bool {
        !(self.user_provided.is_empty()
            && self.denied.is_empty()
            && self.rejected.is_empty()
            && self.aborted.is_empty()
            && self.approved.is_empty())
    }
}

/// The message of a rejection: what the person typed, or the default.
pub(crate) fn rejection(call: &ToolCall) -> String {
    match call.result.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => text.to_string(),
        _ => "This tool call was rejected by the user.".into(),
    }
}

/// The message of an aborted call: the abort marker's, or the default.
pub(crate) fn abortion(call: &ToolCall) -> String {
    match call.aborted.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => format!("Not run: {text}"),
        _ => "Not run: the response was interrupted by the user.".into(),
    }
}

/// A result for phase 2 to write.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    pub id: String,
    /// `None` a result, `Some(Error)` an error result.
    pub status: Option<Status>,
    /// `None`: keep what the block holds (a person's answer).
    pub content: Option<String>,
}

/// The text with `outcomes` written in place of their placeholders; those
/// whose placeholder the person removed meanwhile are written after their
/// tool use again, so no result is lost.
pub(crate) fn apply(text: &str, outcomes: &[Outcome]) -> Result<String, ChatError> {
    let doc = crate::parse(text);
    let (present, gone): (Vec<&Outcome>, Vec<&Outcome>) = outcomes.iter().partition(|o| {
        doc.messages
            .iter()
            .flat_map(|m| &m.segments)
            .any(|s| matches!(s, Segment::ToolResult(r) if r.id == o.id))
    });
    let mut new = doc.with_outcomes(&present)?;
    if !gone.is_empty() {
        let doc = crate::parse(&new);
        let blocks: Vec<(String, String)> = gone
            .iter()
            .map(|o| {
                (
                    o.id.clone(),
                    tool_result_block(&o.id, o.status, "", o.content.as_deref().unwrap_or("")),
                )
            })
            .collect();
        new = insert_blocks(&new, &doc, &blocks);
    }
    Ok(new)
}

/// How a reply begins, after `text`: a blank line, then `@Assistant:`.
pub(crate) fn reply_header(text: &str) -> String {
    format!("{}@Assistant:\n", blank_line_after(text))
}

/// What ends a reply: a blank line and a fresh `@You:`.
pub(crate) fn reply_end(text: &str) -> String {
    let sep = if text.is_empty() {
        "\n\n"
    } else {
        blank_line_after(text)
    };
    format!("{sep}{}", new_prompt())
}

/// What `text` needs so that a role line after it follows a blank line
/// (nothing at the start of a document).
fn blank_line_after(text: &str) -> &'static str {
    if text.is_empty() || text.ends_with("\n\n") {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_go_into_the_next_message_or_a_new_one() {
        let text = "@You:\nhi\n\n@Assistant:\n**Tool Use:** `read` (`a`)\n\n```json\n{}\n```\n";
        let doc = crate::parse(text);
        let out = insert_blocks(
            text,
            &doc,
            &[(
                "a".into(),
                placement_block("a", &Placement::Placeholder(Status::Pending)),
            )],
        );
        assert_eq!(
            out,
            format!("{text}\n@You:\n**Tool Result:** `a` (pending)\n\n```\n```\n\n")
        );
        let doc = crate::parse(&out);
        assert_eq!(doc.status_of("a"), Some(CallStatus::Pending));
        assert!(doc.diagnostics.is_empty(), "{:?}", doc.diagnostics);

        let text = "@Assistant:\n**Tool Use:** `read` (`a`)\n\n```json\n{}\n```\n\n@You:\nmore text\n";
        let doc = crate::parse(text);
        let out = insert_blocks(
            text,
            &doc,
            &[(
                "a".into(),
                placement_block("a", &Placement::Refused("no such tool".into())),
            )],
        );
        assert!(
            out.ends_with("@You:\n**Tool Result:** `a` (error)\n\n```\nno such tool\n```\n\nmore text\n"),
            "{out}"
        );
        assert_eq!(crate::parse(&out).status_of("a"), Some(CallStatus::Error));
    }

    #[test]
    fn outcomes_replace_placeholders_and_come_back_when_their_block_was_removed() {
        let text = "@Assistant:\n**Tool Use:** `read` (`a`)\n\n```json\n{}\n```\n**Tool Use:** `read` (`b`)\n\n```json\n{}\n```\n\n@You:\n**Tool Result:** `a` (approved)\n\n```\n```\n";
        let out = apply(
            text,
            &[
                Outcome {
                    id: "a".into(),
                    status: None,
                    content: Some("one".into()),
                },
                Outcome {
                    id: "b".into(),
                    status: Some(Status::Error),
                    content: Some("two".into()),
                },
            ],
        )
        .unwrap();
        let doc = crate::parse(&out);
        assert_eq!(doc.status_of("a"), Some(CallStatus::Done));
        assert_eq!(doc.status_of("b"), Some(CallStatus::Error));
        assert!(out.contains("```\none\n```"), "{out}");
        assert!(out.contains("```\ntwo\n```"), "{out}");
    }
}

//! Context compaction: when the conversation nears the model's context
//! window, the model writes a hand-off summary and the history becomes the
//! most recent user messages and that summary.
//!
//! The new history holds no tool call, so every call keeps exactly one
//! result: the calls and their results leave together.

use std::collections::HashSet;

use tokio_util::sync::CancellationToken;
use wield_core::HandOff;
use wield_llm::{Block, LlmError, Message, Request, Role, ToolChoice, Usage};

use crate::guard::{estimate_tokens, request_tokens};
use crate::{Agent, tool_defs};

/// What the model is asked to write.
pub(crate) const SUMMARY_PROMPT: &str = "Your context is nearly full, so this conversation will be replaced by a \
     summary you write now. Do not call tools. Write a hand-off summary for whoever resumes the task, with these \
     sections:\n\
     - Goal: what the user asked for.\n\
     - Decisions: what was decided and why.\n\
     - Constraints: rules, preferences and limits the user or the project set.\n\
     - Progress: what is done, with the files, commands and results that matter.\n\
     - Remaining: what is left to do, next step first.\n\
     - Todo list: the current todo list, each item with its status.\n\
     Be concise and specific: keep names, paths, numbers and error messages exactly.";

/// What comes before the summary in the new history.
pub(crate) const SUMMARY_PREFIX: &str = "[Context compacted] The conversation so far was replaced by this hand-off \
     summary. Go on with the task from it; do not redo what it says is done.\n\n";

/// What comes before the session's hand-off notes (the todo list, kept by
/// its tools as a [`HandOff`] note) in the summary request and after the
/// summary in the new history.
pub(crate) const STATE_PREFIX: &str = "[Session state] Kept as it is across compaction; it is current:\n\n";

/// The most tokens of recent user messages the new history keeps.
pub const KEEP_USER_TOKENS: usize = 20_000;

/// What a compaction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compaction {
    /// The request's estimated tokens before.
    pub before_tokens: usize,
    /// The request's estimated tokens after.
    pub after_tokens: usize,
    /// The tokens the summary request used.
    pub usage: Usage,
}

impl Agent {
    /// Whether the next request (with tools unless `last`) passes
    /// `compact_at` of the context window: by the estimate, or by what the
    /// provider said the last request held.
    pub(crate) fn needs_compaction(&self, last: bool) -> bool {
        let Some(window) = self.limits.context_window else {
            return false;
        };
        let at = (window as usize).saturating_mul(usize::from(self.limits.compact_at)) / 100;
        let estimated = self.estimated_tokens(&self.messages, last);
        estimated.max(self.reported_tokens) > at && self.messages.iter().any(|m| m.role == Role::Assistant)
    }

    /// Compacts the conversation now (`/compact`): the model writes a
    /// hand-off summary (a request without tools) and the history becomes
    /// the most recent user messages, up to [`KEEP_USER_TOKENS`], and the
    /// summary. When the summary request itself is too long, the oldest
    /// messages go first. `None` when there is nothing to compact.
    pub async fn compact(&mut self, cancel: &CancellationToken) -> Result<Option<Compaction>, LlmError> {
        if !self.messages.iter().any(|m| m.role == Role::Assistant) {
            return Ok(None);
        }
        let before_tokens = self.estimated_tokens(&self.messages, false);
        let mut history = self.messages.clone();
        // Trimmed beforehand to what the window holds, if it is known.
        if let Some(window) = self.limits.context_window {
            let ask = estimate_tokens(SUMMARY_PROMPT);
            while self.estimated_tokens(&history, true) + ask > window as usize && drop_oldest(&mut history) {}
        }
        let mut usage = Usage::default();
        let summary = loop {
            let request = self.summary_request(&history);
            match self.provider.stream(&request, cancel, |_| {}).await {
                Ok(reply) => {
                    self.audit_turn(None, &reply, &[]);
                    usage.add(reply.usage);
                    break reply.text();
                }
                Err(e) if e.is_context_overflow() && drop_oldest(&mut history) => {}
                Err(e) => return Err(e),
            }
        };
        if cancel.is_cancelled() {
            return Ok(None);
        }
        self.messages = rebuild(&self.messages, &summary);
        // The state tools keep for the session goes on as it is now, after
        // the summary, whatever the summary made of it.
        if let (Some(notes), Some(last)) = (HandOff::render(&self.session), self.messages.last_mut()) {
            last.content.push(Block::Text {
                text: format!("{STATE_PREFIX}{notes}"),
            });
        }
        self.pruner = crate::prune::Pruner::default();
        self.reported_tokens = 0;
        let after_tokens = self.estimated_tokens(&self.messages, false);
        Ok(Some(Compaction {
            before_tokens,
            after_tokens,
            usage,
        }))
    }

    /// The estimated tokens of a request of `messages`, with the tools
    /// unless `last`.
    fn estimated_tokens(&self, messages: &[Message], last: bool) -> usize {
        let tools = if last { Vec::new() } else { tool_defs(&self.offered()) };
        request_tokens(self.system.as_deref(), messages, &tools)
    }

    /// The summary request: the history and the instruction, no tools.
    fn summary_request(&self, history: &[Message]) -> Request {
        let mut messages = history.to_vec();
        let mut ask = vec![Block::Text {
            text: SUMMARY_PROMPT.into(),
        }];
        if let Some(notes) = HandOff::render(&self.session) {
            ask.push(Block::Text {
                text: format!("{STATE_PREFIX}{notes}"),
            });
        }
        match messages.last_mut() {
            Some(m) if m.role == Role::User => m.content.extend(ask),
            _ => messages.push(Message {
                role: Role::User,
                content: ask,
            }),
        }
        Request {
            system: self.system.clone(),
            messages,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            foreign_thinking: Default::default(),
        }
    }
}

/// The history after compaction: the most recent user texts (older ones
/// cut) and the summary.
pub(crate) fn rebuild(messages: &[Message], summary: &str) -> Vec<Message> {
    let texts: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::Text { text }
                if !text.starts_with(SUMMARY_PREFIX) && !text.starts_with(STATE_PREFIX) && text != SUMMARY_PROMPT =>
            {
                Some(text.as_str())
            }
            _ => None,
        })
        .collect();
    let mut room = KEEP_USER_TOKENS;
    let mut kept = Vec::new();
    for text in texts.into_iter().rev() {
        let size = estimate_tokens(text);
        if size <= room {
            kept.push(text.to_owned());
            room -= size;
            continue;
        }
        if room > 0 {
            // The newest part of an older message, cut at a character.
            let mut start = text.len().saturating_sub(room * 4);
            while !text.is_char_boundary(start) {
                start += 1;
            }
            kept.push(format!("[…cut] {}", &text[start..]));
        }
        break;
    }
    kept.reverse();
    let summary = if summary.trim().is_empty() {
        "(the model wrote no summary)"
    } else {
        summary.trim()
    };
    kept.into_iter()
        .map(|t| Message::text(Role::User, t))
        .chain(std::iter::once(Message::text(
            Role::User,
            format!("{SUMMARY_PREFIX}{summary}"),
        )))
        .collect()
}

/// The text blocks of a message, joined.
fn text_of(m: &Message) -> String {
    m.content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// What stands first in a history whose oldest messages were dropped, so
/// it still opens with the user.
const DROPPED: &str = "[Earlier messages were dropped to fit the context window.]";

/// Drops the oldest message and the results of the calls it made; a
/// history left opening with the model opens with a note instead. `false`
/// when nothing is left to drop.
pub(crate) fn drop_oldest(messages: &mut Vec<Message>) -> bool {
    let start = usize::from(messages.first().is_some_and(|m| text_of(m) == DROPPED));
    if start >= messages.len() {
        return false;
    }
    messages.remove(start);
    let calls: HashSet<String> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    for m in messages.iter_mut() {
        m.content.retain(|b| match b {
            Block::ToolResult { tool_use_id, .. } => calls.contains(tool_use_id),
            _ => true,
        });
    }
    messages.retain(|m| !m.content.is_empty());
    if messages.first().is_some_and(|m| m.role == Role::Assistant) {
        messages.insert(0, Message::text(Role::User, DROPPED));
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wield_llm::ResultPart;

    use super::*;

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse {
                id: id.into(),
                name: "read".into(),
                input: json!({}),
            }],
        }
    }

    fn result(id: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: id.into(),
                content: vec![ResultPart::Text { text: "r".into() }],
                is_error: false,
            }],
        }
    }

    #[test]
    fn the_new_history_is_the_recent_user_messages_and_the_summary() {
        let messages = vec![
            Message::text(Role::User, "first task"),
            call("a"),
            result("a"),
            Message::text(Role::User, "second task"),
            call("b"),
            result("b"),
        ];
        let new = rebuild(&messages, "Goal: both tasks.");
        let texts: Vec<String> = new.iter().map(text_of).collect();
        assert_eq!(texts[..2], ["first task", "second task"]);
        assert!(texts[2].starts_with(SUMMARY_PREFIX) && texts[2].ends_with("Goal: both tasks."));
        assert!(new.iter().all(|m| m.role == Role::User));
        // A second compaction keeps the user's words, not the old summary.
        let again = rebuild(&new, "Later.");
        assert_eq!(again.len(), 3);
    }

    #[test]
    fn the_state_block_after_a_summary_is_not_kept_as_a_user_message() {
        let mut new = rebuild(&[Message::text(Role::User, "task")], "S1");
        if let Some(last) = new.last_mut() {
            last.content.push(Block::Text {
                text: format!("{STATE_PREFIX}## Todo list\n1. [ ] a"),
            });
        }
        let again = rebuild(&new, "S2");
        let texts: Vec<String> = again.iter().map(text_of).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert_eq!(texts[0], "task");
    }

    #[test]
    fn older_user_messages_past_the_keep_limit_are_cut() {
        let big = "x".repeat(KEEP_USER_TOKENS * 4 - 40);
        let messages = vec![
            Message::text(Role::User, "y".repeat(400)),
            Message::text(Role::User, big.clone()),
        ];
        let new = rebuild(&messages, "s");
        let first = text_of(&new[0]);
        assert!(first.starts_with("[…cut] ") && first.len() < 100, "{}", first.len());
        assert_eq!(text_of(&new[1]), big);
    }

    #[test]
    fn dropping_the_oldest_keeps_every_call_paired() {
        let mut messages = vec![
            Message::text(Role::User, "go"),
            call("a"),
            result("a"),
            call("b"),
            result("b"),
        ];
        assert!(drop_oldest(&mut messages));
        // The history still opens with the user.
        assert_eq!(messages.len(), 5);
        assert_eq!(text_of(&messages[0]), DROPPED);
        // A call goes with its result.
        assert!(drop_oldest(&mut messages));
        assert_eq!(messages.len(), 3);
        assert!(matches!(&messages[1].content[0], Block::ToolUse { id, .. } if id == "b"));
        assert!(drop_oldest(&mut messages));
        assert_eq!(messages.len(), 1);
        assert!(!drop_oldest(&mut messages));
    }
}

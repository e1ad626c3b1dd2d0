//! Failed-call pruning: a call refused before it ran and its error result
//! leave the history, as a pair, once the model has seen them.

use wield_llm::{Block, Message};

/// The refused calls, with the step that added them.
#[derive(Debug, Default)]
pub(crate) struct Pruner {
    refused: Vec<(String, u32)>,
}

impl Pruner {
    pub(crate) fn mark(&mut self, id: &str, step: u32) {
        self.refused.push((id.to_owned(), step));
    }

    /// Before the request of `step`: the pairs added before the previous
    /// step's request was sent (the model has seen them) go, and the
    /// messages they leave empty.
    pub(crate) fn prune(&mut self, messages: &mut Vec<Message>, step: u32) {
        let (seen, kept): (Vec<_>, Vec<_>) = self.refused.drain(..).partition(|(_, at)| at + 1 < step);
        self.refused = kept;
        if seen.is_empty() {
            return;
        }
        let gone = |id: &str| seen.iter().any(|(s, _)| s == id);
        for message in messages.iter_mut() {
            message.content.retain(|b| match b {
                Block::ToolUse { id, .. } => !gone(id),
                Block::ToolResult { tool_use_id, .. } => !gone(tool_use_id),
                _ => true,
            });
        }
        messages.retain(|m| !m.content.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wield_llm::{ResultPart, Role};

    use super::*;

    fn call(id: &str) -> Block {
        Block::ToolUse {
            id: id.into(),
            name: "t".into(),
            input: json!({}),
        }
    }

    fn result(id: &str) -> Block {
        Block::ToolResult {
            tool_use_id: id.into(),
            content: vec![ResultPart::Text { text: "r".into() }],
            is_error: true,
        }
    }

    #[test]
    fn a_refused_pair_goes_once_the_model_has_seen_it() {
        let mut messages = vec![
            Message::text(Role::User, "go"),
            Message {
                role: Role::Assistant,
                content: vec![call("bad")],
            },
            Message {
                role: Role::User,
                content: vec![result("bad")],
            },
            Message {
                role: Role::Assistant,
                content: vec![call("ok")],
            },
            Message {
                role: Role::User,
                content: vec![result("ok")],
            },
        ];
        let mut p = Pruner::default();
        p.mark("bad", 1);
        // Step 2's request still shows it (the model sees the error once).
        p.prune(&mut messages, 2);
        assert_eq!(messages.len(), 5);
        // Step 3's request no longer does; the emptied messages go too.
        p.prune(&mut messages, 3);
        assert_eq!(messages.len(), 3);
        assert!(matches!(&messages[1].content[0], Block::ToolUse { id, .. } if id == "ok"));
    }
}

//! A document as the conversation a model is sent.

use serde_json::json;
use wield_chat::{CallStatus, ChatError, ConvertOptions, parse};
use wield_llm::{Block, Message, Origin, ResultPart, Role, Thinking};

use super::doc;

fn options(model: &str) -> ConvertOptions {
    ConvertOptions {
        model: Some(model.into()),
        ..ConvertOptions::default()
    }
}

fn text(role: Role, t: &str) -> Message {
    Message::text(role, t)
}

#[test]
fn system_prompt_tool_use_and_result() {
    let c = parse(&doc("tools")).conversation(&options("m")).unwrap();
    assert_eq!(
        c.system.as_deref(),
        Some("You answer in one sentence and use tools when needed.")
    );
    assert_eq!(
        c.messages,
        vec![
            text(Role::User, "How many lines does the README have?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Text {
                        text: "I'll count them.".into()
                    },
                    Block::ToolUse {
                        id: "toolu_01CountLines".into(),
                        name: "bash".into(),
                        input: json!({"command": "wc -l README.md"})
                    },
                ]
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_use_id: "toolu_01CountLines".into(),
                    content: vec![ResultPart::Text {
                        text: "412 README.md".into()
                    }],
                    is_error: false
                }]
            },
            text(Role::Assistant, "The README has 412 lines."),
        ]
    );
}

#[test]
fn results_come_before_follow_up_text_and_errors_are_errors() {
    let c = parse(&doc("parallel")).conversation(&options("m")).unwrap();
    let user = &c.messages[2];
    let ids: Vec<_> = user
        .content
        .iter()
        .map(|b| match b {
            Block::ToolResult { tool_use_id, .. } => tool_use_id.as_str(),
            Block::Text { text } => text.as_str(),
            _ => "?",
        })
        .collect();
    assert_eq!(
        ids,
        vec!["toolu_01BBB", "toolu_01AAA", "call_abc:2", "Thanks! Now add them up."]
    );

    let mut errors = doc("errors");
    errors.truncate(errors.find("**Tool Use:** `read` (`toolu_bad_json`)").unwrap());
    errors.push_str("@You:\n**Tool Result:** `toolu_01ERROR` (error)\n\n```\nDivision by zero\n```\n");
    let c = parse(&errors).conversation(&options("m")).unwrap();
    assert_eq!(
        c.messages[2].content,
        vec![Block::ToolResult {
            tool_use_id: "toolu_01ERROR".into(),
            content: vec![ResultPart::Text {
                text: "Division by zero".into()
            }],
            is_error: true
        }]
    );
}

#[test]
fn thinking_goes_first_with_its_signature_for_its_provider() {
    let c = parse(&doc("thinking")).conversation(&options("claude")).unwrap();
    let origin = |p: &str| {
        Some(Origin {
            provider: p.into(),
            model: "claude".into(),
        })
    };
    assert_eq!(
        c.messages[1].content,
        vec![
            Block::Thinking(Thinking {
                text: "Simple arithmetic: 2+2 is 4.".into(),
                signature: Some("EqQBCkgIARABGAIiQLsig".into()),
                origin: origin("anthropic"),
                ..Thinking::default()
            }),
            Block::Text {
                text: "2 + 2 = 4.".into()
            },
        ]
    );
    // OpenAI's signature is a reasoning item: its encrypted content and id.
    assert_eq!(
        c.messages[3].content[0],
        Block::Thinking(Thinking {
            text: "Same question again.".into(),
            redacted_data: Some("gAAAA-opaque".into()),
            item_id: Some("rs_0abc".into()),
            origin: origin("openai-responses"),
            ..Thinking::default()
        })
    );
    let Block::Thinking(vertex) = &c.messages[5].content[0] else {
        panic!()
    };
    assert_eq!(
        (vertex.signature.as_deref(), vertex.text.as_str(), vertex.origin.clone()),
        (Some("test-thought-signature-abc123"), "", origin("gemini"))
    );
    let Block::Thinking(plain) = &c.messages[5].content[1] else {
        panic!()
    };
    assert_eq!(
        (plain.text.as_str(), plain.origin.clone()),
        ("An unsigned thought.", None)
    );
    assert!(matches!(&c.messages[5].content[2], Block::ToolUse { .. }));

    let r = parse(&doc("redacted")).conversation(&options("claude")).unwrap();
    assert_eq!(
        r.messages[1].content[1],
        Block::Thinking(Thinking {
            redacted_data: Some("encrypted-redacted-data-xyz789".into()),
            origin: origin("anthropic"),
            ..Thinking::default()
        })
    );
}

#[test]
fn placeholders_are_not_results_and_block_sending() {
    let src = doc("statuses");
    let d = parse(&src);
    let Err(ChatError::Unresolved { calls }) = d.conversation(&options("m")) else {
        panic!()
    };
    let statuses: Vec<_> = calls.iter().map(|(id, _, s)| (id.as_str(), *s)).collect();
    assert_eq!(
        statuses,
        vec![
            ("t_pending", CallStatus::Pending),
            ("t_provided", CallStatus::Pending),
            ("t_rejected", CallStatus::Rejected),
            ("t_denied", CallStatus::Denied),
            ("t_approved", CallStatus::Approved),
            ("t_meta", CallStatus::Approved),
            ("t_missing", CallStatus::Missing),
        ]
    );
    assert!(calls.iter().all(|(_, line, _)| *line > 3));
    let unchecked = d.conversation_unchecked(&options("m"));
    assert_eq!(
        unchecked.messages.len(),
        2,
        "the placeholders' message has no result to send"
    );
    let pending: Vec<_> = d.pending().into_iter().map(|c| c.id).collect();
    assert_eq!(pending, vec!["t_pending", "t_provided"]);
    assert_eq!(d.status_of("t_missing"), Some(CallStatus::Missing));
    assert_eq!(d.status_of("nope"), None);
}

#[test]
fn abort_markers_are_text_only_in_a_reply_without_tools() {
    let src = doc("aborted");
    let d = parse(&src);
    let c = d.conversation_unchecked(&options("m"));
    assert_eq!(
        c.messages[1].content,
        vec![
            Block::Text {
                text: "Once upon a time there was a".into()
            },
            Block::Text {
                text: "<!-- Response interrupted by the user. -->".into()
            },
        ]
    );
    assert_eq!(c.messages[3].content.len(), 1, "no marker after a tool use");
    assert_eq!(d.tool_calls()[0].status, CallStatus::Aborted);
}

#[test]
fn legacy_inline_roles_are_sent_as_their_text() {
    let c = parse(&doc("legacy")).conversation_unchecked(&options("m"));
    assert_eq!(c.system.as_deref(), Some("You are a shell assistant."));
    assert_eq!(c.messages[0], text(Role::User, "List the files,\nplease."));
}

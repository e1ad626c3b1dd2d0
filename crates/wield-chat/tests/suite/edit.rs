//! Rewrites and the canonical forms wield writes.

use wield_chat::write::{abort_marker, new_prompt, placeholder, tool_result_block, tool_use_block};
use wield_chat::{CallStatus, ChatError, DiagnosticKind, Segment, Status, parse};

use super::doc;

#[test]
fn legacy_forms_are_rewritten_in_the_current_form() {
    let (text, count) = parse(&doc("legacy")).rewrite_legacy();
    assert_eq!(count, 5);
    let d = parse(&text);
    assert!(text.starts_with("@System:\nYou are a shell assistant.\n@You:\nList the files,\nplease.\n"));
    assert!(text.contains("**Tool Result:** `toolu_legacy1` (pending)\n\n```\n```\n"));
    assert!(text.contains("**Tool Result:** `toolu_legacy2` (rejected sandbox=false)\n\n```\nNot now.\n```\n"));
    assert!(text.contains("**Tool Result:** `toolu_legacy3` (approved)\n\n```\n```\n"));
    assert!(!text.contains("flemma:tool") && !text.contains("wield:tool"));
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
    let statuses: Vec<_> = d.tool_calls().iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        vec![CallStatus::Pending, CallStatus::Rejected, CallStatus::Approved]
    );
    // Rewriting again changes nothing.
    assert_eq!(d.rewrite_legacy(), (text.clone(), 0));
}

#[test]
fn crlf_documents_keep_their_endings_when_rewritten() {
    let (text, _) = parse("@You: hi\r\nthere\r\n").rewrite_legacy();
    assert_eq!(text, "@You:\r\nhi\r\nthere\r\n");
}

#[test]
fn statuses_and_results_are_rewritten_in_place() {
    let before = doc("statuses");
    let text = parse(&before).with_status("t_pending", Some(Status::Approved)).unwrap();
    let text = parse(&text).with_status("t_meta", Some(Status::Denied)).unwrap();
    assert!(text.contains("**Tool Result:** `t_pending` (approved)\n"));
    assert!(text.contains("**Tool Result:** `t_meta` (denied sandbox=false note=\"two words\")\n"));
    assert_eq!(text.lines().count(), before.lines().count());
    let text = parse(&text)
        .with_result("t_approved", None, "all: build\n\t```cc```")
        .unwrap();
    assert!(text.contains("**Tool Result:** `t_approved`\n\n````\nall: build\n\t```cc```\n````\n"));
    let d = parse(&text);
    assert_eq!(d.status_of("t_approved"), Some(CallStatus::Done));
    assert_eq!(d.tool_calls()[4].result.as_deref(), Some("all: build\n\t```cc```"));
    assert!(matches!(d.with_status("t_missing", None), Err(ChatError::NoResult { id }) if id == "t_missing"));
}

#[test]
fn canonical_blocks_read_back_as_what_they_say() {
    let input = r#"{"content":"```rust\nfn main() {}\n```"}"#;
    let mut text = String::from("@Assistant:\n");
    text.push_str(&tool_use_block("write", "toolu_9", input));
    text.push('\n');
    text.push_str(&abort_marker("Stopped\nhere"));
    text.push_str("\n@You:\n");
    text.push_str(&placeholder("toolu_9", Status::Pending));
    text.push_str(new_prompt());
    let d = parse(&text);
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
    let Segment::ToolUse(u) = &d.messages[0].segments[0] else {
        panic!()
    };
    assert_eq!(
        u.fence.as_ref().unwrap().ticks,
        4,
        "JSON keeps backticks as they are, so the fence is longer"
    );
    assert_eq!(u.fence.as_ref().unwrap().body(), input);
    let calls = d.tool_calls();
    assert_eq!(
        (calls[0].status, calls[0].aborted.as_deref()),
        (CallStatus::Pending, Some("Stopped here"))
    );
    assert_eq!(d.messages.len(), 3);

    let block = tool_result_block("toolu_9", Some(Status::Error), "", "````\nx");
    assert_eq!(block, "**Tool Result:** `toolu_9` (error)\n\n`````\n````\nx\n`````\n");
    let src = format!("@You:\n{block}");
    let d = parse(&src);
    assert_eq!(
        d.diagnostics.iter().map(|d| d.kind).collect::<Vec<_>>(),
        vec![DiagnosticKind::UnmatchedToolResult]
    );
}

#[test]
fn thinking_blocks_read_back_as_the_same_thinking() {
    use wield_chat::ConvertOptions;
    use wield_chat::write::thinking_block;
    use wield_llm::{Block, Origin, Thinking};
    let origin = |p: &str| {
        Some(Origin {
            provider: p.into(),
            model: "m".into(),
        })
    };
    let cases = [
        Thinking {
            text: "Plan.\nStep two.".into(),
            signature: Some("EqQB/sig+=".into()),
            origin: origin("anthropic"),
            ..Default::default()
        },
        Thinking {
            redacted_data: Some("opaque".into()),
            origin: origin("anthropic"),
            ..Default::default()
        },
        Thinking {
            text: "Reasoned.".into(),
            redacted_data: Some("gAAAA".into()),
            item_id: Some("rs_1".into()),
            origin: origin("openai-responses"),
            ..Default::default()
        },
        Thinking {
            signature: Some("thought-sig".into()),
            origin: origin("gemini"),
            ..Default::default()
        },
        Thinking {
            text: "Unsigned.".into(),
            ..Default::default()
        },
    ];
    for thinking in cases {
        let block = thinking_block(&thinking).unwrap();
        let src = format!("@Assistant:\n{block}Answer.\n");
        let d = parse(&src);
        assert!(d.diagnostics.is_empty(), "{block}");
        assert_eq!(d.write(), format!("@Assistant:\n{block}Answer.\n"));
        let c = d
            .conversation(&ConvertOptions {
                model: Some("m".into()),
                ..ConvertOptions::default()
            })
            .unwrap();
        assert_eq!(c.messages[0].content[0], Block::Thinking(thinking), "{block}");
    }
    assert_eq!(thinking_block(&Thinking::default()), None);
}

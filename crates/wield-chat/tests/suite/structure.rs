//! What the parser reads: messages, segments, their fields and lines.

use wield_chat::{LineRange, Segment, Speaker, Status, ThinkingKind, parse};

use super::doc;

fn segments(text: &str, message: usize) -> Vec<Segment<'_>> {
    parse(text).messages[message].segments.clone()
}

#[test]
fn frontmatter_and_messages_carry_their_lines() {
    let src = doc("tools");
    let d = parse(&src);
    let fm = d.frontmatter.as_ref().unwrap();
    assert_eq!(fm.language, "toml");
    assert_eq!(
        fm.code(),
        "model = \"claude-sonnet-4-5\"\ntools = [\"+read\", \"-bash\"]\n"
    );
    assert_eq!(fm.fence.lines, LineRange { start: 1, end: 4 });
    let roles: Vec<_> = d
        .messages
        .iter()
        .map(|m| (m.speaker.clone(), m.lines.start, m.lines.end))
        .collect();
    assert_eq!(
        roles,
        vec![
            (Speaker::System, 5, 7),
            (Speaker::You, 8, 10),
            (Speaker::Assistant, 11, 19),
            (Speaker::You, 20, 26),
            (Speaker::Assistant, 27, 29),
            (Speaker::You, 30, 31),
        ]
    );
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
}

#[test]
fn a_tool_use_keeps_its_json_text_and_reads_its_input() {
    let src = doc("tools");
    let s = segments(&src, 2);
    let Segment::ToolUse(u) = &s[1] else { panic!("{s:?}") };
    assert_eq!((u.name.as_ref(), u.id.as_ref()), ("bash", "toolu_01CountLines"));
    assert_eq!(u.input(), Some(serde_json::json!({"command": "wc -l README.md"})));
    let fence = u.fence.as_ref().unwrap();
    assert_eq!(fence.body(), r#"{"command":"wc -l README.md"}"#);
    assert_eq!((fence.ticks, fence.language.as_ref()), (3, "json"));
    assert_eq!(u.lines, LineRange { start: 14, end: 18 });
}

#[test]
fn nested_backticks_stay_inside_longer_fences_and_role_lines_in_fences_are_content() {
    let src = doc("nested_backticks");
    let d = parse(&src);
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
    assert_eq!(d.messages.len(), 4);
    let Segment::ToolUse(u) = &d.messages[1].segments[0] else {
        panic!()
    };
    assert_eq!(u.fence.as_ref().unwrap().ticks, 4);
    assert_eq!(
        u.input().unwrap()["content"],
        "# Hello\n\n```python\nprint('hi')\n```\n"
    );
    let Segment::ToolResult(r) = &d.messages[2].segments[0] else {
        panic!()
    };
    assert!(r.content().starts_with("Wrote hello.md:\n# Hello\n\n````markdown\n"));
    assert!(r.content().ends_with("```\n````"));
    // The last reply holds a fence with a role line and a tool-use header
    // in it: both are its text, not a message or a call.
    let last = &d.messages[3];
    assert_eq!(last.speaker, Speaker::Assistant);
    assert!(matches!(&last.segments[..], [Segment::Text(t)] if t.text.contains("@You:\nThis role line")));
    assert_eq!(d.tool_calls().len(), 1);
}

#[test]
fn parallel_results_pair_by_id_not_position() {
    let src = doc("parallel");
    let d = parse(&src);
    let calls = d.tool_calls();
    let ids: Vec<_> = calls.iter().map(|c| (c.id.as_ref(), c.result.as_deref())).collect();
    assert_eq!(
        ids,
        vec![
            ("toolu_01AAA", Some("{\"result\": 105}")),
            ("toolu_01BBB", Some("69")),
            ("call_abc:2", Some("1024"))
        ]
    );
    assert!(d.unresolved().is_empty());
    let Segment::Text(t) = d.messages[3].segments.last().unwrap() else {
        panic!()
    };
    assert_eq!(t.text, "\nThanks! Now add them up.\n\n");
}

#[test]
fn thinking_forms() {
    let src = doc("thinking");
    let d = parse(&src);
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
    let kinds: Vec<_> = d
        .messages
        .iter()
        .flat_map(|m| &m.segments)
        .filter_map(|s| match s {
            Segment::Thinking(t) => Some((t.kind.clone(), t.self_closing, t.text().to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(kinds.len(), 4);
    assert_eq!(
        kinds[0],
        (
            ThinkingKind::Signed {
                provider: "anthropic".into(),
                signature: "EqQBCkgIARABGAIiQLsig".into()
            },
            false,
            "Simple arithmetic: 2+2 is 4.".into()
        )
    );
    assert!(matches!(&kinds[1].0, ThinkingKind::Signed { provider, .. } if provider == "openai"));
    assert_eq!(
        kinds[2],
        (
            ThinkingKind::Signed {
                provider: "vertex".into(),
                signature: "test-thought-signature-abc123".into()
            },
            true,
            String::new()
        )
    );
    assert_eq!(kinds[3], (ThinkingKind::Plain, false, "An unsigned thought.".into()));
    let src = doc("redacted");
    let redacted = parse(&src);
    let Segment::Thinking(t) = &redacted.messages[2].segments[2] else {
        panic!()
    };
    assert_eq!(
        (&t.kind, t.text()),
        (&ThinkingKind::Redacted, "encrypted-redacted-data-xyz789")
    );
}

#[test]
fn result_statuses_aliases_and_meta() {
    let src = doc("statuses");
    let d = parse(&src);
    let results: Vec<_> = d.messages[2]
        .segments
        .iter()
        .filter_map(|s| match s {
            Segment::ToolResult(r) => Some((r.id.as_ref(), r.status, r.meta.clone(), r.content().to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("t_pending", Some(Status::Pending), vec![], String::new()),
            ("t_provided", Some(Status::Pending), vec![], "1.2G\tbuild".into()),
            (
                "t_rejected",
                Some(Status::Rejected),
                vec![],
                "Never touch my home directory.".into()
            ),
            ("t_denied", Some(Status::Denied), vec![], String::new()),
            ("t_approved", Some(Status::Approved), vec![], String::new()),
            (
                "t_meta",
                Some(Status::Approved),
                vec!["pending".into(), "sandbox=false".into(), "note=\"two words\"".into()],
                String::new()
            ),
        ]
    );
}

#[test]
fn abort_markers_in_both_namespaces() {
    let src = doc("aborted");
    let d = parse(&src);
    let aborts: Vec<_> = d
        .messages
        .iter()
        .flat_map(|m| &m.segments)
        .filter_map(|s| match s {
            Segment::Aborted(a) => Some((a.namespace.as_ref(), a.message.as_ref(), a.lines.start)),
            _ => None,
        })
        .collect();
    assert_eq!(
        aborts,
        vec![
            ("flemma", "Response interrupted by the user.", 6),
            ("wield", "Stopped by Ctrl-C.", 18)
        ]
    );
    let calls = d.tool_calls();
    assert_eq!(calls[0].aborted.as_deref(), Some("Stopped by Ctrl-C."));
}

#[test]
fn file_references_in_a_persons_text_only() {
    let src = doc("file_refs");
    let d = parse(&src);
    let refs = d.state().file_refs;
    let found: Vec<_> = refs
        .iter()
        .map(|r| (r.path.as_ref(), r.mime.as_deref(), r.line))
        .collect();
    assert_eq!(
        found,
        vec![
            ("./src/main.rs", None, 5),
            ("../notes/my notes.md", Some("text/markdown"), 5),
            ("~/diagram.png", None, 6),
            ("/etc/hosts", None, 6),
        ]
    );
    assert_eq!(refs[1].raw, "@../notes/my%20notes.md;type=text/markdown");
    assert_eq!(d.frontmatter.as_ref().unwrap().language, "json");
}

#[test]
fn legacy_forms_are_read() {
    let src = doc("legacy");
    let d = parse(&src);
    assert!(d.messages[0].inline && d.messages[1].inline);
    assert_eq!(d.messages[0].marker, "@System: ");
    let Segment::Text(t) = &d.messages[1].segments[0] else {
        panic!()
    };
    assert_eq!(t.text, "List the files,\nplease.\n\n");
    let statuses: Vec<_> = d.tool_calls().iter().map(|c| (c.id.clone(), c.status)).collect();
    use wield_chat::CallStatus::*;
    assert_eq!(
        statuses,
        vec![
            ("toolu_legacy1".into(), Pending),
            ("toolu_legacy2".into(), Rejected),
            ("toolu_legacy3".into(), Approved)
        ]
    );
    let Segment::ToolResult(r) = &d.messages[3].segments[2] else {
        panic!("{:?}", d.messages[3].segments)
    };
    assert!(r.legacy);
    assert_eq!(
        (r.meta.clone(), r.content()),
        (vec!["sandbox=false".to_string()], "Not now.")
    );
}

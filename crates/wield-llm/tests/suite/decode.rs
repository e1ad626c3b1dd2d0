//! Every decoder on streams written from each provider's documented wire
//! format, split at every byte, with CRLF line ends too: the same events and
//! the same reply every time, and what each format's quirks must give.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::executor::block_on;
use serde_json::json;
use wield_llm::decode::{Anthropic, Chat, Decoding, Gemini, Responses, WireDecoder, decode_body};
use wield_llm::{Block, ErrorClass, LlmError, Origin, Response, Stop, StreamEvent, Turn, Usage};

type Decoded = Result<(Vec<StreamEvent>, Response), LlmError>;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn decoder(name: &str) -> Box<dyn WireDecoder> {
    match name.split('_').next() {
        Some("anthropic") => Box::new(Anthropic::default()),
        Some("chat") => Box::new(Chat),
        Some("responses") => Box::new(Responses::default()),
        Some("gemini") => Box::new(Gemini),
        other => panic!("no decoder for {other:?}"),
    }
}

/// Decodes `body` delivered in pieces ending at `cuts`.
fn decode_in(name: &str, body: &[u8], cuts: &[usize]) -> Decoded {
    let mut pieces: Vec<Result<Vec<u8>, std::io::Error>> = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
        pieces.push(Ok(body[from..cut].to_vec()));
        from = cut;
    }
    let turn = Turn::new(
        Origin {
            provider: "test".into(),
            model: "m".into(),
        },
        "call_gen_",
    );
    block_on(decode_body(
        futures::stream::iter(pieces),
        Decoding::new(decoder(name), turn),
    ))
}

/// Decodes a fixture whole, then split at every byte, then byte by byte,
/// then with CRLF line ends: all must agree.
fn decode(name: &str) -> Decoded {
    let body = fixture(name);
    let whole = decode_in(name, &body, &[]);
    for cut in 0..=body.len() {
        assert_eq!(decode_in(name, &body, &[cut]), whole, "{name} split at byte {cut}");
    }
    let every: Vec<usize> = (1..body.len()).collect();
    assert_eq!(decode_in(name, &body, &every), whole, "{name} byte by byte");
    let crlf = String::from_utf8(body).unwrap().replace('\n', "\r\n").into_bytes();
    assert_eq!(decode_in(name, &crlf, &[crlf.len() / 3]), whole, "{name} with CRLF");
    whole
}

fn ok(name: &str) -> (Vec<StreamEvent>, Response) {
    decode(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn calls(r: &Response) -> Vec<(String, String, serde_json::Value)> {
    r.tool_calls()
        .map(|(i, n, v)| (i.to_owned(), n.to_owned(), v.clone()))
        .collect()
}

#[test]
fn anthropic_text_with_pings_comments_and_cache_usage() {
    let (events, r) = ok("anthropic_text.sse");
    assert_eq!(r.text(), "Hello, wörld ✓");
    assert_eq!(r.stop, Stop::EndTurn);
    assert_eq!(
        r.usage,
        Usage {
            input: 25,
            output: 12,
            cache_read: 7,
            cache_write: 3,
            reasoning: 0
        }
    );
    let texts: Vec<&StreamEvent> = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::TextDelta { .. }))
        .collect();
    assert_eq!(texts.len(), 2);
    assert_eq!(events.last(), Some(&StreamEvent::Done { stop: Stop::EndTurn }));
}

#[test]
fn anthropic_thinking_signature_and_parallel_calls() {
    let (events, r) = ok("anthropic_thinking_tools.sse");
    let Block::Thinking(t) = &r.content[0] else {
        panic!("{:?}", r.content)
    };
    assert_eq!(t.text, "I should read both files.");
    assert_eq!(t.signature.as_deref(), Some("EqQBCkYIARgCSig="));
    assert!(t.made_by("test", "m"));
    assert_eq!(
        calls(&r),
        [
            ("toolu_A".into(), "read".into(), json!({"path": "a.txt"})),
            ("toolu_B".into(), "list_dir".into(), json!({})),
        ]
    );
    assert_eq!(r.stop, Stop::ToolUse);
    // Started, its pieces, finished at its block's stop, before the next call.
    let kinds: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { id, .. } => Some(format!("start {id}")),
            StreamEvent::ToolCallDelta { id, fragment } => Some(format!("delta {id} {fragment}")),
            StreamEvent::ToolCallFinished { id, input, .. } => Some(format!("end {id} {input}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "start toolu_A",
            "delta toolu_A {\"pa",
            "delta toolu_A th\": \"a.txt\"}",
            "end toolu_A {\"path\":\"a.txt\"}",
            "start toolu_B",
            "end toolu_B {}",
        ]
    );
}

#[test]
fn anthropic_redacted_thinking_without_event_lines() {
    let (_, r) = ok("anthropic_redacted.sse");
    let Block::Thinking(t) = &r.content[0] else {
        panic!("{:?}", r.content)
    };
    assert_eq!(t.redacted_data.as_deref(), Some("EmwKAhgBEgy3va3pzix/LafPsn4a"));
    assert_eq!(r.text(), "Done.");
}

#[test]
fn anthropic_errors_inside_a_200_stream_and_cut_streams() {
    let e = decode("anthropic_overloaded.sse").unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(e.to_string().contains("Overloaded"), "{e}");
    let e = decode("anthropic_cut.sse").unwrap_err();
    assert!(matches!(e, LlmError::Truncated(_)) && e.is_retryable(), "{e}");
}

#[test]
fn chat_text_and_usage_in_a_last_chunk_without_choices() {
    let (_, r) = ok("chat_text.sse");
    assert_eq!(r.text(), "Hi there");
    assert_eq!(r.stop, Stop::EndTurn);
    assert_eq!(
        r.usage,
        Usage {
            input: 79,
            output: 53,
            cache_read: 400,
            cache_write: 0,
            reasoning: 7
        }
    );
}

#[test]
fn chat_parallel_calls_with_split_arguments() {
    let (_, r) = ok("chat_tools_parallel.sse");
    assert_eq!(
        calls(&r),
        [
            ("call_A".into(), "read".into(), json!({"path": "a.txt"})),
            ("call_B".into(), "read".into(), json!({"path": "b.txt"})),
        ]
    );
    assert_eq!(r.stop, Stop::ToolUse);
}

#[test]
fn chat_quirks_of_real_servers() {
    let (_, r) = ok("chat_quirks.sse");
    let Block::Thinking(t) = &r.content[0] else {
        panic!("{:?}", r.content)
    };
    assert_eq!(t.text, "Let me think.");
    assert_eq!(
        calls(&r),
        [
            ("call_gen_0".into(), "glob".into(), json!({"pattern": "**/*.rs"})),
            ("call_2".into(), "ls".into(), json!({"path": "."})),
            ("call_3".into(), "stat".into(), json!({"path": "x"})),
            ("call_4".into(), "now".into(), json!({})),
            ("call_5".into(), "read".into(), json!({})),
        ]
    );
    // `finish_reason: stop` with calls is still a tool turn.
    assert_eq!(r.stop, Stop::ToolUse);
    let [bad] = r.bad_calls.as_slice() else {
        panic!("{:?}", r.bad_calls)
    };
    assert_eq!(
        (bad.id.as_str(), bad.raw.as_str()),
        ("call_5", "{\"path\": \"unterminated")
    );
    let message = bad.message();
    assert!(
        message.contains("not valid JSON") && message.contains("unterminated"),
        "{message}"
    );
}

#[test]
fn chat_error_chunks_with_numeric_codes() {
    let e = decode("chat_error.sse").unwrap_err();
    assert!(e.to_string().contains("Cannot use tools with stream"), "{e}");
}

#[test]
fn responses_reasoning_items_round_trip_and_calls_come_whole() {
    let (events, r) = ok("responses_reasoning_tool.sse");
    let Block::Thinking(t) = &r.content[0] else {
        panic!("{:?}", r.content)
    };
    assert_eq!(t.text, "**Plan** read the file");
    // The encrypted content of `output_item.done`, not of `added`.
    assert_eq!(t.redacted_data.as_deref(), Some("gAAAA-final"));
    assert_eq!(t.item_id.as_deref(), Some("rs_1"));
    assert_eq!(r.text(), "Reading it.");
    assert_eq!(calls(&r), [("call_X".into(), "read".into(), json!({"path": "a.txt"}))]);
    assert_eq!(r.stop, Stop::ToolUse);
    assert_eq!(
        r.usage,
        Usage {
            input: 68,
            output: 383,
            cache_read: 800,
            cache_write: 0,
            reasoning: 320
        }
    );
    assert!(events.contains(&StreamEvent::ThinkingDelta {
        text: " the file".into()
    }));
}

#[test]
fn responses_without_completed_or_failed_are_errors() {
    let e = decode("responses_cut.sse").unwrap_err();
    assert!(matches!(e, LlmError::Truncated(_)), "{e}");
    assert!(e.to_string().contains("response.completed"), "{e}");
    let e = decode("responses_failed.sse").unwrap_err();
    let LlmError::Provider { class, retry_after, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(*class, ErrorClass::Retryable);
    assert_eq!(*retry_after, Some(std::time::Duration::from_millis(1500)));
}

#[test]
fn gemini_calls_get_ids_and_keep_their_thought_signature() {
    let (_, r) = ok("gemini_tools.sse");
    let kinds: Vec<&str> = r
        .content
        .iter()
        .map(|b| match b {
            Block::Thinking(t) if t.signature.is_some() => "signature",
            Block::Thinking(_) => "thinking",
            Block::ToolUse { .. } => "call",
            Block::Text { .. } => "text",
            _ => "other",
        })
        .collect();
    // The signature sits right before the call it came with.
    assert_eq!(kinds, ["thinking", "signature", "call", "call"]);
    let Block::Thinking(sig) = &r.content[1] else {
        unreachable!()
    };
    assert_eq!(sig.signature.as_deref(), Some("CiQB0e2Kb7sig"));
    assert_eq!(
        calls(&r),
        [
            ("call_gen_0".into(), "read".into(), json!({"path": "a.txt"})),
            ("call_gen_1".into(), "read".into(), json!({"path": "b.txt"})),
        ]
    );
    assert_eq!(r.stop, Stop::ToolUse);
    assert_eq!(
        r.usage,
        Usage {
            input: 100,
            output: 30,
            cache_read: 20,
            cache_write: 0,
            reasoning: 12
        }
    );
}

#[test]
fn gemini_errors_carry_their_status() {
    let e = decode("gemini_error.sse").unwrap_err();
    let LlmError::Provider { status, class, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!((*status, *class), (Some(429), ErrorClass::Retryable));
}

#[test]
fn data_that_is_not_json_is_an_error_not_a_crash() {
    let e = decode_in("anthropic_x", b"data: <html>proxy error</html>\n\n", &[]).unwrap_err();
    assert!(
        matches!(e, LlmError::Malformed(_)) && e.to_string().contains("<html>"),
        "{e}"
    );
}

#[test]
fn chat_thought_signatures_of_gemini_s_compatible_endpoint_stay_with_their_call() {
    let (_, r) = ok("chat_gemini_signature.sse");
    let Block::Thinking(sig) = &r.content[0] else {
        panic!("{:?}", r.content)
    };
    assert_eq!(sig.signature.as_deref(), Some("SIG-abc"));
    assert!(matches!(&r.content[1], Block::ToolUse { id, .. } if id == "function-call-1"));
    // Sent back to the same model, the signature rides with its call.
    let request = wield_llm::Request {
        messages: vec![
            wield_llm::Message::text(wield_llm::Role::User, "read a"),
            wield_llm::Message {
                role: wield_llm::Role::Assistant,
                content: r.content.clone(),
            },
        ],
        ..wield_llm::Request::default()
    };
    let body = wield_llm::encode::chat_body("test", "m", &request);
    assert_eq!(
        body["messages"][1]["tool_calls"][0]["extra_content"],
        json!({ "google": { "thought_signature": "SIG-abc" } })
    );
    // Not to another model.
    let body = wield_llm::encode::chat_body("test", "other", &request);
    assert!(body["messages"][1]["tool_calls"][0].get("extra_content").is_none());
}

//! The Chat Completions provider against a real OpenAI-compatible server:
//! llama.cpp's `llama-server` with a 135M model, installed by
//! `scripts/test-deps.sh`. The model is for protocol, not meaning: these
//! tests assert structure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use wield_llm::{
    Block, Endpoint, Kind, Message, Provider, Request, ResultPart, Role, Stop, StreamEvent, ThinkingLevel, ToolChoice,
    ToolDef,
};

use crate::local_model_server::{LocalModel as Server, start};

fn provider(server: &Server) -> Provider {
    Provider::new(Endpoint {
        kind: Kind::OpenAiCompatible,
        model: "smollm2-135m".into(),
        base_url: server.url.clone(),
        api_key: None,
        headers: Vec::new(),
        max_retries: 0,
        timeout: Duration::from_secs(60),
        thinking: ThinkingLevel::Off,
        thinking_budget: None,
        reasoning_effort: None,
    })
    .unwrap()
}

fn read_file() -> ToolDef {
    ToolDef {
        name: "read_file".into(),
        description: "Read a file of the project".into(),
        input_schema: json!({
            "type": "object",
            "properties": { "path": { "type": "string", "description": "the file's path" } },
            "required": ["path"]
        }),
        strict: false,
    }
}

fn ask(text: &str) -> Request {
    Request {
        messages: vec![Message::text(Role::User, text)],
        max_tokens: Some(40),
        temperature: Some(0.0),
        ..Request::default()
    }
}

#[tokio::test]
async fn streamed_text() {
    let server = start();
    let mut deltas = 0;
    let r = provider(&server)
        .stream(&ask("Say hello."), &CancellationToken::new(), |e| {
            if matches!(e, StreamEvent::TextDelta { .. }) {
                deltas += 1;
            }
        })
        .await
        .unwrap();
    assert!(!r.text().trim().is_empty());
    assert!(deltas > 1, "the text came in one piece: {deltas}");
    assert!(matches!(r.stop, Stop::EndTurn | Stop::MaxTokens), "{:?}", r.stop);
    assert!(r.usage.output > 0 && r.usage.total_input() > 0, "{:?}", r.usage);
    assert!(r.tool_calls().next().is_none());
}

#[tokio::test]
async fn a_forced_tool_call_and_its_result_answered() {
    let server = start();
    let provider = provider(&server);
    let mut request = ask("Read the file src/main.rs");
    request.tools = vec![read_file()];
    request.tool_choice = ToolChoice::Required;
    request.max_tokens = Some(100);
    let mut started = Vec::new();
    let r = provider
        .stream(&request, &CancellationToken::new(), |e| {
            if let StreamEvent::ToolCallStarted { id, name } = e {
                started.push((id.clone(), name.clone()));
            }
        })
        .await
        .unwrap();
    assert_eq!(r.stop, Stop::ToolUse);
    let calls: Vec<_> = r
        .tool_calls()
        .map(|(i, n, v)| (i.to_owned(), n.to_owned(), v.clone()))
        .collect();
    let [(id, name, input)] = calls.as_slice() else {
        panic!("{calls:?}")
    };
    assert_eq!(name, "read_file");
    assert!(input["path"].is_string(), "{input}");
    assert_eq!(started, [(id.clone(), name.clone())]);
    assert!(r.bad_calls.is_empty(), "{:?}", r.bad_calls);

    // The result goes back under the server's own id, and gets a text answer.
    request.messages.push(Message {
        role: Role::Assistant,
        content: r.content.clone(),
    });
    request.messages.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            tool_use_id: id.clone(),
            content: vec![ResultPart::Text {
                text: "fn main() { println!(\"hi\"); }".into(),
            }],
            is_error: false,
        }],
    });
    request.tool_choice = ToolChoice::None;
    request.max_tokens = Some(40);
    let answer = provider
        .stream(&request, &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    assert!(!answer.text().trim().is_empty());
    assert!(answer.tool_calls().next().is_none());
    assert!(
        matches!(answer.stop, Stop::EndTurn | Stop::MaxTokens),
        "{:?}",
        answer.stop
    );
}

#[tokio::test]
async fn parallel_calls_come_apart() {
    let server = start();
    let mut request = ask("Read the files src/main.rs and Cargo.toml");
    request.tools = vec![
        read_file(),
        ToolDef {
            name: "list_dir".into(),
            description: "List a directory".into(),
            input_schema: json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] }),
            strict: false,
        },
    ];
    request.tool_choice = ToolChoice::Required;
    request.parallel_tool_calls = Some(true);
    request.max_tokens = Some(160);
    let r = provider(&server)
        .stream(&request, &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    let calls: Vec<_> = r
        .tool_calls()
        .map(|(i, n, v)| (i.to_owned(), n.to_owned(), v.clone()))
        .collect();
    assert!(calls.len() >= 2, "{calls:?}");
    let mut ids: Vec<&String> = calls.iter().map(|(i, _, _)| i).collect();
    ids.dedup();
    assert_eq!(ids.len(), calls.len(), "ids repeat: {calls:?}");
    for (_, name, input) in &calls {
        assert!(["read_file", "list_dir"].contains(&name.as_str()), "{name}");
        assert!(input["path"].is_string(), "{input}");
    }
}

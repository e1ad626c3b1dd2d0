//! `Agent::compact`, the on-demand compaction a `/compact` command calls,
//! against a small local server standing in for an OpenAI-compatible
//! provider.
// The local server is a helper outside #[test] fns.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_agent::{Agent, Limits};
use wield_core::{Config, ExecutorBuilder, Registry, Session};
use wield_llm::settings::Providers;
use wield_llm::{Block, Message, Provider, ResultPart, Role, ToolChoice};

use crate::http_request;

/// A provider answering every request with `summary`; the requests it got.
fn summarizer(summary: &'static str) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let body = serde_json::from_slice(&http_request::read_body(&s)).unwrap_or(Value::Null);
            requests.lock().unwrap().push(body);
            let text = format!(
                "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
                json!({ "choices": [{ "index": 0, "delta": { "content": summary }, "finish_reason": "stop" }] }),
                json!({ "choices": [], "usage": { "prompt_tokens": 300, "completion_tokens": 20 } })
            );
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                )
                .as_bytes(),
            );
        }
    });
    (url, seen)
}

fn agent(url: &str) -> Agent {
    let providers = Providers::from_config(
        Some(&json!({ "fake": { "kind": "openai-compatible", "base_url": url, "model": "m" } })),
        None,
        |_| None,
    )
    .unwrap();
    let provider = Provider::new(providers.pick(None).unwrap().endpoint(|_| None).unwrap()).unwrap();
    let executor = ExecutorBuilder::new(
        Arc::new(Registry::new()),
        Arc::new(Config::default()),
        std::env::temp_dir(),
    )
    .build();
    Agent::new(
        provider,
        executor,
        Arc::new(Session::new("s", true)),
        Vec::new(),
        Some("You are a test.".into()),
        ToolChoice::Auto,
        None,
        None,
        Limits::default(),
    )
}

fn call(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            Block::Text {
                text: "Reading.".into(),
            },
            Block::ToolUse {
                id: id.into(),
                name: "read".into(),
                input: json!({ "path": "a.txt" }),
            },
        ],
    }
}

fn result(id: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            tool_use_id: id.into(),
            content: vec![ResultPart::Text {
                text: "file contents ".repeat(200),
            }],
            is_error: false,
        }],
    }
}

#[tokio::test]
async fn compact_on_demand_summarizes_and_keeps_the_user_s_words() {
    let (url, requests) = summarizer("Goal: read a.txt. Remaining: nothing.");
    let mut agent = agent(&url);
    // Nothing to compact yet: no request is sent.
    assert_eq!(agent.compact(&CancellationToken::new()).await.unwrap(), None);
    agent.resume(vec![
        Message::text(Role::User, "Read a.txt"),
        call("c1"),
        result("c1"),
        Message::text(Role::User, "And again"),
        call("c2"),
        result("c2"),
    ]);
    let done = agent.compact(&CancellationToken::new()).await.unwrap().unwrap();
    assert!(done.after_tokens < done.before_tokens, "{done:?}");
    assert_eq!((done.usage.input, done.usage.output), (300, 20));
    let texts: Vec<String> = agent
        .messages()
        .iter()
        .map(|m| {
            assert_eq!(m.role, Role::User);
            match &m.content[..] {
                [Block::Text { text }] => text.clone(),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    assert_eq!(texts.len(), 3);
    assert_eq!(texts[..2], ["Read a.txt", "And again"]);
    assert!(
        texts[2].ends_with("Goal: read a.txt. Remaining: nothing."),
        "{}",
        texts[2]
    );
    // One request: the whole conversation, no tools, the instruction last.
    let requests = requests.lock().unwrap();
    let [request] = requests.as_slice() else {
        panic!("{requests:?}")
    };
    assert!(request.get("tools").is_none());
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "You are a test.");
    assert_eq!(messages.iter().filter(|m| m["role"] == "tool").count(), 2);
    let last = messages.last().unwrap().to_string();
    assert!(
        last.contains("hand-off summary") && last.contains("Todo list"),
        "{last}"
    );
}

//! The Chat Completions provider against a real OpenAI-compatible server:
//! llama.cpp's `llama-server` with a 135M model, installed by
//! `scripts/test-deps.sh`. The model is for protocol, not meaning: these
//! tests assert structure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use wield_llm::{
    Block, Endpoint, Kind, Message, Provider, Request, ResultPart, Role, Stop, StreamEvent, ThinkingLevel, ToolChoice,
    ToolDef,
};

/// A `llama-server` on a free port, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peer_dir() -> PathBuf {
    let deps = std::env::var_os("WIELD_TEST_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps"));
    let dir = deps.join("llm");
    assert!(
        dir.join("bin/llama-server").is_file() && dir.join("model.gguf").is_file(),
        "the local model server is not installed in {}: run scripts/test-deps.sh (or scripts/llm-peer.sh)",
        dir.display()
    );
    dir
}

fn start() -> Server {
    let dir = peer_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(dir.join("bin/llama-server"))
        .args(["-m"])
        .arg(dir.join("model.gguf"))
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--jinja",
            "--chat-template-file",
        ])
        .arg(dir.join("tools.jinja"))
        .args(["-a", "smollm2-135m", "-c", "4096", "-np", "1", "-t", "1", "--no-webui"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}/v1"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            let _ = write!(s, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") {
                return server;
            }
        }
        assert!(
            Instant::now() < deadline,
            "llama-server did not become healthy within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

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

//! The Chat Completions provider over real HTTP against a local server that
//! replays the documented wire format: retries (and when not to), error
//! bodies, a proxy's HTML page, cancellation mid-stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wield_llm::{Endpoint, Kind, LlmError, Message, Provider, Request, Role, Stop, StreamEvent, ThinkingLevel};

/// One scripted answer: the head (status line and headers) and the body's
/// pieces, each sent after its delay; `hold` keeps the connection open
/// afterwards.
#[derive(Clone)]
struct Answer {
    head: String,
    pieces: Vec<(Duration, String)>,
    hold: bool,
}

fn sse(pieces: &[&str]) -> Answer {
    Answer {
        head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n".into(),
        pieces: pieces.iter().map(|p| (Duration::ZERO, (*p).to_owned())).collect(),
        hold: false,
    }
}

fn status(code: u16, headers: &str, body: &str) -> Answer {
    Answer {
        head: format!(
            "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{headers}",
            body.len()
        ),
        pieces: vec![(Duration::ZERO, body.to_owned())],
        hold: false,
    }
}

/// A server answering each request with the next answer; returns its base
/// URL and the requests it received (head and body).
async fn serve(answers: Vec<Answer>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&bodies);
    tokio::spawn(async move {
        for answer in answers {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 8192];
            // Read the head, then the body by its length.
            loop {
                let n = socket.read(&mut buf).await.unwrap();
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request).into_owned();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len: usize = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if request.len() >= end + 4 + len {
                        seen.lock().unwrap().push(text);
                        break;
                    }
                }
            }
            let chunked = answer.head.contains("event-stream");
            let mut head = answer.head.clone();
            if chunked {
                head.push_str("transfer-encoding: chunked\r\n");
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await.unwrap();
            for (delay, piece) in &answer.pieces {
                tokio::time::sleep(*delay).await;
                let bytes = if chunked {
                    format!("{:x}\r\n{piece}\r\n", piece.len())
                } else {
                    piece.clone()
                };
                if socket.write_all(bytes.as_bytes()).await.is_err() {
                    break;
                }
            }
            if answer.hold {
                let mut sink = [0u8; 64];
                let _ = socket.read(&mut sink).await;
            } else if chunked {
                let _ = socket.write_all(b"0\r\n\r\n").await;
            }
        }
    });
    (url, bodies)
}

fn body_of(request: &str) -> serde_json::Value {
    serde_json::from_str(request.split_once("\r\n\r\n").unwrap().1).unwrap()
}

fn provider(url: &str, retries: u32) -> Provider {
    provider_of(Kind::OpenAiCompatible, url, retries)
}

fn provider_of(kind: Kind, url: &str, retries: u32) -> Provider {
    Provider::new(Endpoint {
        kind,
        model: "m-1".into(),
        base_url: url.into(),
        api_key: Some("sk-test-secret".into()),
        headers: Vec::new(),
        max_retries: retries,
        timeout: Duration::from_secs(10),
        thinking: ThinkingLevel::Off,
        thinking_budget: None,
        reasoning_effort: None,
    })
    .unwrap()
}

fn hello() -> Request {
    Request {
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    }
}

const TEXT: &[&str] = &[
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
];

#[tokio::test]
async fn a_429_is_tried_again_after_the_time_it_asks_for() {
    let (url, bodies) = serve(vec![
        status(
            429,
            "retry-after-ms: 300\r\n",
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}"#,
        ),
        sse(TEXT),
    ])
    .await;
    let started = Instant::now();
    let r = provider(&url, 2)
        .stream(&hello(), &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 2);
    let body = body_of(&bodies[0]);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(
        body["messages"][0],
        serde_json::json!({"role": "user", "content": "hi"})
    );
}

#[tokio::test]
async fn a_400_and_a_quota_error_are_not_tried_again() {
    let (url, bodies) = serve(vec![status(
        400,
        "",
        r#"{"error":{"message":"Invalid schema for function 'x'","type":"invalid_request_error"}}"#,
    )])
    .await;
    let e = provider(&url, 3)
        .stream(&hello(), &CancellationToken::new(), |_| {})
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("HTTP 400: Invalid schema for function 'x'"),
        "{e}"
    );
    assert_eq!(bodies.lock().unwrap().len(), 1);

    let (url, bodies) = serve(vec![status(
        429,
        "",
        r#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#,
    )])
    .await;
    let e = provider(&url, 3)
        .stream(&hello(), &CancellationToken::new(), |_| {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("retrying will not help"), "{e}");
    assert_eq!(bodies.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_error_after_the_first_delta_goes_up_marked_retryable() {
    let (url, bodies) = serve(vec![sse(&[
        TEXT[0],
        "data: {\"error\":{\"message\":\"server overloaded\",\"type\":\"server_error\"}}\n\n",
    ])])
    .await;
    let mut seen = Vec::new();
    let e = provider(&url, 3)
        .stream(&hello(), &CancellationToken::new(), |e| seen.push(e.clone()))
        .await
        .unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert_eq!(seen, [StreamEvent::TextDelta { text: "Hel".into() }]);
    // Not retried: the caller has seen part of the reply.
    assert_eq!(bodies.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_html_page_with_200_is_an_error_that_says_so() {
    let (url, _) = serve(vec![Answer {
        head: "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 31\r\nconnection: close\r\n".into(),
        pieces: vec![(Duration::ZERO, "<html>Sign in to proxy</html>\n\n".into())],
        hold: false,
    }])
    .await;
    let e = provider(&url, 0)
        .stream(&hello(), &CancellationToken::new(), |_| {})
        .await
        .unwrap_err();
    let said = e.to_string();
    assert!(
        said.contains("HTML page") && said.contains("Sign in to proxy"),
        "{said}"
    );
    assert!(!said.contains("sk-test-secret"), "the key leaked: {said}");
}

#[tokio::test]
async fn cancelling_closes_the_stream_at_once_and_keeps_what_came() {
    let (url, _) = serve(vec![Answer {
        head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n".into(),
        pieces: vec![(Duration::ZERO, TEXT[0].to_owned())],
        hold: true,
    }])
    .await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let mut cancelled_at = None;
    let r = provider(&url, 0)
        .stream(&hello(), &cancel, |e| {
            if matches!(e, StreamEvent::TextDelta { .. }) {
                trigger.cancel();
                cancelled_at = Some(Instant::now());
            }
        })
        .await
        .unwrap();
    assert!(cancelled_at.unwrap().elapsed() < Duration::from_millis(100));
    assert_eq!((r.text().as_str(), r.stop), ("Hel", Stop::Cancelled));
}

#[tokio::test]
async fn a_connection_refused_is_tried_again_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let e = provider(&url, 1)
        .stream(&hello(), &CancellationToken::new(), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(e, LlmError::Provider { .. }) && e.to_string().contains("cannot reach"),
        "{e}"
    );
}

/// The cloud providers are HTTPS only: an `https` base URL opens a TLS
/// handshake (the server sees a ClientHello), whatever else the workspace
/// compiles in.
#[tokio::test]
async fn an_https_provider_speaks_tls() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}/v1", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let first = std::thread::spawn(move || {
        use std::io::Read;
        // Nobody may come (no TLS: the request fails before connecting).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut s = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => return None,
            }
        };
        s.set_nonblocking(false).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        let mut byte = [0u8; 1];
        s.read_exact(&mut byte).map(|()| byte[0]).ok()
    });
    let e = tokio::time::timeout(
        Duration::from_secs(15),
        provider(&url, 0).stream(&hello(), &CancellationToken::new(), |_| {}),
    )
    .await
    .unwrap()
    .unwrap_err();
    // 0x16: a TLS handshake record.
    assert_eq!(first.join().unwrap(), Some(0x16), "{e}");
}

/// Each kind sends to its own path with its own key header, and decodes
/// its own stream (the documented wire formats, as in the decoder tests).
#[tokio::test]
async fn every_kind_speaks_its_own_wire_format() {
    let fixture =
        |name: &str| std::fs::read_to_string(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let cases = [
        (
            Kind::Anthropic,
            "anthropic_text.sse",
            "POST /v1/messages ",
            "x-api-key: sk-test-secret",
            "Hello, wörld ✓",
        ),
        (
            Kind::OpenAi,
            "chat_text.sse",
            "POST /v1/chat/completions ",
            "authorization: Bearer sk-test-secret",
            "Hi there",
        ),
        (
            Kind::OpenAiResponses,
            "responses_reasoning_tool.sse",
            "POST /v1/responses ",
            "authorization: Bearer sk-test-secret",
            "Reading it.",
        ),
        (
            Kind::Gemini,
            "gemini_tools.sse",
            "POST /v1/models/m-1:streamGenerateContent?alt=sse ",
            "x-goog-api-key: sk-test-secret",
            "",
        ),
    ];
    for (kind, fixture_name, line, auth, text) in cases {
        let body = fixture(fixture_name);
        // In small pieces, as a socket may deliver them.
        let pieces: Vec<&str> = body
            .as_bytes()
            .chunks(7)
            .map(|c| std::str::from_utf8(c).unwrap_or(""))
            .collect();
        let answer = if pieces.iter().all(|p| !p.is_empty()) {
            sse(&pieces)
        } else {
            sse(&[body.as_str()])
        };
        let (url, requests) = serve(vec![answer]).await;
        let r = provider_of(kind, &url, 0)
            .stream(&hello(), &CancellationToken::new(), |_| {})
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(r.text(), text, "{kind:?}");
        let request = requests.lock().unwrap()[0].clone();
        assert!(request.starts_with(line), "{kind:?}: {request}");
        assert!(
            request.to_ascii_lowercase().contains(&auth.to_ascii_lowercase()),
            "{kind:?}: {request}"
        );
        if kind == Kind::Anthropic {
            assert!(request.contains("anthropic-version: 2023-06-01"), "{request}");
        }
        let _ = body_of(&request);
    }
}

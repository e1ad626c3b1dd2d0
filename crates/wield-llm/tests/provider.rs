//! The Chat Completions provider over real HTTP against a local server that
//! replays the documented wire format: retries (and when not to), error
//! bodies, a proxy's HTML page, cancellation mid-stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wield_llm::{ChatCompletions, Endpoint, LlmError, Message, Request, Role, Stop, StreamEvent};

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
/// URL and the request bodies it received.
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
                        seen.lock().unwrap().push(text[end + 4..].to_owned());
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

fn provider(url: &str, retries: u32) -> ChatCompletions {
    ChatCompletions::new(Endpoint {
        kind: "openai-compatible".into(),
        model: "m".into(),
        base_url: url.into(),
        api_key: Some("sk-test-secret".into()),
        headers: Vec::new(),
        max_retries: retries,
        timeout: Duration::from_secs(10),
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
    let body: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
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

//! Where wield leans on how the rmcp SDK (and the serde text it passes on)
//! behaves rather than on what its API promises. Each item names the
//! behaviour it depends on or corrects, and a test here fails when that
//! behaviour changes, so an SDK upgrade that changes it is noticed at once
//! instead of as a client seeing something else.
//!
//! The SDK's client drops an SSE event past its 16 MiB limit with an error
//! whose type is private, known by its text ([`sse_event_too_large`]), and
//! its error for a reply that is not JSON-RPC names its message type
//! ([`without_type_names`]): both are pinned in [`client`] by driving the
//! SDK's HTTP client, and end to end by `wield-cli`'s `mcp` tests
//! (`client::raw_http`).
//!
//! How the SDK's HTTP server answers is corrected by the layers of
//! [`http`]; how its stdio transport ends, in [`stdio`]; how its client
//! reads a server's replies, in [`client`].

pub(crate) mod client;
pub(crate) mod http;
pub(crate) mod stdio;

use std::error::Error;

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::{SseError, StreamableHttpError};

/// The SDK's `LocalSessionManager` names the standalone stream of session
/// `S` (the one a `GET` opens) `S:common` in what it hands the event
/// store; the name is not part of its API.
const STANDALONE_SUFFIX: &str = ":common";

/// The session whose standalone stream `stream_id` is, if it is one.
pub(crate) fn standalone_session(stream_id: &str) -> Option<&str> {
    stream_id.strip_suffix(STANDALONE_SUFFIX)
}

/// The event store's name for the standalone stream of `session`.
pub(crate) fn standalone_stream(session: &str) -> String {
    format!("{session}{STANDALONE_SUFFIX}")
}

/// Whether `error`, from the SDK's client reading an event stream, says an
/// event was larger than it reads: its limiter's error type is private,
/// and only its text (`SSE event exceeded the maximum size of N bytes`)
/// tells it from a broken stream.
pub(crate) fn sse_event_too_large(error: &SseError) -> bool {
    error.to_string().contains("exceeded the maximum size")
}

/// `text` without the SDK's type names, which say nothing to a user: its
/// transport errors read `Transport [rust::type::Name] error: ...`, and its
/// error for a JSON body that is not a message names the message type.
pub(crate) fn without_type_names(text: String) -> String {
    let text = text.replace(
        "could not parse JSON response as ServerJsonRpcMessage",
        "the reply is not valid JSON-RPC",
    );
    let Some(start) = text.find("Transport [") else {
        return text;
    };
    match text[start..].find("] error: ") {
        Some(end) => format!("{}{}", &text[..start], &text[start + end + "] error: ".len()..]),
        None => text,
    }
}

/// Whether the SDK's HTTP client refused a reply for its content type (a
/// web page, not an MCP endpoint, answered), anywhere in `error`'s causes.
pub(crate) fn unexpected_content_type(error: &(dyn Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if matches!(
            e.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
            Some(StreamableHttpError::UnexpectedContentType(_))
        ) {
            return true;
        }
        current = e.source();
    }
    false
}

/// Whether the SDK's HTTP client stopped at a redirect it does not follow
/// (only same-origin 307 and 308 are): it says so only in the text of its
/// `UnexpectedServerResponse` error, `HTTP 302 Found: ...`.
pub(crate) fn refused_redirect(error: &(dyn Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(StreamableHttpError::UnexpectedServerResponse(text)) =
            e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return text.starts_with("HTTP 30");
        }
        current = e.source();
    }
    false
}

/// Whether the SDK's handshake failed because the server closed its end
/// (it exited, or closed its output): the SDK's `ConnectionClosed`, or a
/// write that found the pipe broken.
pub(crate) fn closed_in_handshake(error: &ClientInitializeError) -> bool {
    match error {
        ClientInitializeError::ConnectionClosed(_) => true,
        ClientInitializeError::TransportError { error, .. } => {
            let mut current: Option<&(dyn Error + 'static)> = Some(error.error.as_ref());
            while let Some(e) = current {
                if e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
                {
                    return true;
                }
                current = e.source();
            }
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::{Arc, Mutex};

    use rmcp::ServiceExt;
    use rmcp::model::ClientJsonRpcMessage;
    use rmcp::transport::streamable_http_server::SessionManager;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::session::{
        EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
    };

    use super::*;

    /// Records the streams the SDK stores events of.
    #[derive(Default)]
    struct Streams(Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl EventStore for Streams {
        async fn store_event(&self, stream_id: &str, _event: &ServerSseMessage) -> Result<EventId, EventStoreError> {
            let mut streams = self.0.lock().unwrap();
            streams.push(stream_id.to_owned());
            Ok(streams.len().to_string())
        }

        async fn replay_events_after(&self, _last_event_id: &str) -> Result<EventStream, EventStoreError> {
            Err("not kept".into())
        }
    }

    /// A server that serves nothing.
    struct Quiet;

    impl rmcp::ServerHandler for Quiet {}

    fn message(json: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(json).unwrap()
    }

    #[tokio::test]
    async fn the_sdk_names_a_sessions_standalone_stream_as_wield_reads_it() {
        let streams = Arc::new(Streams::default());
        let manager = LocalSessionManager::default().with_event_store(Arc::clone(&streams) as _);
        let seen = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            let (session, transport) = manager.create_session().await.unwrap();
            let server = tokio::spawn(async move { Quiet.serve(transport).await });
            let init = message(
                serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            );
            manager.initialize_session(&session, init).await.unwrap();
            let initialized = message(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            manager.accept_message(&session, initialized).await.unwrap();
            let running = server.await.unwrap().unwrap();
            let _standalone = manager.create_standalone_stream(&session).await.unwrap();
            let before = streams.0.lock().unwrap().len();
            running.peer().notify_tool_list_changed().await.unwrap();
            loop {
                if let Some(s) = streams.0.lock().unwrap().get(before).cloned() {
                    return (session, s);
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();
        let (session, stream) = seen;
        assert_eq!(stream, standalone_stream(&session));
        assert_eq!(standalone_session(&stream), Some(&*session));
    }

    /// A server that closes its output at once: the SDK's handshake says
    /// the connection closed.
    #[tokio::test]
    async fn a_server_gone_before_the_handshake_is_a_closed_connection() {
        let error = ().serve((tokio::io::empty(), tokio::io::sink())).await.err().unwrap();
        assert!(closed_in_handshake(&error), "{error:?}");
    }

    /// A redirect the SDK does not follow: its error names the status.
    #[tokio::test]
    async fn a_redirect_the_sdk_does_not_follow_is_told() {
        use rmcp::service::ClientInitializeError;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(|| async { axum::response::Redirect::to("/mcp/") });
        tokio::spawn(async move { axum::serve(listener, app).await });
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
        let error = ().serve(transport).await.err().unwrap();
        let ClientInitializeError::TransportError { error, .. } = error else {
            panic!("{error:?}");
        };
        assert!(refused_redirect(error.error.as_ref()), "{error:?}");
        assert!(!unexpected_content_type(error.error.as_ref()));
    }

    /// The SDK answers a request for a method its handler does not serve
    /// with the bare method name as the whole message, which tells a
    /// client nothing; wield's server answers such requests itself, before
    /// the SDK sees them (`server::incoming`'s `method_not_found` and
    /// `lifecycle`), naming the methods it serves.
    #[tokio::test]
    async fn the_sdk_answers_an_unserved_method_with_its_bare_name() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let (client, server) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = Quiet.serve(tokio::io::split(server)).await {
                let _ = running.waiting().await;
            }
        });
        let (read, mut write) = tokio::io::split(client);
        let mut lines = tokio::io::BufReader::new(read).lines();
        for line in [
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"vendor/thing"}"#,
        ] {
            write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        }
        let mut errors = Vec::new();
        while errors.len() < 2 {
            let line = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
            if let Some(error) = reply.get("error") {
                errors.push((reply["id"].clone(), error["code"].clone(), error["message"].clone()));
            }
        }
        errors.sort_by_key(|e| e.0.as_i64());
        assert_eq!(
            errors,
            [
                (1.into(), (-32601).into(), "resources/list".into()),
                (2.into(), (-32601).into(), "vendor/thing".into()),
            ]
        );
    }

    #[test]
    fn sdk_type_names_are_taken_out() {
        assert_eq!(
            without_type_names("Transport [rmcp::transport::Worker<X>] error: connection closed".to_owned()),
            "connection closed"
        );
        assert_eq!(
            without_type_names("could not parse JSON response as ServerJsonRpcMessage: EOF".to_owned()),
            "the reply is not valid JSON-RPC: EOF"
        );
    }

    /// A web page where the MCP endpoint should be: the SDK's client says
    /// so with its `UnexpectedContentType` error, found among the causes of
    /// what its handshake returns.
    #[tokio::test]
    async fn a_web_page_is_an_unexpected_content_type() {
        use rmcp::ServiceExt;
        use rmcp::service::ClientInitializeError;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(|| async { axum::response::Html("<html>home</html>") });
        tokio::spawn(async move { axum::serve(listener, app).await });
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!("http://{addr}/"));
        let error = ().serve(transport).await.err().unwrap();
        let ClientInitializeError::TransportError { error, .. } = error else {
            panic!("{error:?}");
        };
        assert!(unexpected_content_type(error.error.as_ref()), "{error:?}");
        let io = std::io::Error::other("no");
        assert!(!unexpected_content_type(&io));
    }
}

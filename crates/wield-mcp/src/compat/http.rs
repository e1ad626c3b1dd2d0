//! Corrections of how the SDK's streamable HTTP server answers, as axum
//! layers around it. The tests here run the SDK's own service and fail
//! when it stops behaving as corrected.

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::wire::error_body;

/// A client that accepts anything (`Accept: */*`, as generic HTTP clients
/// send), or both kinds by wildcards (`application/*, text/*`), accepts
/// what MCP answers with: the SDK wants both named, and would refuse it
/// with 406.
pub(crate) async fn accept_wildcards(mut request: Request, next: Next) -> Response {
    let (mut json, mut events) = (false, false);
    for kind in request
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = kind.split(';');
        let kind = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        // `q=0` says "not this".
        let refused = parts.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        if refused {
            continue;
        }
        json |= matches!(kind.as_str(), "*/*" | "application/*" | "application/json");
        events |= matches!(kind.as_str(), "*/*" | "text/*" | "text/event-stream");
    }
    if json && events {
        request.headers_mut().insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
    }
    next.run(request).await
}

/// The SDK answers a session `DELETE` with 202 Accepted; clients (the
/// Python SDK among them) expect 200 or 204 and log a warning on anything
/// else, so a completed termination is reported as 200.
pub(crate) async fn session_delete_ok(request: Request, next: Next) -> Response {
    let is_delete = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if is_delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

/// A request naming a protocol revision this server does not speak in its
/// `MCP-Protocol-Version` header gets 400 saying which it speaks (the SDK
/// would take a later revision's for its stateless mode, and answer with
/// an error about missing request metadata, or refuse an earlier one
/// without saying which it speaks).
pub(crate) async fn protocol_version_header(request: Request, next: Next) -> Response {
    let spoken = rmcp::model::ProtocolVersion::known_up_to(&rmcp::model::ProtocolVersion::V_2025_11_25);
    if let Some(asked) = request.headers().get("mcp-protocol-version")
        && let Ok(asked) = asked.to_str()
        && !spoken.iter().any(|v| v.as_str() == asked.trim())
    {
        let names: Vec<&str> = spoken.iter().map(rmcp::model::ProtocolVersion::as_str).collect();
        return (
            StatusCode::BAD_REQUEST,
            format!(
                "Bad Request: unsupported MCP-Protocol-Version: {}; this server speaks {}\n",
                asked.trim(),
                names.join(", ")
            ),
        )
            .into_response();
    }
    next.run(request).await
}

/// An error the SDK or a layer answers in plain text (or with no type at
/// all) is sent as a JSON-RPC error, as MCP clients read the body of an
/// HTTP error: the text is its message, with `-32001` for a session that
/// is not found and `-32600` or `-32603` for the rest. Its headers
/// (`WWW-Authenticate`, `Retry-After`, `Allow`) stay.
pub(crate) async fn json_error_bodies(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, ERROR_TEXT).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("HTTP error").to_owned()
    } else {
        text.to_owned()
    };
    let code = if status == StatusCode::NOT_FOUND {
        -32001
    } else if status.is_client_error() {
        -32600
    } else {
        -32603
    };
    let body = error_body(None, &rmcp::ErrorData::new(rmcp::model::ErrorCode(code), message, None));
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// The most of a plain-text error read to send it as JSON-RPC.
const ERROR_TEXT: usize = 64 * 1024;

/// Whether the body of the SDK's `500` answer to a session it could not
/// open carries `refusal`, the text of the session factory's error: the
/// SDK passes the factory's error on only as that text.
pub(crate) fn refused_by_factory(body: &[u8], refusal: &str) -> bool {
    String::from_utf8_lossy(body).contains(refusal)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use axum::Router;
    use axum::body::Body;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    use tower::ServiceExt;

    use super::*;

    struct Quiet;

    impl rmcp::ServerHandler for Quiet {}

    const REFUSAL: &str = "no room for another session";

    /// The SDK's service alone, with sessions refused when `full`.
    fn sdk(full: bool) -> Router {
        let factory = move || {
            if full {
                Err(std::io::Error::other(REFUSAL))
            } else {
                Ok(Quiet)
            }
        };
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins();
        let service = StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
        Router::new().route_service("/mcp", service)
    }

    fn initialize(accept: &str) -> Request {
        Request::post("/mcp")
            .header(header::HOST, "localhost")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, accept)
            .body(Body::from(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            ))
            .unwrap()
    }

    const BOTH: &str = "application/json, text/event-stream";

    #[tokio::test]
    async fn the_sdk_answers_a_session_delete_with_202() {
        let app = sdk(false);
        let opened = app.clone().oneshot(initialize(BOTH)).await.unwrap();
        assert_eq!(opened.status(), StatusCode::OK);
        let session = opened.headers().get("mcp-session-id").unwrap().clone();
        let delete = || {
            Request::delete("/mcp")
                .header(header::HOST, "localhost")
                .header("mcp-session-id", session.clone())
                .body(Body::empty())
                .unwrap()
        };
        let deleted = app.clone().oneshot(delete()).await.unwrap();
        assert_eq!(
            deleted.status(),
            StatusCode::ACCEPTED,
            "the SDK's answer changed: drop session_delete_ok"
        );
        // Corrected.
        let app = sdk(false).layer(axum::middleware::from_fn(session_delete_ok));
        let opened = app.clone().oneshot(initialize(BOTH)).await.unwrap();
        let session = opened.headers().get("mcp-session-id").unwrap().clone();
        let deleted = app
            .oneshot(
                Request::delete("/mcp")
                    .header(header::HOST, "localhost")
                    .header("mcp-session-id", session)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(deleted.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn the_sdk_refuses_a_client_that_accepts_anything() {
        let refused = sdk(false).oneshot(initialize("*/*")).await.unwrap();
        assert_eq!(
            refused.status(),
            StatusCode::NOT_ACCEPTABLE,
            "the SDK's answer changed: drop accept_wildcards"
        );
        let app = sdk(false).layer(axum::middleware::from_fn(accept_wildcards));
        for accept in ["*/*", "application/*, text/*"] {
            assert_eq!(
                app.clone().oneshot(initialize(accept)).await.unwrap().status(),
                StatusCode::OK,
                "{accept}"
            );
        }
    }

    #[tokio::test]
    async fn the_sdk_does_not_say_which_revisions_it_speaks() {
        let later = || {
            let mut request = initialize(BOTH);
            request
                .headers_mut()
                .insert("mcp-protocol-version", HeaderValue::from_static("2099-01-01"));
            request
        };
        let answered = sdk(false).oneshot(later()).await.unwrap();
        let body = axum::body::to_bytes(answered.into_body(), 64 * 1024).await.unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(
            !body.contains("2025-11-25"),
            "the SDK's answer changed (drop protocol_version_header if it says which it speaks): {body}"
        );
        let app = sdk(false).layer(axum::middleware::from_fn(protocol_version_header));
        let refused = app.oneshot(later()).await.unwrap();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        let body = axum::body::to_bytes(refused.into_body(), 64 * 1024).await.unwrap();
        assert!(
            String::from_utf8_lossy(&body)
                .contains("this server speaks 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25"),
            "{}",
            String::from_utf8_lossy(&body)
        );
    }

    #[tokio::test]
    async fn the_sdk_answers_an_unknown_session_in_plain_text() {
        let unknown = || {
            Request::post("/mcp")
                .header(header::HOST, "localhost")
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, BOTH)
                .header("mcp-session-id", "no-such-session")
                .body(Body::from(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
                .unwrap()
        };
        let answered = sdk(false).oneshot(unknown()).await.unwrap();
        assert_eq!(answered.status(), StatusCode::NOT_FOUND);
        let json = |r: &Response| {
            r.headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
        };
        assert!(!json(&answered), "the SDK's answer changed: it is JSON now");
        let app = sdk(false).layer(axum::middleware::from_fn(json_error_bodies));
        let answered = app.oneshot(unknown()).await.unwrap();
        assert_eq!(answered.status(), StatusCode::NOT_FOUND);
        assert!(json(&answered));
        let body = axum::body::to_bytes(answered.into_body(), 64 * 1024).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (body["id"].is_null(), body["error"]["code"].as_i64()),
            (true, Some(-32001)),
            "{body}"
        );
    }

    #[tokio::test]
    async fn the_sdk_passes_a_factory_refusal_on_as_the_text_of_a_500() {
        let refused = sdk(true).oneshot(initialize(BOTH)).await.unwrap();
        assert_eq!(refused.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(refused.into_body(), 64 * 1024).await.unwrap();
        assert!(refused_by_factory(&body, REFUSAL), "{}", String::from_utf8_lossy(&body));
        assert!(!refused_by_factory(b"Internal Server Error", REFUSAL));
    }
}

//! The HTTP client of a `url` server's connection: the SDK's own (reqwest,
//! following only same-origin 307 and 308 redirects, no idle pooling),
//! which also notes where it posts, so that wield can send a request of its
//! own in the same session and read the answer as plain JSON.
//!
//! That is how a `url` server's tools are listed: the SDK's types leave out
//! what wield needs to know of a tool (that it must be called as a task),
//! and over HTTP no raw text of the answer reaches wield otherwise. If the
//! request of wield's own fails in any way, the SDK lists the page instead.
//!
//! Messages on an event stream are read as over stdio
//! ([`crate::compat::client::readable_events`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderName, HeaderValue};
use futures::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId};
use rmcp::transport::streamable_http_client::SseError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde_json::Value;
use sse_stream::Sse;

use crate::compat::client::readable_events;

/// Where the SDK posts: the endpoint, the session and the headers it sends.
#[derive(Clone, Debug)]
struct Posting {
    uri: Arc<str>,
    session: Arc<str>,
    auth: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
}

/// The SDK's HTTP client, noting where it posts within a session.
#[derive(Clone)]
pub struct NotingClient {
    inner: reqwest::Client,
    seen: Arc<Mutex<Option<Posting>>>,
}

impl NotingClient {
    pub fn new() -> Result<Self, String> {
        let inner = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Self {
            inner,
            seen: Arc::default(),
        })
    }

    fn note(
        &self,
        uri: &Arc<str>,
        session: Option<&Arc<str>>,
        auth: Option<&String>,
        headers: &HashMap<HeaderName, HeaderValue>,
    ) {
        if let Some(session) = session {
            *self.seen.lock().unwrap_or_else(PoisonError::into_inner) = Some(Posting {
                uri: Arc::clone(uri),
                session: Arc::clone(session),
                auth: auth.cloned(),
                headers: headers.clone(),
            });
        }
    }

    /// Send `method` with `params` in the SDK's session, as protocol
    /// `version`, and read the result as plain JSON; `None` when there is no
    /// session yet or anything goes wrong (the caller asks through the SDK).
    pub async fn request(&self, method: &str, params: Value, version: &str, max: usize) -> Option<Value> {
        let posting = self.seen.lock().unwrap_or_else(PoisonError::into_inner).clone()?;
        let id = format!("wield-{method}");
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        // The SDK's headers (the configured ones, its protocol version),
        // each once, then wield's own in place of any of the same name.
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &posting.headers {
            if let (Ok(name), Ok(value)) = (
                reqwest::header::HeaderName::from_bytes(name.as_str().as_bytes()),
                reqwest::header::HeaderValue::from_bytes(value.as_bytes()),
            ) {
                headers.insert(name, value);
            }
        }
        for (name, value) in [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-session-id", posting.session.as_ref()),
            ("mcp-protocol-version", version),
        ] {
            headers.insert(name, reqwest::header::HeaderValue::from_str(value).ok()?);
        }
        let mut request = self
            .inner
            .post(posting.uri.as_ref())
            .headers(headers)
            .body(body.to_string());
        if let Some(auth) = &posting.auth {
            request = request.bearer_auth(auth);
        }
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let events = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if response.content_length().is_some_and(|n| n > max as u64) {
            return None;
        }
        let text = response.text().await.ok()?;
        if text.len() > max {
            return None;
        }
        let messages: Vec<Value> = if events {
            sse_data(&text).filter_map(|d| serde_json::from_str(&d).ok()).collect()
        } else {
            vec![serde_json::from_str(&text).ok()?]
        };
        messages
            .into_iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(id.as_str()))
            .and_then(|mut m| m.get_mut("result").map(Value::take))
    }
}

/// The `data` of each event of an event stream.
fn sse_data(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split("\n\n")
        .flat_map(|event| event.split("\r\n\r\n"))
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
}

/// The id of `message` when it is a request.
fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    }
}

/// `posted`, the answer to request `id` (if it is one), with its event
/// stream, if it is one, read as wield reads.
fn readable_post(posted: Posted, id: Option<RequestId>) -> Posted {
    match posted {
        Ok(StreamableHttpPostResponse::Sse(events, session)) => {
            Ok(StreamableHttpPostResponse::Sse(readable_events(events, id), session))
        }
        other => other,
    }
}

/// Same-origin 307 and 308 redirects only, as the SDK's own client: they
/// keep the message, and another host is never handed the session or the
/// headers.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_message = matches!(attempt.status().as_u16(), 307 | 308);
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_message || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}

type Posted = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;
type Streamed = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest::Error>>;

/// Each method hands the call to reqwest's client, its event streams made
/// readable; the transport posts with
/// `post_message_with_response_limits` and streams with
/// `get_stream_with_max_sse_event_size`, which keep reqwest's limits, and
/// the plain `post_message` and `get_stream` call those with the defaults,
/// as reqwest's do.
impl StreamableHttpClient for NotingClient {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Posted> + Send + '_ {
        // As reqwest's client does: the default limits.
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Posted> + Send + '_ {
        self.note(&uri, session_id.as_ref(), auth_header.as_ref(), &custom_headers);
        let id = request_id(&message);
        let posted =
            self.inner
                .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits);
        async move { readable_post(posted.await, id) }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<reqwest::Error>>> + Send + '_ {
        self.inner.delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Streamed> + Send + '_ {
        // As reqwest's client does: the default limit.
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Streamed> + Send + '_ {
        let streamed = self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        async move { streamed.await.map(|events| readable_events(events, None)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_data_is_read() {
        let text =
            "id: 0\nretry: 3000\ndata: \n\nevent: message\ndata: {\"a\":1}\n\n: ping\n\ndata: x\ndata: y\r\n\r\n";
        let data: Vec<String> = sse_data(text).collect();
        assert_eq!(data, ["", "{\"a\":1}", "x\ny"]);
    }
}

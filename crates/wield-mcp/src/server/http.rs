//! Streamable HTTP at `/mcp`.
//!
//! - Every request must carry `Authorization: Bearer TOKEN`, on loopback
//!   too (another local user could reach it), and unauthenticated
//!   connections are few and short-lived (see [`super::http_auth`]).
//! - DNS rebinding: `Host` and `Origin` must name this server or an allowed
//!   name, else 403 (see [`super::http_host`]).
//! - Memory per session is bounded: request bodies are capped, each session
//!   holds a few small channels and the last events of its streams (for
//!   clients that resume one, see [`super::http_events`]), a session with nothing being answered
//!   closes after [`HttpOptions::session_idle`] ([`SESSION_IDLE`] by
//!   default; a long call keeps it open), and at most
//!   [`HttpOptions::max_sessions`] sessions are open at once (a new one
//!   beyond that is refused with 503 Service Unavailable until one closes).
//!   See [`super::http_sessions`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;

use super::http_serve::BODY_DEADLINE;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{SessionManager, StreamableHttpServerConfig, StreamableHttpService};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::budget::OverBudget;
use super::http_auth::{Token, require_token};
use super::http_events::Events;
use super::http_host::{HostGuard, allowed_host, host_guard};
use super::http_sessions::{Activities, FULL, Refused, session_capacity, spawn_reaper, track_activity};
use super::incoming::{Incoming, Lifecycle, lifecycle, opens_session};
use crate::McpError;
use crate::wire::{ReplyId, error_body, repair_lone_surrogates, reply_id, strip_bom};

/// An idle session (no request for this long) is closed, unless
/// [`HttpOptions::session_idle`] says otherwise.
pub const SESSION_IDLE: Duration = Duration::from_secs(300);
/// Largest request body accepted.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

#[derive(Clone, Debug)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Bearer token every request must carry.
    pub token: Token,
    /// Sessions open at once.
    pub max_sessions: usize,
    /// Host names or addresses accepted besides the bound address and
    /// loopback names (`mcp.example.internal`), for clients that reach the
    /// server by name: bare, as [`allowed_host`] accepts them.
    pub allowed_hosts: Vec<String>,
    /// A session with nothing being answered for this long is closed (its
    /// slot, state and background processes go with it).
    pub session_idle: Duration,
}

impl HttpOptions {
    pub fn new(addr: SocketAddr, token: Token) -> Self {
        Self {
            addr,
            token,
            max_sessions: 256,
            allowed_hosts: Vec::new(),
            session_idle: SESSION_IDLE,
        }
    }
}

/// Whether serving on `addr` stays on this machine.
pub fn is_loopback_bind(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// A running HTTP server.
pub struct HttpServer {
    local_addr: SocketAddr,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// The address actually bound (the port is chosen by the system for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A token that stops the server when cancelled.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Run until the shutdown token is cancelled (and every connection
    /// has finished its responses).
    pub async fn wait(self) -> Result<(), McpError> {
        self.task.await.map_err(|e| McpError::Transport(e.into()))
    }
}

/// Decrements the open-session count when a session's handler goes away.
pub(crate) struct SessionSlot(Arc<AtomicUsize>);

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

pub(crate) async fn bind(server: McpServer, options: HttpOptions) -> Result<HttpServer, McpError> {
    let token = Arc::new(options.token);
    let allowed = options
        .allowed_hosts
        .iter()
        .map(|h| allowed_host(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| McpError::Config(format!("--allow-host: {e}")))?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| McpError::io(format!("cannot listen on {}", options.addr), e))?;
    let local_addr = listener.local_addr().map_err(|e| McpError::Transport(e.into()))?;

    let shutdown = CancellationToken::new();
    // Host and Origin are checked by `host_guard`, before the token and the
    // session limit, and idle sessions are closed by the activity tracker,
    // which unlike the SDK's keep-alive sees a long call as busy.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(MAX_BODY)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = None;
    // Streams are resumed from wield's own store of their events, which
    // unlike the SDK's cache keeps a call's result for a client that lost
    // its connection before it came.
    let events = Events::new();
    let mut manager = LocalSessionManager::default().with_event_store(Arc::clone(&events) as _);
    manager.session_config = session_config;
    let manager = Arc::new(manager);

    let open = Arc::new(AtomicUsize::new(0));
    let activities = Activities::new();
    let ended = Arc::clone(&activities);
    let max = options.max_sessions.max(1);
    let factory = move || {
        if open.fetch_add(1, Ordering::AcqRel) >= max {
            open.fetch_sub(1, Ordering::AcqRel);
            return Err(std::io::Error::other(format!(
                "{FULL} (the limit is {max}); close one and retry"
            )));
        }
        Ok(server
            .session()
            .with_slot(SessionSlot(Arc::clone(&open)))
            .with_activities(Arc::clone(&ended))
            .with_own_front_end())
    };
    let service = StreamableHttpService::new(factory, Arc::clone(&manager), config);
    let manager_for_streams = Arc::clone(&manager);
    spawn_reaper(
        Arc::clone(&activities),
        manager,
        Arc::clone(&events),
        options.session_idle.max(Duration::from_millis(100)),
        shutdown.clone(),
    );

    // Layers run outside in: token, Host/Origin, session limit, activity.
    let guard = Arc::new(HostGuard::new(&local_addr, &allowed));
    let router = Router::new()
        .route_service("/mcp", service)
        .layer(middleware::from_fn_with_state(Arc::clone(&activities), json_rpc_errors))
        .layer(middleware::from_fn(crate::compat::http::session_delete_ok))
        .layer(middleware::from_fn(crate::compat::http::accept_wildcards))
        .layer(middleware::from_fn_with_state((events, manager_for_streams), streams))
        .layer(middleware::from_fn(crate::compat::http::protocol_version_header))
        .layer(middleware::from_fn_with_state(activities, track_activity))
        .layer(middleware::from_fn_with_state(max, session_capacity))
        .layer(middleware::from_fn_with_state(guard, host_guard))
        .layer(middleware::from_fn_with_state(token, require_token))
        .layer(middleware::from_fn(crate::compat::http::json_error_bodies));
    let task = tokio::spawn(super::http_serve::serve(listener, router, shutdown.clone()));
    Ok(HttpServer {
        local_addr,
        shutdown,
        task,
    })
}

/// A POSTed message the SDK would refuse with a bare "415 cannot
/// deserialize", or take for an unknown method, is answered here the way
/// JSON-RPC says: 400 with a `Parse error` (-32700) for text that is not
/// JSON (or JSON that cannot be taken: a number out of range, nesting
/// too deep), `Invalid Request` (-32600) for a batch or for JSON that is no
/// message, and `Invalid params` (-32602) for a standard method whose
/// params do not fit it, `Method not found` (-32601) for a method wield does
/// not serve, and `Invalid Request` for a request outside the session
/// lifecycle, each to the request's id when it can be read.
async fn json_rpc_errors(State(activities): State<Arc<Activities>>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    // A body announced past the limit is refused before it is sent.
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY as u64) {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, MAX_BODY)).await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => return too_large(),
        Err(_) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "Request Timeout: the body did not arrive within {}s\n",
                    BODY_DEADLINE.as_secs()
                ),
            )
                .into_response();
        }
    };
    let refuse = |id: Option<ReplyId>, error: rmcp::ErrorData| {
        (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            error_body(id.as_ref(), &error),
        )
            .into_response()
    };
    // A request of an open session that asks for a method wield does not
    // serve, or gives params that do not fit, is answered as JSON-RPC
    // answers (`200`): clients take that for the method's error, and a
    // `400` for a broken transport.
    let in_open_session = parts
        .headers
        .get(super::http_sessions::SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|session| activities.is_open(session));
    let answer_or_refuse = |id: Option<ReplyId>, error: rmcp::ErrorData| {
        let answerable = error.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND
            || error.code == rmcp::model::ErrorCode::INVALID_PARAMS;
        if answerable && in_open_session && id.as_ref().is_some_and(|id| !id.is_null()) {
            return (
                [(header::CONTENT_TYPE, "application/json")],
                error_body(id.as_ref(), &error),
            )
                .into_response();
        }
        refuse(id, error)
    };
    // A byte order mark is passed over and a string cut inside a surrogate
    // pair is taken with U+FFFD, as on stdio.
    let bytes = bytes.slice(bytes.len() - strip_bom(&bytes).len()..);
    let mut bytes = match repair_lone_surrogates(&bytes) {
        Some(repaired) => axum::body::Bytes::from(repaired),
        None => bytes,
    };
    // The JSON's syntax alone, checked only where the parse below cannot
    // tell (nothing is built).
    let syntax = || serde_json::from_slice::<serde::de::IgnoredAny>(&bytes);
    match super::incoming::parse(&bytes) {
        Incoming::Refuse(id, error) => {
            let batch = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
            if batch && syntax().is_ok() {
                return refuse(
                    None,
                    rmcp::ErrorData::invalid_request(
                        "Invalid request: batches are not supported; send one message per POST",
                        None,
                    ),
                );
            }
            return answer_or_refuse(id, error);
        }
        // An empty body, or a notification outside the protocol (the SDK
        // ignores it).
        Incoming::Skip => {
            if let Err(e) = syntax() {
                return refuse(
                    None,
                    rmcp::ErrorData::new(rmcp::model::ErrorCode::PARSE_ERROR, format!("Parse error: {e}"), None),
                );
            }
        }
        // A session is initialized; a request without one may only open one
        // (`initialize`), and none is served outside the session lifecycle.
        Incoming::Message(message) => {
            let session = parts
                .headers
                .get(super::http_sessions::SESSION_HEADER)
                .map(|v| v.to_str().unwrap_or_default());
            let in_session = session.is_some();
            // `initialize` with the id of a session that is not open: that
            // session is gone, not initialized.
            if let Some(id) = session
                && opens_session(&message)
                && !activities.is_open(id)
            {
                return not_found();
            }
            if let Lifecycle::Refuse(id, error) = lifecycle(&message, in_session) {
                return answer_or_refuse(Some(reply_id(id)), error);
            }
            if let (Some(id), rmcp::model::JsonRpcMessage::Request(r)) = (session, &*message) {
                match activities.claim(id, &r.id, bytes.len()) {
                    Err(Refused::Full(over)) => {
                        return too_many(r.id.clone(), over);
                    }
                    Err(Refused::Reused) => {
                        return refuse(
                            Some(reply_id(r.id.clone())),
                            rmcp::ErrorData::invalid_request(
                                format!(
                                    "request id {} is already in use by a request of this session that has not \
                                     been answered yet; give each request in flight an id of its own",
                                    r.id
                                ),
                                None,
                            ),
                        );
                    }
                    Ok(Some(claimed)) => {
                        let response = next
                            .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                            .await;
                        return super::http_sessions::hold_until_sent(response, claimed);
                    }
                    Ok(None) => {}
                }
            }
            // An answer made an error by the parser (one that gives a member
            // twice) goes on as that error.
            if let rmcp::model::JsonRpcMessage::Error(_) = &*message
                && let Ok(error) = serde_json::to_vec(&*message)
            {
                bytes = error.into();
            }
            // Anything else outside a session (a ping, a notification) is
            // told what to do in JSON-RPC too, not in the SDK's plain text.
            if !in_session && !opens_session(&message) {
                let id = match &*message {
                    rmcp::model::JsonRpcMessage::Request(r) => Some(reply_id(r.id.clone())),
                    _ => None,
                };
                return refuse(
                    id,
                    rmcp::ErrorData::invalid_request(
                        "no session: send `initialize` first, then every message with the `Mcp-Session-Id` \
                         header its reply carries",
                        None,
                    ),
                );
            }
        }
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

fn too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Payload Too Large: a message may be at most {MAX_BODY} bytes\n"),
    )
        .into_response()
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        "Not Found: no open MCP session has this id (it may have been closed for idleness); send `initialize` \
         without an `Mcp-Session-Id` to open a new one\n",
    )
        .into_response()
}

/// A `GET` is served from the kept events (see [`super::http_events`]): a
/// new standalone stream from what was sent on it so far (the request is
/// made a resumption of it); a resumed stream only within its session
/// (the SDK would replay events to a request with no session at all, or of
/// another session). A `POST`'s event stream is claimed for its session.
async fn streams(
    State((events, manager)): State<(Arc<Events>, Arc<LocalSessionManager>)>,
    mut request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::POST {
        return claimed(&events, request, next).await;
    }
    if request.method() != Method::GET {
        return next.run(request).await;
    }
    let headers = request.headers();
    let session = headers
        .get(super::http_sessions::SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let resume_from = match (session, last) {
        (None, Some(_)) => {
            return (
                StatusCode::BAD_REQUEST,
                "Bad Request: a stream is resumed within its session: send its Mcp-Session-Id header\n",
            )
                .into_response();
        }
        (Some(session), Some(last)) if !events.resumable(&session, &last) => Some("-".to_owned()),
        // Of an open session only (the SDK answers 404 otherwise).
        (Some(session), None) if manager.has_session(&session.as_str().into()).await.unwrap_or(false) => {
            Some(events.standalone(&session))
        }
        _ => None,
    };
    if let Some(from) = resume_from
        && let Ok(value) = HeaderValue::from_str(&from)
    {
        request.headers_mut().insert("last-event-id", value);
    }
    next.run(request).await
}

/// The response to a `POST`, its events (when it streams them) claimed for
/// the session it answers: the one named in the request, or the one an
/// `initialize` opened.
async fn claimed(events: &Arc<Events>, request: Request, next: Next) -> Response {
    let named = request.headers().get(super::http_sessions::SESSION_HEADER).cloned();
    let response = next.run(request).await;
    let streamed = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streamed {
        return response;
    }
    let Some(session) = named
        .as_ref()
        .or_else(|| response.headers().get(super::http_sessions::SESSION_HEADER))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return response;
    };
    let events = Arc::clone(events);
    let mut done = false;
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().inspect(move |frame| {
        if !done && let Ok(frame) = frame {
            done = events.claim(&session, frame);
        }
    });
    Response::from_parts(parts, axum::body::Body::from_stream(body))
}

/// A request of a session that holds as many requests in flight as it may
/// (or as many bytes of them): `429 Too Many Requests`, with `Retry-After`
/// and a JSON-RPC error to the request's id saying what to do.
fn too_many(id: rmcp::model::RequestId, over: OverBudget) -> Response {
    let error = over.error();
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (header::RETRY_AFTER, HeaderValue::from_static("1")),
        ],
        error_body(Some(&reply_id(id)), &error),
    )
        .into_response()
}

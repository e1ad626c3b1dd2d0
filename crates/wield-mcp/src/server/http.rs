//! Streamable HTTP at `/mcp`.
//!
//! - Loopback by default. A non-loopback address needs a bearer token
//!   (`--token` or `WIELD_MCP_TOKEN`); when a token is set, every request must
//!   carry `Authorization: Bearer TOKEN`.
//! - DNS rebinding: the `Host` header must name the address the server is
//!   bound to (`localhost`, `127.0.0.1`, `[::1]` for loopback) and a browser
//!   `Origin`, when present, must be one of those too; anything else is a
//!   403.
//! - Memory per session is bounded: request bodies are capped, each session
//!   holds a few small channels, idle sessions close after
//!   [`SESSION_IDLE`], and at most [`HttpOptions::max_sessions`] sessions are
//!   open at once (a new one beyond that is refused until one closes).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use crate::McpError;

/// An idle session (no request for this long) is closed.
pub const SESSION_IDLE: Duration = Duration::from_secs(300);
/// Largest request body accepted.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

#[derive(Clone, Debug)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Bearer token every request must carry; required off loopback.
    pub token: Option<String>,
    /// Sessions open at once.
    pub max_sessions: usize,
}

impl HttpOptions {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            token: None,
            max_sessions: 256,
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
    task: JoinHandle<std::io::Result<()>>,
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

    /// Run until the shutdown token is cancelled or the listener fails.
    pub async fn wait(self) -> Result<(), McpError> {
        match self.task.await {
            Ok(r) => r.map_err(|e| McpError::Transport(e.to_string())),
            Err(e) => Err(McpError::Transport(e.to_string())),
        }
    }
}

/// Decrements the open-session count when a session's handler goes away.
pub(crate) struct SessionSlot(Arc<AtomicUsize>);

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn hosts_and_origins(addr: &SocketAddr) -> (Vec<String>, Vec<String>) {
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    let mut origins = vec![
        "http://localhost:*".to_owned(),
        "http://127.0.0.1:*".to_owned(),
        "http://[::1]:*".to_owned(),
    ];
    let ip = addr.ip();
    if !ip.is_loopback() {
        let shown = match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        hosts.push(ip.to_string());
        origins.push(format!("http://{shown}:*"));
        origins.push(format!("https://{shown}:*"));
    }
    (hosts, origins)
}

pub(crate) async fn bind(server: McpServer, options: HttpOptions) -> Result<HttpServer, McpError> {
    let token = options.token.filter(|t| !t.is_empty());
    if !is_loopback_bind(&options.addr) && token.is_none() {
        return Err(McpError::Config(format!(
            "serving MCP on {} (not a loopback address) needs a bearer token: pass --token TOKEN or set \
             WIELD_MCP_TOKEN, or listen on 127.0.0.1",
            options.addr
        )));
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| McpError::Config(format!("cannot listen on {}: {e}", options.addr)))?;
    let local_addr = listener.local_addr().map_err(|e| McpError::Transport(e.to_string()))?;

    let shutdown = CancellationToken::new();
    let (hosts, origins) = hosts_and_origins(&local_addr);
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(MAX_BODY)
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    config = if local_addr.ip().is_unspecified() {
        // Listening on every interface: the Host could be any name of this
        // machine. The bearer token (required here) is what keeps other
        // sites out, as a page cannot know it.
        config.disable_allowed_hosts().disable_allowed_origins()
    } else {
        config.with_allowed_hosts(hosts)
    };
    let mut manager = LocalSessionManager::default();
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(SESSION_IDLE);
    // Finished request streams are kept for clients that resume them; a
    // short time bounds what a busy session holds.
    session_config.completed_cache_ttl = Duration::from_secs(10);
    manager.session_config = session_config;

    let open = Arc::new(AtomicUsize::new(0));
    let max = options.max_sessions.max(1);
    let factory = move || {
        if open.fetch_add(1, Ordering::AcqRel) >= max {
            open.fetch_sub(1, Ordering::AcqRel);
            return Err(std::io::Error::other(format!(
                "too many open MCP sessions (the limit is {max}); close one and retry"
            )));
        }
        Ok(server.session().with_slot(SessionSlot(Arc::clone(&open))))
    };
    let service = StreamableHttpService::new(factory, Arc::new(manager), config);

    let mut router = Router::new()
        .route_service("/mcp", service)
        .layer(middleware::from_fn(session_delete_ok));
    if let Some(token) = token {
        router = router.layer(middleware::from_fn_with_state(Arc::new(token), require_token));
    }
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
    });
    Ok(HttpServer {
        local_addr,
        shutdown,
        task,
    })
}

/// The SDK answers a session `DELETE` with 202 Accepted; clients (the
/// Python SDK among them) expect 200 or 204 and log a warning on anything
/// else, so a completed termination is reported as 200.
async fn session_delete_ok(request: Request, next: Next) -> Response {
    let is_delete = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if is_delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

async fn require_token(State(token): State<Arc<String>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    match given {
        Some(g) if constant_time_eq(g.as_bytes(), token.as_bytes()) => next.run(request).await,
        _ => {
            let mut response = (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send the server's token as `Authorization: Bearer TOKEN`\n",
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
    }
}

/// Compares without stopping at the first difference, so response timing
/// does not reveal how much of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn loopback_hosts_only_by_default() {
        let (hosts, origins) = hosts_and_origins(&"127.0.0.1:1".parse().unwrap());
        assert_eq!(hosts, ["localhost", "127.0.0.1", "::1"]);
        assert_eq!(origins.len(), 3);
        let (hosts, _) = hosts_and_origins(&"10.1.2.3:1".parse().unwrap());
        assert!(hosts.contains(&"10.1.2.3".to_owned()));
    }
}

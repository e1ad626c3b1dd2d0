//! The MCP server: wield's visible tools over MCP, every call through the
//! same executor as `wield call`.
//!
//! An [`McpServer`] is built once per process from an [`ExecutorFactory`]
//! (the front-end's executor with everything but the per-session parts) and
//! a [`ToolCatalog`] (which tools a session sees). Each MCP connection gets a
//! [`SessionHandler`]: its own [`wield_core::Session`] (model-driven), its
//! own executor (built on the first call, cheap) with an approver that asks
//! this client's user, an event sink that turns output into progress
//! notifications, and file services narrowed to the client's roots.

mod admission;
mod approver;
mod bounded;
mod budget;
mod forward;
mod http;
mod http_auth;
mod http_events;
mod http_host;
mod http_serve;
mod http_sessions;
pub(crate) mod incoming;
mod listing;
mod progress;
mod result;
mod roots;
mod served;
mod session;
mod strict;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;
use wield_core::{Approver, EventSink, Executor, Registered, Services, Session};

pub use approver::{APPROVAL_TIMEOUT, ClientApprover, headless_message};
pub use forward::ForwardToClient;
pub use http::{HttpOptions, HttpServer, is_loopback_bind};
pub use http_auth::{MAX_UNAUTHENTICATED, Token, UNAUTHENTICATED_DEADLINE, write_token_file};
pub use http_host::allowed_host;
pub use listing::{annotations, mcp_name, object_schema, title_from_name, to_mcp_tool};
pub use progress::{MAX_MESSAGE as MAX_PROGRESS_MESSAGE, QUEUE as PROGRESS_QUEUE};
pub use result::{META_KEY, to_call_tool_result};
pub use roots::file_uri_path;
pub use served::ServedRuntime;
pub use session::SessionHandler;

use crate::McpError;

/// The per-session parts of an executor.
pub struct SessionParts {
    pub approver: Arc<dyn Approver>,
    /// The front-end's services, with the file confinement narrowed to the
    /// client's roots when it sent any.
    pub services: Services,
    pub events: EventSink,
}

/// Builds an executor for one session (hooks, resolver chain, audit log,
/// visibility as the front-end configures them, plus the session's parts).
pub type ExecutorFactory = dyn Fn(SessionParts) -> Executor + Send + Sync;

/// The tools a session lists, in order: the policy's visible tools (and any
/// deferred ones the session has loaded).
pub type ToolCatalog = dyn Fn(&Session) -> Vec<Arc<Registered>> + Send + Sync;

/// For a session, the note that tells a model which deferred tools it may
/// load (the policy's `<available-deferred-tools>` block), or `None` when
/// there are none left to load. MCP has no system prompt of wield's, so
/// the note goes into the loader's description.
pub type DeferredNote = dyn Fn(&Session) -> Option<String> + Send + Sync;

/// Resolves when the tools that were still coming at start-up (bridged
/// servers starting in the background) are there, or will not come.
pub type ToolsReady = dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync;

/// Who approves calls that need approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalMode {
    /// `--yes`: approve (deny rules still win).
    Yes,
    /// Ask the client's user through elicitation when the client can,
    /// otherwise refuse with instructions.
    AskClient,
}

impl Inner {
    /// The connected clients (closed ones are dropped on the way).
    fn connected_peers(&self) -> std::sync::MutexGuard<'_, Vec<rmcp::service::Peer<rmcp::RoleServer>>> {
        let mut peers = self.peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        peers.retain(|p| !p.is_transport_closed());
        peers
    }

    /// A client to tell when the tools change.
    pub(crate) fn add_peer(&self, peer: rmcp::service::Peer<rmcp::RoleServer>) {
        self.connected_peers().push(peer);
    }
}

pub(crate) struct Inner {
    pub(crate) factory: Arc<ExecutorFactory>,
    pub(crate) catalog: Arc<ToolCatalog>,
    pub(crate) services: Services,
    pub(crate) approval: ApprovalMode,
    /// How long a client's user has to answer an approval form.
    pub(crate) approval_timeout: std::time::Duration,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    pub(crate) sessions: AtomicU64,
    pub(crate) forward: Option<Arc<ForwardToClient>>,
    pub(crate) deferred_note: Option<Arc<DeferredNote>>,
    pub(crate) tools_ready: Option<Arc<ToolsReady>>,
    /// `tools_ready` has resolved once: no more waiting.
    pub(crate) ready: std::sync::atomic::AtomicBool,
    /// Bumped by [`McpServer::tools_changed`]: a session whose executor is
    /// older builds a new one on its next call.
    pub(crate) generation: AtomicU64,
    /// The clients to tell when the tools change (closed ones are dropped
    /// as they are found).
    pub(crate) peers: std::sync::Mutex<Vec<rmcp::service::Peer<rmcp::RoleServer>>>,
}

/// Serves wield's tools to MCP clients. Cheap to clone.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

/// A reference to an [`McpServer`] that does not keep it alive (for
/// callbacks held by what the server itself holds).
#[derive(Clone)]
pub struct WeakMcpServer(std::sync::Weak<Inner>);

impl WeakMcpServer {
    pub fn upgrade(&self) -> Option<McpServer> {
        self.0.upgrade().map(|inner| McpServer { inner })
    }
}

pub struct McpServerBuilder {
    factory: Arc<ExecutorFactory>,
    catalog: Arc<ToolCatalog>,
    services: Services,
    approval: ApprovalMode,
    approval_timeout: std::time::Duration,
    version: String,
    instructions: Option<String>,
    forward: Option<Arc<ForwardToClient>>,
    deferred_note: Option<Arc<DeferredNote>>,
    tools_ready: Option<Arc<ToolsReady>>,
}

impl McpServerBuilder {
    /// Append this note to the description of the tool that loads deferred
    /// tools (the one with the `loads_deferred_tools` capability).
    #[must_use]
    pub fn deferred_note(mut self, note: Arc<DeferredNote>) -> Self {
        self.deferred_note = Some(note);
        self
    }

    /// Tools that come after start-up: `tools/list`, and a call of a tool
    /// not listed yet, wait for `ready` (once; the handshake and calls of
    /// the tools already there do not).
    #[must_use]
    pub fn tools_ready(mut self, ready: Arc<ToolsReady>) -> Self {
        self.tools_ready = Some(ready);
        self
    }

    /// Forward the sampling and elicitation requests of bridged servers to
    /// the client of a stdio session (give the same forwarder to
    /// [`crate::McpClients::with_front_end`]).
    #[must_use]
    pub fn forward_to_client(mut self, forward: Arc<ForwardToClient>) -> Self {
        self.forward = Some(forward);
        self
    }

    /// The front-end's services; the file confinement in them is narrowed per
    /// session to the client's roots.
    #[must_use]
    pub fn services(mut self, services: Services) -> Self {
        self.services = services;
        self
    }

    #[must_use]
    pub fn approval(mut self, approval: ApprovalMode) -> Self {
        self.approval = approval;
        self
    }

    /// How long the client's user has to answer an approval form before the
    /// call is refused and the form withdrawn (default
    /// [`APPROVAL_TIMEOUT`]).
    #[must_use]
    pub fn approval_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// The version reported in `serverInfo`.
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Text sent to clients in the `initialize` result.
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// The default instructions for a workspace.
    #[must_use]
    pub fn workspace(self, workspace: &std::path::Path) -> Self {
        let text = format!(
            "wield runs these tools in the workspace {} under its policy, approval rules and sandbox. \
             Relative paths are relative to the workspace. A refused call returns an error result that \
             says why and how to get it allowed.",
            workspace.display()
        );
        self.instructions(text)
    }

    pub fn build(self) -> McpServer {
        McpServer {
            inner: Arc::new(Inner {
                factory: self.factory,
                catalog: self.catalog,
                services: self.services,
                approval: self.approval,
                approval_timeout: self.approval_timeout,
                name: "wield".into(),
                version: self.version,
                instructions: self.instructions,
                sessions: AtomicU64::new(0),
                forward: self.forward,
                deferred_note: self.deferred_note,
                ready: std::sync::atomic::AtomicBool::new(self.tools_ready.is_none()),
                tools_ready: self.tools_ready,
                generation: AtomicU64::new(0),
                peers: std::sync::Mutex::new(Vec::new()),
            }),
        }
    }
}

impl McpServer {
    pub fn builder(factory: Arc<ExecutorFactory>, catalog: Arc<ToolCatalog>) -> McpServerBuilder {
        McpServerBuilder {
            factory,
            catalog,
            services: Services::new(),
            approval: ApprovalMode::AskClient,
            approval_timeout: APPROVAL_TIMEOUT,
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            forward: None,
            deferred_note: None,
            tools_ready: None,
        }
    }

    #[must_use]
    pub fn downgrade(&self) -> WeakMcpServer {
        WeakMcpServer(Arc::downgrade(&self.inner))
    }

    /// The tools changed (a bridged server listed new ones): sessions build
    /// new executors on their next call, and every connected client gets
    /// `notifications/tools/list_changed` and lists again through the
    /// [`ToolCatalog`].
    pub async fn tools_changed(&self) {
        self.executors_stale();
        let peers = self.inner.connected_peers().clone();
        for peer in peers {
            let _ = peer.notify_tool_list_changed().await;
        }
    }

    /// The tools changed: every session builds a new executor on its next
    /// call. [`McpServer::tools_changed`] does this too; call this where
    /// the change must hold before anything else runs.
    pub fn executors_stale(&self) {
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// A handler for one new MCP connection.
    pub fn session(&self) -> SessionHandler {
        let n = self.inner.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        SessionHandler::new(Arc::clone(&self.inner), format!("mcp-{n}"))
    }

    /// Serve one session over stdin/stdout until the client closes it.
    ///
    /// When both are pipes (what MCP clients give a server) they are read
    /// and written without blocking, on the runtime's reactor; otherwise
    /// through the runtime's blocking handles (the SDK's `stdio_pipes`).
    pub async fn serve_stdio(&self) -> Result<(), McpError> {
        let (reader, writer) = rmcp::transport::stdio_pipes();
        self.serve_io(reader, writer).await
    }

    /// Serve one session over a byte stream pair (newline-delimited JSON-RPC),
    /// on the SDK's transport within wield's bounds (see [`bounded`]).
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        // The end of the input (or a client that stops reading) ends the
        // session's calls at once, not after the SDK's wait for them.
        let ended = CancellationToken::new();
        let running = self
            .session()
            .with_end(ended.clone())
            .serve(bounded::Bounded::new(reader, writer).ending(ended))
            .await
            .map_err(|e| McpError::Start(e.into()))?;
        if let Some(forward) = &self.inner.forward {
            forward.connect(running.peer().clone());
        }
        running.waiting().await.map_err(|e| McpError::Transport(e.into()))?;
        Ok(())
    }

    /// Bind and serve streamable HTTP at `/mcp`; the returned server runs
    /// until its shutdown token is cancelled.
    pub async fn serve_http(&self, options: HttpOptions) -> Result<HttpServer, McpError> {
        http::bind(self.clone(), options).await
    }
}

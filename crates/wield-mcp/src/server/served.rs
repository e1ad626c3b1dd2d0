//! [`ServedRuntime`]: what an MCP server serves, in one piece.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use wield_core::{Executor, Registered, Services, Session};

use super::{McpServer, McpServerBuilder, SessionParts};

/// The front-end's runtime as an MCP server sees it. The composition root
/// (`wield-runtime`) implements it; [`McpServer::for_runtime`] builds a
/// server from it.
pub trait ServedRuntime: Send + Sync + 'static {
    /// An executor for one session: the runtime's registry, policy, hooks,
    /// approval chain and audit log, with the session's approver, services
    /// and event sink.
    fn executor(&self, parts: SessionParts) -> Executor;

    /// The tools a session lists, in order: the policy's visible tools and
    /// the deferred ones the session has loaded.
    fn tools(&self, session: &Session) -> Vec<Arc<Registered>>;

    /// The note telling a model which deferred tools it may load, or `None`
    /// when none are left. MCP has no system prompt of wield's, so the note
    /// goes into the loader's description.
    fn deferred_note(&self, session: &Session) -> Option<String>;

    /// Whether tools are still coming after start-up (bridged servers
    /// starting in the background): `tools/list`, and a call of a tool not
    /// listed yet, then wait for [`ServedRuntime::tools_ready`].
    fn tools_pending(&self) -> bool;

    /// Resolves when the tools still coming at start-up are there, or will
    /// not come.
    fn tools_ready(&self) -> BoxFuture<'static, ()>;

    /// The runtime's services; the file confinement in them is narrowed per
    /// session to the client's roots.
    fn services(&self) -> Services;

    /// The workspace, named in the server's instructions.
    fn workspace(&self) -> &Path;
}

impl McpServer {
    /// A server over `runtime`: every session's executor, tool list and
    /// deferred-tools note come from it.
    pub fn for_runtime(runtime: Arc<dyn ServedRuntime>) -> McpServerBuilder {
        let rt = Arc::clone(&runtime);
        let factory = Arc::new(move |parts: SessionParts| rt.executor(parts));
        let rt = Arc::clone(&runtime);
        let catalog = Arc::new(move |session: &Session| rt.tools(session));
        let rt = Arc::clone(&runtime);
        let mut builder = McpServer::builder(factory, catalog)
            .deferred_note(Arc::new(move |session: &Session| rt.deferred_note(session)))
            .services(runtime.services())
            .workspace(runtime.workspace());
        if runtime.tools_pending() {
            let rt = Arc::clone(&runtime);
            builder = builder.tools_ready(Arc::new(move || rt.tools_ready()));
        }
        builder
    }
}

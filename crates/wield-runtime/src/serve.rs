//! The runtime as an MCP server's: [`Runtime::mcp_server`].

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use wield_core::{Executor, Registered, Services, Session};
use wield_mcp::{ApprovalMode, ForwardToClient, McpClients, McpServer, ServedRuntime, SessionParts};

use crate::runtime::ExecutorFactory;
use crate::{Error, Runtime};

/// How [`Runtime::mcp_server`] serves.
pub struct ServeOptions {
    /// Who approves calls that need approval.
    pub approval: ApprovalMode,
    /// How long a client's user has to answer an approval form.
    pub approval_timeout: Duration,
    /// Forward the sampling and elicitation requests of bridged servers to
    /// the client of a stdio session (the same forwarder as the runtime's
    /// [`crate::RuntimeOptions::front_end`]).
    pub forward: Option<Arc<ForwardToClient>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            approval: ApprovalMode::AskClient,
            approval_timeout: wield_mcp::server::APPROVAL_TIMEOUT,
            forward: None,
        }
    }
}

/// A runtime with its executor factory built once.
struct Served {
    rt: Runtime,
    factory: Arc<ExecutorFactory>,
}

impl ServedRuntime for Served {
    fn executor(&self, parts: SessionParts) -> Executor {
        (self.factory)(parts.approver, parts.services, parts.events)
    }

    fn tools(&self, session: &Session) -> Vec<Arc<Registered>> {
        let current = self.rt.tools().current();
        let mut tools = current.visible();
        for name in current.policy.deferred() {
            if session.is_loaded(name)
                && let Some(r) = current.registry.get(name)
            {
                tools.push(Arc::clone(r));
            }
        }
        tools
    }

    fn deferred_note(&self, session: &Session) -> Option<String> {
        self.rt.tools().current().policy.deferred_prompt(session)
    }

    fn tools_pending(&self) -> bool {
        self.rt.mcp().is_some_and(|m| !m.is_empty())
    }

    fn tools_ready(&self) -> BoxFuture<'static, ()> {
        let mcp = self.rt.mcp();
        Box::pin(async move {
            if let Some(mcp) = mcp {
                mcp.started().await;
            }
        })
    }

    fn services(&self) -> Services {
        self.rt.services().clone()
    }

    fn workspace(&self) -> &Path {
        self.rt.workspace()
    }
}

impl Runtime {
    /// An MCP server over this runtime. Load the runtime with
    /// [`crate::Servers::None`]: the bridged MCP servers start here, in the
    /// background, so clients get their answers at once and each server's
    /// tools when it is up. When a bridged server changes its tools (or
    /// starts), the tool set is rebuilt, every session builds a new
    /// executor on its next call, and every client is told the list
    /// changed. Needs a Tokio runtime.
    pub fn mcp_server(&self, options: ServeOptions) -> Result<McpServer, Error> {
        let served = Served {
            rt: self.clone(),
            factory: self.executor_factory()?,
        };
        let mut builder = McpServer::for_runtime(Arc::new(served))
            .approval(options.approval)
            .approval_timeout(options.approval_timeout);
        if let Some(forward) = options.forward {
            builder = builder.forward_to_client(forward);
        }
        let server = builder.build();
        if let Some(mcp) = self.mcp().filter(|m| !m.is_empty()) {
            // Weak references: the bridged servers hold this callback, and
            // the MCP server holds them (through the runtime); a cycle
            // would keep their processes alive past the server's end.
            let runtime = Arc::downgrade(&self.inner);
            let weak_server = server.downgrade();
            let handle = tokio::runtime::Handle::current();
            mcp.watch(move || {
                let (Some(inner), Some(server)) = (runtime.upgrade(), weak_server.upgrade()) else {
                    return;
                };
                let Some(clients) = inner.services.get::<McpClients>() else {
                    return;
                };
                if let Err(e) = inner.tools.rebuild(&clients) {
                    tracing::warn!("cannot update the tool list: {e}");
                    return;
                }
                // At once: a call that waited for these tools finds them.
                server.executors_stale();
                handle.spawn(async move { server.tools_changed().await });
            });
            mcp.start_in_background(|_| true);
        }
        Ok(server)
    }
}

//! The server and the client of this crate talking to each other over an
//! in-memory pipe: progress from a tool's output, cancellation reaching the
//! tool, denials as results, and the client's result mapping.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use wield_core::{
    Config, Context, ExecutorBuilder, Registry, Stream, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits,
    testing::StaticTool,
};
use wield_mcp::{McpServer, SessionParts};

/// Emits three pieces of output, then succeeds.
struct Chatty {
    base: ToolBase,
}

#[async_trait]
impl Tool for Chatty {
    fn base(&self) -> &ToolBase {
        &self.base
    }
    async fn execute(&self, _input: Value, ctx: &Context) -> ToolResult {
        for i in 1..=3 {
            ctx.emit_output(Stream::Stdout, &format!("part {i}\n"));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        ToolResult::ok("done")
    }
}

/// Waits until cancelled and records that it was.
struct Waits {
    base: ToolBase,
    cancelled: Arc<AtomicBool>,
}

#[async_trait]
impl Tool for Waits {
    fn base(&self) -> &ToolBase {
        &self.base
    }
    async fn execute(&self, _input: Value, ctx: &Context) -> ToolResult {
        tokio::select! {
            () = ctx.cancel.cancelled() => {
                self.cancelled.store(true, Ordering::SeqCst);
                ToolResult::error("cancelled")
            }
            () = tokio::time::sleep(Duration::from_secs(30)) => ToolResult::ok("slept"),
        }
    }
}

#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("test", "1"))
    }

    #[allow(clippy::unwrap_used)]
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.lock().unwrap().push(params);
    }
}

fn object() -> Value {
    json!({"type": "object", "properties": {}})
}

#[allow(clippy::unwrap_used)]
async fn connect(cancelled: Arc<AtomicBool>) -> (rmcp::service::RunningService<RoleClient, Client>, Client) {
    let mut registry = Registry::new();
    registry
        .register(Arc::new(Chatty {
            base: ToolBase::new(ToolSpec::new("chatty", "talks", object()), ToolTraits::default()),
        }))
        .unwrap();
    registry
        .register(Arc::new(Waits {
            base: ToolBase::new(ToolSpec::new("waits", "waits", object()), ToolTraits::default()),
            cancelled,
        }))
        .unwrap();
    registry.register(Arc::new(StaticTool::new("gated", object()))).unwrap();
    let registry = Arc::new(registry);
    let mut config = Config::default();
    config.approval.auto_approve = vec!["chatty".into(), "waits".into()];
    let config = Arc::new(config);
    let ws = std::env::temp_dir();

    let reg = Arc::clone(&registry);
    let factory: Arc<wield_mcp::ExecutorFactory> = Arc::new(move |parts: SessionParts| {
        ExecutorBuilder::new(Arc::clone(&reg), Arc::clone(&config), &ws)
            .approver(parts.approver)
            .services(parts.services)
            .events(parts.events)
            .build()
    });
    let all = Arc::clone(&registry);
    let catalog: Arc<wield_mcp::ToolCatalog> = Arc::new(move |_s: &wield_core::Session| all.list().cloned().collect());
    let server = McpServer::builder(factory, catalog).build();

    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = server.serve_io(sr, sw).await;
    });
    let handler = Client::default();
    let running = handler.clone().serve(client_io).await.unwrap();
    (running, handler)
}

#[tokio::test]
async fn output_becomes_progress_and_results_keep_their_shape() {
    let (client, handler) = connect(Arc::new(AtomicBool::new(false))).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["chatty", "gated", "waits"]);
    assert!(
        tools
            .iter()
            .all(|t| t.input_schema.get("type") == Some(&json!("object")))
    );

    let r = client
        .peer()
        .call_tool(CallToolRequestParams::new("chatty"))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    let mapped = wield_mcp::client::map_result(r);
    assert_eq!(mapped.output, "done");
    let progress = handler.progress.lock().unwrap().clone();
    let messages: Vec<&str> = progress.iter().filter_map(|p| p.message.as_deref()).collect();
    assert_eq!(messages, ["part 1\n", "part 2\n", "part 3\n"], "{progress:?}");
    assert!(progress.windows(2).all(|w| w[0].progress < w[1].progress));

    // Not approved, and this client cannot be asked: a result, not an error.
    let r = client
        .peer()
        .call_tool(CallToolRequestParams::new("gated"))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let text = wield_mcp::client::map_result(r).error.unwrap();
    assert!(text.contains("approval required"), "{text}");

    // So is an unknown tool.
    let r = client
        .peer()
        .call_tool(CallToolRequestParams::new("nope"))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_request_cancels_the_tool() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let (client, _handler) = connect(Arc::clone(&cancelled)).await;
    let peer = client.peer().clone();
    // Dropping the request future sends notifications/cancelled.
    let call = tokio::time::timeout(
        Duration::from_millis(200),
        peer.call_tool(CallToolRequestParams::new("waits")),
    )
    .await;
    assert!(call.is_err(), "the call should still be running");
    for _ in 0..100 {
        if cancelled.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(cancelled.load(Ordering::SeqCst), "the tool never saw the cancellation");
    client.cancel().await.unwrap();
}

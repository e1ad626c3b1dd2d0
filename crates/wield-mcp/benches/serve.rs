//! The MCP server's own cost per `tools/call`, in process: a raw JSON-RPC
//! client writes one request line into an in-memory pipe and reads the reply
//! line, on the same thread as the server, so the numbers hold no process
//! wake-ups (`bench/mcp.sh` measures those, against the reference server).
//! Calls: `calculator` (the protocol and the executor alone) and `read` of
//! the 19 KB file `bench/mcp.sh` uses (plus the file work and a 23 KB reply).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use wield_core::{Config, ExecutorBuilder, Registry, Services};
use wield_mcp::{ApprovalMode, McpServer, SessionParts};

struct Client {
    write: WriteHalf<DuplexStream>,
    read: BufReader<ReadHalf<DuplexStream>>,
    line: String,
    id: u64,
}

impl Client {
    async fn call(&mut self, body: &str) -> usize {
        self.id += 1;
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{body}}}"#,
            self.id
        );
        self.send(&msg).await;
        self.line.clear();
        self.read.read_line(&mut self.line).await.unwrap();
        assert!(self.line.contains(r#""isError":false"#), "{}", self.line);
        self.line.len()
    }

    async fn send(&mut self, msg: &str) {
        self.write.write_all(msg.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }
}

async fn connect(workspace: &std::path::Path) -> Client {
    let mut registry = Registry::new();
    registry.register_many(wield_tools::builtin_tools()).unwrap();
    let registry = Arc::new(registry);
    let config = Arc::new(Config::default());
    let mut services = Services::new();
    wield_tools::install_services(&mut services, &config, workspace, &[]).unwrap();
    let ws = workspace.to_path_buf();
    let reg = Arc::clone(&registry);
    let factory: Arc<wield_mcp::ExecutorFactory> = Arc::new(move |parts: SessionParts| {
        let guard = parts.services.get::<wield_sandbox::fs::Confinement>().unwrap();
        ExecutorBuilder::new(Arc::clone(&reg), Arc::clone(&config), &ws)
            .approver(parts.approver)
            .services(parts.services)
            .events(parts.events)
            .path_guard(Arc::new(wield_tools::fs::ConfinementGuard(guard)))
            .build()
    });
    let catalog: Arc<wield_mcp::ToolCatalog> =
        Arc::new(move |_s: &wield_core::Session| registry.list().cloned().collect());
    let server = McpServer::builder(factory, catalog)
        .services(services)
        .approval(ApprovalMode::Yes)
        .build();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = server.serve_io(sr, sw).await;
    });
    let (cr, cw) = tokio::io::split(client_io);
    let mut client = Client {
        write: cw,
        read: BufReader::with_capacity(1 << 20, cr),
        line: String::with_capacity(1 << 16),
        id: 0,
    };
    client
        .send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#)
        .await;
    client.read.read_line(&mut client.line).await.unwrap();
    client
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    client
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..400 {
        let head = format!("line {i:05}: the quick brown fox jumps over the lazy dog ");
        text.push_str(&head[..47]);
        text.push('\n');
    }
    std::fs::write(dir.path().join("file.txt"), &text).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut client = rt.block_on(connect(dir.path()));

    let mut g = c.benchmark_group("mcp_serve");
    g.throughput(Throughput::Elements(1));
    g.bench_function("calculator", |b| {
        b.iter(|| rt.block_on(client.call(r#"{"name":"calculator","arguments":{"expression":"1+2"}}"#)));
    });
    g.bench_function("read_19k", |b| {
        b.iter(|| rt.block_on(client.call(r#"{"name":"read","arguments":{"path":"file.txt"}}"#)));
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

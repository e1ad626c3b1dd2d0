//! Starting one external MCP server and talking to it.

// Sampling is deprecated by the revision after 2025-11-25 (SEP-2577), but
// servers speaking current revisions still send it; the handler refuses it.
#![allow(deprecated)]

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderName, HeaderValue};
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorCode, Implementation, SamplingCapability,
};
use rmcp::service::{ClientInitializeError, NotificationContext, Peer, RequestContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::config::{ServerConfig, Transport};

/// How much of a server's stderr is kept to explain a failure.
const STDERR_LINES: usize = 20;
const STDERR_LINE_BYTES: usize = 400;

/// What a front-end offers the external servers it bridges: its model
/// (`sampling/createMessage`) and its user (`elicitation/create`). Each is
/// advertised to servers only when the front-end says it answers it; the
/// default answers are the "not supported" errors a server gets without a
/// front-end.
#[async_trait::async_trait]
pub trait FrontEnd: Send + Sync {
    /// Whether [`FrontEnd::create_message`] answers (advertised as the
    /// `sampling` capability).
    fn samples(&self) -> bool {
        false
    }

    /// Whether [`FrontEnd::elicit`] answers (advertised as the
    /// `elicitation` capability).
    fn elicits(&self) -> bool {
        false
    }

    /// A completion from the front-end's model for the server `server`.
    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let _ = (server, params);
        Err(no_sampling())
    }

    /// The front-end's user's answer to the server `server`.
    async fn elicit(&self, server: &str, params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let _ = (server, params);
        Err(no_elicitation())
    }
}

fn no_sampling() -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        "sampling is not supported: wield does not offer its model to MCP servers",
        None,
    )
}

fn no_elicitation() -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        "elicitation is not supported: wield cannot ask its user for input on behalf of an MCP server",
        None,
    )
}

/// wield as an MCP client of one server. Sampling and elicitation requests
/// go to the front-end when there is one that answers them, and are refused
/// with an error that says so otherwise.
pub struct BridgeClient {
    server: String,
    front: Option<Arc<dyn FrontEnd>>,
    on_list_changed: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl BridgeClient {
    #[must_use]
    pub fn new(server: impl Into<String>, front: Option<Arc<dyn FrontEnd>>) -> Self {
        Self {
            server: server.into(),
            front,
            on_list_changed: None,
        }
    }

    /// Called when the server sends `notifications/tools/list_changed`.
    #[must_use]
    pub fn on_list_changed(mut self, call: Arc<dyn Fn() + Send + Sync>) -> Self {
        self.on_list_changed = Some(call);
        self
    }
}

impl ClientHandler for BridgeClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if let Some(front) = &self.front {
            if front.samples() {
                capabilities.sampling = Some(SamplingCapability::default());
            }
            if front.elicits() {
                capabilities.elicitation = Some(ElicitationCapability::default());
            }
        }
        ClientConfig::new(capabilities, Implementation::new("wield", env!("CARGO_PKG_VERSION")))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        match &self.front {
            Some(front) if front.samples() => front.create_message(&self.server, params).await,
            _ => Err(no_sampling()),
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match &self.front {
            Some(front) if front.elicits() => front.elicit(&self.server, request).await,
            _ => Err(no_elicitation()),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(call) = &self.on_list_changed {
            call();
        }
    }
}

/// The last lines a server wrote to stderr.
#[derive(Default)]
pub struct StderrTail {
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    fn spawn(stderr: Option<tokio::process::ChildStderr>) -> Arc<Self> {
        let tail = Arc::new(Self::default());
        if let Some(stderr) = stderr {
            let t = Arc::clone(&tail);
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(mut line)) = lines.next_line().await {
                    if line.len() > STDERR_LINE_BYTES {
                        let mut end = STDERR_LINE_BYTES;
                        while !line.is_char_boundary(end) {
                            end -= 1;
                        }
                        line.truncate(end);
                        line.push('…');
                    }
                    let mut l = t.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if l.len() == STDERR_LINES {
                        l.pop_front();
                    }
                    l.push_back(line);
                }
            });
        }
        tail
    }

    /// `; stderr: …` with the kept lines, or nothing.
    pub fn suffix(&self) -> String {
        let l = self.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let text: Vec<&str> = l.iter().map(String::as_str).filter(|s| !s.trim().is_empty()).collect();
        if text.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends with: {}", text.join(" | "))
        }
    }
}

/// The process group of a local server: the server and whatever it starts
/// (`npx`, `uvx` and shell wrappers start the real server as a child).
/// Dropping it kills the whole group at once, so nothing is left behind
/// when a start times out, a connection is given up or wield exits. It is
/// dropped before the SDK's handle on the leader, which is not reaped before
/// then unless it exited by itself; a group's id is not reused while any
/// member lives.
struct ProcessGroup(rustix::process::Pid);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process_group(self.0, rustix::process::Signal::KILL);
    }
}

/// A live connection to a server.
pub struct Connection {
    // Declared (so dropped) before the service, which owns the leader.
    _group: Option<ProcessGroup>,
    service: RunningService<RoleClient, BridgeClient>,
    pub stderr: Arc<StderrTail>,
}

impl Connection {
    pub fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// False once the server exited or the connection broke.
    pub fn is_alive(&self) -> bool {
        !self.service.peer().is_transport_closed()
    }
}

/// The innermost error in a chain ("Connection refused (os error 111)"),
/// which says more than the transport layers wrapped around it.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// Start (or reach) the server and complete the MCP handshake. No timeout
/// here: the caller bounds the whole start.
pub async fn connect(
    config: &ServerConfig,
    front: Option<Arc<dyn FrontEnd>>,
    on_list_changed: Option<Arc<dyn Fn() + Send + Sync>>,
) -> Result<Connection, String> {
    let mut client = BridgeClient::new(config.name.clone(), front);
    if let Some(call) = on_list_changed {
        client = client.on_list_changed(call);
    }
    match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            if !cwd.is_dir() {
                return Err(format!(
                    "cannot start `{command}`: its working directory {} does not exist (check `cwd`)",
                    cwd.display()
                ));
            }
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(env)
                .current_dir(cwd)
                .process_group(0)
                .kill_on_drop(true);
            let (process, stderr) =
                TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => {
                            format!("cannot start `{command}`: command not found (check `command` and PATH)")
                        }
                        _ => format!("cannot start `{command}`: {e}"),
                    })?;
            let group = process
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(rustix::process::Pid::from_raw)
                .map(ProcessGroup);
            let stderr = StderrTail::spawn(stderr);
            match client.serve(process).await {
                Ok(service) => Ok(Connection {
                    _group: group,
                    service,
                    stderr,
                }),
                Err(e) => {
                    // Give the reader a moment to collect what the server
                    // said before it died: that is usually the reason.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    let detail = e.to_string();
                    let reason = if detail.contains("connection closed") || detail.contains("Broken pipe") {
                        "it exited (or closed its output) before completing the MCP handshake".to_owned()
                    } else {
                        format!("the MCP handshake failed: {detail}")
                    };
                    Err(format!("{reason}{}", stderr.suffix()))
                }
            }
        }
        Transport::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let n =
                    HeaderName::try_from(name.as_str()).map_err(|e| format!("invalid header name `{name}`: {e}"))?;
                let v = HeaderValue::try_from(value.as_str())
                    .map_err(|e| format!("invalid value for header `{name}`: {e}"))?;
                custom.insert(n, v);
            }
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom),
            );
            let service = client.serve(transport).await.map_err(|e| {
                if e.is_authorization_required() {
                    format!(
                        "{url} refused the connection: it requires authorization (set `headers = {{ Authorization = \"Bearer ...\" }}` for this server)"
                    )
                } else if let ClientInitializeError::TransportError { error, .. } = &e {
                    format!("cannot reach {url}: {}", root_cause(error.error.as_ref()))
                } else {
                    format!("cannot reach {url}: {e}")
                }
            })?;
            Ok(Connection {
                _group: None,
                service,
                stderr: Arc::new(StderrTail::default()),
            })
        }
    }
}

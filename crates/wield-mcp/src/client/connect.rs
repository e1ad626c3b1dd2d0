//! Starting one external MCP server and talking to it.

// Sampling is deprecated by the revision after 2025-11-25 (SEP-2577), but
// servers speaking current revisions still send it; the handler refuses it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorCode, Implementation, ListRootsResult, ProgressNotificationParam,
    ProtocolVersion, Root, RootsCapabilities, SamplingCapability,
};
use rmcp::service::{ClientInitializeError, NotificationContext, Peer, RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, ServiceExt};

use super::config::{ServerConfig, Transport};
use super::http_link::NotingClient;
use super::process::{self, Health, ServerProcess};
use super::progress::ProgressRoutes;

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

    /// For a front-end that serves many sessions: where each call
    /// registers its session's own front-end while it runs.
    fn routes(&self) -> Option<&super::callers::RouteToCallers> {
        None
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
/// with an error that says so otherwise. With a [`BridgeClient::root`], the
/// `roots` capability is advertised and `roots/list` answers that one
/// directory; without, `roots/list` is refused as not supported.
pub struct BridgeClient {
    server: String,
    front: Option<Arc<dyn FrontEnd>>,
    on_list_changed: Option<Arc<dyn Fn() + Send + Sync>>,
    root: Option<PathBuf>,
    progress: Arc<ProgressRoutes>,
    /// Places for the server's requests passed on to the front-end
    /// (sampling, elicitation) and not answered yet: past
    /// [`MAX_FORWARDED`], one is refused at once, so a server cannot make
    /// wield hold more and more of them.
    forwarding: Arc<tokio::sync::Semaphore>,
}

/// Requests of one server waiting for the front-end's answer at most.
pub const MAX_FORWARDED: usize = 8;

impl BridgeClient {
    #[must_use]
    pub fn new(server: impl Into<String>, front: Option<Arc<dyn FrontEnd>>) -> Self {
        Self {
            server: server.into(),
            front,
            on_list_changed: None,
            root: None,
            progress: Arc::default(),
            forwarding: Arc::new(tokio::sync::Semaphore::new(MAX_FORWARDED)),
        }
    }

    /// A place for one request passed on to the front-end, or the error
    /// that refuses it.
    fn forwarding_place(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ErrorData> {
        self.forwarding.try_acquire().map_err(|_| {
            ErrorData::new(
                rmcp::model::ErrorCode(-32000),
                format!(
                    "too many requests from MCP server `{}` are waiting for an answer ({MAX_FORWARDED}); wait for \
                     one to be answered before sending another",
                    self.server
                ),
                None,
            )
        })
    }

    /// Offer `dir` (the workspace) to the server as its one root.
    #[must_use]
    pub fn root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.root = Some(dir.into());
        self
    }

    /// Where the server's progress notifications go.
    #[must_use]
    pub(crate) fn progress(mut self, routes: Arc<ProgressRoutes>) -> Self {
        self.progress = routes;
        self
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
        if self.root.is_some() {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        if let Some(front) = &self.front {
            if front.samples() {
                capabilities.sampling = Some(SamplingCapability::default());
            }
            if front.elicits() {
                capabilities.elicitation = Some(ElicitationCapability::default());
            }
        }
        // The newest revision with an `initialize` handshake: the SDK's
        // default is a later one, which has none to offer.
        ClientConfig::new(capabilities, Implementation::new("wield", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        match &self.front {
            Some(front) if front.samples() => {
                let _place = self.forwarding_place()?;
                until_withdrawn(&context, front.create_message(&self.server, params)).await
            }
            _ => Err(no_sampling()),
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match &self.front {
            Some(front) if front.elicits() => {
                let _place = self.forwarding_place()?;
                until_withdrawn(&context, front.elicit(&self.server, request)).await
            }
            _ => Err(no_elicitation()),
        }
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        match &self.root {
            Some(dir) => Ok(ListRootsResult::new(vec![
                Root::new(file_uri(dir)).with_name("workspace"),
            ])),
            None => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "roots are not supported: this client offers no roots",
                None,
            )),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(call) = &self.on_list_changed {
            call();
        }
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.dispatch(&params);
    }
}

/// `answer`, unless the server withdraws its request first
/// (`notifications/cancelled`): then the front-end stops waiting (and
/// withdraws what it asked in turn), and the server gets an error it no
/// longer waits for.
async fn until_withdrawn<T>(
    context: &RequestContext<RoleClient>,
    answer: impl Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    tokio::select! {
        answer = answer => answer,
        () = context.ct.cancelled() => Err(ErrorData::internal_error("the server withdrew its request", None)),
    }
}

/// `file:///path`, every byte outside RFC 3986's unreserved set and `/`
/// percent-encoded.
pub fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// A live connection to a server.
pub struct Connection {
    service: RunningService<RoleClient, BridgeClient>,
    /// A local server's process; stopped when dropped.
    process: Option<ServerProcess>,
    pub health: Arc<Health>,
    progress: Arc<ProgressRoutes>,
    /// A `url` server's HTTP client, for requests of wield's own.
    http: Option<NotingClient>,
}

/// What a call needs of a connection: the peer to send to, the server's
/// health to see it exit or send a reply too large to read, and where its
/// progress notifications go.
#[derive(Clone)]
pub struct Link {
    pub peer: Peer<RoleClient>,
    pub health: Arc<Health>,
    pub progress: Arc<ProgressRoutes>,
    pub http: Option<NotingClient>,
}

impl Connection {
    pub fn link(&self) -> Link {
        Link {
            peer: self.service.peer().clone(),
            health: Arc::clone(&self.health),
            progress: Arc::clone(&self.progress),
            http: self.http.clone(),
        }
    }

    /// The server's `instructions`, cut at `max` bytes (on a character
    /// boundary, with `…`).
    pub fn instructions(&self, max: usize) -> Option<String> {
        let info = self.service.peer_info()?;
        let text = info.instructions.as_deref()?.trim();
        if text.is_empty() {
            return None;
        }
        if text.len() <= max {
            return Some(text.to_owned());
        }
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Some(format!("{}…", &text[..end]))
    }

    /// False once the server's process exited or the connection broke.
    pub fn is_alive(&self) -> bool {
        !self.health.has_exited() && !self.service.peer().is_transport_closed()
    }

    /// Why it is not alive: how its process ended and what its stderr said.
    pub fn exit_reason(&self) -> String {
        if self.health.has_exited() {
            self.health.exit_reason()
        } else {
            format!("closed its connection{}", self.health.stderr.suffix())
        }
    }

    /// Stop the server (a local one: stdin closed, then SIGTERM, then
    /// SIGKILL) without blocking the thread, and drop the connection.
    pub async fn close(self) {
        if let Some(p) = &self.process {
            p.stop().await;
        }
    }

    /// End the session with a `url` server (an HTTP `DELETE`) and wait
    /// for it; stop a local server.
    pub async fn end(self) {
        match &self.process {
            Some(p) => p.stop().await,
            None => {
                let _ = self.service.cancel().await;
            }
        }
    }

    /// Let go of a `url` server's connection, its session kept by `exit`
    /// to be ended on the way out. A local server's connection is just
    /// dropped.
    pub(crate) fn park(self, exit: &super::ClientsExit) {
        if self.process.is_none() {
            exit.park(self.service);
        }
    }

    pub(crate) fn process(&self) -> Option<&ServerProcess> {
        self.process.as_ref()
    }
}

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Failed(String),
    #[error("the start timed out")]
    TimedOut,
}

/// An error with its causes (`std::error::Error::source`), outermost
/// first: "error sending request: client error (Connect): tcp connect error:
/// Connection refused (os error 111)". A cause whose text the chain already
/// says is left out.
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = crate::compat::without_type_names(e.to_string());
    let mut current = e;
    while let Some(next) = crate::compat::client::cause_of(current) {
        let part = crate::compat::without_type_names(next.to_string());
        if !part.is_empty() && !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        current = next;
    }
    text
}

/// Why `url` cannot be reached, as the network says it: the SDK's HTTP
/// error does not link to its cause, so a plain TCP connection to the
/// server's address is tried. `None` when that connects (the failure lies
/// above TCP: TLS, HTTP) or the URL has no address.
async fn unreachable(url: &str, limit: Duration) -> Option<String> {
    let uri: axum::http::Uri = url.parse().ok()?;
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
    let attempt = async {
        let addrs: Vec<std::net::SocketAddr> = match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(a) => a.collect(),
            Err(e) => return Some(format!("cannot resolve `{host}`: {e}")),
        };
        let mut last = None;
        for addr in addrs {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(_) => return None,
                Err(e) => last = Some(format!("cannot connect to {addr}: {e}")),
            }
        }
        last
    };
    tokio::time::timeout(limit, attempt).await.ok().flatten()
}

/// Where `url` sends a POST on to, as a reason to give: the SDK follows
/// only same-origin 307 and 308 redirects (which keep the message and do
/// not hand the session or the configured headers to another host), so
/// another one fails the start, and the user wants the address to set.
async fn redirected(url: &str, limit: Duration) -> Option<String> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(limit)
        .build()
        .ok()?;
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .send()
        .await
        .ok()?;
    let status = response.status();
    if !status.is_redirection() {
        return None;
    }
    let location = response.headers().get("location")?.to_str().ok()?;
    let to = response.url().join(location).ok()?;
    let why = if to.origin() == response.url().origin() {
        "and wield follows only redirects that keep the message (307 and 308) on the same host and port"
    } else {
        "which is another host or port, to which wield does not hand the session or this server's headers"
    };
    Some(format!(
        "it redirects to {to} (HTTP {status}), {why}; set `url = \"{to}\"` for this server"
    ))
}

/// A web page, not an MCP endpoint, answered: the URL is likely the
/// server's home rather than its MCP path.
fn endpoint_hint(error: &(dyn std::error::Error + 'static)) -> &'static str {
    if crate::compat::unexpected_content_type(error) {
        " (it did not answer as an MCP server: check that the URL is the server's MCP endpoint, often ending in /mcp)"
    } else {
        ""
    }
}

/// Start (or reach) the server and complete the MCP handshake within
/// `limit`. A local server that does not make it is stopped.
pub async fn connect(
    config: &ServerConfig,
    front: Option<Arc<dyn FrontEnd>>,
    on_list_changed: Option<Arc<dyn Fn() + Send + Sync>>,
    limit: Duration,
    groups: Arc<process::ProcessGroups>,
) -> Result<Connection, StartError> {
    if let Some(why) = &config.unresolved {
        return Err(StartError::Failed(why.clone()));
    }
    let progress = Arc::new(ProgressRoutes::default());
    let mut client = BridgeClient::new(config.name.clone(), front)
        .root(&config.workspace)
        .progress(Arc::clone(&progress));
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
                return Err(StartError::Failed(format!(
                    "cannot start `{command}`: its working directory {} does not exist (check `cwd`)",
                    cwd.display()
                )));
            }
            let health = Arc::new(Health::default());
            let spawned =
                process::spawn(command, args, env, cwd, Arc::clone(&health), groups).map_err(StartError::Failed)?;
            let process = spawned.process;
            let handshake = tokio::time::timeout(
                limit,
                client.serve(super::stdio_link::StdioLink::new(spawned.output, spawned.input)),
            );
            // A server that exits while something it started keeps its
            // stdout open would leave the handshake waiting: its exit ends
            // the wait too.
            let served = tokio::select! {
                r = handshake => r.ok().map(|r| r.map_err(|e| (crate::compat::closed_in_handshake(&e), with_causes(&e)))),
                () = health.exited() => Some(Err((false, String::new()))),
            };
            let failure = match served {
                Some(Ok(service)) => match unspoken_version(&service) {
                    None => {
                        return Ok(Connection {
                            service,
                            process: Some(process),
                            health,
                            progress,
                            http: None,
                        });
                    }
                    Some(why) => {
                        close(service).await;
                        StartError::Failed(why)
                    }
                },
                Some(Err((closed, detail))) => {
                    // Give the reader a moment to collect what the server
                    // said before it died: that is usually the reason.
                    let _ = tokio::time::timeout(process::EXIT_AFTER_CLOSE, health.settled()).await;
                    let reason = if let Some(status) = health.status() {
                        format!("it exited ({status}) before completing the MCP handshake")
                    } else if closed {
                        "it exited (or closed its output) before completing the MCP handshake".to_owned()
                    } else {
                        format!("the MCP handshake failed: {detail}")
                    };
                    StartError::Failed(format!("{reason}{}", health.stderr.suffix()))
                }
                None => StartError::TimedOut,
            };
            // Stopped in the background, so the failure is reported at
            // once; if wield exits first, dropping it kills the group.
            tokio::spawn(async move { process.stop().await });
            Err(failure)
        }
        Transport::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let n = HeaderName::try_from(name.as_str())
                    .map_err(|e| StartError::Failed(format!("invalid header name `{name}`: {e}")))?;
                let v = HeaderValue::try_from(value.as_str())
                    .map_err(|e| StartError::Failed(format!("invalid value for header `{name}`: {e}")))?;
                custom.insert(n, v);
            }
            let http = NotingClient::new().map_err(StartError::Failed)?;
            let transport = StreamableHttpClientTransport::with_client(
                http.clone(),
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom),
            );
            let started = std::time::Instant::now();
            let served = tokio::time::timeout(limit, client.serve(transport))
                .await
                .map_err(|_| StartError::TimedOut)?;
            let service = match served {
                Ok(service) => service,
                Err(e) if e.is_authorization_required() => {
                    let sent = headers.keys().any(|h| h.eq_ignore_ascii_case("authorization"));
                    return Err(StartError::Failed(if sent {
                        format!(
                            "{url} refused the connection: it did not accept the `Authorization` header this server's \
                             `headers` sets (check the token)"
                        )
                    } else {
                        format!(
                            "{url} refused the connection: it requires authorization (set `headers = {{ Authorization = \"Bearer ...\" }}` for this server)"
                        )
                    }));
                }
                Err(ClientInitializeError::TransportError { error, .. }) => {
                    let mut why = with_causes(error.error.as_ref())
                        .trim_end_matches([':', ' '])
                        .to_owned();
                    let left = limit.saturating_sub(started.elapsed()).min(Duration::from_secs(2));
                    if let Some(net) = unreachable(url, left).await {
                        why = format!("{net} ({why})");
                    } else if crate::compat::refused_redirect(error.error.as_ref())
                        && let Some(moved) = redirected(url, left).await
                    {
                        why = moved;
                    }
                    let hint = endpoint_hint(error.error.as_ref());
                    return Err(StartError::Failed(format!("cannot reach {url}: {why}{hint}")));
                }
                Err(e) => {
                    let why = with_causes(&e);
                    return Err(StartError::Failed(format!(
                        "cannot reach {url}: {why}{}",
                        endpoint_hint(&e)
                    )));
                }
            };
            if let Some(why) = unspoken_version(&service) {
                close(service).await;
                return Err(StartError::Failed(why));
            }
            Ok(Connection {
                service,
                process: None,
                health: Arc::new(Health::default()),
                progress,
                http: Some(http),
            })
        }
    }
}

/// Why wield cannot go on with a server that answered `initialize` with a
/// protocol version wield does not speak (the spec has the client
/// disconnect); `None` when it speaks the server's version.
fn unspoken_version(service: &RunningService<RoleClient, BridgeClient>) -> Option<String> {
    let spoken = ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE);
    let answered = service.peer_info().map(|info| info.protocol_version.clone())?;
    if spoken.contains(&answered) {
        return None;
    }
    let names: Vec<&str> = spoken.iter().map(ProtocolVersion::as_str).collect();
    Some(format!(
        "it answered with MCP protocol version `{answered}`, which wield does not speak (it speaks {}); \
         use a version of the server that speaks one of them",
        names.join(", ")
    ))
}

/// End a session wield will not use, giving its transport a moment to say
/// so to the server.
async fn close(service: RunningService<RoleClient, BridgeClient>) {
    let _ = tokio::time::timeout(Duration::from_secs(1), service.cancel()).await;
}

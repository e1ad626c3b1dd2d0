//! One MCP connection: its session, its executor and the MCP methods.

// Logging and roots are deprecated by the revision after 2025-11-25
// (SEP-2577); this server speaks revisions up to 2025-11-25.
#![allow(deprecated)]

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use wield_core::approval::YesApprover;
use wield_core::{Approver, Call, EventListener, EventSink, Executor, Session, ToolResult};
use wield_sandbox::fs::{Access, Confinement};

use super::approver::{ClientApprover, ClientAsker};
use super::http::SessionSlot;
use super::http_sessions::{Activities, SESSION_HEADER};
use super::listing::{mcp_name, to_mcp_tool};
use super::progress::ProgressRouter;
use super::result::to_call_tool_result;
use super::roots::{RootsAnswer, client_roots};
use super::{ApprovalMode, Inner, SessionParts};

/// After the client cancels a call, how long the executor gets to wind it
/// down (kill its processes, write the audit line) before the handler stops
/// waiting for it.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// What a session builds on its first call and rebuilds when the client's
/// roots change.
struct Prepared {
    executor: Executor,
    progress: Arc<ProgressRouter>,
    /// The server's tool generation it was built at.
    generation: u64,
    /// The client's roots it was built with, kept for when asking again
    /// fails: a narrowing never lapses because the client did not answer.
    roots: Option<Vec<PathBuf>>,
}

/// Syslog order, least severe first, for comparing levels.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Handles one MCP connection.
pub struct SessionHandler {
    inner: Arc<Inner>,
    session: Arc<Session>,
    prepared: Mutex<Option<Arc<Prepared>>>,
    roots_changed: AtomicBool,
    calls: AtomicU64,
    /// Counts this session among the open HTTP sessions while it lives.
    _slot: Option<SessionSlot>,
    /// Over HTTP: the sessions' activity, which says when this one ended.
    activities: Option<Arc<Activities>>,
    /// Over stdio: cancelled when the client's input ends (or it stops
    /// reading).
    ended: Option<CancellationToken>,
    /// Over HTTP: this session's client as the front-end of the bridged
    /// servers its calls reach (see `RouteToCallers`).
    own_front: Option<Arc<super::ForwardToClient>>,
    /// The least severe `notifications/message` level the client wants.
    log_level: std::sync::atomic::AtomicU8,
    /// Whether a task waits for the session's end to kill its background
    /// processes.
    watching_end: AtomicBool,
}

impl SessionHandler {
    pub(crate) fn new(inner: Arc<Inner>, id: String) -> Self {
        Self {
            inner,
            session: Arc::new(Session::new(id, true)),
            prepared: Mutex::new(None),
            roots_changed: AtomicBool::new(false),
            calls: AtomicU64::new(0),
            _slot: None,
            activities: None,
            ended: None,
            own_front: None,
            log_level: std::sync::atomic::AtomicU8::new(severity(LoggingLevel::Warning)),
            watching_end: AtomicBool::new(false),
        }
    }

    pub(crate) fn with_slot(mut self, slot: SessionSlot) -> Self {
        self._slot = Some(slot);
        self
    }

    pub(crate) fn with_activities(mut self, activities: Arc<Activities>) -> Self {
        self.activities = Some(activities);
        self
    }

    /// Let bridged servers ask this session's client (sampling,
    /// elicitation) while its calls to them run.
    pub(crate) fn with_own_front_end(mut self) -> Self {
        let front = Arc::new(super::ForwardToClient::new());
        let shared: Arc<dyn crate::client::FrontEnd> = front.clone();
        self.session.extension(|| crate::client::SessionFrontEnd(shared));
        self.own_front = Some(front);
        self
    }

    pub(crate) fn with_end(mut self, ended: CancellationToken) -> Self {
        self.ended = Some(ended);
        self
    }

    /// What is cancelled when the session of this request ends (over
    /// stdio, the end of the client's input; over HTTP, `DELETE` or
    /// idleness): its calls stop at once, rather than after the SDK's wait
    /// for the replies under way.
    fn session_end(&self, context: &RequestContext<RoleServer>) -> Option<CancellationToken> {
        if let Some(ended) = &self.ended {
            return Some(ended.clone());
        }
        let (activities, id) = self.http_session(context)?;
        activities.end_of(&id)
    }

    /// Once per session: when it ends, kill its background processes at
    /// once, rather than when the session is dropped (after its calls have
    /// wound down and the SDK has let go of it).
    fn stop_processes_at(&self, end: &CancellationToken) {
        if self.watching_end.swap(true, Ordering::AcqRel) {
            return;
        }
        let session = Arc::downgrade(&self.session);
        let end = end.clone();
        let services = self.inner.services.clone();
        tokio::spawn(async move {
            end.cancelled().await;
            if let Some(session) = session.upgrade() {
                wield_core::end_session(&services, &session).await;
            }
        });
    }

    /// The HTTP session of this request: the sessions' activity, and its id.
    fn http_session(&self, context: &RequestContext<RoleServer>) -> Option<(&Arc<Activities>, String)> {
        let activities = self.activities.as_ref()?;
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        let id = parts.headers.get(SESSION_HEADER)?.to_str().ok()?;
        Some((activities, id.to_owned()))
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Wait, the first time, for the tools still coming at start-up.
    async fn tools_ready(&self) {
        if self.inner.ready.load(Ordering::Acquire) {
            return;
        }
        if let Some(ready) = &self.inner.tools_ready {
            ready().await;
        }
        self.inner.ready.store(true, Ordering::Release);
    }

    async fn prepared(&self, peer: &Peer<RoleServer>) -> Arc<Prepared> {
        let mut slot = self.prepared.lock().await;
        let stale = self.roots_changed.swap(false, Ordering::AcqRel);
        let generation = self.inner.generation.load(Ordering::Acquire);
        if let Some(p) = slot.as_ref().filter(|p| !stale && p.generation == generation) {
            return Arc::clone(p);
        }
        let mut services = self.inner.services.clone();
        let previous = slot.as_ref().and_then(|p| p.roots.clone());
        let roots = match client_roots(peer).await {
            RootsAnswer::None => None,
            RootsAnswer::Failed(why) => {
                let keeping = if previous.is_some() {
                    "keeping the roots it gave before"
                } else {
                    "using the configured write roots"
                };
                self.log(peer, LoggingLevel::Warning, format!("{why}; {keeping}")).await;
                previous
            }
            RootsAnswer::Paths(roots) => Some(roots),
        };
        if let (Some(roots), Some(conf)) = (&roots, services.get::<Confinement>()) {
            let narrowed = conf.narrow_writes(roots);
            let writable: Vec<String> = narrowed
                .roots(Access::Write)
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            let text = if writable.is_empty() {
                "the client's roots lie outside every write root: file tools may not write in this session".to_owned()
            } else {
                format!("the client's roots narrow the write roots to {}", writable.join(", "))
            };
            self.log(peer, LoggingLevel::Info, text).await;
            // What else decides where this session writes (the command
            // sandbox) gets the same narrowed write roots.
            let write: Vec<_> = narrowed
                .roots(Access::Write)
                .into_iter()
                .map(Path::to_path_buf)
                .collect();
            services.narrow_writes(&write);
            services.insert(Arc::new(narrowed));
        }
        let events = EventSink::default();
        let progress = Arc::new(ProgressRouter::default());
        events.subscribe(Arc::clone(&progress) as Arc<dyn EventListener>);
        let approver: Arc<dyn Approver> = match self.inner.approval {
            ApprovalMode::Yes => Arc::new(YesApprover),
            ApprovalMode::AskClient => Arc::new(ClientApprover::new(peer.clone(), self.inner.approval_timeout)),
        };
        // The model's questions (`ask`, when the front-end serves it) go to
        // the client's user, whatever the approval mode.
        wield_core::ask::set_asker(
            &self.session,
            Some(Arc::new(ClientAsker::new(peer.clone(), self.inner.approval_timeout))),
        );
        let executor = (self.inner.factory)(SessionParts {
            approver,
            services,
            events,
        });
        let p = Arc::new(Prepared {
            executor,
            progress,
            generation,
            roots,
        });
        *slot = Some(Arc::clone(&p));
        p
    }

    /// Tell the client about something that concerns this session (its
    /// roots, say), when it asked for messages of that level.
    async fn log(&self, peer: &Peer<RoleServer>, level: LoggingLevel, text: String) {
        tracing::info!("MCP session {}: {text}", self.session.id());
        if severity(level) >= self.log_level.load(Ordering::Relaxed) {
            let mut param = LoggingMessageNotificationParam::new(level, Value::String(text));
            param.logger = Some("wield".into());
            let _ = peer.notify_logging_message(param).await;
        }
    }

    fn tools(&self) -> Vec<Tool> {
        let note = self.inner.deferred_note.as_ref().and_then(|n| n(&self.session));
        // Commands reach the world when the sandbox lets them.
        let commands_reach_network = self.inner.services.tools_reach_network();
        (self.inner.catalog)(&self.session)
            .iter()
            .map(|r| {
                let mut tool = to_mcp_tool(r);
                // The tools that run a command (not process_kill, say).
                let runs_commands =
                    r.tool.traits().sandboxable && r.tool.spec().input_schema["properties"].get("command").is_some();
                if runs_commands && let Some(hints) = tool.annotations.as_mut() {
                    hints.open_world_hint = Some(commands_reach_network);
                }
                if let Some(note) = &note
                    && r.tool.traits().has_capability(wield_core::policy::LOADS_DEFERRED)
                {
                    let text = format!("{}\n\n{note}", tool.description.as_deref().unwrap_or_default());
                    tool.description = Some(text.into());
                }
                tool
            })
            .collect()
    }
}

impl ServerHandler for SessionHandler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .build();
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(&self.inner.name, &self.inner.version).with_title("wield"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        if let Some(text) = &self.inner.instructions {
            info = info.with_instructions(text.clone());
        }
        info
    }

    // Sessions, server-to-client requests (elicitation, roots) and progress
    // are what this server is built on; the 2026 revision drops them, so the
    // server speaks the revisions up to 2025-11-25.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.tools_ready().await;
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Over HTTP the call keeps its session open, and its id taken, from
        // here until it ends, whether or not its client still waits for
        // the reply (it may resume the stream).
        let _running = self
            .http_session(&context)
            .and_then(|(activities, id)| activities.running(&id, &context.id));
        // A tool not listed yet, or the loader of deferred ones, may be one
        // of those still coming.
        if !self.inner.ready.load(Ordering::Acquire)
            && !(self.inner.catalog)(&self.session).iter().any(|r| {
                mcp_name(r) == request.name && !r.tool.traits().has_capability(wield_core::policy::LOADS_DEFERRED)
            })
        {
            self.tools_ready().await;
        }
        let prepared = self.prepared(&context.peer).await;
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let call_id = format!("{}-{n}", self.session.id());
        let input = Value::Object(request.arguments.unwrap_or_default());
        let loaded_before = self.session.loaded_tools().len();
        if let Some(front) = &self.own_front {
            front.connect(context.peer.clone());
        }

        let progress = context
            .meta
            .get_progress_token()
            .map(|token| prepared.progress.start(&call_id, token, context.peer.clone()));
        // The request's token is cancelled by `notifications/cancelled` and
        // when the connection closes (an HTTP session ends with it), which
        // stops the call and kills its processes.
        let cancel = context.ct.clone();
        let ended = self.session_end(&context);
        if let Some(end) = &ended {
            self.stop_processes_at(end);
        }
        let call = Call::new(call_id, request.name.into_owned(), input);
        let run = prepared.executor.run_one(call, &self.session, &cancel);
        tokio::pin!(run);
        let result = loop {
            tokio::select! {
                r = &mut run => break r,
                // The request's own token: cancelling it stops this call only.
                () = async {
                    match &ended {
                        Some(end) => end.cancelled().await,
                        None => std::future::pending().await,
                    }
                }, if !cancel.is_cancelled() => cancel.cancel(),
                () = async { cancel.cancelled().await; tokio::time::sleep(CANCEL_GRACE).await } => {
                    break ToolResult::error("cancelled").with_meta("cancelled", true);
                }
            }
        };
        if let Some(p) = progress {
            p.finish().await;
        }
        if self.session.loaded_tools().len() != loaded_before {
            // `load_tools` made deferred tools callable: tell the client to
            // list again.
            let _ = context.peer.notify_tool_list_changed().await;
        }
        Ok(to_call_tool_result(result).into())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level.store(severity(request.level), Ordering::Relaxed);
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Told when the tools change.
        self.inner.add_peer(context.peer);
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.roots_changed.store(true, Ordering::Release);
    }
}

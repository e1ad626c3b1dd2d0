//! How many HTTP sessions are open, and which of them are idle.
//!
//! - **Capacity**: a request that would open a session past the limit gets
//!   a 503 (with `Retry-After`) rather than the SDK's server error.
//! - **Idleness**: a session is idle when no request of its own is being
//!   answered and no call of its runs (a call counts as busy, however long
//!   it runs, and whether or not its client still waits for the reply) and
//!   none has been for the idle time; then it is closed.
//! - **Request ids**: a request reusing the id of one of the session's
//!   requests still in flight is refused.
//! - **Requests in flight**: a session holds a bounded number of requests
//!   not answered yet, and of bytes of them ([`RequestBudget`]); past either,
//!   a request gets `429 Too Many Requests` with `Retry-After`, so one
//!   client cannot make the server hold more and more memory by sending
//!   calls faster than they run. The
//!   SDK's own keep-alive cannot tell a silent long call from an idle client,
//!   so it is off and this tracker decides.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::model::RequestId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

use super::http_events::Events;

pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

use super::budget::{OverBudget, RequestBudget};

/// What the session factory's refusal says; the SDK answers it with a 500,
/// which [`session_capacity`] turns into a 503.
pub(crate) const FULL: &str = "too many open MCP sessions";

/// The most of a 500 answer read to tell a full server from another error.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// A request that would open a session when every place is taken gets a 503
/// with `Retry-After` (a client may retry) instead of the SDK's 500. The
/// factory's own count decides, so concurrent requests cannot overshoot.
pub(crate) async fn session_capacity(State(max): State<usize>, request: Request, next: Next) -> Response {
    let opens_session = request.method() == Method::POST && !request.headers().contains_key(SESSION_HEADER);
    let response = next.run(request).await;
    if !opens_session || response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, ERROR_BODY_LIMIT).await.unwrap_or_default();
    if !crate::compat::http::refused_by_factory(&bytes, FULL) {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("Service Unavailable: {FULL} (the limit is {max}, --max-sessions); close one and retry\n"),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

#[derive(Debug)]
struct Activity {
    /// Requests of the session being answered (their reply bodies not yet
    /// finished or dropped).
    busy: usize,
    /// When the last one started or finished.
    last: Instant,
    /// Cancelled when the session ends (deleted or idle), which cancels
    /// its running calls at once.
    end: CancellationToken,
    /// Its requests in flight, each held by its POST's reply and the call
    /// it runs.
    budget: RequestBudget,
}

impl Activity {
    /// A session just opened, `busy` with as many requests, nothing in
    /// flight.
    fn new(busy: usize) -> Self {
        Self {
            busy,
            last: Instant::now(),
            end: CancellationToken::new(),
            budget: RequestBudget::default(),
        }
    }
}

/// Why a request of a session is not taken.
pub(crate) enum Refused {
    /// Its id is that of a request of the session still in flight.
    Reused,
    /// The session holds as many requests, or bytes of them, in flight as
    /// it may.
    Full(OverBudget),
}

/// The activity of every open session, by session id.
pub(crate) struct Activities {
    sessions: Mutex<HashMap<Arc<str>, Activity>>,
}

impl Activities {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            sessions: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Activity>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether session `id` is open.
    pub(crate) fn is_open(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    /// Request `request` of session `id`, of `size` bytes, arrives: refused
    /// when a request of the session with that id is still in flight (the
    /// SDK would send one call's result to the other's stream, and run only
    /// one of them), or when the session holds as many requests or bytes
    /// as it may; `Ok(None)` for a session that is not open.
    pub(crate) fn claim(
        self: &Arc<Self>,
        id: &str,
        request: &RequestId,
        size: usize,
    ) -> Result<Option<InFlight>, Refused> {
        let mut sessions = self.lock();
        let Some(key) = sessions.get_key_value(id).map(|(k, _)| Arc::clone(k)) else {
            return Ok(None);
        };
        let Some(activity) = sessions.get_mut(&key) else {
            return Ok(None);
        };
        if activity.budget.contains(request) {
            return Err(Refused::Reused);
        }
        activity.budget.take(request.clone(), size).map_err(Refused::Full)?;
        Ok(Some(InFlight {
            activities: Arc::clone(self),
            id: key,
            request: request.clone(),
        }))
    }

    /// Keep request `request` of session `id` in flight, and the session
    /// busy, until the guard is dropped: a call runs on when its client
    /// went away (it may resume the stream), and its session stays open.
    pub(crate) fn running(self: &Arc<Self>, id: &str, request: &RequestId) -> Option<(Busy, InFlight)> {
        let busy = self.begin(id)?;
        let mut sessions = self.lock();
        let activity = sessions.get_mut(&busy.id)?;
        activity.budget.hold(request.clone());
        let held = InFlight {
            activities: Arc::clone(self),
            id: Arc::clone(&busy.id),
            request: request.clone(),
        };
        drop(sessions);
        Some((busy, held))
    }

    /// A request of session `id` starts, if the session is known (ids the
    /// server never issued are not tracked, so they cannot grow the map).
    fn begin(self: &Arc<Self>, id: &str) -> Option<Busy> {
        let mut sessions = self.lock();
        let key = sessions.get_key_value(id).map(|(k, _)| Arc::clone(k))?;
        if let Some(a) = sessions.get_mut(&key) {
            a.busy += 1;
            a.last = Instant::now();
        }
        Some(Busy {
            activities: Arc::clone(self),
            id: key,
        })
    }

    /// The server issued session `id`; it is busy with its first reply.
    fn opened(self: &Arc<Self>, id: &str) -> Busy {
        let id: Arc<str> = Arc::from(id);
        self.lock().insert(Arc::clone(&id), Activity::new(1));
        Busy {
            activities: Arc::clone(self),
            id,
        }
    }

    fn forget(&self, id: &str) {
        if let Some(a) = self.lock().remove(id) {
            a.end.cancel();
        }
    }

    /// What is cancelled when session `id` ends; `None` for an id the
    /// server did not issue or that ended.
    pub(crate) fn end_of(&self, id: &str) -> Option<CancellationToken> {
        self.lock().get(id).map(|a| a.end.clone())
    }

    /// Tracks the sessions among `ids` not tracked yet, as idle from now:
    /// a session the SDK opened whose first reply never reached
    /// [`track_activity`] (the client reset the connection while it was
    /// being initialized) would otherwise hold its slot for ever.
    fn adopt(&self, ids: impl IntoIterator<Item = Arc<str>>) {
        let mut sessions = self.lock();
        for id in ids {
            sessions.entry(id).or_insert_with(|| Activity::new(0));
        }
    }

    /// The sessions idle for `idle` or longer, now forgotten.
    fn take_idle(&self, idle: Duration) -> Vec<Arc<str>> {
        let mut sessions = self.lock();
        let gone: Vec<Arc<str>> = sessions
            .iter()
            .filter(|(_, a)| a.busy == 0 && a.last.elapsed() >= idle)
            .map(|(id, _)| Arc::clone(id))
            .collect();
        for id in &gone {
            if let Some(a) = sessions.remove(id) {
                a.end.cancel();
            }
        }
        gone
    }

    #[cfg(test)]
    fn busy(&self, id: &str) -> Option<usize> {
        self.lock().get(id).map(|a| a.busy)
    }
}

/// A request id in flight in a session, until this is dropped.
pub(crate) struct InFlight {
    activities: Arc<Activities>,
    id: Arc<str>,
    request: RequestId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(a) = self.activities.lock().get_mut(&self.id) {
            a.budget.release(&self.request);
        }
    }
}

/// A request being answered; the session is busy until this is dropped
/// (when the reply's body ends or the client goes away).
pub(crate) struct Busy {
    activities: Arc<Activities>,
    id: Arc<str>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(a) = self.activities.lock().get_mut(&self.id) {
            a.busy = a.busy.saturating_sub(1);
            a.last = Instant::now();
        }
    }
}

pub(crate) async fn track_activity(
    State(activities): State<Arc<Activities>>,
    request: Request,
    next: Next,
) -> Response {
    let asked = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let deleting = request.method() == Method::DELETE;
    let busy = asked.as_deref().and_then(|id| activities.begin(id));
    if deleting && asked.is_some() && busy.is_none() {
        // The SDK answers any id with success; one that names no open
        // session (never issued, closed, or deleted before) is not found.
        return (
            StatusCode::NOT_FOUND,
            "Not Found: no open MCP session has this id (it may have been closed for idleness)\n",
        )
            .into_response();
    }
    let response = next.run(request).await;
    if deleting && response.status().is_success() {
        if let Some(id) = &asked {
            activities.forget(id);
        }
        return response;
    }
    let busy = match (busy, asked) {
        (Some(b), _) => Some(b),
        // A new session: its id comes back in the reply.
        (None, None) => response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|id| activities.opened(id)),
        (None, Some(_)) => None,
    };
    match busy {
        Some(busy) => hold_until_sent(response, busy),
        None => response,
    }
}

/// The response, its body keeping `held` alive until it is sent in full or
/// dropped: a streamed tool result keeps its session busy while it runs.
pub(crate) fn hold_until_sent<T: Send + Sync + 'static>(response: Response, held: T) -> Response {
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _held = &held;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// Close sessions idle for `idle`, and drop the kept events that are no
/// longer wanted (see [`Events::tidy`]), until `stop` is cancelled.
pub(crate) fn spawn_reaper(
    activities: Arc<Activities>,
    manager: Arc<LocalSessionManager>,
    events: Arc<Events>,
    idle: Duration,
    stop: CancellationToken,
) {
    let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(15));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let open: Vec<Arc<str>> = manager.sessions.read().await.keys().map(Arc::clone).collect();
            activities.adopt(open);
            for id in activities.take_idle(idle) {
                tracing::debug!("closing idle MCP session {id}");
                let _ = manager.close_session(&id).await;
            }
            let open: HashSet<Arc<str>> = manager.sessions.read().await.keys().map(Arc::clone).collect();
            events.tidy(|session| open.contains(session));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_idle_only_when_nothing_of_it_is_being_answered() {
        let activities = Activities::new();
        assert!(activities.begin("never-issued").is_none());
        assert!(activities.busy("never-issued").is_none());

        let first = activities.opened("s1");
        assert_eq!(activities.busy("s1"), Some(1));
        let call = activities.begin("s1").unwrap();
        drop(first);
        assert_eq!(activities.busy("s1"), Some(1));
        // A long call: never idle while it runs, whatever the idle time.
        assert!(activities.take_idle(Duration::ZERO).is_empty());
        drop(call);
        assert_eq!(activities.busy("s1"), Some(0));
        assert!(activities.take_idle(Duration::from_secs(60)).is_empty());
        assert_eq!(&*activities.take_idle(Duration::ZERO)[0], "s1");
        assert!(activities.busy("s1").is_none());
    }

    #[test]
    fn a_session_whose_first_reply_was_lost_is_adopted_and_reaped() {
        let activities = Activities::new();
        let _kept = activities.opened("s1");
        activities.adopt([Arc::from("s1"), Arc::from("lost")]);
        assert_eq!(activities.busy("s1"), Some(1), "a tracked session is left as it is");
        assert_eq!(activities.busy("lost"), Some(0));
        let idle = activities.take_idle(Duration::ZERO);
        assert_eq!(idle.iter().map(|s| &**s).collect::<Vec<_>>(), ["lost"]);
    }
}

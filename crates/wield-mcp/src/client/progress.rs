//! A bridged call's `notifications/progress` as wield output.
//!
//! The SDK gives every request a progress token of its own. A call whose
//! context has event listeners (a front-end that streams output, such as
//! `wield mcp serve`) registers its token here; each progress notification
//! the server sends under it becomes a `Progress` event with the server's
//! progress, total and message (cut to [`MAX_MESSAGE`] bytes), which `wield
//! mcp serve` passes on to its own client as they are.
//! Notifications for tokens nobody registered (a call without listeners,
//! one that already ended) are dropped.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest,
    ProgressNotificationParam, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use wield_core::Context;

/// Longest progress message kept; a longer one is cut.
const MAX_MESSAGE: usize = 1024;

/// The calls waiting for progress, by their token.
#[derive(Default)]
pub struct ProgressRoutes {
    calls: Mutex<HashMap<ProgressToken, Context>>,
}

impl ProgressRoutes {
    /// Pass on a notification to the call it is about, if one waits for it.
    pub fn dispatch(&self, param: &ProgressNotificationParam) {
        let ctx = self
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&param.progress_token)
            .cloned();
        if let Some(ctx) = ctx {
            ctx.emit_progress(
                param.progress,
                param.total,
                param.message.as_deref().map(clipped).as_deref(),
            );
        }
    }

    fn remove(&self, token: &ProgressToken) {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).remove(token);
    }
}

/// `message` cut to [`MAX_MESSAGE`] bytes, on a character boundary.
fn clipped(message: &str) -> Cow<'_, str> {
    if message.len() <= MAX_MESSAGE {
        return Cow::Borrowed(message);
    }
    let mut end = MAX_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &message[..end]))
}

/// A call's request as sent: its id (set once it is sent), and the task
/// telling the server it was abandoned, if it was.
#[derive(Default)]
pub struct Sent {
    pub id: OnceLock<String>,
    abandoned: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Sent {
    /// Wait (up to `limit`) until the server has been told that the call
    /// was abandoned, if it was: a process about to exit would otherwise
    /// drop the notice unsent.
    pub async fn told(&self, limit: std::time::Duration) {
        let task = self.abandoned.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(limit, task).await;
        }
    }
}

/// Sends `notifications/cancelled` for a request dropped before its reply
/// (the call was cancelled or timed out), as the SDK's own `call_tool` does,
/// so the server stops working on a result nobody will read.
struct CancelOnDrop<'a> {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    sent: &'a Sent,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let task = rt.spawn(async move {
                let param = CancelledNotificationParam::new(Some(id), Some("request abandoned by the caller".into()));
                let _ = peer.notify_cancelled(param).await;
            });
            *self.sent.abandoned.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
        }
    }
}

/// Unregisters a call's token however the call ends.
struct Registered<'a> {
    routes: &'a ProgressRoutes,
    token: ProgressToken,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.routes.remove(&self.token);
    }
}

/// `tools/call` with `params`, its progress notifications turned into
/// `ctx`'s output when `ctx` has listeners. Dropped before the reply, it
/// tells the server the call is cancelled ([`Sent::told`] waits for that).
/// Its request id goes in `sent`.
pub async fn call_tool(
    peer: &Peer<RoleClient>,
    routes: &ProgressRoutes,
    params: CallToolRequestParams,
    ctx: &Context,
    sent: &Sent,
) -> Result<CallToolResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let _ = sent.id.set(handle.id.to_string());
    let mut cancel = CancelOnDrop {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
        sent,
    };
    // Registered right after the request is queued: a notification about it
    // needs a round trip to the server, which this beats.
    let _registered = ctx.events.has_listeners().then(|| {
        routes
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(handle.progress_token.clone(), ctx.clone());
        Registered {
            routes,
            token: handle.progress_token.clone(),
        }
    });
    let result = handle.await_response().await;
    cancel.id = None;
    // The SDK hands each notification to a task of its own but a reply
    // straight to its caller, so the last progress notifications, sent
    // before the reply, may still be on their way: let them arrive.
    if _registered.is_some() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    match result? {
        ServerResult::CallToolResult(r) => Ok(r),
        // A result with nothing in it is a call that succeeded silently.
        ServerResult::EmptyResult(_) => Ok(CallToolResult::default()),
        ServerResult::CustomResult(raw) => Ok(super::raw_result::read(raw.0)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        assert_eq!(clipped("step 3"), "step 3");
        let text = "é".repeat(MAX_MESSAGE);
        let long = clipped(&text);
        assert!(
            long.ends_with('…') && long.len() <= MAX_MESSAGE + '…'.len_utf8(),
            "{long}"
        );
    }
}

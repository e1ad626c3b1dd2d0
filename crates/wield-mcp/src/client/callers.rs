//! Routing a bridged server's requests (sampling, elicitation) to the
//! session whose call the server is working on.
//!
//! A front-end that serves many sessions at once (`wield mcp serve
//! --http`) has no one client to ask. A server asks while it handles a
//! call, so the request goes to the session of the call under way to that
//! server: each call registers its session's front-end
//! ([`SessionFrontEnd`], kept in the session) for as long as it runs. When
//! no call to the server is under way, or calls from several sessions are
//! (which of them asks cannot be told over stdio), the server gets an error
//! that says so.

// Sampling is deprecated by the revision after 2025-11-25 (SEP-2577), but
// servers speaking current revisions still send it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ErrorData;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorCode};

use super::connect::FrontEnd;

/// The front-end of one session (its MCP client), kept in the session's
/// extensions for the bridged calls it makes.
pub struct SessionFrontEnd(pub Arc<dyn FrontEnd>);

/// Per server, the calls to it under way: an id each, and the front-end of
/// the session that made it.
type Calls = HashMap<String, Vec<(u64, Arc<dyn FrontEnd>)>>;

/// Sends each server's requests to the front-end of the session whose call
/// to it is under way.
#[derive(Default)]
pub struct RouteToCallers {
    calls: Mutex<Calls>,
    next: AtomicU64,
}

/// A call under way to a server; the route ends when it is dropped.
pub struct Routed<'a> {
    routes: &'a RouteToCallers,
    server: String,
    id: u64,
}

impl Drop for Routed<'_> {
    fn drop(&mut self) {
        let mut calls = self.routes.lock();
        if let Some(list) = calls.get_mut(&self.server) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                calls.remove(&self.server);
            }
        }
    }
}

impl RouteToCallers {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call of `front`'s session to `server` begins.
    pub fn begin(&self, server: &str, front: Arc<dyn FrontEnd>) -> Routed<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().entry(server.to_owned()).or_default().push((id, front));
        Routed {
            routes: self,
            server: server.to_owned(),
            id,
        }
    }

    /// The one session calling `server`.
    fn caller(&self, server: &str, what: &str) -> Result<Arc<dyn FrontEnd>, ErrorData> {
        let calls = self.lock();
        let fronts = calls.get(server).map(Vec::as_slice).unwrap_or_default();
        let Some((_, first)) = fronts.first() else {
            return Err(refused(format!(
                "{what} is not available: no call to this server is under way, so there is no MCP client to ask"
            )));
        };
        if fronts.iter().any(|(_, f)| !Arc::ptr_eq(f, first)) {
            return Err(refused(format!(
                "{what} is not available: calls from several MCP clients to this server are under way, and wield \
                 cannot tell which one this request belongs to"
            )));
        }
        Ok(Arc::clone(first))
    }
}

fn refused(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None)
}

#[async_trait::async_trait]
impl FrontEnd for RouteToCallers {
    fn samples(&self) -> bool {
        true
    }

    fn elicits(&self) -> bool {
        true
    }

    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let front = self.caller(server, "sampling")?;
        if !front.samples() {
            return Err(refused(
                "sampling is not supported by the MCP client that made the call".into(),
            ));
        }
        front.create_message(server, params).await
    }

    fn routes(&self) -> Option<&RouteToCallers> {
        Some(self)
    }

    async fn elicit(&self, server: &str, params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let front = self.caller(server, "elicitation")?;
        if !front.elicits() {
            return Err(refused(
                "elicitation is not supported by the MCP client that made the call".into(),
            ));
        }
        front.elicit(server, params).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Front;
    impl FrontEnd for Front {}

    fn refusal(routes: &RouteToCallers, server: &str) -> String {
        match routes.caller(server, "elicitation") {
            Ok(_) => panic!("routed"),
            Err(e) => e.message.to_string(),
        }
    }

    #[test]
    fn a_request_goes_to_the_one_session_calling() {
        let routes = RouteToCallers::new();
        assert!(refusal(&routes, "s").contains("no call"));
        let a: Arc<dyn FrontEnd> = Arc::new(Front);
        let b: Arc<dyn FrontEnd> = Arc::new(Front);
        let first = routes.begin("s", Arc::clone(&a));
        let second = routes.begin("s", Arc::clone(&a));
        assert!(routes.caller("s", "x").is_ok_and(|f| Arc::ptr_eq(&f, &a)));
        assert!(routes.caller("t", "x").is_err(), "another server's calls do not count");
        let other = routes.begin("s", b);
        assert!(refusal(&routes, "s").contains("several"));
        drop(other);
        drop(first);
        assert!(routes.caller("s", "x").is_ok());
        drop(second);
        assert!(routes.lock().is_empty());
    }
}

//! What is left to do for the servers of one [`McpClients`] on wield's way
//! out, after the clients themselves may be gone: the sessions with `url`
//! servers end with an HTTP `DELETE`, and local servers whose stop never
//! finished are stopped whole.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::RunningService;

#[cfg(doc)]
use super::McpClients;
use super::process::ProcessGroups;
use super::{BridgeClient, ServerEntry};

/// The way out of one [`McpClients`], shared with it ([`McpClients::exit`]):
/// a front-end keeps it past the clients to finish what they started.
#[derive(Clone)]
pub struct ClientsExit(Arc<ExitState>);

struct ExitState {
    groups: Arc<ProcessGroups>,
    /// The servers reached by `url`, whose sessions [`ClientsExit::end_sessions`] ends.
    url_servers: Mutex<Vec<Weak<ServerEntry>>>,
    /// The sessions with `url` servers that wield let go of, still to end.
    parked: Mutex<Vec<RunningService<RoleClient, BridgeClient>>>,
}

impl ClientsExit {
    pub(crate) fn new(groups: Arc<ProcessGroups>, url_servers: Vec<Weak<ServerEntry>>) -> Self {
        Self(Arc::new(ExitState {
            groups,
            url_servers: Mutex::new(url_servers),
            parked: Mutex::new(Vec::new()),
        }))
    }

    /// Keep a session with a `url` server that wield let go of, to be
    /// ended by [`ClientsExit::end_sessions`] (dropping it would end it
    /// only if the runtime lived on).
    pub(crate) fn park(&self, service: RunningService<RoleClient, BridgeClient>) {
        self.0
            .parked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(service);
    }

    /// wield is on its way out at a signal: stop local servers without the
    /// grace they get for the end of their input.
    pub fn hurry(&self) {
        self.0.groups.hurry();
    }

    /// End wield's sessions with `url` servers (each with an HTTP `DELETE`,
    /// so the server can free it at once rather than when it times out),
    /// all at once, within `limit`: those of servers still in use (their
    /// clients may be held by tasks that outlive the command) and those let
    /// go of. Called on the way out.
    pub async fn end_sessions(&self, limit: Duration) {
        let live: Vec<Arc<ServerEntry>> =
            std::mem::take(&mut *self.0.url_servers.lock().unwrap_or_else(PoisonError::into_inner))
                .iter()
                .filter_map(Weak::upgrade)
                .collect();
        let parked = std::mem::take(&mut *self.0.parked.lock().unwrap_or_else(PoisonError::into_inner));
        if live.is_empty() && parked.is_empty() {
            return;
        }
        let ending = futures::future::join(
            futures::future::join_all(live.iter().map(|e| async move {
                let conn = e.conn.lock().await.take();
                if let Some(c) = conn {
                    c.end().await;
                }
            })),
            futures::future::join_all(parked.into_iter().map(RunningService::cancel)),
        );
        let _ = tokio::time::timeout(limit, ending).await;
    }

    /// For the very end of the process, after the async runtime is gone:
    /// the local servers whose stop never ran or never finished (wield was
    /// interrupted while they were starting, and the runtime dropped what
    /// held them) get SIGTERM, up to `grace` to exit, then SIGKILL, each
    /// group whole.
    pub fn stop_stragglers(&self, grace: Duration) {
        self.0.groups.stop_stragglers(grace);
    }
}

#[cfg(test)]
mod tests {
    use super::super::McpClients;

    #[test]
    fn each_set_of_clients_has_its_own_way_out() {
        let (a, b) = (McpClients::new(Vec::new()), McpClients::new(Vec::new()));
        let grace = |c: &McpClients| c.exit().0.groups.input_grace();
        let before = grace(&b);
        assert!(!before.is_zero());
        a.exit().hurry();
        assert!(grace(&a).is_zero());
        assert_eq!(
            grace(&b),
            before,
            "hurrying one set of servers leaves the others their grace"
        );
    }
}

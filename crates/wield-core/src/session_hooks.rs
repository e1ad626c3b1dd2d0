//! Seams through which the crates that provide tools follow a session's
//! life without the front-ends knowing them: a front-end narrows where a
//! session may write (an MCP client's roots) and ends a session (its
//! connection closed), and each registered [`SessionHooks`] does its part
//! (the command sandbox takes the narrowed write roots, the background
//! processes a session started are stopped).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use crate::context::{Services, Session};

/// What a tool crate does at the points of a session's life a front-end
/// reaches. Every method has a default that does nothing.
#[async_trait]
pub trait SessionHooks: Send + Sync {
    /// The session may write only under `write` (already narrowed from the
    /// file confinement's write roots): replace in `services`, which are
    /// the session's own, whatever else decides where writes may go.
    fn narrow_writes(&self, services: &mut Services, write: &[PathBuf]) {
        let _ = (services, write);
    }

    /// Whether what the tools of `services` run may reach the network;
    /// `None` when this hook does not know.
    fn tools_reach_network(&self, services: &Services) -> Option<bool> {
        let _ = services;
        None
    }

    /// `session` has ended (its connection closed): stop what it left
    /// running, at once.
    async fn on_session_end(&self, session: &Session) {
        let _ = session;
    }
}

/// The registered hooks, kept in [`Services`] under this type.
#[derive(Default)]
struct Registered(Vec<Arc<dyn SessionHooks>>);

impl Services {
    /// Register `hooks`, after those registered before.
    pub fn add_session_hooks(&mut self, hooks: Arc<dyn SessionHooks>) {
        let mut all = self.session_hooks();
        all.push(hooks);
        self.insert(Arc::new(Registered(all)));
    }

    /// Every registered [`SessionHooks`], in the order they came.
    pub fn session_hooks(&self) -> Vec<Arc<dyn SessionHooks>> {
        self.get::<Registered>().map(|r| r.0.clone()).unwrap_or_default()
    }

    /// Narrow the session's `services` to `write` through every hook
    /// ([`SessionHooks::narrow_writes`]).
    pub fn narrow_writes(&mut self, write: &[PathBuf]) {
        for hooks in self.session_hooks() {
            hooks.narrow_writes(self, write);
        }
    }

    /// Whether what these services' tools run may reach the network, as
    /// the first hook that knows says; `true` when none does.
    pub fn tools_reach_network(&self) -> bool {
        self.session_hooks()
            .iter()
            .find_map(|h| h.tools_reach_network(self))
            .unwrap_or(true)
    }
}

/// End `session` through every hook of `services`
/// ([`SessionHooks::on_session_end`]).
pub async fn end_session(services: &Services, session: &Session) {
    for hooks in services.session_hooks() {
        hooks.on_session_end(session).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Mutex;

    use super::*;

    /// Records what it is told, and narrows a value of its own.
    #[derive(Default)]
    struct Recorder {
        ended: Mutex<Vec<String>>,
    }

    struct Narrowed(Vec<PathBuf>);

    #[async_trait]
    impl SessionHooks for Recorder {
        fn narrow_writes(&self, services: &mut Services, write: &[PathBuf]) {
            services.insert(Arc::new(Narrowed(write.to_vec())));
        }

        fn tools_reach_network(&self, _services: &Services) -> Option<bool> {
            Some(false)
        }

        async fn on_session_end(&self, session: &Session) {
            self.ended.lock().unwrap().push(session.id().to_owned());
        }
    }

    struct Silent;

    impl SessionHooks for Silent {}

    #[tokio::test]
    async fn every_hook_hears_of_a_session_and_its_narrowed_writes() {
        let mut services = Services::new();
        assert!(
            services.tools_reach_network(),
            "with no hook, nothing says the network is closed"
        );
        services.add_session_hooks(Arc::new(Silent));
        let recorder = Arc::new(Recorder::default());
        services.add_session_hooks(Arc::clone(&recorder) as _);
        assert_eq!(services.session_hooks().len(), 2);
        assert!(!services.tools_reach_network());

        let mut session_services = services.clone();
        session_services.narrow_writes(&[PathBuf::from("/w/sub")]);
        assert_eq!(session_services.get::<Narrowed>().unwrap().0, [PathBuf::from("/w/sub")]);
        assert!(
            services.get::<Narrowed>().is_none(),
            "only the session's services are narrowed"
        );

        end_session(&services, &Session::new("s1", true)).await;
        assert_eq!(*recorder.ended.lock().unwrap(), ["s1"]);
    }
}
